/*
 * cli/egress/span.c: the span of each connection of sbx-egress
 * (docs/tracing.md), a child of the sandbox's span, exported by the
 * library's OTLP exporter (remote/otlp.c) with the settings its starter's
 * tracer had, read once from descriptor 5 (netpolicy/egress.c writes them
 * into a sealed memory file; this process has no environment).
 *
 * A connection's span is queued after the connection ends: the exporter's
 * thread sends batches from its bounded queue, so a collector that is slow
 * or gone never holds up a relay, and what it could not take is counted
 * (the count rides on every later span as sandboxio.egress.spans_dropped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/egress/egress.h"
#include "core/audit-int.h"
#include "core/trace-int.h"
#include "remote/otlp-int.h"

#define OTLP_TEXT_MAX (64 * 1024)

void egress_trace_open(struct egress_cfg *c)
{
	char *text, tp[64];
	size_t got = 0;
	ssize_t n = 1;

	if (c->otlp_fd < 0)
		return;
	text = malloc(OTLP_TEXT_MAX + 1);
	while (text && n > 0 && got < OTLP_TEXT_MAX)
		if ((n = read(c->otlp_fd, text + got, OTLP_TEXT_MAX - got)) > 0)
			got += (size_t)n;
	close(c->otlp_fd);
	c->otlp_fd = -1;
	if (!text)
		return;
	text[got] = '\0';
	/* The sandbox's span is the parent of every connection's; without it
	 * the spans would start a trace of their own, so none are made. */
	if (n >= 0 && got < OTLP_TEXT_MAX && c->trace_id && c->span_id &&
	    snprintf(tp, sizeof(tp), "00-%s-%s-01", c->trace_id, c->span_id) == 55)
		sbx__tracer_open_text(&c->tracer, &sbx__otlp_sink, text, tp);
	explicit_bzero(text, got);
	free(text);
}

void egress_span(const struct egress_cfg *c, const struct sbx__audit_egress *e, uint64_t start_ns)
{
	struct sbx__span sp;

	if (!c->tracer)
		return;
	sbx__span_begin(c->tracer, &sp, "sandboxio.egress.connection", NULL, NULL);
	sp.start_ns = start_ns;
	sbx__span_str(&sp, "sandboxio.sandbox.id", c->sandbox_id);
	if (c->tenant)
		sbx__span_str(&sp, "sandboxio.tenant", c->tenant);
	sbx__span_str(&sp, "sandboxio.egress.verdict", e->allowed ? "allowed" : "refused");
	if (!e->allowed)
		sbx__span_str(&sp, "sandboxio.egress.reason", e->reason);
	/* As in the audit event: a name that no entry allows only by length. */
	if (e->name)
		sbx__span_str(&sp, "sandboxio.egress.name", e->name);
	sbx__span_int(&sp, "sandboxio.egress.name_len", (int64_t)e->name_len);
	sbx__span_str(&sp, "sandboxio.egress.address", e->address);
	sbx__span_int(&sp, "sandboxio.egress.port", e->port);
	sbx__span_int(&sp, "sandboxio.egress.bytes_up", (int64_t)e->bytes_up);
	sbx__span_int(&sp, "sandboxio.egress.bytes_down", (int64_t)e->bytes_down);
	sbx__span_int(&sp, "sandboxio.egress.duration_ms", (int64_t)e->duration_ms);
	sbx__span_int(&sp, "sandboxio.egress.spans_dropped",
		      (int64_t)sbx__tracer_dropped(c->tracer));
	sbx__span_end(&sp, 0);
}
