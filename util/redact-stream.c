/*
 * util/redact-stream.c: the streaming redactor for run output.
 *
 * Output arrives in chunks cut wherever the pipe, the init's frames or the
 * socket cut it, so a secret may be split across two (or more) of them. The
 * stream keeps back what may still be the start of an occurrence
 * (sbx__redact_stream_hold): any occurrence that starts before that point
 * is then complete, and its marks are final. An occurrence that straddles
 * the point is remembered as a count of leading held bytes known to be
 * inside a value (carry), so its tail is still redacted after its head was
 * given out, and one marker stands for the whole run of redacted bytes, as
 * in records (util/redact.c). At the end the held bytes go out as they are,
 * less complete occurrences: a partial one is text like any other, so the
 * end of a stream tells a program nothing about values it guesses. Held
 * bytes are raw output, so every buffer that held them is wiped.
 */
#include <stdlib.h>
#include <string.h>

#include "util/redact-int.h"

/* Grows *p to at least want bytes; with wipe, the old block is wiped first. */
static int grow(void *pp, size_t *alloc, size_t want, size_t used, int wipe)
{
	unsigned char **p = pp, *n;
	size_t sz = *alloc ? *alloc : 256;

	if (want <= *alloc)
		return 0;
	while (sz < want)
		sz *= 2;
	n = malloc(sz);
	if (!n)
		return -1;
	if (*p) {
		memcpy(n, *p, used);
		if (wipe)
			explicit_bzero(*p, used);
		free(*p);
	}
	*p = n;
	*alloc = sz;
	return 0;
}

size_t
sbx__redact_stream_hold(const unsigned char *p, size_t n, const struct sbx__redact_longest *l)
{
	size_t plain = l->plain > 1 ? l->plain - 1 : 0, wrapped = 0, chars = 0, run = 0;

	if (plain > n)
		plain = n;
	/*
	 * An encoded form may still be under way from the last (longest - 1)
	 * encoded characters on, breaks among them included. A run of breaks
	 * longer than a form may hold ends every occurrence before it, one at
	 * the very end included.
	 */
	if (l->wrapped > 1) {
		for (size_t i = n; i > 0 && chars < l->wrapped - 1; i--) {
			if (p[i - 1] == '\r' || p[i - 1] == '\n') {
				if (++run > SBX_REDACT_BREAK_MAX)
					break;
				continue;
			}
			run = 0;
			chars++;
			wrapped = n - (i - 1);
		}
	}
	return plain > wrapped ? plain : wrapped;
}

static int process(struct sbx__redact_stream *st, sbx_redact_emit emit, void *arg, int final)
{
	const size_t mlen = strlen(SBX_REDACTED);
	struct sbx__redact_longest longest;
	size_t n = st->len, e, hold, o = 0, need = 0, carry = 0;
	int in;

	if (n == 0)
		return 0;
	if (grow(&st->m, &st->m_alloc, n, 0, 0) < 0)
		return -2;
	memset(st->m, 0, n);
	if (sbx__redact_mark(st->scope, st->pend, n, st->m, &longest) < 0)
		return -2;
	memset(st->m, 1, st->carry < n ? st->carry : n);
	hold = final ? 0 : sbx__redact_stream_hold(st->pend, n, &longest);
	e = n - hold;
	/* What the given-out part becomes: kept bytes, one marker per marked run. */
	in = st->in_value;
	for (size_t i = 0; i < e; i++) {
		if (!st->m[i])
			need++;
		else if (!in)
			need += mlen;
		in = st->m[i];
	}
	if (grow(&st->out, &st->out_alloc, need + 1, 0, 0) < 0)
		return -2;
	in = st->in_value;
	for (size_t i = 0; i < e; i++) {
		if (!st->m[i])
			st->out[o++] = (char)st->pend[i];
		else if (!in) {
			memcpy(st->out + o, SBX_REDACTED, mlen);
			o += mlen;
		}
		in = st->m[i];
	}
	if (e > 0)
		st->in_value = st->m[e - 1];
	while (e + carry < n && st->m[e + carry])
		carry++;
	st->carry = carry;
	memmove(st->pend, st->pend + e, n - e);
	explicit_bzero(st->pend + (n - e), e);
	st->len = n - e;
	return o ? emit(arg, st->out, o) : 0;
}

int sbx__redact_stream_feed(struct sbx__redact_stream *st,
			    const void *data,
			    size_t len,
			    sbx_redact_emit emit,
			    void *arg)
{
	if (len == 0)
		return 0;
	if (st->len == 0 && st->carry == 0 && !sbx__redact_any(st->scope)) {
		/* Nothing to look for and nothing held: pass through. */
		st->in_value = 0;
		return emit(arg, data, len);
	}
	if (grow(&st->pend, &st->alloc, st->len + len, st->len, 1) < 0)
		return -2;
	memcpy(st->pend + st->len, data, len);
	st->len += len;
	return process(st, emit, arg, 0);
}

int sbx__redact_stream_flush(struct sbx__redact_stream *st, sbx_redact_emit emit, void *arg)
{
	int rc = process(st, emit, arg, 1);

	st->carry = 0;
	st->in_value = 0;
	return rc;
}

void sbx__redact_stream_done(struct sbx__redact_stream *st)
{
	if (st->pend)
		explicit_bzero(st->pend, st->alloc);
	free(st->pend);
	free(st->m);
	free(st->out);
	memset(st, 0, sizeof(*st));
}
