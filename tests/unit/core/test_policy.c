/*
 * tests/unit/core/test_policy.c: unit tests of core/policy.c, the policy
 * object and the size and duration parsers.
 *
 * Covers the documented defaults, every "refused and left unchanged" rule of
 * the setters (0, negative, below the floor, above the ceiling, unknown
 * kinds) together with the error message naming what was refused, the image,
 * tenant, environment and working-directory validators, tiers, deep copies,
 * and the accepted and rejected spellings of sbx_parse_size() and
 * sbx_parse_duration_ms().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/policy-int.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const sbx_timeout_kind timeout_kinds[] = {
	SBX_TIMEOUT_CREATE,
	SBX_TIMEOUT_RUN,
	SBX_TIMEOUT_RUN_CODE,
	SBX_TIMEOUT_SANDBOX,
};

/* How each timeout kind is named in error messages. */
static const char *const timeout_words[] = {
	[SBX_TIMEOUT_CREATE] = "create timeout",
	[SBX_TIMEOUT_RUN] = "run timeout",
	[SBX_TIMEOUT_RUN_CODE] = "run_code timeout",
	[SBX_TIMEOUT_SANDBOX] = "sandbox timeout",
};

static const struct {
	sbx_limit_kind kind;
	const char *word; /* how the limit is named in error messages */
	int64_t def, min, max;
} limit_table[] = {
	{SBX_LIMIT_CPU_MILLI, "cpu", 1000, SBX_MIN_CPU_MILLI, SBX_MAX_CPU_MILLI},
	{SBX_LIMIT_MEMORY, "memory", 512ll << 20, SBX_MIN_MEMORY, SBX_MAX_MEMORY},
	{SBX_LIMIT_PIDS, "pids", 256, SBX_MIN_PIDS, SBX_MAX_PIDS},
	{SBX_LIMIT_DISK, "disk", 1ll << 30, SBX_MIN_DISK, SBX_MAX_DISK},
	{SBX_LIMIT_NOFILE, "nofile", 1024, SBX_MIN_NOFILE, SBX_MAX_NOFILE},
	{SBX_LIMIT_OUTPUT, "output", 16ll << 20, SBX_MIN_OUTPUT, SBX_MAX_OUTPUT},
};

static int setup(void **state)
{
	sbx_policy *p = NULL;

	assert_int_equal(sbx_policy_new(&p), 0);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	sbx_policy_free(*state);
	return 0;
}

/* Every field of a and b holds the same value. */
static void assert_policy_equal(const sbx_policy *a, const sbx_policy *b)
{
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++)
		assert_int_equal(a->timeout_ms[k], b->timeout_ms[k]);
	for (int k = SBX_LIMIT_CPU_MILLI; k <= SBX_LIMIT_OUTPUT; k++)
		assert_int_equal(a->limit[k], b->limit[k]);
	assert_string_equal(a->image, b->image);
	assert_string_equal(a->tenant, b->tenant);
	assert_string_equal(a->workdir, b->workdir);
	assert_int_equal(a->min_tier, b->min_tier);
	assert_int_equal(a->env_n, b->env_n);
	for (size_t i = 0; i < a->env_n; i++)
		assert_string_equal(a->env[i], b->env[i]);
}

/* A copy of p to compare against after a refused call. */
static sbx_policy *snapshot(const sbx_policy *p)
{
	sbx_policy *s = NULL;

	assert_int_equal(sbx_policy_dup(&s, p), 0);
	return s;
}

/* The last error is SBX_EINVALID and its message contains word. */
static void assert_refused_naming(int rc, const char *word)
{
	const sbx_error *e = sbx_error_last();

	assert_int_equal(rc, SBX_EINVALID);
	assert_int_equal(e->code, SBX_EINVALID);
	assert_int_equal(e->klass, SBX_ERRCLASS_POLICY);
	if (!strstr(e->message, word))
		fail_msg("error message '%s' does not name '%s'", e->message, word);
}

/* ===== Defaults ===== */

static void test_core_policy__defaults(void **state)
{
	const sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(timeout_kinds); i++)
		assert_int_equal(sbx_policy_timeout_ms(p, timeout_kinds[i]), 300000);
	assert_int_equal(SBX_DEFAULT_TIMEOUT_MS, 300000);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_CPU_MILLI), 1000);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_MEMORY), 536870912);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_PIDS), 256);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_DISK), 1073741824);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_NOFILE), 1024);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_OUTPUT), 16777216);
	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++)
		assert_int_equal(sbx_policy_limit(p, limit_table[i].kind), limit_table[i].def);
	assert_string_equal(sbx_policy_image(p), "sandboxio/python:3.11");
	assert_string_equal(sbx_policy_tenant(p), "default");
	assert_string_equal(sbx_policy_workdir(p), "/workspace");
	assert_int_equal(sbx_policy_min_tier(p), SBX_TIER_CONTAINER);
	assert_int_equal(p->env_n, 0);
}

static void test_core_policy__new_null_out_refused(void **state)
{
	(void)state;
	assert_int_equal(sbx_policy_new(NULL), SBX_EINVALID);
	assert_int_equal(sbx_error_last()->code, SBX_EINVALID);
}

static void test_core_policy__free_null_is_noop(void **state)
{
	(void)state;
	sbx_policy_free(NULL);
}

/* ===== Timeouts ===== */

static void test_core_policy__timeout_bounds_accepted(void **state)
{
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(timeout_kinds); i++) {
		sbx_timeout_kind k = timeout_kinds[i];

		assert_int_equal(sbx_policy_set_timeout_ms(p, k, 1), 0);
		assert_int_equal(sbx_policy_timeout_ms(p, k), 1);
		assert_int_equal(sbx_policy_set_timeout_ms(p, k, SBX_MAX_TIMEOUT_MS), 0);
		assert_int_equal(sbx_policy_timeout_ms(p, k), 24ull * 3600 * 1000);
		assert_int_equal(sbx_policy_set_timeout_ms(p, k, 1234 + i), 0);
	}
	/* Each kind is its own field. */
	for (size_t i = 0; i < ARRAY_LEN(timeout_kinds); i++)
		assert_int_equal(sbx_policy_timeout_ms(p, timeout_kinds[i]), 1234 + i);
}

static void test_core_policy__zero_timeout_refused(void **state)
{
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, 4321), 0);
	for (size_t i = 0; i < ARRAY_LEN(timeout_kinds); i++) {
		sbx_timeout_kind k = timeout_kinds[i];
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_timeout_ms(p, k, 0), timeout_words[k]);
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
	assert_int_equal(sbx_policy_timeout_ms(p, SBX_TIMEOUT_RUN), 4321);
}

static void test_core_policy__timeout_above_24h_refused(void **state)
{
	static const uint64_t bad[] = {SBX_MAX_TIMEOUT_MS + 1ull, 25ull * 3600 * 1000, UINT64_MAX};
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(timeout_kinds); i++) {
		for (size_t j = 0; j < ARRAY_LEN(bad); j++) {
			sbx_timeout_kind k = timeout_kinds[i];
			sbx_policy *before = snapshot(p);

			assert_refused_naming(sbx_policy_set_timeout_ms(p, k, bad[j]),
					      timeout_words[k]);
			assert_policy_equal(p, before);
			sbx_policy_free(before);
		}
	}
}

static void test_core_policy__unknown_timeout_kind_refused(void **state)
{
	static const unsigned int kinds[] = {SBX_TIMEOUT_INVALID, SBX_TIMEOUT_SANDBOX + 1, 99,
					     (unsigned int)-1};
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
		sbx_timeout_kind k = (sbx_timeout_kind)kinds[i];
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_timeout_ms(p, k, 1000), "timeout kind");
		assert_policy_equal(p, before);
		assert_int_equal(sbx_policy_timeout_ms(p, k), 0);
		sbx_policy_free(before);
	}
}

static void test_core_policy__timeout_null_policy_refused(void **state)
{
	(void)state;
	assert_int_equal(sbx_policy_set_timeout_ms(NULL, SBX_TIMEOUT_RUN, 1000), SBX_EINVALID);
	assert_int_equal(sbx_policy_timeout_ms(NULL, SBX_TIMEOUT_RUN), 0);
}

/* ===== Limits ===== */

static void test_core_policy__limit_bounds_accepted(void **state)
{
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++) {
		sbx_limit_kind k = limit_table[i].kind;

		assert_int_equal(sbx_policy_set_limit(p, k, limit_table[i].min), 0);
		assert_int_equal(sbx_policy_limit(p, k), limit_table[i].min);
		assert_int_equal(sbx_policy_set_limit(p, k, limit_table[i].max), 0);
		assert_int_equal(sbx_policy_limit(p, k), limit_table[i].max);
		assert_int_equal(sbx_policy_set_limit(p, k, limit_table[i].def), 0);
		assert_int_equal(sbx_policy_limit(p, k), limit_table[i].def);
	}
}

static void test_core_policy__limit_setters_are_independent(void **state)
{
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 100), 0);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_PIDS), 100);
	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++)
		if (limit_table[i].kind != SBX_LIMIT_PIDS)
			assert_int_equal(sbx_policy_limit(p, limit_table[i].kind),
					 limit_table[i].def);
}

static void refuse_limit_values(sbx_policy *p, size_t i, const int64_t *vals, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_limit(p, limit_table[i].kind, vals[j]),
				      limit_table[i].word);
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
}

static void test_core_policy__zero_limit_refused(void **state)
{
	static const int64_t zero[] = {0};

	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++)
		refuse_limit_values(*state, i, zero, 1);
}

static void test_core_policy__negative_limit_refused(void **state)
{
	static const int64_t neg[] = {-1, -1024, INT64_MIN};

	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++)
		refuse_limit_values(*state, i, neg, ARRAY_LEN(neg));
}

static void test_core_policy__limit_below_min_refused(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++) {
		int64_t v[] = {limit_table[i].min - 1, 1};

		refuse_limit_values(*state, i, v, ARRAY_LEN(v));
	}
}

static void test_core_policy__limit_above_max_refused(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(limit_table); i++) {
		int64_t v[] = {limit_table[i].max + 1, INT64_MAX};

		refuse_limit_values(*state, i, v, ARRAY_LEN(v));
	}
}

static void test_core_policy__unknown_limit_kind_refused(void **state)
{
	static const unsigned int kinds[] = {SBX_LIMIT_INVALID, SBX_LIMIT_OUTPUT + 1, 99,
					     (unsigned int)-1};
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
		sbx_limit_kind k = (sbx_limit_kind)kinds[i];
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_limit(p, k, 1024), "limit kind");
		assert_policy_equal(p, before);
		assert_int_equal(sbx_policy_limit(p, k), 0);
		sbx_policy_free(before);
	}
}

static void test_core_policy__limit_null_policy_refused(void **state)
{
	(void)state;
	assert_int_equal(sbx_policy_set_limit(NULL, SBX_LIMIT_PIDS, 100), SBX_EINVALID);
	assert_int_equal(sbx_policy_limit(NULL, SBX_LIMIT_PIDS), 0);
}

/* ===== Image ===== */

static void test_core_policy__image_valid_refs(void **state)
{
	static const char *const ok[] = {
		"sandboxio/python:3.11",
		"registry.local:5000/a/b@sha256:abc",
		"a",
		"Ubuntu_22.04",
	};
	char longest[256];
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
		assert_int_equal(sbx_policy_set_image(p, ok[i]), 0);
		assert_string_equal(sbx_policy_image(p), ok[i]);
	}
	memset(longest, 'a', 255);
	longest[255] = '\0';
	assert_int_equal(sbx_policy_set_image(p, longest), 0);
	assert_string_equal(sbx_policy_image(p), longest);
}

static void test_core_policy__image_invalid_refs_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"sandboxio/python 3.11",
		"bad image!",
		"-leading-dash",
		"sandboxio/python:3.11\n",
		"a\tb",
		"a$b",
		"a\\b",
		"caf\xc3\xa9",
	};
	char too_long[257];
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_image(p, "registry.local:5000/a/b@sha256:abc"), 0);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_image(p, bad[i]), "image reference");
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
	memset(too_long, 'a', 256);
	too_long[256] = '\0';
	assert_refused_naming(sbx_policy_set_image(p, too_long), "image reference");
	assert_string_equal(sbx_policy_image(p), "registry.local:5000/a/b@sha256:abc");
	assert_int_equal(sbx_policy_set_image(p, NULL), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_image(NULL, "a"), SBX_EINVALID);
	assert_string_equal(sbx_policy_image(p), "registry.local:5000/a/b@sha256:abc");
}

static void test_core_policy__image_is_copied(void **state)
{
	char ref[] = "sandboxio/python:3.12";
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_image(p, ref), 0);
	assert_ptr_not_equal(sbx_policy_image(p), ref);
	ref[0] = 'X';
	assert_string_equal(sbx_policy_image(p), "sandboxio/python:3.12");
}

/* ===== Tenant ===== */

static void test_core_policy__tenant_valid(void **state)
{
	static const char *const ok[] = {"a", "Z", "9", "team-a.prod_eu", "._-"};
	char longest[64];
	sbx_policy *p = *state;

	for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
		assert_int_equal(sbx_policy_set_tenant(p, ok[i]), 0);
		assert_string_equal(sbx_policy_tenant(p), ok[i]);
	}
	memset(longest, 'T', 63);
	longest[63] = '\0';
	assert_int_equal(sbx_policy_set_tenant(p, longest), 0);
	assert_string_equal(sbx_policy_tenant(p), longest);
}

static void test_core_policy__tenant_invalid_refused(void **state)
{
	static const char *const bad[] = {
		"", "a b", "a/b", "a:b", "a@b", "a\n", "ten\xc3\xa4nt", "a=b",
	};
	char too_long[65];
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_tenant(p, "acme"), 0);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_tenant(p, bad[i]), "tenant id");
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
	memset(too_long, 'T', 64);
	too_long[64] = '\0';
	assert_refused_naming(sbx_policy_set_tenant(p, too_long), "tenant id");
	assert_int_equal(sbx_policy_set_tenant(p, NULL), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_tenant(NULL, "a"), SBX_EINVALID);
	assert_string_equal(sbx_policy_tenant(p), "acme");
}

/* ===== Environment ===== */

static void test_core_policy__env_valid_names(void **state)
{
	static const char *const names[] = {"A", "_", "_x1", "PATH", "a_B_9"};
	sbx_policy *p = *state;
	char want[32];

	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		assert_int_equal(sbx_policy_set_env(p, names[i], "v"), 0);
	assert_int_equal(p->env_n, ARRAY_LEN(names));
	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		snprintf(want, sizeof(want), "%s=v", names[i]);
		assert_string_equal(p->env[i], want);
	}
	/* Values are free-form, empty included. */
	assert_int_equal(sbx_policy_set_env(p, "EMPTY", ""), 0);
	assert_int_equal(sbx_policy_set_env(p, "EQ", "a=b c"), 0);
	assert_string_equal(p->env[p->env_n - 2], "EMPTY=");
	assert_string_equal(p->env[p->env_n - 1], "EQ=a=b c");
}

static void test_core_policy__env_invalid_names_refused(void **state)
{
	static const char *const bad[] = {"", "1A", "A-B", "A=B", "A B", "A.B", "\xc3\x84", "$A"};
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_env(p, "KEEP", "1"), 0);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_env(p, bad[i], "x"), "environment name");
		if (*bad[i])
			assert_non_null(strstr(sbx_error_last()->message, bad[i]));
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
	assert_int_equal(sbx_policy_set_env(p, NULL, "x"), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_env(p, "A", NULL), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_env(NULL, "A", "x"), SBX_EINVALID);
	assert_int_equal(p->env_n, 1);
}

static void test_core_policy__env_repeated_name_replaces(void **state)
{
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_env(p, "A", "1"), 0);
	assert_int_equal(sbx_policy_set_env(p, "AB", "2"), 0);
	assert_int_equal(sbx_policy_set_env(p, "B", "3"), 0);
	assert_int_equal(sbx_policy_set_env(p, "A", "4"), 0);
	assert_int_equal(sbx_policy_set_env(p, "AB", ""), 0);
	assert_int_equal(p->env_n, 3);
	assert_string_equal(p->env[0], "A=4");
	assert_string_equal(p->env[1], "AB=");
	assert_string_equal(p->env[2], "B=3");
}

static void test_core_policy__env_count_bound(void **state)
{
	sbx_policy *p = *state;
	sbx_policy *before;
	char name[16];

	for (int i = 0; i < SBX_MAX_ENV; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		assert_int_equal(sbx_policy_set_env(p, name, "x"), 0);
	}
	assert_int_equal(p->env_n, SBX_MAX_ENV);
	before = snapshot(p);
	assert_int_equal(sbx_policy_set_env(p, "ONE_MORE", "x"), SBX_ETOOBIG);
	assert_policy_equal(p, before);
	sbx_policy_free(before);
	/* Replacing a name that is already there is still possible. */
	assert_int_equal(sbx_policy_set_env(p, "V7", "y"), 0);
	assert_int_equal(p->env_n, SBX_MAX_ENV);
	assert_string_equal(p->env[7], "V7=y");
}

static void test_core_policy__env_byte_bound(void **state)
{
	sbx_policy *p = *state;
	sbx_policy *before;
	char *big = malloc(SBX_MAX_ENV_BYTES + 1);

	assert_non_null(big);
	memset(big, 'x', SBX_MAX_ENV_BYTES);
	big[SBX_MAX_ENV_BYTES] = '\0';
	assert_int_equal(sbx_policy_set_env(p, "SMALL", "1"), 0);
	before = snapshot(p);
	assert_int_equal(sbx_policy_set_env(p, "BIG", big), SBX_ETOOBIG);
	assert_policy_equal(p, before);
	sbx_policy_free(before);
	free(big);
}

/* Replacing a value cannot grow the environment past its byte bound either. */
static void test_core_policy__env_replacement_respects_byte_bound(void **state)
{
	sbx_policy *p = *state;
	sbx_policy *before;
	char *big;

	big = malloc(SBX_MAX_ENV_BYTES + 1);
	assert_non_null(big);
	memset(big, 'x', SBX_MAX_ENV_BYTES);
	big[SBX_MAX_ENV_BYTES] = '\0';
	assert_int_equal(sbx_policy_set_env(p, "SMALL", "1"), 0);
	before = snapshot(p);
	assert_int_equal(sbx_policy_set_env(p, "SMALL", big), SBX_ETOOBIG);
	assert_policy_equal(p, before);
	sbx_policy_free(before);
	free(big);
}

/* ===== Working directory ===== */

static void test_core_policy__workdir_valid(void **state)
{
	static const char *const ok[] = {
		"/", "/workspace", "/tmp/x", "/a/...", "/a/..b", "/a/b..", "/a/./b", "/a b/c",
	};
	sbx_policy *p = *state;
	char *longest = malloc(4096);

	for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
		assert_int_equal(sbx_policy_set_workdir(p, ok[i]), 0);
		assert_string_equal(sbx_policy_workdir(p), ok[i]);
	}
	assert_non_null(longest);
	memset(longest, 'd', 4095);
	longest[0] = '/';
	longest[4095] = '\0';
	assert_int_equal(sbx_policy_set_workdir(p, longest), 0);
	free(longest);
}

static void test_core_policy__workdir_invalid_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"workspace",
		"./workspace",
		"/..",
		"/../etc",
		"/a/..",
		"/a/../b",
		"/a/b/../../..",
		"/work\nspace",
		"/work\tspace",
		"/work\rspace",
		"/work\x1bspace",
		"/work\x7fspace",
	};
	sbx_policy *p = *state;
	char *too_long = malloc(4097);

	assert_int_equal(sbx_policy_set_workdir(p, "/home/sandbox"), 0);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_workdir(p, bad[i]), "working directory");
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
	assert_non_null(too_long);
	memset(too_long, 'd', 4096);
	too_long[0] = '/';
	too_long[4096] = '\0';
	assert_refused_naming(sbx_policy_set_workdir(p, too_long), "working directory");
	free(too_long);
	assert_int_equal(sbx_policy_set_workdir(p, NULL), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_workdir(NULL, "/a"), SBX_EINVALID);
	assert_string_equal(sbx_policy_workdir(p), "/home/sandbox");
}

/* ===== Tiers ===== */

static void test_core_policy__tier_names_round_trip(void **state)
{
	static const struct {
		sbx_tier tier;
		const char *name;
	} tiers[] = {
		{SBX_TIER_CONTAINER, "container"},
		{SBX_TIER_GVISOR, "gvisor"},
		{SBX_TIER_MICROVM, "microvm"},
	};
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(tiers); i++) {
		sbx_tier t = (sbx_tier)99;

		assert_string_equal(sbx_tier_name(tiers[i].tier), tiers[i].name);
		assert_int_equal(sbx_tier_parse(&t, tiers[i].name), 0);
		assert_int_equal(t, tiers[i].tier);
	}
	assert_null(sbx_tier_name((sbx_tier)3));
	assert_null(sbx_tier_name((sbx_tier)99));
	assert_null(sbx_tier_name((sbx_tier)-1));
}

static void test_core_policy__tier_parse_unknown_refused(void **state)
{
	static const char *const bad[] = {"", "vm", "Container", "GVISOR", "container ", "runc"};
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		sbx_tier t = SBX_TIER_GVISOR;

		assert_refused_naming(sbx_tier_parse(&t, bad[i]), "isolation tier");
		assert_non_null(strstr(sbx_error_last()->message, bad[i]));
		assert_int_equal(t, SBX_TIER_GVISOR);
	}
	assert_int_equal(sbx_tier_parse(NULL, "container"), SBX_EINVALID);
	{
		sbx_tier t = SBX_TIER_MICROVM;

		assert_int_equal(sbx_tier_parse(&t, NULL), SBX_EINVALID);
		assert_int_equal(t, SBX_TIER_MICROVM);
	}
}

static void test_core_policy__min_tier_set(void **state)
{
	static const unsigned int bad[] = {3, 99, (unsigned int)-1};
	sbx_policy *p = *state;

	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_MICROVM), 0);
	assert_int_equal(sbx_policy_min_tier(p), SBX_TIER_MICROVM);
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_CONTAINER), 0);
	assert_int_equal(sbx_policy_min_tier(p), SBX_TIER_CONTAINER);
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_GVISOR), 0);
	assert_int_equal(sbx_policy_min_tier(p), SBX_TIER_GVISOR);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		sbx_policy *before = snapshot(p);

		assert_refused_naming(sbx_policy_set_min_tier(p, (sbx_tier)bad[i]), "tier");
		assert_policy_equal(p, before);
		sbx_policy_free(before);
	}
	assert_int_equal(sbx_policy_set_min_tier(NULL, SBX_TIER_GVISOR), SBX_EINVALID);
}

/* ===== Copies ===== */

static void test_core_policy__dup_copies_deeply(void **state)
{
	sbx_policy *p = *state;
	sbx_policy *c = NULL;

	assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, 1111), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 64), 0);
	assert_int_equal(sbx_policy_set_image(p, "img:1"), 0);
	assert_int_equal(sbx_policy_set_tenant(p, "orig"), 0);
	assert_int_equal(sbx_policy_set_workdir(p, "/orig"), 0);
	assert_int_equal(sbx_policy_set_env(p, "A", "1"), 0);
	assert_int_equal(sbx_policy_set_env(p, "B", "2"), 0);
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_GVISOR), 0);

	assert_int_equal(sbx_policy_dup(&c, p), 0);
	assert_non_null(c);
	assert_ptr_not_equal(c, p);
	assert_policy_equal(c, p);
	assert_ptr_not_equal(c->image, p->image);
	assert_ptr_not_equal(c->tenant, p->tenant);
	assert_ptr_not_equal(c->workdir, p->workdir);
	assert_ptr_not_equal(c->env, p->env);
	for (size_t i = 0; i < p->env_n; i++)
		assert_ptr_not_equal(c->env[i], p->env[i]);

	assert_int_equal(sbx_policy_set_timeout_ms(c, SBX_TIMEOUT_RUN, 2222), 0);
	assert_int_equal(sbx_policy_set_timeout_ms(c, SBX_TIMEOUT_SANDBOX, 3333), 0);
	assert_int_equal(sbx_policy_set_limit(c, SBX_LIMIT_PIDS, 128), 0);
	assert_int_equal(sbx_policy_set_limit(c, SBX_LIMIT_MEMORY, 1ll << 30), 0);
	assert_int_equal(sbx_policy_set_image(c, "img:2"), 0);
	assert_int_equal(sbx_policy_set_tenant(c, "copy"), 0);
	assert_int_equal(sbx_policy_set_workdir(c, "/copy"), 0);
	assert_int_equal(sbx_policy_set_env(c, "A", "changed"), 0);
	assert_int_equal(sbx_policy_set_env(c, "C", "3"), 0);
	assert_int_equal(sbx_policy_set_min_tier(c, SBX_TIER_MICROVM), 0);
	c->env[1][0] = 'Z'; /* even a write through the copy's own storage */

	assert_int_equal(sbx_policy_timeout_ms(p, SBX_TIMEOUT_RUN), 1111);
	assert_int_equal(sbx_policy_timeout_ms(p, SBX_TIMEOUT_SANDBOX), 300000);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_PIDS), 64);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_MEMORY), 512ll << 20);
	assert_string_equal(sbx_policy_image(p), "img:1");
	assert_string_equal(sbx_policy_tenant(p), "orig");
	assert_string_equal(sbx_policy_workdir(p), "/orig");
	assert_int_equal(sbx_policy_min_tier(p), SBX_TIER_GVISOR);
	assert_int_equal(p->env_n, 2);
	assert_string_equal(p->env[0], "A=1");
	assert_string_equal(p->env[1], "B=2");

	/* The original outlives its copy, and the copy outlives the original. */
	sbx_policy_free(c);
	assert_string_equal(sbx_policy_image(p), "img:1");
	assert_int_equal(sbx_policy_dup(&c, p), 0);
	sbx_policy_free(p);
	*state = NULL;
	assert_string_equal(sbx_policy_image(c), "img:1");
	assert_string_equal(c->env[1], "B=2");
	sbx_policy_free(c);
}

static void test_core_policy__dup_of_defaults(void **state)
{
	sbx_policy *c = NULL;

	assert_int_equal(sbx_policy_dup(&c, *state), 0);
	assert_policy_equal(c, *state);
	assert_int_equal(c->env_n, 0);
	sbx_policy_free(c);
}

static void test_core_policy__dup_null_refused(void **state)
{
	sbx_policy *c = (sbx_policy *)state; /* any non-NULL sentinel */

	assert_int_equal(sbx_policy_dup(&c, NULL), SBX_EINVALID);
	assert_ptr_equal(c, (sbx_policy *)state);
	assert_int_equal(sbx_policy_dup(NULL, *state), SBX_EINVALID);
}

/* ===== sbx_parse_size ===== */

static void test_core_policy__parse_size_accepted(void **state)
{
	static const struct {
		const char *text;
		int64_t want;
	} ok[] = {
		{"512m", 536870912},
		{"1g", 1073741824},
		{"1G", 1073741824},
		{"64k", 65536},
		{"64K", 65536},
		{"1024", 1024},
		{"1048576", 1048576},
		{"2gib", 2147483648ll},
		{"2GiB", 2147483648ll},
		{"3mb", 3145728},
		{"3MB", 3145728},
		{"7b", 7},
		{"007k", 7168},
		{"9223372036854775807", INT64_MAX},
		{"8589934591g", 8589934591ll << 30},
	};
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
		int64_t v = -1;

		if (sbx_parse_size(&v, ok[i].text) != 0)
			fail_msg("'%s' refused: %s", ok[i].text, sbx_error_last()->message);
		assert_int_equal(v, ok[i].want);
	}
}

/* The parser accepts "0" as a size; it is the setter that refuses it. */
static void test_core_policy__parse_size_zero_parses_setter_refuses(void **state)
{
	sbx_policy *p = *state;
	int64_t v = -1;

	assert_int_equal(sbx_parse_size(&v, "0"), 0);
	assert_int_equal(v, 0);
	assert_int_equal(sbx_parse_size(&v, "0g"), 0);
	assert_int_equal(v, 0);
	assert_refused_naming(sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, v), "memory");
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_MEMORY), 512ll << 20);
}

static void test_core_policy__parse_size_rejected(void **state)
{
	static const char *const bad[] = {
		"",
		"-1",
		"+1",
		"1.5g",
		"12q",
		"g",
		" 1g",
		"1g ",
		"1 g",
		"99999999999999999999",
		"18446744073709551615",
		"9223372036854775808",
		"9000000000g",
		"8589934592g",
		"1ib",
		"1bb",
		"1gg",
		"1gibb",
		"0x10",
		"1e3",
	};
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		int64_t v = 42;

		if (sbx_parse_size(&v, bad[i]) != SBX_EINVALID)
			fail_msg("'%s' was not refused", bad[i]);
		assert_int_equal(v, 42);
		assert_int_equal(sbx_error_last()->code, SBX_EINVALID);
		assert_true(sbx_error_last()->message[0] != '\0');
	}
	{
		int64_t v = 42;

		assert_int_equal(sbx_parse_size(&v, NULL), SBX_EINVALID);
		assert_int_equal(v, 42);
		assert_int_equal(sbx_parse_size(NULL, "1g"), SBX_EINVALID);
	}
}

/* ===== sbx_parse_duration_ms ===== */

static void test_core_policy__parse_duration_accepted(void **state)
{
	static const struct {
		const char *text;
		uint64_t want;
	} ok[] = {
		{"300", 300000},   {"1.5", 1500},    {"90s", 90000},	  {"5m", 300000},
		{"2h", 7200000},   {"250ms", 250},   {"0.5", 500},	  {"1.25s", 1250},
		{"0.001", 1},	   {"1.5m", 90000},  {"86400", 86400000}, {"1ms", 1},
		{"0.5h", 1800000}, {"1.2345", 1234},
	};
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
		uint64_t v = 0;

		if (sbx_parse_duration_ms(&v, ok[i].text) != 0)
			fail_msg("'%s' refused: %s", ok[i].text, sbx_error_last()->message);
		assert_int_equal(v, ok[i].want);
	}
}

static void test_core_policy__parse_duration_rejected(void **state)
{
	static const char *const bad[] = {
		"0",
		"0.0",
		"0s",
		"0ms",
		"0.0001",
		"",
		"-5",
		"+5",
		"abc",
		"5x",
		"1.",
		".5",
		" 5",
		"5 ",
		"5sec",
		"5mm",
		"1.5.2",
		"99999999999999999999",
		"99999999999999999999h",
	};
	(void)state;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		uint64_t v = 42;

		if (sbx_parse_duration_ms(&v, bad[i]) != SBX_EINVALID)
			fail_msg("'%s' was not refused (got %llu)", bad[i], (unsigned long long)v);
		assert_int_equal(v, 42);
		assert_int_equal(sbx_error_last()->code, SBX_EINVALID);
	}
	{
		uint64_t v = 42;

		assert_int_equal(sbx_parse_duration_ms(&v, NULL), SBX_EINVALID);
		assert_int_equal(v, 42);
		assert_int_equal(sbx_parse_duration_ms(NULL, "5"), SBX_EINVALID);
	}
}

/* A parsed duration still meets the setter's ceiling. */
static void test_core_policy__parse_duration_then_setter_ceiling(void **state)
{
	sbx_policy *p = *state;
	uint64_t v = 0;

	assert_int_equal(sbx_parse_duration_ms(&v, "24h"), 0);
	assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, v), 0);
	assert_int_equal(sbx_parse_duration_ms(&v, "25h"), 0);
	assert_refused_naming(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, v),
			      "sandbox timeout");
	assert_int_equal(sbx_policy_timeout_ms(p, SBX_TIMEOUT_SANDBOX), SBX_MAX_TIMEOUT_MS);
}

#define T(name) cmocka_unit_test_setup_teardown(test_core_policy__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(defaults),
		T(new_null_out_refused),
		T(free_null_is_noop),
		T(timeout_bounds_accepted),
		T(zero_timeout_refused),
		T(timeout_above_24h_refused),
		T(unknown_timeout_kind_refused),
		T(timeout_null_policy_refused),
		T(limit_bounds_accepted),
		T(limit_setters_are_independent),
		T(zero_limit_refused),
		T(negative_limit_refused),
		T(limit_below_min_refused),
		T(limit_above_max_refused),
		T(unknown_limit_kind_refused),
		T(limit_null_policy_refused),
		T(image_valid_refs),
		T(image_invalid_refs_refused),
		T(image_is_copied),
		T(tenant_valid),
		T(tenant_invalid_refused),
		T(env_valid_names),
		T(env_invalid_names_refused),
		T(env_repeated_name_replaces),
		T(env_count_bound),
		T(env_byte_bound),
		T(env_replacement_respects_byte_bound),
		T(workdir_valid),
		T(workdir_invalid_refused),
		T(tier_names_round_trip),
		T(tier_parse_unknown_refused),
		T(min_tier_set),
		T(dup_copies_deeply),
		T(dup_of_defaults),
		T(dup_null_refused),
		T(parse_size_accepted),
		T(parse_size_zero_parses_setter_refuses),
		T(parse_size_rejected),
		T(parse_duration_accepted),
		T(parse_duration_rejected),
		T(parse_duration_then_setter_ceiling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
