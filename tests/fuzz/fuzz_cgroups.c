/*
 * tests/fuzz/fuzz_cgroups.c: libFuzzer target for the cgroup readers
 * (cgroups/cgroups.c): <pid>/cgroup, and every v1 and v2 limit and usage
 * file they read, through sbx__cgroup_read_limits() and
 * sbx__cgroup_read_usage(), then sbx__cgroup_check() on what was read.
 *
 * The input is written into a fixture tree under a temporary directory
 * (made once per process, removed at exit): its first byte chooses a pure
 * v2 host (<root>/cgroup.controllers) or a hybrid one (<root>/unified), the
 * rest is cut at each "||" into the files below, in that order, for the
 * cgroup /docker/fz; a file with no section is absent. A host's files are what
 * the kernel writes, but the container's owner can write some of them
 * (its cgroup namespace), hence the fuzzing.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups/cgroups-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PID 4242
#define CG "docker/fz"

/* The files, relative to the root, in the order the input fills them. */
static const char *const files[] = {
	"proc/4242/cgroup",
	/* v2 (the prefix is "" on a pure v2 host, "unified/" on a hybrid one) */
	"V2" CG "/memory.max",
	"V2" CG "/memory.swap.max",
	"V2" CG "/pids.max",
	"V2" CG "/cpu.max",
	"V2" CG "/memory.peak",
	"V2" CG "/memory.events",
	"V2" CG "/pids.current",
	"V2" CG "/pids.events",
	"V2" CG "/cpu.stat",
	/* v1 */
	"cg/memory/" CG "/memory.limit_in_bytes",
	"cg/memory/" CG "/memory.memsw.limit_in_bytes",
	"cg/memory/" CG "/memory.max_usage_in_bytes",
	"cg/memory/" CG "/memory.oom_control",
	"cg/pids/" CG "/pids.max",
	"cg/pids/" CG "/pids.current",
	"cg/pids/" CG "/pids.events",
	"cg/cpu/" CG "/cpu.cfs_quota_us",
	"cg/cpu/" CG "/cpu.cfs_period_us",
	"cg/cpu/" CG "/cpu.stat",
	"cg/cpuacct/" CG "/cpuacct.usage",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static char top[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup(void)
{
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			abort();
		*s = '/';
	}
}

static void path_of(char *dst, size_t n, size_t i, int v2)
{
	const char *f = files[i];

	if (strncmp(f, "V2", 2) == 0)
		snprintf(dst, n, "%s/cg/%s%s", top, v2 ? "" : "unified/", f + 2);
	else
		snprintf(dst, n, "%s/%s", top, f);
}

static void put(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "we");

	if (!f) {
		mkdirs(path);
		f = fopen(path, "we");
	}
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX], root[PATH_MAX], proc[PATH_MAX];
	sbx_cgroup_limits lim;
	sbx_cgroup_usage use;
	const uint8_t *p, *end;
	int v2;

	if (!top[0]) {
		snprintf(top, sizeof(top), "%s/sbx-fuzz-cg-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(top))
			abort();
		atexit(cleanup);
	}
	if (size < 1)
		return 0;
	v2 = data[0] & 1;
	snprintf(path, sizeof(path), "%s/cg/cgroup.controllers", top);
	if (v2)
		put(path, (const uint8_t *)"cpu memory pids\n", 16);
	else
		unlink(path);
	p = data + 1;
	end = data + size;
	for (size_t i = 0; i < NFILES; i++) {
		const uint8_t *sep = p ? memmem(p, (size_t)(end - p), "||", 2) : NULL;

		for (int w = 0; w < 2; w++) {
			path_of(path, sizeof(path), i, w);
			if (strncmp(files[i], "V2", 2) != 0 && w)
				break;
			if (p && (w == v2 || strncmp(files[i], "V2", 2) != 0))
				put(path, p, sep ? (size_t)(sep - p) : (size_t)(end - p));
			else
				unlink(path);
		}
		p = sep ? sep + 2 : NULL;
	}
	snprintf(root, sizeof(root), "%s/cg", top);
	snprintf(proc, sizeof(proc), "%s/proc", top);
	memset(&lim, 0xa5, sizeof(lim));
	if (sbx__cgroup_read_limits(&lim, root, proc, PID) == 0) {
		char why[96] = "";

		(void)sbx__cgroup_check(&lim, 512 << 20, 64, 1000, why, sizeof(why));
		(void)sbx__cgroup_check(&lim, lim.memory_max, lim.pids_max, 500, why, sizeof(why));
		if (memchr(why, '\0', sizeof(why)) == NULL)
			abort();
	}
	(void)sbx__cgroup_read_usage(&use, root, proc, PID);
	return 0;
}
