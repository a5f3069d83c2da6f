/*
 * tests/support/otlp_receiver.h: a local OTLP/HTTP collector for the tests,
 * on 127.0.0.1 only (libmicrohttpd). It keeps every request to /v1/traces,
 * checks each body against the OTLP JSON mapping, and can be made slow or
 * failing to test that export never holds up or fails sandbox work.
 */
#ifndef SBX_TESTS_OTLP_RECEIVER_H
#define SBX_TESTS_OTLP_RECEIVER_H

#include <jansson.h>

struct otlp_receiver;

/* Hang guard of a held receiver: far above any plausible test step. */
#define OTLP_HOLD_GUARD_S 120

/*
 * Answers each request with HTTP status (200 when 0). With hold set, no
 * answer goes out until otlp_receiver_release() (or otlp_receiver_stop());
 * a request held past OTLP_HOLD_GUARD_S is answered anyway and the
 * receiver remembers it (otlp_receiver_held_too_long), so a test that would
 * otherwise hang fails instead.
 */
struct otlp_receiver *otlp_receiver_start(int hold, unsigned int status);
/* Lets every held request, and every later one, be answered. */
void otlp_receiver_release(struct otlp_receiver *r);
/* Requests being held right now. */
int otlp_receiver_held(struct otlp_receiver *r);
/* Waits (hang guard OTLP_HOLD_GUARD_S) until at least n requests are held;
 * returns how many are. */
int otlp_receiver_wait_held(struct otlp_receiver *r, int n);
/* Whether a request was answered only because the hang guard passed. */
int otlp_receiver_held_too_long(struct otlp_receiver *r);
/* "http://127.0.0.1:PORT", the value for OTEL_EXPORTER_OTLP_ENDPOINT. */
const char *otlp_receiver_url(const struct otlp_receiver *r);
int otlp_receiver_requests(struct otlp_receiver *r);
/* Every span received so far, in order; fails the test if a body broke the
 * OTLP JSON mapping (see otlp_check). Caller decrefs. */
json_t *otlp_receiver_spans(struct otlp_receiver *r);
/* Waits until at least n spans arrived, for at most timeout_ms (a hang
 * guard: pass a generous one); returns how many arrived. */
int otlp_receiver_wait(struct otlp_receiver *r, int n, int timeout_ms);
/* Every body received so far, concatenated (caller frees), to search raw. */
char *otlp_receiver_bodies(struct otlp_receiver *r);
/* Value of a request header of the last request (caller frees), or NULL. */
char *otlp_receiver_header(struct otlp_receiver *r, const char *name);
/* The service.name of the last body's resource (caller frees), or NULL. */
char *otlp_receiver_service(struct otlp_receiver *r);
void otlp_receiver_stop(struct otlp_receiver *r);

/*
 * Checks an ExportTraceServiceRequest in the OTLP JSON mapping: ids are
 * lowercase hex of 32 (trace) and 16 (span) digits and not all zero, times
 * are unix nanoseconds as decimal strings, int attributes are strings,
 * the resource has service.name, kinds and status codes are in range.
 * Returns NULL, or what is wrong.
 */
const char *otlp_check(json_t *payload);

#endif
