/*
 * engine/chan-int.h: the host's end of the run channel to a docker
 * sandbox's init (docs/protocol.md).
 *
 * engine/chan.c is the protocol without I/O (request encoding, and the
 * strict reader of everything the init and the Engine's stream say), so it
 * can be fuzzed alone; engine/attach.c holds the connection and runs.
 */
#ifndef SBX_ENGINE_CHAN_INT_H
#define SBX_ENGINE_CHAN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "util/buf.h"
#include "util/frame.h"

/* The Engine's stream multiplexing: [stream, 0, 0, 0, len(4)] then len bytes. */
#define SBX_MUX_HDR 8
#define SBX_MUX_FRAME_MAX (1u << 20)
/* The init's own stderr kept per run, for error messages. */
#define SBX_CHAN_DIAG_MAX 4096

/* One run in flight, as the reader sees it. */
struct sbx__chan_run {
	unsigned int id;
	const struct sbx__run_req *req; /* its sink receives the program's output */
	uint64_t stdin_sent;		/* stdin bytes the host has queued in STDIN frames */
	uint64_t stdin_acked;		/* of those, credited back by the init */
	struct sbx__frame_exit exit;
	int have_exit;
	int canceled; /* the output callback asked to stop */
};

enum sbx__chan_rx_rc {
	SBX_CHAN_RX_OK = 0,
	SBX_CHAN_RX_CANCEL = 1,	    /* the output callback returned non-zero */
	SBX_CHAN_RX_CLOSED = 2,	    /* the init closed the channel (ERROR on id 0) */
	SBX_CHAN_RX_VIOLATION = -1, /* the stream broke the protocol: fail closed */
	SBX_CHAN_RX_NOMEM = -2
};

/* Everything read from the attach stream; persists for the channel's life. */
struct sbx__chan_rx {
	unsigned char mux_hdr[SBX_MUX_HDR];
	size_t mux_hdr_have;
	uint32_t mux_left;
	int mux_stream;
	struct sbx__chan_decoder dec;
	int hello; /* HELLO seen (it must be the first frame) */
	struct sbx__chan_hello hi;
	int closed; /* the init closed the channel; closed_why says why */
	char closed_why[256];
	int sticky;		     /* a result other than OK was returned: nothing more is read */
	const char *why;	     /* the first violation */
	struct sbx__buf diag;	     /* the init's stderr */
	struct sbx__chan_run *run;   /* the run in flight, or NULL */
	unsigned int deadline_asked; /* DEADLINE frames sent and not yet answered */
	uint64_t deadline_at;	     /* the init's deadline as its last DEADLINE_AT said */
};

void sbx__chan_rx_init(struct sbx__chan_rx *rx);
void sbx__chan_rx_done(struct sbx__chan_rx *rx);
/*
 * Reads bytes of the attach stream. Frames on the init's stdout must be
 * HELLO first, then only frames of rx->run (none after its EXIT, and no
 * more credit than stdin sent), or an ERROR on id 0. Returns an
 * enum sbx__chan_rx_rc; anything but OK is sticky.
 */
int sbx__chan_rx_feed(struct sbx__chan_rx *rx, const unsigned char *p, size_t n);

/*
 * Encodes OPEN and SPEC for req as run id: *out_len bytes at *out, in
 * locked memory to release with sbx__secmem_free(*out, *alloc_len).
 * Returns 0, 1 when the request is past the channel's bounds (the caller
 * uses docker exec), or -1 with errno set when no locked memory could be had.
 */
int sbx__chan_encode_request(unsigned char **out,
			     size_t *out_len,
			     size_t *alloc_len,
			     unsigned int id,
			     const struct sbx__run_req *req);

/* The status a run's EXIT report stands for, filled into res (as docker exec's). */
void sbx__chan_fill_status(const struct sbx__frame_exit *e, sbx_result *res);

/* ===== The connection (engine/attach.c) ===== */

struct sbx__docker;
struct sbx__docker_box;
struct sbx__chan;

/* sbx__chan_run: the request never reached the init; use docker exec. */
#define SBX_CHAN_FALLBACK 1

/* Attaches to container id's stdio; the container must not have started yet. */
int sbx__chan_attach(struct sbx__docker *d, const char *id, struct sbx__chan **out);
/* As sbx__chan_attach, for create: on failure *out stays NULL and the
 * sandbox's runs use docker exec. */
void sbx__chan_open(struct sbx__docker *d, const char *id, struct sbx__chan **out);
/*
 * After the start: waits (until create's deadline, at most a few seconds)
 * for the init's HELLO. A channel that cannot carry runs is freed (*c =
 * NULL: exec); a stream that broke the protocol is an error, and create
 * fails closed.
 */
int sbx__chan_start(struct sbx__chan **c, uint64_t create_deadline);
/* Wraps a connected stream socket carrying an attach stream (for tests). */
int sbx__chan_from_fd(int fd, struct sbx__chan **out);
/*
 * Waits for the init's HELLO until deadline (sbx__mono_ms). Returns 0 when
 * the channel can carry runs, SBX_CHAN_FALLBACK when it cannot (no HELLO,
 * another version), or an error when the stream broke the protocol.
 */
int sbx__chan_ready(struct sbx__chan *c, uint64_t deadline);
void sbx__chan_free(struct sbx__chan *c);
/*
 * Moves the init's deadline to unix_s (0: leaves it) and reads back the one
 * it keeps into *at, over an idle channel: waits for a run in flight to end
 * until deadline (sbx__mono_ms). between (may be NULL) is called once the
 * frame is sent and before the answer is awaited (a resume thaws the
 * sandbox there, so that the frame is waiting for the init when it wakes);
 * its error is returned. Returns 0, SBX_EUNSUPPORTED (no channel, or an
 * init of another version), SBX_ETIMEOUT, or SBX_EENGINE.
 */
int sbx__chan_deadline(struct sbx__chan *c,
		       uint64_t unix_s,
		       int (*between)(void *arg),
		       void *arg,
		       uint64_t *at,
		       uint64_t deadline);
/* From any thread: the window size of the run with a terminal in flight on c.
 * Returns 0, or -1 when none is. */
int sbx__chan_resize(struct sbx__chan *c, unsigned int rows, unsigned int cols);
/*
 * Runs req over the channel. Returns 0 with res filled (res->path is
 * SBX_RUN_PATH_CHANNEL), SBX_CHAN_FALLBACK when the channel is gone, busy
 * or cannot carry req and the request did not reach the init, or an error.
 * A stream that breaks the protocol, a run past its host deadline and a
 * cancel kill the sandbox.
 */
int sbx__chan_run(struct sbx__docker *d,
		  struct sbx__docker_box *b,
		  const struct sbx__run_req *req,
		  sbx_result *res);
/* The docker backend's run: over the channel, else docker exec (res->path says which). */
int sbx__docker_run(struct sbx__docker *d,
		    struct sbx__docker_box *b,
		    const struct sbx__run_req *req,
		    sbx_result *res);

#endif
