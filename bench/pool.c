/*
 * bench/pool.c: time to first command, through the library. N times each,
 * in milliseconds (median min max):
 *   pooled: sbx_pool_take() from a warm pool + run `true`
 *   cold:   sbx_sandbox_create() + run `true`
 * Closing is not timed in either. A pooled take that found the pool empty
 * fails the benchmark, so the pooled figure is a warm one; the loop waits
 * for the top-up thread between takes. bench/run.sh prints the ratios
 * against `docker run --rm`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

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

static int run_true(sbx_sandbox *s)
{
	const char *cmd[] = {"true", NULL};
	sbx_result *r = NULL;
	int rc = sbx_sandbox_run(&r, s, cmd, NULL);

	if (rc == 0 && r->exit_code != 0)
		rc = -1;
	sbx_result_free(r);
	return rc;
}

static void report(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.2f %.2f %.2f\n", t[n / 2], t[0], t[n - 1]);
}

static int fail(const char *what)
{
	fprintf(stderr, "bench: %s: %s\n", what, sbx_error_last()->message);
	return 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	sbx_pool_options o = SBX_POOL_OPTIONS_INIT;
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	sbx_pool *pool = NULL;
	double *tp, *tc;

	if (n < 1 || n > 10000 || !(tp = calloc((size_t)n, sizeof(double))) ||
	    !(tc = calloc((size_t)n, sizeof(double))))
		return 2;
	o.size = 1;
	o.max_age_ms = 300000;
	o.use_ms = 60000;
	if (sbx_backend_open(&b, "docker", NULL) || sbx_policy_new(&p) ||
	    sbx_policy_set_tenant(p, "bench") ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, 600000) ||
	    sbx_pool_new(&pool, b, p, &o))
		return fail("setup");
	for (int i = 0; i < n; i++) {
		sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};
		sbx_sandbox *s = NULL;
		double t0;

		do {
			usleep(20000);
			sbx_pool_get_stats(pool, &st);
		} while (st.idle < 1);
		t0 = now_ms();
		if (sbx_pool_take(&s, pool) != 0)
			return fail("take (the pool was empty)");
		if (run_true(s))
			return fail("pooled run");
		tp[i] = now_ms() - t0;
		sbx_sandbox_close(s);
	}
	sbx_pool_free(pool);
	for (int i = 0; i < n; i++) {
		sbx_sandbox *s = NULL;
		double t0 = now_ms();

		if (sbx_sandbox_create(&s, b, p) || run_true(s))
			return fail("cold create and run");
		tc[i] = now_ms() - t0;
		sbx_sandbox_close(s);
	}
	report(tp, n);
	report(tc, n);
	sbx_policy_free(p);
	sbx_backend_free(b);
	free(tp);
	free(tc);
	return 0;
}
