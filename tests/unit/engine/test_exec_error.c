/*
 * tests/unit/engine/test_exec_error.c: what a run over docker exec
 * (engine/exec.c) says when the sandbox's init breaks the run protocol or
 * ends without an exit report, against a scripted Engine
 * (tests/support/fake_engine.c). The message quotes the init's stderr,
 * which the sandbox can write: a secret in it is redacted (one outside
 * ASCII too), and no control byte of it (an escape sequence, a line of its
 * own) reaches the caller's message, which the CLI prints on a terminal and
 * the audit keeps. And a detached exec's start, which dockerd answers with
 * an empty body and Podman with a newline: both start it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/docker-int.h"
#include "support/engine_stream.h"
#include "support/fake_engine.h"
#include "util/error-int.h"
#include "util/frame.h"
#include "util/redact-int.h"

/* A secret outside ASCII: quoting its bytes first would hide it. */
#define SECRET "p\xc3\xa4ss-w0rd-4711"
/* What the sandbox writes on the init's stderr: a terminal title, a screen
 * clear, a forged line of the CLI's and the secret. */
#define HOSTILE                                                                                    \
	"init says\x1b]0;owned\x07\x1b[2J\r\nsandboxio: all good\\ " SECRET " \x7f"                \
	"end"

static int sink(void *arg, int stream, const void *p, size_t n)
{
	(void)arg;
	(void)stream;
	(void)p;
	(void)n;
	return 0;
}

/* Runs "prog" over an exec whose stream is answer; returns the code. */
static int exec_with(const struct engine_bytes *answer, int *kills)
{
	static const char *const argv[] = {"prog", NULL};
	struct sbx__docker d = {0};
	struct sbx__docker_box b = {0};
	sbx_result res = {0};
	struct fake_engine *fe;
	struct sbx__run_req req = {
		.argv = argv,
		.workdir = "/",
		.timeout_ms = 10000,
		.sink = sink,
	};
	const struct fake_route routes[] = {
		{"POST", "/containers/fakebox/exec", 201, "{\"Id\":\"e1\"}"},
		{"POST", "/exec/e1/start", 101, "", answer->b, answer->len},
		{"GET", "/exec/e1/json", 200, "{\"ExitCode\":3}"},
		{"POST", "/containers/fakebox/kill", 204, ""},
	};
	int rc;

	fe = fake_engine_start(routes, 4);
	assert_non_null(fe);
	assert_int_equal(sbx__http_init(&d.http, fake_engine_socket(fe), 5000), 0);
	b.id = "fakebox";
	sbx__error_clear();
	rc = sbx__docker_exec(&d, &b, &req, &res);
	*kills = fake_engine_count(fe, "POST", "/containers/fakebox/kill");
	sbx__http_done(&d.http);
	fake_engine_stop(fe);
	return rc;
}

/* The message holds the init's words, quoted, and nothing it should not. */
static void assert_quoted(const char *m)
{
	for (const unsigned char *p = (const unsigned char *)m; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			fail_msg("byte 0x%02x at %zu of the message: %s", *p,
				 (size_t)(p - (const unsigned char *)m), m);
	assert_null(strstr(m, "w0rd-4711"));
	assert_non_null(strstr(m, "init says\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0asandboxio: "
				  "all good\\x5c " SBX_REDACTED " \\x7fend"));
}

static void test_exec_error__protocol_error_quotes_the_init(void **state)
{
	struct engine_bytes answer = {0};
	int id, kills = 0;

	(void)state;
	id = sbx__redact_register(SECRET, strlen(SECRET));
	assert_true(id > 0);
	engine_bytes_raw(&answer, ENGINE_UPGRADE, strlen(ENGINE_UPGRADE));
	engine_bytes_mux(&answer, 2, HOSTILE, strlen(HOSTILE));
	engine_bytes_mux(&answer, 1, "not a frame", 11);
	assert_int_equal(exec_with(&answer, &kills), SBX_EENGINE);
	assert_int_equal(kills, 1);
	assert_non_null(strstr(sbx_error_last()->message,
			       "broke the run protocol (a frame without the magic byte)"));
	assert_quoted(sbx_error_last()->message);
	sbx__redact_unregister(id);
	free(answer.b);
}

static void test_exec_error__no_exit_report_quotes_the_init(void **state)
{
	struct engine_bytes answer = {0};
	int id, kills = 0;

	(void)state;
	id = sbx__redact_register(SECRET, strlen(SECRET));
	assert_true(id > 0);
	engine_bytes_raw(&answer, ENGINE_UPGRADE, strlen(ENGINE_UPGRADE));
	engine_bytes_mux(&answer, 2, HOSTILE, strlen(HOSTILE));
	assert_int_equal(exec_with(&answer, &kills), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "ended without an exit report"));
	assert_quoted(sbx_error_last()->message);
	sbx__redact_unregister(id);
	free(answer.b);
}

/* A detached exec (code contexts): its start is answered with an empty
 * body by dockerd and with a newline by Podman; both are a start. */
static void test_exec_error__detached_start_answers(void **state)
{
	static const char *const argv[] = {"prog", NULL};
	static const char *const bodies[] = {"", "\n"};

	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct sbx__docker d = {0};
		struct sbx__docker_box b = {.id = "fakebox"};
		struct sbx__run_req req = {.argv = argv, .workdir = "/", .timeout_ms = 10000};
		const struct fake_route routes[] = {
			{"POST", "/containers/fakebox/exec", 201, "{\"Id\":\"e1\"}"},
			{"POST", "/exec/e1/start", 200, bodies[i]},
		};
		struct fake_engine *fe = fake_engine_start(routes, 2);

		assert_non_null(fe);
		assert_int_equal(sbx__http_init(&d.http, fake_engine_socket(fe), 5000), 0);
		assert_int_equal(sbx__docker_spawn(&d, &b, &req), 0);
		assert_int_equal(fake_engine_count(fe, "POST", "/exec/e1/start"), 1);
		sbx__http_done(&d.http);
		fake_engine_stop(fe);
	}
}

static int keep_stdout(void *arg, int stream, const void *p, size_t n)
{
	struct engine_bytes *out = arg;

	if (stream == SBX_STREAM_STDOUT)
		engine_bytes_raw(out, p, n);
	return 0;
}

/*
 * The report in, the host ends the program's stdin with a half-close,
 * while its caller's stdin still goes on, and the run ends with the
 * report's status: the init waits for that end before it exits
 * (docs/protocol.md). The report comes with the upgrade's answer here, in
 * the same read, and the Engine holds the stream open until the client's
 * end, noting which end it was.
 */
static void test_exec_error__report_ends_stdin(void **state)
{
	static const char *const argv[] = {"prog", NULL};
	struct sbx__frame_exit ex = {.status = SBX_FRAME_ST_EXITED, .code = 4};
	unsigned char hdr[SBX_FRAME_HDR], pay[SBX_FRAME_EXIT_LEN], frame[SBX_FRAME_HDR + 3];
	struct engine_bytes answer = {0}, out = {0};
	struct sbx__docker d = {0};
	struct sbx__docker_box b = {.id = "fakebox"};
	sbx_result res = {0};
	struct fake_engine *fe;
	int p[2];

	(void)state;
	engine_bytes_raw(&answer, ENGINE_UPGRADE, strlen(ENGINE_UPGRADE));
	sbx__frame_header(frame, SBX_FRAME_STDOUT, 3);
	memcpy(frame + SBX_FRAME_HDR, "hi\n", 3);
	engine_bytes_mux(&answer, 1, frame, sizeof(frame));
	sbx__frame_header(hdr, SBX_FRAME_EXIT, SBX_FRAME_EXIT_LEN);
	sbx__frame_exit_encode(pay, &ex);
	engine_bytes_mux(&answer, 1, hdr, sizeof(hdr));
	engine_bytes_mux(&answer, 1, pay, sizeof(pay));
	{
		const struct fake_route routes[] = {
			{"POST", "/containers/fakebox/exec", 201, "{\"Id\":\"e1\"}"},
			{"POST", "/exec/e1/start", 101, "", answer.b, answer.len, 1},
			{"POST", "/containers/fakebox/kill", 204, ""},
		};
		struct sbx__run_req req = {
			.argv = argv,
			.workdir = "/",
			.timeout_ms = 1000,
			.sink = keep_stdout,
			.sink_arg = &out,
		};

		assert_int_equal(pipe(p), 0);
		assert_int_equal(write(p[1], "abc", 3), 3); /* and the write end stays open */
		req.stdin_fd = p[0];
		fe = fake_engine_start(routes, 3);
		assert_non_null(fe);
		assert_int_equal(sbx__http_init(&d.http, fake_engine_socket(fe), 5000), 0);
		assert_int_equal(sbx__docker_exec(&d, &b, &req, &res), 0);
		assert_int_equal(res.status, SBX_RUN_EXITED);
		assert_int_equal(res.exit_code, 4);
		assert_int_equal(out.len, 3);
		assert_memory_equal(out.b, "hi\n", 3);
		assert_int_equal(fake_engine_count(fe, "EOF", "half"), 1);
		assert_int_equal(fake_engine_count(fe, "POST", "/containers/fakebox/kill"), 0);
		sbx__http_done(&d.http);
		fake_engine_stop(fe);
	}
	close(p[0]);
	close(p[1]);
	free(answer.b);
	free(out.b);
}

/* The quoting itself: bounded, never a cut escape, stops at a NUL. */
static void test_exec_error__quote_bounds(void **state)
{
	char dst[8];

	(void)state;
	assert_int_equal(sbx__error_quote(dst, sizeof(dst), "ab\x1b", 3), 6);
	assert_string_equal(dst, "ab\\x1b");
	assert_int_equal(sbx__error_quote(dst, sizeof(dst), "abcd\x1b", 5), 4);
	assert_string_equal(dst, "abcd");
	assert_int_equal(sbx__error_quote(dst, sizeof(dst), "a\0\x1b", 3), 1);
	assert_string_equal(dst, "a");
	assert_int_equal(sbx__error_quote(dst, sizeof(dst), NULL, 0), 0);
	assert_string_equal(dst, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_error__protocol_error_quotes_the_init),
		cmocka_unit_test(test_exec_error__no_exit_report_quotes_the_init),
		cmocka_unit_test(test_exec_error__quote_bounds),
		cmocka_unit_test(test_exec_error__detached_start_answers),
		cmocka_unit_test(test_exec_error__report_ends_stdin),
	};

	return cmocka_run_group_tests_name("exec errors", tests, NULL, NULL);
}
