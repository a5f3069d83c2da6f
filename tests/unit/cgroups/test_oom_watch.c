/*
 * tests/unit/cgroups/test_oom_watch.c: the OOM witness of cgroups/oom-watch.c,
 * against the kernel itself.
 *
 * Each case makes a memory cgroup of its own under the host's v1 memory
 * hierarchy (root, cgroup v1: skipped elsewhere, as the witness is refused
 * there), puts a child process in it with a 16 MiB cap and has it touch
 * 64 MiB, or not. What the witness says must not depend on whether the
 * cgroup was removed before it was asked, which is the order a loaded host
 * gives when the sandbox's end is cleaned up before the caller looks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroups/cgroups-int.h"

#ifndef SBX_CGROUPS_FIXTURES
#define SBX_CGROUPS_FIXTURES "tests/unit/cgroups/fixtures"
#endif

#define MEMCG "/sys/fs/cgroup/memory"
#define MiB (1u << 20)

struct cg {
	char dir[PATH_MAX];
	pid_t child;
	int go; /* the child starts when this pipe closes */
};

static int can_run(void)
{
	struct stat st;

	return geteuid() == 0 && stat(MEMCG "/cgroup.event_control", &st) == 0;
}

static void put(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && strcmp(file, "memory.memsw.limit_in_bytes") == 0)
		return; /* no swap accounting: swappiness 0 keeps it in memory */
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/*
 * A child, held, in a new cgroup under MEMCG/under (capped at 16 MiB when
 * cap); it touches touch_mib MiB once let go.
 */
static void cg_make_in(struct cg *c, const char *under, unsigned touch_mib, int cap)
{
	static int seq;
	char num[32];
	int p[2];

	snprintf(c->dir, sizeof(c->dir), MEMCG "/%ssbx-oomw-%d-%d", under, (int)getpid(), seq++);
	assert_int_equal(mkdir(c->dir, 0755), 0);
	if (cap) {
		put(c->dir, "memory.swappiness", "0");
		put(c->dir, "memory.limit_in_bytes", "16777216");
		put(c->dir, "memory.memsw.limit_in_bytes", "16777216");
	}
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	c->child = fork();
	assert_true(c->child >= 0);
	if (c->child == 0) {
		char b;
		unsigned char *m;

		/* Only its own pipe: a sibling's write end would hold it forever. */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != p[0])
				close(fd);
		if (read(p[0], &b, 1) != 0)
			_exit(2);
		if (touch_mib) {
			m = mmap(NULL, (size_t)touch_mib * MiB, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				_exit(3);
			for (size_t i = 0; i < (size_t)touch_mib * MiB; i += 4096)
				m[i] = 1;
		}
		_exit(0);
	}
	close(p[0]);
	c->go = p[1];
	snprintf(num, sizeof(num), "%d", (int)c->child);
	put(c->dir, "cgroup.procs", num);
}

static void cg_make(struct cg *c, const char *under, unsigned touch_mib)
{
	cg_make_in(c, under, touch_mib, 1);
}

/* Lets the child go and returns how it ended (the wait status). */
static int cg_run(struct cg *c)
{
	int st = 0;

	close(c->go);
	assert_int_equal(waitpid(c->child, &st, 0), c->child);
	return st;
}

static void cg_remove(struct cg *c)
{
	assert_int_equal(rmdir(c->dir), 0);
}

static void test_oom_watch__oom_seen_while_the_cgroup_is_there(void **state)
{
	struct sbx__cgroup_oom_watch w = {0};
	struct cg c;
	int st;

	(void)state;
	if (!can_run())
		skip();
	cg_make(&c, "", 64);
	assert_int_equal(sbx__cgroup_oom_watch(&w, c.dir), 0);
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), SBX_CGROUP_OOM_NONE);
	st = cg_run(&c);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), SBX_CGROUP_OOM_YES);
	/* Kept: asked again, and once the cgroup is gone, still seen. */
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), SBX_CGROUP_OOM_YES);
	cg_remove(&c);
	assert_int_equal(sbx__cgroup_oom_poll(&w, 5000), SBX_CGROUP_OOM_YES);
	sbx__cgroup_oom_unwatch(&w);
}

/* The order the Engine's own event loses: the cgroup is gone before anyone looks. */
static void test_oom_watch__oom_seen_after_the_cgroup_is_gone(void **state)
{
	struct sbx__cgroup_oom_watch w = {0};
	struct cg c;
	int st;

	(void)state;
	if (!can_run())
		skip();
	cg_make(&c, "", 64);
	assert_int_equal(sbx__cgroup_oom_watch(&w, c.dir), 0);
	st = cg_run(&c);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	cg_remove(&c);
	/* The answer comes with the removal's signal; the bound is a guard. */
	assert_int_equal(sbx__cgroup_oom_poll(&w, 120000), SBX_CGROUP_OOM_YES);
	sbx__cgroup_oom_unwatch(&w);
}

static void test_oom_watch__no_oom_before_or_after_removal(void **state)
{
	struct sbx__cgroup_oom_watch w = {0};
	struct cg c;

	(void)state;
	if (!can_run())
		skip();
	cg_make(&c, "", 4);
	assert_int_equal(sbx__cgroup_oom_watch(&w, c.dir), 0);
	assert_int_equal(cg_run(&c), 0);
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), SBX_CGROUP_OOM_NONE);
	cg_remove(&c);
	/* The removal's signal is not an OOM, whether it came yet or not. */
	assert_int_equal(sbx__cgroup_oom_poll(&w, 1000), SBX_CGROUP_OOM_GONE);
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), SBX_CGROUP_OOM_GONE);
	sbx__cgroup_oom_unwatch(&w);
}

/*
 * An ancestor's cap signals every cgroup beneath it: a sandbox beside the
 * one that ran out must not be told it did (its own oom_kill is the word).
 */
static void test_oom_watch__a_siblings_oom_is_not_ours(void **state)
{
	struct sbx__cgroup_oom_watch w = {0};
	struct cg parent, hog, idle;
	char dir[PATH_MAX];
	int st;

	(void)state;
	if (!can_run())
		skip();
	cg_make(&parent, "", 0);
	assert_int_equal(cg_run(&parent), 0);
	snprintf(dir, sizeof(dir), "%s/", parent.dir + strlen(MEMCG "/"));
	cg_make_in(&hog, dir, 64, 0);
	cg_make_in(&idle, dir, 0, 0);
	assert_int_equal(sbx__cgroup_oom_watch(&w, idle.dir), 0);
	st = cg_run(&hog);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), SBX_CGROUP_OOM_NONE);
	/* The ancestor's signal did reach it: the count alone said no. */
	assert_true(w.notes > 0);
	assert_int_equal(cg_run(&idle), 0);
	cg_remove(&hog);
	cg_remove(&idle);
	cg_remove(&parent);
	sbx__cgroup_oom_unwatch(&w);
}

static void test_oom_watch__refusals(void **state)
{
	struct sbx__cgroup_oom_watch w = {0};

	(void)state;
	assert_int_equal(sbx__cgroup_oom_poll(&w, 0), -EBADF);
	assert_int_equal(sbx__cgroup_oom_poll(NULL, 0), -EBADF);
	assert_int_equal(sbx__cgroup_oom_watch(&w, NULL), -EINVAL);
	assert_int_equal(sbx__cgroup_oom_watch(&w, "/nonexistent/cgroup"), -ENOENT);
	assert_int_equal(w.on, 0);
	/* A v2 memory cgroup has no memory.oom_control. */
	assert_int_equal(sbx__cgroup_oom_watch(&w, SBX_CGROUPS_FIXTURES
					       "/v2/cgroup/system.slice/docker-4f2a.scope"),
			 -ENOENT);
	assert_int_equal(w.on, 0);
	sbx__cgroup_oom_unwatch(&w);
	sbx__cgroup_oom_unwatch(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom_watch__oom_seen_while_the_cgroup_is_there),
		cmocka_unit_test(test_oom_watch__oom_seen_after_the_cgroup_is_gone),
		cmocka_unit_test(test_oom_watch__no_oom_before_or_after_removal),
		cmocka_unit_test(test_oom_watch__a_siblings_oom_is_not_ours),
		cmocka_unit_test(test_oom_watch__refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
