/*
 * engine/usage.c: what a docker sandbox uses now (the vtable's usage,
 * sbx_sandbox_usage()): its cgroup's CPU time and memory, read on the host
 * through the init's host pid (cgroups/, v1 and v2), and its /workspace
 * disk's blocks (statvfs of the mount on the host, engine/disk.c). Nothing
 * is read from inside the sandbox, so nothing it writes there can change
 * the answer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include <sandboxio.h>

#include "cgroups/cgroups-int.h"
#include "engine/docker-int.h"
#include "util/error-int.h"

/* A cgroup value as sbx_usage gives it: unknown and unlimited are -1. */
static int64_t known(int64_t v)
{
	return v < 0 ? -1 : v;
}

int sbx__docker_usage(void *state, void *box, sbx_usage *out)
{
	struct sbx__docker_box *b = box;
	sbx_cgroup_usage u;
	sbx_cgroup_limits l;
	int rc;

	(void)state;
	if (b->dead)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "usage: sandbox %.12s was killed", b->id);
	if (b->pid <= 0)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "usage: the host pid of sandbox %.12s is unknown", b->id);
	rc = sbx__cgroup_read_usage(&u, "/sys/fs/cgroup", "/proc", b->pid);
	if (rc == -ENOENT || rc == -ESRCH)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "usage: the processes of sandbox %.12s are gone", b->id);
	if (rc < 0)
		return sbx__error_os(SBX_ERROR, -rc, "usage: read the cgroup of sandbox %.12s",
				     b->id);
	out->cpu_used_us = known(u.cpu_usage_us);
	out->memory_bytes = known(u.memory_current);
	out->memory_peak_bytes = known(u.memory_peak);
	if (sbx__cgroup_read_limits(&l, "/sys/fs/cgroup", "/proc", b->pid) == 0)
		out->memory_limit_bytes = known(l.memory_max);
	if (b->disk) {
		char mnt[256];
		struct statvfs v;

		sbx__disk_mount_path(b->session, mnt, sizeof(mnt));
		if (statvfs(mnt, &v) == 0) {
			out->disk_total_bytes = (int64_t)v.f_blocks * (int64_t)v.f_frsize;
			out->disk_used_bytes =
				(int64_t)(v.f_blocks - v.f_bfree) * (int64_t)v.f_frsize;
		}
	}
	return 0;
}
