/*
 * tests/contract/test_docker_channel.c: the init's run channel against the
 * real dockerd.
 *
 * The handle that creates a sandbox runs over the channel; a handle on the
 * same sandbox from sbx_sandbox_open() runs through docker exec. Each case
 * runs the same thing both ways and wants the same result (status, exit
 * code, signal, both streams, truncation, totals, caps hit), and the path
 * field to say which way it went. Also: a channel that breaks sends later
 * runs through exec; a run's environment leaves no Engine record; a run
 * cannot reach PID 1's channel and inherits its lockdown; a second thread
 * on a busy channel goes through exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s; /* created: the channel */
	sbx_sandbox *x; /* opened: docker exec */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || !t_engine_ready())
		return -1;
	f->b = t_backend();
	f->p = t_policy();
	sbx_policy_set_limit(f->p, SBX_LIMIT_OUTPUT, 1 << 20);
	if (t_make(f->b, f->p, &f->s, &f->x) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	t_unmake(f->b, f->p, f->s, f->x);
	free(f);
	return 0;
}

static struct fx *F(void **state)
{
	return *state;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void same(const sbx_result *c, const sbx_result *e)
{
	assert_int_equal(c->path, SBX_RUN_PATH_CHANNEL);
	assert_int_equal(e->path, SBX_RUN_PATH_EXEC);
	assert_int_equal(c->status, e->status);
	assert_int_equal(c->exit_code, e->exit_code);
	assert_int_equal(c->term_signal, e->term_signal);
	assert_int_equal(c->stdout_len, e->stdout_len);
	assert_memory_equal(c->stdout_data, e->stdout_data, c->stdout_len);
	assert_int_equal(c->stderr_len, e->stderr_len);
	assert_memory_equal(c->stderr_data, e->stderr_data, c->stderr_len);
	assert_int_equal(c->stdout_truncated, e->stdout_truncated);
	assert_int_equal(c->stderr_truncated, e->stderr_truncated);
	assert_int_equal(c->stdout_total, e->stdout_total);
	assert_int_equal(c->stderr_total, e->stderr_total);
	assert_int_equal(c->limits_hit, e->limits_hit);
}

/* Runs a shell line over the channel and through exec; compares; returns the channel's. */
static sbx_result *
both_on(sbx_sandbox *s, sbx_sandbox *x, const char *line, const sbx_run_options *o)
{
	sbx_result *c = t_run(s, line, o), *e = t_run(x, line, o);

	same(c, e);
	sbx_result_free(e);
	return c;
}

static sbx_result *both(void **state, const char *line, const sbx_run_options *o)
{
	return both_on(F(state)->s, F(state)->x, line, o);
}

static void test_engine_channel__path_field(void **state)
{
	sbx_result *r = both(state, "true", NULL);

	assert_int_equal(r->exit_code, 0);
	sbx_result_free(r);
}

static void test_engine_channel__exit_and_streams(void **state)
{
	sbx_result *r = both(state, "echo out; echo err >&2; printf '\\000\\377'; exit 7", NULL);

	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 7);
	assert_int_equal(r->stdout_len, 6);
	assert_memory_equal(r->stdout_data, "out\n\0\377", 6);
	assert_string_equal(r->stderr_data, "err\n");
	sbx_result_free(r);
}

static void test_engine_channel__argv_verbatim(void **state)
{
	const char *argv[] = {"printf", "[%s]", "a b", "$HOME", "'\"", "", "\n", NULL};
	sbx_result *c = NULL, *e = NULL;

	assert_int_equal(sbx_sandbox_run(&c, F(state)->s, argv, NULL), 0);
	assert_int_equal(sbx_sandbox_run(&e, F(state)->x, argv, NULL), 0);
	same(c, e);
	assert_string_equal(c->stdout_data, "[a b][$HOME]['\"][][\n]");
	sbx_result_free(c);
	sbx_result_free(e);
}

static void test_engine_channel__stdin(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	static unsigned char big[300000];
	sbx_result *r;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7 + i / 251);
	o.stdin_data = big;
	o.stdin_len = sizeof(big);
	r = both(state, "wc -c; od -An -tx1 | md5sum", &o);
	assert_non_null(strstr(r->stdout_data, "300000\n"));
	sbx_result_free(r);
	/* A program that reads none of it. */
	r = both(state, "echo ignored", &o);
	assert_string_equal(r->stdout_data, "ignored\n");
	sbx_result_free(r);
}

/* Runs line on s with stdin streamed from a pipe holding text, whose write
 * end the caller keeps open through the run. */
static sbx_result *run_open_stdin(sbx_sandbox *s, const char *line, const char *text)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r;
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
	o.stream_stdin = 1;
	o.stdin_fd = p[0];
	o.timeout_ms = 30000;
	r = t_run(s, line, &o);
	close(p[0]);
	close(p[1]);
	return r;
}

/*
 * A program that ends without reading its stdin gives its output and its
 * exit, every time: Podman's attach lost the rest of an exec's output when
 * stdin bytes were still in flight at its end, so the init waits until the
 * host has ended its stdin (docs/protocol.md). And a run whose caller's
 * stdin goes on ends with the program's exit on both paths (that the host
 * ends the exec's stdin at the EXIT: test_exec_error__report_ends_stdin).
 */
static void test_engine_channel__unread_stdin(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	static unsigned char big[1 << 20];
	sbx_result *r;

	memset(big, 'x', sizeof(big));
	o.stdin_data = big;
	o.stdin_len = sizeof(big);
	for (int i = 0; i < 40; i++) {
		r = both(state, "echo done; exit 3", &o);
		assert_int_equal(r->status, SBX_RUN_EXITED);
		assert_int_equal(r->exit_code, 3);
		assert_string_equal(r->stdout_data, "done\n");
		sbx_result_free(r);
	}
	for (int i = 0; i < 2; i++) {
		sbx_sandbox *on = i ? F(state)->x : F(state)->s;

		r = run_open_stdin(on, "head -c 3; echo; exit 4", "abcdef");
		assert_int_equal(r->path, i ? SBX_RUN_PATH_EXEC : SBX_RUN_PATH_CHANNEL);
		assert_int_equal(r->status, SBX_RUN_EXITED);
		assert_int_equal(r->exit_code, 4);
		assert_string_equal(r->stdout_data, "abc\n");
		sbx_result_free(r);
	}
}

static void test_engine_channel__env_and_workdir(void **state)
{
	const char *env[] = {"GREETING=hello world", "GREETING=last wins", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r;

	o.env = env;
	o.workdir = "/tmp";
	/* The same uid on both paths: the sandbox's own, from its range. */
	r = both(state,
		 "echo \"$GREETING\"; pwd; u=$(id -u); [ \"$u\" -ge 1500000000 ] && "
		 "[ \"$u\" -lt 1500065536 ] && echo own-uid; env | grep -v '^HOSTNAME=' | sort",
		 &o);
	assert_non_null(strstr(r->stdout_data, "last wins\n/tmp\nown-uid\n"));
	sbx_result_free(r);
}

static void test_engine_channel__exec_failures(void **state)
{
	const char *argv[] = {"no-such-program", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *c = NULL, *e = NULL;

	assert_int_equal(sbx_sandbox_run(&c, F(state)->s, argv, NULL), 0);
	assert_int_equal(sbx_sandbox_run(&e, F(state)->x, argv, NULL), 0);
	same(c, e);
	assert_int_equal(c->status, SBX_RUN_ERROR);
	assert_int_equal(c->exit_code, 127);
	sbx_result_free(c);
	sbx_result_free(e);
	o.workdir = "/no/such/dir";
	c = both(state, "true", &o);
	assert_int_equal(c->status, SBX_RUN_ERROR);
	sbx_result_free(c);
}

static void test_engine_channel__killed_by_signal(void **state)
{
	sbx_result *r = both(state, "kill -TERM $$", NULL);

	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->term_signal, 15);
	sbx_result_free(r);
}

/*
 * One way's run of the tree below, its deadline doubled until the tree was
 * whole (it said "ready") when the deadline struck: a deadline that beat the
 * tree's start on a slow machine proves nothing.
 */
static sbx_result *tree_until_ready(sbx_sandbox *s)
{
	static const char tree[] =
		"rm -f /tmp/tk.a /tmp/tk.b; "
		"setsid sh -c 'touch /tmp/tk.a; exec sleep 310' & "
		"(trap '' TERM HUP; touch /tmp/tk.b; exec sleep 311) & "
		"while [ ! -e /tmp/tk.a ] || [ ! -e /tmp/tk.b ]; do sleep 0.01; done; "
		"echo ready; exec sleep 312";
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r = NULL;
	uint64_t t0;

	for (o.timeout_ms = 1000; o.timeout_ms <= 64000; o.timeout_ms *= 2) {
		sbx_result_free(r);
		t0 = now_ms();
		r = t_run(s, tree, &o);
		/* Hang guard: the tree's sleeps last 310 s, the deadline far less. */
		assert_true(now_ms() - t0 < o.timeout_ms + 60000);
		if (r->status != SBX_RUN_TIMEOUT || strcmp(r->stdout_data, "ready\n") == 0)
			break;
	}
	return r;
}

/* At the deadline the whole tree dies, what left the process group included. */
static void test_engine_channel__timeout_kills_tree(void **state)
{
	static const char count[] =
		"for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done "
		"| grep -c '^sleep 31[012]' || true";
	sbx_result *r = tree_until_ready(F(state)->s), *e = tree_until_ready(F(state)->x);

	same(r, e);
	sbx_result_free(e);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	assert_string_equal(r->stdout_data, "ready\n");
	sbx_result_free(r);
	r = t_run(F(state)->s, count, NULL);
	assert_string_equal(r->stdout_data, "0\n");
	sbx_result_free(r);
}

static void test_engine_channel__output_cap(void **state)
{
	sbx_result *r = both(state, "head -c 5000000 /dev/zero; echo tail >&2", NULL);

	assert_int_equal(r->stdout_len, 1 << 20);
	assert_true(r->stdout_truncated);
	assert_int_equal(r->stdout_total, 5000000);
	assert_true(r->limits_hit & SBX_HIT_OUTPUT);
	assert_string_equal(r->stderr_data, "tail\n");
	sbx_result_free(r);
}

static void test_engine_channel__oom(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL, *x = NULL;
	sbx_result *r;

	sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, 64 << 20);
	assert_int_equal(sbx_sandbox_create(&s, F(state)->b, p), 0);
	assert_int_equal(sbx_sandbox_open(&x, F(state)->b, sbx_sandbox_id(s)), 0);
	r = both_on(s, x, "python3 -c 'b = b\"x\" * (200 << 20); print(len(b))'", NULL);
	assert_int_equal(r->status, SBX_RUN_OOM);
	assert_int_equal(r->exit_code, 137);
	assert_true(r->limits_hit & SBX_HIT_MEMORY);
	sbx_result_free(r);
	/* The sandbox, and its channel, survive the OOM. */
	r = both_on(s, x, "echo alive", NULL);
	assert_string_equal(r->stdout_data, "alive\n");
	sbx_result_free(r);
	sbx_sandbox_detach(x);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

/* The process's connections to dockerd's socket, as fds. */
static int docker_sockets(int *fds, int max)
{
	int n = 0;

	for (int fd = 3; fd < 1024 && n < max; fd++) {
		struct sockaddr_un sa;
		socklen_t len = sizeof(sa);
		struct stat st;

		memset(&sa, 0, sizeof(sa));
		if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		/* Unnamed peers (socketpairs) have no path. */
		if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 ||
		    sa.sun_family != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path))
			continue;
		if (strstr(sa.sun_path, "docker.sock"))
			fds[n++] = fd;
	}
	return n;
}

/* A broken channel: later runs go through docker exec, and say so. */
static void test_engine_channel__broken_channel_falls_back(void **state)
{
	int before[64], after[64], nb, na, cut = 0;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	sbx_result *r;

	nb = docker_sockets(before, 64);
	assert_int_equal(sbx_sandbox_create(&s, F(state)->b, p), 0);
	r = t_run(s, "echo one", NULL);
	assert_int_equal(r->path, SBX_RUN_PATH_CHANNEL);
	sbx_result_free(r);
	/* Cut this sandbox's attach connection (the new one) under the library's feet. */
	na = docker_sockets(after, 64);
	for (int i = 0; i < na; i++) {
		int old = 0;

		for (int j = 0; j < nb; j++)
			old |= after[i] == before[j];
		if (!old) {
			assert_int_equal(shutdown(after[i], SHUT_RDWR), 0);
			cut++;
		}
	}
	assert_int_equal(cut, 1);
	for (int i = 0; i < 2; i++) {
		r = t_run(s, "echo two; exit 4", NULL);
		assert_int_equal(r->path, SBX_RUN_PATH_EXEC);
		assert_int_equal(r->exit_code, 4);
		assert_string_equal(r->stdout_data, "two\n");
		sbx_result_free(r);
	}
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
}

struct bg {
	sbx_sandbox *s;
	const sbx_secrets *sec;
	const char *line;
	sbx_result *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started; /* the run printed something */
	int done;
};

#define BG_INIT .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER

static void bg_mark(struct bg *g, int *flag)
{
	pthread_mutex_lock(&g->mu);
	*flag = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static int bg_output(int stream, const char *data, size_t len, void *payload)
{
	struct bg *g = payload;

	(void)stream, (void)data, (void)len;
	bg_mark(g, &g->started);
	return 0;
}

static void *bg_run(void *arg)
{
	struct bg *g = arg;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;

	o.secrets = g->sec;
	o.on_output = bg_output;
	o.payload = g;
	if (sbx_sandbox_run(&g->r, g->s, (const char *[]){"sh", "-c", g->line, NULL}, &o) != 0)
		g->r = NULL;
	bg_mark(g, &g->done);
	return NULL;
}

/* Waits until the run printed something or ended. */
static void bg_wait_started(struct bg *g)
{
	pthread_mutex_lock(&g->mu);
	while (!g->started && !g->done)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static int bg_done(struct bg *g)
{
	int d;

	pthread_mutex_lock(&g->mu);
	d = g->done;
	pthread_mutex_unlock(&g->mu);
	return d;
}

/* A run's environment travels only on the channel: no exec, no Engine record holds it. */
static void test_engine_channel__environment_leaves_no_record(void **state)
{
	static const char value[] = "Ch4nnel-s3cret-Xq7";
	struct bg g = {.s = F(state)->s,
		       .line = "[ \"$TOKEN\" = Ch4nnel-s3cret-Xq7 ] && echo seen && sleep 1.5",
		       BG_INIT};
	sbx_secrets *sec = NULL;
	char path[512], *t;
	time_t since;
	pthread_t th;
	long st = 0;
	int checks = 0;

	/*
	 * Earlier cases ran through exec: start the window on the next second
	 * of the clock, which the Engine's whole-second filter then keeps
	 * their events out of.
	 */
	since = time(NULL) + 1;
	while (time(NULL) < since)
		usleep(10000);
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "TOKEN", value, strlen(value)), 0);
	g.sec = sec;
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(F(state)->s));
	assert_int_equal(pthread_create(&th, NULL, bg_run, &g), 0);
	/* Look while the run goes on: from its first output until it ends. */
	bg_wait_started(&g);
	do {
		json_t *c = t_engine_get(path, &st);

		assert_int_equal(st, 200);
		assert_int_equal(json_array_size(json_object_get(c, "ExecIDs")), 0);
		json_decref(c);
		t = t_engine_text("GET", path, &st);
		assert_null(strstr(t, value));
		free(t);
		checks++;
	} while (!bg_done(&g));
	pthread_join(th, NULL);
	assert_true(checks >= 1);
	assert_non_null(g.r);
	assert_int_equal(g.r->path, SBX_RUN_PATH_CHANNEL);
	assert_string_equal(g.r->stdout_data, "seen\n");
	sbx_result_free(g.r);
	/* This sandbox's events (other tests may share the daemon): no exec, no value. */
	snprintf(path, sizeof(path),
		 "/events?since=%lld&until=%lld&filters=%%7B%%22container%%22%%3A%%5B%%22%s%%22%%"
		 "5D%%7D",
		 (long long)since, (long long)time(NULL) + 1, sbx_sandbox_id(F(state)->s));
	t = t_engine_text("GET", path, &st);
	assert_non_null(t);
	assert_null(strstr(t, value));
	assert_null(strstr(t, "exec_create"));
	free(t);
	sbx_secrets_free(sec);
}

/* A run can reach neither PID 1's channel nor its supervisors' pipes and memory. */
static void test_engine_channel__channel_out_of_reach(void **state)
{
	sbx_result *r = t_run(F(state)->s,
			      "for p in 1 $(cat /proc/1/task/1/children) $PPID; do "
			      "  [ $p = $$ ] && continue; "
			      "  readlink /proc/$p/fd/0 >/dev/null 2>&1 && echo fd-$p; "
			      "  cat /proc/$p/environ >/dev/null 2>&1 && echo environ-$p; "
			      "  echo x 2>/dev/null > /proc/$p/fd/1 && echo wrote-$p; "
			      "  head -c1 /proc/$p/mem >/dev/null 2>&1 && echo mem-$p; "
			      "done; echo checked",
			      NULL);

	assert_int_equal(r->path, SBX_RUN_PATH_CHANNEL);
	assert_string_equal(r->stdout_data, "checked\n");
	sbx_result_free(r);
}

/* A channel run holds no capability, has no_new_privs, and both seccomp layers. */
static void test_engine_channel__run_locked_down(void **state)
{
	sbx_result *r = t_run(F(state)->s,
			      "grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters|CapEff|CapPrm|CapBnd|"
			      "CapAmb):' /proc/self/status | tr -s '\\t ' ' '",
			      NULL);

	assert_int_equal(r->path, SBX_RUN_PATH_CHANNEL);
	assert_non_null(strstr(r->stdout_data, "NoNewPrivs: 1\n"));
	assert_non_null(strstr(r->stdout_data, "Seccomp: 2\n"));
	assert_non_null(strstr(r->stdout_data, "CapEff: 0000000000000000\n"));
	assert_non_null(strstr(r->stdout_data, "CapPrm: 0000000000000000\n"));
	assert_non_null(strstr(r->stdout_data, "CapBnd: 0000000000000000\n"));
	assert_non_null(strstr(r->stdout_data, "CapAmb: 0000000000000000\n"));
	/* Docker's profile and the init's own. */
	if (strstr(r->stdout_data, "Seccomp_filters: "))
		assert_true(atoi(strstr(r->stdout_data, "Seccomp_filters: ") + 17) >= 2);
	sbx_result_free(r);
}

/*
 * A second thread while the channel is busy goes through exec; both get
 * their own result. The first run holds the channel until the second one
 * (through exec) lets it go.
 */
static void test_engine_channel__busy_channel_uses_exec(void **state)
{
	struct bg a = {.s = F(state)->s,
		       .line = "rm -f /tmp/busy.go; echo holding >&2; "
			       "while [ ! -e /tmp/busy.go ]; do sleep 0.01; done; echo a",
		       BG_INIT};
	sbx_result *r;
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, bg_run, &a), 0);
	bg_wait_started(&a);
	r = t_run(F(state)->s, "touch /tmp/busy.go; echo b", NULL);
	pthread_join(th, NULL);
	assert_non_null(a.r);
	assert_string_equal(a.r->stdout_data, "a\n");
	assert_int_equal(a.r->path, SBX_RUN_PATH_CHANNEL);
	assert_string_equal(r->stdout_data, "b\n");
	assert_int_equal(r->path, SBX_RUN_PATH_EXEC);
	sbx_result_free(a.r);
	sbx_result_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_channel__path_field),
		cmocka_unit_test(test_engine_channel__exit_and_streams),
		cmocka_unit_test(test_engine_channel__argv_verbatim),
		cmocka_unit_test(test_engine_channel__stdin),
		cmocka_unit_test(test_engine_channel__unread_stdin),
		cmocka_unit_test(test_engine_channel__env_and_workdir),
		cmocka_unit_test(test_engine_channel__exec_failures),
		cmocka_unit_test(test_engine_channel__killed_by_signal),
		cmocka_unit_test(test_engine_channel__timeout_kills_tree),
		cmocka_unit_test(test_engine_channel__output_cap),
		cmocka_unit_test(test_engine_channel__oom),
		cmocka_unit_test(test_engine_channel__broken_channel_falls_back),
		cmocka_unit_test(test_engine_channel__environment_leaves_no_record),
		cmocka_unit_test(test_engine_channel__channel_out_of_reach),
		cmocka_unit_test(test_engine_channel__run_locked_down),
		cmocka_unit_test(test_engine_channel__busy_channel_uses_exec),
	};

	/* SBX_TEST_ONLY: the cases to run, a cmocka pattern (run-podman.sh). */
	if (getenv("SBX_TEST_ONLY"))
		cmocka_set_test_filter(getenv("SBX_TEST_ONLY"));
	return cmocka_run_group_tests_name("engine_contract[docker] channel", tests, setup,
					   teardown);
}
