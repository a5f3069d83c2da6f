/*
 * tests/unit/engine/test_docker_mounts.c: what the docker backend accepts
 * of an image's declared volumes and of a container's mounts read back
 * after create (engine/docker.c), on inspect answers as dockerd 20.10 gives
 * them. Anything not in the expected set fails, and the reason names it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/docker-int.h"

static const struct sbx__mount_want want[] = {
	{"bind", "/usr/libexec/sandboxio/sbx-init", "/.sbx/init", 0},
	{"bind", "/usr/libexec/sandboxio/sbx-resolv.conf", "/etc/resolv.conf", 0},
	{"bind", "/run/sandboxio/disks/sbx-0123456789ab/mnt", "/workspace", 1},
};

#define INIT_M                                                                                     \
	"{\"Type\":\"bind\",\"Source\":\"/usr/libexec/sandboxio/sbx-init\",\"Destination\":"       \
	"\"/.sbx/init\",\"Mode\":\"ro\",\"RW\":false,\"Propagation\":\"rprivate\"}"
#define RESOLV_M                                                                                   \
	"{\"Type\":\"bind\",\"Source\":\"/usr/libexec/sandboxio/sbx-resolv.conf\","                \
	"\"Destination\":\"/etc/resolv.conf\",\"Mode\":\"ro\",\"RW\":false}"
#define WORK_M                                                                                     \
	"{\"Type\":\"bind\",\"Source\":\"/run/sandboxio/disks/sbx-0123456789ab/mnt\","             \
	"\"Destination\":\"/workspace\",\"Mode\":\"\",\"RW\":true}"

static int check(const char *mounts_json, char *why, size_t n)
{
	json_t *m = json_loads(mounts_json, 0, NULL);
	int rc;

	assert_non_null(m);
	why[0] = '\0';
	rc = sbx__docker_check_mounts(m, want, SBX_ARRAY_SIZE(want), why, n);
	json_decref(m);
	return rc;
}

static void test_docker_mounts__expected_set_passes(void **state)
{
	char why[512];

	(void)state;
	assert_int_equal(check("[" WORK_M "," INIT_M "," RESOLV_M "]", why, sizeof(why)), 0);
}

static void test_docker_mounts__anonymous_volume_refused(void **state)
{
	char why[512];

	(void)state;
	assert_int_equal(check("[" INIT_M "," RESOLV_M "," WORK_M ",{\"Type\":\"volume\",\"Name\":"
			       "\"4f2a\",\"Source\":\"\",\"Destination\":\"/data\",\"Driver\":"
			       "\"local\",\"RW\":true}]",
			       why, sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "volume mount at /data"));
	assert_non_null(strstr(why, "anonymous volume"));
}

static void test_docker_mounts__extra_bind_refused(void **state)
{
	char why[512];

	(void)state;
	assert_int_equal(check("[" INIT_M "," RESOLV_M "," WORK_M ",{\"Type\":\"bind\",\"Source\":"
			       "\"/var/run/docker.sock\",\"Destination\":\"/run/d.sock\",\"RW\":"
			       "true}]",
			       why, sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "/run/d.sock"));
	assert_non_null(strstr(why, "/var/run/docker.sock"));
}

static void test_docker_mounts__wrong_source_or_mode_refused(void **state)
{
	char why[512];

	(void)state;
	/* The init writable. */
	assert_int_equal(check("[{\"Type\":\"bind\",\"Source\":\"/usr/libexec/sandboxio/sbx-init\","
			       "\"Destination\":\"/.sbx/init\",\"RW\":true}," RESOLV_M "," WORK_M
			       "]",
			       why, sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "/.sbx/init"));
	/* /workspace from somewhere else. */
	assert_int_equal(check("[" INIT_M "," RESOLV_M ",{\"Type\":\"bind\",\"Source\":\"/home\","
			       "\"Destination\":\"/workspace\",\"RW\":true}]",
			       why, sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "/home"));
	/* /workspace as a volume. */
	assert_int_equal(check("[" INIT_M "," RESOLV_M
			       ",{\"Type\":\"volume\",\"Source\":\"/var/lib/"
			       "docker/volumes/x/_data\",\"Destination\":\"/workspace\",\"RW\":"
			       "true}]",
			       why, sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "volume"));
}

static void test_docker_mounts__missing_or_twice_refused(void **state)
{
	char why[512];

	(void)state;
	assert_int_equal(check("[" INIT_M "," RESOLV_M "]", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "/workspace"));
	assert_non_null(strstr(why, "missing"));
	assert_int_equal(check("[" INIT_M "," RESOLV_M "," WORK_M "," WORK_M "]", why, sizeof(why)),
			 -1);
	assert_int_equal(check("{}", why, sizeof(why)), -1);
}

static void test_docker_mounts__image_volumes_refused(void **state)
{
	char why[512];
	json_t *img;

	(void)state;
	img = json_loads("{\"Config\":{\"Volumes\":{\"/data\":{}},\"User\":\"1000:1000\"}}", 0,
			 NULL);
	assert_int_equal(sbx__docker_check_image_volumes(img, "local/vol:1", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "/data"));
	assert_non_null(strstr(why, "local/vol:1"));
	json_decref(img);
	img = json_loads("{\"Config\":{\"Volumes\":null}}", 0, NULL);
	assert_int_equal(sbx__docker_check_image_volumes(img, "x", why, sizeof(why)), 0);
	json_decref(img);
	img = json_loads("{\"Config\":{}}", 0, NULL);
	assert_int_equal(sbx__docker_check_image_volumes(img, "x", why, sizeof(why)), 0);
	json_decref(img);
	img = json_loads("{\"Config\":{\"Volumes\":[\"/data\"]}}", 0, NULL);
	assert_int_equal(sbx__docker_check_image_volumes(img, "x", why, sizeof(why)), -1);
	json_decref(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_mounts__expected_set_passes),
		cmocka_unit_test(test_docker_mounts__anonymous_volume_refused),
		cmocka_unit_test(test_docker_mounts__extra_bind_refused),
		cmocka_unit_test(test_docker_mounts__wrong_source_or_mode_refused),
		cmocka_unit_test(test_docker_mounts__missing_or_twice_refused),
		cmocka_unit_test(test_docker_mounts__image_volumes_refused),
	};

	return cmocka_run_group_tests_name("engine: volumes and mounts", tests, NULL, NULL);
}
