/*
 * init/userns.c: the user namespace of a root run (`sbx-init run
 * --as-root`).
 *
 * A root run is uid 0 of a user namespace of its own whose only uid and gid
 * are the sandbox's: its root is the sandbox user under another name, never
 * the host's root. The kernel keeps some counters per user and lets no
 * capability lift them (inotify instances, POSIX message queue bytes,
 * pending signals, epoll watches); a run as the host's uid 0, even with no
 * capability at all, would share them with every root process of the host
 * and could use them up. In the namespace they are the sandbox's uid's, as
 * for every other run. The capabilities a new namespace hands its creator
 * are dropped right after by the lockdown (init/lockdown.c), and the init's
 * filter refuses every further namespace.
 *
 * The run must start as the sandbox's uid (the exec names no User): one
 * started as uid 0 is refused, since its namespace would map the host's
 * root.
 */
#include "init/init.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Writes text to /proc/self/<name>. missing_ok: a file this kernel lacks
 * (gVisor has no setgroups; it maps gids without it) is not an error. */
static int proc_write(const char *name, const char *text, int missing_ok)
{
	char path[64];
	size_t len = strlen(text);
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		if (missing_ok && errno == ENOENT)
			return 0;
		sbx_init_msg("run: root: cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	ok = write(fd, text, len) == (ssize_t)len;
	if (!ok)
		sbx_init_msg("run: root: cannot write %s: %s", path, strerror(errno));
	close(fd);
	return ok ? 0 : -1;
}

int sbx_init_enter_root_ns(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (uid == 0 || gid == 0 || geteuid() != uid || getegid() != gid) {
		sbx_init_msg("run: root: must start as the sandbox's own uid, not %u:%u",
			     (unsigned)geteuid(), (unsigned)getegid());
		return -1;
	}
	if (unshare(CLONE_NEWUSER) != 0) {
		sbx_init_msg("run: root: cannot make a user namespace: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (proc_write("uid_map", map, 0) != 0 || proc_write("setgroups", "deny\n", 1) != 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (proc_write("gid_map", map, 0) != 0)
		return -1;
	if (getuid() != 0 || getgid() != 0) {
		sbx_init_msg("run: root: the namespace did not map uid 0");
		return -1;
	}
	return 0;
}
