/*
 * tests/unit/util/test_buf.c: unit tests of util/buf.c, the capped byte
 * buffer that holds captured output and Engine answers.
 *
 * Covers appends under, at and over the cap (in one call and across calls),
 * the truncated flag, total counting every byte offered, that bytes past the
 * cap cost no memory, cap 0 meaning unlimited, binary data, steal, clear and
 * printf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"

static int setup(void **state)
{
	struct sbx__buf *b = calloc(1, sizeof(*b));

	if (!b)
		return -1;
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct sbx__buf *b = *state;

	sbx__buf_clear(b);
	free(b);
	return 0;
}

static void assert_buf(const struct sbx__buf *b, const char *data, uint64_t total, int truncated)
{
	size_t n = strlen(data);

	assert_non_null(b->data);
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, data, n);
	assert_int_equal(b->data[n], '\0');
	assert_int_equal(b->total, total);
	assert_int_equal(b->truncated, truncated);
	assert_true(b->alloc > b->len);
}

static void test_util_buf__append_empty_buffer(void **state)
{
	struct sbx__buf *b = *state;

	assert_int_equal(sbx__buf_append(b, "hello", 5), 0);
	assert_buf(b, "hello", 5, 0);
	assert_int_equal(sbx__buf_append(b, ", world", 7), 0);
	assert_buf(b, "hello, world", 12, 0);
}

static void test_util_buf__append_nothing(void **state)
{
	struct sbx__buf *b = *state;

	assert_int_equal(sbx__buf_append(b, NULL, 0), 0);
	assert_buf(b, "", 0, 0);
	assert_int_equal(sbx__buf_append(b, "x", 0), 0);
	assert_buf(b, "", 0, 0);
}

static void test_util_buf__append_under_cap(void **state)
{
	struct sbx__buf *b = *state;

	b->cap = 8;
	assert_int_equal(sbx__buf_append(b, "abc", 3), 0);
	assert_int_equal(sbx__buf_append(b, "de", 2), 0);
	assert_buf(b, "abcde", 5, 0);
}

static void test_util_buf__append_exactly_to_cap(void **state)
{
	struct sbx__buf *b = *state;

	b->cap = 8;
	assert_int_equal(sbx__buf_append(b, "abcde", 5), 0);
	assert_int_equal(sbx__buf_append(b, "fgh", 3), 0);
	assert_buf(b, "abcdefgh", 8, 0);
	/* One byte more is counted, not kept. */
	assert_int_equal(sbx__buf_append(b, "i", 1), 0);
	assert_buf(b, "abcdefgh", 9, 1);
}

static void test_util_buf__append_over_cap_in_one_call(void **state)
{
	struct sbx__buf *b = *state;

	b->cap = 4;
	assert_int_equal(sbx__buf_append(b, "0123456789", 10), 0);
	assert_buf(b, "0123", 10, 1);
}

static void test_util_buf__append_crossing_cap(void **state)
{
	struct sbx__buf *b = *state;

	b->cap = 6;
	assert_int_equal(sbx__buf_append(b, "abcd", 4), 0);
	assert_buf(b, "abcd", 4, 0);
	assert_int_equal(sbx__buf_append(b, "efgh", 4), 0);
	assert_buf(b, "abcdef", 8, 1);
	assert_int_equal(sbx__buf_append(b, "ijkl", 4), 0);
	assert_buf(b, "abcdef", 12, 1);
}

/* Past the cap a flood costs a counter, never memory. */
static void test_util_buf__over_cap_costs_no_memory(void **state)
{
	struct sbx__buf *b = *state;
	size_t chunk = 1 << 20, alloc;
	char *block = malloc(chunk);

	assert_non_null(block);
	memset(block, 'z', chunk);
	b->cap = 16;
	assert_int_equal(sbx__buf_append(b, block, 16), 0);
	alloc = b->alloc;
	for (int i = 0; i < 64; i++)
		assert_int_equal(sbx__buf_append(b, block, chunk), 0);
	assert_int_equal(b->alloc, alloc);
	assert_int_equal(b->len, 16);
	assert_int_equal(b->total, 16 + 64 * (uint64_t)chunk);
	assert_true(b->truncated);
	free(block);
}

static void test_util_buf__cap_zero_is_unlimited(void **state)
{
	struct sbx__buf *b = *state;
	size_t chunk = 4093; /* not a power of two, so growth lands mid-chunk */
	char *block = malloc(chunk);
	uint64_t total = 0;

	assert_non_null(block);
	assert_int_equal(b->cap, 0);
	for (int i = 0; i < 1000; i++) {
		memset(block, 'a' + i % 26, chunk);
		assert_int_equal(sbx__buf_append(b, block, chunk), 0);
		total += chunk;
	}
	assert_int_equal(b->len, total);
	assert_int_equal(b->total, total);
	assert_false(b->truncated);
	assert_int_equal(b->data[b->len], '\0');
	for (int i = 0; i < 1000; i++)
		assert_int_equal(b->data[(size_t)i * chunk + chunk - 1], 'a' + i % 26);
	free(block);
}

static void test_util_buf__binary_data(void **state)
{
	static const char bytes[] = {'a', '\0', 'b', '\xff', '\0'};
	struct sbx__buf *b = *state;

	assert_int_equal(sbx__buf_append(b, bytes, sizeof(bytes)), 0);
	assert_int_equal(b->len, sizeof(bytes));
	assert_memory_equal(b->data, bytes, sizeof(bytes));
	assert_int_equal(b->data[sizeof(bytes)], '\0');
	assert_int_equal(b->total, sizeof(bytes));
}

static void test_util_buf__steal(void **state)
{
	struct sbx__buf *b = *state;
	char *p;

	assert_int_equal(sbx__buf_append(b, "taken", 5), 0);
	p = sbx__buf_steal(b);
	assert_non_null(p);
	assert_string_equal(p, "taken");
	assert_null(b->data);
	assert_int_equal(b->len, 0);
	assert_int_equal(b->alloc, 0);
	/* The buffer is usable again, and the stolen bytes are the caller's. */
	assert_int_equal(sbx__buf_append(b, "again", 5), 0);
	assert_ptr_not_equal(b->data, p);
	assert_memory_equal(b->data, "again", 6);
	assert_string_equal(p, "taken");
	free(p);
}

static void test_util_buf__steal_never_null(void **state)
{
	struct sbx__buf *b = *state;
	char *p = sbx__buf_steal(b);

	assert_non_null(p);
	assert_string_equal(p, "");
	free(p);
	assert_int_equal(sbx__buf_append(b, NULL, 0), 0);
	p = sbx__buf_steal(b);
	assert_non_null(p);
	assert_string_equal(p, "");
	free(p);
}

static void test_util_buf__steal_after_truncation(void **state)
{
	struct sbx__buf *b = *state;
	char *p;

	b->cap = 3;
	assert_int_equal(sbx__buf_append(b, "abcdef", 6), 0);
	p = sbx__buf_steal(b);
	assert_string_equal(p, "abc");
	free(p);
}

static void test_util_buf__clear(void **state)
{
	struct sbx__buf *b = *state;

	b->cap = 2;
	assert_int_equal(sbx__buf_append(b, "abc", 3), 0);
	sbx__buf_clear(b);
	assert_null(b->data);
	assert_int_equal(b->len, 0);
	assert_int_equal(b->alloc, 0);
	assert_int_equal(b->total, 0);
	assert_false(b->truncated);
	sbx__buf_clear(b); /* twice is harmless */
	assert_int_equal(sbx__buf_append(b, "ab", 2), 0);
	assert_buf(b, "ab", 2, 0);
}

static void test_util_buf__printf(void **state)
{
	struct sbx__buf *b = *state;

	assert_int_equal(sbx__buf_printf(b, "%s-%d", "id", 42), 0);
	assert_buf(b, "id-42", 5, 0);
	assert_int_equal(sbx__buf_printf(b, "%c%05.1f", ':', 2.5), 0);
	assert_buf(b, "id-42:002.5", 11, 0);
	assert_int_equal(sbx__buf_printf(b, "%s", ""), 0);
	assert_buf(b, "id-42:002.5", 11, 0);
}

static void test_util_buf__printf_grows(void **state)
{
	struct sbx__buf *b = *state;

	assert_int_equal(sbx__buf_printf(b, "%1000s|", "x"), 0);
	assert_int_equal(b->len, 1001);
	assert_int_equal(b->total, 1001);
	assert_int_equal(b->data[998], ' ');
	assert_int_equal(b->data[999], 'x');
	assert_int_equal(b->data[1000], '|');
	assert_int_equal(b->data[1001], '\0');
	assert_true(b->alloc > 1001);
}

static void test_util_buf__printf_and_append_mix(void **state)
{
	struct sbx__buf *b = *state;

	assert_int_equal(sbx__buf_append(b, "GET ", 4), 0);
	assert_int_equal(sbx__buf_printf(b, "/containers/%s/json", "abc"), 0);
	assert_int_equal(sbx__buf_append(b, " HTTP/1.1", 9), 0);
	assert_buf(b, "GET /containers/abc/json HTTP/1.1", 33, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(test_util_buf__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(append_empty_buffer),
		T(append_nothing),
		T(append_under_cap),
		T(append_exactly_to_cap),
		T(append_over_cap_in_one_call),
		T(append_crossing_cap),
		T(over_cap_costs_no_memory),
		T(cap_zero_is_unlimited),
		T(binary_data),
		T(steal),
		T(steal_never_null),
		T(steal_after_truncation),
		T(clear),
		T(printf),
		T(printf_grows),
		T(printf_and_append_mix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
