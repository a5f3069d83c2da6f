/*
 * tests/unit/core/test_sandbox_args.c: unit tests of the public entry points
 * of core/sandbox.c and util/error.c that need no engine.
 *
 * Covers options versioning (sbx_backend_open, sbx_*_options_init), unknown
 * backend names, a socket path that is too long or has no daemon behind it,
 * NULL arguments, the NULL no-ops of the free and close functions, the
 * per-thread error record (never NULL, empty after sbx_error_clear, one per
 * thread), sbx_strerror, the status and tier names, and sbx_version.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "util/error-int.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A pointer value that no call may write over a refused out parameter. */
#define SENTINEL ((void *)0x5b5b)

static void assert_error(int rc, int code, const char *word)
{
	const sbx_error *e = sbx_error_last();

	assert_int_equal(rc, code);
	assert_int_equal(e->code, code);
	assert_non_null(e->message);
	if (word && !strstr(e->message, word))
		fail_msg("error message '%s' does not name '%s'", e->message, word);
}

/* ===== Backends ===== */

/*
 * An options struct of an older version (a caller built against an older
 * header, or the Python binding's) is smaller: init with that version
 * writes only its fields, never the bytes after it.
 */
static void init_keeps_within(size_t size, int run, unsigned int version)
{
	unsigned char buf[512];

	assert_true(size + 64 <= sizeof(buf));
	memset(buf, 0xA5, sizeof(buf));
	if (run)
		assert_int_equal(sbx_run_options_init((sbx_run_options *)(void *)buf, version), 0);
	else
		assert_int_equal(
			sbx_backend_options_init((sbx_backend_options *)(void *)buf, version), 0);
	assert_int_equal(*(unsigned int *)(void *)buf, version);
	for (size_t i = size; i < sizeof(buf); i++)
		if (buf[i] != 0xA5)
			fail_msg("%s options v%u: byte %zu past the struct's %zu written",
				 run ? "run" : "backend", version, i, size);
}

static void test_core_sandbox_args__options_init_writes_only_its_version(void **state)
{
	(void)state;
	init_keeps_within(offsetof(sbx_run_options, secrets), 1, 1);
	init_keeps_within(offsetof(sbx_run_options, pty), 1, 2);
	init_keeps_within(offsetof(sbx_run_options, as_root), 1, 3);
	init_keeps_within(sizeof(sbx_run_options), 1, 4);
	init_keeps_within(offsetof(sbx_backend_options, config), 0, 1);
	init_keeps_within(offsetof(sbx_backend_options, audit_path), 0, 2);
	init_keeps_within(offsetof(sbx_backend_options, hosts_file), 0, 3);
	init_keeps_within(sizeof(sbx_backend_options), 0, 4);
}

static void test_core_sandbox_args__backend_open_version_zero(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = SENTINEL;
	(void)state;

	o.version = 0;
	assert_error(sbx_backend_open(&b, "docker", &o), SBX_EVERSION, "version 0");
	assert_ptr_equal(b, SENTINEL);
	assert_error(sbx_backend_open(&b, NULL, &o), SBX_EVERSION, "version");
	assert_ptr_equal(b, SENTINEL);
}

static void test_core_sandbox_args__backend_open_version_newer(void **state)
{
	static const unsigned int versions[] = {SBX_BACKEND_OPTIONS_VERSION + 1, 99, UINT32_MAX};
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = SENTINEL;
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(versions); i++) {
		o.version = versions[i];
		assert_error(sbx_backend_open(&b, "docker", &o), SBX_EVERSION, "version");
		assert_ptr_equal(b, SENTINEL);
	}
}

static void test_core_sandbox_args__backend_open_unknown_name(void **state)
{
	static const char *const names[] = {"nosuchbackend", "Docker", "", "docker "};
	sbx_backend *b = SENTINEL;
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		assert_error(sbx_backend_open(&b, names[i], NULL), SBX_EUNSUPPORTED, names[i]);
		assert_int_equal(sbx_error_last()->klass, SBX_ERRCLASS_CORE);
		assert_ptr_equal(b, SENTINEL);
	}
}

static void test_core_sandbox_args__backend_open_null_out(void **state)
{
	(void)state;
	assert_error(sbx_backend_open(NULL, "docker", NULL), SBX_EINVALID, NULL);
}

static void test_core_sandbox_args__backend_open_socket_path_too_long(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = SENTINEL;
	char path[109];
	(void)state;

	memset(path, 's', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0'; /* 108 bytes: one more than a unix socket holds */
	o.socket_path = path;
	assert_error(sbx_backend_open(&b, "docker", &o), SBX_EINVALID, "socket");
	assert_ptr_equal(b, SENTINEL);
}

/* A directory holding an executable init and the resolv.conf installed beside
 * it, so that opening gets as far as calling the (absent) daemon. */
struct fake_install {
	char dir[64];
	char init[96];
	char resolv[96];
	char sock[96];
};

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int fake_install_setup(void **state)
{
	struct fake_install *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sbx-unit-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->init, sizeof(f->init), "%s/sbx-init", f->dir);
	snprintf(f->resolv, sizeof(f->resolv), "%s/sbx-resolv.conf", f->dir);
	snprintf(f->sock, sizeof(f->sock), "%s/no-daemon.sock", f->dir);
	*state = f;
	return 0;
}

static int fake_install_teardown(void **state)
{
	struct fake_install *f = *state;

	unlink(f->init);
	unlink(f->resolv);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void test_core_sandbox_args__backend_open_no_daemon(void **state)
{
	struct fake_install *f = *state;
	sbx_backend_options o;
	sbx_backend *b = SENTINEL;

	write_file(f->init, "#!/bin/sh\nexit 1\n", 0755);
	write_file(f->resolv, "# no name server\n", 0644);
	assert_int_equal(sbx_backend_options_init(&o, SBX_BACKEND_OPTIONS_VERSION), 0);
	o.socket_path = f->sock;
	o.init_path = f->init;
	o.api_timeout_ms = 5000;
	assert_error(sbx_backend_open(&b, "docker", &o), SBX_EUNAVAILABLE, f->sock);
	assert_ptr_equal(b, SENTINEL);
}

static void test_core_sandbox_args__backend_options_init(void **state)
{
	sbx_backend_options want = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend_options o;
	(void)state;

	memset(&o, 0xa5, sizeof(o));
	assert_int_equal(sbx_backend_options_init(&o, SBX_BACKEND_OPTIONS_VERSION), 0);
	assert_int_equal(o.version, SBX_BACKEND_OPTIONS_VERSION);
	assert_int_equal(o.version, want.version);
	assert_null(o.socket_path);
	assert_null(o.init_path);
	assert_int_equal(o.api_timeout_ms, 0);
}

static void test_core_sandbox_args__backend_options_init_bad_version(void **state)
{
	static const unsigned int versions[] = {0, SBX_BACKEND_OPTIONS_VERSION + 1, 99};
	sbx_backend_options o, untouched;
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(versions); i++) {
		memset(&o, 0xa5, sizeof(o));
		memcpy(&untouched, &o, sizeof(o));
		assert_error(sbx_backend_options_init(&o, versions[i]), SBX_EVERSION, "version");
		assert_memory_equal(&o, &untouched, sizeof(o));
	}
	assert_error(sbx_backend_options_init(NULL, SBX_BACKEND_OPTIONS_VERSION), SBX_EINVALID,
		     NULL);
}

static void test_core_sandbox_args__run_options_init(void **state)
{
	sbx_run_options want = SBX_RUN_OPTIONS_INIT;
	sbx_run_options o;
	(void)state;

	memset(&o, 0xa5, sizeof(o));
	assert_int_equal(sbx_run_options_init(&o, SBX_RUN_OPTIONS_VERSION), 0);
	assert_int_equal(o.version, SBX_RUN_OPTIONS_VERSION);
	assert_int_equal(o.version, want.version);
	assert_null(o.env);
	assert_null(o.workdir);
	assert_null(o.stdin_data);
	assert_int_equal(o.stdin_len, 0);
	assert_int_equal(o.timeout_ms, 0);
	assert_null(o.on_output);
	assert_null(o.payload);
}

static void test_core_sandbox_args__run_options_init_bad_version(void **state)
{
	static const unsigned int versions[] = {0, SBX_RUN_OPTIONS_VERSION + 1, 99};
	sbx_run_options o, untouched;
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(versions); i++) {
		memset(&o, 0xa5, sizeof(o));
		memcpy(&untouched, &o, sizeof(o));
		assert_error(sbx_run_options_init(&o, versions[i]), SBX_EVERSION, "version");
		assert_memory_equal(&o, &untouched, sizeof(o));
	}
	assert_error(sbx_run_options_init(NULL, SBX_RUN_OPTIONS_VERSION), SBX_EINVALID, NULL);
}

/* ===== NULL arguments and no-ops ===== */

static void test_core_sandbox_args__null_arguments_refused(void **state)
{
	const char *argv[] = {"true", NULL};
	const char *empty_argv[] = {NULL};
	const char *blank_argv[] = {"", NULL};
	sbx_sandbox *s = SENTINEL;
	sbx_result *r = SENTINEL;
	sbx_policy *p = NULL;
	void *data = SENTINEL;
	size_t len = 7;
	(void)state;

	assert_int_equal(sbx_policy_new(&p), 0);
	assert_error(sbx_sandbox_create(&s, NULL, p), SBX_EINVALID, NULL);
	assert_error(sbx_sandbox_create(NULL, NULL, p), SBX_EINVALID, NULL);
	assert_ptr_equal(s, SENTINEL);
	assert_error(sbx_sandbox_open(&s, NULL, "abc"), SBX_EINVALID, NULL);
	assert_ptr_equal(s, SENTINEL);
	assert_error(sbx_sandbox_run(&r, NULL, argv, NULL), SBX_EINVALID, NULL);
	assert_error(sbx_sandbox_run(&r, NULL, empty_argv, NULL), SBX_EINVALID, NULL);
	assert_error(sbx_sandbox_run(&r, NULL, blank_argv, NULL), SBX_EINVALID, NULL);
	assert_error(sbx_sandbox_run(&r, NULL, NULL, NULL), SBX_EINVALID, NULL);
	assert_error(sbx_sandbox_run_code(&r, NULL, NULL, "print(1)", 8, NULL), SBX_EINVALID, NULL);
	assert_error(sbx_sandbox_run_code(&r, NULL, "python", NULL, 0, NULL), SBX_EINVALID, NULL);
	assert_ptr_equal(r, SENTINEL);
	assert_error(sbx_sandbox_write_file(NULL, "/workspace/x", "a", 1, 0644), SBX_EINVALID,
		     NULL);
	assert_error(sbx_sandbox_read_file(&data, &len, NULL, "/workspace/x", 0), SBX_EINVALID,
		     NULL);
	assert_ptr_equal(data, SENTINEL);
	assert_int_equal(len, 7);
	assert_error(sbx_backend_image_exists(NULL, "img"), SBX_EINVALID, NULL);
	assert_error(sbx_backend_import_image(NULL, "/tmp/x.tar", "img"), SBX_EINVALID, NULL);
	assert_error(sbx_backend_list(NULL, NULL, NULL, NULL), SBX_EINVALID, NULL);
	assert_null(sbx_backend_name(NULL));
	assert_null(sbx_sandbox_id(NULL));
	sbx_policy_free(p);
}

static void test_core_sandbox_args__null_is_noop(void **state)
{
	(void)state;
	sbx_result_free(NULL);
	sbx_policy_free(NULL);
	sbx_backend_free(NULL);
	sbx_free(NULL);
	sbx_sandbox_detach(NULL);
	assert_int_equal(sbx_sandbox_close(NULL), 0);
}

/* ===== The error record ===== */

static void test_core_sandbox_args__error_last_never_null(void **state)
{
	const sbx_error *e;
	(void)state;

	e = sbx_error_last();
	assert_non_null(e);
	assert_non_null(e->message);
	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "engine said %d", 500);
	sbx__error_http(500);
	e = sbx_error_last();
	assert_non_null(e);
	assert_int_equal(e->code, SBX_EENGINE);
	assert_int_equal(e->klass, SBX_ERRCLASS_ENGINE);
	assert_int_equal(e->http_status, 500);
	assert_string_equal(e->message, "engine said 500");
}

static void test_core_sandbox_args__error_clear_empties(void **state)
{
	const sbx_error *e;
	(void)state;

	sbx__error_os(SBX_ENOTFOUND, ENOENT, "open %s", "/nowhere");
	sbx__error_http(404);
	e = sbx_error_last();
	assert_int_equal(e->code, SBX_ENOTFOUND);
	assert_int_equal(e->klass, SBX_ERRCLASS_OS);
	assert_int_equal(e->os_errno, ENOENT);
	assert_non_null(strstr(e->message, "open /nowhere: "));
	sbx_error_clear();
	e = sbx_error_last();
	assert_non_null(e);
	assert_int_equal(e->code, SBX_OK);
	assert_int_equal(e->klass, SBX_ERRCLASS_NONE);
	assert_int_equal(e->os_errno, 0);
	assert_int_equal(e->http_status, 0);
	assert_non_null(e->message);
	assert_string_equal(e->message, "");
}

/* What a thread that has recorded nothing sees, and that it cannot see the
 * record of another thread. */
struct thread_view {
	int code;
	sbx_error_class klass;
	char message[64];
	int non_null;
	int code_after_set; /* the code this thread set for itself */
};

static void *thread_look(void *arg)
{
	struct thread_view *v = arg;
	const sbx_error *e = sbx_error_last();

	v->non_null = e != NULL && e->message != NULL;
	if (v->non_null) {
		v->code = e->code;
		v->klass = e->klass;
		snprintf(v->message, sizeof(v->message), "%s", e->message);
	}
	sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_CORE, "thread's own error");
	v->code_after_set = sbx_error_last()->code;
	return NULL;
}

static void test_core_sandbox_args__error_record_per_thread(void **state)
{
	struct thread_view v;
	pthread_t t;
	(void)state;

	memset(&v, 0x5a, sizeof(v));
	sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_CORE, "main thread's error");
	assert_int_equal(pthread_create(&t, NULL, thread_look, &v), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(v.non_null);
	assert_int_equal(v.code, SBX_OK);
	assert_int_equal(v.klass, SBX_ERRCLASS_NONE);
	assert_string_equal(v.message, "");
	assert_int_equal(v.code_after_set, SBX_ETIMEOUT);
	/* The other thread's error did not reach this one. */
	assert_int_equal(sbx_error_last()->code, SBX_EDENIED);
	assert_string_equal(sbx_error_last()->message, "main thread's error");
}

static void test_core_sandbox_args__backend_open_clears_old_error(void **state)
{
	sbx_backend *b = SENTINEL;
	(void)state;

	sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_CORE, "stale");
	assert_error(sbx_backend_open(&b, "nosuchbackend", NULL), SBX_EUNSUPPORTED,
		     "nosuchbackend");
	assert_null(strstr(sbx_error_last()->message, "stale"));
}

/* ===== Names and strings ===== */

static void test_core_sandbox_args__strerror_every_code(void **state)
{
	const char *texts[SBX_OK - SBX_ERROR_LAST];
	const char *unknown = sbx_strerror(SBX_ERROR_LAST);
	size_t n = 0;
	(void)state;

	assert_non_null(unknown);
	for (int code = SBX_OK; code > SBX_ERROR_LAST; code--) {
		const char *t = sbx_strerror(code);

		assert_non_null(t);
		assert_true(t[0] != '\0');
		if (strcmp(t, unknown) == 0)
			fail_msg("code %d has the text of an unknown code ('%s')", code, t);
		for (size_t i = 0; i < n; i++)
			if (strcmp(texts[i], t) == 0)
				fail_msg("codes %d and %d share the text '%s'", -(int)i, code, t);
		texts[n++] = t;
	}
	assert_int_equal(n, 14);
	assert_string_equal(sbx_strerror(SBX_EINVALID), "invalid argument");
	assert_non_null(sbx_strerror(1));
	assert_non_null(sbx_strerror(42));
	assert_non_null(sbx_strerror(-1000));
	assert_non_null(sbx_strerror(INT32_MIN));
}

static void test_core_sandbox_args__run_status_names(void **state)
{
	static const struct {
		sbx_run_status st;
		const char *name;
	} names[] = {
		{SBX_RUN_EXITED, "exited"}, {SBX_RUN_TIMEOUT, "timeout"}, {SBX_RUN_OOM, "oom"},
		{SBX_RUN_KILLED, "killed"}, {SBX_RUN_ERROR, "error"},
	};
	const char *unknown;
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		assert_string_equal(sbx_run_status_name(names[i].st), names[i].name);
	unknown = sbx_run_status_name((sbx_run_status)99);
	assert_non_null(unknown);
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		assert_string_not_equal(unknown, names[i].name);
}

static void test_core_sandbox_args__tier_name_unknown(void **state)
{
	(void)state;
	assert_null(sbx_tier_name((sbx_tier)99));
	assert_null(sbx_tier_name((sbx_tier)3));
	assert_null(sbx_tier_name((sbx_tier)-1));
	assert_string_equal(sbx_tier_name(SBX_TIER_CONTAINER), "container");
}

static void test_core_sandbox_args__version(void **state)
{
	char want[32];
	(void)state;

	assert_non_null(sbx_version());
	assert_string_equal(sbx_version(), "0.1.0");
	assert_string_equal(sbx_version(), SBX_VERSION_STRING);
	snprintf(want, sizeof(want), "%d.%d.%d", SBX_VERSION_MAJOR, SBX_VERSION_MINOR,
		 SBX_VERSION_PATCH);
	assert_string_equal(sbx_version(), want);
	assert_ptr_equal(sbx_version(), sbx_version());
}

#define T(name) cmocka_unit_test(test_core_sandbox_args__##name)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(options_init_writes_only_its_version),
		T(backend_open_version_zero),
		T(backend_open_version_newer),
		T(backend_open_unknown_name),
		T(backend_open_null_out),
		T(backend_open_socket_path_too_long),
		cmocka_unit_test_setup_teardown(test_core_sandbox_args__backend_open_no_daemon,
						fake_install_setup, fake_install_teardown),
		T(backend_options_init),
		T(backend_options_init_bad_version),
		T(run_options_init),
		T(run_options_init_bad_version),
		T(null_arguments_refused),
		T(null_is_noop),
		T(error_last_never_null),
		T(error_clear_empties),
		T(error_record_per_thread),
		T(backend_open_clears_old_error),
		T(strerror_every_code),
		T(run_status_names),
		T(tier_name_unknown),
		T(version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
