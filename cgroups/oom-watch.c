/*
 * cgroups/oom-watch.c: a witness that the memory cap's OOM killer acted in
 * a cgroup, readable after the cgroup is gone.
 *
 * On the gvisor tier the OOM killer takes the Sentry, so the whole sandbox
 * ends with the run and the cgroup's counters go with it. The Engine's "oom"
 * event comes from the runtime's shim, which learns of the OOM from an
 * eventfd on memory.oom_control and drops it when, by the time it reads the
 * eventfd, the cgroup has been removed: on a loaded host the container's end
 * is logged and no "oom" ever is. This file keeps a watch of its own, on
 * cgroup v1 (the only hierarchy with this interface): an eventfd
 * registered through cgroup.event_control.
 *
 * The kernel adds 1 to the eventfd when the cgroup, or an ancestor, goes
 * out of memory (before the OOM killer picks its victim) and 1 more when
 * the cgroup is removed (after its files are gone). So the signals taken
 * while the cgroup's files are still there, checked after the read, are
 * OOMs; of those taken once it is gone, one is the removal's. What was
 * taken is kept in the watch, so the answer holds however the reads and
 * the removal interleave:
 *   cgroup there    YES once a signal came and its own oom_kill rose (an
 *                   ancestor's cap signals every descendant);
 *   cgroup gone     YES if a signal came while it was there, or two came
 *                   after; GONE once one came after and no second within
 *                   the caller's wait.
 * One reader per watch: a signal is taken by whoever reads it first.
 * No library does this; it is a few system calls.
 */
#include "cgroups/cgroups-int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

int sbx__cgroup_oom_watch(struct sbx__cgroup_oom_watch *w, const char *dir)
{
	char path[PATH_MAX + 32], line[32];
	int rc, efd = -1, ctl = -1, ec = -1, n;
	int64_t kills;

	if (!w || !dir || strlen(dir) >= sizeof(w->dir))
		return -EINVAL;
	sbx__cgroup_oom_unwatch(w);
	rc = sbx__cgroup_oom_kills(dir, &kills);
	if (rc < 0)
		return rc;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	snprintf(path, sizeof(path), "%s/memory.oom_control", dir);
	ctl = efd < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/cgroup.event_control", dir);
	ec = ctl < 0 ? -1 : open(path, O_WRONLY | O_CLOEXEC);
	if (ec < 0) {
		rc = -errno;
		goto out;
	}
	n = snprintf(line, sizeof(line), "%d %d", efd, ctl);
	if (write(ec, line, (size_t)n) != n) {
		rc = -errno;
		goto out;
	}
	*w = (struct sbx__cgroup_oom_watch){.on = 1, .efd = efd, .kills0 = kills};
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	efd = -1; /* the watch's now; the kernel holds what it needs of ctl */
	rc = 0;
out:
	if (ec >= 0)
		close(ec);
	if (ctl >= 0)
		close(ctl);
	if (efd >= 0)
		close(efd);
	return rc;
}

/* The eventfd's count, taken (0 if nothing came), or a negative errno. */
static int64_t take(int efd)
{
	uint64_t v;

	if (read(efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		return v > INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)v;
	return errno == EAGAIN ? 0 : -errno;
}

/* Takes the signals into notes or late: 1 if the cgroup is there, 0 gone, or -errno. */
static int gather(struct sbx__cgroup_oom_watch *w)
{
	char path[PATH_MAX + 32];
	int64_t n = take(w->efd);

	if (n < 0)
		return (int)n;
	snprintf(path, sizeof(path), "%s/memory.oom_control", w->dir);
	if (access(path, F_OK) == 0) {
		w->notes += n;
		return 1;
	}
	if (errno != ENOENT)
		return -errno;
	w->late += n;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int sbx__cgroup_oom_poll(struct sbx__cgroup_oom_watch *w, int wait_ms)
{
	int64_t until, kills;
	int there;

	if (!w || !w->on)
		return -EBADF;
	until = now_ms() + (wait_ms > 0 ? wait_ms : 0);
	for (;;) {
		struct pollfd p = {.fd = w->efd, .events = POLLIN};
		int64_t left;
		int r;

		there = gather(w);
		if (there < 0)
			return there;
		if (there) {
			int rc;

			if (w->notes == 0)
				return SBX_CGROUP_OOM_NONE;
			rc = sbx__cgroup_oom_kills(w->dir, &kills);
			if (rc == 0)
				/* Not risen: signalled by an ancestor, or the kill
				 * is still to come. */
				return kills > w->kills0 ? SBX_CGROUP_OOM_YES : SBX_CGROUP_OOM_NONE;
			if (rc != -ENOENT)
				return rc;
			continue; /* gone since the read: told below */
		}
		if (w->notes > 0 || w->late >= 2)
			return SBX_CGROUP_OOM_YES;
		/* Gone: the removal's signal, and an OOM's if there was one, to come. */
		left = until - now_ms();
		if (left <= 0)
			return SBX_CGROUP_OOM_GONE;
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

void sbx__cgroup_oom_unwatch(struct sbx__cgroup_oom_watch *w)
{
	if (!w || !w->on)
		return;
	close(w->efd);
	w->on = 0;
}
