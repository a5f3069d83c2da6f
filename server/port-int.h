/*
 * server/port-int.h: the proxy of a sandbox's other ports (server/port.c)
 * and its readers of a response (server/port-http.c, pure and fuzzed by
 * tests/fuzz/fuzz_proxy.c).
 */
#ifndef SBX_SERVER_PORT_INT_H
#define SBX_SERVER_PORT_INT_H

#include <stddef.h>
#include <stdint.h>

#define SBXS_HEAD_MAX (64u << 10) /* a response's head, and its trailer */
#define SBXS_HEADERS_MAX 100
#define SBXS_CHUNK_LINE_MAX 4096 /* a chunk's extensions, a trailer line */

enum sbxs_body { SBXS_BODY_NONE = 0, SBXS_BODY_LENGTH, SBXS_BODY_CHUNKED, SBXS_BODY_CLOSE };

struct sbxs_http_field {
	const char *name, *value; /* into the parsed bytes, not NUL-terminated */
	size_t name_len, value_len;
};

struct sbxs_http_head {
	unsigned status; /* 100..599 */
	enum sbxs_body framing;
	uint64_t length; /* SBXS_BODY_LENGTH */
	size_t n;
	struct sbxs_http_field h[SBXS_HEADERS_MAX];
};

/*
 * The head of an HTTP/1.x response in buf[0..len) (an answer to a HEAD
 * request with head_request: it has no body). Returns the head's length
 * (through its blank line), 0 when more bytes are needed (a head shorter
 * than SBXS_HEAD_MAX so far), or -1 with err. A 1xx head has no body
 * (framing SBXS_BODY_NONE): the caller reads the next head.
 */
long sbxs_http_head_parse(const char *buf,
			  size_t len,
			  int head_request,
			  struct sbxs_http_head *hd,
			  char *err,
			  size_t esize);

/* Whether a header is hop-by-hop (or the framing's): not passed on. */
int sbxs_http_hop_header(const char *name);

/* A chunked body's decoder: zeroed to start. */
struct sbxs_chunks {
	int state;
	unsigned digits;
	uint64_t left;
	size_t line, trailer;
	unsigned char prev;
};

/*
 * Decodes in[0..len) into out (at most outcap bytes, *outlen written).
 * Returns the bytes of in consumed (fewer than len when out is full or the
 * body ended), or -1 with err.
 */
long sbxs_chunks_feed(struct sbxs_chunks *d,
		      const char *in,
		      size_t len,
		      char *out,
		      size_t outcap,
		      size_t *outlen,
		      char *err,
		      size_t esize);
/* Whether the last chunk and the trailer have come. */
int sbxs_chunks_done(const struct sbxs_chunks *d);

#endif
