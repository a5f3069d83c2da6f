/*
 * init/fds.c: keep the init's descriptors from the programs it starts.
 *
 * close_range(2) does it in one call. Kernels without it (gVisor as Debian
 * 12 ships it answers ENOSYS) get the descriptors that are really open, read
 * from /proc/self/fd with getdents64 into a buffer on the stack: the caller
 * may be a vfork child sharing the parent's memory, where nothing may
 * allocate. Only when /proc is not there is every number up to a bound
 * tried, which under a user-space kernel costs seconds per run.
 */
#include "init/init.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Numbers tried one by one when neither close_range nor /proc is there. */
#define FD_SCAN_MAX 65536

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void act(int fd, int keep, int cloexec)
{
	if (fd <= 2 || fd == keep)
		return;
	if (cloexec)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	else
		(void)close(fd);
}

/* One pass over /proc/self/fd; returns how many fds it acted on, or -1. */
static int proc_pass(int dir, int keep, int cloexec)
{
	char buf[4096] __attribute__((aligned(8)));
	int acted = 0;

	if (lseek(dir, 0, SEEK_SET) != 0)
		return -1;
	for (;;) {
		long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
		long off = 0;

		if (n < 0)
			return -1;
		if (n == 0)
			return acted;
		while (off < n) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			const char *p = d->d_name;
			int fd = 0;

			off += d->d_reclen;
			if (*p < '0' || *p > '9')
				continue;
			for (; *p >= '0' && *p <= '9' && fd < (1 << 24); p++)
				fd = fd * 10 + (*p - '0');
			if (*p || fd == dir || fd <= 2 || fd == keep)
				continue;
			act(fd, keep, cloexec);
			acted++;
		}
	}
}

void sbx_init_fds_past_stdio(int keep, int cloexec)
{
	int dir, rc, pass;

	if (keep < 3) {
		if (close_range(3U, ~0U, cloexec ? CLOSE_RANGE_CLOEXEC : 0) == 0)
			return;
	} else if (close_range(3U, (unsigned int)keep - 1, cloexec ? CLOSE_RANGE_CLOEXEC : 0) ==
			   0 &&
		   close_range((unsigned int)keep + 1, ~0U, cloexec ? CLOSE_RANGE_CLOEXEC : 0) ==
			   0) {
		return;
	}
	dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir >= 0) {
		/* Closing while listing: pass again until a pass finds nothing. */
		for (pass = 0; pass < 64; pass++) {
			rc = proc_pass(dir, keep, cloexec);
			if (rc <= 0 || cloexec)
				break;
		}
		(void)close(dir);
		if (rc >= 0)
			return;
	}
	for (int fd = 3; fd < FD_SCAN_MAX; fd++)
		act(fd, keep, cloexec);
}
