/*
 * tests/unit/remote/test_wrap.c: the per-run caps of remote backends
 * (remote/wrap.c): the policy's open-files, processes, core and file-size
 * caps, hard and soft, ahead of the caller's argv, which is kept verbatim;
 * and the caps really apply when the wrapped argv runs here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "remote/remote-int.h"

static void test_remote_wrap__caps_precede_argv(void **state)
{
	const char *argv[] = {"sh", "-c", "echo \"$1\"", "x", "a b;c", NULL};
	sbx_policy *p = NULL;
	char **v = NULL;

	(void)state;
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_NOFILE, 77), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 33), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_DISK, 4096 * 1024), 0);
	assert_int_equal(sbx__remote_argv(&v, p, argv), 0);
	assert_string_equal(v[0], "prlimit");
	assert_string_equal(v[1], "--nofile=77:77");
	assert_string_equal(v[2], "--nproc=33:33");
	assert_string_equal(v[3], "--core=0:0");
	assert_string_equal(v[4], "--fsize=4194304:4194304");
	assert_string_equal(v[5], "--");
	for (size_t i = 0; argv[i]; i++)
		assert_string_equal(v[6 + i], argv[i]);
	assert_null(v[6 + 5]);
	sbx__remote_argv_free(v);
	sbx_policy_free(p);
}

static void test_remote_wrap__empty_argv_refused(void **state)
{
	const char *empty[] = {NULL};
	const char *blank[] = {"", NULL};
	sbx_policy *p = NULL;
	char **v = NULL;

	(void)state;
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx__remote_argv(&v, p, empty), SBX_EINVALID);
	assert_int_equal(sbx__remote_argv(&v, p, blank), SBX_EINVALID);
	assert_null(v);
	sbx_policy_free(p);
}

/* The wrapped argv, run here, sees the caps (when prlimit is installed). */
static void test_remote_wrap__caps_apply(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "test \"$(ulimit -n)\" = 71 && test \"$(ulimit -f)\" = 32768", NULL};
	sbx_policy *p = NULL;
	char **v = NULL;
	int st = 0;
	pid_t pid;

	(void)state;
	if (access("/usr/bin/prlimit", X_OK) != 0)
		skip();
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_NOFILE, 71), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_DISK, 16 * 1024 * 1024), 0);
	assert_int_equal(sbx__remote_argv(&v, p, argv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execvp(v[0], v);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	sbx__remote_argv_free(v);
	sbx_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote_wrap__caps_precede_argv),
		cmocka_unit_test(test_remote_wrap__empty_argv_refused),
		cmocka_unit_test(test_remote_wrap__caps_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
