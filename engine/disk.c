/*
 * engine/disk.c: a sandbox's writable space on the host's disk.
 *
 * A docker sandbox's /workspace is a filesystem of its own: a sparse file
 * of the policy's size (SBX_DISK_DIR/<session>.img) holding an ext4 made by
 * mkfs.ext4 with the sandbox's uid as its root's owner, attached to a loop
 * device (autoclear: it detaches when the filesystem is released) and
 * mounted nosuid,nodev at SBX_RUN_DIR/disks/<session>, which the container
 * binds at /workspace. Its pages are the host's disk, not the sandbox's
 * memory, and writing past its size gives ENOSPC. Close removes it; so
 * does the reaper for a sandbox that is gone (sbx__disk_sweep), finding it
 * by the session name in both places.
 *
 * This needs root on the host (mount, loop devices) and mkfs.ext4 (e2fsprogs);
 * without them the writable space stays a size-capped tmpfs
 * (docs/threat-model.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sandboxio.h>

#include "engine/docker-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

extern char **environ;

static const char *mkfs_path(void)
{
	static const char *const where[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"};

	for (size_t i = 0; i < SBX_ARRAY_SIZE(where); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

int sbx__disk_usable(void)
{
	return geteuid() == 0 && mkfs_path() != NULL && access("/dev/loop-control", W_OK) == 0;
}

/* A session name as the docker backend makes them: "sbx-" and 12 hex digits. */
static int session_name(const char *s, size_t n)
{
	if (n != 16 || strncmp(s, "sbx-", 4) != 0)
		return 0;
	for (size_t i = 4; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int sbx__disk_session_ok(const char *session)
{
	return session && session_name(session, strlen(session));
}

static void paths(const char *session, char *img, size_t il, char *mnt, size_t ml)
{
	snprintf(img, il, SBX_DISK_DIR "/%s.img", session);
	snprintf(mnt, ml, SBX_RUN_DIR "/disks/%s", session);
}

void sbx__disk_mount_path(const char *session, char *mnt, size_t len)
{
	snprintf(mnt, len, SBX_RUN_DIR "/disks/%s", session);
}

static int mkdirs(void)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {{"/var/lib/sandboxio", 0755},
		    {SBX_DISK_DIR, 0700},
		    {SBX_RUN_DIR, 0755},
		    {SBX_RUN_DIR "/disks", 0700}};

	/* The mounts and images are root's alone (dockerd runs as root): no
	 * other host user walks into a sandbox's files. A folder made before
	 * with a wider mode is narrowed. */
	for (size_t i = 0; i < SBX_ARRAY_SIZE(dirs); i++) {
		if (mkdir(dirs[i].path, dirs[i].mode) < 0 && errno != EEXIST)
			return sbx__error_os(SBX_ERROR, errno, "make %s", dirs[i].path);
		if (chmod(dirs[i].path, dirs[i].mode) < 0)
			return sbx__error_os(SBX_ERROR, errno, "chmod %s", dirs[i].path);
	}
	return 0;
}

/* Runs mkfs.ext4 on img; its own words on failure. */
static int run_mkfs(const char *img, unsigned uid)
{
	char owner[64], out[512] = "";
	const char *mkfs = mkfs_path();
	char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	posix_spawn_file_actions_t fa;
	int pfd[2], st = 0, rc;
	ssize_t n;
	pid_t pid;

	if (!mkfs)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "mkfs.ext4 is missing (install e2fsprogs)");
	/* No journal: the filesystem dies with the sandbox. No reserved blocks. */
	snprintf(owner, sizeof(owner), "root_owner=%u:%u,nodiscard", uid, uid);
	{
		const char *argv[] = {mkfs,	      "-q", "-F",  "-m", "0", "-O",
				      "^has_journal", "-E", owner, img,	 NULL};

		if (pipe2(pfd, O_CLOEXEC) < 0)
			return sbx__error_os(SBX_ERROR, errno, "pipe");
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
		posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
		rc = posix_spawn(&pid, mkfs, &fa, NULL, (char *const *)argv, envp);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return sbx__error_os(SBX_ERROR, rc, "run %s", mkfs);
	}
	n = read(pfd[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	/* Drain the rest so that mkfs never blocks on a full pipe. */
	{
		char junk[4096];
		while (read(pfd[0], junk, sizeof(junk)) > 0)
			;
	}
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return sbx__error_os(SBX_ERROR, errno, "wait for mkfs.ext4");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_ENGINE,
				      "mkfs.ext4 on %s failed (status %d): %.300s", img, st, out);
	return 0;
}

/* Attaches img to a free loop device; returns its open fd, the name in dev. */
static int loop_attach(int imgfd, const char *session, char *dev, size_t len)
{
	_sbx_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

	if (ctl < 0)
		return sbx__error_os(SBX_EUNSUPPORTED, errno, "open /dev/loop-control");
	/* Another process can take the same free device first: then try again. */
	for (int tries = 0; tries < 64; tries++) {
		struct loop_config cfg = {.fd = (unsigned)imgfd};
		int n = ioctl(ctl, LOOP_CTL_GET_FREE), lfd;

		if (n < 0)
			return sbx__error_os(SBX_ERROR, errno, "no free loop device");
		snprintf(dev, len, "/dev/loop%d", n);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			if (errno == ENOENT)
				continue;
			return sbx__error_os(SBX_ERROR, errno, "open %s", dev);
		}
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s",
			 session);
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
			return lfd;
		close(lfd);
		if (errno != EBUSY)
			return sbx__error_os(SBX_ERROR, errno, "attach %s", dev);
	}
	return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_ENGINE,
			      "no loop device stayed free long enough to attach");
}

int sbx__disk_make(const char *session, int64_t bytes, unsigned uid)
{
	char img[256], mnt[256], dev[64], lf[300];
	_sbx_cleanup_close_ int fd = -1, lfd = -1;
	int rc;

	paths(session, img, sizeof(img), mnt, sizeof(mnt));
	rc = mkdirs();
	if (rc < 0)
		return rc;
	fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx__error_os(SBX_ERROR, errno, "create %s", img);
	/* Sparse: only what the sandbox writes takes room on the host. */
	if (ftruncate(fd, bytes) < 0)
		return sbx__error_os(SBX_ERROR, errno, "size %s", img);
	rc = run_mkfs(img, uid);
	if (rc < 0)
		return rc;
	if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
		return sbx__error_os(SBX_ERROR, errno, "make %s", mnt);
	lfd = loop_attach(fd, session, dev, sizeof(dev));
	if (lfd < 0)
		return lfd;
	/* noinit_itable: the file is fresh and sparse, its inode tables are zeros. */
	if (mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "noinit_itable") < 0)
		return sbx__error_os(SBX_ERROR, errno, "mount %s (%s) at %s", dev, img, mnt);
	/* The file system's root is the sandbox uid's (root_owner), and its
	 * alone: 0700, as the tmpfs it replaces was. */
	if (chmod(mnt, 0700) < 0)
		return sbx__error_os(SBX_ERROR, errno, "chmod %s", mnt);
	/* Nothing of the host's in the sandbox's space. */
	snprintf(lf, sizeof(lf), "%s/lost+found", mnt);
	(void)rmdir(lf);
	return 0;
}

/* Whether path is a mount point (its device differs from its parent's). */
static int is_mount(const char *path)
{
	char parent[300];
	struct stat a, b;

	snprintf(parent, sizeof(parent), "%s/..", path);
	return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

int sbx__disk_check_mounted(const char *session)
{
	char mnt[256];

	sbx__disk_mount_path(session, mnt, sizeof(mnt));
	return is_mount(mnt) ? 0
			     : sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
					      "the sandbox's disk is not mounted at %s", mnt);
}

int sbx__disk_remove(const char *session)
{
	char img[256], mnt[256];
	int rc = 0;

	/* The name may come from a container's labels, which whoever created
	 * the container wrote: only a name of ours becomes a path. */
	if (!sbx__disk_session_ok(session))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "'%.64s' is not a sandbox's session name; its disk is left "
				      "alone",
				      session ? session : "");
	paths(session, img, sizeof(img), mnt, sizeof(mnt));
	if (is_mount(mnt) && umount2(mnt, UMOUNT_NOFOLLOW) < 0) {
		/* Still held (a container being torn down): detach it now; the loop
		 * device clears itself when the last user lets go. */
		if (umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
			rc = sbx__error_os(SBX_ERROR, errno, "unmount %s", mnt);
	}
	if (rc == 0 && rmdir(mnt) < 0 && errno != ENOENT)
		rc = sbx__error_os(SBX_ERROR, errno, "remove %s", mnt);
	if (unlink(img) < 0 && errno != ENOENT && rc == 0)
		rc = sbx__error_os(SBX_ERROR, errno, "remove %s", img);
	return rc;
}

int sbx__disk_full(const char *session)
{
	char mnt[256];
	struct statvfs v;

	sbx__disk_mount_path(session, mnt, sizeof(mnt));
	if (!is_mount(mnt) || statvfs(mnt, &v) < 0)
		return 0;
	/* Full: less than 64 KiB or 1/1000 of it left (ext4 refuses a write
	 * before the very last block is taken). */
	return (unsigned long long)v.f_bavail * v.f_frsize < 65536ull ||
	       v.f_bavail < v.f_blocks / 1000;
}

int sbx__disk_sweep(int (*alive)(const char *session, void *payload), void *payload)
{
	static const char *const dirs[] = {SBX_RUN_DIR "/disks", SBX_DISK_DIR};
	int removed = 0;

	for (size_t i = 0; i < SBX_ARRAY_SIZE(dirs); i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		if (!d)
			continue;
		while ((e = readdir(d))) {
			char session[32];
			size_t n = strlen(e->d_name);

			if (i == 1 && n > 4 && strcmp(e->d_name + n - 4, ".img") == 0)
				n -= 4;
			if (!session_name(e->d_name, n))
				continue;
			snprintf(session, sizeof(session), "%.*s", (int)n, e->d_name);
			/* Only a sandbox the Engine says is gone; in doubt, keep it. */
			if (alive(session, payload) != 0)
				continue;
			if (sbx__disk_remove(session) == 0)
				removed++;
			else
				sbx__error_clear();
		}
		closedir(d);
	}
	return removed;
}
