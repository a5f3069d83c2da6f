/*
 * remote/e2b/connect.c: the decoder of a Connect server stream (the JSON
 * codec, no compression): a sequence of envelopes, each a flags byte, a
 * big-endian uint32 length and that many bytes of JSON; flags 0x02 marks
 * the end-of-stream frame, which comes last.
 *
 * Pure and I/O-free, so that it is tested on its own with the stream split
 * at every byte. Chunks of any size are fed in; a whole envelope that lies
 * inside one chunk is handed out in place, and only one split across
 * chunks is copied, into a buffer bounded by the decoder's maximum (the
 * length is checked before anything is allocated). No Connect library for
 * C exists, and the framing is small enough to check by hand.
 */
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "remote/e2b/e2b-int.h"
#include "util/error-int.h"

void sbx__connect_init(struct sbx__connect_dec *d, size_t max)
{
	memset(d, 0, sizeof(*d));
	d->max = max;
}

void sbx__connect_done(struct sbx__connect_dec *d)
{
	free(d->buf);
	d->buf = NULL;
	d->have = 0;
}

void sbx__connect_prefix(unsigned char out[SBX_CONNECT_HDR], unsigned int flags, uint32_t len)
{
	out[0] = (unsigned char)flags;
	out[1] = (unsigned char)(len >> 24);
	out[2] = (unsigned char)(len >> 16);
	out[3] = (unsigned char)(len >> 8);
	out[4] = (unsigned char)len;
}

/* Checks a complete header; on success the decoder expects the body. */
static int take_header(struct sbx__connect_dec *d)
{
	d->flags = d->hdr[0];
	d->len = (uint32_t)d->hdr[1] << 24 | (uint32_t)d->hdr[2] << 16 | (uint32_t)d->hdr[3] << 8 |
		 d->hdr[4];
	if (d->flags & SBX_CONNECT_FLAG_COMPRESSED)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: compressed envelope (flags 0x%02x) in the process "
				      "stream, though no compression was negotiated",
				      d->flags);
	if (d->flags & ~SBX_CONNECT_FLAG_END)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: envelope with unknown flags 0x%02x in the process "
				      "stream",
				      d->flags);
	if (d->len > d->max)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: envelope of %lu bytes in the process stream is over "
				      "the %zu-byte limit",
				      (unsigned long)d->len, d->max);
	d->in_body = 1;
	d->have = 0;
	return 0;
}

static int deliver(struct sbx__connect_dec *d, const char *json, sbx__connect_cb cb, void *arg)
{
	int kind = d->flags & SBX_CONNECT_FLAG_END ? SBX_CONNECT_END : SBX_CONNECT_MESSAGE;

	d->in_body = 0;
	d->hdr_have = 0;
	d->frames++;
	if (kind == SBX_CONNECT_END)
		d->ended = 1;
	return cb(kind, json, d->len, arg);
}

int sbx__connect_feed(
	struct sbx__connect_dec *d, const void *data, size_t n, sbx__connect_cb cb, void *arg)
{
	const unsigned char *p = data;
	int rc;

	while (n) {
		if (d->ended)
			return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					      "e2b: %zu bytes after the end-of-stream frame of the "
					      "process stream",
					      n);
		if (!d->in_body) {
			size_t take = SBX_CONNECT_HDR - d->hdr_have;

			if (take > n)
				take = n;
			memcpy(d->hdr + d->hdr_have, p, take);
			d->hdr_have += take;
			p += take;
			n -= take;
			if (d->hdr_have < SBX_CONNECT_HDR)
				return 0;
			rc = take_header(d);
			if (rc < 0)
				return rc;
			if (d->len > 0 && n >= d->len) {
				/* The whole body is in this chunk: no copy. */
				const char *json = (const char *)p;

				p += d->len;
				n -= d->len;
				rc = deliver(d, json, cb, arg);
				if (rc)
					return rc;
				continue;
			}
			if (d->len == 0) {
				rc = deliver(d, "", cb, arg);
				if (rc)
					return rc;
				continue;
			}
			free(d->buf);
			d->buf = malloc(d->len);
			if (!d->buf)
				return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE,
						      "out of memory for a %lu-byte envelope",
						      (unsigned long)d->len);
			continue;
		}
		{
			size_t take = d->len - d->have;

			if (take > n)
				take = n;
			memcpy(d->buf + d->have, p, take);
			d->have += take;
			p += take;
			n -= take;
			if (d->have < d->len)
				return 0;
			rc = deliver(d, d->buf, cb, arg);
			free(d->buf);
			d->buf = NULL;
			if (rc)
				return rc;
		}
	}
	return 0;
}

int sbx__connect_finish(const struct sbx__connect_dec *d)
{
	if (d->in_body)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: process stream ended mid-frame (got %zu of %lu bytes)",
				      SBX_CONNECT_HDR + d->have,
				      (unsigned long)d->len + SBX_CONNECT_HDR);
	if (d->hdr_have)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: process stream ended mid-frame (got %zu of %d header "
				      "bytes)",
				      d->hdr_have, SBX_CONNECT_HDR);
	if (!d->ended)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: process stream ended without its end-of-stream frame "
				      "(after %llu frames)",
				      (unsigned long long)d->frames);
	return 0;
}
