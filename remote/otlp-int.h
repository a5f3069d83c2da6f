/*
 * remote/otlp-int.h: an OTLP/HTTP exporter of spans, JSON encoding: the
 * span sink (core/trace-int.h) that backends/registry.c gives every tracer.
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

#include "core/trace-int.h"

/* Most spans waiting to be sent; more are dropped. */
#define SBX_OTLP_QUEUE_MAX 2048
/* Most spans in one request. */
#define SBX_OTLP_BATCH_MAX 256

struct sbx_otlp;

/* Copies the config. Returns 0, or -1 when memory ran out. */
int sbx__otlp_open(struct sbx_otlp **out, const struct sbx__span_sink_config *cfg);
/* Queues one span (stolen); never waits for the network. */
void sbx__otlp_submit(struct sbx_otlp *x, json_t *span);
/* Sends what is queued for at most bound_ms, then stops and frees; what
 * could not be sent by then is dropped. NULL is a no-op. */
void sbx__otlp_close(struct sbx_otlp *x, long bound_ms);
uint64_t sbx__otlp_dropped(const struct sbx_otlp *x);
uint64_t sbx__otlp_sent(const struct sbx_otlp *x);

/* The functions above as core's span sink. */
extern const struct sbx__span_sink sbx__otlp_sink;

#endif
