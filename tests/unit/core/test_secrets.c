/*
 * tests/unit/core/test_secrets.c: unit tests of the secrets object
 * (core/secret.c) and of locked memory (util/secmem.c).
 *
 * Covers names (valid, invalid, duplicate), the value bounds (shorter than
 * SBX_SECRET_MIN_LEN refused, the minimum and maximum accepted, longer
 * refused), NUL bytes and non-UTF-8 refused, the count limit, refused adds
 * changing nothing, values read from files (one trailing newline removed,
 * too big, missing, a directory), redaction of a value and its encoded
 * forms exactly while the object lives and only in records of a scope the
 * object was given to (never another object's, with no answer to a guessed
 * prefix), a table of values per object (one object full leaves others
 * untouched), and that each value sits in a mapping of its own that is
 * locked and left out of core dumps, and is gone after free.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/secret-int.h"
#include "util/error-int.h"
#include "util/redact-int.h"
#include "util/secmem.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int setup(void **state)
{
	sbx_secrets *s = NULL;

	if (sbx__redact_count() != 0 || sbx_secrets_new(&s) != 0)
		return -1;
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	sbx_secrets_free(*state);
	return sbx__redact_count() == 0 ? 0 : -1;
}

static void assert_error(int rc, int code, const char *word)
{
	assert_int_equal(rc, code);
	assert_int_equal(sbx_error_last()->code, code);
	if (word && !strstr(sbx_error_last()->message, word))
		fail_msg("'%s' does not name '%s'", sbx_error_last()->message, word);
}

static int add(sbx_secrets *s, const char *name, const char *value)
{
	return sbx_secrets_add(s, name, value, strlen(value));
}

/* The error message of an error that quotes text, closed in scope sc. */
static const char *quoted_in(struct sbx__redact_scope *sc, const char *text)
{
	struct sbx__redact_scope *prev = sbx__redact_scope_enter(sc);

	sbx__error_set(SBX_ERROR, SBX_ERRCLASS_CORE, "got %s", text);
	sbx__redact_scope_leave(prev);
	return sbx_error_last()->message;
}

/* As quoted_in, in a scope that holds s alone (as a sandbox given s). */
static const char *quoted_by(const sbx_secrets *s, const char *text)
{
	struct sbx__redact_scope sc;
	const char *m;

	sbx__redact_scope_init(&sc);
	assert_int_equal(sbx__redact_scope_add(&sc, sbx__secrets_redact_set(s)), 0);
	m = quoted_in(&sc, text);
	sbx__redact_scope_done(&sc);
	return m;
}

/* ===== Names and values ===== */

static void test_core_secrets__new_and_free(void **state)
{
	(void)state;
	assert_error(sbx_secrets_new(NULL), SBX_EINVALID, NULL);
	sbx_secrets_free(NULL);
	assert_int_equal(sbx_secrets_count(NULL), 0);
	assert_null(sbx_secrets_name(NULL, 0));
}

static void test_core_secrets__names(void **state)
{
	static const char *const bad[] = {"", "1ABC", "A-B", "A B", "A=B", "ÄBC"};
	char longname[300];
	sbx_secrets *s = *state;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		assert_error(add(s, bad[i], "VALUE123"), SBX_EINVALID, "name");
	assert_error(add(s, NULL, "VALUE123"), SBX_EINVALID, NULL);
	memset(longname, 'N', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_error(add(s, longname, "VALUE123"), SBX_EINVALID, "name");
	assert_int_equal(add(s, "_API_TOKEN2", "VALUE123"), 0);
	assert_error(add(s, "_API_TOKEN2", "OTHER456"), SBX_EINVALID, "already");
	assert_int_equal(sbx_secrets_count(s), 1);
	assert_string_equal(sbx_secrets_name(s, 0), "_API_TOKEN2");
	assert_null(sbx_secrets_name(s, 1));
}

static void test_core_secrets__length_bounds(void **state)
{
	sbx_secrets *s = *state;
	char *big = malloc(SBX_SECRET_MAX_LEN + 2);

	assert_non_null(big);
	assert_error(add(s, "A", ""), SBX_EINVALID, "4 to");
	assert_error(add(s, "A", "XYZ"), SBX_EINVALID, "4 to");
	assert_int_equal(sbx_secrets_count(s), 0);
	assert_int_equal(add(s, "A", "WXYZ"), 0);
	memset(big, 'Q', SBX_SECRET_MAX_LEN + 1);
	big[SBX_SECRET_MAX_LEN + 1] = '\0';
	assert_error(sbx_secrets_add(s, "B", big, SBX_SECRET_MAX_LEN + 1), SBX_ETOOBIG, NULL);
	assert_int_equal(sbx_secrets_add(s, "B", big, SBX_SECRET_MAX_LEN), 0);
	assert_int_equal(sbx_secrets_count(s), 2);
	free(big);
}

static void test_core_secrets__nul_and_non_utf8_refused(void **state)
{
	static const char *const bad[] = {
		"\xff\xfe\xfd\xfc",	/* not UTF-8 at all */
		"ab\xc0\xafxy",		/* overlong "/" */
		"ab\xed\xa0\x80xy",	/* a surrogate */
		"ab\xf4\x90\x80\x80xy", /* above U+10FFFF */
		"abcd\xe2\x82",		/* cut short */
	};
	sbx_secrets *s = *state;

	assert_error(sbx_secrets_add(s, "A", "ab\0cdef", 7), SBX_EINVALID, "NUL");
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		assert_error(add(s, "A", bad[i]), SBX_EINVALID, "UTF-8");
	assert_int_equal(sbx_secrets_count(s), 0);
	assert_int_equal(add(s, "A", "pässwörd€✓"), 0);
	assert_error(sbx_secrets_add(NULL, "A", "VALUE123", 8), SBX_EINVALID, NULL);
	assert_error(sbx_secrets_add(s, "B", NULL, 8), SBX_EINVALID, NULL);
}

static void test_core_secrets__count_limit(void **state)
{
	sbx_secrets *s = *state;
	char name[16], value[32];

	for (int i = 0; i < SBX_SECRETS_MAX; i++) {
		snprintf(name, sizeof(name), "S%d", i);
		snprintf(value, sizeof(value), "LIMITVALUE%04d", i);
		assert_int_equal(add(s, name, value), 0);
	}
	assert_error(add(s, "ONE_MORE", "LIMITVALUEXXXX"), SBX_ETOOBIG, NULL);
	assert_int_equal(sbx_secrets_count(s), SBX_SECRETS_MAX);
}

/* ===== Files ===== */

static char *tmpfile_with(const void *data, size_t len)
{
	char *path = strdup("/tmp/sbx-secret-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

static void check_file_value(sbx_secrets *s, const char *content, const char *want)
{
	char *path = tmpfile_with(content, strlen(content));
	size_t i = sbx_secrets_count(s);
	char name[16];

	snprintf(name, sizeof(name), "F%zu", i);
	assert_int_equal(sbx_secrets_add_file(s, name, path), 0);
	assert_string_equal(sbx__secret_expose_env(s, i) + strlen(name) + 1, want);
	unlink(path);
	free(path);
}

static void test_core_secrets__from_file(void **state)
{
	sbx_secrets *s = *state;
	char *path, *big;

	check_file_value(s, "FILEVALUE1\n", "FILEVALUE1");
	check_file_value(s, "FILEVALUE2\r\n", "FILEVALUE2");
	check_file_value(s, "FILEVALUE3", "FILEVALUE3");
	check_file_value(s, "FILEVALUE4\n\n", "FILEVALUE4\n");
	/* The value is redacted like any other. */
	assert_string_equal(quoted_by(s, "FILEVALUE1"), "got <redacted>");

	path = tmpfile_with("AB\n", 3);
	assert_error(sbx_secrets_add_file(s, "SHORT", path), SBX_EINVALID, "4 to");
	unlink(path);
	free(path);
	path = tmpfile_with("AB\0CDEF", 7);
	assert_error(sbx_secrets_add_file(s, "NUL", path), SBX_EINVALID, "NUL");
	unlink(path);
	free(path);
	big = malloc(SBX_SECRET_MAX_LEN + 3);
	assert_non_null(big);
	memset(big, 'B', SBX_SECRET_MAX_LEN + 3);
	path = tmpfile_with(big, SBX_SECRET_MAX_LEN + 3);
	assert_error(sbx_secrets_add_file(s, "BIG", path), SBX_ETOOBIG, NULL);
	unlink(path);
	free(path);
	big[SBX_SECRET_MAX_LEN] = '\n';
	path = tmpfile_with(big, SBX_SECRET_MAX_LEN + 1);
	assert_int_equal(sbx_secrets_add_file(s, "JUST_FITS", path), 0);
	unlink(path);
	free(path);
	free(big);
	assert_error(sbx_secrets_add_file(s, "GONE", "/nonexistent/secret"), SBX_ENOTFOUND, NULL);
	assert_error(sbx_secrets_add_file(s, "DIR", "/tmp"), SBX_EINVALID, "regular");
	assert_error(sbx_secrets_add_file(s, "X", NULL), SBX_EINVALID, NULL);
	assert_int_equal(sbx_secrets_count(s), 5);
}

/* ===== Redaction and memory ===== */

static void test_core_secrets__redacted_while_alive(void **state)
{
	sbx_secrets *s = *state, *t = NULL;
	struct sbx__redact_scope sc;

	sbx__redact_scope_init(&sc);
	assert_int_equal(sbx_secrets_new(&t), 0);
	assert_int_equal(sbx__redact_scope_add(&sc, sbx__secrets_redact_set(s)), 0);
	assert_int_equal(sbx__redact_scope_add(&sc, sbx__secrets_redact_set(t)), 0);
	assert_int_equal(add(t, "LIVE", "L1VES3CRET"), 0);
	assert_string_equal(quoted_in(&sc, "L1VES3CRET"), "got <redacted>");
	/* base64 of the value, and a percent-encoded one. */
	assert_string_equal(quoted_in(&sc, "TDFWRVMzQ1JFVA=="), "got <redacted>");
	assert_int_equal(add(s, "URLISH", "a/b c?d=e"), 0);
	assert_string_equal(quoted_in(&sc, "x=a%2Fb%20c%3Fd%3De&"), "got x=<redacted>&");
	/* Freed while the scope still refers to it: its values are gone at once. */
	sbx_secrets_free(t);
	assert_string_equal(quoted_in(&sc, "L1VES3CRET"), "got L1VES3CRET");
	assert_string_equal(quoted_in(&sc, "a/b c?d=e"), "got <redacted>");
	sbx__redact_scope_done(&sc);
}

/* ===== Scope: records are redacted with their own sandbox's secrets ===== */

static void test_core_secrets__scoped_to_their_object(void **state)
{
	sbx_secrets *a = *state, *b = NULL;

	assert_int_equal(sbx_secrets_new(&b), 0);
	assert_int_equal(add(a, "TOKEN", "AAAA1111SECRET"), 0);
	assert_int_equal(add(b, "TOKEN", "BBBB2222SECRET"), 0);
	assert_string_equal(quoted_by(a, "AAAA1111SECRET"), "got <redacted>");
	assert_string_equal(quoted_by(b, "BBBB2222SECRET"), "got <redacted>");
	/* Another object's value, or one outside any scope, is plain text. */
	assert_string_equal(quoted_by(b, "AAAA1111SECRET"), "got AAAA1111SECRET");
	assert_string_equal(quoted_by(a, "QkJCQjIyMjJTRUNSRVQ="), "got QkJCQjIyMjJTRUNSRVQ=");
	/* A record of no sandbox (the caller's own arguments): every live value. */
	assert_string_equal(quoted_in(NULL, "AAAA1111SECRET BBBB2222SECRET"),
			    "got <redacted> <redacted>");
	sbx_secrets_free(b);
}

/*
 * A record that ends in a prefix of a value and a guess at the rest is
 * treated the same whether the guess is right or wrong: only a complete
 * value is redacted, in the scope that holds it or any other.
 */
static void test_core_secrets__no_answer_to_a_guessed_prefix(void **state)
{
	static const char *const texts[] = {
		"AAAA1111SEC", "AAAA1111SEX", "AAAA1111", "AAAA1112", "AAAA", "AAAB",
	};
	sbx_secrets *a = *state, *b = NULL;
	char want[64];

	assert_int_equal(sbx_secrets_new(&b), 0);
	assert_int_equal(add(a, "TOKEN", "AAAA1111SECRET"), 0);
	assert_int_equal(add(b, "OTHER", "BBBB2222SECRET"), 0);
	for (size_t i = 0; i < ARRAY_LEN(texts); i++) {
		snprintf(want, sizeof(want), "got %s", texts[i]);
		assert_string_equal(quoted_by(a, texts[i]), want);
		assert_string_equal(quoted_by(b, texts[i]), want);
	}
	assert_string_equal(quoted_by(a, "AAAA1111SECRET"), "got <redacted>");
	assert_string_equal(quoted_by(b, "AAAA1111SECRET"), "got AAAA1111SECRET");
	sbx_secrets_free(b);
}

/* Each object has its own table: objects filled to the limit leave room in
 * every other one (a process-wide table of 256 ran out after four). */
static void test_core_secrets__table_per_object(void **state)
{
	enum { FULL = 5 };
	sbx_secrets *full[FULL] = {0}, *last = *state;
	char name[16], value[32];

	for (int k = 0; k < FULL; k++) {
		assert_int_equal(sbx_secrets_new(&full[k]), 0);
		for (int i = 0; i < SBX_SECRETS_MAX; i++) {
			snprintf(name, sizeof(name), "S%d", i);
			snprintf(value, sizeof(value), "FULL%02dVALUE%04d", k, i);
			assert_int_equal(add(full[k], name, value), 0);
		}
		assert_error(add(full[k], "ONE_MORE", "FULLXXVALUEXXXX"), SBX_ETOOBIG, NULL);
	}
	assert_int_equal(add(last, "MINE", "MYOWNVALUE77"), 0);
	assert_string_equal(quoted_by(last, "MYOWNVALUE77 FULL00VALUE0000"),
			    "got <redacted> FULL00VALUE0000");
	assert_string_equal(quoted_by(full[4], "FULL04VALUE0063 MYOWNVALUE77"),
			    "got <redacted> MYOWNVALUE77");
	for (int k = 0; k < FULL; k++)
		sbx_secrets_free(full[k]);
}

/* The smaps entry of the mapping that holds p: its Locked size and VmFlags. */
static int mapping_of(const void *p, long *locked_kb, char *flags, size_t flags_len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			found |= in;
		} else if (in && sscanf(line, "Locked: %ld kB", locked_kb) == 1) {
			continue;
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(flags, flags_len, "%s", line + 8);
		}
	}
	fclose(f);
	return found;
}

static void test_core_secrets__locked_and_not_dumped(void **state)
{
	sbx_secrets *s = *state;
	const char *kv;
	char flags[256] = "";
	long locked = 0;
	void *p;

	assert_int_equal(add(s, "LOCKED", "LOCKEDVALUE9"), 0);
	kv = sbx__secret_expose_env(s, 0);
	assert_string_equal(kv, "LOCKED=LOCKEDVALUE9");
	assert_true(mapping_of(kv, &locked, flags, sizeof(flags)));
	if (!strstr(flags, " dd"))
		fail_msg("VmFlags of the secret's mapping: '%s' (want dd)", flags);
#ifndef __SANITIZE_ADDRESS__
	/* AddressSanitizer turns mlock into a no-op; elsewhere it must hold. */
	assert_true(locked > 0);
	if (!strstr(flags, " lo"))
		fail_msg("VmFlags of the secret's mapping: '%s' (want lo)", flags);
#endif
	/* A mapping of its own: freeing it leaves nothing mapped there. */
	p = sbx__secmem_alloc(100);
	assert_non_null(p);
	memcpy(p, "SCRATCH", 7);
	assert_true(mapping_of(p, &locked, flags, sizeof(flags)));
	sbx__secmem_free(p, 100);
	assert_false(mapping_of(p, &locked, flags, sizeof(flags)));
	errno = 0;
	assert_null(sbx__secmem_alloc(0));
	assert_int_equal(errno, EINVAL);
}

static void test_core_secrets__no_getter_for_values(void **state)
{
	sbx_secrets *s = *state;

	/* Names are public; a value is reachable only inside the library. */
	assert_int_equal(add(s, "NAME_ONLY", "HIDDENVALUE1"), 0);
	assert_string_equal(sbx_secrets_name(s, 0), "NAME_ONLY");
	assert_null(strstr(sbx_secrets_name(s, 0), "HIDDEN"));
}

#define T(name) cmocka_unit_test_setup_teardown(test_core_secrets__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(new_and_free),
		T(names),
		T(length_bounds),
		T(nul_and_non_utf8_refused),
		T(count_limit),
		T(from_file),
		T(redacted_while_alive),
		T(locked_and_not_dumped),
		T(no_getter_for_values),
		T(scoped_to_their_object),
		T(no_answer_to_a_guessed_prefix),
		T(table_per_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
