/*
 * util/frame.h: the framed protocol that sbx-init speaks to the host.
 *
 * `sbx-init run` writes frames on its standard output; the host reads them
 * from the exec's stdout stream. Everything the init says is untrusted input
 * to the host: the decoder is strict, bounded, and fails closed.
 *
 * A frame is an 8-byte header and a payload:
 *	byte 0     magic 0xA5
 *	byte 1     type (enum sbx_frame_type)
 *	bytes 2-3  zero
 *	bytes 4-7  payload length, big-endian, at most SBX_FRAME_MAX
 * The EXIT payload is exactly SBX_FRAME_EXIT_LEN bytes, big-endian fields:
 *	u32 status (enum sbx_frame_status), i32 exit code, u32 signal,
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

enum sbx_frame_type {
	SBX_FRAME_STDOUT = 1,
	SBX_FRAME_STDERR = 2,
	SBX_FRAME_EXIT = 3,
	SBX_FRAME_ERROR = 4 /* a message from the init itself (why exec failed, say) */
};

enum sbx_frame_status {
	SBX_FRAME_ST_EXITED = 0,
	SBX_FRAME_ST_SIGNALED = 1,
	SBX_FRAME_ST_TIMEOUT = 2,
	SBX_FRAME_ST_EXECFAIL = 3 /* exit code is 126 or 127 */
};

#define SBX_FRAME_F_OOM 1u /* the memory cgroup's oom-kill count rose during the run */

struct sbx_frame_exit {
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
void sbx__frame_exit_encode(unsigned char out[SBX_FRAME_EXIT_LEN], const struct sbx_frame_exit *e);
/* Decodes an EXIT payload; returns 0, or -1 if a field is out of range. */
int sbx__frame_exit_decode(struct sbx_frame_exit *out, const unsigned char *p, size_t len);

/*
 * Incremental decoder. Feed it bytes as they arrive; it calls cb once per
 * complete frame. It holds at most one frame (SBX_FRAME_HDR + SBX_FRAME_MAX).
 */
struct sbx_frame_decoder {
	unsigned char buf[SBX_FRAME_HDR + SBX_FRAME_MAX];
	size_t have;
	int done;  /* an EXIT frame was seen */
	int error; /* sticky: a protocol error was seen */
};

typedef int (*sbx_frame_cb)(int type, const unsigned char *payload, size_t len, void *payload_arg);

void sbx__frame_decoder_init(struct sbx_frame_decoder *d);
/*
 * Feeds len bytes. Returns 0, -1 on a protocol error (bad magic, unknown
 * type, non-zero reserved bytes, oversized length, bytes after EXIT, an EXIT
 * payload of the wrong size), or the non-zero value cb returned.
 */
int sbx__frame_feed(struct sbx_frame_decoder *d,
		    const unsigned char *data,
		    size_t len,
		    sbx_frame_cb cb,
		    void *arg);

#endif
