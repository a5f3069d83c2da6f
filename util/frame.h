/*
 * util/frame.h: the framed protocol that sbx-init speaks to the host.
 *
 * `sbx-init run` writes frames on its standard output; the host reads them
 * from the exec's stdout stream. PID 1 speaks the same frames, both ways, on
 * its run channel (below; docs/protocol.md). Everything the init says is untrusted input
 * to the host: the decoder is strict, bounded, and fails closed.
 *
 * A frame is an 8-byte header and a payload:
 *	byte 0     magic 0xA5
 *	byte 1     type (enum sbx__frame_type)
 *	bytes 2-3  zero
 *	bytes 4-7  payload length, big-endian, at most SBX_FRAME_MAX
 * The EXIT payload is exactly SBX_FRAME_EXIT_LEN bytes, big-endian fields:
 *	u32 status (enum sbx__frame_status), i32 exit code, u32 signal,
 *	u32 flags (SBX_FRAME_F_*), u64 user CPU us, u64 system CPU us,
 *	u64 max RSS KiB.
 * EXIT is the last frame of a run; anything after it is a protocol error.
 */
#ifndef SBX_UTIL_FRAME_H
#define SBX_UTIL_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define SBX_FRAME_MAGIC 0xA5
#define SBX_FRAME_HDR 8
#define SBX_FRAME_MAX 65536
#define SBX_FRAME_EXIT_LEN 40
/*
 * docker exec's end (docs/protocol.md): after its EXIT, `sbx-init run` waits
 * for the host to end its stdin, reading and dropping what comes, until the
 * run's deadline or at least the first for a run past it; the host waits
 * at most the second for the stream's end.
 */
#define SBX_FRAME_LETGO_INIT_MS 2000
#define SBX_FRAME_LETGO_HOST_MS 5000

enum sbx__frame_type {
	SBX_FRAME_STDOUT = 1,
	SBX_FRAME_STDERR = 2,
	SBX_FRAME_EXIT = 3,
	SBX_FRAME_ERROR = 4 /* a message from the init itself (why exec failed, say) */
};

enum sbx__frame_status {
	SBX_FRAME_ST_EXITED = 0,
	SBX_FRAME_ST_SIGNALED = 1,
	SBX_FRAME_ST_TIMEOUT = 2,
	SBX_FRAME_ST_EXECFAIL = 3 /* exit code is 126 or 127 */
};

#define SBX_FRAME_F_OOM 1u /* the memory cgroup's oom-kill count rose during the run */

struct sbx__frame_exit {
	uint32_t status;
	int32_t code;
	uint32_t signal;
	uint32_t flags;
	uint64_t utime_us;
	uint64_t stime_us;
	uint64_t maxrss_kb;
};

/* Writes a header for a payload of len bytes into hdr. len must be <= SBX_FRAME_MAX. */
void sbx__frame_header(unsigned char hdr[SBX_FRAME_HDR], int type, uint32_t len);
/* Encodes an EXIT payload. */
void sbx__frame_exit_encode(unsigned char out[SBX_FRAME_EXIT_LEN], const struct sbx__frame_exit *e);
/* Decodes an EXIT payload; returns 0, or -1 if a field is out of range. */
int sbx__frame_exit_decode(struct sbx__frame_exit *out, const unsigned char *p, size_t len);

/*
 * Incremental decoder. Feed it bytes as they arrive; it calls cb once per
 * complete frame. It holds at most one frame (SBX_FRAME_HDR + SBX_FRAME_MAX).
 */
struct sbx__frame_decoder {
	unsigned char buf[SBX_FRAME_HDR + SBX_FRAME_MAX];
	size_t have;
	int done;	 /* an EXIT frame was seen */
	int error;	 /* sticky: a protocol error was seen */
	const char *why; /* with error: what was wrong, a static string */
};

typedef int (*sbx_frame_cb)(int type, const unsigned char *payload, size_t len, void *payload_arg);

void sbx__frame_decoder_init(struct sbx__frame_decoder *d);
/*
 * Feeds len bytes. Returns 0, -1 on a protocol error (bad magic, unknown
 * type, non-zero reserved bytes, oversized length, bytes after EXIT, an EXIT
 * payload of the wrong size), or the non-zero value cb returned.
 */
int sbx__frame_feed(struct sbx__frame_decoder *d,
		    const unsigned char *data,
		    size_t len,
		    sbx_frame_cb cb,
		    void *arg);

/*
 * The run channel (docs/protocol.md): `sbx-init pid1 --channel` serves runs
 * on its own stdin and stdout, which the host holds through the container's
 * attach stream. The frame layout is the same, with bytes 2-3 holding a run
 * id (big-endian, 1..65535) chosen by the host, so several runs may be in
 * flight; id 0 is the channel itself (HELLO, and an ERROR that closes it).
 * The single-run stream above is the special case "id 0, one run".
 *
 * Init to host: STDOUT, STDERR, ERROR, EXIT as above, plus CREDIT (u32:
 * stdin bytes of that run the init consumed) and HELLO (id 0, first frame:
 * u32 version, u32 most runs in flight, u32 stdin window).
 * Host to init: OPEN (u32 flags, u32 argc, u32 envc, u32 spec length,
 * u64 deadline ms, and with the PTY flag u16 rows, u16 cols), then SPEC
 * frames carrying exactly the spec (cwd, argv and env as NUL-terminated
 * strings), with no other frame in between; then STDIN frames within the
 * window, RESIZE frames (u16 rows, u16 cols) for a run with a terminal, and
 * one STDIN_EOF. Version 2 of the protocol added the PTY flag and RESIZE.
 * Version 3 added the channel's own DEADLINE (id 0, host to init: u64 the
 * sandbox's new deadline in unix seconds, or 0 to only ask for it) and its
 * answer DEADLINE_AT (id 0, init to host: u64 the deadline it now keeps),
 * which move the deadline of a sandbox that was paused (docs/protocol.md).
 */
enum sbx__chan_frame_type {
	SBX_FRAME_CREDIT = 5,
	SBX_FRAME_HELLO = 6,
	SBX_FRAME_DEADLINE_AT = 7,
	SBX_FRAME_OPEN = 0x10,
	SBX_FRAME_SPEC = 0x11,
	SBX_FRAME_STDIN = 0x12,
	SBX_FRAME_STDIN_EOF = 0x13,
	SBX_FRAME_RESIZE = 0x14,
	SBX_FRAME_DEADLINE = 0x15
};

#define SBX_CHAN_VERSION 3
#define SBX_CHAN_ID_MAX 65535u
#define SBX_CHAN_RUNS_MAX 16u
/* Stdin bytes of one run the host may have sent and the init not yet credited. */
#define SBX_CHAN_WINDOW (128u * 1024u)
#define SBX_CHAN_ARGC_MAX 4096u
#define SBX_CHAN_ENVC_MAX 1024u
#define SBX_CHAN_SPEC_MAX (2u << 20)
#define SBX_CHAN_ERROR_MAX 4096u
#define SBX_CHAN_DEADLINE_MS_MAX 31536000000ULL
#define SBX_FRAME_CREDIT_LEN 4
#define SBX_FRAME_HELLO_LEN 12
#define SBX_FRAME_OPEN_LEN 24
/* OPEN's flags: the only one asks for a pseudo-terminal (and a window size). */
#define SBX_CHAN_OPEN_PTY 1u
#define SBX_FRAME_OPEN_PTY_LEN 28
#define SBX_FRAME_RESIZE_LEN 4
#define SBX_FRAME_DEADLINE_LEN 8
/* A sandbox's deadline, unix seconds: at most this (year 2200 or so). */
#define SBX_CHAN_DEADLINE_MAX 7258118400ULL
/* A terminal's rows and columns: 1 to this. */
#define SBX_CHAN_WINSZ_MAX 4096u

/* Which end's frames a channel decoder reads. */
enum sbx__chan_dir {
	SBX_CHAN_TO_HOST = 1, /* the host reading the init */
	SBX_CHAN_TO_INIT = 2  /* the init reading the host */
};

struct sbx__chan_hello {
	uint32_t version;
	uint32_t runs_max;
	uint32_t window;
};

struct sbx__chan_open {
	uint32_t flags;
	uint32_t argc;
	uint32_t envc;
	uint32_t spec_len;
	uint64_t deadline_ms;
	uint16_t rows, cols; /* with SBX_CHAN_OPEN_PTY only */
};

/* A header carrying run id. id <= SBX_CHAN_ID_MAX, len <= SBX_FRAME_MAX. */
void sbx__chan_header(unsigned char hdr[SBX_FRAME_HDR], int type, unsigned int id, uint32_t len);
void sbx__chan_hello_encode(unsigned char out[SBX_FRAME_HELLO_LEN],
			    const struct sbx__chan_hello *h);
/* Returns 0, or -1 unless the payload is exactly SBX_FRAME_HELLO_LEN bytes with
 * version >= 1, 1 <= runs_max <= SBX_CHAN_ID_MAX and window >= 1. */
int sbx__chan_hello_decode(struct sbx__chan_hello *out, const unsigned char *p, size_t len);
/* Writes SBX_FRAME_OPEN_LEN bytes, or SBX_FRAME_OPEN_PTY_LEN with the PTY
 * flag (out must have room for them); returns how many. */
size_t sbx__chan_open_encode(unsigned char *out, const struct sbx__chan_open *o);
/* Returns 0, or -1 unless flags is 0 and len SBX_FRAME_OPEN_LEN, or flags is
 * SBX_CHAN_OPEN_PTY, len SBX_FRAME_OPEN_PTY_LEN and 1 <= rows, cols <=
 * WINSZ_MAX; and 1 <= argc <= ARGC_MAX, envc <= ENVC_MAX, argc + envc + 1 <=
 * spec_len <= SPEC_MAX and 1 <= deadline <= DEADLINE_MS_MAX. */
int sbx__chan_open_decode(struct sbx__chan_open *out, const unsigned char *p, size_t len);
void sbx__chan_resize_encode(unsigned char out[SBX_FRAME_RESIZE_LEN], uint16_t rows, uint16_t cols);
/* Returns 0, or -1 unless the payload is exactly SBX_FRAME_RESIZE_LEN bytes
 * with 1 <= rows, cols <= SBX_CHAN_WINSZ_MAX. */
int sbx__chan_resize_decode(const unsigned char *p, size_t len, uint16_t *rows, uint16_t *cols);
void sbx__chan_deadline_encode(unsigned char out[SBX_FRAME_DEADLINE_LEN], uint64_t unix_s);
/* Returns 0, or -1 unless the payload is exactly SBX_FRAME_DEADLINE_LEN bytes
 * holding at most SBX_CHAN_DEADLINE_MAX, and not 0 unless zero_ok (DEADLINE
 * may ask with 0; DEADLINE_AT always names a deadline). */
int sbx__chan_deadline_decode(const unsigned char *p, size_t len, int zero_ok, uint64_t *unix_s);
void sbx__chan_credit_encode(unsigned char out[SBX_FRAME_CREDIT_LEN], uint32_t n);
/* Returns the credited byte count (1..SBX_CHAN_WINDOW), or 0 when malformed. */
uint32_t sbx__chan_credit_decode(const unsigned char *p, size_t len);

/*
 * Incremental channel decoder, strict and bounded like the one above: it
 * checks magic, the type against the direction, the id (0 exactly for the
 * channel's own frames, non-zero for a run's) and every fixed or maximum
 * payload length, and decodes fixed payloads (EXIT, CREDIT, HELLO, OPEN)
 * before handing the frame on. Which frames may follow which is the
 * reader's business (it alone knows its runs). Errors are sticky.
 */
struct sbx__chan_decoder {
	unsigned char buf[SBX_FRAME_HDR + SBX_FRAME_MAX];
	size_t have;
	int dir;
	int error;
};

typedef int (*sbx_chan_cb)(
	int type, unsigned int id, const unsigned char *payload, size_t len, void *arg);

void sbx__chan_decoder_init(struct sbx__chan_decoder *d, enum sbx__chan_dir dir);
/* Returns 0, -1 on a protocol error, or the non-zero value cb returned. */
int sbx__chan_feed(struct sbx__chan_decoder *d,
		   const unsigned char *data,
		   size_t len,
		   sbx_chan_cb cb,
		   void *arg);

#endif
