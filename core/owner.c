/*
 * core/owner.c: the owner identity recorded with every sandbox, and the one
 * judgement of whether its owner is gone (core/owner-int.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

#include "core/owner-int.h"
#include "util/proc.h"

static void read_boot_id(char *dst, size_t n)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, dst, n - 1) : -1;

	if (fd >= 0)
		close(fd);
	dst[r > 0 ? r : 0] = '\0';
	dst[strcspn(dst, "\n")] = '\0';
}

unsigned long long sbx__owner_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void sbx__owner_self(struct sbx__owner *o, int detached)
{
	memset(o, 0, sizeof(*o));
	gethostname(o->host, sizeof(o->host) - 1);
	read_boot_id(o->boot, sizeof(o->boot));
	o->pidns = sbx__owner_pidns();
	if (!detached) {
		o->pid = (long long)getpid();
		if (sbx__proc_start_time(getpid(), &o->start) < 0)
			o->start = 0;
	}
}

static int parse_num(const char *s, long long *out)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno || *end || *out < 0 ? -1 : 0;
}

/* check_ns 0: the adapters that record no namespace (the owner is a remote
 * client's process, judged as before). */
static int judge(const struct sbx__owner *self,
		 const char *deadline,
		 const char *host,
		 const char *boot,
		 const char *pid,
		 const char *start,
		 int check_ns,
		 const char *pidns,
		 const char **why)
{
	long long dl, p, st, ns;
	unsigned long long now_start;

	if (parse_num(deadline, &dl) < 0) {
		*why = "deadline is missing or not a number";
		return SBX_REAP_SKIPPED;
	}
	if (dl <= (long long)time(NULL))
		return SBX_REAP_DEADLINE_PASSED;
	if (!host || strcmp(host, self->host) != 0)
		return 0; /* another host's: only its deadline can condemn it */
	if (parse_num(pid, &p) < 0 || parse_num(start, &st) < 0) {
		*why = "owner-pid or owner-start is missing or not a number";
		return SBX_REAP_SKIPPED;
	}
	if (p == 0)
		return 0; /* detached: lives until its deadline */
	if (!boot || strcmp(boot, self->boot) != 0)
		return SBX_REAP_OWNER_REBOOTED;
	if (check_ns) {
		if (parse_num(pidns, &ns) < 0 || ns == 0) {
			*why = "owner-pidns is missing or not a number (an older version made "
			       "it): its owner's pid cannot be told from another PID "
			       "namespace's";
			return SBX_REAP_SKIPPED;
		}
		if (!self->pidns) {
			*why = "this process's PID namespace cannot be read, so no owner pid "
			       "can be judged";
			return SBX_REAP_SKIPPED;
		}
		if ((unsigned long long)ns != self->pidns)
			return 0; /* another PID namespace's owner: only its deadline */
	}
	if (p > 0x7fffffff)
		return SBX_REAP_OWNER_GONE;
	if (sbx__proc_start_time((pid_t)p, &now_start) < 0)
		return SBX_REAP_OWNER_GONE;
	if (now_start != (unsigned long long)st)
		return SBX_REAP_OWNER_GONE; /* the pid was reused */
	return 0;
}

int sbx__owner_judge(const struct sbx__owner *self,
		     const char *deadline,
		     const char *host,
		     const char *boot,
		     const char *pid,
		     const char *start,
		     const char **why)
{
	return judge(self, deadline, host, boot, pid, start, 0, NULL, why);
}

int sbx__owner_judge_ns(const struct sbx__owner *self,
			const char *deadline,
			const char *host,
			const char *boot,
			const char *pid,
			const char *start,
			const char *pidns,
			const char **why)
{
	return judge(self, deadline, host, boot, pid, start, 1, pidns, why);
}
