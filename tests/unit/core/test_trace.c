/*
 * tests/unit/core/test_trace.c: unit tests of spans (core/trace.c) and the
 * OTLP/HTTP JSON exporter (remote/otlp.c), against the local receiver in
 * tests/support/otlp_receiver.c on 127.0.0.1.
 *
 * Covers the environment (off without an endpoint, off when disabled or
 * malformed, the traces endpoint and the generic one with /v1/traces, the
 * service name, headers with percent-encoded values), W3C traceparent
 * parsing, payloads in the OTLP JSON mapping with parent/child links and
 * the caller's parent, status codes, redaction of attributes and status
 * messages (header values included), an unsampled parent exporting nothing,
 * and export that never holds up its caller: a collector that is down,
 * slow or failing, and a full queue, each counted as dropped spans, with
 * the shutdown bounded; and the settings text a tracer hands to sbx-egress.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/trace-int.h"
#include "remote/otlp-int.h"
#include "support/otlp_receiver.h"
#include "util/error-int.h"
#include "util/redact-int.h"

#define TP_TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define TP_SPAN "00f067aa0ba902b7"
#define TRACEPARENT "00-" TP_TRACE "-" TP_SPAN "-01"

static const char *const vars[] = {
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_SERVICE_NAME",
	"OTEL_SDK_DISABLED",
	"OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
};

static int clean_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	sbx__error_clear();
	return sbx__redact_count() == 0 ? 0 : -1;
}

/* Hang guard of a wait for an event: far above any plausible duration. */
#define WAIT_MS 120000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct sbx__tracer *tracer(const char *traceparent)
{
	struct sbx__tracer *t = NULL;

	sbx__tracer_open(&t, &sbx__otlp_sink, traceparent);
	return t;
}

/* ===== Configuration ===== */

static void test_core_trace__off_unless_an_endpoint_is_set(void **state)
{
	(void)state;
	assert_null(tracer(NULL));
	setenv("OTEL_SERVICE_NAME", "svc", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "a=b", 1);
	assert_null(tracer(NULL));
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "", 1);
	assert_null(tracer(NULL));
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://127.0.0.1:9", 1);
	assert_null(tracer(NULL));
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
	setenv("OTEL_SDK_DISABLED", "TRUE", 1);
	assert_null(tracer(NULL));
	unsetenv("OTEL_SDK_DISABLED");
	setenv("OTEL_TRACES_EXPORTER", "none", 1);
	assert_null(tracer(NULL));
	unsetenv("OTEL_TRACES_EXPORTER");
	struct sbx__tracer *t = tracer(NULL);
	assert_non_null(t);
	sbx__tracer_free(t);
	/* A span of an absent tracer records nothing and costs nothing. */
	struct sbx__span sp;
	sbx__span_begin(NULL, &sp, "x", NULL, TRACEPARENT);
	sbx__span_str(&sp, "k", "v");
	assert_null(sp.t);
	assert_string_equal(sp.trace_id, "");
	assert_int_equal(strlen(sp.span_id), 16);
	sbx__span_end(&sp, 0);
}

static void test_core_trace__traceparent_parsing(void **state)
{
	static const char *const bad[] = {
		"",
		"00-" TP_TRACE "-" TP_SPAN "-0",
		"00-" TP_TRACE "-" TP_SPAN "-01-extra",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-" TP_SPAN "-01",
		"00-00000000000000000000000000000000-" TP_SPAN "-01",
		"00-" TP_TRACE "-0000000000000000-01",
		"ff-" TP_TRACE "-" TP_SPAN "-01",
		"0x-" TP_TRACE "-" TP_SPAN "-01",
		"00_" TP_TRACE "-" TP_SPAN "-01",
		"00-" TP_TRACE "g-" TP_SPAN "-01",
	};
	char tid[33], sid[17];
	int sampled = -1;

	(void)state;
	assert_true(sbx__traceparent_parse(TRACEPARENT, tid, sid, &sampled));
	assert_string_equal(tid, TP_TRACE);
	assert_string_equal(sid, TP_SPAN);
	assert_int_equal(sampled, 1);
	assert_true(sbx__traceparent_parse("00-" TP_TRACE "-" TP_SPAN "-00", tid, sid, &sampled));
	assert_int_equal(sampled, 0);
	/* A later version may carry more fields. */
	assert_true(
		sbx__traceparent_parse("01-" TP_TRACE "-" TP_SPAN "-03-abc", tid, sid, &sampled));
	assert_false(sbx__traceparent_parse(NULL, tid, sid, &sampled));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sbx__traceparent_parse(bad[i], tid, sid, &sampled))
			fail_msg("'%s' was accepted", bad[i]);
}

/* ===== Export ===== */

static json_t *by_name(json_t *spans, const char *name)
{
	for (size_t i = 0; i < json_array_size(spans); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(spans, i), "name")),
			   name) == 0)
			return json_array_get(spans, i);
	fail_msg("no span named %s", name);
	return NULL;
}

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *attr(json_t *span, const char *key)
{
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(span, "attributes"), i,
			   a) if (strcmp(sget(a, "key"), key) == 0) return json_object_get(a,
											   "value");
	fail_msg("span %s has no attribute %s", sget(span, "name"), key);
	return NULL;
}

static void test_core_trace__spans_in_the_otlp_mapping(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 0);
	const char *argv[] = {"sh", "-c", "echo CALLER5ECRET", NULL};
	struct sbx__span root, child, other;
	struct sbx__tracer *t;
	json_t *spans, *s_root, *s_child, *s_other;
	char *bodies, *hdr, *svc;
	int id = sbx__redact_register("CALLER5ECRET", 12);

	(void)state;
	assert_non_null(r);
	assert_true(id > 0);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver_url(r), 1);
	setenv("OTEL_SERVICE_NAME", "sandboxio-unit", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=K3y%3DHeaderValue9 , x-plain = p1,bad", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Plain=p2", 1);
	t = tracer(TRACEPARENT);
	assert_non_null(t);
	sbx__span_begin(t, &root, "sandboxio.sandbox", NULL, NULL);
	sbx__span_begin(t, &child, "sandboxio.run", &root, NULL);
	sbx__span_str(&child, "sandboxio.note", "token CALLER5ECRET and K3y=HeaderValue9");
	sbx__span_int(&child, "process.exit.code", -3);
	sbx__span_bool(&child, "sandboxio.flag", 1);
	sbx__span_strv(&child, "process.command_args", argv);
	sbx__span_end(&child, 0);
	/* An operation with its own caller-given parent. */
	sbx__span_begin(t, &other, "sandboxio.run_code", &root,
			"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "engine said CALLER5ECRET");
	sbx__span_end(&other, SBX_EENGINE);
	sbx__span_end(&root, 0);
	/* All three arrive before the close, whose bound then plays no part. */
	assert_int_equal(otlp_receiver_wait(r, 3, WAIT_MS), 3);
	sbx__tracer_free(t);

	spans = otlp_receiver_spans(r);
	assert_int_equal(json_array_size(spans), 3);
	s_root = by_name(spans, "sandboxio.sandbox");
	s_child = by_name(spans, "sandboxio.run");
	s_other = by_name(spans, "sandboxio.run_code");
	/* The caller's trace, and parent/child links. */
	assert_string_equal(sget(s_root, "traceId"), TP_TRACE);
	assert_string_equal(sget(s_root, "parentSpanId"), TP_SPAN);
	assert_string_equal(sget(s_child, "traceId"), TP_TRACE);
	assert_string_equal(sget(s_child, "parentSpanId"), sget(s_root, "spanId"));
	assert_string_equal(sget(s_other, "traceId"), "0af7651916cd43dd8448eb211c80319c");
	assert_string_equal(sget(s_other, "parentSpanId"), "b7ad6b7169203331");
	/* Attribute types, status. */
	assert_string_equal(sget(attr(s_child, "process.exit.code"), "intValue"), "-3");
	assert_true(json_is_true(json_object_get(attr(s_child, "sandboxio.flag"), "boolValue")));
	assert_int_equal(
		json_array_size(json_object_get(
			json_object_get(attr(s_child, "process.command_args"), "arrayValue"),
			"values")),
		3);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(s_child, "status"), "code")), 1);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(s_other, "status"), "code")), 2);
	assert_string_equal(sget(json_object_get(s_other, "status"), "message"),
			    "engine said <redacted>");
	assert_string_equal(sget(attr(s_child, "sandboxio.note"), "stringValue"),
			    "token <redacted> and <redacted>");
	/* Nothing secret anywhere in what was sent. */
	bodies = otlp_receiver_bodies(r);
	assert_null(strstr(bodies, "CALLER5ECRET"));
	assert_null(strstr(bodies, "HeaderValue9"));
	free(bodies);
	/* The resource and the headers. */
	svc = otlp_receiver_service(r);
	assert_string_equal(svc, "sandboxio-unit");
	free(svc);
	hdr = otlp_receiver_header(r, "x-api-key");
	assert_non_null(hdr);
	assert_string_equal(hdr, "K3y=HeaderValue9");
	free(hdr);
	hdr = otlp_receiver_header(r, "X-Plain");
	assert_string_equal(hdr, "p2");
	free(hdr);
	hdr = otlp_receiver_header(r, "Content-Type");
	assert_string_equal(hdr, "application/json");
	free(hdr);
	json_decref(spans);
	otlp_receiver_stop(r);
	sbx__redact_unregister(id);
}

static void test_core_trace__traces_endpoint_used_as_given(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 0);
	struct sbx__span sp;
	struct sbx__tracer *t;
	char url[128];

	(void)state;
	snprintf(url, sizeof(url), "%s/v1/traces", otlp_receiver_url(r));
	setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url, 1);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/elsewhere", 1);
	t = tracer(NULL);
	sbx__span_begin(t, &sp, "sandboxio.create", NULL, NULL);
	sbx__span_end(&sp, 0);
	assert_int_equal(otlp_receiver_wait(r, 1, WAIT_MS), 1);
	sbx__tracer_free(t);
	otlp_receiver_stop(r);
	/* The generic endpoint, with a trailing slash, gets /v1/traces once. */
	unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	r = otlp_receiver_start(0, 0);
	snprintf(url, sizeof(url), "%s/", otlp_receiver_url(r));
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
	t = tracer(NULL);
	sbx__span_begin(t, &sp, "sandboxio.create", NULL, NULL);
	sbx__span_end(&sp, 0);
	assert_int_equal(otlp_receiver_wait(r, 1, WAIT_MS), 1);
	sbx__tracer_free(t);
	otlp_receiver_stop(r);
}

static void test_core_trace__unsampled_parent_exports_nothing(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 0);
	struct sbx__span a, b;
	struct sbx__tracer *t;

	(void)state;
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver_url(r), 1);
	t = tracer("00-" TP_TRACE "-" TP_SPAN "-00");
	sbx__span_begin(t, &a, "sandboxio.sandbox", NULL, NULL);
	sbx__span_begin(t, &b, "sandboxio.run", &a, NULL);
	assert_null(a.t);
	assert_null(b.t);
	assert_string_equal(b.trace_id, TP_TRACE);
	sbx__span_end(&b, 0);
	sbx__span_end(&a, 0);
	sbx__tracer_free(t);
	assert_int_equal(otlp_receiver_requests(r), 0);
	otlp_receiver_stop(r);
}

/* Ends n spans. */
static void end_spans(struct sbx__tracer *t, int n)
{
	for (int i = 0; i < n; i++) {
		struct sbx__span sp;

		sbx__span_begin(t, &sp, "sandboxio.run", NULL, NULL);
		sbx__span_end(&sp, 0);
	}
}

/* Waits (hang guard WAIT_MS) until the tracer counted n dropped spans. */
static uint64_t wait_dropped(struct sbx__tracer *t, uint64_t n)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (sbx__tracer_dropped(t) < n && now_ms() < end)
		usleep(10000);
	return sbx__tracer_dropped(t);
}

/* A collector that holds its answer, with requests that would outlive the test. */
static struct otlp_receiver *held_collector(void)
{
	struct otlp_receiver *r = otlp_receiver_start(1, 0);

	assert_non_null(r);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver_url(r), 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3600000", 1);
	return r;
}

static void test_core_trace__collector_down_counted(void **state)
{
	struct sbx__tracer *t;

	(void)state;
	/* Port 1 on loopback: nothing listens, so connect is refused at once. */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", 1);
	t = tracer(NULL);
	end_spans(t, 5);
	assert_int_equal(wait_dropped(t, 5), 5);
	sbx__tracer_free(t);
}

static void test_core_trace__failing_collector_counted(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 500);
	struct sbx__tracer *t;

	(void)state;
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver_url(r), 1);
	t = tracer(NULL);
	end_spans(t, 3);
	assert_int_equal(wait_dropped(t, 3), 3);
	sbx__tracer_free(t);
	assert_true(otlp_receiver_requests(r) >= 1);
	otlp_receiver_stop(r);
}

/*
 * With a request held by the collector (and a request timeout longer than
 * the test), ending spans and closing the tracer both return: had either
 * waited for the collector, it would have waited for the release that only
 * comes after it (or for the receiver's hang guard, which fails the test).
 */
static void test_core_trace__slow_collector_never_holds_up(void **state)
{
	struct otlp_receiver *r = held_collector();
	struct sbx__tracer *t;
	uint64_t t0;

	(void)state;
	t = tracer(NULL);
	end_spans(t, 20);
	/* The first batch is now in flight and held. */
	assert_int_equal(otlp_receiver_wait_held(r, 1), 1);
	end_spans(t, 20);
	t0 = now_ms();
	sbx__tracer_free(t);
	/* The close tried for its whole bound (a lower bound: any machine meets it)... */
	assert_true(now_ms() - t0 >= SBX_TRACE_CLOSE_MS);
	/* ...and returned with the request still held: it never waited for the collector. */
	assert_int_equal(otlp_receiver_held(r), 1);
	assert_false(otlp_receiver_held_too_long(r));
	otlp_receiver_stop(r);
}

static void test_core_trace__full_queue_drops_and_counts(void **state)
{
	struct otlp_receiver *r = held_collector();
	struct sbx__tracer *t;
	const int n = SBX_OTLP_QUEUE_MAX + SBX_OTLP_BATCH_MAX + 500;

	(void)state;
	t = tracer(NULL);
	end_spans(t, 1);
	/* The exporter is stuck in that request until the release below. */
	assert_int_equal(otlp_receiver_wait_held(r, 1), 1);
	end_spans(t, n);
	/* What did not fit in the queue (the one span in flight is out of it). */
	assert_int_equal(sbx__tracer_dropped(t), (uint64_t)(n - SBX_OTLP_QUEUE_MAX));
	assert_false(otlp_receiver_held_too_long(r));
	otlp_receiver_release(r);
	sbx__tracer_free(t);
	otlp_receiver_stop(r);
}

/*
 * The settings a tracer hands to sbx-egress: the same URL, service name and
 * headers (a credential among them, still redacted in the child tracer's
 * spans), with the parent given there; none when off or unwritable.
 */
static void test_core_trace__settings_text_for_a_child(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 0);
	struct sbx__tracer *t, *child = NULL;
	struct sbx__span sp;
	json_t *spans;
	char *hdr, *svc, *bodies, *copy;

	(void)state;
	assert_null(sbx__tracer_text(NULL));
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver_url(r), 1);
	setenv("OTEL_SERVICE_NAME", "sandboxio-child", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=Ch1ldHeaderValue", 1);
	t = tracer(NULL);
	assert_non_null(sbx__tracer_text(t));
	copy = strdup(sbx__tracer_text(t));
	sbx__tracer_free(t); /* the child's tracer stands alone */
	clean_env(NULL);
	sbx__tracer_open_text(&child, &sbx__otlp_sink, copy, TRACEPARENT);
	free(copy);
	assert_non_null(child);
	sbx__span_begin(child, &sp, "sandboxio.egress.connection", NULL, NULL);
	sbx__span_str(&sp, "sandboxio.note", "sent Ch1ldHeaderValue");
	sbx__span_end(&sp, 0);
	assert_int_equal(otlp_receiver_wait(r, 1, WAIT_MS), 1);
	sbx__tracer_free(child);
	spans = otlp_receiver_spans(r);
	assert_string_equal(sget(json_array_get(spans, 0), "traceId"), TP_TRACE);
	assert_string_equal(sget(json_array_get(spans, 0), "parentSpanId"), TP_SPAN);
	json_decref(spans);
	svc = otlp_receiver_service(r);
	assert_string_equal(svc, "sandboxio-child");
	free(svc);
	hdr = otlp_receiver_header(r, "x-api-key");
	assert_string_equal(hdr, "Ch1ldHeaderValue");
	free(hdr);
	bodies = otlp_receiver_bodies(r);
	assert_null(strstr(bodies, "Ch1ldHeaderValue"));
	free(bodies);
	otlp_receiver_stop(r);
	/* A line break in a setting: no text (it could not be read back). */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
	setenv("OTEL_SERVICE_NAME", "two\nlines", 1);
	t = tracer(NULL);
	assert_non_null(t);
	assert_null(sbx__tracer_text(t));
	sbx__tracer_free(t);
	/* Text that names no http(s) URL: no tracer. */
	sbx__tracer_open_text(&child, &sbx__otlp_sink, "url ftp://x\nservice s\n", TRACEPARENT);
	assert_null(child);
	sbx__tracer_open_text(&child, &sbx__otlp_sink, "service s\n", TRACEPARENT);
	assert_null(child);
}

#define T(name) cmocka_unit_test_setup_teardown(test_core_trace__##name, clean_env, clean_env)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(off_unless_an_endpoint_is_set),    T(traceparent_parsing),
		T(spans_in_the_otlp_mapping),	     T(traces_endpoint_used_as_given),
		T(unsampled_parent_exports_nothing), T(collector_down_counted),
		T(failing_collector_counted),	     T(slow_collector_never_holds_up),
		T(full_queue_drops_and_counts),	     T(settings_text_for_a_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
