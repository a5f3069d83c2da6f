/*
 * tests/fuzz/fuzz_trace.c: libFuzzer target for the exporter settings text
 * (sbx__tracer_open_text() in core/trace.c), which sbx-egress reads from
 * the sealed memory file its starter wrote (cli/egress/span.c).
 *
 * The sink here records what the tracer would hand an exporter and sends
 * nothing. Invariants besides the sanitizers': a tracer exists only for a
 * text with an http(s) URL; the settings it hands on hold no line break,
 * every header has its ": " and there are at most 32; and the settings
 * written back as text (sbx__tracer_text) open a tracer with the very same
 * text again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int rec_open(void **out, const struct sbx__span_sink_config *cfg)
{
	size_t n = 0;

	if (!cfg->url || strchr(cfg->url, '\n') || !cfg->service_name ||
	    strchr(cfg->service_name, '\n'))
		abort();
	if (strncmp(cfg->url, "http://", 7) != 0 && strncmp(cfg->url, "https://", 8) != 0)
		abort();
	for (; cfg->headers && cfg->headers[n]; n++)
		if (!strstr(cfg->headers[n], ": ") || strchr(cfg->headers[n], '\n'))
			abort();
	if (n > 32)
		abort();
	*out = malloc(1);
	return *out ? 0 : -1;
}

static void rec_submit(void *x, json_t *span)
{
	(void)x;
	json_decref(span);
}

static void rec_close(void *x, long bound_ms)
{
	(void)bound_ms;
	free(x);
}

static uint64_t rec_dropped(const void *x)
{
	(void)x;
	return 0;
}

static const struct sbx__span_sink rec_sink = {rec_open, rec_submit, rec_close, rec_dropped};

#define TP "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__tracer *t, *t2;
	const char *text;
	char *in = malloc(size + 1);

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	sbx__tracer_open_text(&t, &rec_sink, in, TP);
	if (t && !strstr(in, "url http"))
		abort();
	free(in);
	if (!t)
		return 0;
	if ((text = sbx__tracer_text(t))) {
		sbx__tracer_open_text(&t2, &rec_sink, text, TP);
		if (!t2 || !sbx__tracer_text(t2) || strcmp(sbx__tracer_text(t2), text) != 0)
			abort();
		sbx__tracer_free(t2);
	}
	sbx__tracer_free(t);
	return 0;
}
