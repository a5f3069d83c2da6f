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
#include <sys/prctl.h>
#include <unistd.h>

/* Opens /proc/self/<name> to write; missing_ok: a file this kernel lacks
 * (gVisor has no setgroups; it maps gids without it) is -2, not an error. */
static int proc_open(const char *name, int missing_ok)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && missing_ok && errno == ENOENT)
		return -2;
	if (fd < 0)
		sbx_init_msg("run: root: cannot open %s: %s", path, strerror(errno));
	return fd;
}

/* Writes text to fd (a missing file's -2: nothing) and closes it. */
static int proc_write(int fd, const char *name, const char *text)
{
	size_t len = strlen(text);
	int ok;

	if (fd == -2)
		return 0;
	ok = write(fd, text, len) == (ssize_t)len;
	if (!ok)
		sbx_init_msg("run: root: cannot write /proc/self/%s: %s", name, strerror(errno));
	close(fd);
	return ok ? 0 : -1;
}

int sbx_init_enter_root_ns(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char umap[64], gmap[64];
	int ufd, sfd, gfd, rc;

	if (uid == 0 || gid == 0 || geteuid() != uid || getegid() != gid) {
		sbx_init_msg("run: root: must start as the sandbox's own uid, not %u:%u",
			     (unsigned)geteuid(), (unsigned)getegid());
		return -1;
	}
	if (unshare(CLONE_NEWUSER) != 0) {
		sbx_init_msg("run: root: cannot make a user namespace: %s", strerror(errno));
		return -1;
	}
	/*
	 * Every process of the sandbox's uid holds every capability in this
	 * namespace from now on, so this one stays dumpable (which opening its
	 * own maps needs) only for the opens: then the writes, through the
	 * open files, and the lockdown follow with no one able to open its
	 * /proc files (docs/threat-model.md, "Runs as the sandbox's root").
	 */
	ufd = proc_open("uid_map", 0);
	sfd = proc_open("setgroups", 1);
	gfd = proc_open("gid_map", 0);
	rc = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	snprintf(umap, sizeof(umap), "0 %u 1\n", (unsigned)uid);
	snprintf(gmap, sizeof(gmap), "0 %u 1\n", (unsigned)gid);
	if (ufd == -1 || sfd == -1 || gfd == -1 || rc != 0) {
		if (rc != 0)
			sbx_init_msg("run: root: prctl: %s", strerror(errno));
		for (int i = 0, fds[] = {ufd, sfd, gfd}; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return -1;
	}
	if (proc_write(ufd, "uid_map", umap) != 0 || proc_write(sfd, "setgroups", "deny\n") != 0 ||
	    proc_write(gfd, "gid_map", gmap) != 0)
		return -1;
	if (getuid() != 0 || getgid() != 0) {
		sbx_init_msg("run: root: the namespace did not map uid 0");
		return -1;
	}
	return 0;
}
