/*
 * bench/mem.c: host-side memory of idle sandboxes. Creates K (8) default
 * sandboxes, runs `true` once in each (so the run channel is up), lets
 * them idle for a second, then reads from the host, for each:
 *   - the memory cgroup's usage (memory.usage_in_bytes on cgroup v1,
 *     memory.current on v2) and, on v1, total_rss from memory.stat;
 *   - VmRSS of the container's PID 1 (the init), /proc/<State.Pid>/status,
 *     and its RssAnon (the part no other process shares);
 *   - VmRSS and RssAnon of its parent, the containerd shim (one per
 *     container).
 * and the RSS of dockerd and containerd before the creates and with all K
 * idle, divided by K. Prints medians in KiB, and the init's VmRSS over
 * the 1 MiB target of issue #9. The container's PID comes
 * from `docker inspect`. Needs root (to read /proc of other users).
 * Usage: mem [K]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sandboxio.h>

#include "tier.h"

#define KMAX 64

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The value after key in file, first match, or -1. */
static long long field(const char *path, const char *key)
{
	char line[512];
	size_t kl = strlen(key);
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl)) {
			v = atoll(line + kl);
			break;
		}
	fclose(f);
	return v;
}

static long long status_kib(long pid, const char *key)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	return field(path, key);
}

static long long rss_kib(long pid)
{
	return status_kib(pid, "VmRSS:");
}

static long ppid_of(long pid, char *comm, size_t len)
{
	char path[64], buf[512], *p;
	long pp = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %ld", &pp);
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/comm", pp);
	comm[0] = 0;
	if ((f = fopen(path, "r"))) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	return pp;
}

/* Sum of VmRSS (KiB) of processes whose comm is name. */
static long long rss_of(const char *name)
{
	char cmd[128], line[64];
	long long sum = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "pidof %s", name);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fscanf(f, "%63s", line) == 1)
		sum += rss_kib(atol(line));
	pclose(f);
	return sum;
}

static long state_pid(const char *id)
{
	char cmd[256];
	long pid = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "docker inspect -f '{{.State.Pid}}' %s", id);
	if (!(f = popen(cmd, "r")))
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = -1;
	pclose(f);
	return pid;
}

/* Memory cgroup usage and (v1) total_rss of pid, in bytes. */
static int cgroup_mem(long pid, long long *usage, long long *rss)
{
	char path[512], line[512], dir[400] = "";
	FILE *f;

	*usage = *rss = -1;
	snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':'), *d = c ? strchr(c + 1, ':') : NULL;

		if (!d)
			continue;
		line[strcspn(line, "\n")] = 0;
		*d = 0;
		if (!strcmp(c + 1, "memory") || strstr(c + 1, ",memory")) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", d + 1);
			break;
		}
		if (c == line + 1 && line[0] == '0' && !c[1])
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", d + 1);
	}
	fclose(f);
	if (!dir[0])
		return -1;
	snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", dir);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%lld", usage) != 1)
			*usage = -1;
		fclose(f);
		snprintf(path, sizeof(path), "%s/memory.stat", dir);
		*rss = field(path, "total_rss ");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/memory.current", dir);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%lld", usage) != 1)
			*usage = -1;
		fclose(f);
		snprintf(path, sizeof(path), "%s/memory.stat", dir);
		*rss = field(path, "anon ");
	}
	return 0;
}

int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 8;
	const char *cmd[] = {"true", NULL};
	sbx_sandbox *s[KMAX] = {0};
	double usage[KMAX], crss[KMAX], init[KMAX], anon[KMAX], shim[KMAX], shanon[KMAX];
	long long d0, c0, d1, c1;
	char comm[64] = "", shim_comm[64] = "";
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	int rc = 0;

	if (k < 1 || k > KMAX)
		return 2;
	if (sbx_backend_open(&b, "docker", NULL) || sbx_policy_new(&p) ||
	    sbx_policy_set_tenant(p, "bench") || bench_tier(p)) {
		fprintf(stderr, "bench: %s\n", sbx_error_last()->message);
		return 1;
	}
	d0 = rss_of("dockerd");
	c0 = rss_of("containerd");
	for (int i = 0; i < k; i++) {
		sbx_result *r = NULL;

		if (sbx_sandbox_create(&s[i], b, p) || sbx_sandbox_run(&r, s[i], cmd, NULL)) {
			fprintf(stderr, "bench: %s\n", sbx_error_last()->message);
			rc = 1;
			goto out;
		}
		sbx_result_free(r);
	}
	sleep(1);
	d1 = rss_of("dockerd");
	c1 = rss_of("containerd");
	for (int i = 0; i < k; i++) {
		long pid = state_pid(sbx_sandbox_id(s[i]));
		long long u, cr;
		long shp;
		char path[64];
		FILE *f;

		if (pid <= 0 || cgroup_mem(pid, &u, &cr)) {
			fprintf(stderr, "bench: no pid or cgroup for %s\n", sbx_sandbox_id(s[i]));
			rc = 1;
			goto out;
		}
		usage[i] = (double)u / 1024, crss[i] = (double)cr / 1024;
		init[i] = (double)rss_kib(pid);
		anon[i] = (double)status_kib(pid, "RssAnon:");
		shp = ppid_of(pid, shim_comm, sizeof(shim_comm));
		shim[i] = (double)rss_kib(shp);
		shanon[i] = (double)status_kib(shp, "RssAnon:");
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		if ((f = fopen(path, "r"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
	}
	printf("mem %d idle sandboxes, medians in KiB:\n", k);
	printf("  cgroup usage      %8.0f  (total_rss/anon %.0f)\n", median(usage, k),
	       median(crss, k));
	printf("  init VmRSS        %8.0f  (RssAnon %.0f; PID 1 is %s)  ratio to 1 MiB %.2f\n",
	       median(init, k), median(anon, k), comm, median(init, k) / 1024);
	printf("  shim VmRSS        %8.0f  (RssAnon %.0f; %s, one per sandbox)\n", median(shim, k),
	       median(shanon, k), shim_comm);
	printf("  dockerd RSS       %8.0f  per sandbox (%lld -> %lld KiB for all %d)\n",
	       (double)(d1 - d0) / k, d0, d1, k);
	printf("  containerd RSS    %8.0f  per sandbox (%lld -> %lld KiB for all %d)\n",
	       (double)(c1 - c0) / k, c0, c1, k);
out:
	for (int i = 0; i < k; i++)
		sbx_sandbox_close(s[i]);
	sbx_policy_free(p);
	sbx_backend_free(b);
	return rc;
}
