/*
 * util/json-text.c: a JSON string of arbitrary bytes.
 *
 * JSON strings must be UTF-8, and what the project quotes in JSON (a run's
 * output, a message that quotes input) is arbitrary bytes: invalid
 * sequences are replaced by U+FFFD (one per maximal ill-formed subpart, as
 * Unicode recommends) and the caller may mark the field "lossy-utf8".
 * jansson makes the string; it has no lossy conversion of its own.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/json-text.h"

/*
 * Length of the well-formed UTF-8 sequence at s (Unicode Table 3-7), or 0
 * with *bad set to the length of its maximal ill-formed subpart (at least 1).
 */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		*bad = 1;
		return 0;
	}
	for (size_t i = 1; i <= need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return need + 1;
}

/*
 * Copies src into dst (which holds at least 3 * len bytes), replacing each
 * ill-formed subpart with U+FFFD. Returns the bytes written; *lossy is set
 * when anything was replaced.
 */
static size_t utf8_lossy(char *dst, const unsigned char *src, size_t len, int *lossy)
{
	size_t i = 0, o = 0, bad = 0;

	while (i < len) {
		size_t n = utf8_seq(src + i, len - i, &bad);

		if (n) {
			memcpy(dst + o, src + i, n);
			o += n;
			i += n;
			continue;
		}
		memcpy(dst + o, "\xEF\xBF\xBD", 3);
		o += 3;
		i += bad;
		if (lossy)
			*lossy = 1;
	}
	return o;
}

/* A JSON string of arbitrary bytes (NULs included); lossy tells whether
 * anything had to be replaced. Returns a json_t *, or NULL without memory. */
json_t *sbx__json_text(const char *data, size_t len, int *lossy)
{
	json_t *s;
	char *fixed;
	size_t n;

	if (lossy)
		*lossy = 0;
	if (!data)
		return json_string("");
	s = json_stringn(data, len);
	if (s)
		return s;
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	fixed = malloc(len * 3 + 1);
	if (!fixed)
		return NULL;
	n = utf8_lossy(fixed, (const unsigned char *)data, len, lossy);
	s = json_stringn(fixed, n);
	free(fixed);
	return s;
}
