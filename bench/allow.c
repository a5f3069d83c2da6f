/*
 * bench/allow.c: what an egress allowlist costs at create. N creates and
 * closes of a default sandbox (no network) against N of one allowed a
 * single CIDR, 198.18.0.0/15, which no run in it ever sends to (nothing
 * runs). The two alternate, so drift in the engine's speed hits both
 * alike. Prints the median create and close of each in milliseconds, and
 * the difference and ratio of the medians (allowlist over deny). Needs
 * root: the allowlist's link and rules are made on the host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static double median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* One create and close; their times in ms. */
static int once(sbx_backend *b, const sbx_policy *p, double *create, double *close)
{
	sbx_sandbox *s = NULL;
	double t0 = now_ms();

	if (sbx_sandbox_create(&s, b, p)) {
		fprintf(stderr, "bench: create: %s\n", sbx_error_last()->message);
		return -1;
	}
	*create = now_ms() - t0;
	t0 = now_ms();
	if (sbx_sandbox_close(s)) {
		fprintf(stderr, "bench: close: %s\n", sbx_error_last()->message);
		return -1;
	}
	*close = now_ms() - t0;
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	sbx_backend *b = NULL;
	sbx_policy *deny = NULL, *allow = NULL;
	double *t, *dc, *dx, *ac, *ax, md, ma;

	if (n < 1 || n > 10000 || !(t = calloc((size_t)n * 4, sizeof(double))))
		return 2;
	dc = t, dx = t + n, ac = t + 2 * n, ax = t + 3 * n;
	if (sbx_backend_open(&b, "docker", NULL) || sbx_policy_new(&deny) ||
	    sbx_policy_set_tenant(deny, "bench") || sbx_policy_dup(&allow, deny) ||
	    sbx_policy_allow_cidr(allow, "198.18.0.0/15", 0)) {
		fprintf(stderr, "bench: %s\n", sbx_error_last()->message);
		return 1;
	}
	/* One of each first, not counted: the image and the rules warm up. */
	if (once(b, deny, &dc[0], &dx[0]) || once(b, allow, &ac[0], &ax[0]))
		return 1;
	for (int i = 0; i < n; i++)
		if (once(b, deny, &dc[i], &dx[i]) || once(b, allow, &ac[i], &ax[i]))
			return 1;
	sbx_policy_free(allow);
	sbx_policy_free(deny);
	sbx_backend_free(b);
	md = median(dc, n);
	ma = median(ac, n);
	printf("(d) create, deny      %7.1f ms  (close %6.1f ms)\n", md, median(dx, n));
	printf("(d) create, allowlist %7.1f ms  (close %6.1f ms)\n", ma, median(ax, n));
	printf("(d) allowlist adds    %7.1f ms at create  ratio %.2f  (medians of %d each)\n",
	       ma - md, ma / md, n);
	free(t);
	return 0;
}
