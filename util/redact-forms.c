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
 *   - hex, lower and upper case (xxd -p, od, sha-style dumps);
 *   - percent-encoding: every byte but RFC 3986's unreserved ones as %XX
 *     (upper and lower case hex), the form encoding (space as '+'), and the
 *     path style that keeps '/'.
 * The base64 and hex forms are marked wrapped: encoders cut them into lines
 * (76 columns for coreutils and MIME, 64 for PEM, 60 for xxd), so the
 * matcher (util/redact.c) skips line breaks between their characters.
 * Identical forms are kept once, and a derived form shorter than
 * SBX_REDACT_FORM_MIN bytes is dropped: it would match by chance. The
 * base64 is util/base64.c's, written straight into the output (the URL-safe
 * alphabet by substitution, the unaligned forms cut out of an encoding);
 * the slack of each form's share of the buffer takes the encoder's NUL.
 */
#include <string.h>

#include "util/base64.h"
#include "util/redact-int.h"

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

struct sink {
	unsigned char *dst;
	size_t used;
	struct sbx__redact_form *forms;
	size_t nforms, max;
};

/* Keeps the form just written at dst+start if it is long enough and new. */
static void commit(struct sink *s, size_t start, int derived, int wrapped)
{
	size_t len = s->used - start;

	if (len == 0 || (derived && len < SBX_REDACT_FORM_MIN) || s->nforms >= s->max) {
		s->used = start;
		return;
	}
	for (size_t i = 0; i < s->nforms; i++)
		if (s->forms[i].len == len &&
		    memcmp(s->dst + s->forms[i].off, s->dst + start, len) == 0) {
			/* Kept once; wrapped if either is (it only widens the search). */
			s->forms[i].wrapped |= wrapped;
			s->used = start;
			return;
		}
	s->forms[s->nforms].off = start;
	s->forms[s->nforms].len = len;
	s->forms[s->nforms].wrapped = wrapped;
	s->nforms++;
}

static void put(struct sink *s, char c)
{
	s->dst[s->used++] = (unsigned char)c;
}

/* The URL-safe form of the base64 just written at dst+start: '-' and '_'
 * for '+' and '/'. */
static void url_safe(struct sink *s, size_t start)
{
	for (size_t i = start; i < s->used; i++) {
		if (s->dst[i] == '+')
			s->dst[i] = '-';
		else if (s->dst[i] == '/')
			s->dst[i] = '_';
	}
}

/*
 * The characters of the base64 of (shift zero bytes, then v) that depend on
 * v alone: what v looks like wherever it sits in a longer encoded text. The
 * encoding is that of the first group of three bytes (the zeros and v's
 * first bytes, zero-filled when v is shorter) followed by that of the rest
 * of v; the first characters hold bits of the zeros and the last may hold
 * fill bits, and both are cut.
 */
static void shifted_form(struct sink *s, const unsigned char *v, size_t len, size_t shift, int url)
{
	size_t first = (8 * shift + 5) / 6, end = 8 * (shift + len) / 6, head = 3 - shift;
	size_t start = s->used;
	char *p = (char *)s->dst + start;
	unsigned char group[3] = {0};

	if (end <= first)
		return;
	memcpy(group + shift, v, len < head ? len : head);
	sbx__base64_encode(p, group, sizeof(group));
	explicit_bzero(group, sizeof(group));
	if (len > head)
		sbx__base64_encode(p + 4, v + head, len - head);
	memmove(p, p + first, end - first);
	s->used += end - first;
	if (url)
		url_safe(s, start);
	commit(s, start, 1, 1);
}

static void base64_forms(struct sink *s, const unsigned char *v, size_t len, int url)
{
	size_t start;

	/* Padded, then unpadded: the whole encoding of v alone. */
	start = s->used;
	s->used += sbx__base64_encode((char *)s->dst + start, v, len);
	if (url)
		url_safe(s, start);
	commit(s, start, 1, 1);
	start = s->used;
	s->used += sbx__base64_encode((char *)s->dst + start, v, len);
	if (url)
		url_safe(s, start);
	while (s->used > start && s->dst[s->used - 1] == '=')
		s->used--;
	commit(s, start, 1, 1);
	/* The characters that depend on v alone, at shifts of 0, 1 and 2 bytes. */
	for (size_t shift = 0; shift < 3; shift++)
		shifted_form(s, v, len, shift, url);
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
	commit(s, start, 1, 0);
}

static void hex_form(struct sink *s, const unsigned char *v, size_t len, const char *hex)
{
	size_t start = s->used;

	for (size_t i = 0; i < len; i++) {
		put(s, hex[v[i] >> 4]);
		put(s, hex[v[i] & 15]);
	}
	commit(s, start, 1, 1);
}

static void all_forms(struct sink *s, const unsigned char *v, size_t len)
{
	size_t start = s->used;

	for (size_t i = 0; i < len; i++)
		put(s, (char)v[i]);
	commit(s, start, 0, 0);
	base64_forms(s, v, len, 0);
	base64_forms(s, v, len, 1);
	hex_form(s, v, len, "0123456789abcdef");
	hex_form(s, v, len, "0123456789ABCDEF");
	percent_form(s, v, len, PCT_UPPER);
	percent_form(s, v, len, PCT_LOWER);
	percent_form(s, v, len, PCT_FORM);
	percent_form(s, v, len, PCT_PATH);
}

size_t sbx__redact_forms_size(size_t len)
{
	/* The value, ten base64 forms of at most 4 * ceil(len / 3) bytes,
	 * two hex forms of 2 * len, four percent forms of at most 3 * len. */
	return len + 10 * (4 * ((len + 2) / 3) + 4) + 4 * len + 12 * len;
}

size_t sbx__redact_forms(unsigned char *dst,
			 const unsigned char *v,
			 size_t len,
			 struct sbx__redact_form *forms,
			 size_t max)
{
	struct sink s = {.dst = dst, .forms = forms, .max = max};

	all_forms(&s, v, len);
	return s.nforms;
}
