/*
 * tests/unit/util/test_redact_stream.c: unit tests of the streaming
 * redactor (util/redact-stream.c) and of the encoded forms every value is
 * searched for (util/redact-forms.c).
 *
 * Covers a stream cut at every offset (two chunks) and at every pair of
 * offsets (three chunks), one byte at a time, and at random, always giving
 * the same bytes as the whole stream redacted at once, which is also what
 * the record redactor gives; overlapping values, a value that is a prefix of
 * another, short values, binary output with NUL and high bytes, a value cut
 * off at the end of the stream, values unregistered mid-stream, the pass
 * through with nothing registered, and base64 (standard and URL-safe, padded
 * or not, at each alignment) and percent-encoded forms, encoded here by the
 * test itself. Secrets are upper case and digits, filler lower case.
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

#include "util/redact-int.h"

#define MAX_IDS 16

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
	return sbx__redact_count() == 0 ? 0 : -1;
}

static void reg(void **state, const char *secret)
{
	struct ids *ids = *state;
	int id = sbx__redact_register(secret, strlen(secret));

	assert_true(id > 0);
	assert_true(ids->n < MAX_IDS);
	ids->id[ids->n++] = id;
}

/* ===== Collecting a stream ===== */

struct sink {
	char *data;
	size_t len;
	int calls;
};

static int collect(void *arg, const char *data, size_t len)
{
	struct sink *k = arg;

	k->data = realloc(k->data, k->len + len + 1);
	assert_non_null(k->data);
	memcpy(k->data + k->len, data, len);
	k->len += len;
	k->data[k->len] = '\0';
	k->calls++;
	return 0;
}

/* Feeds text cut at the given offsets (ascending), flushes, returns the output. */
static struct sink run_cuts(const void *text, size_t n, const size_t *cuts, size_t ncuts)
{
	struct sbx__redact_stream st = {0};
	struct sink k = {0};
	size_t at = 0;

	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;

		assert_int_equal(sbx__redact_stream_feed(&st, (const char *)text + at, end - at,
							 collect, &k),
				 0);
		at = end;
	}
	assert_int_equal(sbx__redact_stream_flush(&st, collect, &k), 0);
	sbx__redact_stream_done(&st);
	if (!k.data)
		k.data = calloc(1, 1);
	return k;
}

static struct sink run_whole(const void *text, size_t n)
{
	return run_cuts(text, n, NULL, 0);
}

static void assert_same(struct sink a, struct sink b)
{
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
}

/* The stream agrees with the record redactor on text. */
static void assert_matches_record(const char *text, struct sink got)
{
	size_t cap = strlen(text) * 12 + 64;
	char *s = malloc(cap);

	assert_non_null(s);
	strcpy(s, text);
	sbx__redact_inplace(s, cap);
	assert_int_equal(strlen(s), got.len);
	assert_memory_equal(s, got.data, got.len);
	free(s);
}

/* Every two-chunk and three-chunk cut of text gives the whole-stream result. */
static void check_all_cuts(const void *text, size_t n)
{
	struct sink whole = run_whole(text, n);

	for (size_t i = 0; i <= n; i++) {
		struct sink k = run_cuts(text, n, &i, 1);

		assert_same(k, whole);
		free(k.data);
	}
	for (size_t i = 0; i <= n; i++)
		for (size_t j = i; j <= n; j++) {
			size_t cuts[2] = {i, j};
			struct sink k = run_cuts(text, n, cuts, 2);

			assert_same(k, whole);
			free(k.data);
		}
	free(whole.data);
}

/* One byte per chunk. */
static struct sink run_bytewise(const void *text, size_t n)
{
	size_t *cuts = calloc(n + 1, sizeof(size_t));
	struct sink k;

	assert_non_null(cuts);
	for (size_t i = 0; i < n; i++)
		cuts[i] = i;
	k = run_cuts(text, n, cuts, n);
	free(cuts);
	return k;
}

/* ===== Splits ===== */

static void test_util_redact_stream__split_at_every_offset(void **state)
{
	static const char text[] = "a=S3CR3TVALUE42 b=S3CR3TVALUE42S3CR3TVALUE42 end";
	struct sink k;

	reg(state, "S3CR3TVALUE42");
	check_all_cuts(text, strlen(text));
	k = run_whole(text, strlen(text));
	assert_string_equal(k.data, "a=<redacted> b=<redacted> end");
	assert_matches_record(text, k);
	free(k.data);
}

static void test_util_redact_stream__one_byte_chunks(void **state)
{
	static const char text[] = "x TOKEN9876543 y TOKEN9876543";
	struct sink k;

	reg(state, "TOKEN9876543");
	k = run_bytewise(text, strlen(text));
	assert_string_equal(k.data, "x <redacted> y <redacted>");
	free(k.data);
}

static void test_util_redact_stream__overlapping_values(void **state)
{
	/* Two values that overlap each other, and one that overlaps itself. */
	static const char text[] = "u=XYZW1234ABCD v=AB12-AB12-AB12 w=XYZW1234 z=1234ABCD.";
	struct sink k;

	reg(state, "XYZW1234");
	reg(state, "1234ABCD");
	reg(state, "AB12-AB12");
	check_all_cuts(text, strlen(text));
	k = run_bytewise(text, strlen(text));
	assert_string_equal(k.data, "u=<redacted> v=<redacted> w=<redacted> z=<redacted>.");
	assert_matches_record(text, k);
	free(k.data);
}

static void test_util_redact_stream__prefix_of_another(void **state)
{
	static const char text[] = "a=QX7ZK2PM9VWT b=QX7ZK2 c=QX7ZK2PM9 d=QX7ZK2PM9VWTQX7ZK2";
	struct sink k;

	reg(state, "QX7ZK2PM9VWT");
	reg(state, "QX7ZK2");
	check_all_cuts(text, strlen(text));
	k = run_whole(text, strlen(text));
	assert_string_equal(k.data, "a=<redacted> b=<redacted> c=<redacted>PM9 d=<redacted>");
	assert_matches_record(text, k);
	free(k.data);
}

/* A shorter value straddles the point where a longer one's window ends. */
static void test_util_redact_stream__short_value_beside_long_window(void **state)
{
	static const char text[] = "pppppppppppppppppppppppppppppQ9Z1qqqqqqqqqqqqqqqqqqqqqqqqqq";
	struct sink k;

	reg(state, "LONGVALUE0123456789ABCDEFGHIJKLMN");
	reg(state, "Q9Z1");
	check_all_cuts(text, strlen(text));
	k = run_bytewise(text, strlen(text));
	assert_null(strstr(k.data, "Q9Z1"));
	assert_non_null(strstr(k.data, SBX_REDACTED));
	free(k.data);
}

/* The shortest value the public API accepts, and shorter internal ones. */
static void test_util_redact_stream__short_values(void **state)
{
	static const char text[] = "K7W2 in K7W2K7W2 and ZQ at ZQ";
	struct sink k;

	reg(state, "K7W2");
	reg(state, "ZQ");
	check_all_cuts(text, strlen(text));
	k = run_whole(text, strlen(text));
	assert_string_equal(k.data, "<redacted> in <redacted> and <redacted> at <redacted>");
	free(k.data);
}

static void test_util_redact_stream__binary_output(void **state)
{
	static const unsigned char text[] = {0x00, 0xff, 'B',  'I',  'N',  '4', '2', 'K', 'E',
					     'Y',  0x00, 0x00, 0x80, 'B',  'I', 'N', '4', '2',
					     'K',  'E',	 'Y',  0xfe, 0x00, 'B', 'I', 'N', '4'};
	static const unsigned char want[] = {0x00, 0xff, '<',  'r', 'e',  'd',	'a',  'c',
					     't',  'e',	 'd',  '>', 0x00, 0x00, 0x80, '<',
					     'r',  'e',	 'd',  'a', 'c',  't',	'e',  'd',
					     '>',  0xfe, 0x00, 'B', 'I',  'N',	'4'};
	struct sink k;

	reg(state, "BIN42KEY");
	check_all_cuts(text, sizeof(text));
	k = run_bytewise(text, sizeof(text));
	/* The stream ends in "BIN4", a prefix of a value: given out as it is. */
	assert_int_equal(k.len, sizeof(want));
	assert_memory_equal(k.data, want, sizeof(want));
	free(k.data);
}

/*
 * A stream that ends in part of a value gives it out as it is, right or
 * wrong: what is redacted never depends on how well a partial guess
 * matches.
 */
static void test_util_redact_stream__value_cut_off_at_end(void **state)
{
	static const char *const tails[] = {"CUTOFF12", "CUTOFF1X", "CUTO", "CUTX", "CUT"};
	char text[64];
	struct sink k;

	reg(state, "CUTOFF1234567");
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		snprintf(text, sizeof(text), "last words: %s", tails[i]);
		k = run_bytewise(text, strlen(text));
		assert_string_equal(k.data, text);
		assert_matches_record(text, k);
		free(k.data);
	}
	k = run_whole("last words: CUTOFF1234567", 25);
	assert_string_equal(k.data, "last words: <redacted>");
	free(k.data);
}

static void test_util_redact_stream__random_chunks(void **state)
{
	static const char *const secrets[] = {"RND4", "RANDOMSECRET99", "RANDOM"};
	char text[4096];
	struct sink whole;
	unsigned int seed = 12345;

	for (size_t i = 0; i < 3; i++)
		reg(state, secrets[i]);
	for (size_t i = 0; i < sizeof(text) - 1;) {
		seed = seed * 1103515245u + 12345u;
		if (seed % 7 == 0 && i + 20 < sizeof(text) - 1) {
			const char *v = secrets[(seed >> 8) % 3];
			memcpy(text + i, v, strlen(v));
			i += strlen(v);
		} else {
			text[i++] = (char)('a' + (seed >> 16) % 26);
		}
	}
	text[sizeof(text) - 1] = '\0';
	whole = run_whole(text, strlen(text));
	assert_null(strstr(whole.data, "RND4"));
	assert_null(strstr(whole.data, "RANDOM"));
	assert_matches_record(text, whole);
	for (int round = 0; round < 200; round++) {
		size_t cuts[64], n = 0, at = 0;
		struct sink k;

		while (n < 64) {
			seed = seed * 1103515245u + 12345u;
			at += 1 + (seed >> 16) % 97;
			if (at >= strlen(text))
				break;
			cuts[n++] = at;
		}
		k = run_cuts(text, strlen(text), cuts, n);
		assert_same(k, whole);
		free(k.data);
	}
	free(whole.data);
}

static void test_util_redact_stream__pass_through_when_nothing_registered(void **state)
{
	static const char text[] = "nothing secret here";
	size_t cuts[3] = {3, 7, 12};
	struct sink k;

	(void)state;
	k = run_cuts(text, strlen(text), cuts, 3);
	assert_string_equal(k.data, text);
	assert_int_equal(k.calls, 4); /* each chunk as it came, nothing held */
	free(k.data);
}

static void test_util_redact_stream__holds_back_at_most_window(void **state)
{
	struct sbx__redact_stream st = {0};
	struct sbx__redact_longest l;
	struct sink k = {0};
	char chunk[100];
	size_t longest;
	unsigned char m[1];

	reg(state, "WINDOW7777");
	assert_int_equal(sbx__redact_mark(NULL, "", 0, m, &l), 0);
	longest = l.plain > l.wrapped ? l.plain : l.wrapped;
	assert_true(longest >= strlen("WINDOW7777"));
	memset(chunk, 'z', sizeof(chunk));
	assert_int_equal(sbx__redact_stream_feed(&st, chunk, sizeof(chunk), collect, &k), 0);
	assert_int_equal(k.len, sizeof(chunk) - (longest - 1));
	assert_int_equal(sbx__redact_stream_flush(&st, collect, &k), 0);
	assert_int_equal(k.len, sizeof(chunk));
	sbx__redact_stream_done(&st);
	free(k.data);
}

static void test_util_redact_stream__unregistered_mid_stream(void **state)
{
	struct ids *ids = *state;
	struct sbx__redact_stream st = {0};
	struct sink k = {0};

	static const char text[] = "head MIDSTREAM55 tail, long enough to pass the window";

	/* Given out before the value goes: redacted. */
	reg(state, "MIDSTREAM55");
	assert_int_equal(sbx__redact_stream_feed(&st, text, strlen(text), collect, &k), 0);
	sbx__redact_unregister(ids->id[--ids->n]);
	assert_int_equal(sbx__redact_stream_feed(&st, " more", 5, collect, &k), 0);
	assert_int_equal(sbx__redact_stream_flush(&st, collect, &k), 0);
	assert_string_equal(k.data, "head <redacted> tail, long enough to pass the window more");
	sbx__redact_stream_done(&st);
	free(k.data);
}

/* ===== Encoded forms ===== */

static void b64(char *dst, const unsigned char *v, size_t n, int url, int pad)
{
	const char *a = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t x = (uint32_t)v[i] << 16;
		size_t left = n - i;

		if (left > 1)
			x |= (uint32_t)v[i + 1] << 8;
		if (left > 2)
			x |= v[i + 2];
		dst[o++] = a[x >> 18 & 63];
		dst[o++] = a[x >> 12 & 63];
		if (left > 1)
			dst[o++] = a[x >> 6 & 63];
		else if (pad)
			dst[o++] = '=';
		if (left > 2)
			dst[o++] = a[x & 63];
		else if (pad)
			dst[o++] = '=';
	}
	dst[o] = '\0';
}

/* Redacts text as a record and as a stream; both must hide every form. */
static char *redacted(const char *text)
{
	struct sink k = run_bytewise(text, strlen(text));

	assert_matches_record(text, k);
	return k.data;
}

/* Of an encoding with a marker in it, at most keep bytes are left around the marker. */
static void assert_mostly_redacted(const char *enc, size_t keep)
{
	char *r = redacted(enc);
	const char *m = strstr(r, SBX_REDACTED);

	if (!m || strlen(r) - strlen(SBX_REDACTED) > keep)
		fail_msg("'%s' became '%s'", enc, r);
	free(r);
}

static void test_util_redact_stream__base64_forms(void **state)
{
	/* Lengths 12, 13, 14: each padding case. */
	static const char *const secrets[] = {"B64SECRET123", "B64SECRET1234", "B64SECRET12345"};
	char enc[128], text[160], *r;

	for (size_t i = 0; i < 3; i++)
		reg(state, secrets[i]);
	for (size_t i = 0; i < 3; i++) {
		const unsigned char *v = (const unsigned char *)secrets[i];
		size_t n = strlen(secrets[i]);

		for (int url = 0; url < 2; url++)
			for (int pad = 0; pad < 2; pad++) {
				b64(enc, v, n, url, pad);
				snprintf(text, sizeof(text), "k=%s;", enc);
				r = redacted(text);
				assert_string_equal(r, "k=<redacted>;");
				free(r);
			}
	}
}

static void test_util_redact_stream__base64_at_every_alignment(void **state)
{
	/* `echo "$S" | base64`, and S preceded by one or two other bytes. */
	static const char secret[] = "ALIGNED7SECRET";
	char in[64], enc[128];

	reg(state, secret);
	for (size_t pre = 0; pre < 3; pre++)
		for (size_t post = 0; post < 3; post++) {
			size_t n = 0;

			memcpy(in, "ab", pre);
			n = pre;
			memcpy(in + n, secret, strlen(secret));
			n += strlen(secret);
			memcpy(in + n, "\n\n", post);
			n += post;
			for (int url = 0; url < 2; url++) {
				b64(enc, (unsigned char *)in, n, url, 1);
				/* Left: what the other bytes decide, two characters each
				 * side at most, and the padding. */
				assert_mostly_redacted(enc, 6);
			}
		}
}

static void test_util_redact_stream__percent_forms(void **state)
{
	static const char *const texts[] = {
		"u=p%40ss%20w%2Frd%3A42&x",
		"u=p%40ss%20w%2frd%3a42&x",
		"u=p%40ss+w%2Frd%3A42&x",
		"u=p%40ss%20w/rd%3A42&x",
	};
	char *r;

	reg(state, "p@ss w/rd:42");
	for (size_t i = 0; i < 4; i++) {
		r = redacted(texts[i]);
		assert_string_equal(r, "u=<redacted>&x");
		free(r);
	}
}

static void test_util_redact_stream__forms_are_distinct_and_bounded(void **state)
{
	struct sbx__redact_form forms[SBX_REDACT_MAX_FORMS];
	unsigned char *dst;
	size_t n, need;

	(void)state;
	/* Only unreserved characters: percent forms equal the value, kept once. */
	need = sbx__redact_forms_size(12);
	dst = malloc(need);
	assert_non_null(dst);
	n = sbx__redact_forms(dst, (const unsigned char *)"PLAINVALUE12", 12, forms,
			      SBX_REDACT_MAX_FORMS);
	assert_true(n >= 2 && n <= SBX_REDACT_MAX_FORMS);
	assert_int_equal(forms[0].len, 12);
	assert_memory_equal(dst + forms[0].off, "PLAINVALUE12", 12);
	for (size_t i = 0; i < n; i++) {
		assert_true(forms[i].off + forms[i].len <= need);
		assert_true(i == 0 || forms[i].len >= SBX_REDACT_FORM_MIN);
		for (size_t j = 0; j < i; j++)
			assert_false(forms[i].len == forms[j].len &&
				     memcmp(dst + forms[i].off, dst + forms[j].off, forms[i].len) ==
					     0);
	}
	free(dst);
}

#define T(name) cmocka_unit_test_setup_teardown(test_util_redact_stream__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(split_at_every_offset),
		T(one_byte_chunks),
		T(overlapping_values),
		T(prefix_of_another),
		T(short_value_beside_long_window),
		T(short_values),
		T(binary_output),
		T(value_cut_off_at_end),
		T(random_chunks),
		T(pass_through_when_nothing_registered),
		T(holds_back_at_most_window),
		T(unregistered_mid_stream),
		T(base64_forms),
		T(base64_at_every_alignment),
		T(percent_forms),
		T(forms_are_distinct_and_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
