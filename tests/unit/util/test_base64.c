/*
 * tests/unit/util/test_base64.c: unit tests of util/base64.c, the one
 * base64 codec (and hex digit reader) of the project.
 *
 * Covers RFC 4648's test vectors both ways; a round trip of every length
 * from 0 to 64 (bytes from a fixed generator, and every byte value) under
 * every flag, padded, unpadded and URL-safe, into heap blocks of exactly
 * the promised size so a sanitizer sees any write past them; the length
 * helpers; and strictness: every byte outside the alphabet at every place
 * of a group, whitespace, an embedded NUL, padding that is short, long, in
 * the middle or where none may be, a length that leaves one character,
 * the URL-safe alphabet and missing padding only with their flags, and a
 * refusal wiping what it had decoded. Also every byte's hex value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/base64.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define ALL_FLAGS 4 /* every combination of SBX__BASE64_URL and SBX__BASE64_NOPAD */

static const char std_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decodes s (its strlen) under flags into an exact-size heap block;
 * returns the result, the bytes in out (when room) and their count. */
static int decode(const char *s, unsigned flags, unsigned char *out, size_t room, size_t *n)
{
	size_t len = strlen(s), max = sbx__base64_decoded_max(len);
	unsigned char *dst = malloc(max ? max : 1);
	int rc;

	assert_non_null(dst);
	*n = (size_t)-1;
	rc = sbx__base64_decode(dst, n, s, len, flags);
	if (rc == 0) {
		assert_true(*n <= max);
		assert_true(*n <= room);
		memcpy(out, dst, *n);
	} else {
		assert_int_equal(rc, -1);
		assert_true(*n == (size_t)-1);
	}
	free(dst);
	return rc;
}

static void refused_under(const char *s, unsigned flags)
{
	unsigned char out[64];
	size_t n;

	if (decode(s, flags, out, sizeof(out), &n) != -1)
		fail_msg("\"%s\" decoded under flags %u", s, flags);
}

static void refused_always(const char *s)
{
	for (unsigned f = 0; f < ALL_FLAGS; f++)
		refused_under(s, f);
}

static void test_util_base64__rfc4648_vectors(void **state)
{
	static const struct {
		const char *plain, *enc, *unpadded;
	} v[] = {{"", "", ""},
		 {"f", "Zg==", "Zg"},
		 {"fo", "Zm8=", "Zm8"},
		 {"foo", "Zm9v", "Zm9v"},
		 {"foob", "Zm9vYg==", "Zm9vYg"},
		 {"fooba", "Zm9vYmE=", "Zm9vYmE"},
		 {"foobar", "Zm9vYmFy", "Zm9vYmFy"}};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(v); i++) {
		size_t pl = strlen(v[i].plain), n;
		char enc[16];
		unsigned char dec[16];

		memset(enc, 'X', sizeof(enc));
		assert_int_equal(sbx__base64_encoded_len(pl), strlen(v[i].enc));
		assert_int_equal(sbx__base64_encode(enc, v[i].plain, pl), strlen(v[i].enc));
		assert_string_equal(enc, v[i].enc);
		for (unsigned f = 0; f < ALL_FLAGS; f++) {
			assert_int_equal(decode(v[i].enc, f, dec, sizeof(dec), &n), 0);
			assert_int_equal(n, pl);
			assert_memory_equal(dec, v[i].plain, pl);
		}
		/* Unpadded: only with SBX__BASE64_NOPAD when padding was due. */
		for (unsigned f = 0; f < ALL_FLAGS; f++) {
			int want = (f & SBX__BASE64_NOPAD) || pl % 3 == 0 ? 0 : -1;

			assert_int_equal(decode(v[i].unpadded, f, dec, sizeof(dec), &n), want);
			if (want == 0) {
				assert_int_equal(n, pl);
				assert_memory_equal(dec, v[i].plain, pl);
			}
		}
	}
}

static void test_util_base64__lengths(void **state)
{
	(void)state;
	for (size_t n = 0; n < 100; n++) {
		assert_int_equal(sbx__base64_encoded_len(n), 4 * ((n + 2) / 3));
		assert_int_equal(sbx__base64_decoded_max(n), 3 * n / 4);
	}
	/* Near the top of size_t: no overflow in the arithmetic. */
	assert_int_equal(sbx__base64_decoded_max(SIZE_MAX), SIZE_MAX / 4 * 3 + 2);
	assert_int_equal(sbx__base64_encoded_len(SIZE_MAX / 4 * 3), SIZE_MAX / 4 * 4);
}

/* The URL-safe, and the unpadded, forms of a standard encoding. */
static void url_form(char *s)
{
	for (; *s; s++)
		*s = *s == '+' ? '-' : *s == '/' ? '_' : *s;
}

static void strip_pad(char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == '=')
		s[--n] = '\0';
}

static void round_trip(const unsigned char *data, size_t len)
{
	size_t elen = sbx__base64_encoded_len(len), n;
	char *enc = malloc(elen + 1), *alt = malloc(elen + 1);
	unsigned char dec[64];

	assert_non_null(enc);
	assert_non_null(alt);
	assert_int_equal(sbx__base64_encode(enc, data, len), elen);
	assert_int_equal(strlen(enc), elen);
	for (size_t k = 0; k < elen; k++)
		assert_true(strchr(std_alphabet, enc[k]) || (enc[k] == '=' && k + 2 >= elen));
	for (unsigned f = 0; f < ALL_FLAGS; f++) {
		assert_int_equal(decode(enc, f, dec, sizeof(dec), &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, data, len);
	}
	memcpy(alt, enc, elen + 1);
	url_form(alt);
	for (unsigned f = 0; f < ALL_FLAGS; f++) {
		int want = (f & SBX__BASE64_URL) || strcmp(alt, enc) == 0 ? 0 : -1;

		assert_int_equal(decode(alt, f, dec, sizeof(dec), &n), want);
		if (want == 0) {
			assert_int_equal(n, len);
			assert_memory_equal(dec, data, len);
		}
	}
	strip_pad(alt);
	for (unsigned f = 0; f < ALL_FLAGS; f++) {
		int want = ((f & SBX__BASE64_URL) || !strpbrk(alt, "-_")) &&
					   ((f & SBX__BASE64_NOPAD) || len % 3 == 0)
				   ? 0
				   : -1;

		assert_int_equal(decode(alt, f, dec, sizeof(dec), &n), want);
		if (want == 0) {
			assert_int_equal(n, len);
			assert_memory_equal(dec, data, len);
		}
	}
	free(enc);
	free(alt);
}

static void test_util_base64__round_trip_every_length(void **state)
{
	unsigned char data[64] = {0};
	uint32_t x = 12345;

	(void)state;
	for (size_t len = 0; len <= sizeof(data); len++) {
		for (size_t k = 0; k < len; k++) {
			x = x * 1103515245u + 12345u;
			data[k] = (unsigned char)(x >> 16);
		}
		round_trip(data, len);
		/* The bytes that encode to '+' and '/' (0xfb 0xff) and zeros. */
		for (size_t k = 0; k < len; k++)
			data[k] = k % 3 == 2 ? 0 : (unsigned char)(0xfb + 4 * (k % 2));
		round_trip(data, len);
	}
}

static void test_util_base64__every_byte_value(void **state)
{
	unsigned char data[256];
	char enc[400];
	unsigned char *dec = malloc(sbx__base64_decoded_max(344));
	size_t n;

	(void)state;
	assert_non_null(dec);
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (unsigned char)k;
	assert_int_equal(sbx__base64_encode(enc, data, sizeof(data)), 344);
	assert_int_equal(sbx__base64_decode(dec, &n, enc, 344, 0), 0);
	assert_int_equal(n, sizeof(data));
	assert_memory_equal(dec, data, sizeof(data));
	free(dec);
}

static void test_util_base64__whole_alphabet(void **state)
{
	unsigned char dec[48];
	size_t n;

	(void)state;
	/* 64 characters, each sextet value once, in order. */
	assert_int_equal(decode(std_alphabet, 0, dec, sizeof(dec), &n), 0);
	assert_int_equal(n, 48);
	for (size_t k = 0; k < 64; k++) {
		size_t bit = 6 * k;
		unsigned v = 0;

		for (size_t b = bit; b < bit + 6; b++)
			v = v << 1 | ((dec[b / 8] >> (7 - b % 8)) & 1u);
		assert_int_equal(v, k);
	}
}

static void test_util_base64__bad_characters(void **state)
{
	(void)state;
	for (int c = 0; c < 256; c++) {
		int url = c == '-' || c == '_';

		if (c == '=' || (c && strchr(std_alphabet, c)))
			continue;
		for (size_t at = 0; at < 8; at++) {
			char s[9] = "Zm9vYmFy";
			unsigned char dst[6]; /* sbx__base64_decoded_max(8) */
			size_t n;

			s[at] = (char)c;
			for (unsigned f = 0; f < ALL_FLAGS; f++) {
				int rc = sbx__base64_decode(dst, &n, s, 8, f);

				if (url && (f & SBX__BASE64_URL)) {
					assert_int_equal(rc, 0);
					assert_int_equal(n, 6);
				} else if (rc != -1) {
					fail_msg("byte %d at %zu decoded under flags %u", c, at, f);
				}
			}
		}
	}
}

static void test_util_base64__whitespace_and_nul(void **state)
{
	static const char *const bad[] = {"Zm9v Zg==", "Zm9v\nZg==", "Zm9vZg==\n", "Zm9vZg==\r\n",
					  " Zm9vZg==", "Zm9v\tZg==", "Zm9vZg= =",  "Zm 9v"};
	unsigned char dst[16];
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		refused_always(bad[i]);
	/* A NUL inside the given length is a byte like any other: refused,
	 * whether mid-text or at its end. */
	for (unsigned f = 0; f < ALL_FLAGS; f++) {
		assert_int_equal(sbx__base64_decode(dst, &n, "Zm9v\0Zg==", 9, f), -1);
		assert_int_equal(sbx__base64_decode(dst, &n, "Zm9v\0", 5, f), -1);
		assert_int_equal(sbx__base64_decode(dst, &n, "Zm9vZg==\0\0\0\0", 12, f), -1);
	}
	/* Only the given length is read: the NUL past it does not matter. */
	assert_int_equal(sbx__base64_decode(dst, &n, "Zm9vZg==", 4, 0), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(dst, "foo", 3);
}

static void test_util_base64__bad_padding(void **state)
{
	/* Refused whatever the flags. */
	static const char *const bad[] = {
		"=",	    "==",	"===",	    "====",	 "Z===",     "Zg===",
		"Zm9v=",    "Zm9v==",	"Zm9v====", "Zg==Zm9v",	 "Zg==Zg==", "Z=g=",
		"Zm=v",	    "Zm9=Zm9v", "=Zm9",	    "Zg=",	 "Zm9vZg=",  "Zm9vY",
		"Zm9vY===", "Z",	"ZZZZZ",    "Zm9vYmE==", "Zm9vY==",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		refused_always(bad[i]);
	/* Padding left off: only with SBX__BASE64_NOPAD. */
	refused_under("Zg", 0);
	refused_under("Zm8", SBX__BASE64_URL);
}

static void test_util_base64__unused_bits_are_not_checked(void **state)
{
	unsigned char dec[4];
	size_t n;

	(void)state;
	/* "Zh==" has bits set past the one byte it holds: read as "f", as
	 * Go's default decoder (protojson's) reads it. */
	assert_int_equal(decode("Zh==", 0, dec, sizeof(dec), &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(dec[0], 'f');
	assert_int_equal(decode("Zm9=", 0, dec, sizeof(dec), &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(dec, "fo", 2);
}

static void test_util_base64__refusal_wipes_output(void **state)
{
	unsigned char dst[16];
	size_t n = 777;

	(void)state;
	memset(dst, 0xaa, sizeof(dst));
	/* "foo" and "ba" are decoded before the '!' is met. */
	assert_int_equal(sbx__base64_decode(dst, &n, "Zm9vYmF!", 8, 0), -1);
	assert_int_equal(n, 777);
	for (size_t k = 0; k < 5; k++)
		assert_int_equal(dst[k], 0);
	for (size_t k = 5; k < sizeof(dst); k++)
		assert_int_equal(dst[k], 0xaa);
	/* A refused shape writes nothing. */
	memset(dst, 0xaa, sizeof(dst));
	assert_int_equal(sbx__base64_decode(dst, &n, "Zm9vYmFyZ", 9, SBX__BASE64_NOPAD), -1);
	for (size_t k = 0; k < sizeof(dst); k++)
		assert_int_equal(dst[k], 0xaa);
}

static void test_util_base64__hexval(void **state)
{
	(void)state;
	for (int c = -1; c < 256; c++) {
		int want = -1;

		if (c >= '0' && c <= '9')
			want = c - '0';
		else if (c >= 'a' && c <= 'f')
			want = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			want = c - 'A' + 10;
		assert_int_equal(sbx__hexval(c), want);
	}
	assert_int_equal(sbx__hexval('g'), -1);
	assert_int_equal(sbx__hexval('F'), 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util_base64__rfc4648_vectors),
		cmocka_unit_test(test_util_base64__lengths),
		cmocka_unit_test(test_util_base64__round_trip_every_length),
		cmocka_unit_test(test_util_base64__every_byte_value),
		cmocka_unit_test(test_util_base64__whole_alphabet),
		cmocka_unit_test(test_util_base64__bad_characters),
		cmocka_unit_test(test_util_base64__whitespace_and_nul),
		cmocka_unit_test(test_util_base64__bad_padding),
		cmocka_unit_test(test_util_base64__unused_bits_are_not_checked),
		cmocka_unit_test(test_util_base64__refusal_wipes_output),
		cmocka_unit_test(test_util_base64__hexval),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
