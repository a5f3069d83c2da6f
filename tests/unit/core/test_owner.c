/*
 * tests/unit/core/test_owner.c: the owner judgement every backend's reaper
 * uses (core/owner.c): a passed deadline condemns, another host's sandbox
 * is left to its deadline, a detached one waits, a live owner keeps its
 * sandbox, a dead owner or a reused pid (other start time) or another boot
 * condemns, and labels that cannot be read are skipped with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/owner-int.h"

static char future[32], past[32];

static int setup(void **state)
{
	(void)state;
	snprintf(future, sizeof(future), "%lld", (long long)time(NULL) + 3600);
	snprintf(past, sizeof(past), "%lld", (long long)time(NULL) - 1);
	return 0;
}

static void test_owner__self_is_alive(void **state)
{
	struct sbx__owner me;
	char pid[32], start[32];
	const char *why = NULL;

	(void)state;
	sbx__owner_self(&me, 0);
	assert_true(me.host[0] && me.boot[0]);
	assert_int_equal(me.pid, getpid());
	snprintf(pid, sizeof(pid), "%lld", me.pid);
	snprintf(start, sizeof(start), "%llu", me.start);
	assert_int_equal(sbx__owner_judge(&me, future, me.host, me.boot, pid, start, &why), 0);
	/* The same pid with another start time is a reused pid. */
	snprintf(start, sizeof(start), "%llu", me.start + 1);
	assert_int_equal(sbx__owner_judge(&me, future, me.host, me.boot, pid, start, &why),
			 SBX_REAP_OWNER_GONE);
	assert_int_equal(sbx__owner_judge(&me, future, me.host, "another-boot", pid, start, &why),
			 SBX_REAP_OWNER_REBOOTED);
}

static void test_owner__dead_owner_condemned(void **state)
{
	struct sbx__owner me;
	char pid[32];
	const char *why = NULL;
	pid_t child = fork();

	(void)state;
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	sbx__owner_self(&me, 0);
	snprintf(pid, sizeof(pid), "%ld", (long)child);
	assert_int_equal(sbx__owner_judge(&me, future, me.host, me.boot, pid, "5", &why),
			 SBX_REAP_OWNER_GONE);
}

static void test_owner__deadline_host_and_detached(void **state)
{
	struct sbx__owner me;
	const char *why = NULL;

	(void)state;
	sbx__owner_self(&me, 1);
	assert_int_equal(me.pid, 0);
	assert_int_equal(sbx__owner_judge(&me, past, me.host, me.boot, "0", "0", &why),
			 SBX_REAP_DEADLINE_PASSED);
	assert_int_equal(sbx__owner_judge(&me, future, "other-host", me.boot, "1", "1", &why), 0);
	assert_int_equal(sbx__owner_judge(&me, future, me.host, me.boot, "0", "0", &why), 0);
	assert_int_equal(sbx__owner_judge(&me, NULL, me.host, me.boot, "1", "1", &why),
			 SBX_REAP_SKIPPED);
	assert_non_null(strstr(why, "deadline"));
	why = NULL;
	assert_int_equal(sbx__owner_judge(&me, future, me.host, me.boot, "x1", "1", &why),
			 SBX_REAP_SKIPPED);
	assert_non_null(strstr(why, "owner-pid"));
	assert_int_equal(sbx__owner_judge(&me, "-5", me.host, me.boot, "1", "1", &why),
			 SBX_REAP_SKIPPED);
}

/*
 * The docker reaper's judgement (sbx__owner_judge_ns): an owner in another
 * PID namespace holding the same pid as a live process here is never taken
 * for it, and a label without the namespace is skipped with a reason.
 */
static void test_owner__pid_namespace_decides(void **state)
{
	struct sbx__owner me;
	char pid[32], start[32], ns[32], other_ns[32];
	const char *why = NULL;
	pid_t child = fork();

	(void)state;
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	sbx__owner_self(&me, 0);
	assert_true(me.pidns != 0);
	assert_int_equal(me.pidns, sbx__owner_pidns());
	snprintf(pid, sizeof(pid), "%lld", me.pid);
	snprintf(start, sizeof(start), "%llu", me.start);
	snprintf(ns, sizeof(ns), "%llu", me.pidns);
	snprintf(other_ns, sizeof(other_ns), "%llu", me.pidns + 1);
	/* Alive here, same namespace: kept. */
	assert_int_equal(sbx__owner_judge_ns(&me, future, me.host, me.boot, pid, start, ns, &why),
			 0);
	/* A dead pid of this namespace: gone. */
	snprintf(pid, sizeof(pid), "%ld", (long)child);
	assert_int_equal(sbx__owner_judge_ns(&me, future, me.host, me.boot, pid, "5", ns, &why),
			 SBX_REAP_OWNER_GONE);
	/* The same dead pid in another namespace (another container on this
	 * host and boot, with the same host name): left to its deadline. */
	assert_int_equal(
		sbx__owner_judge_ns(&me, future, me.host, me.boot, pid, "5", other_ns, &why), 0);
	/* An older label without the namespace: skipped, with the reason. */
	why = NULL;
	assert_int_equal(sbx__owner_judge_ns(&me, future, me.host, me.boot, pid, "5", NULL, &why),
			 SBX_REAP_SKIPPED);
	assert_non_null(strstr(why, "owner-pidns"));
	assert_int_equal(sbx__owner_judge_ns(&me, future, me.host, me.boot, pid, "5", "x", &why),
			 SBX_REAP_SKIPPED);
	/* The deadline and another boot still decide first. */
	assert_int_equal(sbx__owner_judge_ns(&me, past, me.host, me.boot, pid, "5", NULL, &why),
			 SBX_REAP_DEADLINE_PASSED);
	assert_int_equal(
		sbx__owner_judge_ns(&me, future, me.host, "another-boot", pid, "5", other_ns, &why),
		SBX_REAP_OWNER_REBOOTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner__pid_namespace_decides),
		cmocka_unit_test(test_owner__self_is_alive),
		cmocka_unit_test(test_owner__dead_owner_condemned),
		cmocka_unit_test(test_owner__deadline_host_and_detached),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
