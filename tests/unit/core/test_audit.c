/*
 * tests/unit/core/test_audit.c: unit tests of the audit sink
 * (core/audit.c), without an engine.
 *
 * Covers the file's permissions (created 0600; a file open to group or
 * others, a symlink, a directory refused), one JSON object per line with
 * the schema's common fields, sequence numbers, the callback (same line,
 * and a non-zero return failing the write), redaction of every string
 * (values with JSON-special characters included) before encoding, argv
 * bounds, a torn tail from a crash cut off by the next writer and a foreign
 * tail left alone, a write cut short by the file size limit leaving nothing
 * behind, and many threads and processes appending at once without a
 * broken or interleaved line, the policy summary of sandbox.create
 * listing an egress allowlist, and the words of the limit kinds in
 * sandbox.create and run.end, byte for byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <sandboxio.h>

#include "core/audit-int.h"
#include "util/error-int.h"
#include "util/redact-int.h"

struct fx {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sbx-audit-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/audit.jsonl", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return sbx__redact_count() == 0 ? 0 : -1;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* Every line is a whole JSON object of the schema; returns how many. */
static int check_lines(const char *path)
{
	size_t len;
	char *buf = slurp(path, &len), *p = buf, *nl;
	int n = 0;

	assert_true(len == 0 || buf[len - 1] == '\n');
	while ((nl = strchr(p, '\n'))) {
		json_error_t err;
		json_t *ev = json_loadb(p, (size_t)(nl - p), 0, &err);

		if (!ev)
			fail_msg("line %d is not JSON: %s: %.*s", n + 1, err.text, (int)(nl - p),
				 p);
		assert_int_equal(strncmp(p, "{\"v\":1,", 7), 0);
		assert_true(json_is_string(json_object_get(ev, "event")));
		assert_true(json_is_string(json_object_get(ev, "time")));
		assert_true(json_is_integer(json_object_get(ev, "seq")));
		assert_true(json_is_integer(json_object_get(ev, "pid")));
		json_decref(ev);
		p = nl + 1;
		n++;
	}
	free(buf);
	return n;
}

static struct sbx__audit *open_file(const char *path)
{
	struct sbx__audit *a = NULL;

	if (sbx__audit_open(&a, path, NULL, NULL, "docker") != 0)
		fail_msg("audit open: %s", sbx_error_last()->message);
	assert_non_null(a);
	return a;
}

static int destroy_event(struct sbx__audit *a, const char *id)
{
	struct sbx__audit_ctx c = {.sandbox_id = id, .tenant = "t1"};

	return sbx__audit_destroy(a, &c, "closed", 0);
}

/* ===== The file ===== */

static void test_core_audit__created_0600(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a;
	struct stat st;
	mode_t old = umask(0);

	a = open_file(f->path);
	umask(old);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(destroy_event(a, "c1"), 0);
	sbx__audit_free(a);
	assert_int_equal(check_lines(f->path), 1);
}

static void test_core_audit__wide_permissions_refused(void **state)
{
	static const mode_t modes[] = {0640, 0604, 0660, 0666, 0610, 0602};
	struct fx *f = *state;
	struct sbx__audit *a = NULL;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int fd = open(f->path, O_CREAT | O_WRONLY, 0600);

		assert_true(fd >= 0);
		assert_int_equal(fchmod(fd, modes[i]), 0);
		close(fd);
		assert_int_equal(sbx__audit_open(&a, f->path, NULL, NULL, "docker"), SBX_EDENIED);
		assert_null(a);
		assert_non_null(strstr(sbx_error_last()->message, "0600"));
		unlink(f->path);
	}
}

static void test_core_audit__symlink_and_directory_refused(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a = NULL;
	char target[160];

	snprintf(target, sizeof(target), "%s/target", f->dir);
	close(open(target, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(symlink(target, f->path), 0);
	assert_int_equal(sbx__audit_open(&a, f->path, NULL, NULL, "docker"), SBX_EDENIED);
	assert_null(a);
	unlink(f->path);
	unlink(target);
	assert_int_equal(sbx__audit_open(&a, f->dir, NULL, NULL, "docker"), SBX_EDENIED);
	assert_int_equal(sbx__audit_open(&a, "/nonexistent/dir/audit.jsonl", NULL, NULL, "docker"),
			 SBX_ENOTFOUND);
	/* Neither a file nor a callback: no sink, and nothing to write. */
	assert_int_equal(sbx__audit_open(&a, NULL, NULL, NULL, "docker"), 0);
	assert_null(a);
	assert_int_equal(destroy_event(NULL, "c1"), 0);
}

/* ===== Events ===== */

struct seen {
	char line[8192];
	int calls;
	int refuse;
};

static int on_event(const char *line, size_t len, void *payload)
{
	struct seen *s = payload;

	assert_true(len < sizeof(s->line));
	assert_null(memchr(line, '\n', len));
	memcpy(s->line, line, len);
	s->line[len] = '\0';
	s->calls++;
	return s->refuse;
}

static void test_core_audit__callback_and_file_get_the_same_line(void **state)
{
	struct fx *f = *state;
	struct seen s = {0};
	struct sbx__audit *a = NULL;
	char *text;

	assert_int_equal(sbx__audit_open(&a, f->path, on_event, &s, "docker"), 0);
	assert_int_equal(destroy_event(a, "c1"), 0);
	assert_int_equal(destroy_event(a, "c2"), 0);
	assert_int_equal(s.calls, 2);
	text = slurp(f->path, NULL);
	assert_non_null(strstr(text, s.line));
	assert_non_null(strstr(s.line, "\"seq\":2"));
	assert_non_null(strstr(text, "\"seq\":1"));
	free(text);
	/* A callback that says no fails the write, and the file gets nothing. */
	s.refuse = 1;
	assert_true(destroy_event(a, "c3") < 0);
	assert_non_null(strstr(sbx__audit_why(a), "callback"));
	sbx__audit_free(a);
	assert_int_equal(check_lines(f->path), 2);
}

static void test_core_audit__events_redacted_before_encoding(void **state)
{
	static const char secret[] = "Q\"U\\OTE\tD-S3CR3T";
	const char *argv[] = {"sh", "-c", "curl -H 'Authorization: Q\"U\\OTE\tD-S3CR3T' x", NULL};
	struct sbx__audit_run r = {.run_id = "00f067aa0ba902b7", .kind = "run", .argv = argv};
	struct sbx__audit_ctx c = {.sandbox_id = "c1", .tenant = "t1"};
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	int id = sbx__redact_register(secret, strlen(secret));
	json_t *ev, *enc;
	char *text, *esc;

	assert_true(id > 0);
	assert_int_equal(sbx__audit_run_start(a, &c, &r), 0);
	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "engine said %s", secret);
	assert_int_equal(sbx__audit_run_end(a, &c, &r, SBX_EENGINE, NULL, 5), 0);
	sbx__audit_free(a);
	text = slurp(f->path, NULL);
	/* Neither the value nor its JSON-escaped form is in the file. */
	enc = json_string(secret);
	esc = json_dumps(enc, JSON_ENCODE_ANY);
	assert_null(strstr(text, secret));
	esc[strlen(esc) - 1] = '\0';
	assert_null(strstr(text, esc + 1));
	assert_null(strstr(text, "S3CR3T"));
	ev = json_loadb(text, strcspn(text, "\n"), 0, NULL);
	assert_non_null(ev);
	assert_string_equal(json_string_value(json_array_get(json_object_get(ev, "argv"), 2)),
			    "curl -H 'Authorization: <redacted>' x");
	assert_string_equal(json_string_value(json_object_get(ev, "event")), "run.start");
	json_decref(ev);
	assert_non_null(strstr(text, "engine said <redacted>"));
	assert_int_equal(check_lines(f->path), 2);
	free(esc);
	json_decref(enc);
	free(text);
	sbx__redact_unregister(id);
	sbx__error_clear();
}

static void test_core_audit__argv_bounded(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	struct sbx__audit_ctx c = {.sandbox_id = "c1"};
	const char **argv = calloc(40, sizeof(char *));
	char *big = malloc(10000);
	struct sbx__audit_run r = {.run_id = "1", .kind = "run"};
	size_t len;
	char *text;

	assert_non_null(argv);
	assert_non_null(big);
	memset(big, 'a', 9999);
	big[9999] = '\0';
	for (int i = 0; i < 39; i++)
		argv[i] = big;
	r.argv = argv;
	assert_int_equal(sbx__audit_run_start(a, &c, &r), 0);
	sbx__audit_free(a);
	text = slurp(f->path, &len);
	assert_true(len < 80000);
	assert_non_null(strstr(text, "\"argv_truncated\":true"));
	free(text);
	free(big);
	free(argv);
}

/* ===== Whole lines ===== */

static void append_raw(const char *path, const char *bytes)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
	close(fd);
}

static void test_core_audit__torn_tail_cut_by_next_writer(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	char *text;

	assert_int_equal(destroy_event(a, "c1"), 0);
	/* What a crash in the middle of a write leaves. */
	append_raw(f->path, "{\"v\":1,\"time\":\"2024-");
	assert_int_equal(destroy_event(a, "c2"), 0);
	assert_int_equal(check_lines(f->path), 2);
	text = slurp(f->path, NULL);
	assert_null(strstr(text, "2024-{"));
	free(text);
	/* A file holding only a torn line. */
	sbx__audit_free(a);
	unlink(f->path);
	a = open_file(f->path);
	append_raw(f->path, "{\"v\":1,\"ev");
	assert_int_equal(destroy_event(a, "c3"), 0);
	assert_int_equal(check_lines(f->path), 1);
	sbx__audit_free(a);
}

static void test_core_audit__foreign_tail_left_alone(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	size_t before, after;
	char *text;

	append_raw(f->path, "not an audit log, and no newline");
	free(slurp(f->path, &before));
	assert_true(destroy_event(a, "c1") < 0);
	assert_non_null(strstr(sbx__audit_why(a), "not an audit event"));
	text = slurp(f->path, &after);
	assert_int_equal(before, after);
	assert_string_equal(text, "not an audit log, and no newline");
	free(text);
	sbx__audit_free(a);
}

static void test_core_audit__short_write_leaves_nothing(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	struct rlimit old, lim;
	size_t before, after;
	pid_t pid;
	int status;

	assert_int_equal(destroy_event(a, "c1"), 0);
	free(slurp(f->path, &before));
	/* In a child: the file may grow by 20 bytes only, so the write is cut. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		getrlimit(RLIMIT_FSIZE, &old);
		lim.rlim_cur = before + 20;
		lim.rlim_max = old.rlim_max;
		setrlimit(RLIMIT_FSIZE, &lim);
		_exit(destroy_event(a, "c2") < 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	free(slurp(f->path, &after));
	assert_int_equal(after, before);
	assert_int_equal(destroy_event(a, "c3"), 0);
	assert_int_equal(check_lines(f->path), 2);
	sbx__audit_free(a);
}

/* A writer killed at random points leaves at most a torn tail, which the
 * next writer cuts before it appends. The kill lands once the writer has
 * written and goes on writing (it says so on a pipe), after a pause that
 * only varies where in a write it lands: any point is a correct one. */
static void test_core_audit__killed_writer_leaves_no_torn_line(void **state)
{
	struct fx *f = *state;

	for (int round = 0; round < 20; round++) {
		struct sbx__audit *a;
		int fds[2], status;
		pid_t pid;
		char c;

		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct sbx__audit *mine = NULL;

			close(fds[0]);
			if (sbx__audit_open(&mine, f->path, NULL, NULL, "docker") != 0)
				_exit(2);
			destroy_event(mine, "killed-writer");
			if (write(fds[1], "w", 1) != 1)
				_exit(2);
			for (;;)
				destroy_event(mine, "killed-writer");
		}
		close(fds[1]);
		assert_int_equal(read(fds[0], &c, 1), 1);
		close(fds[0]);
		usleep(100 * (unsigned)(round % 7));
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		a = open_file(f->path);
		assert_int_equal(destroy_event(a, "after"), 0);
		sbx__audit_free(a);
		assert_true(check_lines(f->path) >= 1);
	}
}

#define THREADS 4
#define PER_WRITER 150

static void *writer(void *arg)
{
	struct sbx__audit *a = arg;

	for (int i = 0; i < PER_WRITER; i++)
		assert_int_equal(destroy_event(a, "a-rather-long-sandbox-id-to-make-lines-longer"),
				 0);
	return NULL;
}

static void test_core_audit__concurrent_writers_never_interleave(void **state)
{
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	pthread_t t[THREADS];
	pid_t kids[2];

	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			struct sbx__audit *mine = NULL;

			if (sbx__audit_open(&mine, f->path, NULL, NULL, "docker") != 0)
				_exit(2);
			for (int i = 0; i < PER_WRITER; i++)
				if (destroy_event(mine, "from-another-process") != 0)
					_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, a), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int k = 0; k < 2; k++) {
		int status;

		assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	sbx__audit_free(a);
	assert_int_equal(check_lines(f->path), (THREADS + 2) * PER_WRITER);
}

static void test_core_audit__error_code_names(void **state)
{
	(void)state;
	assert_string_equal(sbx__error_code_name(SBX_EDENIED), "EDENIED");
	assert_string_equal(sbx__error_code_name(SBX_EUNSUPPORTED), "EUNSUPPORTED");
	assert_string_equal(sbx__error_code_name(SBX_ETOOBIG), "ETOOBIG");
	assert_string_equal(sbx__error_code_name(-999), "ERROR");
}

/* Reads the first line of the file as JSON (decref it). */
static json_t *first_event(const char *path)
{
	char *text = slurp(path, NULL);
	json_t *ev = json_loadb(text, strcspn(text, "\n"), 0, NULL);

	free(text);
	assert_non_null(ev);
	return ev;
}

/* "network" is "none" without an allowlist; with one it is "allowlist", and
 * "allow" lists every entry in the policy's order, with its port if any. */
static void test_core_audit__create_lists_the_allowlist(void **state)
{
	struct sbx__audit_ctx c = {.sandbox_id = "c1", .tenant = "t1"};
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	sbx_policy *p = NULL;
	json_t *ev, *pol, *allow, *e;

	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx__audit_create(a, &c, p, SBX_TIER_CONTAINER, 0, 1), 0);
	assert_int_equal(sbx_policy_allow_host(p, "Api.Example.com", 443), 0);
	assert_int_equal(sbx_policy_allow_cidr(p, "198.18.0.0/15", 0), 0);
	assert_int_equal(sbx_policy_allow_cidr_spec(p, "[2001:db8::1]:8080"), 0);
	assert_int_equal(sbx__audit_create(a, &c, p, SBX_TIER_CONTAINER, 0, 1), 0);
	sbx__audit_free(a);
	sbx_policy_free(p);
	assert_int_equal(check_lines(f->path), 2);

	ev = first_event(f->path);
	pol = json_object_get(ev, "policy");
	assert_string_equal(json_string_value(json_object_get(pol, "network")), "none");
	assert_null(json_object_get(pol, "allow"));
	json_decref(ev);

	{
		char *text = slurp(f->path, NULL);
		ev = json_loads(strchr(text, '\n') + 1, JSON_DISABLE_EOF_CHECK, NULL);
		free(text);
	}
	assert_non_null(ev);
	pol = json_object_get(ev, "policy");
	assert_string_equal(json_string_value(json_object_get(pol, "network")), "allowlist");
	allow = json_object_get(pol, "allow");
	assert_int_equal(json_array_size(allow), 3);
	e = json_array_get(allow, 0);
	assert_string_equal(json_string_value(json_object_get(e, "host")), "api.example.com");
	assert_int_equal(json_integer_value(json_object_get(e, "port")), 443);
	assert_int_equal(json_object_size(e), 2);
	e = json_array_get(allow, 1);
	assert_string_equal(json_string_value(json_object_get(e, "cidr")), "198.18.0.0/15");
	assert_null(json_object_get(e, "port"));
	assert_int_equal(json_object_size(e), 1);
	e = json_array_get(allow, 2);
	assert_string_equal(json_string_value(json_object_get(e, "cidr")), "2001:db8::1/128");
	assert_int_equal(json_integer_value(json_object_get(e, "port")), 8080);
	json_decref(ev);
}

/*
 * The words of the limit kinds as the audit has always written them: the
 * policy's limits under their keys in the order of the enum, and the caps
 * a run hit by name (memory, pids, output, timeout; never disk). Tools read
 * these records back, so the bytes are pinned, not just the values.
 */
static void test_core_audit__limit_words_as_written(void **state)
{
	const char *argv[] = {"true", NULL};
	struct sbx__audit_run r = {.run_id = "00f067aa0ba902b7", .kind = "run", .argv = argv};
	struct sbx__audit_ctx c = {.sandbox_id = "c1", .tenant = "t1"};
	sbx_result res = {.version = 1, .status = SBX_RUN_OOM, .exit_code = 137};
	struct fx *f = *state;
	struct sbx__audit *a = open_file(f->path);
	sbx_policy *p = NULL;
	char *text;

	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_CPU_MILLI, 1500), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, 1ll << 30), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 300), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_DISK, 2ll << 30), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_NOFILE, 2048), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_OUTPUT, 1ll << 20), 0);
	assert_int_equal(sbx__audit_create(a, &c, p, SBX_TIER_CONTAINER, 0, 1), 0);
	res.limits_hit =
		SBX_HIT_MEMORY | SBX_HIT_PIDS | SBX_HIT_OUTPUT | SBX_HIT_TIMEOUT | SBX_HIT_DISK;
	assert_int_equal(sbx__audit_run_end(a, &c, &r, 0, &res, 5), 0);
	res.limits_hit = SBX_HIT_DISK;
	assert_int_equal(sbx__audit_run_end(a, &c, &r, 0, &res, 5), 0);
	sbx__audit_free(a);
	sbx_policy_free(p);
	assert_int_equal(check_lines(f->path), 3);
	text = slurp(f->path, NULL);
	assert_non_null(strstr(text, "\"limits\":{\"cpu_milli\":1500,\"memory\":1073741824,"
				     "\"pids\":300,\"disk\":2147483648,\"nofile\":2048,"
				     "\"output\":1048576}"));
	assert_non_null(strstr(text, "\"limits_hit\":[\"memory\",\"pids\",\"output\","
				     "\"timeout\"]"));
	assert_non_null(strstr(text, "\"limits_hit\":[]"));
	free(text);
}

#define T(name) cmocka_unit_test_setup_teardown(test_core_audit__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(created_0600),
		T(wide_permissions_refused),
		T(symlink_and_directory_refused),
		T(callback_and_file_get_the_same_line),
		T(events_redacted_before_encoding),
		T(argv_bounded),
		T(torn_tail_cut_by_next_writer),
		T(foreign_tail_left_alone),
		T(short_write_leaves_nothing),
		T(killed_writer_leaves_no_torn_line),
		T(concurrent_writers_never_interleave),
		T(error_code_names),
		T(create_lists_the_allowlist),
		T(limit_words_as_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
