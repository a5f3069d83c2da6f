/*
 * core/trace.c: spans of sandbox work, configured by the standard OpenTelemetry
 * environment (docs/tracing.md) and handed to the span sink the tracer was
 * opened with (core/trace-int.h; remote/otlp.c's exporter).
 *
 * The environment is read once per backend, with secure_getenv (ignored in
 * setuid programs). Tracing is on only when an OTLP endpoint is named, and
 * a malformed setting turns it off rather than failing anything: spans are
 * an observer, never a reason for a sandbox operation to fail. Header
 * values of OTEL_EXPORTER_OTLP_HEADERS may be credentials, so they are
 * registered with the redactor while the tracer lives.
 *
 * A span is encoded straight into the OTLP JSON mapping: ids as lowercase
 * hex (16 bytes trace, 8 bytes span), times as unix nanoseconds in decimal
 * strings, int attributes as decimal strings, enums as integers.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sandboxio.h>

#include "core/record-int.h"
#include "core/trace-int.h"
#include "util/base64.h"
#include "util/redact-int.h"

#define MAX_HEADERS 32
#define ARG_MAX_BYTES 4096
#define ARGV_MAX_BYTES (64u << 10)
#define SPAN_KIND_INTERNAL 1
#define STATUS_OK 1
#define STATUS_ERROR 2

struct sbx__tracer {
	const struct sbx__span_sink *sink;
	void *exp;
	char trace_id[33]; /* the caller's parent, when given */
	char span_id[17];
	int sampled;
	int redact_ids[MAX_HEADERS];
	int nredact;
	char *text; /* the exporter's settings for a child process; NULL: none */
};

/* ===== Configuration ===== */

static const char *env(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

/* Percent-decodes s[0..n) into dst (n + 1 bytes); NULL on a bad escape or NUL. */
static char *pct_decode(char *dst, const char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return NULL;
			hi = sbx__hexval((unsigned char)s[i + 1]);
			lo = sbx__hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return NULL;
			dst[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			dst[o++] = s[i];
		}
	}
	dst[o] = '\0';
	return dst;
}

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s))
		(*s)++, (*n)--;
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

static int token_char(unsigned char c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c);
}

/*
 * Adds "Name: value" for each "name=value" of list (W3C baggage style,
 * values percent-encoded). Entries that are malformed, or whose value could
 * break a header line, are skipped. A later list replaces a name an earlier
 * one set (the traces-specific variable wins).
 */
static void parse_headers(char **out, size_t *n, const char *list)
{
	const char *p = list;

	while (p && *p && *n < MAX_HEADERS) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p), klen, vlen;
		const char *k = p, *v;
		char *val, *line;
		int ok = 1;

		p = end ? end + 1 : NULL;
		eq = memchr(k, '=', len);
		if (!eq)
			continue;
		klen = (size_t)(eq - k);
		v = eq + 1;
		vlen = len - klen - 1;
		trim(&k, &klen);
		trim(&v, &vlen);
		for (size_t i = 0; i < klen; i++)
			ok &= token_char((unsigned char)k[i]);
		if (!ok || klen == 0 || !(val = malloc(vlen + 1)))
			continue;
		if (!pct_decode(val, v, vlen) || strpbrk(val, "\r\n")) {
			explicit_bzero(val, vlen);
			free(val);
			continue;
		}
		for (size_t i = 0; i < *n; i++)
			if (strncasecmp(out[i], k, klen) == 0 && out[i][klen] == ':') {
				explicit_bzero(out[i], strlen(out[i]));
				free(out[i]);
				out[i] = out[--*n];
				break;
			}
		if (asprintf(&line, "%.*s: %s", (int)klen, k, val) >= 0)
			out[(*n)++] = line;
		explicit_bzero(val, strlen(val));
		free(val);
	}
}

int sbx__traceparent_parse(const char *tp, char trace_id[33], char span_id[17], int *sampled)
{
	int zero_t = 1, zero_s = 1, flags;

	if (!tp || strlen(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-')
		return 0;
	/* Version 00 is exactly 55 bytes; a later version may add fields after '-'. */
	if (sbx__hexval(tp[0]) < 0 || sbx__hexval(tp[1]) < 0 || strncmp(tp, "ff", 2) == 0 ||
	    (strncmp(tp, "00", 2) == 0 && tp[55] != '\0') || (tp[55] != '\0' && tp[55] != '-'))
		return 0;
	for (int i = 0; i < 55; i++) {
		if (i == 2 || i == 35 || i == 52)
			continue;
		/* Lowercase hex only. */
		if (!((tp[i] >= '0' && tp[i] <= '9') || (tp[i] >= 'a' && tp[i] <= 'f')))
			return 0;
		if (i > 2 && i < 35 && tp[i] != '0')
			zero_t = 0;
		if (i > 35 && i < 52 && tp[i] != '0')
			zero_s = 0;
	}
	if (zero_t || zero_s)
		return 0;
	memcpy(trace_id, tp + 3, 32);
	trace_id[32] = '\0';
	memcpy(span_id, tp + 36, 16);
	span_id[16] = '\0';
	flags = sbx__hexval(tp[53]) << 4 | sbx__hexval(tp[54]);
	*sampled = flags & 1;
	return 1;
}

/*
 * The settings as lines, for a process of ours that exports spans of its
 * own (sbx-egress, given them on a descriptor): "url U", "service S",
 * "timeout N", then "header Name: value" each. NULL when a value holds a
 * line break (such a URL or service name could not be read back).
 */
static char *config_text(const struct sbx__span_sink_config *cfg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int bad = strpbrk(cfg->url, "\r\n") || strpbrk(cfg->service_name, "\r\n");

	if (!f)
		return NULL;
	fprintf(f, "url %s\nservice %s\ntimeout %ld\n", cfg->url, cfg->service_name,
		cfg->timeout_ms);
	for (size_t i = 0; cfg->headers && cfg->headers[i]; i++)
		fprintf(f, "header %s\n", cfg->headers[i]);
	if (fclose(f) != 0 || bad) {
		if (text)
			explicit_bzero(text, len);
		free(text);
		return NULL;
	}
	return text;
}

/* The tracer of cfg: its header values registered with the redactor, the
 * exporter opened, the caller's parent kept. */
static void tracer_start(struct sbx__tracer **out,
			 const struct sbx__span_sink *sink,
			 const struct sbx__span_sink_config *cfg,
			 const char *traceparent)
{
	struct sbx__tracer *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return;
	for (size_t i = 0; cfg->headers && cfg->headers[i]; i++) {
		const char *v = strchr(cfg->headers[i], ':') + 2;

		if (strlen(v) >= SBX_REDACT_FORM_MIN && t->nredact < MAX_HEADERS) {
			int id = sbx__redact_register(v, strlen(v));

			if (id > 0)
				t->redact_ids[t->nredact++] = id;
		}
	}
	t->sink = sink;
	t->text = config_text(cfg);
	if (sink->open(&t->exp, cfg) < 0) {
		for (int i = 0; i < t->nredact; i++)
			sbx__redact_unregister(t->redact_ids[i]);
		if (t->text)
			explicit_bzero(t->text, strlen(t->text));
		free(t->text);
		free(t);
		return;
	}
	if (!sbx__traceparent_parse(traceparent, t->trace_id, t->span_id, &t->sampled))
		t->trace_id[0] = t->span_id[0] = '\0';
	*out = t;
}

static void free_headers(char **headers, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		explicit_bzero(headers[i], strlen(headers[i]));
		free(headers[i]);
	}
}

void sbx__tracer_open(struct sbx__tracer **out,
		      const struct sbx__span_sink *sink,
		      const char *traceparent)
{
	struct sbx__span_sink_config cfg = {0};
	const char *ep, *sdk = env("OTEL_SDK_DISABLED"), *exporter = env("OTEL_TRACES_EXPORTER");
	const char *tmo = env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT");
	char *headers[MAX_HEADERS + 1] = {0}, *url = NULL;
	size_t nh = 0;

	*out = NULL;
	if (!sink)
		return;
	if ((sdk && strcasecmp(sdk, "true") == 0) || (exporter && !strstr(exporter, "otlp")))
		return;
	if ((ep = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))) {
		url = strdup(ep);
	} else if ((ep = env("OTEL_EXPORTER_OTLP_ENDPOINT"))) {
		size_t n = strlen(ep);

		if (asprintf(&url, "%.*s/v1/traces", (int)(n && ep[n - 1] == '/' ? n - 1 : n), ep) <
		    0)
			url = NULL;
	}
	if (!url)
		return;
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		free(url);
		return;
	}
	parse_headers(headers, &nh, env("OTEL_EXPORTER_OTLP_HEADERS"));
	parse_headers(headers, &nh, env("OTEL_EXPORTER_OTLP_TRACES_HEADERS"));
	if (!tmo)
		tmo = env("OTEL_EXPORTER_OTLP_TIMEOUT");
	cfg.url = url;
	cfg.headers = (const char *const *)headers;
	cfg.service_name = env("OTEL_SERVICE_NAME") ? env("OTEL_SERVICE_NAME") : "sandboxio";
	cfg.timeout_ms = tmo ? strtol(tmo, NULL, 10) : 10000;
	tracer_start(out, sink, &cfg, traceparent);
	free_headers(headers, nh);
	free(url);
}

void sbx__tracer_open_text(struct sbx__tracer **out,
			   const struct sbx__span_sink *sink,
			   const char *text,
			   const char *traceparent)
{
	struct sbx__span_sink_config cfg = {.service_name = "sandboxio", .timeout_ms = 10000};
	char *copy, *save = NULL, *headers[MAX_HEADERS + 1] = {0};
	size_t nh = 0;

	*out = NULL;
	if (!sink || !text || !(copy = strdup(text)))
		return;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "url ", 4) == 0)
			cfg.url = l + 4;
		else if (strncmp(l, "service ", 8) == 0)
			cfg.service_name = l + 8;
		else if (strncmp(l, "timeout ", 8) == 0)
			cfg.timeout_ms = strtol(l + 8, NULL, 10);
		else if (strncmp(l, "header ", 7) == 0 && nh < MAX_HEADERS && strstr(l + 7, ": ") &&
			 (headers[nh] = strdup(l + 7)))
			nh++;
	}
	if (cfg.url &&
	    (strncmp(cfg.url, "http://", 7) == 0 || strncmp(cfg.url, "https://", 8) == 0)) {
		cfg.headers = (const char *const *)headers;
		tracer_start(out, sink, &cfg, traceparent);
	}
	free_headers(headers, nh);
	explicit_bzero(copy, strlen(text));
	free(copy);
}

const char *sbx__tracer_text(const struct sbx__tracer *t)
{
	return t ? t->text : NULL;
}

void sbx__tracer_free(struct sbx__tracer *t)
{
	if (!t)
		return;
	t->sink->close(t->exp, SBX_TRACE_CLOSE_MS);
	for (int i = 0; i < t->nredact; i++)
		sbx__redact_unregister(t->redact_ids[i]);
	if (t->text)
		explicit_bzero(t->text, strlen(t->text));
	free(t->text);
	free(t);
}

uint64_t sbx__tracer_dropped(const struct sbx__tracer *t)
{
	return t ? t->sink->dropped(t->exp) : 0;
}

/* ===== Spans ===== */

void sbx__span_begin(struct sbx__tracer *t,
		     struct sbx__span *sp,
		     const char *name,
		     const struct sbx__span *parent,
		     const char *traceparent)
{
	int sampled = 1;

	memset(sp, 0, sizeof(*sp));
	sp->name = name;
	sp->start_ns = sbx__record_now_ns();
	sbx__record_random_hex(sp->span_id, 8);
	if (!t)
		return;
	if (sbx__traceparent_parse(traceparent, sp->trace_id, sp->parent_id, &sampled)) {
		/* The caller's parent for this operation. */
	} else if (parent && parent->trace_id[0]) {
		memcpy(sp->trace_id, parent->trace_id, sizeof(sp->trace_id));
		memcpy(sp->parent_id, parent->span_id, sizeof(sp->parent_id));
		sampled = parent->t != NULL;
	} else if (t->trace_id[0]) {
		memcpy(sp->trace_id, t->trace_id, sizeof(sp->trace_id));
		memcpy(sp->parent_id, t->span_id, sizeof(sp->parent_id));
		sampled = t->sampled;
	} else {
		sbx__record_random_hex(sp->trace_id, 16);
	}
	if (!sampled)
		return;
	sp->attrs = json_array();
	sp->t = sp->attrs ? t : NULL;
}

static void attr(struct sbx__span *sp, const char *key, json_t *value)
{
	if (!sp->t || !value) {
		json_decref(value);
		return;
	}
	json_array_append_new(sp->attrs, json_pack("{s:s,s:o}", "key", key, "value", value));
}

static json_t *string_value(const char *v)
{
	json_t *s = json_string(v ? v : "");

	return json_pack("{s:o}", "stringValue", s ? s : json_string("<not UTF-8>"));
}

void sbx__span_str(struct sbx__span *sp, const char *key, const char *value)
{
	if (sp->t)
		attr(sp, key, string_value(value));
}

void sbx__span_int(struct sbx__span *sp, const char *key, int64_t value)
{
	char num[24];

	if (!sp->t)
		return;
	snprintf(num, sizeof(num), "%lld", (long long)value);
	attr(sp, key, json_pack("{s:s}", "intValue", num));
}

void sbx__span_bool(struct sbx__span *sp, const char *key, int value)
{
	if (sp->t)
		attr(sp, key, json_pack("{s:b}", "boolValue", value));
}

void sbx__span_strv(struct sbx__span *sp, const char *key, const char *const *v)
{
	json_t *values;
	size_t total = 0;

	if (!sp->t)
		return;
	values = json_array();
	for (size_t i = 0; values && v && v[i]; i++) {
		size_t n = strlen(v[i]);

		if (n > ARG_MAX_BYTES)
			n = ARG_MAX_BYTES;
		if (total + n > ARGV_MAX_BYTES)
			break;
		total += n;
		/* Redacted whole first, so a cut cannot split a value. */
		json_t *s = sbx__record_string(v[i]);
		if (s && json_string_length(s) > n)
			json_string_setn(s, json_string_value(s), n);
		json_array_append_new(values,
				      json_pack("{s:o}", "stringValue", s ? s : json_string("")));
	}
	attr(sp, key, json_pack("{s:{s:o}}", "arrayValue", "values", values));
}

void sbx__span_end(struct sbx__span *sp, int rc)
{
	char start[24], end[24];
	json_t *span, *status;

	if (!sp->t) {
		json_decref(sp->attrs);
		sp->attrs = NULL;
		return;
	}
	snprintf(start, sizeof(start), "%llu", (unsigned long long)sp->start_ns);
	snprintf(end, sizeof(end), "%llu", (unsigned long long)sbx__record_now_ns());
	if (rc < 0) {
		json_t *msg = json_string(sbx_error_last()->message);

		status = json_pack("{s:i,s:o}", "code", STATUS_ERROR, "message",
				   msg ? msg : json_string("error"));
	} else {
		status = json_pack("{s:i}", "code", STATUS_OK);
	}
	span = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:o,s:o}", "traceId", sp->trace_id, "spanId",
			 sp->span_id, "name", sp->name, "kind", SPAN_KIND_INTERNAL,
			 "startTimeUnixNano", start, "endTimeUnixNano", end, "attributes",
			 sp->attrs, "status", status);
	sp->attrs = NULL;
	if (span && sp->parent_id[0])
		json_object_set_new(span, "parentSpanId", json_string(sp->parent_id));
	/* Closed here, through the one redactor, before the exporter sees it. */
	if (span)
		sbx__record_redact(span);
	sp->t->sink->submit(sp->t->exp, span);
	sp->t = NULL;
}
