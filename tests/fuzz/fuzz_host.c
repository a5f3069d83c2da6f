/*
 * tests/fuzz/fuzz_host.c: libFuzzer target for the host's reader of
 * everything that comes back from a sandbox: the attach stream (the
 * Engine's multiplexing, then the channel's frames and the rules of a run
 * in flight, engine/chan.c) and the single-run stream of `sbx-init run`
 * (util/frame.c).
 *
 * The first bytes of the input choose the run in flight, how much stdin it
 * has sent, whether the output sink cancels, and how the rest is cut into
 * reads; the rest is the stream. Invariants checked besides the
 * sanitizers': a non-OK result is sticky, the diagnostics stay within
 * their cap, credit never passes what was sent, and a run's EXIT, once
 * taken, is one the decoder accepts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chan-int.h"
#include "util/frame.h"

struct sink_state {
	size_t bytes;
	size_t cancel_at; /* 0: never */
};

static int sink(void *arg, int stream, const void *p, size_t n)
{
	struct sink_state *s = arg;

	(void)stream;
	if (n && !p)
		abort();
	s->bytes += n;
	return s->cancel_at && s->bytes >= s->cancel_at ? 1 : 0;
}

static int frame_cb(int type, const unsigned char *p, size_t len, void *arg)
{
	(void)arg;
	if (type == SBX_FRAME_EXIT && sbx__frame_exit_decode(NULL, p, len) != 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sink_state ss = {0};
	struct sbx__run_req req = {.sink = sink, .sink_arg = &ss};
	struct sbx__chan_run run = {.req = &req};
	struct sbx__frame_decoder *fd;
	struct sbx__chan_rx *rx;
	size_t off = 6, chunk;
	int last = SBX_CHAN_RX_OK;

	if (size < off)
		return 0;
	run.id = (unsigned int)data[0] << 8 | data[1];
	run.stdin_sent = (uint64_t)data[2] << 10;
	ss.cancel_at = data[3] & 0x80 ? (size_t)(data[3] & 0x7f) * 64 + 1 : 0;
	chunk = (size_t)data[4] + 1;
	rx = malloc(sizeof(*rx));
	fd = malloc(sizeof(*fd));
	if (!rx || !fd)
		abort();
	sbx__chan_rx_init(rx);
	/* Bit 0 of byte 5: a run in flight or none (the idle reads between runs). */
	rx->run = data[5] & 1 ? &run : NULL;
	sbx__frame_decoder_init(fd);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		int rc = sbx__chan_rx_feed(rx, data + off, n);

		if (last != SBX_CHAN_RX_OK && rc != last)
			abort(); /* not sticky */
		last = rc;
		(void)sbx__frame_feed(fd, data + off, n, frame_cb, NULL);
		if (rx->diag.len > SBX_CHAN_DIAG_MAX)
			abort();
		if (run.stdin_acked > run.stdin_sent)
			abort();
		off += n;
	}
	if (run.have_exit) {
		unsigned char e[SBX_FRAME_EXIT_LEN];

		sbx__frame_exit_encode(e, &run.exit);
		if (sbx__frame_exit_decode(NULL, e, sizeof(e)) != 0)
			abort();
	}
	if (last == SBX_CHAN_RX_VIOLATION && !rx->why)
		abort();
	sbx__chan_rx_done(rx);
	free(rx);
	free(fd);
	return 0;
}
