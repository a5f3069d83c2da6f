/*
 * bench/acquire.c: sbx_pool_take() alone, through the library.
 *   take: N takes from a warm pool of one, each timed alone (no run), in
 *         milliseconds (median min max); the loop waits for the top-up
 *         thread between takes, and a take that found the pool empty
 *         fails the benchmark. Closing is not timed.
 *   burst: a pool of C (32) is filled, then C threads take at once and
 *         each runs `true` in what it got. Prints the takes from the pool,
 *         the takes that created one (misses), the failures (of the take
 *         or of the run), the pool's misses counter and the median and
 *         max take in ms.
 * Usage: acquire N [C]
 */
#include <pthread.h>
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

static int fail(const char *what)
{
	fprintf(stderr, "bench: %s: %s\n", what, sbx_error_last()->message);
	return 1;
}

/* Waits until the pool holds want idle sandboxes, for up to limit_ms. */
static int wait_idle(sbx_pool *pool, unsigned int want, double limit_ms)
{
	double t0 = now_ms();
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};

	for (;;) {
		sbx_pool_get_stats(pool, &st);
		if (st.idle >= want)
			return 0;
		if (now_ms() - t0 > limit_ms) {
			fprintf(stderr, "bench: pool has %u idle of %u after %.0f ms\n", st.idle,
				want, limit_ms);
			return -1;
		}
		usleep(20000);
	}
}

struct taker {
	pthread_t th;
	sbx_pool *pool;
	pthread_barrier_t *go;
	sbx_sandbox *s;
	int rc;	    /* sbx_pool_take()'s */
	int run_ok; /* `true` ran and exited 0 */
	double ms;  /* the take alone */
};

static void *take_one(void *arg)
{
	struct taker *t = arg;
	const char *cmd[] = {"true", NULL};
	sbx_result *r = NULL;
	double t0;

	pthread_barrier_wait(t->go);
	t0 = now_ms();
	t->rc = sbx_pool_take(&t->s, t->pool);
	t->ms = now_ms() - t0;
	if (t->rc < 0)
		return NULL;
	t->run_ok = sbx_sandbox_run(&r, t->s, cmd, NULL) == 0 && r->exit_code == 0;
	sbx_result_free(r);
	return NULL;
}

static sbx_pool *make_pool(sbx_backend *b, const sbx_policy *p, unsigned int size)
{
	sbx_pool_options o = SBX_POOL_OPTIONS_INIT;
	sbx_pool *pool = NULL;

	o.size = size;
	o.max_age_ms = 300000;
	o.use_ms = 60000;
	if (sbx_pool_new(&pool, b, p, &o))
		return NULL;
	return pool;
}

static int burst(sbx_backend *b, const sbx_policy *p, int c)
{
	struct taker *t = calloc((size_t)c, sizeof(*t));
	double *ms = calloc((size_t)c, sizeof(double));
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};
	pthread_barrier_t go;
	sbx_pool *pool;
	int hit = 0, miss = 0, failed = 0, n = 0;

	if (!t || !ms)
		return 2;
	if (!(pool = make_pool(b, p, (unsigned int)c)))
		return fail("pool");
	if (wait_idle(pool, (unsigned int)c, 600000))
		return 1;
	pthread_barrier_init(&go, NULL, (unsigned int)c);
	for (int i = 0; i < c; i++) {
		t[i].pool = pool;
		t[i].go = &go;
		if (pthread_create(&t[i].th, NULL, take_one, &t[i]))
			return 2;
	}
	for (int i = 0; i < c; i++)
		pthread_join(t[i].th, NULL);
	sbx_pool_get_stats(pool, &st);
	/* Stop the top-up first: the closes below need the cores. */
	sbx_pool_free(pool);
	for (int i = 0; i < c; i++) {
		if (t[i].rc < 0 || !t[i].run_ok)
			failed++;
		else if (t[i].rc == 0)
			hit++;
		else
			miss++;
		if (t[i].rc >= 0)
			ms[n++] = t[i].ms;
		sbx_sandbox_close(t[i].s);
	}
	qsort(ms, (size_t)n, sizeof(double), cmp);
	printf("burst %d: from pool %d, created now %d, failed %d, misses counter %llu, "
	       "take median %.3f ms max %.3f ms\n",
	       c, hit, miss, failed, (unsigned long long)st.misses, n ? ms[n / 2] : 0,
	       n ? ms[n - 1] : 0);
	pthread_barrier_destroy(&go);
	free(ms);
	free(t);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	int c = argc > 2 ? atoi(argv[2]) : 32;
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	sbx_pool *pool = NULL;
	double *tt;
	int rc;

	if (n < 1 || n > 10000 || c < 1 || c > SBX_POOL_MAX_SIZE ||
	    !(tt = calloc((size_t)n, sizeof(double))))
		return 2;
	if (sbx_backend_open(&b, "docker", NULL) || sbx_policy_new(&p) ||
	    sbx_policy_set_tenant(p, "bench") ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, 600000) ||
	    !(pool = make_pool(b, p, 1)))
		return fail("setup");
	for (int i = 0; i < n; i++) {
		sbx_sandbox *s = NULL;
		double t0;

		if (wait_idle(pool, 1, 60000))
			return 1;
		t0 = now_ms();
		if (sbx_pool_take(&s, pool) != 0)
			return fail("take (the pool was empty)");
		tt[i] = now_ms() - t0;
		sbx_sandbox_close(s);
	}
	sbx_pool_free(pool);
	qsort(tt, (size_t)n, sizeof(double), cmp);
	printf("take %d: median %.3f ms min %.3f max %.3f\n", n, tt[n / 2], tt[0], tt[n - 1]);
	rc = burst(b, p, c);
	sbx_policy_free(p);
	sbx_backend_free(b);
	free(tt);
	return rc;
}
