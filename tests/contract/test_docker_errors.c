/*
 * tests/contract/test_docker_errors.c: bad input and failing engines get a
 * clear error that names the problem, and never leave a container behind.
 * The real dockerd is used wherever it can show the behaviour; a scripted
 * engine (support/fake_engine.c) stands in only for answers this host's
 * daemon cannot be made to give, such as create Warnings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"
#include "support/fake_engine.h"

static void assert_msg(const char *needle)
{
	const char *m = sbx_error_last()->message;

	if (!strstr(m, needle))
		fail_msg("error message '%s' does not mention '%s'", m, needle);
}

static void assert_none_left(void)
{
	char lab[128];

	snprintf(lab, sizeof(lab), "io.sandboxio.tenant=%s", t_tenant());
	assert_int_equal(t_engine_count_label(lab), 0);
}

static void test_engine_errors__daemon_down(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	o.socket_path = "/nonexistent/docker.sock";
	assert_int_equal(sbx_backend_open(&b, "docker", &o), SBX_EUNAVAILABLE);
	assert_null(b);
	assert_msg("/nonexistent/docker.sock");
}

static void test_engine_errors__socket_path_too_long(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	char path[200];
	sbx_backend *b = NULL;

	(void)state;
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	o.socket_path = path;
	assert_int_equal(sbx_backend_open(&b, "docker", &o), SBX_EINVALID);
	assert_msg("107");
}

static void test_engine_errors__remote_docker_host_refused(void **state)
{
	sbx_backend *b = NULL;

	(void)state;
	setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
	assert_int_equal(sbx_backend_open(&b, "docker", NULL), SBX_EUNSUPPORTED);
	unsetenv("DOCKER_HOST");
	assert_msg("unix://");
}

static void test_engine_errors__missing_init(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	/* Listing and removing need no init; creating does, and says which. */
	o.init_path = "/nonexistent/sbx-init";
	assert_int_equal(sbx_backend_open(&b, "docker", &o), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_ENOTFOUND);
	assert_null(s);
	assert_msg("/nonexistent/sbx-init");
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_errors__missing_image(void **state)
{
	sbx_backend *b = t_backend();
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	(void)state;
	assert_int_equal(sbx_policy_set_image(p, "sandboxio/no-such-image:0"), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_ENOTFOUND);
	assert_null(s);
	assert_msg("sandboxio/no-such-image:0");
	assert_msg("sandboxio image build");
	assert_none_left();
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_errors__odd_image_reference(void **state)
{
	sbx_policy *p = t_policy();

	(void)state;
	assert_int_equal(sbx_policy_set_image(p, "bad image!"), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_image(p, "a\nb"), SBX_EINVALID);
	assert_string_equal(sbx_policy_image(p), "sandboxio/python:3.11");
	sbx_policy_free(p);
}

static void test_engine_errors__tiers_not_available_refused(void **state)
{
	sbx_backend *b = t_backend();
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	long st;
	json_t *info = t_engine_get("/info", &st);
	int has_runsc = json_object_get(json_object_get(info, "Runtimes"), "runsc") != NULL;

	(void)state;
	json_decref(info);
	sbx_policy_set_min_tier(p, SBX_TIER_MICROVM);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_msg("microvm");
	if (!has_runsc) {
		sbx_policy_set_min_tier(p, SBX_TIER_GVISOR);
		assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
		assert_msg("runsc");
	}
	assert_null(s);
	assert_none_left();
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_errors__bad_run_arguments(void **state)
{
	sbx_backend *b = t_backend();
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *empty[] = {NULL};
	const char *bad_env[] = {"1BAD=x", NULL};
	const char *no_eq[] = {"NOEQUALS", NULL};
	const char *argv[] = {"true", NULL};
	char *huge = malloc((2u << 20) + 1);
	const char *big[] = {"echo", huge, NULL};

	(void)state;
	memset(huge, 'a', 2u << 20);
	huge[2u << 20] = '\0';
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	assert_int_equal(sbx_sandbox_run(&r, s, empty, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_run(&r, s, big, NULL), SBX_ETOOBIG);
	assert_msg("argv");
	o.env = bad_env;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), SBX_EINVALID);
	o.env = no_eq;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), SBX_EINVALID);
	o.env = NULL;
	o.workdir = "relative/dir";
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), SBX_EINVALID);
	o.workdir = NULL;
	o.version = 99;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), SBX_EVERSION);
	assert_null(r);
	/* The sandbox is still fine after every refusal. */
	assert_int_equal(sbx_sandbox_run(&r, s, argv, NULL), 0);
	assert_int_equal(r->exit_code, 0);
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_none_left();
	free(huge);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_errors__missing_workdir_reported(void **state)
{
	sbx_backend *b = t_backend();
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"true", NULL};

	(void)state;
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	o.workdir = "/no/such/dir";
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), 0);
	assert_int_not_equal(r->exit_code, 0);
	assert_non_null(strstr(r->stderr_data, "/no/such/dir"));
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_errors__open_foreign_container_refused(void **state)
{
	sbx_backend *b = t_backend();
	sbx_sandbox *s = NULL;

	(void)state;
	assert_int_equal(sbx_sandbox_open(&s, b, "no-such-container-xyz"), SBX_ENOTFOUND);
	assert_int_equal(sbx_sandbox_open(&s, b, "../../etc"), SBX_EINVALID);
	assert_null(s);
	sbx_backend_free(b);
}

/* ===== Answers only a scripted engine can give ===== */

static const struct fake_route warn_routes[] = {
	{"GET", "/info", 200, "{\"Runtimes\":{\"runc\":{}}}"},
	{"GET", "/images/", 200, "{\"Id\":\"sha256:00\"}"},
	/* The uids in use, before a uid of its own is chosen: none. */
	{"GET", "/containers/json", 200, "[]"},
	{"POST", "/containers/create", 201,
	 "{\"Id\":\"c0ffee\",\"Warnings\":[\"Your kernel does not support memory limit "
	 "capabilities or the cgroup is not mounted. Limitation discarded.\"]}"},
	{"DELETE", "/containers/c0ffee", 204, ""},
};

static void test_engine_errors__create_warnings_fail_closed(void **state)
{
	struct fake_engine *f = fake_engine_start(warn_routes, 5);
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	(void)state;
	assert_non_null(f);
	o.socket_path = fake_engine_socket(f);
	assert_int_equal(sbx_backend_open(&b, "docker", &o), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EDENIED);
	assert_null(s);
	assert_msg("Limitation discarded");
	/* Removed, and never started. */
	assert_int_equal(fake_engine_count(f, "DELETE", "/containers/c0ffee"), 1);
	assert_int_equal(fake_engine_count(f, "POST", "/containers/c0ffee/start"), 0);
	sbx_backend_free(b);
	sbx_policy_free(p);
	fake_engine_stop(f);
}

static const struct fake_route garbage_routes[] = {
	{"GET", "/info", 200, "this is not json"},
};

static void test_engine_errors__garbage_answer(void **state)
{
	struct fake_engine *f = fake_engine_start(garbage_routes, 1);
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	o.socket_path = fake_engine_socket(f);
	assert_int_equal(sbx_backend_open(&b, "docker", &o), SBX_EENGINE);
	assert_msg("not JSON");
	fake_engine_stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_errors__daemon_down),
		cmocka_unit_test(test_engine_errors__socket_path_too_long),
		cmocka_unit_test(test_engine_errors__remote_docker_host_refused),
		cmocka_unit_test(test_engine_errors__missing_init),
		cmocka_unit_test(test_engine_errors__missing_image),
		cmocka_unit_test(test_engine_errors__odd_image_reference),
		cmocka_unit_test(test_engine_errors__tiers_not_available_refused),
		cmocka_unit_test(test_engine_errors__bad_run_arguments),
		cmocka_unit_test(test_engine_errors__missing_workdir_reported),
		cmocka_unit_test(test_engine_errors__open_foreign_container_refused),
		cmocka_unit_test(test_engine_errors__create_warnings_fail_closed),
		cmocka_unit_test(test_engine_errors__garbage_answer),
	};

	if (!t_engine_ready()) {
		fprintf(stderr, "contract: dockerd or the default image is missing\n");
		return 1;
	}
	return cmocka_run_group_tests_name("engine_contract[docker] errors", tests, NULL, NULL);
}
