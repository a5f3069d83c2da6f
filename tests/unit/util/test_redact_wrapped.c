/*
 * tests/unit/util/test_redact_wrapped.c: encoded forms of a value cut into
 * lines, as encoders write them (coreutils base64 and MIME at 76 columns,
 * PEM at 64, xxd -p at 60), caught by the record redactor and the streaming
 * one alike.
 *
 * Covers base64 (standard and URL-safe, each of the three byte alignments
 * of the value in the encoded text, the value written twice as in
 * `printf %s "$T$T" | base64`) and hex (lower and upper case), wrapped at
 * every width from 1 to 80 columns with LF and with CRLF, fed whole, one
 * byte at a time and in random chunks; and a differential property: random
 * output with wrapped encodings in it, redacted as a record and as a stream
 * cut at random, gives the same bytes every way. Secrets here are upper
 * case and digits, so a fragment of one does not occur by chance.
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

#define MAX_IDS 8

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
	ids->id[ids->n++] = id;
}

/* ===== Encoders, independent of the library's ===== */

static size_t b64(char *dst, const unsigned char *v, size_t n, int url)
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
		dst[o++] = left > 1 ? a[x >> 6 & 63] : '=';
		dst[o++] = left > 2 ? a[x & 63] : '=';
	}
	dst[o] = '\0';
	return o;
}

static size_t hex(char *dst, const unsigned char *v, size_t n, int upper)
{
	const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = d[v[i] >> 4];
		dst[2 * i + 1] = d[v[i] & 15];
	}
	dst[2 * n] = '\0';
	return 2 * n;
}

/* Cuts enc into lines of width columns ending in eol, as encoders do. */
static size_t wrap(char *dst, const char *enc, size_t n, size_t width, const char *eol)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		dst[o++] = enc[i];
		if ((i + 1) % width == 0 || i + 1 == n) {
			memcpy(dst + o, eol, strlen(eol));
			o += strlen(eol);
		}
	}
	dst[o] = '\0';
	return o;
}

/* ===== Redacting three ways ===== */

struct sink {
	char *data;
	size_t len;
};

static int collect(void *arg, const char *data, size_t len)
{
	struct sink *k = arg;

	k->data = realloc(k->data, k->len + len + 1);
	assert_non_null(k->data);
	memcpy(k->data + k->len, data, len);
	k->len += len;
	k->data[k->len] = '\0';
	return 0;
}

static char *stream_cut(const char *text, size_t n, const size_t *cuts, size_t ncuts)
{
	struct sbx__redact_stream st = {0};
	struct sink k = {0};
	size_t at = 0;

	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;

		assert_int_equal(sbx__redact_stream_feed(&st, text + at, end - at, collect, &k), 0);
		at = end;
	}
	assert_int_equal(sbx__redact_stream_flush(&st, collect, &k), 0);
	sbx__redact_stream_done(&st);
	return k.data ? k.data : calloc(1, 1);
}

static char *as_record(const char *text)
{
	size_t cap = strlen(text) * 12 + 64;
	char *s = malloc(cap);

	assert_non_null(s);
	strcpy(s, text);
	sbx__redact_inplace(s, cap);
	return s;
}

static unsigned int rnd(unsigned int *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 16;
}

/* Redacts text as a record, whole, bytewise and in random chunks: all agree. */
static char *redact_every_way(const char *text, unsigned int seed)
{
	size_t n = strlen(text), *cuts = calloc(n + 1, sizeof(size_t)), nc = 0;
	char *rec = as_record(text), *s;

	assert_non_null(cuts);
	s = stream_cut(text, n, NULL, 0);
	assert_string_equal(s, rec);
	free(s);
	for (size_t i = 1; i < n; i++)
		cuts[nc++] = i;
	s = stream_cut(text, n, cuts, nc);
	assert_string_equal(s, rec);
	free(s);
	for (int round = 0; round < 4; round++) {
		size_t at = 0;

		nc = 0;
		while ((at += 1 + rnd(&seed) % 23) < n)
			cuts[nc++] = at;
		s = stream_cut(text, n, cuts, nc);
		assert_string_equal(s, rec);
		free(s);
	}
	free(cuts);
	return rec;
}

/* Characters of the encoding left in r (markers and line breaks aside). */
static size_t left_over(const char *r)
{
	size_t n = 0;

	for (const char *p = r; *p;) {
		if (strncmp(p, SBX_REDACTED, strlen(SBX_REDACTED)) == 0) {
			p += strlen(SBX_REDACTED);
			continue;
		}
		n += *p != '\r' && *p != '\n';
		p++;
	}
	return n;
}

static const char *const eols[] = {"\n", "\r\n"};

/* ===== base64 ===== */

/*
 * pre (0 to 2 bytes) + T + T + post, base64, wrapped at every width: what
 * is left is at most what the other bytes decide (a few characters at
 * each end and between the copies) and the padding.
 */
static void test_util_redact_wrapped__base64_every_width_alignment_alphabet(void **state)
{
	static const char secret[] = "WRAPPED7SECRET4TOKEN";
	unsigned char in[128];
	char enc[256], text[1024];
	unsigned int seed = 99;

	reg(state, secret);
	for (size_t pre = 0; pre < 3; pre++)
		for (size_t post = 0; post < 2; post++) {
			size_t n = 0, elen;

			memcpy(in, "ab", pre);
			n += pre;
			memcpy(in + n, secret, strlen(secret));
			n += strlen(secret);
			memcpy(in + n, secret, strlen(secret));
			n += strlen(secret);
			memcpy(in + n, "\n", post);
			n += post;
			for (int url = 0; url < 2; url++) {
				elen = b64(enc, in, n, url);
				for (size_t w = 1; w <= 80; w++)
					for (size_t e = 0; e < 2; e++) {
						char *r;

						wrap(text, enc, elen, w, eols[e]);
						r = redact_every_way(text, seed++);
						if (!strstr(r, SBX_REDACTED) || left_over(r) > 12)
							fail_msg("pre %zu post %zu url %d width "
								 "%zu: "
								 "'%s' became '%s'",
								 pre, post, url, w, text, r);
						free(r);
					}
			}
		}
}

/* The common widths, the way the tools write it, with text around it. */
static void test_util_redact_wrapped__base64_pem_and_mime(void **state)
{
	static const char secret[] = "PEMLIKE9SECRET0VALUE77KEY1PEMLIKE9SECRET0VALUE77KEY2ABCDEFGH";
	static const size_t widths[] = {64, 76};
	char enc[128], text[512], wrapped[256];

	reg(state, secret);
	for (size_t i = 0; i < 2; i++)
		for (size_t e = 0; e < 2; e++) {
			char *r;

			b64(enc, (const unsigned char *)secret, strlen(secret), 0);
			wrap(wrapped, enc, strlen(enc), widths[i], eols[e]);
			snprintf(text, sizeof(text), "-----BEGIN KEY-----%s%s-----END KEY-----%s",
				 eols[e], wrapped, eols[e]);
			r = redact_every_way(text, 7);
			snprintf(wrapped, sizeof(wrapped),
				 "-----BEGIN KEY-----%s%s%s-----END KEY-----%s", eols[e],
				 SBX_REDACTED, eols[e], eols[e]);
			assert_string_equal(r, wrapped);
			free(r);
		}
}

/* ===== hex ===== */

static void test_util_redact_wrapped__hex_every_width_both_cases(void **state)
{
	static const char secret[] = "HEXWRAP5SECRET";
	char enc[64], text[256], want[64];
	unsigned int seed = 5;

	reg(state, secret);
	for (int upper = 0; upper < 2; upper++) {
		size_t elen = hex(enc, (const unsigned char *)secret, strlen(secret), upper);

		for (size_t w = 1; w <= 80; w++)
			for (size_t e = 0; e < 2; e++) {
				char *r;

				wrap(text, enc, elen, w, eols[e]);
				r = redact_every_way(text, seed++);
				/* All of it, the line breaks inside included; the last stays. */
				snprintf(want, sizeof(want), "%s%s", SBX_REDACTED, eols[e]);
				assert_string_equal(r, want);
				free(r);
			}
	}
}

/* ===== What is not an encoded value ===== */

/* A blank line ends an encoded text: halves on either side are not joined. */
static void test_util_redact_wrapped__blank_line_is_not_skipped(void **state)
{
	static const char secret[] = "BLANKLINE3SECRET";
	char enc[64], text[128];
	char *r;

	reg(state, secret);
	hex(enc, (const unsigned char *)secret, strlen(secret), 0);
	snprintf(text, sizeof(text), "%.16s\n\n\n%s\n", enc, enc + 16);
	r = redact_every_way(text, 3);
	assert_string_equal(r, text);
	free(r);
	/* The value itself is not searched across line breaks. */
	r = redact_every_way("BLANKLINE3\nSECRET\n", 4);
	assert_string_equal(r, "BLANKLINE3\nSECRET\n");
	free(r);
}

/* A terminal's echo of a value typed key by key, cut where the line reaches
 * the terminal's width: bash's line editor writes " \r" there, and the
 * terminal draws the value whole. Redacted as one, however the stream is
 * cut (bytewise too: a space at a chunk's end may be the start of one). */
static void test_util_redact_wrapped__value_across_a_terminal_wrap(void **state)
{
	static const char secret[] = "TERMWRAP7SECRET";
	char *r;

	reg(state, secret);
	r = redact_every_way("$ echo TERMWRAP7 \rSECRET\r\nTERMWRAP7SECRET\r\n$ ", 5);
	assert_string_equal(r, "$ echo " SBX_REDACTED "\r\n" SBX_REDACTED "\r\n$ ");
	free(r);
	r = redact_every_way("T \rERMWRAP7SECRET", 6);
	assert_string_equal(r, SBX_REDACTED);
	free(r);
	/* Only that break: a space, a lone CR or an LF alone still cut it. */
	r = redact_every_way("TERMWRAP7 SECRET TERMWRAP7\rSECRET TERMWRAP7\nSECRET", 7);
	assert_string_equal(r, "TERMWRAP7 SECRET TERMWRAP7\rSECRET TERMWRAP7\nSECRET");
	free(r);
}

/* ===== Differential property ===== */

/*
 * Random output: words, line breaks, and the secrets written as they are
 * and in every encoding, wrapped at random widths. Streamed in random
 * chunks it must give exactly what the record redactor gives whole, and no
 * encoding of a secret may survive.
 */
static void test_util_redact_wrapped__random_splits_agree(void **state)
{
	static const char *const secrets[] = {"DIFF1SECRET2", "DIFFERENTIAL3TOKEN4"};
	unsigned int seed = 424242;
	char *text = malloc(16384), enc[256];

	assert_non_null(text);
	for (size_t i = 0; i < 2; i++)
		reg(state, secrets[i]);
	for (int round = 0; round < 150; round++) {
		size_t n = 0;
		char *r;

		while (n < 12000) {
			unsigned int k = rnd(&seed) % 10;
			const char *v = secrets[rnd(&seed) % 2];
			size_t elen, w = 1 + rnd(&seed) % 80;
			const char *eol = eols[rnd(&seed) % 2];

			if (k < 5) {
				for (unsigned int j = 0, l = 1 + rnd(&seed) % 12; j < l; j++)
					text[n++] = (char)('a' + rnd(&seed) % 26);
				text[n++] = rnd(&seed) % 4 ? ' ' : '\n';
				continue;
			}
			if (k == 5)
				elen = (size_t)snprintf(enc, sizeof(enc), "%s", v);
			else if (k < 8)
				elen = b64(enc, (const unsigned char *)v, strlen(v), k == 7);
			else
				elen = hex(enc, (const unsigned char *)v, strlen(v), k == 9);
			n += wrap(text + n, enc, elen, k == 5 ? 1000 : w, eol);
		}
		text[n] = '\0';
		r = redact_every_way(text, seed);
		for (size_t i = 0; i < 2; i++) {
			char e[128];

			assert_null(strstr(r, secrets[i]));
			hex(e, (const unsigned char *)secrets[i], strlen(secrets[i]), 0);
			assert_null(strstr(r, e));
			b64(e, (const unsigned char *)secrets[i], strlen(secrets[i]), 0);
			e[8] = '\0'; /* a line of 8 or more characters of it */
			assert_null(strstr(r, e));
		}
		free(r);
	}
	free(text);
}

#define T(name) cmocka_unit_test_setup_teardown(test_util_redact_wrapped__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(base64_every_width_alignment_alphabet),
		T(base64_pem_and_mime),
		T(hex_every_width_both_cases),
		T(blank_line_is_not_skipped),
		T(value_across_a_terminal_wrap),
		T(random_splits_agree),
	};

	return cmocka_run_group_tests_name("redaction of wrapped encodings", tests, NULL, NULL);
}
