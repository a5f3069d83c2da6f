/*
 * cgroups/cgroups-int.h: reading a container's cgroup limits and usage from
 * the host, and comparing the limits with what the policy asked for.
 *
 * Internal to the library. The engine reports what it was told to apply; these
 * functions read what the kernel actually enforces, from the cgroup files of a
 * process inside the container, on cgroup v2, v1 and hybrid hosts.
 */
#ifndef SBX_CGROUPS_INT_H
#define SBX_CGROUPS_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Values of the int64_t fields below that are not amounts: UNLIMITED for "max",
 * v1's huge value or a quota of -1; UNKNOWN when the controller or file is absent.
 */
#define SBX_CGROUP_UNLIMITED (-1)
#define SBX_CGROUP_UNKNOWN (-2)

typedef struct {
	/* bytes; -1 unlimited */
	int64_t memory_max;
	/* memory+swap in bytes: v1 memory.memsw.limit_in_bytes, v2 memory.max +
	 * memory.swap.max; -1 unlimited, -2 unknown */
	int64_t memswap_max;
	/* -1 unlimited */
	int64_t pids_max;
	/* -1 unlimited */
	int64_t cpu_quota_us;
	int64_t cpu_period_us;
	/* of the memory controller's hierarchy: 1 or 2 */
	int version;
} sbx_cgroup_limits;

typedef struct {
	/* bytes: v1 memory.max_usage_in_bytes, v2 memory.peak; -2 unknown */
	int64_t memory_peak;
	/* "oom_kill" of v1 memory.oom_control or v2 memory.events; -2 unknown */
	int64_t oom_kills;
	/* pids.current */
	int64_t pids_current;
	/* "max" of pids.events: times a fork failed on the pids limit */
	int64_t pids_events_max;
	/* v1 cpuacct.usage / 1000, v2 cpu.stat usage_usec */
	int64_t cpu_usage_us;
	/* nr_throttled of cpu.stat */
	int64_t nr_throttled;
	/* bytes now: v1 memory.usage_in_bytes, v2 memory.current; -2 unknown */
	int64_t memory_current;
} sbx_cgroup_usage;

/*
 * Reads the limits of the cgroup that pid belongs to.
 *
 * root is the cgroup filesystem root ("/sys/fs/cgroup"); procroot is where
 * <pid>/cgroup is found ("/proc"). pid is a host pid inside the container.
 * Each controller is read from its v1 hierarchy (<root>/<controller>/<path>)
 * when /proc lists it on a v1 line and that directory exists, else from the v2
 * hierarchy: <root> if <root>/cgroup.controllers exists, else <root>/unified.
 *
 * Returns 0, or a negative errno: -EINVAL for bad arguments, a malformed
 * <pid>/cgroup, a cgroup path that is relative or has ".." components, or a
 * malformed value (not a plain decimal, negative, overflowing, empty, longer
 * than a few KiB, or followed by anything but one newline); -ENOENT when the
 * process, a controller or a needed file is missing; -ENAMETOOLONG; or what
 * open() or read() failed with. out is written only on success.
 */
int sbx__cgroup_read_limits(sbx_cgroup_limits *out,
			    const char *root,
			    const char *procroot,
			    pid_t pid);

/* Reads the usage counters of the cgroup that pid belongs to. Same arguments and returns. */
int sbx__cgroup_read_usage(sbx_cgroup_usage *out,
			   const char *root,
			   const char *procroot,
			   pid_t pid);

/*
 * The directory (PATH_MAX bytes) of the memory controller's cgroup of pid and
 * its version (1 or 2). Same arguments and returns as sbx__cgroup_read_limits.
 */
int sbx__cgroup_memory_dir(
	char *dir, int *version, const char *root, const char *procroot, pid_t pid);

/* The "oom_kill" count of v1 memory cgroup dir: 0 or a negative errno. */
int sbx__cgroup_oom_kills(const char *dir, int64_t *out);

/*
 * A witness of the memory cap's OOM killer that outlives the cgroup
 * (cgroups/oom-watch.c). The Engine's own "oom" event is lost when the
 * cgroup is gone before the runtime's watcher reads it, which a loaded host
 * shows; this one is read after the end, whatever the order. One watch has
 * one reader: each run makes its own (the kernel's count is taken by
 * whoever reads it first).
 */
struct sbx__cgroup_oom_watch {
	int on;		    /* 0 (as zeroed): no watch */
	int efd;	    /* eventfd registered on memory.oom_control */
	char dir[PATH_MAX]; /* the cgroup's directory */
	int64_t kills0;	    /* its oom_kill when the watch began */
	int64_t notes;	    /* signals taken while the cgroup was there */
	int64_t late;	    /* signals taken once it was gone (one is the removal's) */
};

/* What a watch has seen (sbx__cgroup_oom_poll). */
#define SBX_CGROUP_OOM_NONE 0 /* no OOM, the cgroup is there */
#define SBX_CGROUP_OOM_YES 1  /* the OOM killer acted in the cgroup */
#define SBX_CGROUP_OOM_GONE 2 /* the cgroup is gone, with no OOM before */

/*
 * Watches the cgroup v1 memory cgroup dir (as sbx__cgroup_memory_dir names
 * it). Writing its cgroup.event_control takes root on the hosts measured.
 * Returns 0, or a negative errno (-EACCES when not allowed); w is left
 * without a watch on error.
 */
int sbx__cgroup_oom_watch(struct sbx__cgroup_oom_watch *w, const char *dir);

/*
 * Takes what the kernel signalled and says what the watch has seen since
 * it began: SBX_CGROUP_OOM_YES, _GONE, _NONE, or a negative errno (-EBADF:
 * no watch). An OOM while the cgroup is there is YES once the cgroup's own
 * oom_kill rose (an ancestor's cap signals its descendants too). When the
 * cgroup is gone and the kernel's signals could be the removal's alone, it
 * waits up to wait_ms for one more before saying GONE.
 */
int sbx__cgroup_oom_poll(struct sbx__cgroup_oom_watch *w, int wait_ms);

/* Ends the watch; w is then without one. */
void sbx__cgroup_oom_unwatch(struct sbx__cgroup_oom_watch *w);

/*
 * Compares limits read back with what the policy asked: memory in bytes, pids,
 * CPU in thousandths of a core.
 *
 * Memory and pids must be equal. Memory+swap must equal memory (no swap)
 * unless it is unknown: v1 hosts without swap accounting have no memsw file.
 * quota/period must be within 1% of cpu_milli/1000.
 *
 * Returns 0 on a match. Otherwise returns -1 and, when why is not NULL and
 * why_len is not 0, writes a NUL-terminated message naming the first limit
 * that differs, such as "memory.max is 1073741824, policy asked 536870912"
 * (truncated to fit).
 */
int sbx__cgroup_check(const sbx_cgroup_limits *got,
		      int64_t memory,
		      int64_t pids,
		      int64_t cpu_milli,
		      char *why,
		      size_t why_len);

#endif
