/*
 * tests/unit/cgroups/test_cgroups.c: unit tests of the cgroup limit and usage
 * reader and of the limit check.
 *
 * The reader is run against fixture trees, each a fake cgroup root and a fake
 * /proc, under tests/unit/cgroups/fixtures (relative to the repository root,
 * where the tests run; SBX_CGROUPS_FIXTURES overrides it at compile time):
 *	v2      a pure v2 host: pid 100 a capped container, 101 unlimited,
 *	        102 no swap controller, 103-107 bad or missing paths
 *	v1      a hybrid host (v1 controllers, cgroup2 at unified/): pid 200 a
 *	        capped container, 201 co-mounted cpu,cpuacct and unlimited,
 *	        202 memory only in the unified hierarchy, 203 pure v1, 204-207 bad
 *	broken  a v2 host with one malformed file per cgroup: pids 300-320, and
 *	        malformed <pid>/cgroup files: pids 330-335
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cgroups/cgroups-int.h"

#ifndef SBX_CGROUPS_FIXTURES
#define SBX_CGROUPS_FIXTURES "tests/unit/cgroups/fixtures"
#endif

#define MiB (INT64_C(1) << 20)

static void fixture_paths(const char *tree, char *root, char *proc)
{
	snprintf(root, PATH_MAX, "%s/%s/cgroup", SBX_CGROUPS_FIXTURES, tree);
	snprintf(proc, PATH_MAX, "%s/%s/proc", SBX_CGROUPS_FIXTURES, tree);
}

static int read_limits(const char *tree, pid_t pid, sbx_cgroup_limits *out)
{
	char root[PATH_MAX], proc[PATH_MAX];

	fixture_paths(tree, root, proc);
	return sbx__cgroup_read_limits(out, root, proc, pid);
}

static int read_usage(const char *tree, pid_t pid, sbx_cgroup_usage *out)
{
	char root[PATH_MAX], proc[PATH_MAX];

	fixture_paths(tree, root, proc);
	return sbx__cgroup_read_usage(out, root, proc, pid);
}

/* Expects read_limits to fail with want and to leave out untouched. */
static void expect_limits_rc(const char *tree, pid_t pid, int want)
{
	sbx_cgroup_limits l, before;

	memset(&l, 0x5a, sizeof(l));
	before = l;
	assert_int_equal(read_limits(tree, pid, &l), want);
	assert_memory_equal(&l, &before, sizeof(l));
}

static void expect_usage_rc(const char *tree, pid_t pid, int want)
{
	sbx_cgroup_usage u, before;

	memset(&u, 0x5a, sizeof(u));
	before = u;
	assert_int_equal(read_usage(tree, pid, &u), want);
	assert_memory_equal(&u, &before, sizeof(u));
}

/* ---- v2 ---- */

static void test_cgroups__v2_limits(void **state)
{
	sbx_cgroup_limits l;

	(void)state;
	assert_int_equal(read_limits("v2", 100, &l), 0);
	assert_int_equal(l.version, 2);
	assert_int_equal(l.memory_max, 512 * MiB);
	assert_int_equal(l.memswap_max, 512 * MiB);
	assert_int_equal(l.pids_max, 256);
	assert_int_equal(l.cpu_quota_us, 100000);
	assert_int_equal(l.cpu_period_us, 100000);
}

static void test_cgroups__v2_usage(void **state)
{
	sbx_cgroup_usage u;

	(void)state;
	assert_int_equal(read_usage("v2", 100, &u), 0);
	assert_int_equal(u.memory_peak, 123456789);
	assert_int_equal(u.oom_kills, 1);
	assert_int_equal(u.pids_current, 7);
	assert_int_equal(u.pids_events_max, 2);
	assert_int_equal(u.cpu_usage_us, 1500000);
	assert_int_equal(u.nr_throttled, 5);
}

static void test_cgroups__v2_unlimited(void **state)
{
	sbx_cgroup_limits l;

	(void)state;
	assert_int_equal(read_limits("v2", 101, &l), 0);
	assert_int_equal(l.version, 2);
	assert_int_equal(l.memory_max, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.memswap_max, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.pids_max, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.cpu_quota_us, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.cpu_period_us, 100000);
}

/* No memory.peak and no oom_kill key (older kernels): unknown, not an error. */
static void test_cgroups__v2_usage_unknown(void **state)
{
	sbx_cgroup_usage u;

	(void)state;
	assert_int_equal(read_usage("v2", 101, &u), 0);
	assert_int_equal(u.memory_peak, SBX_CGROUP_UNKNOWN);
	assert_int_equal(u.oom_kills, SBX_CGROUP_UNKNOWN);
	assert_int_equal(u.pids_current, 1);
	assert_int_equal(u.pids_events_max, 0);
	assert_int_equal(u.cpu_usage_us, 42);
	assert_int_equal(u.nr_throttled, 0);
}

static void test_cgroups__v2_no_swap_file(void **state)
{
	sbx_cgroup_limits l;

	(void)state;
	assert_int_equal(read_limits("v2", 102, &l), 0);
	assert_int_equal(l.memory_max, 1024 * MiB);
	assert_int_equal(l.memswap_max, SBX_CGROUP_UNKNOWN);
	assert_int_equal(l.pids_max, 64);
	assert_int_equal(l.cpu_quota_us, 50000);
	assert_int_equal(l.cpu_period_us, 100000);
}

static void test_cgroups__v2_dotdot_path(void **state)
{
	(void)state;
	expect_limits_rc("v2", 103, -EINVAL); /* 0::/system.slice/../../../etc */
	expect_usage_rc("v2", 103, -EINVAL);
	expect_limits_rc("v2", 107, -EINVAL); /* 0::/.. */
}

static void test_cgroups__v2_relative_path(void **state)
{
	(void)state;
	expect_limits_rc("v2", 104, -EINVAL);
}

static void test_cgroups__v2_missing_cgroup_dir(void **state)
{
	(void)state;
	expect_limits_rc("v2", 105, -ENOENT);
	expect_usage_rc("v2", 105, -ENOENT);
}

static void test_cgroups__missing_proc_pid(void **state)
{
	(void)state;
	expect_limits_rc("v2", 106, -ENOENT);
	expect_usage_rc("v2", 106, -ENOENT);
}

static void test_cgroups__bad_arguments(void **state)
{
	sbx_cgroup_limits l;
	sbx_cgroup_usage u;
	char root[PATH_MAX], proc[PATH_MAX];

	(void)state;
	fixture_paths("v2", root, proc);
	assert_int_equal(sbx__cgroup_read_limits(NULL, root, proc, 100), -EINVAL);
	assert_int_equal(sbx__cgroup_read_limits(&l, NULL, proc, 100), -EINVAL);
	assert_int_equal(sbx__cgroup_read_limits(&l, root, NULL, 100), -EINVAL);
	assert_int_equal(sbx__cgroup_read_limits(&l, root, proc, 0), -EINVAL);
	assert_int_equal(sbx__cgroup_read_limits(&l, root, proc, -100), -EINVAL);
	assert_int_equal(sbx__cgroup_read_usage(NULL, root, proc, 100), -EINVAL);
	assert_int_equal(sbx__cgroup_read_usage(&u, root, proc, 0), -EINVAL);
}

/* ---- v1 and hybrid ---- */

/* The unified hierarchy holds decoy files with other values: v1 must win. */
static void test_cgroups__v1_hybrid_limits(void **state)
{
	sbx_cgroup_limits l;

	(void)state;
	assert_int_equal(read_limits("v1", 200, &l), 0);
	assert_int_equal(l.version, 1);
	assert_int_equal(l.memory_max, 512 * MiB);
	assert_int_equal(l.memswap_max, 512 * MiB);
	assert_int_equal(l.pids_max, 256);
	assert_int_equal(l.cpu_quota_us, 100000);
	assert_int_equal(l.cpu_period_us, 100000);
}

static void test_cgroups__v1_hybrid_usage(void **state)
{
	sbx_cgroup_usage u;

	(void)state;
	assert_int_equal(read_usage("v1", 200, &u), 0);
	assert_int_equal(u.memory_peak, 256 * MiB);
	assert_int_equal(u.oom_kills, 2);
	assert_int_equal(u.pids_current, 4);
	assert_int_equal(u.pids_events_max, 9);
	assert_int_equal(u.cpu_usage_us, 2500000); /* 2500000999 ns */
	assert_int_equal(u.nr_throttled, 3);
}

static void test_cgroups__v1_pure(void **state)
{
	sbx_cgroup_limits l;
	sbx_cgroup_usage u;

	(void)state;
	assert_int_equal(read_limits("v1", 203, &l), 0);
	assert_int_equal(l.version, 1);
	assert_int_equal(l.memory_max, 512 * MiB);
	assert_int_equal(l.pids_max, 256);
	assert_int_equal(l.cpu_quota_us, 100000);
	assert_int_equal(read_usage("v1", 203, &u), 0);
	assert_int_equal(u.cpu_usage_us, 2500000);
}

/* "3:cpu,cpuacct:" found under <root>/cpu,cpuacct; v1's huge value, -1 quota, no memsw file. */
static void test_cgroups__v1_comounted_unlimited(void **state)
{
	sbx_cgroup_limits l;
	sbx_cgroup_usage u;

	(void)state;
	assert_int_equal(read_limits("v1", 201, &l), 0);
	assert_int_equal(l.version, 1);
	assert_int_equal(l.memory_max, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.memswap_max, SBX_CGROUP_UNKNOWN);
	assert_int_equal(l.pids_max, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.cpu_quota_us, SBX_CGROUP_UNLIMITED);
	assert_int_equal(l.cpu_period_us, 100000);
	assert_int_equal(read_usage("v1", 201, &u), 0);
	assert_int_equal(u.memory_peak, 4096);
	assert_int_equal(u.oom_kills, SBX_CGROUP_UNKNOWN);
	assert_int_equal(u.cpu_usage_us, 0);
	assert_int_equal(u.nr_throttled, 0);
}

/* Memory has no v1 directory for this cgroup: it is read from <root>/unified. */
static void test_cgroups__hybrid_falls_back_to_unified(void **state)
{
	sbx_cgroup_limits l;

	(void)state;
	assert_int_equal(read_limits("v1", 202, &l), 0);
	assert_int_equal(l.version, 2);
	assert_int_equal(l.memory_max, 256 * MiB);
	assert_int_equal(l.memswap_max, 256 * MiB);
	assert_int_equal(l.pids_max, 128);
	assert_int_equal(l.cpu_quota_us, 200000);
	assert_int_equal(l.cpu_period_us, 100000);
}

static void test_cgroups__v1_max_in_memory_file(void **state)
{
	(void)state;
	expect_limits_rc("v1", 204, -EINVAL);
}

static void test_cgroups__v1_quota_below_minus_one(void **state)
{
	(void)state;
	expect_limits_rc("v1", 205, -EINVAL);
}

static void test_cgroups__v1_dotdot_path(void **state)
{
	(void)state;
	expect_limits_rc("v1", 206, -EINVAL);
}

static void test_cgroups__v1_controller_listed_twice(void **state)
{
	(void)state;
	expect_limits_rc("v1", 207, -EINVAL);
}

/* ---- malformed and missing files ---- */

#define LIMITS_RC_TEST(name, pid, want)                                                            \
	static void test_cgroups__##name(void **state)                                             \
	{                                                                                          \
		(void)state;                                                                       \
		expect_limits_rc("broken", pid, want);                                             \
	}
#define USAGE_RC_TEST(name, pid, want)                                                             \
	static void test_cgroups__##name(void **state)                                             \
	{                                                                                          \
		(void)state;                                                                       \
		expect_usage_rc("broken", pid, want);                                              \
	}

LIMITS_RC_TEST(garbage_number, 300, -EINVAL)	      /* memory.max "12abc" */
LIMITS_RC_TEST(overflow, 301, -EINVAL)		      /* memory.max 2^63 */
LIMITS_RC_TEST(negative, 302, -EINVAL)		      /* pids.max "-5" */
LIMITS_RC_TEST(empty_file, 303, -EINVAL)	      /* memory.max "" */
LIMITS_RC_TEST(trailing_space, 304, -EINVAL)	      /* memory.max "536870912 \n" */
LIMITS_RC_TEST(two_newlines, 305, -EINVAL)	      /* memory.max "536870912\n\n" */
LIMITS_RC_TEST(leading_space, 306, -EINVAL)	      /* memory.max " 536870912" */
LIMITS_RC_TEST(plus_sign, 307, -EINVAL)		      /* memory.max "+536870912" */
LIMITS_RC_TEST(missing_file, 308, -ENOENT)	      /* no pids.max */
LIMITS_RC_TEST(cpu_max_one_field, 309, -EINVAL)	      /* cpu.max "100000" */
LIMITS_RC_TEST(cpu_max_zero_period, 310, -EINVAL)     /* cpu.max "100000 0" */
LIMITS_RC_TEST(cpu_max_max_period, 311, -EINVAL)      /* cpu.max "max max" */
LIMITS_RC_TEST(hex_number, 312, -EINVAL)	      /* memory.max "0x20000000" */
LIMITS_RC_TEST(swap_garbage, 313, -EINVAL)	      /* memory.swap.max "none" */
USAGE_RC_TEST(keyed_garbage, 314, -EINVAL)	      /* pids.events "max x" */
USAGE_RC_TEST(missing_key, 315, -ENOENT)	      /* cpu.stat without nr_throttled */
USAGE_RC_TEST(duplicate_key, 316, -EINVAL)	      /* memory.events oom_kill twice */
USAGE_RC_TEST(keyed_line_without_value, 317, -EINVAL) /* memory.events "oom_kill" */
USAGE_RC_TEST(optional_file_garbage, 318, -EINVAL)    /* memory.peak "1k" */
LIMITS_RC_TEST(max_uppercase, 319, -EINVAL)	      /* pids.max "MAX" */
LIMITS_RC_TEST(nul_byte, 320, -EINVAL)		      /* memory.max "5368\09" */
LIMITS_RC_TEST(proc_line_garbage, 330, -EINVAL)	      /* "garbage" */
LIMITS_RC_TEST(proc_empty, 331, -EINVAL)	      /* "" */
LIMITS_RC_TEST(proc_empty_line, 332, -EINVAL)	      /* "0::/garbage\n\n" */
LIMITS_RC_TEST(proc_bad_hierarchy_id, 333, -EINVAL)   /* "x:memory:/garbage" */
LIMITS_RC_TEST(proc_v2_line_not_zero, 334, -EINVAL)   /* "1::/garbage" */
LIMITS_RC_TEST(proc_two_v2_lines, 335, -EINVAL)	      /* "0::/garbage\n0::/overflow" */

/* ---- check ---- */

static const sbx_cgroup_limits asked_v1 = {
	.memory_max = 512 * MiB,
	.memswap_max = 512 * MiB,
	.pids_max = 256,
	.cpu_quota_us = 100000,
	.cpu_period_us = 100000,
	.version = 1,
};

static void check_says(const sbx_cgroup_limits *got,
		       int64_t memory,
		       int64_t pids,
		       int64_t cpu_milli,
		       const char *want_why)
{
	char why[128];

	memset(why, 'x', sizeof(why));
	if (!want_why) {
		assert_int_equal(sbx__cgroup_check(got, memory, pids, cpu_milli, why, sizeof(why)),
				 0);
		assert_string_equal(why, "");
	} else {
		assert_int_equal(sbx__cgroup_check(got, memory, pids, cpu_milli, why, sizeof(why)),
				 -1);
		assert_string_equal(why, want_why);
	}
}

static void test_cgroups__check_match(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	check_says(&l, 512 * MiB, 256, 1000, NULL);
	l.memswap_max = SBX_CGROUP_UNKNOWN;
	check_says(&l, 512 * MiB, 256, 1000, NULL);
	l.cpu_quota_us = 50000;
	check_says(&l, 512 * MiB, 256, 500, NULL);
	l.cpu_quota_us = 250000;
	l.cpu_period_us = 100000;
	check_says(&l, 512 * MiB, 256, 2500, NULL);
}

static void test_cgroups__check_memory_mismatch(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	l.memory_max = 1024 * MiB;
	check_says(&l, 512 * MiB, 256, 1000, "memory.max is 1073741824, policy asked 536870912");
	l.memory_max = SBX_CGROUP_UNLIMITED;
	check_says(&l, 512 * MiB, 256, 1000, "memory.max is unlimited, policy asked 536870912");
}

static void test_cgroups__check_swap_mismatch(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	l.memswap_max = 1024 * MiB;
	check_says(&l, 512 * MiB, 256, 1000, "memory+swap is 1073741824, policy asked 536870912");
	l.memswap_max = SBX_CGROUP_UNLIMITED;
	check_says(&l, 512 * MiB, 256, 1000, "memory+swap is unlimited, policy asked 536870912");
}

static void test_cgroups__check_pids_mismatch(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	l.pids_max = 257;
	check_says(&l, 512 * MiB, 256, 1000, "pids.max is 257, policy asked 256");
	l.pids_max = SBX_CGROUP_UNLIMITED;
	check_says(&l, 512 * MiB, 256, 1000, "pids.max is unlimited, policy asked 256");
}

static void test_cgroups__check_cpu_mismatch(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	l.cpu_quota_us = 50000;
	check_says(&l, 512 * MiB, 256, 1000,
		   "cpu quota/period is 50000/100000, policy asked 1000 millicpu");
	l.cpu_quota_us = SBX_CGROUP_UNLIMITED;
	check_says(&l, 512 * MiB, 256, 1000,
		   "cpu quota/period is unlimited/100000, policy asked 1000 millicpu");
}

/* 1% either way is accepted, a hair more is not. */
static void test_cgroups__check_cpu_tolerance(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	l.cpu_quota_us = 101000;
	check_says(&l, 512 * MiB, 256, 1000, NULL);
	l.cpu_quota_us = 99000;
	check_says(&l, 512 * MiB, 256, 1000, NULL);
	l.cpu_quota_us = 101001;
	check_says(&l, 512 * MiB, 256, 1000,
		   "cpu quota/period is 101001/100000, policy asked 1000 millicpu");
	l.cpu_quota_us = 98999;
	check_says(&l, 512 * MiB, 256, 1000,
		   "cpu quota/period is 98999/100000, policy asked 1000 millicpu");
	l.cpu_quota_us = INT64_MAX;
	l.cpu_period_us = INT64_MAX;
	check_says(&l, 512 * MiB, 256, 1000,
		   "cpu quota/period is 9223372036854775807/9223372036854775807, "
		   "policy asked 1000 millicpu");
}

/* Several limits differ: the message names the first, memory. */
static void test_cgroups__check_first_difference(void **state)
{
	sbx_cgroup_limits l = asked_v1;

	(void)state;
	l.pids_max = 1;
	l.memory_max = 1;
	check_says(&l, 512 * MiB, 256, 1000, "memory.max is 1, policy asked 536870912");
}

static void test_cgroups__check_why_bounds(void **state)
{
	sbx_cgroup_limits l = asked_v1;
	char why[10];

	(void)state;
	l.memory_max = 1;
	assert_int_equal(sbx__cgroup_check(&l, 512 * MiB, 256, 1000, why, sizeof(why)), -1);
	assert_string_equal(why, "memory.ma");
	assert_int_equal(sbx__cgroup_check(&l, 512 * MiB, 256, 1000, NULL, 0), -1);
	assert_int_equal(sbx__cgroup_check(&l, 512 * MiB, 256, 1000, why, 0), -1);
	assert_int_equal(sbx__cgroup_check(NULL, 512 * MiB, 256, 1000, NULL, 0), -1);
}

/* Read back, then checked, as the library does after creating a sandbox. */
static void test_cgroups__read_then_check(void **state)
{
	sbx_cgroup_limits l;
	char why[128];

	(void)state;
	assert_int_equal(read_limits("v1", 200, &l), 0);
	assert_int_equal(sbx__cgroup_check(&l, 512 * MiB, 256, 1000, why, sizeof(why)), 0);
	assert_int_equal(read_limits("v2", 102, &l), 0);
	assert_int_equal(sbx__cgroup_check(&l, 1024 * MiB, 64, 500, why, sizeof(why)), 0);
	assert_int_equal(read_limits("v1", 201, &l), 0);
	assert_int_equal(sbx__cgroup_check(&l, 512 * MiB, 256, 1000, why, sizeof(why)), -1);
	assert_string_equal(why, "memory.max is unlimited, policy asked 536870912");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroups__v2_limits),
		cmocka_unit_test(test_cgroups__v2_usage),
		cmocka_unit_test(test_cgroups__v2_unlimited),
		cmocka_unit_test(test_cgroups__v2_usage_unknown),
		cmocka_unit_test(test_cgroups__v2_no_swap_file),
		cmocka_unit_test(test_cgroups__v2_dotdot_path),
		cmocka_unit_test(test_cgroups__v2_relative_path),
		cmocka_unit_test(test_cgroups__v2_missing_cgroup_dir),
		cmocka_unit_test(test_cgroups__missing_proc_pid),
		cmocka_unit_test(test_cgroups__bad_arguments),
		cmocka_unit_test(test_cgroups__v1_hybrid_limits),
		cmocka_unit_test(test_cgroups__v1_hybrid_usage),
		cmocka_unit_test(test_cgroups__v1_pure),
		cmocka_unit_test(test_cgroups__v1_comounted_unlimited),
		cmocka_unit_test(test_cgroups__hybrid_falls_back_to_unified),
		cmocka_unit_test(test_cgroups__v1_max_in_memory_file),
		cmocka_unit_test(test_cgroups__v1_quota_below_minus_one),
		cmocka_unit_test(test_cgroups__v1_dotdot_path),
		cmocka_unit_test(test_cgroups__v1_controller_listed_twice),
		cmocka_unit_test(test_cgroups__garbage_number),
		cmocka_unit_test(test_cgroups__overflow),
		cmocka_unit_test(test_cgroups__negative),
		cmocka_unit_test(test_cgroups__empty_file),
		cmocka_unit_test(test_cgroups__trailing_space),
		cmocka_unit_test(test_cgroups__two_newlines),
		cmocka_unit_test(test_cgroups__leading_space),
		cmocka_unit_test(test_cgroups__plus_sign),
		cmocka_unit_test(test_cgroups__missing_file),
		cmocka_unit_test(test_cgroups__cpu_max_one_field),
		cmocka_unit_test(test_cgroups__cpu_max_zero_period),
		cmocka_unit_test(test_cgroups__cpu_max_max_period),
		cmocka_unit_test(test_cgroups__hex_number),
		cmocka_unit_test(test_cgroups__swap_garbage),
		cmocka_unit_test(test_cgroups__keyed_garbage),
		cmocka_unit_test(test_cgroups__missing_key),
		cmocka_unit_test(test_cgroups__duplicate_key),
		cmocka_unit_test(test_cgroups__keyed_line_without_value),
		cmocka_unit_test(test_cgroups__optional_file_garbage),
		cmocka_unit_test(test_cgroups__max_uppercase),
		cmocka_unit_test(test_cgroups__nul_byte),
		cmocka_unit_test(test_cgroups__proc_line_garbage),
		cmocka_unit_test(test_cgroups__proc_empty),
		cmocka_unit_test(test_cgroups__proc_empty_line),
		cmocka_unit_test(test_cgroups__proc_bad_hierarchy_id),
		cmocka_unit_test(test_cgroups__proc_v2_line_not_zero),
		cmocka_unit_test(test_cgroups__proc_two_v2_lines),
		cmocka_unit_test(test_cgroups__check_match),
		cmocka_unit_test(test_cgroups__check_memory_mismatch),
		cmocka_unit_test(test_cgroups__check_swap_mismatch),
		cmocka_unit_test(test_cgroups__check_pids_mismatch),
		cmocka_unit_test(test_cgroups__check_cpu_mismatch),
		cmocka_unit_test(test_cgroups__check_cpu_tolerance),
		cmocka_unit_test(test_cgroups__check_first_difference),
		cmocka_unit_test(test_cgroups__check_why_bounds),
		cmocka_unit_test(test_cgroups__read_then_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
