/*
 * tests/unit/core/test_pool.c: unit tests of core/pool.c that need no real
 * engine: options versioning, argument validation and bounds (size 1..64,
 * max_age_ms 1000 ms..24 h, use_ms, a detached policy), the lifetime rule
 * (sandbox timeout >= max_age_ms + use_ms), a backend refusal at
 * sbx_pool_new() that creates nothing, and, on a scripted engine whose
 * creates fail, the top-up thread's failure counters and a take that
 * reports the create's error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "support/fake_engine.h"

#define SENTINEL ((void *)0x5b5b)

static void assert_error(int rc, int code, const char *word)
{
	const sbx_error *e = sbx_error_last();

	assert_int_equal(rc, code);
	assert_int_equal(e->code, code);
	if (word && !strstr(e->message, word))
		fail_msg("error message '%s' does not name '%s'", e->message, word);
}

static sbx_pool_options opts_ok(void)
{
	sbx_pool_options o = SBX_POOL_OPTIONS_INIT;

	o.size = 2;
	o.max_age_ms = 60000;
	return o;
}

static void test_core_pool__options_init(void **state)
{
	sbx_pool_options o;
	(void)state;

	memset(&o, 0xa5, sizeof(o));
	assert_int_equal(sbx_pool_options_init(&o, SBX_POOL_OPTIONS_VERSION), 0);
	assert_int_equal(o.version, SBX_POOL_OPTIONS_VERSION);
	assert_int_equal(o.size, 0);
	assert_int_equal(o.max_age_ms, 0);
	assert_int_equal(o.use_ms, 0);
	assert_error(sbx_pool_options_init(&o, 0), SBX_EVERSION, "version");
	assert_error(sbx_pool_options_init(&o, SBX_POOL_OPTIONS_VERSION + 1), SBX_EVERSION,
		     "version");
	assert_error(sbx_pool_options_init(NULL, 1), SBX_EINVALID, NULL);
}

/* Validation happens before the backend is touched: a sentinel stands in. */
static void test_core_pool__new_refuses_bad_arguments(void **state)
{
	sbx_backend *b = SENTINEL;
	sbx_pool_options o = opts_ok();
	sbx_policy *p = NULL;
	sbx_pool *pool = SENTINEL;
	(void)state;

	assert_int_equal(sbx_policy_new(&p), 0);
	assert_error(sbx_pool_new(NULL, b, p, &o), SBX_EINVALID, NULL);
	assert_error(sbx_pool_new(&pool, NULL, p, &o), SBX_EINVALID, NULL);
	assert_error(sbx_pool_new(&pool, b, NULL, &o), SBX_EINVALID, NULL);
	assert_error(sbx_pool_new(&pool, b, p, NULL), SBX_EINVALID, NULL);
	o.version = 0;
	assert_error(sbx_pool_new(&pool, b, p, &o), SBX_EVERSION, "version");
	o.version = SBX_POOL_OPTIONS_VERSION + 1;
	assert_error(sbx_pool_new(&pool, b, p, &o), SBX_EVERSION, "version");
	assert_ptr_equal(pool, SENTINEL);
	sbx_policy_free(p);
}

static void test_core_pool__new_bounds(void **state)
{
	static const unsigned int bad_sizes[] = {0, SBX_POOL_MAX_SIZE + 1, 1000, UINT32_MAX};
	static const uint64_t bad_ages[] = {0, 1, SBX_POOL_MIN_AGE_MS - 1,
					    (uint64_t)SBX_MAX_TIMEOUT_MS + 1, UINT64_MAX};
	sbx_backend *b = SENTINEL;
	sbx_pool_options o;
	sbx_policy *p = NULL;
	sbx_pool *pool = SENTINEL;
	(void)state;

	assert_int_equal(sbx_policy_new(&p), 0);
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		o = opts_ok();
		o.size = bad_sizes[i];
		assert_error(sbx_pool_new(&pool, b, p, &o), SBX_EINVALID, "size");
	}
	for (size_t i = 0; i < sizeof(bad_ages) / sizeof(bad_ages[0]); i++) {
		o = opts_ok();
		o.max_age_ms = bad_ages[i];
		assert_error(sbx_pool_new(&pool, b, p, &o), SBX_EINVALID, "max_age_ms");
	}
	o = opts_ok();
	o.use_ms = (uint64_t)SBX_MAX_TIMEOUT_MS + 1;
	assert_error(sbx_pool_new(&pool, b, p, &o), SBX_EINVALID, "use_ms");
	o = opts_ok();
	assert_int_equal(sbx_policy_set_detached(p, 1), 0);
	assert_error(sbx_pool_new(&pool, b, p, &o), SBX_EINVALID, "detached");
	assert_ptr_equal(pool, SENTINEL);
	sbx_policy_free(p);
}

static void test_core_pool__null_is_noop(void **state)
{
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};
	sbx_sandbox *s = SENTINEL;
	(void)state;

	assert_int_equal(sbx_pool_free(NULL), 0);
	assert_null(sbx_pool_id(NULL));
	assert_null(sbx_pool_policy(NULL));
	assert_error(sbx_pool_take(&s, NULL), SBX_EINVALID, NULL);
	assert_ptr_equal(s, SENTINEL);
	assert_error(sbx_pool_get_stats(NULL, &st), SBX_EINVALID, NULL);
}

/* A scripted engine: it answers /info, and every image is missing. */
static const struct fake_route routes[] = {
	{"GET", "/info", 200, "{}"},
	{"GET", "/images/", 404, "{\"message\":\"No such image\"}"},
	{"POST", "/containers/create", 500, "{\"message\":\"must not be called\"}"},
};

struct fx {
	struct fake_engine *fe;
	sbx_backend *b;
	sbx_policy *p;
};

static int fx_setup(void **state)
{
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	struct fx *f = calloc(1, sizeof(*f));
	char init[4096];

	if (!f || !getcwd(init, sizeof(init) - 32))
		return -1;
	strcat(init, "/build/sbx-init");
	f->fe = fake_engine_start(routes, 3);
	if (!f->fe)
		return -1;
	bo.socket_path = fake_engine_socket(f->fe);
	bo.init_path = init;
	bo.no_reap_at_open = 1;
	if (sbx_backend_open(&f->b, "docker", &bo) != 0) {
		fprintf(stderr, "open: %s\n", sbx_error_last()->message);
		return -1;
	}
	if (sbx_policy_new(&f->p) != 0 || sbx_policy_set_tenant(f->p, "unit-pool") != 0)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	fake_engine_stop(f->fe);
	free(f);
	return 0;
}

static void test_core_pool__lifetime_rule(void **state)
{
	struct fx *f = *state;
	sbx_pool_options o = opts_ok();
	sbx_pool *pool = SENTINEL;

	/* Defaults: sandbox 300 s, run 300 s: no room for any age. */
	assert_error(sbx_pool_new(&pool, f->b, f->p, &o), SBX_EINVALID, "max_age_ms");
	assert_ptr_equal(pool, SENTINEL);
	/* 60 s of age + 240 s of use fit in 300 s exactly. */
	o.use_ms = 240000;
	assert_int_equal(sbx_pool_new(&pool, f->b, f->p, &o), 0);
	assert_int_equal(sbx_pool_free(pool), 0);
	o.use_ms = 240001;
	pool = SENTINEL;
	assert_error(sbx_pool_new(&pool, f->b, f->p, &o), SBX_EINVALID, "use_ms");
	assert_ptr_equal(pool, SENTINEL);
	/* A longer sandbox timeout makes room for the default use (the run timeout). */
	assert_int_equal(sbx_policy_set_timeout_ms(f->p, SBX_TIMEOUT_SANDBOX, 360000), 0);
	o.use_ms = 0;
	assert_int_equal(sbx_pool_new(&pool, f->b, f->p, &o), 0);
	assert_int_equal(sbx_pool_free(pool), 0);
}

static void test_core_pool__backend_refusal_creates_nothing(void **state)
{
	struct fx *f = *state;
	sbx_pool_options o = opts_ok();
	sbx_pool *pool = SENTINEL;

	o.use_ms = 1000;
	assert_int_equal(sbx_policy_set_min_tier(f->p, SBX_TIER_MICROVM), 0);
	assert_error(sbx_pool_new(&pool, f->b, f->p, &o), SBX_EUNSUPPORTED, "microvm");
	assert_ptr_equal(pool, SENTINEL);
	assert_int_equal(fake_engine_count(f->fe, "GET", "/images/"), 0);
	assert_int_equal(fake_engine_count(f->fe, "POST", "/containers/create"), 0);
}

static void test_core_pool__failing_creates_are_counted(void **state)
{
	struct fx *f = *state;
	sbx_pool_options o = opts_ok();
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};
	sbx_sandbox *s = SENTINEL;
	sbx_pool *pool = NULL;

	o.use_ms = 1000;
	assert_int_equal(sbx_pool_new(&pool, f->b, f->p, &o), 0);
	assert_non_null(sbx_pool_id(pool));
	assert_true(strlen(sbx_pool_id(pool)) > 16);
	assert_string_equal(sbx_policy_tenant(sbx_pool_policy(pool)), "unit-pool");
	/* Hang guard: 120 s. */
	for (int i = 0; i < 12000; i++) {
		assert_int_equal(sbx_pool_get_stats(pool, &st), 0);
		if (st.create_failures)
			break;
		usleep(10000);
	}
	assert_true(st.create_failures >= 1);
	assert_int_equal(st.last_error, SBX_ENOTFOUND);
	assert_int_equal(st.idle, 0);
	/* Empty: the take creates on the spot and reports that create's error. */
	assert_error(sbx_pool_take(&s, pool), SBX_ENOTFOUND, NULL);
	assert_ptr_equal(s, SENTINEL);
	assert_int_equal(sbx_pool_get_stats(pool, &st), 0);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.taken, 0);
	st.version = 0;
	assert_error(sbx_pool_get_stats(pool, &st), SBX_EVERSION, "version");
	assert_int_equal(sbx_pool_free(pool), 0);
	assert_int_equal(fake_engine_count(f->fe, "POST", "/containers/create"), 0);
}

#define T(name) cmocka_unit_test(test_core_pool__##name)
#define TF(name) cmocka_unit_test_setup_teardown(test_core_pool__##name, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(options_init),
		T(new_refuses_bad_arguments),
		T(new_bounds),
		T(null_is_noop),
		TF(lifetime_rule),
		TF(backend_refusal_creates_nothing),
		TF(failing_creates_are_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
