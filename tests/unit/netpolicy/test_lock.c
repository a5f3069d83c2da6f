/*
 * tests/unit/netpolicy/test_lock.c: the host-wide allowlist lock
 * (netpolicy/netpolicy.c) as a create meets it. The test holds the lock
 * itself, as a stopped `sandboxio reap` would, and a create's attach must
 * give up at its deadline, naming the lock, before it makes anything. The
 * attach runs in a child so that a wait without end (what this guards
 * against) fails the test instead of hanging it.
 *
 * Needs root (the lock is /run/sandboxio/netpolicy.lock); skipped without.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sandboxio.h>

#include "netpolicy/netpolicy-int.h"
#include "util/time.h"

#define LOCK_PATH "/run/sandboxio/netpolicy.lock"

/* The child's verdicts. */
#define CHILD_TIMEOUT 0 /* SBX_ETIMEOUT naming the lock: what must happen */
#define CHILD_OTHER 1	/* another answer */

static void test_netpolicy_lock__attach_gives_up_at_its_deadline(void **state)
{
	struct sbx__np_plan plan = {0};
	int fd, status = 0;
	pid_t child, got = 0;

	(void)state;
	if (geteuid() != 0)
		skip(); /* the lock's directory is root's */
	if (mkdir("/run/sandboxio", 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir /run/sandboxio: %s", strerror(errno));
	fd = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	assert_true(fd >= 0);
	/* Held as another create, close or sweep holds it. */
	assert_int_equal(flock(fd, LOCK_EX), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* The deadline has passed already: no wait is left. */
		int rc = sbx__netpolicy_attach("sbx-0123456789ab", getpid(), &plan, sbx__mono_ms());
		const char *m = sbx_error_last()->message;

		_exit(rc == SBX_ETIMEOUT && m && strstr(m, LOCK_PATH) ? CHILD_TIMEOUT
								      : CHILD_OTHER);
	}
	/* A hang guard only: the child needs no time beyond a failed flock. */
	for (int i = 0; i < 6000 && (got = waitpid(child, &status, WNOHANG)) == 0; i++)
		usleep(10000);
	if (got == 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		close(fd);
		fail_msg("attach waited for the held lock past its deadline");
	}
	close(fd);
	assert_int_equal(got, child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), CHILD_TIMEOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netpolicy_lock__attach_gives_up_at_its_deadline),
	};

	return cmocka_run_group_tests_name("netpolicy lock", tests, NULL, NULL);
}
