/*
 * tests/unit/util/test_redact.c: unit tests of util/redact.c, the one
 * redactor, and of its use by util/error.c.
 *
 * Covers registration and unregistration, replacement of every occurrence
 * (adjacent, overlapping, at either end, values shorter and longer than the
 * marker), values that are prefixes of one another, truncation at the cap
 * (every cap from the tightest up, in heap blocks of exactly cap bytes, so a
 * sanitizer sees any write past it), and error messages built by
 * sbx__error_set, sbx__error_os and sbx__error_wrap never holding a
 * registered value. Secrets here are upper case and digits, the surrounding
 * text lower case, so a fragment of a secret cannot occur by chance.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "util/error-int.h"
#include "util/redact-int.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_IDS 300    /* above the redactor's table size */
#define FRAGMENT_MIN 4 /* the shortest piece of a secret that counts as a leak */

struct ids {
	int id[MAX_IDS];
	int n;
};

static int setup(void **state)
{
	struct ids *ids = calloc(1, sizeof(*ids));

	if (!ids || sbx__redact_count() != 0) {
		free(ids);
		return -1;
	}
	*state = ids;
	return 0;
}

static int teardown(void **state)
{
	struct ids *ids = *state;

	for (int i = 0; i < ids->n; i++)
		sbx__redact_unregister(ids->id[i]);
	free(ids);
	sbx__error_clear();
	return sbx__redact_count() == 0 ? 0 : -1;
}

static int reg(void **state, const char *secret)
{
	struct ids *ids = *state;
	int id = sbx__redact_register(secret, strlen(secret));

	assert_true(id > 0);
	assert_true(ids->n < MAX_IDS);
	ids->id[ids->n++] = id;
	return id;
}

/* No piece of secret of FRAGMENT_MIN bytes or more is left in s. */
static void assert_no_fragment(const char *s, const char *secret)
{
	size_t n = strlen(secret);
	char frag[FRAGMENT_MIN + 1];

	if (n < FRAGMENT_MIN) {
		assert_null(strstr(s, secret));
		return;
	}
	for (size_t i = 0; i + FRAGMENT_MIN <= n; i++) {
		memcpy(frag, secret + i, FRAGMENT_MIN);
		frag[FRAGMENT_MIN] = '\0';
		if (strstr(s, frag))
			fail_msg("'%s' still holds '%s', a piece of a registered value", s, frag);
	}
}

/* Redacts text in a buffer of cap bytes and compares with want. */
static void assert_redacts(const char *text, size_t cap, const char *want)
{
	char *s = malloc(cap);

	assert_non_null(s);
	assert_true(strlen(text) < cap);
	strcpy(s, text);
	sbx__redact_inplace(s, cap);
	assert_string_equal(s, want);
	free(s);
}

/* ===== Registration ===== */

static void test_util_redact__register_and_count(void **state)
{
	int a, b;

	assert_int_equal(sbx__redact_count(), 0);
	a = reg(state, "ALPHA1234");
	assert_int_equal(sbx__redact_count(), 1);
	b = reg(state, "BRAVO5678");
	assert_int_equal(sbx__redact_count(), 2);
	assert_true(a > 0);
	assert_true(b > 0);
	assert_int_not_equal(a, b);
}

static void test_util_redact__register_refuses_empty(void **state)
{
	(void)state;
	assert_true(sbx__redact_register(NULL, 5) < 0);
	assert_true(sbx__redact_register("X", 0) < 0);
	assert_int_equal(sbx__redact_count(), 0);
}

static void test_util_redact__value_is_copied(void **state)
{
	char secret[] = "COPYME2024";

	reg(state, secret);
	memset(secret, 'q', sizeof(secret) - 1);
	assert_redacts("x COPYME2024 y", 64, "x <redacted> y");
	assert_redacts("x qqqqqqqqqq y", 64, "x qqqqqqqqqq y");
}

static void test_util_redact__table_full_refused(void **state)
{
	struct ids *ids = *state;
	char value[32];
	int id;

	for (;;) {
		snprintf(value, sizeof(value), "FILL%04d", ids->n);
		id = sbx__redact_register(value, strlen(value));
		if (id < 0)
			break;
		assert_true(ids->n < MAX_IDS);
		ids->id[ids->n++] = id;
	}
	assert_true(ids->n > 0);
	assert_int_equal(sbx__redact_count(), ids->n);
	/* A freed slot can be taken again. */
	sbx__redact_unregister(ids->id[--ids->n]);
	id = sbx__redact_register("AGAIN123", 8);
	assert_true(id > 0);
	ids->id[ids->n++] = id;
	assert_redacts("a FILL0000 b AGAIN123 c", 64, "a <redacted> b <redacted> c");
}

/* ===== Replacement ===== */

static void test_util_redact__replaces_every_occurrence(void **state)
{
	reg(state, "S3CR3T42");
	assert_redacts("token=S3CR3T42; again S3CR3T42, and S3CR3T42.", 128,
		       "token=<redacted>; again <redacted>, and <redacted>.");
	assert_redacts("S3CR3T42", 64, "<redacted>");
	assert_redacts("S3CR3T42 at the start", 64, "<redacted> at the start");
	assert_redacts("at the end S3CR3T42", 64, "at the end <redacted>");
	assert_redacts("nothing to see", 64, "nothing to see");
	assert_redacts("", 64, "");
	assert_redacts("S3CR3T4 almost", 64, "S3CR3T4 almost");
}

static void test_util_redact__adjacent_occurrences(void **state)
{
	/* Touching occurrences become one marker: how many there were is not told. */
	reg(state, "K7W2Q9");
	assert_redacts("K7W2Q9K7W2Q9", 64, "<redacted>");
	assert_redacts("xK7W2Q9K7W2Q9K7W2Q9y", 64, "x<redacted>y");
}

static void test_util_redact__value_shorter_than_marker(void **state)
{
	reg(state, "ZQ7");
	assert_redacts("a ZQ7 b ZQ7", 64, "a <redacted> b <redacted>");
}

static void test_util_redact__value_longer_than_marker(void **state)
{
	static const char secret[] = "LONGSECRETVALUE0123456789ABCDEFGHIJ";
	char text[128];

	reg(state, secret);
	snprintf(text, sizeof(text), "k=%s;k=%s", secret, secret);
	/* The string shrinks, so even the tightest cap is enough. */
	assert_redacts(text, strlen(text) + 1, "k=<redacted>;k=<redacted>");
}

static void test_util_redact__several_values(void **state)
{
	reg(state, "ALPHA111");
	reg(state, "BRAVO222");
	reg(state, "CHARLIE3");
	assert_redacts("u=ALPHA111 p=BRAVO222 t=CHARLIE3 u=ALPHA111", 128,
		       "u=<redacted> p=<redacted> t=<redacted> u=<redacted>");
}

/* Occurrences that share bytes: every byte of each is covered. */
static void test_util_redact__overlapping_occurrences(void **state)
{
	static const char secret[] = "AB12-AB12";
	char s[64] = "x AB12-AB12-AB12 y"; /* occurrences at 2 and 7 */

	reg(state, secret);
	sbx__redact_inplace(s, sizeof(s));
	assert_non_null(strstr(s, SBX_REDACTED));
	assert_no_fragment(s, secret);
}

static void check_prefix_pair(const char *s_in)
{
	char s[128];

	snprintf(s, sizeof(s), "%s", s_in);
	sbx__redact_inplace(s, sizeof(s));
	assert_no_fragment(s, "QX7ZK2");
	assert_no_fragment(s, "QX7ZK2PM9VWT");
	assert_string_equal(s, "a=<redacted> b=<redacted> c=<redacted>");
}

static void test_util_redact__prefix_registered_after_longer(void **state)
{
	reg(state, "QX7ZK2PM9VWT");
	reg(state, "QX7ZK2");
	check_prefix_pair("a=QX7ZK2PM9VWT b=QX7ZK2 c=QX7ZK2PM9VWT");
}

static void test_util_redact__prefix_registered_before_longer(void **state)
{
	reg(state, "QX7ZK2");
	reg(state, "QX7ZK2PM9VWT");
	check_prefix_pair("a=QX7ZK2PM9VWT b=QX7ZK2 c=QX7ZK2PM9VWT");
}

/* ===== Truncation ===== */

/* Every cap from the tightest up: the result fits, and no whole value is left. */
static void test_util_redact__truncation_never_overflows(void **state)
{
	static const char *const texts[] = {
		"H7",
		"H7H7H7H7H7H7",
		"a H7 b H7 c H7",
		"H7 tail that is long enough to be cut somewhere in the middle",
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxH7",
		"LONGER9VALUE8 and H7 H7 LONGER9VALUE8",
	};

	reg(state, "H7");
	reg(state, "LONGER9VALUE8");
	for (size_t i = 0; i < ARRAY_LEN(texts); i++) {
		size_t len = strlen(texts[i]);

		for (size_t cap = len + 1; cap <= len + 8 * sizeof(SBX_REDACTED); cap++) {
			char *s = malloc(cap);

			assert_non_null(s);
			memcpy(s, texts[i], len + 1);
			sbx__redact_inplace(s, cap);
			assert_true(strlen(s) < cap);
			assert_null(strstr(s, "H7"));
			assert_null(strstr(s, "LONGER9VALUE8"));
			free(s);
		}
	}
}

/* What fits is kept: the result is the start of the untruncated one. */
static void test_util_redact__truncation_keeps_what_fits(void **state)
{
	static const char full[] = "a <redacted> b";

	reg(state, "K2");
	assert_redacts("a K2 b", sizeof(full), full);
	for (size_t cap = sizeof(full) - 1; cap > strlen("a K2 b"); cap--) {
		char *s = malloc(cap);

		assert_non_null(s);
		strcpy(s, "a K2 b");
		sbx__redact_inplace(s, cap);
		assert_true(strlen(s) < cap);
		assert_memory_equal(s, full, strlen(s));
		assert_null(strstr(s, "K2"));
		free(s);
	}
}

static void test_util_redact__truncation_leaves_no_partial_value(void **state)
{
	char *s;

	s = malloc(18);
	assert_non_null(s);
	reg(state, "HUNTER2X");
	strcpy(s, "HUNTER2X HUNTER2X"); /* 17 bytes; redacting grows it past the cap */
	sbx__redact_inplace(s, 18);
	assert_true(strlen(s) < 18);
	assert_no_fragment(s, "HUNTER2X");
	free(s);
}

static void test_util_redact__null_and_zero_cap_are_noops(void **state)
{
	char s[] = "Q1W2E3R4";

	reg(state, "Q1W2E3R4");
	sbx__redact_inplace(NULL, 64);
	sbx__redact_inplace(s, 0);
	assert_string_equal(s, "Q1W2E3R4");
}

/* ===== Unregistration ===== */

static void test_util_redact__unregister_stops_redaction(void **state)
{
	struct ids *ids = *state;
	int keep, drop;

	keep = reg(state, "KEEPER77");
	drop = reg(state, "DROPPED9");
	assert_redacts("KEEPER77 DROPPED9", 64, "<redacted> <redacted>");
	sbx__redact_unregister(drop);
	assert_int_equal(sbx__redact_count(), 1);
	assert_redacts("KEEPER77 DROPPED9", 64, "<redacted> DROPPED9");
	/* Unknown, repeated and invalid ids are harmless. */
	sbx__redact_unregister(drop);
	sbx__redact_unregister(0);
	sbx__redact_unregister(-1);
	sbx__redact_unregister(drop + 100000);
	assert_int_equal(sbx__redact_count(), 1);
	sbx__redact_unregister(keep);
	assert_int_equal(sbx__redact_count(), 0);
	assert_redacts("KEEPER77 DROPPED9", 64, "KEEPER77 DROPPED9");
	ids->n = 0;
}

/* ===== Error messages ===== */

static void test_util_redact__error_message_redacted(void **state)
{
	const sbx_error *e;

	reg(state, "PW9X7Y5Z");
	assert_int_equal(sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "bad token %s for %s",
					"PW9X7Y5Z", "user"),
			 SBX_EINVALID);
	e = sbx_error_last();
	assert_int_equal(e->code, SBX_EINVALID);
	assert_null(strstr(e->message, "PW9X7Y5Z"));
	assert_string_equal(e->message, "bad token <redacted> for user");
}

static void test_util_redact__error_os_redacted(void **state)
{
	const sbx_error *e;

	reg(state, "PW9X7Y5Z");
	sbx__error_os(SBX_ENOTFOUND, ENOENT, "open /run/PW9X7Y5Z.txt");
	e = sbx_error_last();
	assert_int_equal(e->os_errno, ENOENT);
	assert_null(strstr(e->message, "PW9X7Y5Z"));
	assert_non_null(strstr(e->message, "open /run/<redacted>.txt: "));
}

static void test_util_redact__error_wrap_redacted(void **state)
{
	const sbx_error *e;

	reg(state, "PW9X7Y5Z");
	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "inner PW9X7Y5Z");
	assert_int_equal(sbx__error_wrap("outer %s", "PW9X7Y5Z"), SBX_EENGINE);
	e = sbx_error_last();
	assert_int_equal(e->code, SBX_EENGINE);
	assert_string_equal(e->message, "outer <redacted>: inner <redacted>");
}

static void test_util_redact__error_message_unregistered_value_kept(void **state)
{
	int id = sbx__redact_register("PW9X7Y5Z", 8);
	(void)state;

	assert_true(id > 0);
	sbx__redact_unregister(id);
	sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "value %s", "PW9X7Y5Z");
	assert_string_equal(sbx_error_last()->message, "value PW9X7Y5Z");
}

/* A message longer than the record is cut; the cut must not expose a value. */
static void test_util_redact__error_message_cut_mid_value(void **state)
{
	static const char secret[] = "PW9X7Y5Z3V1T";
	size_t pad = SBX_ERROR_MSG_MAX - 1 - 6; /* six bytes of the value fit */

	reg(state, secret);
	sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "%*s%s", (int)pad, "", secret);
	assert_true(strlen(sbx_error_last()->message) < SBX_ERROR_MSG_MAX);
	assert_no_fragment(sbx_error_last()->message, secret);
}

#define T(name) cmocka_unit_test_setup_teardown(test_util_redact__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(register_and_count),
		T(register_refuses_empty),
		T(value_is_copied),
		T(table_full_refused),
		T(replaces_every_occurrence),
		T(adjacent_occurrences),
		T(value_shorter_than_marker),
		T(value_longer_than_marker),
		T(several_values),
		T(overlapping_occurrences),
		T(prefix_registered_after_longer),
		T(prefix_registered_before_longer),
		T(truncation_never_overflows),
		T(truncation_keeps_what_fits),
		T(truncation_leaves_no_partial_value),
		T(null_and_zero_cap_are_noops),
		T(unregister_stops_redaction),
		T(error_message_redacted),
		T(error_os_redacted),
		T(error_wrap_redacted),
		T(error_message_unregistered_value_kept),
		T(error_message_cut_mid_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
