/*
 * tests/contract/test_docker_trace.c: spans of real sandbox work, exported
 * over OTLP/HTTP JSON to the local receiver (tests/support/otlp_receiver.c,
 * 127.0.0.1 only).
 *
 * One sandbox's life gives a sandboxio.sandbox span (child of the
 * backend's traceparent) with children for create, run, run_code (under
 * the run's own traceparent), write_file, read_file and destroy; every
 * payload follows the OTLP JSON mapping; the audit events of a run name
 * its span; a secret the run used is in no payload. A collector that hangs
 * holds up neither runs nor the backend's close, and what it did not take
 * is counted.
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

#include "support/engine.h"
#include "support/otlp_receiver.h"

#define TP_TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define TP_SPAN "00f067aa0ba902b7"
#define RUN_TRACE "0af7651916cd43dd8448eb211c80319c"
#define RUN_PARENT "b7ad6b7169203331"
#define SECRET "Tr4ce-S3cret/Value+77"

/* Hang guard of a wait for an event: far above any plausible duration. */
#define WAIT_MS 120000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int setup(void **state)
{
	(void)state;
	return t_engine_ready() ? 0 : -1;
}

static sbx_backend *open_traced(struct otlp_receiver *r, sbx_audit_cb cb, void *payload)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver_url(r), 1);
	setenv("OTEL_SERVICE_NAME", "sandboxio-contract", 1);
	o.traceparent = "00-" TP_TRACE "-" TP_SPAN "-01";
	o.audit_cb = cb;
	o.audit_payload = payload;
	o.no_reap_at_open = 1;
	if (sbx_backend_open(&b, "docker", &o) != 0)
		fail_msg("open: %s", sbx_error_last()->message);
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_SERVICE_NAME");
	return b;
}

static json_t *named(json_t *spans, const char *name)
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
	const char *v = json_string_value(json_object_get(o, k));

	if (!v)
		fail_msg("no string %s", k);
	return v;
}

static const char *attr_str(json_t *span, const char *key)
{
	json_t *a;
	size_t i;

	json_array_foreach(
		json_object_get(span, "attributes"), i,
		a) if (strcmp(sget(a, "key"), key) ==
		       0) return json_string_value(json_object_get(json_object_get(a, "value"),
								   "stringValue"));
	fail_msg("span %s has no attribute %s", sget(span, "name"), key);
	return NULL;
}

struct seen {
	char run_end[4096];
};

static int on_event(const char *line, size_t len, void *payload)
{
	struct seen *s = payload;

	if (strstr(line, "\"event\":\"run.end\"") && strstr(line, "\"kind\":\"run\"") &&
	    len < sizeof(s->run_end)) {
		memcpy(s->run_end, line, len);
		s->run_end[len] = '\0';
	}
	return 0;
}

static void test_engine_trace__spans_of_a_sandbox(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 0);
	struct seen seen = {{0}};
	sbx_backend *b = open_traced(r, on_event, &seen);
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"sh", "-c", "printf %s \"$TOKEN\"", NULL};
	sbx_policy *p = t_policy();
	sbx_secrets *sec = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *res = NULL;
	json_t *spans, *box, *run, *ev;
	void *data = NULL;
	size_t len = 0;
	char id[128], *bodies;

	(void)state;
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "TOKEN", SECRET, strlen(SECRET)), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	snprintf(id, sizeof(id), "%s", sbx_sandbox_id(s));
	o.secrets = sec;
	assert_int_equal(sbx_sandbox_run(&res, s, argv, &o), 0);
	sbx_result_free(res);
	o.secrets = NULL;
	o.traceparent = "00-" RUN_TRACE "-" RUN_PARENT "-01";
	assert_int_equal(sbx_sandbox_run_code(&res, s, "python", "print(2)\n", 9, &o), 0);
	sbx_result_free(res);
	assert_int_equal(sbx_sandbox_write_file(s, "/workspace/t.txt", "abc", 3, 0600), 0);
	assert_int_equal(sbx_sandbox_read_file(&data, &len, s, "/workspace/t.txt", 0), 0);
	sbx_free(data);
	assert_int_equal(sbx_sandbox_close(s), 0);
	/* All seven arrive before the backend closes, whose bound then plays no part. */
	assert_int_equal(otlp_receiver_wait(r, 7, WAIT_MS), 7);
	sbx_backend_free(b);

	spans = otlp_receiver_spans(r); /* fails the test on any mapping violation */
	assert_int_equal(json_array_size(spans), 7);
	box = named(spans, "sandboxio.sandbox");
	assert_string_equal(sget(box, "traceId"), TP_TRACE);
	assert_string_equal(sget(box, "parentSpanId"), TP_SPAN);
	assert_string_equal(attr_str(box, "sandboxio.sandbox.id"), id);
	assert_string_equal(attr_str(box, "sandboxio.tenant"), t_tenant());
	static const char *const children[] = {"sandboxio.create", "sandboxio.run",
					       "sandboxio.write_file", "sandboxio.read_file",
					       "sandboxio.destroy"};
	for (size_t i = 0; i < sizeof(children) / sizeof(children[0]); i++) {
		json_t *c = named(spans, children[i]);

		assert_string_equal(sget(c, "traceId"), TP_TRACE);
		assert_string_equal(sget(c, "parentSpanId"), sget(box, "spanId"));
		assert_string_equal(attr_str(c, "sandboxio.sandbox.id"), id);
	}
	assert_string_equal(sget(named(spans, "sandboxio.run_code"), "traceId"), RUN_TRACE);
	assert_string_equal(sget(named(spans, "sandboxio.run_code"), "parentSpanId"), RUN_PARENT);
	assert_string_equal(attr_str(named(spans, "sandboxio.destroy"), "sandboxio.destroy.reason"),
			    "closed");
	/* The run's audit event names the run's span. */
	run = named(spans, "sandboxio.run");
	ev = json_loads(seen.run_end, 0, NULL);
	assert_non_null(ev);
	assert_string_equal(sget(ev, "span_id"), sget(run, "spanId"));
	assert_string_equal(sget(ev, "run_id"), sget(run, "spanId"));
	assert_string_equal(sget(ev, "trace_id"), TP_TRACE);
	json_decref(ev);
	bodies = otlp_receiver_bodies(r);
	assert_null(strstr(bodies, SECRET));
	free(bodies);
	json_decref(spans);
	sbx_secrets_free(sec);
	sbx_policy_free(p);
	otlp_receiver_stop(r);
}

/*
 * The collector holds every answer until the end of the test, and its
 * requests may last longer than the test: runs and the backend's close
 * both return all the same. Had either waited for the collector, it would
 * have waited for a release that only comes after it (or for the
 * receiver's hang guard, which fails the test).
 */
static void test_engine_trace__hung_collector_holds_nothing_up(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(1, 0);
	sbx_backend *b;
	const char *argv[] = {"true", NULL};
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	sbx_result *res = NULL;

	(void)state;
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3600000", 1);
	b = open_traced(r, NULL, NULL);
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	/* The create span's batch goes out and is held. */
	assert_int_equal(otlp_receiver_wait_held(r, 1), 1);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(sbx_sandbox_run(&res, s, argv, NULL), 0);
		assert_int_equal(res->status, SBX_RUN_EXITED);
		sbx_result_free(res);
	}
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
	/* Still held: nothing above waited for the collector. */
	assert_int_equal(otlp_receiver_held(r), 1);
	assert_false(otlp_receiver_held_too_long(r));
	sbx_policy_free(p);
	otlp_receiver_stop(r);
}

static void test_engine_trace__dropped_spans_counted(void **state)
{
	struct otlp_receiver *r = otlp_receiver_start(0, 503);
	sbx_backend *b = open_traced(r, NULL, NULL);
	const char *argv[] = {"true", NULL};
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	sbx_result *res = NULL;
	uint64_t end;

	(void)state;
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	assert_int_equal(sbx_sandbox_run(&res, s, argv, NULL), 0);
	sbx_result_free(res);
	end = now_ms() + WAIT_MS;
	while (sbx_backend_spans_dropped(b) < 2 && now_ms() < end)
		usleep(20000);
	/* create and run were refused by the collector; the run still succeeded. */
	assert_true(sbx_backend_spans_dropped(b) >= 2);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	sbx_policy_free(p);
	otlp_receiver_stop(r);
}

static void test_engine_trace__off_without_endpoint(void **state)
{
	sbx_backend *b = t_backend();

	(void)state;
	assert_int_equal(sbx_backend_spans_dropped(b), 0);
	assert_int_equal(sbx_backend_spans_dropped(NULL), 0);
	sbx_backend_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_trace__spans_of_a_sandbox),
		cmocka_unit_test(test_engine_trace__hung_collector_holds_nothing_up),
		cmocka_unit_test(test_engine_trace__dropped_spans_counted),
		cmocka_unit_test(test_engine_trace__off_without_endpoint),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] trace", tests, setup, NULL);
}
