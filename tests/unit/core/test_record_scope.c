/*
 * tests/unit/core/test_record_scope.c: records closed through the one
 * redactor (core/record.c for audit events and spans, util/error.c for
 * errors, the output stream for run output), each in the scope of its own
 * sandbox.
 *
 * Two secrets objects stand for two sandboxes' secrets in one process:
 * every record is redacted with the secrets of the scope it is closed in
 * (and the process's own), never with the other sandbox's; the end of a
 * stream is treated the same whether it holds a right or a wrong guess at
 * a value; and a run's output stream redacts with its scope alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <sandboxio.h>

#include "core/record-int.h"
#include "core/secret-int.h"
#include "util/error-int.h"
#include "util/redact-int.h"

#define A_SECRET "ALPHA7TENANT1TOKEN"
#define B_SECRET "BRAVO8TENANT2TOKEN"

struct fx {
	sbx_secrets *a, *b;
	struct sbx__redact_scope sa, sb;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || sbx__redact_count() != 0)
		return -1;
	if (sbx_secrets_new(&f->a) || sbx_secrets_new(&f->b) ||
	    sbx_secrets_add(f->a, "TOKEN", A_SECRET, strlen(A_SECRET)) ||
	    sbx_secrets_add(f->b, "TOKEN", B_SECRET, strlen(B_SECRET)))
		return -1;
	sbx__redact_scope_init(&f->sa);
	sbx__redact_scope_init(&f->sb);
	if (sbx__redact_scope_add(&f->sa, sbx__secrets_redact_set(f->a)) ||
	    sbx__redact_scope_add(&f->sb, sbx__secrets_redact_set(f->b)))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sbx__redact_scope_done(&f->sa);
	sbx__redact_scope_done(&f->sb);
	sbx_secrets_free(f->a);
	sbx_secrets_free(f->b);
	free(f);
	sbx__error_clear();
	return sbx__redact_count() == 0 ? 0 : -1;
}

/* An event with the text in a nested string, closed in scope sc. */
static char *closed_in(struct sbx__redact_scope *sc, const char *text)
{
	struct sbx__redact_scope *prev = sbx__redact_scope_enter(sc);
	json_t *ev = json_pack("{s:s,s:[s]}", "message", text, "argv", text);
	char *out;

	assert_non_null(ev);
	assert_int_equal(sbx__record_redact(ev), 0);
	sbx__redact_scope_leave(prev);
	out = strdup(json_string_value(json_object_get(ev, "message")));
	assert_string_equal(out, json_string_value(json_array_get(json_object_get(ev, "argv"), 0)));
	json_decref(ev);
	return out;
}

static void check_closed(struct sbx__redact_scope *sc, const char *text, const char *want)
{
	char *got = closed_in(sc, text);

	assert_string_equal(got, want);
	free(got);
}

static void test_core_record_scope__events_and_spans(void **state)
{
	struct fx *f = *state;

	check_closed(&f->sa, "a=" A_SECRET " b=" B_SECRET, "a=<redacted> b=" B_SECRET);
	check_closed(&f->sb, "a=" A_SECRET " b=" B_SECRET, "a=" A_SECRET " b=<redacted>");
	/* Closed outside any sandbox's operation: the caller's own text, all redacted. */
	check_closed(NULL, "a=" A_SECRET " b=" B_SECRET, "a=<redacted> b=<redacted>");
}

static void test_core_record_scope__errors(void **state)
{
	struct fx *f = *state;
	struct sbx__redact_scope *prev = sbx__redact_scope_enter(&f->sb);

	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT, "init said: %s %s", A_SECRET, B_SECRET);
	sbx__redact_scope_leave(prev);
	assert_string_equal(sbx_error_last()->message, "init said: " A_SECRET " <redacted>");
}

/* The process's own values (a provider's key, a tracer's header) count in every scope. */
static void test_core_record_scope__process_values_everywhere(void **state)
{
	struct fx *f = *state;
	int id = sbx__redact_register("PROCESS9OWN5KEY", 15);

	assert_true(id > 0);
	check_closed(&f->sa, "k=PROCESS9OWN5KEY", "k=<redacted>");
	check_closed(&f->sb, "k=PROCESS9OWN5KEY", "k=<redacted>");
	check_closed(NULL, "k=PROCESS9OWN5KEY", "k=<redacted>");
	sbx__redact_unregister(id);
}

struct sink {
	char *data;
	size_t len;
};

static int collect(void *arg, const char *data, size_t len)
{
	struct sink *k = arg;

	k->data = realloc(k->data, k->len + len + 1);
	assert_non_null(k->data);
	memcpy(k->data + k->len, data, len);
	k->len += len;
	k->data[k->len] = '\0';
	return 0;
}

/* A run's output in scope sc, fed a byte at a time. */
static char *output_in(struct sbx__redact_scope *sc, const char *text)
{
	struct sbx__redact_stream st = {.scope = sc};
	struct sink k = {0};

	for (size_t i = 0; text[i]; i++)
		assert_int_equal(sbx__redact_stream_feed(&st, text + i, 1, collect, &k), 0);
	assert_int_equal(sbx__redact_stream_flush(&st, collect, &k), 0);
	sbx__redact_stream_done(&st);
	return k.data ? k.data : strdup("");
}

static void check_output(struct sbx__redact_scope *sc, const char *text, const char *want)
{
	char *got = output_in(sc, text);

	assert_string_equal(got, want);
	free(got);
}

static void test_core_record_scope__output(void **state)
{
	struct fx *f = *state;

	check_output(&f->sa, A_SECRET "\n" B_SECRET "\n", "<redacted>\n" B_SECRET "\n");
	check_output(&f->sb, A_SECRET "\n" B_SECRET "\n", A_SECRET "\n<redacted>\n");
	/* The base64 of the other sandbox's value is plain text too. */
	check_output(&f->sb, "QUxQSEE3VEVOQU5UMVRPS0VO\n", "QUxQSEE3VEVOQU5UMVRPS0VO\n");
}

/*
 * Sandbox B prints a known prefix of A's value and a guess at its next
 * byte, at the end of its output and mid-stream: the right guess and a
 * wrong one come back the same, byte for byte as written, in B's scope and
 * in A's own (only a whole value is redacted).
 */
static void test_core_record_scope__no_oracle_for_a_guess(void **state)
{
	struct fx *f = *state;
	struct sbx__redact_scope *scopes[] = {&f->sb, &f->sa, NULL};
	char right[64], wrong[64];

	for (size_t k = 4; k < strlen(A_SECRET); k++) {
		snprintf(right, sizeof(right), "%.*s", (int)k, A_SECRET);
		snprintf(wrong, sizeof(wrong), "%.*s%c", (int)k - 1, A_SECRET,
			 A_SECRET[k - 1] == 'Z' ? 'Y' : 'Z');
		for (size_t s = 0; s < 3; s++) {
			check_output(scopes[s], right, right);
			check_output(scopes[s], wrong, wrong);
			check_closed(scopes[s], right, right);
			check_closed(scopes[s], wrong, wrong);
		}
	}
}

/* A secrets object freed while a sandbox's scope holds it redacts nothing more. */
static void test_core_record_scope__freed_object_stops(void **state)
{
	struct fx *f = *state;

	check_closed(&f->sa, A_SECRET, "<redacted>");
	sbx_secrets_free(f->a);
	f->a = NULL;
	check_closed(&f->sa, A_SECRET, A_SECRET);
	assert_int_equal(sbx__redact_count(), 1);
}

#define T(name) cmocka_unit_test_setup_teardown(test_core_record_scope__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(events_and_spans),	      T(errors),
		T(process_values_everywhere), T(output),
		T(no_oracle_for_a_guess),     T(freed_object_stops),
	};

	return cmocka_run_group_tests_name("records in their sandbox's scope", tests, NULL, NULL);
}
