/*
 * tests/contract/test_docker_usage.c: sbx_sandbox_usage() on a real
 * dockerd: what a sandbox uses, read back from its cgroup and disk on the
 * host. 100 MiB held by a process in the sandbox shows as memory above
 * 100 MiB now and at its peak, and leaves the peak when freed; a busy loop makes the CPU time grow by at least what
 * the run itself reports; 64 MiB written to /workspace (a disk of its own,
 * as root) shows in the disk's use. The arguments are checked.
 */
#include <pthread.h>
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

#define MIB (1024LL * 1024LL)

static sbx_usage usage_of(sbx_sandbox *s)
{
	sbx_usage u = SBX_USAGE_INIT;
	int rc = sbx_sandbox_usage(s, &u);

	if (rc != 0)
		fail_msg("sbx_sandbox_usage: %s", sbx_error_last()->message);
	return u;
}

static void run_ok(sbx_sandbox *s, const char *line)
{
	sbx_result *r = t_run(s, line, NULL);

	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		fail_msg("%s: status %s code %d stderr %s", line, sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	sbx_result_free(r);
}

struct holder {
	sbx_sandbox *s;
	sbx_result *r;
};

/* 100 MiB held by a process until the test makes /tmp/go. */
static void *hold_memory(void *arg)
{
	struct holder *h = arg;

	h->r = t_run(h->s,
		     "python3 -c \"import os, time\n"
		     "b = bytearray(100 << 20)\n"
		     "for i in range(0, len(b), 4096): b[i] = 1\n"
		     "open('/tmp/held', 'w').close()\n"
		     "while not os.path.exists('/tmp/go'): time.sleep(0.05)\"",
		     NULL);
	return NULL;
}

static void test_engine_usage__memory_now_and_peak(void **state)
{
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	sbx_usage u0, u1, u2;
	struct holder h;
	pthread_t th;
	int k;

	(void)state;
	if (!t_engine_ready())
		skip();
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	u0 = usage_of(s);
	assert_true(u0.memory_bytes >= 0);
	assert_true(u0.memory_bytes < 100 * MIB);
	assert_int_equal(u0.memory_limit_bytes, sbx_policy_limit(p, SBX_LIMIT_MEMORY));
	h.s = s;
	h.r = NULL;
	assert_int_equal(pthread_create(&th, NULL, hold_memory, &h), 0);
	/* Until the holder says it holds its memory (a hang guard of some
	 * 10 minutes, each step a run of its own). */
	for (k = 0; k < 6000; k++) {
		sbx_result *r = t_run(s, "test -e /tmp/held", NULL);
		int there = r->status == SBX_RUN_EXITED && r->exit_code == 0;

		sbx_result_free(r);
		if (there)
			break;
		usleep(100000);
	}
	assert_true(k < 6000);
	u1 = usage_of(s);
	run_ok(s, "touch /tmp/go");
	pthread_join(th, NULL);
	assert_int_equal(h.r->status, SBX_RUN_EXITED);
	sbx_result_free(h.r);
	print_message("memory now %lld, peak %lld, limit %lld\n", (long long)u1.memory_bytes,
		      (long long)u1.memory_peak_bytes, (long long)u1.memory_limit_bytes);
	assert_true(u1.memory_bytes > 100 * MIB);
	if (u1.memory_peak_bytes != -1) /* memory.peak: Linux 5.19 and later on v2 */
		assert_true(u1.memory_peak_bytes >= u1.memory_bytes);
	u2 = usage_of(s);
	assert_true(u2.memory_bytes < 100 * MIB);
	if (u2.memory_peak_bytes != -1)
		assert_true(u2.memory_peak_bytes > 100 * MIB);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_usage__cpu_grows_with_a_busy_loop(void **state)
{
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	sbx_result *r;
	sbx_usage u0, u1;
	int64_t ran;

	(void)state;
	if (!t_engine_ready())
		skip();
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	u0 = usage_of(s);
	assert_true(u0.cpu_used_us >= 0);
	r = t_run(s, "python3 -c 'sum(range(30000000))'", NULL);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	ran = (int64_t)(r->cpu_user_us + r->cpu_system_us);
	sbx_result_free(r);
	u1 = usage_of(s);
	print_message("cpu %lld -> %lld us, the run's own %lld us\n", (long long)u0.cpu_used_us,
		      (long long)u1.cpu_used_us, (long long)ran);
	assert_true(ran > 0);
	/* The cgroup counts the run's whole tree and the init beside it. */
	assert_true(u1.cpu_used_us - u0.cpu_used_us >= ran * 9 / 10);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_usage__disk_use_of_workspace(void **state)
{
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	sbx_usage u0, u1;

	(void)state;
	if (!t_engine_ready() || geteuid() != 0)
		skip(); /* a disk of its own needs root (engine/disk.c) */
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	u0 = usage_of(s);
	if (u0.disk_total_bytes == -1) /* no mkfs.ext4 or loop devices: a tmpfs */
		skip();
	/* ext4's own blocks (journal, tables) come out of the size */
	assert_true(u0.disk_total_bytes > sbx_policy_limit(p, SBX_LIMIT_DISK) / 2);
	assert_true(u0.disk_total_bytes <= sbx_policy_limit(p, SBX_LIMIT_DISK));
	run_ok(s, "head -c 67108864 /dev/urandom > /workspace/f && sync /workspace/f");
	u1 = usage_of(s);
	print_message("disk %lld -> %lld of %lld\n", (long long)u0.disk_used_bytes,
		      (long long)u1.disk_used_bytes, (long long)u1.disk_total_bytes);
	assert_true(u1.disk_used_bytes - u0.disk_used_bytes >= 64 * MIB);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_usage__arguments(void **state)
{
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	sbx_usage u = SBX_USAGE_INIT;

	(void)state;
	if (!t_engine_ready())
		skip();
	assert_int_equal(sbx_sandbox_usage(NULL, &u), SBX_EINVALID);
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	assert_int_equal(sbx_sandbox_usage(s, NULL), SBX_EINVALID);
	u.version = 0;
	assert_int_equal(sbx_sandbox_usage(s, &u), SBX_EVERSION);
	assert_non_null(strstr(sbx_error_last()->message, "version"));
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_usage__memory_now_and_peak),
		cmocka_unit_test(test_engine_usage__cpu_grows_with_a_busy_loop),
		cmocka_unit_test(test_engine_usage__disk_use_of_workspace),
		cmocka_unit_test(test_engine_usage__arguments),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] usage", tests, NULL, NULL);
}
