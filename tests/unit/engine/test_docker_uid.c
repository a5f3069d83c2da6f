/*
 * tests/unit/engine/test_docker_uid.c: which uids the docker backend will
 * not give a sandbox (engine/docker.c): any the host's passwd or group
 * database knows, and any a subordinate-id file hands out.
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

#include "engine/docker-int.h"

static char subuid[64], subgid[64];

static int setup(void **state)
{
	FILE *f;
	int fd;

	(void)state;
	snprintf(subuid, sizeof(subuid), "/tmp/sbx-subuid-XXXXXX");
	snprintf(subgid, sizeof(subgid), "/tmp/sbx-subgid-XXXXXX");
	if ((fd = mkstemp(subuid)) < 0 || !(f = fdopen(fd, "w")))
		return -1;
	/* A range inside the sandbox range, a malformed line, one outside. */
	fprintf(f, "alice:1500000100:10\nbroken line\nbob:100000:65536\n");
	fclose(f);
	if ((fd = mkstemp(subgid)) < 0 || !(f = fdopen(fd, "w")))
		return -1;
	fprintf(f, "carol:1500000200:1\n");
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(subuid);
	unlink(subgid);
	return 0;
}

static void test_docker_uid__host_users_taken(void **state)
{
	(void)state;
	/* root is in every passwd and group database. */
	assert_true(sbx__uid_host_taken(0, subuid, subgid));
}

static void test_docker_uid__subordinate_ranges_taken(void **state)
{
	(void)state;
	assert_true(sbx__uid_host_taken(1500000100, subuid, subgid));
	assert_true(sbx__uid_host_taken(1500000109, subuid, subgid));
	assert_false(sbx__uid_host_taken(1500000110, subuid, subgid));
	assert_false(sbx__uid_host_taken(1500000099, subuid, subgid));
	assert_true(sbx__uid_host_taken(1500000200, subuid, subgid));
	assert_false(sbx__uid_host_taken(1500000201, subuid, subgid));
	assert_true(sbx__uid_host_taken(100000, subuid, subgid));
	/* Missing files hand out nothing. */
	assert_false(sbx__uid_host_taken(SBX_UID_BASE + 5, "/nonexistent/subuid",
					 "/nonexistent/subgid"));
}

static void test_docker_uid__range_clear_of_subordinate_defaults(void **state)
{
	(void)state;
	/* useradd hands out 65536 ids per user from 100000: 20000 users would
	 * still not reach the range. */
	assert_true(SBX_UID_BASE > 100000u + 20000u * 65536u);
	assert_true((unsigned long long)SBX_UID_BASE + SBX_UID_COUNT < 0x7fffffffull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_uid__host_users_taken),
		cmocka_unit_test(test_docker_uid__subordinate_ranges_taken),
		cmocka_unit_test(test_docker_uid__range_clear_of_subordinate_defaults),
	};

	return cmocka_run_group_tests_name("engine: sandbox uids", tests, setup, teardown);
}
