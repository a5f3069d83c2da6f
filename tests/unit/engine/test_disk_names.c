/*
 * tests/unit/engine/test_disk_names.c: a sandbox's disk is found on the host
 * by its session name, which a reopened or reaped container gives in a label
 * that whoever created the container wrote. Only a name the backend makes
 * ("sbx-" and 12 hex digits) may become a path: anything else is refused and
 * nothing on the host is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sandboxio.h>

#include "engine/docker-int.h"

static void test_disk_names__only_ours(void **state)
{
	static const char *const bad[] = {
		"",
		"sbx-",
		"sbx-0123456789a",
		"sbx-0123456789abc",
		"sbx-0123456789AB",
		"../x",
		"sbx-0123456789a/",
		"../../../tmp/sbx-x",
		"sbx-01234567../ab",
		"xbx-0123456789ab",
	};

	(void)state;
	assert_true(sbx__disk_session_ok("sbx-0123456789ab"));
	assert_false(sbx__disk_session_ok(NULL));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (sbx__disk_session_ok(bad[i]))
			fail_msg("'%s' taken as a session name", bad[i]);
		assert_int_equal(sbx__disk_remove(bad[i]), SBX_EINVALID);
		assert_non_null(strstr(sbx_error_last()->message, "not a sandbox's session name"));
	}
}

/*
 * A label "session=../../../tmp/NAME" would have made the host unlink
 * /tmp/NAME.img (through SBX_DISK_DIR/../../../tmp) and unmount and remove
 * /tmp/NAME. Both are made here and must outlive the removal.
 */
static void test_disk_names__traversal_touches_nothing(void **state)
{
	char name[64], session[96], img[96];
	struct stat st;
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "sbx-victim-%d", (int)getpid());
	snprintf(session, sizeof(session), "../../../tmp/%s", name);
	snprintf(img, sizeof(img), "/tmp/%s.img", name);
	/* The folders the path climbs out of, as a host with disks has them. */
	if (mkdir("/var/lib/sandboxio", 0755) < 0 && errno != EEXIST)
		print_message("(not root: the path does not resolve here, the refusal is still "
			      "checked)\n");
	else
		(void)mkdir("/var/lib/sandboxio/disks", 0700);
	fd = open(img, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sbx__disk_remove(session), SBX_EINVALID);
	assert_int_equal(stat(img, &st), 0);
	unlink(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disk_names__only_ours),
		cmocka_unit_test(test_disk_names__traversal_touches_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
