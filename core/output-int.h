/*
 * core/output-int.h: where a run's output goes on its way to the result.
 *
 * A backend hands every chunk of program output, raw, to the run's sink
 * (struct sbx__run_req.sink). The sink redacts it with the streaming redactor
 * (unless the caller asked for raw output), applies the per-stream cap,
 * keeps it for the result and passes what it keeps to the caller's
 * callback. The result is closed with sbx__output_finish().
 */
#ifndef SBX_CORE_OUTPUT_INT_H
#define SBX_CORE_OUTPUT_INT_H

#include <sandboxio/sandbox.h>

#include "util/buf.h"
#include "util/redact-int.h"

struct sbx__output;

struct sbx__output_stream {
	struct sbx__output *owner;
	int id; /* SBX_STREAM_STDOUT or SBX_STREAM_STDERR */
	struct sbx__redact_stream red;
	struct sbx__buf buf;
	uint64_t raw_total; /* bytes the program wrote, before redaction and cap */
};

struct sbx__output {
	struct sbx__output_stream s[2];
	sbx_output_cb cb;
	void *payload;
	int raw;      /* the caller opted out of redaction */
	int canceled; /* the callback asked to stop */
	int flushing; /* after the run: a cancel no longer means anything */
};

void sbx__output_init(struct sbx__output *o, int64_t cap, int raw, sbx_output_cb cb, void *payload);
/* The sink: 0 to go on, 1 when the callback canceled the run, -2 out of memory. */
int sbx__output_sink(void *arg, int stream, const void *data, size_t len);
/* Flushes what is held and moves the output into res (stdout/stderr fields,
 * totals, truncation, SBX_HIT_OUTPUT). Returns 0 or SBX_ENOMEM. */
int sbx__output_finish(struct sbx__output *o, sbx_result *res);
/* Releases what is left, wiping held raw bytes. */
void sbx__output_done(struct sbx__output *o);

#endif
