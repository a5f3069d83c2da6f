/*
 * tests/support/h2_peer.h: a scripted HTTP/2 peer (h2c, prior knowledge) on
 * a loopback port, for the answers no well-behaved gRPC server gives: a
 * message split over odd DATA boundaries, a stream cut mid-message, a
 * declared length past any limit, a response without grpc-status, a
 * non-200 status. Written with libnghttp2; one thread serves every
 * connection.
 *
 * Each complete request (its body ended) is recorded and handed to the
 * test's handler, which writes the response as a script of steps; the
 * steps are sent in order, each only after the one before it left.
 */
#ifndef SBX_TESTS_H2_PEER_H
#define SBX_TESTS_H2_PEER_H

#include <stddef.h>
#include <stdint.h>

struct h2_peer;
struct h2_resp;

/* One request as received. */
struct h2_req {
	char path[256];
	char *headers; /* "name: value\n" per header, names lower case, in order */
	uint8_t *body; /* the raw request body (gRPC-framed) */
	size_t body_len;
	int conn; /* which connection (numbered from 1 in accept order) */
	int stream_id;
};

typedef void (*h2_peer_handler)(void *arg, const struct h2_req *req, struct h2_resp *resp);

/* Starts a peer on 127.0.0.1 (a fresh port); NULL on failure. */
struct h2_peer *h2_peer_start(h2_peer_handler handler, void *arg);
int h2_peer_port(const struct h2_peer *p);
/* "http://127.0.0.1:PORT" */
const char *h2_peer_url(const struct h2_peer *p);
void h2_peer_stop(struct h2_peer *p);

/* Requests so far to path (NULL: any path). */
int h2_peer_count(struct h2_peer *p, const char *path);
/* The nth (from 0) request to path (NULL: any), or NULL. Valid until stop. */
const struct h2_req *h2_peer_req(struct h2_peer *p, const char *path, int nth);
/* A header's value (the first one with that name), or NULL. */
const char *h2_req_header(const struct h2_req *r, const char *name);
/* The request's first gRPC message (after the 5-byte prefix), or NULL. */
const uint8_t *h2_req_message(const struct h2_req *r, size_t *len);

/* ===== Response steps ===== */

/* HEADERS with :status and content-type application/grpc, plus extra
 * headers ("name: value\n" lines, may be NULL). */
void h2_resp_headers(struct h2_resp *r, int status, const char *extra);
/* One DATA frame carrying exactly these bytes. */
void h2_resp_data(struct h2_resp *r, const void *data, size_t len);
/* One gRPC message (prefix and bytes) in one DATA frame. */
void h2_resp_message(struct h2_resp *r, const void *msg, size_t len);
/* Trailers ending the stream: grpc-status, grpc-message when msg is not
 * NULL (sent as given), and extra lines. */
void h2_resp_trailers(struct h2_resp *r, int grpc_status, const char *msg, const char *extra);
/* A Trailers-Only response: one HEADERS frame with :status 200,
 * content-type, grpc-status (and message, extra), ending the stream. */
void h2_resp_trailers_only(struct h2_resp *r, int grpc_status, const char *msg, const char *extra);
/* Ends the stream with an empty DATA frame and no trailers. */
void h2_resp_end(struct h2_resp *r);
/* RST_STREAM with INTERNAL_ERROR. */
void h2_resp_reset(struct h2_resp *r);
/* Closes the whole connection (TCP) once what is queued has been written. */
void h2_resp_close(struct h2_resp *r);
/* Waits ms before the next step. */
void h2_resp_delay(struct h2_resp *r, int ms);

/* Convenience: a whole OK unary answer (headers, message, grpc-status 0). */
void h2_resp_ok(struct h2_resp *r, const void *msg, size_t len);

/* Standard base64 without padding (gRPC's "-bin" header form) into dst. */
void h2_base64(char *dst, size_t cap, const void *data, size_t len);

#endif
