/*
 * engine/chan.c: the run channel's protocol on the host's side, without
 * I/O: the request encoder and the reader of the attach stream.
 *
 * The reader is the host's first contact with bytes from inside a
 * sandbox, where the init shares a kernel and a uid with the untrusted
 * program. So it is strict on both layers (the Engine's multiplexing and
 * the frames inside it), bounded (one frame buffered, output capped,
 * diagnostics capped), and any surprise is a violation that the caller
 * answers by killing the sandbox: a frame for a run not in flight, a frame
 * after a run's EXIT, credit for stdin never sent, a second HELLO.
 */
#include <string.h>

#include "engine/chan-int.h"
#include "util/secmem.h"

void sbx__chan_rx_init(struct sbx__chan_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
	sbx__chan_decoder_init(&rx->dec, SBX_CHAN_TO_HOST);
	rx->diag.cap = SBX_CHAN_DIAG_MAX;
}

void sbx__chan_rx_done(struct sbx__chan_rx *rx)
{
	sbx__buf_clear(&rx->diag);
}

static int violation(struct sbx__chan_rx *rx, const char *why)
{
	if (!rx->why)
		rx->why = why;
	return SBX_CHAN_RX_VIOLATION;
}

/* Program output goes raw to core's sink, which redacts, caps and keeps it. */
static int on_output(struct sbx__chan_run *run, int stream, const unsigned char *p, size_t len)
{
	int rc =
		run->req && run->req->sink ? run->req->sink(run->req->sink_arg, stream, p, len) : 0;

	if (rc == 1) {
		run->canceled = 1;
		return SBX_CHAN_RX_CANCEL;
	}
	return rc < 0 ? SBX_CHAN_RX_NOMEM : SBX_CHAN_RX_OK;
}

static int on_frame(int type, unsigned int id, const unsigned char *p, size_t len, void *arg)
{
	struct sbx__chan_rx *rx = arg;
	struct sbx__chan_run *run = rx->run;
	uint32_t credit;

	if (rx->closed)
		return violation(rx, "a frame after the init closed the channel");
	if (!rx->hello) {
		if (type != SBX_FRAME_HELLO)
			return violation(rx, "the first frame is not HELLO");
		if (sbx__chan_hello_decode(&rx->hi, p, len) != 0)
			return violation(rx, "a malformed HELLO");
		rx->hello = 1;
		return SBX_CHAN_RX_OK;
	}
	if (type == SBX_FRAME_HELLO)
		return violation(rx, "a second HELLO");
	if (type == SBX_FRAME_DEADLINE_AT) {
		/* The answer to a DEADLINE (the decoder checked its id and value). */
		if (!rx->deadline_asked)
			return violation(rx, "DEADLINE_AT that was not asked for");
		(void)sbx__chan_deadline_decode(p, len, 0, &rx->deadline_at);
		rx->deadline_asked--;
		return SBX_CHAN_RX_OK;
	}
	if (id == 0) {
		/* The decoder admits only ERROR on id 0 past HELLO and DEADLINE_AT. */
		size_t n = len < sizeof(rx->closed_why) - 1 ? len : sizeof(rx->closed_why) - 1;

		memcpy(rx->closed_why, p, n);
		rx->closed_why[n] = '\0';
		rx->closed = 1;
		return SBX_CHAN_RX_CLOSED;
	}
	if (!run || id != run->id)
		return violation(rx, "a frame for a run that is not in flight");
	if (run->have_exit)
		return violation(rx, "a frame after the run's EXIT");
	switch (type) {
	case SBX_FRAME_STDOUT:
		return on_output(run, SBX_STREAM_STDOUT, p, len);
	case SBX_FRAME_STDERR:
	case SBX_FRAME_ERROR:
		/* An ERROR is the init's word on why the program did not start: stderr. */
		return on_output(run, SBX_STREAM_STDERR, p, len);
	case SBX_FRAME_EXIT:
		if (sbx__frame_exit_decode(&run->exit, p, len) != 0)
			return violation(rx, "a malformed EXIT");
		run->have_exit = 1;
		return SBX_CHAN_RX_OK;
	case SBX_FRAME_CREDIT:
		credit = sbx__chan_credit_decode(p, len);
		if (!credit || credit > run->stdin_sent - run->stdin_acked)
			return violation(rx, "credit for stdin that was never sent");
		run->stdin_acked += credit;
		return SBX_CHAN_RX_OK;
	default:
		return violation(rx, "a frame type the init may not send");
	}
}

/* Bytes of the init's stdout stream. */
static int feed_frames(struct sbx__chan_rx *rx, const unsigned char *p, size_t n)
{
	int rc = sbx__chan_feed(&rx->dec, p, n, on_frame, rx);

	/* The decoder's own -1 is a malformed frame; a callback's code passes through. */
	if (rc == -1 && !rx->why)
		rx->why = "a malformed frame (magic, type, run id or length)";
	return rc;
}

int sbx__chan_rx_feed(struct sbx__chan_rx *rx, const unsigned char *p, size_t n)
{
	int rc;

	if (rx->sticky)
		return rx->sticky;
	while (n) {
		if (rx->mux_left == 0) {
			size_t take = SBX_MUX_HDR - rx->mux_hdr_have;

			if (take > n)
				take = n;
			memcpy(rx->mux_hdr + rx->mux_hdr_have, p, take);
			rx->mux_hdr_have += take;
			p += take;
			n -= take;
			if (rx->mux_hdr_have < SBX_MUX_HDR)
				return SBX_CHAN_RX_OK;
			rx->mux_hdr_have = 0;
			rx->mux_stream = rx->mux_hdr[0];
			rx->mux_left = (uint32_t)rx->mux_hdr[4] << 24 |
				       (uint32_t)rx->mux_hdr[5] << 16 |
				       (uint32_t)rx->mux_hdr[6] << 8 | rx->mux_hdr[7];
			/* Stream 1 is the init's stdout, 2 its stderr; nothing else comes back. */
			if ((rx->mux_stream != 1 && rx->mux_stream != 2) || rx->mux_hdr[1] ||
			    rx->mux_hdr[2] || rx->mux_hdr[3] || rx->mux_left > SBX_MUX_FRAME_MAX) {
				rx->sticky = violation(rx, "a malformed Engine stream header");
				return rx->sticky;
			}
			continue;
		}
		size_t take = n < rx->mux_left ? n : rx->mux_left;

		if (rx->mux_stream == 1) {
			rc = feed_frames(rx, p, take);
			if (rc != SBX_CHAN_RX_OK) {
				rx->sticky = rc;
				return rc;
			}
		} else {
			(void)sbx__buf_append(&rx->diag, p, take);
		}
		p += take;
		n -= take;
		rx->mux_left -= (uint32_t)take;
	}
	return SBX_CHAN_RX_OK;
}

/* Writes frames of type carrying p[0..len) at dst; returns the bytes written. */
static size_t put_frames(unsigned char *dst, int type, unsigned int id, const void *p, size_t len)
{
	const unsigned char *c = p;
	size_t o = 0;

	do {
		size_t n = len > SBX_FRAME_MAX ? SBX_FRAME_MAX : len;

		sbx__chan_header(dst + o, type, id, (uint32_t)n);
		if (n)
			memcpy(dst + o + SBX_FRAME_HDR, c, n);
		o += SBX_FRAME_HDR + n;
		c += n;
		len -= n;
	} while (len);
	return o;
}

/* Bytes of frames carrying len bytes (at least one frame). */
static size_t framed_len(size_t len)
{
	size_t frames = len ? (len + SBX_FRAME_MAX - 1) / SBX_FRAME_MAX : 1;

	return frames * SBX_FRAME_HDR + len;
}

static size_t put_str(unsigned char *dst, const char *s)
{
	size_t n = strlen(s) + 1;

	memcpy(dst, s, n);
	return n;
}

int sbx__chan_encode_request(unsigned char **out,
			     size_t *out_len,
			     size_t *alloc_len,
			     unsigned int id,
			     const struct sbx__run_req *req)
{
	struct sbx__chan_open o = {.deadline_ms = req->timeout_ms};
	unsigned char op[SBX_FRAME_OPEN_PTY_LEN];
	unsigned char *buf, *spec;
	size_t len = strlen(req->workdir) + 1, total, k = 0, oplen;

	if (req->pty) {
		o.flags = SBX_CHAN_OPEN_PTY;
		o.rows = (uint16_t)req->rows;
		o.cols = (uint16_t)req->cols;
	}
	for (; req->argv[o.argc]; o.argc++) {
		len += strlen(req->argv[o.argc]) + 1;
		if (o.argc >= SBX_CHAN_ARGC_MAX || len > SBX_CHAN_SPEC_MAX)
			return 1;
	}
	for (; req->env && req->env[o.envc]; o.envc++) {
		len += strlen(req->env[o.envc]) + 1;
		if (o.envc >= SBX_CHAN_ENVC_MAX || len > SBX_CHAN_SPEC_MAX)
			return 1;
	}
	o.spec_len = (uint32_t)len;
	oplen = sbx__chan_open_encode(op, &o);
	/* What the init would refuse (a deadline past its bound, say) goes by exec. */
	if (sbx__chan_open_decode(NULL, op, oplen) != 0)
		return 1;
	/*
	 * The spec holds the environment, secrets included: it is built in
	 * locked memory, once, at its exact size (no realloc leaves a copy
	 * behind), and the caller wipes and frees it with sbx__secmem_free().
	 * The strings are laid out after the frames, then framed.
	 */
	total = framed_len(oplen) + framed_len(len);
	buf = sbx__secmem_alloc(total + len);
	if (!buf)
		return -1;
	spec = buf + total;
	k += put_str(spec + k, req->workdir);
	for (uint32_t i = 0; i < o.argc; i++)
		k += put_str(spec + k, req->argv[i]);
	for (uint32_t i = 0; i < o.envc; i++)
		k += put_str(spec + k, req->env[i]);
	k = put_frames(buf, SBX_FRAME_OPEN, id, op, oplen);
	k += put_frames(buf + k, SBX_FRAME_SPEC, id, spec, len);
	explicit_bzero(spec, len);
	*out = buf;
	*out_len = total;
	*alloc_len = total + len;
	return 0;
}

void sbx__chan_fill_status(const struct sbx__frame_exit *e, sbx_result *res)
{
	switch ((enum sbx__frame_status)e->status) {
	case SBX_FRAME_ST_EXITED:
		/* A shell reports its OOM-killed child as 137: still an OOM. */
		res->status = (e->flags & SBX_FRAME_F_OOM) && e->code == 137 ? SBX_RUN_OOM
									     : SBX_RUN_EXITED;
		break;
	case SBX_FRAME_ST_SIGNALED:
		res->status = (e->flags & SBX_FRAME_F_OOM) && e->signal == 9 ? SBX_RUN_OOM
									     : SBX_RUN_KILLED;
		break;
	case SBX_FRAME_ST_TIMEOUT:
		res->status = SBX_RUN_TIMEOUT;
		break;
	case SBX_FRAME_ST_EXECFAIL:
		res->status = SBX_RUN_ERROR;
		break;
	}
	res->exit_code = e->code;
	res->term_signal = (int)e->signal;
	res->cpu_user_us = e->utime_us;
	res->cpu_system_us = e->stime_us;
	res->max_rss_kb = e->maxrss_kb;
}
