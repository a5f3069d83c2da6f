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

/* Answers each request after delay_ms with HTTP status (200 when 0). */
struct otlp_receiver *otlp_receiver_start(unsigned int delay_ms, unsigned int status);
/* "http://127.0.0.1:PORT", the value for OTEL_EXPORTER_OTLP_ENDPOINT. */
const char *otlp_receiver_url(const struct otlp_receiver *r);
int otlp_receiver_requests(struct otlp_receiver *r);
/* Every span received so far, in order; fails the test if a body broke the
 * OTLP JSON mapping (see otlp_check). Caller decrefs. */
json_t *otlp_receiver_spans(struct otlp_receiver *r);
/* Waits up to timeout_ms until at least n spans arrived; returns how many. */
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
