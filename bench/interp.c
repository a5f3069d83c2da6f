/*
 * bench/interp.c: a trivial cell in a warm code context against a fresh
 * run_code, N of each in one live sandbox, printing the median, min and max
 * in milliseconds; then the same with pandas (imported once in the context,
 * on every fresh run_code). IMAGE (argv[2]) must have python3-pandas (the
 * default image does).
 *
 *	cc -O2 -Iinclude -o build/bench-interp bench/interp.c build/libsandboxio.a \
 *		$(pkg-config --libs libcurl jansson libnl-3.0 libnl-route-3.0 libnftables \
 *		libprotobuf-c) -lpthread
 *	SANDBOXIO_INIT=$PWD/build/sbx-init build/bench-interp 20
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%-34s median %8.1f ms  min %8.1f  max %8.1f  (n=%d)\n", what, t[n / 2], t[0],
	       t[n - 1], n);
}

static int cells(sbx_context *c, const char *code, double *t, int n)
{
	for (int i = 0; i < n; i++) {
		sbx_code_result *r = NULL;
		double t0 = now_ms();

		if (sbx_context_run(&r, c, code, strlen(code), NULL) != 0 ||
		    r->status != SBX_CODE_OK)
			return -1;
		t[i] = now_ms() - t0;
		sbx_code_result_free(r);
	}
	return 0;
}

static int fresh(sbx_sandbox *s, const char *code, double *t, int n)
{
	for (int i = 0; i < n; i++) {
		sbx_result *r = NULL;
		double t0 = now_ms();

		if (sbx_sandbox_run_code(&r, s, "python", code, strlen(code), NULL) != 0 ||
		    r->exit_code != 0)
			return -1;
		t[i] = now_ms() - t0;
		sbx_result_free(r);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	sbx_context *c = NULL;
	sbx_code_result *r = NULL;
	double *t;
	int rc = 1;

	if (n < 1 || n > 10000 || !(t = calloc((size_t)n, sizeof(double))))
		return 2;
	if (sbx_backend_open(&b, "docker", NULL) != 0 || sbx_policy_new(&p) != 0 ||
	    sbx_policy_set_tenant(p, "bench-interp") != 0 ||
	    (argc > 2 && sbx_policy_set_image(p, argv[2]) != 0) ||
	    sbx_sandbox_create(&s, b, p) != 0 || sbx_context_create(&c, s, NULL) != 0 ||
	    sbx_context_run(&r, c, "1", 1, NULL) != 0)
		goto fail;
	sbx_code_result_free(r);
	if (cells(c, "1 + 1", t, n) < 0)
		goto fail;
	report("warm context: 1 + 1", t, n);
	if (fresh(s, "print(1 + 1)", t, n) < 0)
		goto fail;
	report("fresh run_code: print(1 + 1)", t, n);
	if (sbx_context_run(&r, c, "import pandas as pd", 19, NULL) != 0)
		goto fail;
	sbx_code_result_free(r);
	if (cells(c, "pd.DataFrame({'a': [1, 2]}).a.sum()", t, n) < 0)
		goto fail;
	report("warm context: pandas sum", t, n);
	if (fresh(s, "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2]}).a.sum())", t, n) < 0)
		goto fail;
	report("fresh run_code: import pandas, sum", t, n);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "bench-interp: %s\n", sbx_error_last()->message);
out:
	sbx_context_close(c);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
	free(t);
	return rc;
}
