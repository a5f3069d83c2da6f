/*
 * server/port-http.c: what the proxy of a sandbox's port (server/port.c)
 * reads of the bytes a server inside a sandbox answers: the head of an
 * HTTP/1.x response and the chunked framing of its body. Pure (bytes in,
 * fields out) and fuzzed by tests/fuzz/fuzz_proxy.c.
 *
 * Hand-written, because libmicrohttpd serves and does not read responses,
 * libcurl would need the connection to be a socket of its own making, and
 * what is needed is small: the proxy sends every request with
 * "Connection: close", so a response is a head, then a body framed by its
 * length, by chunks or by the connection's end. Everything is strict, since
 * the bytes come from inside the sandbox: CRLF line ends only, no folded
 * header, a header name of token characters, a value of visible bytes,
 * tabs and spaces, at most SBXS_HEAD_MAX bytes and SBXS_HEADERS_MAX
 * headers; Content-Length in digits (several must agree); a
 * Transfer-Encoding other than exactly "chunked", or one with a
 * Content-Length beside it (the shape of request smuggling), is refused.
 * Chunk sizes are hex of at most 15 digits; extensions and trailers are
 * read within bounds and dropped.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/port-int.h"

static int is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A value's byte: visible, space, tab, or obs-text. */
static int is_vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int is_hop(const char *name, size_t n)
{
	static const char *const hop[] = {"connection",
					  "keep-alive",
					  "proxy-connection",
					  "te",
					  "trailer",
					  "transfer-encoding",
					  "upgrade",
					  "content-length",
					  "proxy-authenticate",
					  "proxy-authorization",
					  NULL};

	for (const char *const *h = hop; *h; h++)
		if (strlen(*h) == n && strncasecmp(*h, name, n) == 0)
			return 1;
	return 0;
}

int sbxs_http_hop_header(const char *name)
{
	return is_hop(name, strlen(name));
}

static int name_is(const struct sbxs_http_field *f, const char *name)
{
	return f->name_len == strlen(name) && strncasecmp(f->name, name, f->name_len) == 0;
}

/* A Content-Length or Transfer-Encoding field, as the body's framing
 * reads it; any other field is let be. 0, or -1 with err. */
static int framing_field(struct sbxs_http_head *hd,
			 const struct sbxs_http_field *f,
			 int *has_len,
			 int *chunked,
			 char *err,
			 size_t esize)
{
	const char *v = f->value;

	if (name_is(f, "content-length")) {
		uint64_t n = 0;

		if (f->value_len == 0 || f->value_len > 15) {
			snprintf(err, esize, "Content-Length is not a length");
			return -1;
		}
		for (size_t k = 0; k < f->value_len; k++) {
			if (v[k] < '0' || v[k] > '9') {
				snprintf(err, esize, "Content-Length is not a length");
				return -1;
			}
			n = n * 10 + (uint64_t)(v[k] - '0');
		}
		if (*has_len && n != hd->length) {
			snprintf(err, esize, "two Content-Length headers disagree");
			return -1;
		}
		*has_len = 1;
		hd->length = n;
	} else if (name_is(f, "transfer-encoding")) {
		if (f->value_len != 7 || strncasecmp(v, "chunked", 7) != 0 || *chunked) {
			snprintf(err, esize,
				 "Transfer-Encoding other than one \"chunked\" is not proxied");
			return -1;
		}
		*chunked = 1;
	}
	return 0;
}

long sbxs_http_head_parse(const char *buf,
			  size_t len,
			  int head_request,
			  struct sbxs_http_head *hd,
			  char *err,
			  size_t esize)
{
	const char *p = buf, *end, *eol;
	size_t avail = len < SBXS_HEAD_MAX ? len : SBXS_HEAD_MAX;
	int has_len = 0, chunked = 0;

	memset(hd, 0, sizeof(*hd));
	/* The blank line that ends the head, within the bound. */
	end = NULL;
	for (size_t k = 0; k + 3 < avail; k++)
		if (buf[k] == '\r' && buf[k + 1] == '\n' && buf[k + 2] == '\r' &&
		    buf[k + 3] == '\n') {
			end = buf + k + 2; /* the last header line's end */
			break;
		}
	if (!end) {
		if (len >= SBXS_HEAD_MAX) {
			snprintf(err, esize, "the response's head is longer than %u bytes",
				 SBXS_HEAD_MAX);
			return -1;
		}
		/* A bare LF in what came so far is refused now. */
		for (size_t k = 0; k < len; k++)
			if (buf[k] == '\n' && (k == 0 || buf[k - 1] != '\r')) {
				snprintf(err, esize,
					 "a line of the response's head ends without CR");
				return -1;
			}
		return 0;
	}
	for (const char *q = buf; q < end + 2; q++)
		if (*q == '\n' && (q == buf || q[-1] != '\r')) {
			snprintf(err, esize, "a line of the response's head ends without CR");
			return -1;
		}
	/* Status line: HTTP/1.x SP 3DIGIT [SP reason] CRLF. */
	eol = memchr(p, '\r', (size_t)(end - p));
	if (!eol || eol - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
	    p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' ||
	    p[11] > '9' || (eol - p > 12 && p[12] != ' ')) {
		snprintf(err, esize, "the response does not start with an HTTP/1.x status line");
		return -1;
	}
	for (const char *q = p + 12; q < eol; q++)
		if (!is_vchar((unsigned char)*q)) {
			snprintf(err, esize, "the status line holds a control byte");
			return -1;
		}
	hd->status = (unsigned)((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
	p = eol + 2;
	while (p < end + 2 && !(p[0] == '\r' && p[1] == '\n')) {
		struct sbxs_http_field *f;
		const char *colon, *v, *ve;

		eol = memchr(p, '\r', (size_t)(end + 2 - p));
		if (!eol || eol[1] != '\n') {
			snprintf(err, esize, "a header line ends without CRLF");
			return -1;
		}
		for (const char *q = p; q < eol; q++)
			if (*q == '\n') {
				snprintf(err, esize, "a header line ends without CR");
				return -1;
			}
		if (hd->n >= SBXS_HEADERS_MAX) {
			snprintf(err, esize, "the response has more than %d headers",
				 SBXS_HEADERS_MAX);
			return -1;
		}
		if (*p == ' ' || *p == '\t') {
			snprintf(err, esize, "a folded header line is not accepted");
			return -1;
		}
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p) {
			snprintf(err, esize, "a header line has no name");
			return -1;
		}
		for (const char *q = p; q < colon; q++)
			if (!is_tchar((unsigned char)*q)) {
				snprintf(err, esize,
					 "a header name holds a byte outside HTTP's token "
					 "characters");
				return -1;
			}
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++)
			if (!is_vchar((unsigned char)*q)) {
				snprintf(err, esize, "a header value holds a control byte");
				return -1;
			}
		f = &hd->h[hd->n++];
		f->name = p;
		f->name_len = (size_t)(colon - p);
		f->value = v;
		f->value_len = (size_t)(ve - v);
		if (framing_field(hd, f, &has_len, &chunked, err, esize) < 0)
			return -1;
		p = eol + 2;
	}
	if (chunked && has_len) {
		snprintf(err, esize, "the response has both Content-Length and Transfer-Encoding");
		return -1;
	}
	if (head_request || hd->status < 200 || hd->status == 204 || hd->status == 304)
		hd->framing = SBXS_BODY_NONE;
	else if (chunked)
		hd->framing = SBXS_BODY_CHUNKED;
	else if (has_len)
		hd->framing = SBXS_BODY_LENGTH;
	else
		hd->framing = SBXS_BODY_CLOSE;
	return (long)(end + 2 - buf);
}

/* ===== Chunked bodies ===== */

enum { CH_SIZE = 0, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_DONE };

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long sbxs_chunks_feed(struct sbxs_chunks *d,
		      const char *in,
		      size_t len,
		      char *out,
		      size_t outcap,
		      size_t *outlen,
		      char *err,
		      size_t esize)
{
	size_t k = 0;

	*outlen = 0;
	while (k < len && d->state != CH_DONE) {
		unsigned char c = (unsigned char)in[k];

		switch (d->state) {
		case CH_SIZE:
			if (hexval(c) >= 0) {
				if (++d->digits > 15) {
					snprintf(err, esize,
						 "a chunk size has more than 15 digits");
					return -1;
				}
				d->left = d->left * 16 + (uint64_t)hexval(c);
				k++;
				break;
			}
			if (d->digits == 0) {
				snprintf(err, esize, "a chunk does not start with its size in hex");
				return -1;
			}
			if (c == ';' || c == ' ' || c == '\t') {
				d->state = CH_EXT;
				d->line = 0;
				k++;
				break;
			}
			if (c != '\r') {
				snprintf(err, esize, "a chunk size is followed by a stray byte");
				return -1;
			}
			d->state = CH_SIZE_LF;
			k++;
			break;
		case CH_EXT:
			if (c == '\r') {
				d->state = CH_SIZE_LF;
			} else if (!is_vchar(c) || ++d->line > SBXS_CHUNK_LINE_MAX) {
				snprintf(err, esize, "a chunk extension is malformed or too long");
				return -1;
			}
			k++;
			break;
		case CH_SIZE_LF:
			if (c != '\n') {
				snprintf(err, esize, "a chunk size line ends without CRLF");
				return -1;
			}
			k++;
			d->digits = 0;
			d->line = 0;
			d->prev = 0;
			d->state = d->left ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA: {
			size_t n = len - k;

			if (n > d->left)
				n = (size_t)d->left;
			if (n > outcap - *outlen)
				n = outcap - *outlen;
			if (n == 0)
				return (long)k; /* out is full */
			memcpy(out + *outlen, in + k, n);
			*outlen += n;
			k += n;
			d->left -= n;
			if (d->left == 0)
				d->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
		case CH_DATA_LF:
			if (c != (d->state == CH_DATA_CR ? '\r' : '\n')) {
				snprintf(err, esize, "a chunk's data is not followed by CRLF");
				return -1;
			}
			k++;
			d->state = d->state == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
			break;
		case CH_TRAILER:
			/* Trailer lines, dropped, up to the empty one. */
			if (d->prev == '\r' && c != '\n') {
				snprintf(err, esize, "a CR in the trailer is not followed by LF");
				return -1;
			}
			if (c == '\n') {
				if (d->prev != '\r') {
					snprintf(err, esize, "a trailer line ends without CRLF");
					return -1;
				}
				if (d->line == 0)
					d->state = CH_DONE;
				d->line = 0;
			} else if (c != '\r' && (!is_vchar(c) || ++d->line > SBXS_CHUNK_LINE_MAX)) {
				snprintf(err, esize, "a trailer line is malformed or too long");
				return -1;
			}
			if (++d->trailer > SBXS_HEAD_MAX) {
				snprintf(err, esize, "the trailer is longer than %u bytes",
					 SBXS_HEAD_MAX);
				return -1;
			}
			d->prev = c;
			k++;
			break;
		}
	}
	return (long)k;
}

int sbxs_chunks_done(const struct sbxs_chunks *d)
{
	return d->state == CH_DONE;
}
