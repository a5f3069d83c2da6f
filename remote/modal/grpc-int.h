/*
 * remote/modal/grpc-int.h: a gRPC client over HTTP/2 (libcurl), as much of
 * gRPC as the modal backend needs: unary and server-streaming calls, the
 * status and its details, deadlines, and Modal's retry rules.
 *
 * A channel is one host: TLS with ALPN h2 for https://, or h2c with prior
 * knowledge for http:// (a test double, or a command router on loopback).
 * Calls that must run at once (a run's stdout, stderr, stdin and wait) are
 * started in one call set, a libcurl multi handle, so that they share one
 * HTTP/2 connection; a channel keeps a few idle sets so that connections
 * are reused across calls. A set is used by one thread at a time; a
 * channel may be shared by threads.
 *
 * Requests are framed in place: the caller packs its message after
 * SBX__GRPC_PREFIX spare bytes, which the transport fills with the 5-byte
 * gRPC prefix, so that a request holding secrets is never copied into a
 * buffer the caller cannot wipe.
 */
#ifndef SBX_REMOTE_MODAL_GRPC_INT_H
#define SBX_REMOTE_MODAL_GRPC_INT_H

#include <stddef.h>
#include <stdint.h>

#define SBX__GRPC_PREFIX 5
#define SBX__GRPC_MAX_MSG_DEFAULT (100u << 20) /* as Modal's clients */
#define SBX__GRPC_THROTTLE_MAX_DEFAULT_MS 60000u

enum sbx__grpc_code {
	SBX__GRPC_OK = 0,
	SBX__GRPC_CANCELLED = 1,
	SBX__GRPC_UNKNOWN = 2,
	SBX__GRPC_INVALID_ARGUMENT = 3,
	SBX__GRPC_DEADLINE_EXCEEDED = 4,
	SBX__GRPC_NOT_FOUND = 5,
	SBX__GRPC_ALREADY_EXISTS = 6,
	SBX__GRPC_PERMISSION_DENIED = 7,
	SBX__GRPC_RESOURCE_EXHAUSTED = 8,
	SBX__GRPC_FAILED_PRECONDITION = 9,
	SBX__GRPC_ABORTED = 10,
	SBX__GRPC_OUT_OF_RANGE = 11,
	SBX__GRPC_UNIMPLEMENTED = 12,
	SBX__GRPC_INTERNAL = 13,
	SBX__GRPC_UNAVAILABLE = 14,
	SBX__GRPC_DATA_LOSS = 15,
	SBX__GRPC_UNAUTHENTICATED = 16,
};

/* One metadata entry (an HTTP/2 header) sent with a call. */
struct sbx__grpc_md {
	const char *name;
	const char *value;
};

/* How a call ended. */
struct sbx__grpc_status {
	int code;	    /* an sbx__grpc_code; UNAVAILABLE for a lost connection */
	int broken;	    /* the peer broke the protocol: not retried, not trusted */
	int canceled;	    /* the kill flag or the message callback stopped it */
	int cb_rc;	    /* the message callback's non-zero return, if it stopped it */
	char message[512];  /* grpc-message (percent-decoded, printable), or why */
	double retry_after; /* seconds from an RPCRetryPolicy detail; < 0: none */
	char captured[64];  /* the value of opts.capture in the response headers */
};

struct sbx__grpc_opts {
	uint64_t deadline_ms; /* absolute, on sbx__grpc_now_ms()'s clock; required */
	const struct sbx__grpc_md *md;
	size_t md_n;
	int retries;		  /* unary: retries on retryable codes; < 0: 3 */
	const int *kill;	  /* non-NULL: becoming non-zero aborts promptly */
	size_t max_msg;		  /* largest message accepted; 0: 100 MiB */
	uint64_t max_throttle_ms; /* longest a server's throttle may delay a call; 0: 60 s;
				    UINT64_MAX: never wait for one */
	const char *capture;	  /* a response header to copy into status.captured */
	int unary;		  /* start(): exactly one response message is required */
};

/* Called with each complete response message; non-zero stops the call. */
typedef int (*sbx__grpc_msg_cb)(void *arg, const uint8_t *msg, size_t len);

struct sbx__grpc_chan;
struct sbx__grpc_set;
struct sbx__grpc_call;

uint64_t sbx__grpc_now_ms(void);
/* A random (version 4) UUID, 36 characters and a NUL. */
void sbx__grpc_uuid4(char out[37]);
/* "NOT_FOUND", ...; "CODE_<n>" for one out of range (in a static buffer per code). */
const char *sbx__grpc_code_name(int code);
/* The SBX_E* code of a gRPC code. */
int sbx__grpc_sbx_code(int code);

/*
 * A channel to base_url, "https://HOST[:PORT]" or "http://HOST[:PORT]"
 * (h2c, prior knowledge). Returns 0, SBX_EINVALID, SBX_ENOMEM.
 */
int sbx__grpc_chan_new(struct sbx__grpc_chan **out, const char *base_url);
void sbx__grpc_chan_free(struct sbx__grpc_chan *ch);
const char *sbx__grpc_chan_url(const struct sbx__grpc_chan *ch);

/*
 * A unary call with Modal's retry rules: on DEADLINE_EXCEEDED, UNAVAILABLE,
 * CANCELLED, INTERNAL and UNKNOWN, up to o->retries more attempts, 0.1 s
 * apart doubling up to 1 s, never past o->deadline_ms, all with one
 * x-idempotency-key and a counting x-retry-attempt; a server's
 * RPCRetryPolicy waits as asked and does not count as a retry. framed holds
 * SBX__GRPC_PREFIX spare bytes and then the message (len counts both).
 * *resp (malloc'ed, the response message) is written only on success; st
 * (may be NULL) always. Returns 0 or an SBX_E* code with the error recorded
 * naming the method, the gRPC code and grpc-message.
 */
int sbx__grpc_unary(struct sbx__grpc_chan *ch,
		    const char *method,
		    void *framed,
		    size_t len,
		    const struct sbx__grpc_opts *o,
		    uint8_t **resp,
		    size_t *resp_len,
		    struct sbx__grpc_status *st);

/* A server-streaming call, no retries: each message goes to cb. */
int sbx__grpc_stream(struct sbx__grpc_chan *ch,
		     const char *method,
		     void *framed,
		     size_t len,
		     const struct sbx__grpc_opts *o,
		     sbx__grpc_msg_cb cb,
		     void *arg,
		     struct sbx__grpc_status *st);

/* ===== Calls that run at once, over one connection ===== */

int sbx__grpc_set_new(struct sbx__grpc_set **out, struct sbx__grpc_chan *ch);
/* Aborts the calls still in the set (recording no error); keeps its
 * connection for reuse. */
void sbx__grpc_set_free(struct sbx__grpc_set *s);
/* Starts a call; framed must stay valid until the call ends. */
int sbx__grpc_start(struct sbx__grpc_set *s,
		    struct sbx__grpc_call **out,
		    const char *method,
		    void *framed,
		    size_t len,
		    const struct sbx__grpc_opts *o,
		    sbx__grpc_msg_cb cb,
		    void *arg);
/*
 * Moves the set's transfers on for at most timeout_ms, and sets *done to a
 * call that finished (NULL when none did). Returns 0, or SBX_EENGINE when
 * libcurl itself fails.
 */
int sbx__grpc_set_step(struct sbx__grpc_set *s, int timeout_ms, struct sbx__grpc_call **done);
/*
 * Ends a call (finished or not: an unfinished one is aborted) and frees it.
 * Returns 0 when it ended with OK, else an SBX_E* code with the error
 * recorded; st (may be NULL) says how it ended.
 */
int sbx__grpc_call_end(struct sbx__grpc_call *c, struct sbx__grpc_status *st);
/* Whether a gRPC code is one Modal's clients retry. */
int sbx__grpc_retryable(int code);

#endif
