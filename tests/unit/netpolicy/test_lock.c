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
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
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

struct probe {
	int calls, held, answer;
};

/* Whether this process holds a flock on the lock file (/proc/locks). */
static int lock_held_here(void)
{
	struct stat st;
	char line[256];
	int held = 0;
	FILE *f;

	if (stat(LOCK_PATH, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char kind[16];
		int pid;
		unsigned long ino;

		if (sscanf(line, "%*d: %15s %*s %*s %d %*x:%*x:%lu", kind, &pid, &ino) == 3 &&
		    strcmp(kind, "FLOCK") == 0 && pid == getpid() && ino == st.st_ino)
			held = 1;
	}
	fclose(f);
	return held;
}

static int probe_alive(const char *session, void *payload)
{
	struct probe *pr = payload;

	if (strcmp(session, "sbx-0123456789ab") == 0)
		pr->calls++;
	if (lock_held_here() != 0)
		pr->held++;
	return pr->answer;
}

/* The child's verdicts for the sweep. */
#define SWEEP_OK 0
#define SWEEP_SETUP 1	  /* the namespace or the table could not be made */
#define SWEEP_HELD 2	  /* alive() was asked under the lock */
#define SWEEP_NOT_ASKED 3 /* the table's sandbox was never asked about */
#define SWEEP_KEPT 4	  /* a live sandbox's table was removed */
#define SWEEP_LEFT 5	  /* a gone sandbox's table was left */

static int sweep_child(void)
{
	struct probe pr = {0};
	char **tables = NULL;
	size_t n = 0;
	int rc, has;

	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL) < 0 ||
	    sbx__nft_run("add table inet sbx0123456789ab", NULL) < 0)
		return SWEEP_SETUP;
	/* Alive: asked, outside the lock, and its table kept. */
	pr.answer = 1;
	rc = sbx__netpolicy_sweep(probe_alive, &pr);
	if (pr.held)
		return SWEEP_HELD;
	if (rc != 0 || pr.calls != 1)
		return SWEEP_NOT_ASKED;
	if (sbx__nft_tables(&tables, &n) < 0)
		return SWEEP_SETUP;
	has = n == 1 && strcmp(tables[0], "sbx0123456789ab") == 0;
	for (size_t i = 0; i < n; i++)
		free(tables[i]);
	free(tables);
	if (!has)
		return SWEEP_KEPT;
	/* Gone: asked, outside the lock, and its table removed. */
	pr = (struct probe){0};
	rc = sbx__netpolicy_sweep(probe_alive, &pr);
	if (pr.held)
		return SWEEP_HELD;
	if (rc != 1 || pr.calls != 1 || sbx__nft_tables(&tables, &n) < 0 || n != 0)
		return SWEEP_LEFT;
	return SWEEP_OK;
}

static void test_netpolicy_lock__sweep_asks_alive_outside_the_lock(void **state)
{
	int status = 0;
	pid_t child;

	(void)state;
	if (geteuid() != 0)
		skip(); /* a network namespace and nftables need root */
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(sweep_child());
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), SWEEP_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netpolicy_lock__attach_gives_up_at_its_deadline),
		cmocka_unit_test(test_netpolicy_lock__sweep_asks_alive_outside_the_lock),
	};

	return cmocka_run_group_tests_name("netpolicy lock", tests, NULL, NULL);
}
