/*
 * core/owner-int.h: who owns a sandbox, and whether that owner is gone.
 *
 * Every backend records the same owner identity with a sandbox (docker in
 * labels, e2b in metadata, modal in tags, under the io.sandboxio.* keys) so
 * that one judgement decides what the reaper removes: a sandbox whose
 * deadline passed, or one made on this host and boot whose owner process
 * is gone (the pid absent, or present with another start time, since pids
 * are reused). A detached sandbox records pid 0 and waits for its deadline.
 */
#ifndef SBX_CORE_OWNER_INT_H
#define SBX_CORE_OWNER_INT_H

#include <sys/types.h>

#include "util/proc.h"

struct sbx__owner {
	char host[65];
	char boot[40];
	long long pid;		  /* 0: detached */
	unsigned long long start; /* the owner's start time, in clock ticks after boot */
	unsigned long long
		pidns; /* the inode of its PID namespace (/proc/self/ns/pid); 0: unknown */
};

/* The metadata keys every backend records (values are decimal strings). */
#define SBX_OWNER_KEY_PREFIX "io.sandboxio."
#define SBX_OWNER_KEY_MANAGED SBX_OWNER_KEY_PREFIX "managed-by"
#define SBX_OWNER_MANAGED_VALUE "sandboxio"

/* This process as the owner of a new sandbox (pid 0 when detached). */
void sbx__owner_self(struct sbx__owner *o, int detached);

/*
 * Judges one sandbox from the strings recorded with it (any may be NULL).
 * self is this process's identity (host and boot are what matter). Returns
 * an sbx_reap_reason, or 0 to leave the sandbox alone; *why is set for
 * SBX_REAP_SKIPPED (a deadline or owner that cannot be read). Another
 * host's sandbox is condemned by its deadline only.
 */
int sbx__owner_judge(const struct sbx__owner *self,
		     const char *deadline,
		     const char *host,
		     const char *boot,
		     const char *pid,
		     const char *start,
		     const char **why);

/* The inode of this process's PID namespace; 0 when it cannot be read. */
unsigned long long sbx__owner_pidns(void);

/*
 * sbx__owner_judge() with the owner's PID namespace (the docker backend
 * records it): a pid is only a process identity inside its namespace, and
 * two owners in two containers on one host (host networking gives them
 * one host name; the boot id is the kernel's) may hold the same pid. So an
 * owner whose namespace is not the judge's is left to its deadline, like
 * another host's; a sandbox without the label (an older version's) whose
 * pid would otherwise be judged is skipped, with the reason.
 */
int sbx__owner_judge_ns(const struct sbx__owner *self,
			const char *deadline,
			const char *host,
			const char *boot,
			const char *pid,
			const char *start,
			const char *pidns,
			const char **why);

#endif
