/*
 * tests/unit/core/test_limit_kinds.c: the table of limit kinds
 * (core/limit-kinds.c) against the words each place has always used.
 *
 * Every word in the table is read back by someone: the Engine label by
 * sandboxes made earlier, the audit keys and hit names by log readers, the
 * span attributes by trace backends, the config keys by operators' files,
 * the option names by scripts. So each is pinned here as written, with the
 * kind's unit and built-in range, and the hits in their order; the table
 * must also hold each kind at its own index and nothing outside the enum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/limit-kinds.h"

static const struct {
	sbx_limit_kind kind;
	const char *name, *key, *label, *audit, *span, *option;
	enum sbx__limit_unit unit;
	int64_t def, min, max;
} want[] = {
	{SBX_LIMIT_CPU_MILLI, "cpu", "cpus", "cpu", "cpu_milli", "sandboxio.limit.cpu_milli",
	 "cpus", SBX__LIMIT_UNIT_MILLI, 1000, 10, 64000},
	{SBX_LIMIT_MEMORY, "memory", "memory", "memory", "memory", "sandboxio.limit.memory",
	 "memory", SBX__LIMIT_UNIT_SIZE, 512ll << 20, 16ll << 20, 64ll << 30},
	{SBX_LIMIT_PIDS, "pids", "pids", "pids", "pids", "sandboxio.limit.pids", "pids",
	 SBX__LIMIT_UNIT_COUNT, 256, 8, 32768},
	{SBX_LIMIT_DISK, "disk", "disk", "disk", "disk", "sandboxio.limit.disk", "disk",
	 SBX__LIMIT_UNIT_SIZE, 1ll << 30, 1ll << 20, 64ll << 30},
	{SBX_LIMIT_NOFILE, "nofile", "nofile", "nofile", "nofile", NULL, "nofile",
	 SBX__LIMIT_UNIT_COUNT, 1024, 64, 65536},
	{SBX_LIMIT_OUTPUT, "output", "output", "output", "output", NULL, "max-output",
	 SBX__LIMIT_UNIT_SIZE, 16ll << 20, 1024, 1ll << 30},
};

static void str_or_null(const char *got, const char *exp)
{
	if (!exp)
		assert_null(got);
	else
		assert_string_equal(got, exp);
}

static void test_core_limit_kinds__words_as_written(void **state)
{
	(void)state;
	assert_int_equal(SBX__LIMIT_N, sizeof(want) / sizeof(want[0]) + 1);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct sbx__limit_desc *d = sbx__limit_desc(want[i].kind);

		assert_non_null(d);
		assert_ptr_equal(d, &sbx__limit_kinds[want[i].kind]);
		assert_int_equal(d->kind, want[i].kind);
		assert_string_equal(d->name, want[i].name);
		assert_string_equal(d->key, want[i].key);
		assert_string_equal(d->label, want[i].label);
		assert_string_equal(d->audit, want[i].audit);
		str_or_null(d->span, want[i].span);
		assert_string_equal(d->option, want[i].option);
		assert_int_equal(d->unit, want[i].unit);
		assert_int_equal(d->def, want[i].def);
		assert_int_equal(d->min, want[i].min);
		assert_int_equal(d->max, want[i].max);
	}
}

static void test_core_limit_kinds__outside_the_enum(void **state)
{
	(void)state;
	assert_null(sbx__limit_desc(SBX_LIMIT_INVALID));
	assert_null(sbx__limit_desc(-1));
	assert_null(sbx__limit_desc(SBX_LIMIT_OUTPUT + 1));
	assert_null(sbx__limit_kinds[0].name);
}

static void test_core_limit_kinds__hits_in_order(void **state)
{
	static const struct {
		unsigned int bit;
		const char *name;
		int audited;
	} hits[] = {{SBX_HIT_MEMORY, "memory", 1},
		    {SBX_HIT_PIDS, "pids", 1},
		    {SBX_HIT_OUTPUT, "output", 1},
		    {SBX_HIT_TIMEOUT, "timeout", 1},
		    {SBX_HIT_DISK, "disk", 0}};
	size_t n = 0;

	(void)state;
	for (const struct sbx__limit_hit *h = sbx__limit_hits; h->bit; h++, n++) {
		assert_true(n < sizeof(hits) / sizeof(hits[0]));
		assert_int_equal(h->bit, hits[n].bit);
		assert_string_equal(h->name, hits[n].name);
		assert_int_equal(h->audited, hits[n].audited);
	}
	assert_int_equal(n, sizeof(hits) / sizeof(hits[0]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_core_limit_kinds__words_as_written),
		cmocka_unit_test(test_core_limit_kinds__outside_the_enum),
		cmocka_unit_test(test_core_limit_kinds__hits_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
