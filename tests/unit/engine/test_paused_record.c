/*
 * tests/unit/engine/test_paused_record.c: the record of a paused sandbox
 * (engine/paused.c), which the reaper reads from /run/sandboxio/paused: what
 * the writer writes parses back; anything else is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/docker-int.h"

static int parse(const char *text, struct sbx__paused *r)
{
	return sbx__paused_parse(r, text, strlen(text));
}

static void test_paused_record__roundtrip(void **state)
{
	struct sbx__paused in = {.at = 1700000000, .bound = 1700003600, .deadline = 1700000500};
	struct sbx__paused out = {0};
	char line[SBX_PAUSED_LINE_MAX];
	int n;

	(void)state;
	n = sbx__paused_format(line, sizeof(line), &in);
	assert_true(n > 0);
	assert_string_equal(
		line, "sandboxio-paused 1 at=1700000000 bound=1700003600 deadline=1700000500\n");
	assert_int_equal(sbx__paused_parse(&out, line, (size_t)n), 0);
	assert_memory_equal(&in, &out, sizeof(in));
	assert_true(sbx__paused_reap_at(&out) == 1700003600);
	/* Running again: judged by its moved deadline. */
	assert_int_equal(parse("sandboxio-paused 1 at=0 bound=0 deadline=1700000900\n", &out), 0);
	assert_true(sbx__paused_reap_at(&out) == 1700000900);
	/* A short buffer is refused, never cut. */
	assert_int_equal(sbx__paused_format(line, 20, &in), -1);
}

static void test_paused_record__refuses_the_rest(void **state)
{
	static const char *const bad[] = {
		"",
		"sandboxio-paused 1 at=1 bound=2 deadline=3",		   /* no newline */
		"sandboxio-paused 1 at=1 bound=2 deadline=3\n\n",	   /* bytes after it */
		"sandboxio-paused 2 at=1 bound=2 deadline=3\n",		   /* another version */
		"sandboxio-paused 1 bound=2 at=1 deadline=3\n",		   /* order */
		"sandboxio-paused 1 at=1 bound=2\n",			   /* a field missing */
		"sandboxio-paused 1 at=01 bound=2 deadline=3\n",	   /* a leading zero */
		"sandboxio-paused 1 at=00 bound=2 deadline=3\n",	   /* zeros */
		"sandboxio-paused 1 at=-1 bound=2 deadline=3\n",	   /* a sign */
		"sandboxio-paused 1 at= bound=2 deadline=3\n",		   /* empty */
		"sandboxio-paused 1 at=1 bound=2 deadline=99999999999\n",  /* past 2200 */
		"sandboxio-paused 1 at=1 bound=2 deadline=123456789012\n", /* 12 digits */
		"sandboxio-paused 1 at=5 bound=5 deadline=3\n",		   /* bound not after at */
		"sandboxio-paused 1 at=0 bound=5 deadline=3\n",		   /* bound while running */
		"sandboxio-paused 1 at=1 bound=2 deadline=0\n",		   /* no deadline */
		"sandboxio-paused 1  at=1 bound=2 deadline=3\n",	   /* two spaces */
		"sandboxio-paused 1 at=1\tbound=2 deadline=3\n",	   /* a tab */
	};
	struct sbx__paused r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &r) != -1)
			fail_msg("accepted: '%s'", bad[i]);
	assert_int_equal(sbx__paused_parse(&r, NULL, 0), -1);
	/* A NUL inside is not a shorter record. */
	assert_int_equal(
		sbx__paused_parse(&r, "sandboxio-paused 1 at=1 bound=2 deadline=3\n\0", 45), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paused_record__roundtrip),
		cmocka_unit_test(test_paused_record__refuses_the_rest),
	};

	return cmocka_run_group_tests_name("paused record", tests, NULL, NULL);
}
