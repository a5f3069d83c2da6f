/*
 * remote/otlp-int.h: an OTLP/HTTP exporter of spans, JSON encoding.
 *
 * Narrow on purpose: core hands it finished spans, already closed
 * (redacted) and already in the OTLP JSON mapping, and it sends them in
 * batches from a thread of its own. Nothing here can block or fail the
 * caller: a full queue, an unreachable collector or a shutdown bound that
 * passed drops spans and counts them.
 */
#ifndef SBX_REMOTE_OTLP_INT_H
#define SBX_REMOTE_OTLP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Most spans waiting to be sent; more are dropped. */
#define SBX_OTLP_QUEUE_MAX 2048
/* Most spans in one request. */
#define SBX_OTLP_BATCH_MAX 256

struct sbx_otlp;

struct sbx_otlp_config {
	const char *url;	    /* http:// or https://, the full traces URL */
	const char *const *headers; /* "Name: value", NULL-terminated; may be NULL */
	const char *service_name;   /* resource service.name */
	long timeout_ms;	    /* each request */
};

/* Copies the config. Returns 0, or -1 when memory ran out. */
int sbx__otlp_open(struct sbx_otlp **out, const struct sbx_otlp_config *cfg);
/* Queues one span (stolen); never waits for the network. */
void sbx__otlp_submit(struct sbx_otlp *x, json_t *span);
/* Sends what is queued for at most bound_ms, then stops and frees; what
 * could not be sent by then is dropped. NULL is a no-op. */
void sbx__otlp_close(struct sbx_otlp *x, long bound_ms);
uint64_t sbx__otlp_dropped(const struct sbx_otlp *x);
uint64_t sbx__otlp_sent(const struct sbx_otlp *x);

#endif
