/*
 * util/redact-forms.c: the encoded forms of a secret value that the
 * redactor looks for besides the value itself.
 *
 * A program that prints a secret through `base64` or puts it in a URL has
 * leaked it just the same, so each value is also searched for as:
 *   - base64, standard and URL-safe alphabets, with and without padding;
 *   - the base64 characters that depend on the value alone, at each of the
 *     three alignments it can have inside a longer encoded text (a value
 *     preceded by 1 or 2 other bytes, or followed by anything, such as the
 *     newline `echo "$S" | base64` adds);
 *   - percent-encoding: every byte but RFC 3986's unreserved ones as %XX
 *     (upper and lower case hex), the form encoding (space as '+'), and the
 *     path style that keeps '/'.
 * Identical forms are kept once, and a derived form shorter than
 * SBX_REDACT_FORM_MIN bytes is dropped: it would match by chance.
 */
#include <string.h>

#include "util/redact-int.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The 6-bit group j of the bit string (shift zero bytes, then v). */
static unsigned int sextet(const unsigned char *v, size_t len, size_t shift, size_t j)
{
	unsigned int x = 0;

	for (size_t b = 6 * j; b < 6 * j + 6; b++) {
		size_t byte = b / 8;
		unsigned int bit = 0;

		if (byte >= shift && byte - shift < len)
			bit = (v[byte - shift] >> (7 - b % 8)) & 1u;
		x = x << 1 | bit;
	}
	return x;
}

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

struct sink {
	unsigned char *dst;
	size_t used;
	struct sbx_redact_form *forms;
	size_t nforms, max;
};

/* Keeps the form just written at dst+start if it is long enough and new. */
static void commit(struct sink *s, size_t start, int derived)
{
	size_t len = s->used - start;

	if (len == 0 || (derived && len < SBX_REDACT_FORM_MIN) || s->nforms >= s->max) {
		s->used = start;
		return;
	}
	for (size_t i = 0; i < s->nforms; i++)
		if (s->forms[i].len == len &&
		    memcmp(s->dst + s->forms[i].off, s->dst + start, len) == 0) {
			s->used = start;
			return;
		}
	s->forms[s->nforms].off = start;
	s->forms[s->nforms].len = len;
	s->nforms++;
}

static void put(struct sink *s, char c)
{
	s->dst[s->used++] = (unsigned char)c;
}

static void base64_forms(struct sink *s, const unsigned char *v, size_t len, const char *alpha)
{
	size_t part = (8 * len + 5) / 6, start;

	/* Padded, then unpadded: the whole encoding of v alone. */
	start = s->used;
	for (size_t j = 0; j < part; j++)
		put(s, alpha[sextet(v, len, 0, j)]);
	for (size_t j = part; j % 4; j++)
		put(s, '=');
	commit(s, start, 1);
	start = s->used;
	for (size_t j = 0; j < part; j++)
		put(s, alpha[sextet(v, len, 0, j)]);
	commit(s, start, 1);
	/* The characters that depend on v alone, at shifts of 0, 1 and 2 bytes. */
	for (size_t shift = 0; shift < 3; shift++) {
		size_t first = (8 * shift + 5) / 6, end = (8 * (shift + len)) / 6;

		start = s->used;
		for (size_t j = first; j < end; j++)
			put(s, alpha[sextet(v, len, shift, j)]);
		commit(s, start, 1);
	}
}

enum pct_style { PCT_UPPER, PCT_LOWER, PCT_FORM, PCT_PATH };

static void percent_form(struct sink *s, const unsigned char *v, size_t len, enum pct_style st)
{
	const char *hex = st == PCT_LOWER ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t start = s->used;

	for (size_t i = 0; i < len; i++) {
		if (unreserved(v[i]) || (st == PCT_PATH && v[i] == '/')) {
			put(s, (char)v[i]);
		} else if (st == PCT_FORM && v[i] == ' ') {
			put(s, '+');
		} else {
			put(s, '%');
			put(s, hex[v[i] >> 4]);
			put(s, hex[v[i] & 15]);
		}
	}
	commit(s, start, 1);
}

static void all_forms(struct sink *s, const unsigned char *v, size_t len)
{
	size_t start = s->used;

	for (size_t i = 0; i < len; i++)
		put(s, (char)v[i]);
	commit(s, start, 0);
	base64_forms(s, v, len, b64_std);
	base64_forms(s, v, len, b64_url);
	percent_form(s, v, len, PCT_UPPER);
	percent_form(s, v, len, PCT_LOWER);
	percent_form(s, v, len, PCT_FORM);
	percent_form(s, v, len, PCT_PATH);
}

size_t sbx__redact_forms_size(size_t len)
{
	/* The value, ten base64 forms of at most 4 * ceil(len / 3) bytes,
	 * four percent forms of at most 3 * len. */
	return len + 10 * (4 * ((len + 2) / 3) + 4) + 12 * len;
}

size_t sbx__redact_forms(unsigned char *dst,
			 const unsigned char *v,
			 size_t len,
			 struct sbx_redact_form *forms,
			 size_t max)
{
	struct sink s = {.dst = dst, .forms = forms, .max = max};

	all_forms(&s, v, len);
	return s.nforms;
}
