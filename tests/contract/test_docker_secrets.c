/*
 * tests/contract/test_docker_secrets.c: secrets against the real dockerd.
 *
 * A secret reaches the program as an environment variable of that one run,
 * and its value is then absent from everything else that records the run:
 * container and exec inspect, the daemon's events, the daemon's files for
 * the container on disk, every host process's command line while the run
 * goes on, the result's output (redacted unless raw output was asked for),
 * the streaming callback, and every error message a test can make quote
 * it. Each holds for both ways a run reaches a sandbox: the init's channel
 * (the handle that created it) and docker exec (a handle from
 * sbx_sandbox_open()). Runs with secrets over exec are refused on a daemon
 * with debug logging (a scripted engine stands in for one). The value holds
 * '/', '+' and '=' so that its percent-encoded forms differ from it.
 * Encodings cut into lines (base64's 76 columns, a hex dump's 32) are
 * redacted too. Redaction is scoped to the sandbox: a second sandbox in the
 * same process, given other secrets, gets the first one's value back as it
 * printed it, and a guess at it back the same whether right or wrong.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"
#include "support/fake_engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
	sbx_sandbox *opened; /* the same sandbox, through docker exec */
	sbx_secrets *sec;
};

/* The secret's value, unique to this test process. */
static char value[64];

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	unsigned char rnd[12];

	if (!f || !t_engine_ready())
		return -1;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -1;
	snprintf(value, sizeof(value), "Sx/%d+", (int)getpid());
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(value + strlen(value), 3, "%02X", rnd[i]);
	strcat(value, "=k");
	f->b = t_backend();
	f->p = t_policy();
	if (sbx_sandbox_create(&f->s, f->b, f->p) != 0 ||
	    sbx_sandbox_open(&f->opened, f->b, sbx_sandbox_id(f->s)) != 0 ||
	    sbx_secrets_new(&f->sec) != 0 ||
	    sbx_secrets_add(f->sec, "TOKEN", value, strlen(value)) != 0) {
		fprintf(stderr, "setup: %s\n", sbx_error_last()->message);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	sbx_sandbox_detach(f->opened);
	sbx_sandbox_close(f->s);
	sbx_secrets_free(f->sec);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	free(f);
	return 0;
}

static struct fx *F(void **state)
{
	return *state;
}

static sbx_result *run_on(void **state, sbx_sandbox *s, const char *line, int raw)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;

	o.secrets = F(state)->sec;
	o.raw_output = raw;
	return t_run(s, line, &o);
}

/* Both handles, the channel's first; h is 0 or 1. */
static sbx_sandbox *H(void **state, int h)
{
	return h ? F(state)->opened : F(state)->s;
}

static void assert_absent(const char *where, const void *hay, size_t n)
{
	if (hay && memmem(hay, n, value, strlen(value)))
		fail_msg("the secret's value is in %s", where);
}

/* ===== Delivery ===== */

static void test_engine_secrets__delivered_to_the_run(void **state)
{
	for (int h = 0; h < 2; h++) {
		sbx_result *r = run_on(state, H(state, h), "printf %s \"$TOKEN\"", 1);

		assert_int_equal(r->exit_code, 0);
		assert_string_equal(r->stdout_data, value);
		if (h)
			assert_int_equal(r->path, SBX_RUN_PATH_EXEC);
		sbx_result_free(r);
	}
}

static void test_engine_secrets__only_that_run_has_it(void **state)
{
	sbx_result *r = t_run(F(state)->s, "printenv TOKEN; cat /proc/1/environ", NULL);

	/* The init's environment holds no secret on either tier; on the
	 * container tier a run cannot even read it (the init is not dumpable). */
	assert_absent("another run's output", r->stdout_data, r->stdout_len);
	assert_null(memmem(r->stdout_data ? r->stdout_data : "", r->stdout_len, "TOKEN", 5));
	if (t_tier() == SBX_TIER_CONTAINER)
		assert_int_equal(r->stdout_len, 0);
	sbx_result_free(r);
	r = t_run(F(state)->s, "grep -l TOKEN /proc/1/environ /proc/self/environ", NULL);
	assert_int_not_equal(r->exit_code, 0);
	sbx_result_free(r);
}

/* ===== Output ===== */

struct chunks {
	char data[4096];
	size_t len;
	int calls;
};

static int on_output(int stream, const char *data, size_t len, void *payload)
{
	struct chunks *c = payload;

	(void)stream;
	assert_true(c->len + len < sizeof(c->data));
	memcpy(c->data + c->len, data, len);
	c->len += len;
	c->calls++;
	return 0;
}

static void test_engine_secrets__output_redacted_by_default(void **state)
{
	static const char *const lines[] = {
		"printf %s \"$TOKEN\"",
		"printf %s \"$TOKEN\" | base64 -w0",
		"printf %s \"$TOKEN\" | base64 -w0 | tr '+/' '-_' | tr -d =",
		"echo \"$TOKEN\" | base64",
		"printf x%s \"$TOKEN\" | base64",
		"python3 -c 'import os,urllib.parse as u; print(u.quote(os.environ[\"TOKEN\"], "
		"safe=\"\"))'",
		"printf %s \"$TOKEN\" >&2",
	};

	for (size_t i = 0; i < 2 * sizeof(lines) / sizeof(lines[0]); i++) {
		size_t n = sizeof(lines) / sizeof(lines[0]);
		sbx_result *r = run_on(state, H(state, i >= n), lines[i % n], 0);

		assert_int_equal(r->exit_code, 0);
		assert_absent("stdout", r->stdout_data, r->stdout_len);
		assert_absent("stderr", r->stderr_data, r->stderr_len);
		if (!strstr(r->stdout_data, "<redacted>") && !strstr(r->stderr_data, "<redacted>"))
			fail_msg("'%s' printed '%s' '%s', with no marker", lines[i % n],
				 r->stdout_data, r->stderr_data);
		/* Whatever the forms leave is too little to be the value. */
		assert_true(r->stdout_len + r->stderr_len < strlen("<redacted>") + 8);
		sbx_result_free(r);
	}
}

static void test_engine_secrets__split_across_chunks_redacted(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct chunks c = {0};
	sbx_result *r;

	o.secrets = F(state)->sec;
	o.on_output = on_output;
	o.payload = &c;
	/* Head, a pause (so the two halves leave in separate frames), tail. */
	r = t_run(F(state)->s,
		  "h=${TOKEN%????????}; printf 'a %s' \"$h\"; sleep 0.5; "
		  "printf '%s b' \"${TOKEN#\"$h\"}\"",
		  &o);
	assert_string_equal(r->stdout_data, "a <redacted> b");
	assert_int_equal(c.len, r->stdout_len);
	assert_memory_equal(c.data, r->stdout_data, c.len);
	assert_absent("the callback's output", c.data, c.len);
	assert_int_equal(r->stdout_total, strlen(value) + 4);
	sbx_result_free(r);
}

/* Characters left in s besides markers and line breaks. */
static size_t left_over(const char *s)
{
	size_t n = 0;

	while (*s) {
		if (strncmp(s, "<redacted>", 10) == 0) {
			s += 10;
			continue;
		}
		n += *s != '\n' && *s != '\r';
		s++;
	}
	return n;
}

static void test_engine_secrets__wrapped_encodings_redacted(void **state)
{
	static const char *const lines[] = {
		"printf %s \"$TOKEN$TOKEN\" | base64",
		"printf %s \"$TOKEN$TOKEN\" | base64 -w 64",
		"printf %s \"$TOKEN\" | od -An -tx1 | tr -d ' '",
	};

	for (size_t i = 0; i < 2 * sizeof(lines) / sizeof(lines[0]); i++) {
		size_t n = sizeof(lines) / sizeof(lines[0]);
		sbx_result *raw = run_on(state, H(state, i >= n), lines[i % n], 1);
		sbx_result *r = run_on(state, H(state, i >= n), lines[i % n], 0);
		char *nl = strchr(raw->stdout_data, '\n');

		/* The encoding is cut into lines indeed. */
		assert_int_equal(raw->exit_code, 0);
		assert_true(nl && nl[1] != '\0');
		assert_int_equal(r->exit_code, 0);
		if (!strstr(r->stdout_data, "<redacted>") || left_over(r->stdout_data) > 8)
			fail_msg("'%s' printed '%s', redacted to '%s'", lines[i % n],
				 raw->stdout_data, r->stdout_data);
		sbx_result_free(raw);
		sbx_result_free(r);
	}
}

/* ===== Scoped to the sandbox ===== */

/*
 * A second sandbox in the same process, given secrets of its own while the
 * first one's are alive: what it prints of the first one's value is not
 * redacted, so it cannot learn anything from the redaction. It prints the
 * value, and prefixes of it with the right and a wrong next byte, at the end
 * of its output, where a rule for cut-off values once redacted a matching
 * prefix: each comes back exactly as printed.
 */
static void test_engine_secrets__other_sandbox_learns_nothing(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *other = NULL;
	sbx_secrets *mine = NULL;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r;
	char printed[128], line[256];
	size_t vlen = strlen(value);

	/* The first sandbox was given its secret (so its scope holds it). */
	r = run_on(state, F(state)->s, "printf %s \"$TOKEN\"", 0);
	assert_string_equal(r->stdout_data, "<redacted>");
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_create(&other, F(state)->b, p), 0);
	assert_int_equal(sbx_secrets_new(&mine), 0);
	assert_int_equal(sbx_secrets_add(mine, "MINE", "OtherSandbox7Secret", 19), 0);
	o.secrets = mine;
	for (size_t k = 4; k <= vlen; k++) {
		for (int right = 0; right < 2; right++) {
			snprintf(printed, sizeof(printed), "%.*s", (int)k, value);
			if (!right)
				printed[k - 1] = printed[k - 1] == 'Q' ? 'R' : 'Q';
			/* Single quotes: the value holds none. */
			snprintf(line, sizeof(line), "printf 'out:%%s' '%s'", printed);
			r = t_run(other, line, &o);
			assert_int_equal(r->exit_code, 0);
			if (strncmp(r->stdout_data, "out:", 4) != 0 ||
			    strcmp(r->stdout_data + 4, printed) != 0)
				fail_msg("printed '%s', got back '%s'", printed, r->stdout_data);
			sbx_result_free(r);
		}
		if (k == 8 && vlen > 12)
			k = vlen - 4; /* the first and last few lengths */
	}
	/* Its own secret is redacted in its output. */
	r = t_run(other, "printf %s \"$MINE\"", &o);
	assert_string_equal(r->stdout_data, "<redacted>");
	sbx_result_free(r);
	sbx_sandbox_close(other);
	sbx_secrets_free(mine);
	sbx_policy_free(p);
}

/* ===== The engine's records ===== */

static void check_engine_text(const char *what, const char *path)
{
	long st = 0;
	char *t = t_engine_text("GET", path, &st);

	if (!t || st != 200)
		fail_msg("GET %s: HTTP %ld", path, st);
	assert_absent(what, t, strlen(t));
	free(t);
}

struct bg_run {
	void **state;
	sbx_result *r;
};

/* Lines that hold a run until the test lets it go (or the run's deadline). */
#define HOLD(file) "while [ ! -e " file " ]; do sleep 0.01; done; "

static void *bg_run(void *arg)
{
	struct bg_run *br = arg;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_sandbox *s = NULL;

	/*
	 * Through a handle from sbx_sandbox_open(), which runs by docker exec:
	 * the creating handle's runs go over the init's channel and leave no
	 * exec record at all (tests/contract/test_docker_channel.c).
	 */
	o.secrets = F(br->state)->sec;
	if (sbx_sandbox_open(&s, F(br->state)->b, sbx_sandbox_id(F(br->state)->s)) == 0)
		br->r = t_run(s, "x=\"$TOKEN\"; " HOLD("/tmp/inspected") "echo done", &o);
	sbx_sandbox_detach(s);
	return NULL;
}

/* Lets a held run go: over the channel, which leaves no exec record. */
static void let_go(void **state, const char *file)
{
	char line[128];
	sbx_result *r;

	snprintf(line, sizeof(line), "touch %s", file);
	r = t_run(F(state)->s, line, NULL);
	assert_int_equal(r->exit_code, 0);
	sbx_result_free(r);
}

static void test_engine_secrets__absent_from_inspect_and_events(void **state)
{
	struct bg_run br = {.state = state};
	char path[512], cpath[512];
	json_t *c = NULL, *ids = NULL;
	pthread_t t;
	long st = 0;
	struct timespec since;

	/* The events from now on, to the nanosecond: the test before this one
	 * runs the value in a command line on purpose (another sandbox must
	 * print it back), and on the gvisor tier that run is an exec whose
	 * event names its command within the same second. */
	clock_gettime(CLOCK_REALTIME, &since);
	/*
	 * Inspect while the run goes on (the daemon forgets an exec once it
	 * ends): the run waits for a file that is made only after. The exec
	 * shows up once the run starts (hang guard 120 s).
	 */
	snprintf(cpath, sizeof(cpath), "/containers/%s/json", sbx_sandbox_id(F(state)->s));
	assert_int_equal(pthread_create(&t, NULL, bg_run, &br), 0);
	for (int i = 0; i < 12000 && json_array_size(ids) == 0; i++) {
		json_decref(c);
		usleep(10000);
		c = t_engine_get(cpath, &st);
		ids = json_object_get(c, "ExecIDs");
	}
	assert_true(json_array_size(ids) >= 1);
	for (size_t i = 0; i < json_array_size(ids); i++) {
		snprintf(path, sizeof(path), "/exec/%s/json",
			 json_string_value(json_array_get(ids, i)));
		check_engine_text("exec inspect", path);
	}
	check_engine_text("container inspect", cpath);
	check_engine_text("the container list", "/containers/json?all=1");
	json_decref(c);
	let_go(state, "/tmp/inspected");
	pthread_join(t, NULL);
	assert_string_equal(br.r->stdout_data, "done\n");
	sbx_result_free(br.r);
	check_engine_text("container inspect", cpath);
	snprintf(path, sizeof(path), "/events?since=%lld.%09ld&until=%lld", (long long)since.tv_sec,
		 since.tv_nsec, (long long)time(NULL) + 1);
	check_engine_text("the daemon's events", path);
}

static size_t files_seen;

static int scan_file(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	char *buf;
	ssize_t n;
	int fd;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	fd = open(fpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	buf = malloc((size_t)sb->st_size + 1);
	assert_non_null(buf);
	n = read(fd, buf, (size_t)sb->st_size);
	close(fd);
	if (n > 0) {
		files_seen++;
		if (memmem(buf, (size_t)n, value, strlen(value)))
			fail_msg("the secret's value is in %s", fpath);
	}
	free(buf);
	return 0;
}

static void test_engine_secrets__absent_from_daemon_files(void **state)
{
	char dir[1024];
	const char *id = sbx_sandbox_id(F(state)->s), *root;
	sbx_result *r;
	json_t *info;
	long st = 0;

	if (geteuid() != 0)
		skip();
	for (int h = 0; h < 2; h++) {
		r = run_on(state, H(state, h), "printf %s \"$TOKEN\"; printf %s \"$TOKEN\" >&2", 0);
		sbx_result_free(r);
	}
	info = t_engine_get("/info", &st);
	root = json_string_value(json_object_get(info, "DockerRootDir"));
	assert_non_null(root);
	/* config.v2.json, hostconfig.json, the container's log, and the rest. */
	snprintf(dir, sizeof(dir), "%s/containers/%s", root, id);
	files_seen = 0;
	assert_int_equal(nftw(dir, scan_file, 16, FTW_PHYS), 0);
	assert_true(files_seen >= 2);
	/* containerd's bundle for the container (the OCI spec runc was given). */
	snprintf(dir, sizeof(dir), "/run/containerd/io.containerd.runtime.v2.task/moby/%s", id);
	if (access(dir, R_OK) == 0)
		assert_int_equal(nftw(dir, scan_file, 16, FTW_PHYS), 0);
	json_decref(info);
}

struct scan {
	int stop;
	int rounds;
	int saw_run; /* a command line of the running program was seen */
	char leak[256];
};

static void *scan_cmdlines(void *arg)
{
	struct scan *sc = arg;

	while (!__atomic_load_n(&sc->stop, __ATOMIC_SEQ_CST)) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		assert_non_null(d);
		while ((e = readdir(d))) {
			char path[300], buf[65536];
			ssize_t n;
			int fd;

			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf));
			close(fd);
			if (n <= 0)
				continue;
			if (memmem(buf, (size_t)n, value, strlen(value)))
				snprintf(sc->leak, sizeof(sc->leak), "%s", path);
			if (memmem(buf, (size_t)n, "cmdline-scan-marker", 19))
				__atomic_store_n(&sc->saw_run, 1, __ATOMIC_SEQ_CST);
		}
		closedir(d);
		__atomic_add_fetch(&sc->rounds, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

struct cmdline_run {
	void **state;
	int h;
	sbx_result *r;
};

static void *cmdline_run(void *arg)
{
	struct cmdline_run *cr = arg;
	char line[256];

	snprintf(line, sizeof(line),
		 "x=\"$TOKEN\"; " HOLD("/tmp/scanned.%d") "printf %%s \"$x\"; "
							  ": cmdline-scan-marker",
		 cr->h);
	cr->r = run_on(cr->state, H(cr->state, cr->h), line, 0);
	return NULL;
}

/*
 * Whether the held run is running, seen from inside the sandbox (over the
 * other handle). On the gvisor tier the run is a task of the Sentry, not a
 * host process, so the host's scan cannot see it; what it scans there is
 * every host process that serves the run (runsc's exec among them).
 */
static int marker_inside(void **state, int h)
{
	sbx_result *r =
		t_run(H(state, h),
		      "grep -l 'cmdline-scan-marke[r]' /proc/[0-9]*/cmdline 2>/dev/null", NULL);
	int seen = r->exit_code == 0;

	sbx_result_free(r);
	return seen;
}

/*
 * While the run goes on, every host process's command line is scanned:
 * the run is held until a whole round of the scan began after the run was
 * first seen (on the host; on the gvisor tier, from inside).
 */
static void test_engine_secrets__absent_from_host_cmdlines(void **state)
{
	for (int h = 0; h < 2; h++) {
		struct scan sc = {0};
		struct cmdline_run cr = {.state = state, .h = h};
		pthread_t t, rt;
		int seen_at = -1;

		assert_int_equal(pthread_create(&t, NULL, scan_cmdlines, &sc), 0);
		assert_int_equal(pthread_create(&rt, NULL, cmdline_run, &cr), 0);
		/* Hang guard: 120 s. */
		for (int i = 0; i < 12000; i++) {
			int rounds = __atomic_load_n(&sc.rounds, __ATOMIC_SEQ_CST);

			if (seen_at < 0 &&
			    (__atomic_load_n(&sc.saw_run, __ATOMIC_SEQ_CST) ||
			     (t_tier() == SBX_TIER_GVISOR && marker_inside(state, !h))))
				seen_at = rounds;
			if (seen_at >= 0 && rounds > seen_at + 1)
				break;
			usleep(10000);
		}
		/* Over the other handle: the held run keeps its own busy. */
		{
			char line[64];
			sbx_result *r;

			snprintf(line, sizeof(line), "touch /tmp/scanned.%d", h);
			r = t_run(H(state, !h), line, NULL);
			sbx_result_free(r);
		}
		pthread_join(rt, NULL);
		__atomic_store_n(&sc.stop, 1, __ATOMIC_SEQ_CST);
		pthread_join(t, NULL);
		assert_non_null(cr.r);
		assert_int_equal(cr.r->exit_code, 0);
		sbx_result_free(cr.r);
		if (sc.leak[0])
			fail_msg("the secret's value is in %s", sc.leak);
		assert_true(seen_at >= 0);
		assert_true(sc.rounds > seen_at + 1);
	}
}

/* ===== Error messages ===== */

static void assert_error_redacted(int rc)
{
	const char *m = sbx_error_last()->message;

	assert_true(rc < 0);
	assert_absent("an error message", m, strlen(m));
}

static void test_engine_secrets__absent_from_error_messages(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_sandbox *other = NULL;
	const char *argv[] = {value, NULL};
	char path[256], env0[256];
	const char *env[] = {env0, NULL};
	sbx_result *r = NULL;
	void *data = NULL;
	size_t len = 0;
	int quoted = 0;

	o.secrets = F(state)->sec;
	/* A program named by the value: the init's "not found" is output. */
	assert_int_equal(sbx_sandbox_run(&r, F(state)->s, argv, &o), 0);
	assert_int_equal(r->exit_code, 127);
	assert_absent("stderr", r->stderr_data, r->stderr_len);
	assert_non_null(strstr(r->stderr_data, "<redacted>"));
	sbx_result_free(r);
	/* File paths that hold it. */
	snprintf(path, sizeof(path), "/nonexistent/%s", value);
	assert_error_redacted(sbx_sandbox_write_file(F(state)->s, path, "x", 1, 0600));
	quoted += strstr(sbx_error_last()->message, "<redacted>") != NULL;
	assert_error_redacted(sbx_sandbox_read_file(&data, &len, F(state)->s, path, 0));
	quoted += strstr(sbx_error_last()->message, "<redacted>") != NULL;
	/* A sandbox id, an image, a tenant, a workdir. */
	assert_error_redacted(sbx_sandbox_open(&other, F(state)->b, value));
	assert_error_redacted(sbx_policy_set_image(F(state)->p, value));
	assert_error_redacted(sbx_policy_set_tenant(F(state)->p, value));
	o.workdir = value;
	assert_error_redacted(sbx_sandbox_run(&r, F(state)->s, argv, &o));
	o.workdir = NULL;
	/* The same name as plain env, whose value is the secret. */
	snprintf(env0, sizeof(env0), "TOKEN=%s", value);
	o.env = env;
	assert_error_redacted(sbx_sandbox_run(&r, F(state)->s, argv, &o));
	assert_non_null(strstr(sbx_error_last()->message, "TOKEN"));
	/* Adding it again under its name quotes the name only. */
	assert_error_redacted(sbx_secrets_add(F(state)->sec, "TOKEN", value, strlen(value)));
	assert_true(quoted >= 1);
}

static void test_engine_secrets__plain_env_clash_refused(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *env[] = {"TOKEN=plain", NULL};
	const char *argv[] = {"true", NULL};
	sbx_result *r = NULL;

	o.secrets = F(state)->sec;
	o.env = env;
	assert_int_equal(sbx_sandbox_run(&r, F(state)->s, argv, &o), SBX_EINVALID);
	assert_null(r);
	assert_non_null(strstr(sbx_error_last()->message, "both a plain variable and a secret"));
}

/* ===== A daemon that would log the exec's environment ===== */

static void test_engine_secrets__refused_on_debug_daemon(void **state)
{
	struct fake_route routes[3] = {
		{"GET", "/info", 200, "{\"Debug\":true,\"Runtimes\":{\"runc\":{}}}"},
		{"GET", "/containers/", 200, NULL},
		{"POST", "/containers/", 201, "{\"Id\":\"e0\"}"},
	};
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"true", NULL};
	struct fake_engine *fe;
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	char path[256], *inspect;
	long st = 0;

	/* The real sandbox's inspect answer, served by the scripted engine. */
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(F(state)->s));
	inspect = t_engine_text("GET", path, &st);
	assert_int_equal(st, 200);
	routes[1].body = inspect;
	fe = fake_engine_start(routes, 3);
	assert_non_null(fe);
	bo.socket_path = fake_engine_socket(fe);
	bo.no_reap_at_open = 1;
	assert_int_equal(sbx_backend_open(&b, "docker", &bo), 0);
	assert_int_equal(sbx_sandbox_open(&s, b, sbx_sandbox_id(F(state)->s)), 0);
	o.secrets = F(state)->sec;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), SBX_EUNSUPPORTED);
	assert_non_null(strstr(sbx_error_last()->message, "debug"));
	assert_int_equal(fake_engine_count(fe, "POST", "/containers/"), 0);
	sbx_sandbox_detach(s);
	sbx_backend_free(b);
	fake_engine_stop(fe);
	free(inspect);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_secrets__delivered_to_the_run),
		cmocka_unit_test(test_engine_secrets__only_that_run_has_it),
		cmocka_unit_test(test_engine_secrets__output_redacted_by_default),
		cmocka_unit_test(test_engine_secrets__split_across_chunks_redacted),
		cmocka_unit_test(test_engine_secrets__wrapped_encodings_redacted),
		cmocka_unit_test(test_engine_secrets__other_sandbox_learns_nothing),
		cmocka_unit_test(test_engine_secrets__absent_from_inspect_and_events),
		cmocka_unit_test(test_engine_secrets__absent_from_daemon_files),
		cmocka_unit_test(test_engine_secrets__absent_from_host_cmdlines),
		cmocka_unit_test(test_engine_secrets__absent_from_error_messages),
		cmocka_unit_test(test_engine_secrets__plain_env_clash_refused),
		cmocka_unit_test(test_engine_secrets__refused_on_debug_daemon),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] secrets", tests, setup,
					   teardown);
}
