/*
 * bench/loop.c: N runs of `true` in one live sandbox through the library,
 * printing the median, min and max of one run in milliseconds. The runs go
 * over the init's run channel (docs/protocol.md); a run that took docker
 * exec instead fails the benchmark, so the figure is the channel's. The
 * peer figures (docker exec, the Docker SDK for Python) come from
 * bench/run.sh. SBX_BENCH_TIER=gvisor runs them in a gvisor sandbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sandboxio.h>

#include "tier.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	const char *cmd[] = {"true", NULL};
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	double *t;

	if (n < 1 || n > 100000 || !(t = calloc((size_t)n, sizeof(double))))
		return 2;
	if (sbx_backend_open(&b, "docker", NULL) || sbx_policy_new(&p) ||
	    sbx_policy_set_tenant(p, "bench") || bench_tier(p) || sbx_sandbox_create(&s, b, p)) {
		fprintf(stderr, "bench: %s\n", sbx_error_last()->message);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		sbx_result *r = NULL;
		double t0 = now_ms();
		if (sbx_sandbox_run(&r, s, cmd, NULL) || r->exit_code != 0) {
			fprintf(stderr, "bench: run %d failed: %s\n", i, sbx_error_last()->message);
			return 1;
		}
		if (r->path != SBX_RUN_PATH_CHANNEL) {
			fprintf(stderr, "bench: run %d went through docker exec, not the channel\n",
				i);
			return 1;
		}
		t[i] = now_ms() - t0;
		sbx_result_free(r);
	}
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.2f %.2f %.2f\n", t[n / 2], t[0], t[n - 1]);
	free(t);
	return 0;
}
