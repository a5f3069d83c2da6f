/*
 * util/frame.c: encoder and strict incremental decoder for the framed
 * protocol between sbx-init and the host (see util/frame.h).
 *
 * The same object is linked into the static init and into the library, so it
 * depends on nothing beyond the C library's string functions. The decoder is
 * the host's first contact with bytes an untrusted program may have shaped,
 * so every check fails closed and the first error is sticky: once the stream
 * is wrong nothing later in it can be trusted to be aligned on a frame.
 */
#include "util/frame.h"

#include <string.h>

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void put_u64(unsigned char *p, uint64_t v)
{
	put_u32(p, (uint32_t)(v >> 32));
	put_u32(p + 4, (uint32_t)v);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

void sbx__frame_header(unsigned char hdr[SBX_FRAME_HDR], int type, uint32_t len)
{
	hdr[0] = SBX_FRAME_MAGIC;
	hdr[1] = (unsigned char)type;
	hdr[2] = 0;
	hdr[3] = 0;
	put_u32(hdr + 4, len);
}

void sbx__frame_exit_encode(unsigned char out[SBX_FRAME_EXIT_LEN], const struct sbx__frame_exit *e)
{
	put_u32(out, e->status);
	put_u32(out + 4, (uint32_t)e->code);
	put_u32(out + 8, e->signal);
	put_u32(out + 12, e->flags);
	put_u64(out + 16, e->utime_us);
	put_u64(out + 24, e->stime_us);
	put_u64(out + 32, e->maxrss_kb);
}

/* Linux signal numbers run from 1 to SIGRTMAX, which is 64 on every arch. */
#define SIG_LIMIT 64u

int sbx__frame_exit_decode(struct sbx__frame_exit *out, const unsigned char *p, size_t len)
{
	struct sbx__frame_exit e;

	if (!p || len != SBX_FRAME_EXIT_LEN)
		return -1;
	e.status = get_u32(p);
	e.code = (int32_t)get_u32(p + 4);
	e.signal = get_u32(p + 8);
	e.flags = get_u32(p + 12);
	e.utime_us = get_u64(p + 16);
	e.stime_us = get_u64(p + 24);
	e.maxrss_kb = get_u64(p + 32);

	/*
	 * Only combinations the init can produce are accepted, so a host that
	 * trusts a decoded status never sees, say, a "signal" of 4000 or an
	 * exit code outside what a wait status can carry.
	 */
	if (e.flags & ~SBX_FRAME_F_OOM)
		return -1;
	if (e.code < 0 || e.code > 255 || e.signal > SIG_LIMIT)
		return -1;
	switch ((enum sbx__frame_status)e.status) {
	case SBX_FRAME_ST_EXITED:
		if (e.signal != 0)
			return -1;
		break;
	case SBX_FRAME_ST_SIGNALED:
		if (e.signal == 0 || e.code != 128 + (int32_t)e.signal)
			return -1;
		break;
	case SBX_FRAME_ST_TIMEOUT:
		if (e.code != 124)
			return -1;
		break;
	case SBX_FRAME_ST_EXECFAIL:
		if (e.code != 126 && e.code != 127)
			return -1;
		break;
	default:
		return -1;
	}
	if (out)
		*out = e;
	return 0;
}

void sbx__frame_decoder_init(struct sbx__frame_decoder *d)
{
	d->have = 0;
	d->done = 0;
	d->error = 0;
	d->why = NULL;
}

static int fail(struct sbx__frame_decoder *d, const char *why)
{
	d->error = 1;
	d->why = why;
	return -1;
}

/* Checks a complete header; returns the payload length or -1. */
static long check_header(const unsigned char *h)
{
	uint32_t len;

	if (h[0] != SBX_FRAME_MAGIC || h[2] != 0 || h[3] != 0)
		return -1;
	len = get_u32(h + 4);
	if (len > SBX_FRAME_MAX)
		return -1;
	switch ((enum sbx__frame_type)h[1]) {
	case SBX_FRAME_STDOUT:
	case SBX_FRAME_STDERR:
	case SBX_FRAME_ERROR:
		break;
	case SBX_FRAME_EXIT:
		if (len != SBX_FRAME_EXIT_LEN)
			return -1;
		break;
	default:
		return -1;
	}
	return (long)len;
}

/*
 * Data after a callback's non-zero return is not consumed; the decoder is
 * marked failed so a caller cannot resume mid-stream out of alignment.
 */
int sbx__frame_feed(struct sbx__frame_decoder *d,
		    const unsigned char *data,
		    size_t len,
		    sbx_frame_cb cb,
		    void *arg)
{
	size_t off = 0;

	if (d->error)
		return -1;
	if (len == 0)
		return 0;
	if (!data)
		return fail(d, "no bytes");

	while (off < len) {
		size_t want, n;
		long plen;
		int type, rc;

		if (d->done)
			return fail(d, "bytes after the exit frame");

		/* Reject a bad magic byte as soon as it arrives. */
		if (d->have == 0 && data[off] != SBX_FRAME_MAGIC)
			return fail(d, "a frame without the magic byte");

		if (d->have < SBX_FRAME_HDR) {
			want = SBX_FRAME_HDR - d->have;
			n = len - off < want ? len - off : want;
			memcpy(d->buf + d->have, data + off, n);
			d->have += n;
			off += n;
			if (d->have < SBX_FRAME_HDR)
				break;
		}

		plen = check_header(d->buf);
		if (plen < 0)
			return fail(d,
				    "a frame header of an unknown type, reserved bytes or length");

		want = SBX_FRAME_HDR + (size_t)plen - d->have;
		n = len - off < want ? len - off : want;
		memcpy(d->buf + d->have, data + off, n);
		d->have += n;
		off += n;
		if (d->have < SBX_FRAME_HDR + (size_t)plen)
			break;

		type = d->buf[1];
		if (type == SBX_FRAME_EXIT) {
			if (sbx__frame_exit_decode(NULL, d->buf + SBX_FRAME_HDR, (size_t)plen) != 0)
				return fail(d, "an exit frame out of range");
			d->done = 1;
		}
		d->have = 0;
		if (cb) {
			rc = cb(type, d->buf + SBX_FRAME_HDR, (size_t)plen, arg);
			if (rc != 0) {
				d->error = 1;
				d->why = "a frame its reader refused";
				return rc;
			}
		}
	}
	return 0;
}

/* ===== The run channel ===== */

void sbx__chan_header(unsigned char hdr[SBX_FRAME_HDR], int type, unsigned int id, uint32_t len)
{
	sbx__frame_header(hdr, type, len);
	hdr[2] = (unsigned char)(id >> 8);
	hdr[3] = (unsigned char)id;
}

void sbx__chan_hello_encode(unsigned char out[SBX_FRAME_HELLO_LEN], const struct sbx__chan_hello *h)
{
	put_u32(out, h->version);
	put_u32(out + 4, h->runs_max);
	put_u32(out + 8, h->window);
}

int sbx__chan_hello_decode(struct sbx__chan_hello *out, const unsigned char *p, size_t len)
{
	struct sbx__chan_hello h;

	if (!p || len != SBX_FRAME_HELLO_LEN)
		return -1;
	h.version = get_u32(p);
	h.runs_max = get_u32(p + 4);
	h.window = get_u32(p + 8);
	if (h.version < 1 || h.runs_max < 1 || h.runs_max > SBX_CHAN_ID_MAX || h.window < 1)
		return -1;
	if (out)
		*out = h;
	return 0;
}

size_t sbx__chan_open_encode(unsigned char *out, const struct sbx__chan_open *o)
{
	put_u32(out, o->flags);
	put_u32(out + 4, o->argc);
	put_u32(out + 8, o->envc);
	put_u32(out + 12, o->spec_len);
	put_u64(out + 16, o->deadline_ms);
	if (!(o->flags & SBX_CHAN_OPEN_PTY))
		return SBX_FRAME_OPEN_LEN;
	sbx__chan_resize_encode(out + SBX_FRAME_OPEN_LEN, o->rows, o->cols);
	return SBX_FRAME_OPEN_PTY_LEN;
}

void sbx__chan_resize_encode(unsigned char out[SBX_FRAME_RESIZE_LEN], uint16_t rows, uint16_t cols)
{
	out[0] = (unsigned char)(rows >> 8);
	out[1] = (unsigned char)rows;
	out[2] = (unsigned char)(cols >> 8);
	out[3] = (unsigned char)cols;
}

int sbx__chan_resize_decode(const unsigned char *p, size_t len, uint16_t *rows, uint16_t *cols)
{
	unsigned int r, c;

	if (!p || len != SBX_FRAME_RESIZE_LEN)
		return -1;
	r = (unsigned int)p[0] << 8 | p[1];
	c = (unsigned int)p[2] << 8 | p[3];
	if (r < 1 || r > SBX_CHAN_WINSZ_MAX || c < 1 || c > SBX_CHAN_WINSZ_MAX)
		return -1;
	if (rows)
		*rows = (uint16_t)r;
	if (cols)
		*cols = (uint16_t)c;
	return 0;
}

int sbx__chan_open_decode(struct sbx__chan_open *out, const unsigned char *p, size_t len)
{
	struct sbx__chan_open o = {0};

	if (!p || (len != SBX_FRAME_OPEN_LEN && len != SBX_FRAME_OPEN_PTY_LEN))
		return -1;
	o.flags = get_u32(p);
	/* The window size comes with the PTY flag, and only with it. */
	if (o.flags == SBX_CHAN_OPEN_PTY && len == SBX_FRAME_OPEN_PTY_LEN) {
		if (sbx__chan_resize_decode(p + SBX_FRAME_OPEN_LEN, SBX_FRAME_RESIZE_LEN, &o.rows,
					    &o.cols) != 0)
			return -1;
	} else if (o.flags != 0 || len != SBX_FRAME_OPEN_LEN) {
		return -1;
	}
	o.argc = get_u32(p + 4);
	o.envc = get_u32(p + 8);
	o.spec_len = get_u32(p + 12);
	o.deadline_ms = get_u64(p + 16);
	/* Each string holds at least its NUL: the cwd, argc and envc of them. */
	if (o.argc < 1 || o.argc > SBX_CHAN_ARGC_MAX || o.envc > SBX_CHAN_ENVC_MAX ||
	    o.spec_len < 1 + o.argc + o.envc || o.spec_len > SBX_CHAN_SPEC_MAX ||
	    o.deadline_ms < 1 || o.deadline_ms > SBX_CHAN_DEADLINE_MS_MAX)
		return -1;
	if (out)
		*out = o;
	return 0;
}

void sbx__chan_deadline_encode(unsigned char out[SBX_FRAME_DEADLINE_LEN], uint64_t unix_s)
{
	put_u64(out, unix_s);
}

int sbx__chan_deadline_decode(const unsigned char *p, size_t len, int zero_ok, uint64_t *unix_s)
{
	uint64_t v;

	if (!p || len != SBX_FRAME_DEADLINE_LEN)
		return -1;
	v = get_u64(p);
	if (v > SBX_CHAN_DEADLINE_MAX || (v == 0 && !zero_ok))
		return -1;
	if (unix_s)
		*unix_s = v;
	return 0;
}

void sbx__chan_credit_encode(unsigned char out[SBX_FRAME_CREDIT_LEN], uint32_t n)
{
	put_u32(out, n);
}

uint32_t sbx__chan_credit_decode(const unsigned char *p, size_t len)
{
	uint32_t n;

	if (!p || len != SBX_FRAME_CREDIT_LEN)
		return 0;
	n = get_u32(p);
	return n >= 1 && n <= SBX_CHAN_WINDOW ? n : 0;
}

void sbx__chan_decoder_init(struct sbx__chan_decoder *d, enum sbx__chan_dir dir)
{
	d->have = 0;
	d->dir = (int)dir;
	d->error = 0;
}

/* Checks a complete channel header; returns the payload length or -1. */
static long chan_check_header(int dir, const unsigned char *h)
{
	unsigned int id = (unsigned int)h[2] << 8 | h[3];
	uint32_t len = get_u32(h + 4);
	uint32_t min = 1, max = SBX_FRAME_MAX;
	int want_id0 = 0;

	if (h[0] != SBX_FRAME_MAGIC || len > SBX_FRAME_MAX)
		return -1;
	if (dir == SBX_CHAN_TO_HOST) {
		switch (h[1]) {
		case SBX_FRAME_STDOUT:
		case SBX_FRAME_STDERR:
			break;
		case SBX_FRAME_ERROR:
			/* A run's message, or with id 0 why the init closed the channel. */
			max = SBX_CHAN_ERROR_MAX;
			want_id0 = -1;
			break;
		case SBX_FRAME_EXIT:
			min = max = SBX_FRAME_EXIT_LEN;
			break;
		case SBX_FRAME_CREDIT:
			min = max = SBX_FRAME_CREDIT_LEN;
			break;
		case SBX_FRAME_HELLO:
			min = max = SBX_FRAME_HELLO_LEN;
			want_id0 = 1;
			break;
		case SBX_FRAME_DEADLINE_AT:
			min = max = SBX_FRAME_DEADLINE_LEN;
			want_id0 = 1;
			break;
		default:
			return -1;
		}
	} else if (dir == SBX_CHAN_TO_INIT) {
		switch (h[1]) {
		case SBX_FRAME_OPEN:
			min = SBX_FRAME_OPEN_LEN;
			max = SBX_FRAME_OPEN_PTY_LEN;
			break;
		case SBX_FRAME_RESIZE:
			min = max = SBX_FRAME_RESIZE_LEN;
			break;
		case SBX_FRAME_DEADLINE:
			min = max = SBX_FRAME_DEADLINE_LEN;
			want_id0 = 1;
			break;
		case SBX_FRAME_SPEC:
		case SBX_FRAME_STDIN:
			break;
		case SBX_FRAME_STDIN_EOF:
			min = max = 0;
			break;
		default:
			return -1;
		}
	} else {
		return -1;
	}
	if (want_id0 == 1 && id != 0)
		return -1;
	if (want_id0 == 0 && id == 0)
		return -1;
	if (len < min || len > max)
		return -1;
	return (long)len;
}

/* Decodes the fixed payloads so that a reader never sees an invalid one. */
static int chan_check_payload(int type, const unsigned char *p, size_t len)
{
	switch (type) {
	case SBX_FRAME_EXIT:
		return sbx__frame_exit_decode(NULL, p, len);
	case SBX_FRAME_CREDIT:
		return sbx__chan_credit_decode(p, len) ? 0 : -1;
	case SBX_FRAME_HELLO:
		return sbx__chan_hello_decode(NULL, p, len);
	case SBX_FRAME_OPEN:
		return sbx__chan_open_decode(NULL, p, len);
	case SBX_FRAME_RESIZE:
		return sbx__chan_resize_decode(p, len, NULL, NULL);
	case SBX_FRAME_DEADLINE:
		return sbx__chan_deadline_decode(p, len, 1, NULL);
	case SBX_FRAME_DEADLINE_AT:
		return sbx__chan_deadline_decode(p, len, 0, NULL);
	default:
		return 0;
	}
}

static int chan_fail(struct sbx__chan_decoder *d)
{
	d->error = 1;
	return -1;
}

int sbx__chan_feed(struct sbx__chan_decoder *d,
		   const unsigned char *data,
		   size_t len,
		   sbx_chan_cb cb,
		   void *arg)
{
	size_t off = 0;

	if (d->error)
		return -1;
	if (len == 0)
		return 0;
	if (!data)
		return chan_fail(d);

	while (off < len) {
		size_t want, n;
		long plen;
		int type, rc;
		unsigned int id;

		if (d->have == 0 && data[off] != SBX_FRAME_MAGIC)
			return chan_fail(d);
		if (d->have < SBX_FRAME_HDR) {
			want = SBX_FRAME_HDR - d->have;
			n = len - off < want ? len - off : want;
			memcpy(d->buf + d->have, data + off, n);
			d->have += n;
			off += n;
			if (d->have < SBX_FRAME_HDR)
				break;
		}

		plen = chan_check_header(d->dir, d->buf);
		if (plen < 0)
			return chan_fail(d);

		want = SBX_FRAME_HDR + (size_t)plen - d->have;
		n = len - off < want ? len - off : want;
		memcpy(d->buf + d->have, data + off, n);
		d->have += n;
		off += n;
		if (d->have < SBX_FRAME_HDR + (size_t)plen)
			break;

		type = d->buf[1];
		id = (unsigned int)d->buf[2] << 8 | d->buf[3];
		if (chan_check_payload(type, d->buf + SBX_FRAME_HDR, (size_t)plen) != 0)
			return chan_fail(d);
		d->have = 0;
		if (cb) {
			rc = cb(type, id, d->buf + SBX_FRAME_HDR, (size_t)plen, arg);
			if (rc != 0) {
				d->error = 1;
				return rc;
			}
		}
	}
	return 0;
}
