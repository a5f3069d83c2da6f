/*
 * core/trace-int.h: OpenTelemetry spans of sandbox work (docs/tracing.md).
 *
 * A tracer belongs to a backend handle and exists only when the standard
 * OTEL_* environment names an OTLP endpoint; without one every call here
 * is a cheap no-op. Spans live on the caller's stack (a sandbox's own span
 * in its handle), are closed (redacted) when they end, and are handed to
 * the exporter behind the span sink below (remote/otlp.c's, plugged in by
 * backends/registry.c), which never blocks or fails the caller.
 */
#ifndef SBX_CORE_TRACE_INT_H
#define SBX_CORE_TRACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* How long sbx_backend_free() may spend sending the spans left. */
#define SBX_TRACE_CLOSE_MS 1000

struct sbx__tracer;

/* What a tracer tells its exporter, read from the environment. */
struct sbx__span_sink_config {
	const char *url;	    /* http:// or https://, the full traces URL */
	const char *const *headers; /* "Name: value", NULL-terminated; may be NULL */
	const char *service_name;   /* resource service.name */
	long timeout_ms;	    /* each request */
};

/*
 * Where a tracer's finished spans go: an exporter, as a struct of
 * functions, so that core names none. Nothing of it may block or fail the
 * caller.
 */
struct sbx__span_sink {
	/* Copies the config. Returns 0, or -1 when memory ran out. */
	int (*open)(void **out, const struct sbx__span_sink_config *cfg);
	/* Queues one span (stolen); never waits for the network. */
	void (*submit)(void *x, json_t *span);
	/* Sends what is queued for at most bound_ms, then stops and frees. */
	void (*close)(void *x, long bound_ms);
	/* Spans dropped so far. */
	uint64_t (*dropped)(const void *x);
};

struct sbx__span {
	struct sbx__tracer *t; /* NULL: not recorded (tracing off, or not sampled) */
	char trace_id[33];     /* "" when tracing is off */
	char span_id[17];      /* always set: a run's id is its span's */
	char parent_id[17];    /* "" for a root */
	const char *name;
	uint64_t start_ns;
	json_t *attrs;
};

/* *out is NULL when tracing is off (or sink is NULL). sink: the exporter
 * spans go to. traceparent: the W3C parent of every root span of this
 * backend; NULL or malformed: none. */
void sbx__tracer_open(struct sbx__tracer **out,
		      const struct sbx__span_sink *sink,
		      const char *traceparent);
/*
 * The same from the settings text of another tracer (sbx__tracer_text), not
 * from the environment: sbx-egress, which has none, exports with what its
 * starter's tracer had. *out is NULL when text names no http(s) URL.
 */
void sbx__tracer_open_text(struct sbx__tracer **out,
			   const struct sbx__span_sink *sink,
			   const char *text,
			   const char *traceparent);
/* t's exporter settings as text (lines; header values included, so the
 * text goes only to a process of ours, never through a sandbox); NULL when
 * t is NULL or they cannot be written as lines. Owned by t. */
const char *sbx__tracer_text(const struct sbx__tracer *t);
/* Sends what is left for at most SBX_TRACE_CLOSE_MS, then frees. */
void sbx__tracer_free(struct sbx__tracer *t);
uint64_t sbx__tracer_dropped(const struct sbx__tracer *t);

/* Parses "00-<32 hex>-<16 hex>-<2 hex>"; 0 when malformed or all-zero ids. */
int sbx__traceparent_parse(const char *tp, char trace_id[33], char span_id[17], int *sampled);

/*
 * Starts a span. Its parent is the caller's traceparent when valid, else
 * parent (one of ours) when that has a trace, else the tracer's own
 * traceparent, else none: a new trace. An unsampled parent makes an
 * unsampled (unrecorded) span.
 */
void sbx__span_begin(struct sbx__tracer *t,
		     struct sbx__span *sp,
		     const char *name,
		     const struct sbx__span *parent,
		     const char *traceparent);
void sbx__span_str(struct sbx__span *sp, const char *key, const char *value);
void sbx__span_int(struct sbx__span *sp, const char *key, int64_t value);
void sbx__span_bool(struct sbx__span *sp, const char *key, int value);
/* A string array (argv), bounded like the audit's. */
void sbx__span_strv(struct sbx__span *sp, const char *key, const char *const *v);
/* Ends the span: status error (with the thread's error message) when rc < 0;
 * closes it through the redactor and hands it to the exporter. */
void sbx__span_end(struct sbx__span *sp, int rc);

#endif
