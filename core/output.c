/*
 * core/output.c: a run's output, redacted at the one place it is closed.
 *
 * Redaction comes before the cap, so a cut at the cap falls in a marker or
 * in plain text, never inside a secret. The callback sees exactly what the
 * result keeps, in order; with secrets registered it may see it up to one
 * held-back window (the longest registered form less one byte) later than
 * the program wrote it, and the rest at the end of the run. Output past the
 * cap is counted and dropped without being redacted.
 */
#include <string.h>

#include <sandboxio.h>

#include "core/output-int.h"
#include "util/error-int.h"

void sbx__output_init(struct sbx__output *o, int64_t cap, int raw, sbx_output_cb cb, void *payload)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < 2; i++) {
		o->s[i].owner = o;
		o->s[i].id = i == 0 ? SBX_STREAM_STDOUT : SBX_STREAM_STDERR;
		o->s[i].buf.cap = (size_t)cap;
	}
	o->raw = raw;
	o->cb = cb;
	o->payload = payload;
}

/* Keeps redacted bytes up to the cap and shows the kept ones to the callback. */
static int keep(void *arg, const char *data, size_t len)
{
	struct sbx__output_stream *st = arg;
	struct sbx__output *o = st->owner;
	size_t before = st->buf.len;

	if (sbx__buf_append(&st->buf, data, len) < 0)
		return -2;
	if (o->cb && st->buf.len > before &&
	    o->cb(st->id, st->buf.data + before, st->buf.len - before, o->payload) != 0 &&
	    !o->flushing) {
		o->canceled = 1;
		return 1;
	}
	return 0;
}

int sbx__output_sink(void *arg, int stream, const void *data, size_t len)
{
	struct sbx__output *o = arg;
	struct sbx__output_stream *st = &o->s[stream == SBX_STREAM_STDERR];
	size_t cap = st->buf.cap ? st->buf.cap : SIZE_MAX;

	st->raw_total += len;
	if (st->buf.len >= cap) {
		/* Full: the rest is counted and dropped, and needs no redaction. */
		if (len)
			st->buf.truncated = 1;
		return 0;
	}
	if (o->raw)
		return keep(st, data, len);
	return sbx__redact_stream_feed(&st->red, data, len, keep, st);
}

int sbx__output_finish(struct sbx__output *o, sbx_result *res)
{
	struct sbx__output_stream *out = &o->s[0], *err = &o->s[1];

	o->flushing = 1;
	for (int i = 0; i < 2; i++)
		if (!o->raw && sbx__redact_stream_flush(&o->s[i].red, keep, &o->s[i]) == -2)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE,
					      "out of memory for output");
	res->stdout_len = out->buf.len;
	res->stderr_len = err->buf.len;
	res->stdout_total = out->raw_total;
	res->stderr_total = err->raw_total;
	res->stdout_truncated = out->buf.truncated;
	res->stderr_truncated = err->buf.truncated;
	if (out->buf.truncated || err->buf.truncated)
		res->limits_hit |= SBX_HIT_OUTPUT;
	res->stdout_data = sbx__buf_steal(&out->buf);
	res->stderr_data = sbx__buf_steal(&err->buf);
	if (!res->stdout_data || !res->stderr_data)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory for output");
	return 0;
}

void sbx__output_done(struct sbx__output *o)
{
	for (int i = 0; i < 2; i++) {
		sbx__redact_stream_done(&o->s[i].red);
		sbx__buf_clear(&o->s[i].buf);
	}
}
