/*
 * engine/http-int.h: Docker Engine API transport over its unix socket.
 *
 * Only engine/ includes libcurl. Each call uses its own easy handle, so one
 * sbx_http may be shared by threads.
 */
#ifndef SBX_ENGINE_HTTP_INT_H
#define SBX_ENGINE_HTTP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define SBX_DOCKER_API "v1.41"
#define SBX_UNIX_PATH_MAX 107

struct sbx__http {
	char *sock;
	long timeout_ms;
};

int sbx__http_init(struct sbx__http *h, const char *sock, long timeout_ms);
void sbx__http_done(struct sbx__http *h);

/*
 * One request; body may be NULL. resp receives the body (capped at 16 MiB).
 * Returns 0 with *status set, or SBX_EUNAVAILABLE (cannot connect),
 * SBX_ETIMEOUT, SBX_EENGINE (transport failure). timeout_ms 0: the default.
 */
int sbx__http_call(struct sbx__http *h,
		   const char *method,
		   const char *path,
		   const char *body,
		   long timeout_ms,
		   long *status,
		   struct sbx__buf *resp);

/* POSTs a file as the body (application/x-tar). Same returns. */
int sbx__http_upload(struct sbx__http *h,
		     const char *path,
		     const char *file,
		     long timeout_ms,
		     long *status,
		     struct sbx__buf *resp);

/*
 * A hijacked connection: the request is sent with "Upgrade: tcp" and, once
 * the engine answers 101 (or 200), the raw socket carries the stream.
 *
 * The status line and headers are read in reads of at most
 * SBX_HIJACK_HEAD_MAX - 1 bytes in all; the stream bytes that came with
 * them (as many as the peer wrote at once) are kept in pre, which holds
 * any number the header read can return.
 */
#define SBX_HIJACK_HEAD_MAX 8192
struct sbx__hijack {
	void *curl; /* owns the connection */
	int fd;
	unsigned char pre[SBX_HIJACK_HEAD_MAX]; /* stream bytes read with the headers */
	size_t pre_len;
};

int sbx__http_hijack(struct sbx__http *h,
		     const char *path,
		     const char *body,
		     long timeout_ms,
		     struct sbx__hijack *out);
void sbx__hijack_close(struct sbx__hijack *hj);

/* Extracts the engine's "message" from an error body into a short string. */
const char *sbx__http_message(const struct sbx__buf *resp, char *dst, size_t dst_len);

#endif
