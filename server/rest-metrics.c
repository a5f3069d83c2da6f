/*
 * server/rest-metrics.c: GET /sandboxes/{id}/metrics of the E2B-compatible
 * server (Sandbox.getMetrics()), from the library's read-back of the
 * sandbox's usage (sbx_sandbox_usage(): its cgroup and its disk, read on
 * the host).
 *
 * E2B answers with the samples its agent took every few seconds between
 * start and end; this server keeps no history and answers with one sample,
 * taken at the request: cpuUsedPct is the CPU time used since the previous
 * request for this sandbox (or since its start) over that wall time and
 * its CPUs, memUsed and memTotal its memory charged now and its cap,
 * diskUsed and diskTotal its /workspace (0 when the library cannot say).
 * start and end, when given, must be unix seconds; a window that ends
 * before now or starts after it holds no sample.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

/* A query value of unix seconds: 0 absent, -1 malformed. */
static int query_secs(struct MHD_Connection *c, const char *name, int64_t *out)
{
	const char *v = sbxs_query(c, name);
	char *end;
	long long n;

	*out = 0;
	if (!v)
		return 0;
	n = strtoll(v, &end, 10);
	if (!*v || *end || n < 0)
		return -1;
	*out = n;
	return 1;
}

enum MHD_Result sbxs_rest_metrics(struct sbxs_server *srv, struct MHD_Connection *c, const char *id)
{
	sbx_usage u = SBX_USAGE_INIT;
	struct sbxs_box *b;
	struct timespec ts;
	int64_t start, end, now_s, cpus, mem_total;
	uint64_t now;
	double pct = 0;
	int rc, has_start, has_end;
	json_t *sample, *arr;

	has_start = query_secs(c, "start", &start);
	has_end = query_secs(c, "end", &end);
	if (has_start < 0 || has_end < 0)
		return sbxs_rest_error(c, 400, "start and end must be unix seconds");
	b = sbxs_box_get(srv, id);
	if (!b)
		return sbxs_rest_error(
			c, 404, "Sandbox \"%.64s\" doesn't exist or you don't have access to it",
			id);
	rc = sbx_sandbox_usage(b->s, &u);
	if (rc < 0) {
		enum MHD_Result ret = sbxs_rest_error(c, rc == SBX_ENOTFOUND ? 404 : 500,
						      "cannot read the metrics of sandbox %s: %s",
						      b->id, sbx_error_last()->message);

		sbxs_box_unref(b);
		return ret;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now_s = (int64_t)ts.tv_sec;
	now = sbx__mono_ms();
	cpus = (b->cpu_milli + 999) / 1000;
	if (cpus < 1)
		cpus = 1;
	pthread_mutex_lock(&srv->mu);
	if (u.cpu_used_us >= 0) {
		uint64_t since = b->metrics_mono ? b->metrics_mono : b->started_mono;
		int64_t used = u.cpu_used_us - (b->metrics_mono ? b->metrics_cpu_us : 0);

		if (now > since && used > 0)
			pct = (double)used / 1000.0 / (double)(now - since) / (double)cpus * 100.0;
		if (pct > 100.0)
			pct = 100.0;
		b->metrics_mono = now;
		b->metrics_cpu_us = u.cpu_used_us;
	}
	pthread_mutex_unlock(&srv->mu);
	mem_total = u.memory_limit_bytes >= 0 ? u.memory_limit_bytes : b->memory;
	sample =
		json_pack("{s:o, s:I, s:I, s:f, s:I, s:I, s:I, s:I}", "timestamp",
			  sbxs_rfc3339(now_s * 1000 + ts.tv_nsec / 1000000), "timestampUnix",
			  (json_int_t)now_s, "cpuCount", (json_int_t)cpus, "cpuUsedPct", pct,
			  "memUsed", (json_int_t)(u.memory_bytes >= 0 ? u.memory_bytes : 0),
			  "memTotal", (json_int_t)(mem_total >= 0 ? mem_total : 0), "diskUsed",
			  (json_int_t)(u.disk_used_bytes >= 0 ? u.disk_used_bytes : 0), "diskTotal",
			  (json_int_t)(u.disk_total_bytes >= 0 ? u.disk_total_bytes : b->disk));
	sbxs_box_unref(b);
	arr = json_array();
	if ((!has_start || start <= now_s) && (!has_end || end >= now_s))
		json_array_append_new(arr, sample);
	else
		json_decref(sample);
	return sbxs_reply_json(c, 200, arr);
}
