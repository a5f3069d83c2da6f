/*
 * tests/unit/engine/test_http_hijack.c: the hijacked (upgraded) connection
 * of engine/http.c, as exec start and attach use it, against a scripted
 * Engine (tests/support/fake_engine.c) that answers with the status line,
 * the headers and the first stream bytes in one write, as dockerd does when
 * the program wrote a lot before the host read: every byte that came with
 * the headers must reach the stream intact, however many there are, and
 * nothing the peer sends may write past a buffer (run these under
 * make SAN=address,undefined as well).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/chan-int.h"
#include "engine/docker-int.h"
#include "engine/http-int.h"
#include "support/engine_stream.h"
#include "support/fake_engine.h"
#include "util/error-int.h"

/* Bytes that tell every offset apart: a lost or moved byte shows. */
static void pattern(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131u + seed + (i >> 8)) & 0xff);
}

/* Reads fd to its end after the early bytes; returns all the stream's bytes. */
static struct engine_bytes whole_stream(const struct sbx__hijack *hj)
{
	struct engine_bytes s = {0};
	unsigned char buf[4096];
	ssize_t r;

	engine_bytes_raw(&s, hj->pre, hj->pre_len);
	while ((r = recv(hj->fd, buf, sizeof(buf), 0)) > 0)
		engine_bytes_raw(&s, buf, (size_t)r);
	return s;
}

static void early_bytes_arrive_intact(size_t n)
{
	unsigned char *payload = malloc(n);
	struct engine_bytes answer = {0}, got;
	struct sbx__hijack hj = {.fd = -1};
	struct sbx__http h;
	struct fake_engine *fe;

	assert_non_null(payload);
	pattern(payload, n, 7);
	engine_bytes_raw(&answer, ENGINE_UPGRADE, strlen(ENGINE_UPGRADE));
	engine_bytes_raw(&answer, payload, n);
	{
		const struct fake_route routes[] = {
			{"POST", "/exec/e1/start", 101, "", answer.b, answer.len},
		};

		fe = fake_engine_start(routes, 1);
		assert_non_null(fe);
		assert_int_equal(sbx__http_init(&h, fake_engine_socket(fe), 5000), 0);
		assert_int_equal(sbx__http_hijack(&h, "/exec/e1/start", "{}", 0, &hj), 0);
		got = whole_stream(&hj);
		assert_int_equal(got.len, n);
		assert_memory_equal(got.b, payload, n);
		sbx__hijack_close(&hj);
		sbx__http_done(&h);
		fake_engine_stop(fe);
	}
	free(got.b);
	free(answer.b);
	free(payload);
}

/* 8,000 bytes with the headers: more than the old 4 KiB of early bytes. */
static void test_http_hijack__early_bytes_past_4k(void **state)
{
	(void)state;
	early_bytes_arrive_intact(8000);
}

/* As much as the header read can take in one go, and a few sizes around it. */
static void test_http_hijack__early_bytes_at_the_bounds(void **state)
{
	static const size_t sizes[] = {1, 4095, 4096, 4097, 8100, 8191, 20000, 70000};

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		early_bytes_arrive_intact(sizes[i]);
}

/* ===== A whole exec run whose output came with the 101 ===== */

static int sink(void *arg, int stream, const void *p, size_t n)
{
	struct engine_bytes *out = arg;

	if (stream == SBX_STREAM_STDOUT)
		engine_bytes_raw(out, p, n);
	return 0;
}

static void test_http_hijack__exec_output_with_the_upgrade(void **state)
{
	static const char *const argv[] = {"prog", NULL};
	static unsigned char out_bytes[9000];
	unsigned char fr[SBX_FRAME_HDR + sizeof(out_bytes)], ex[SBX_FRAME_HDR + SBX_FRAME_EXIT_LEN];
	struct sbx__frame_exit e = {.status = SBX_FRAME_ST_EXITED, .code = 5};
	struct engine_bytes answer = {0}, out = {0};
	struct sbx__docker d = {0};
	struct sbx__docker_box b = {0};
	sbx_result res = {0};
	struct fake_engine *fe;
	struct sbx__run_req req = {
		.argv = argv,
		.workdir = "/",
		.timeout_ms = 10000,
		.sink = sink,
		.sink_arg = &out,
	};

	(void)state;
	pattern(out_bytes, sizeof(out_bytes), 3);
	sbx__frame_header(fr, SBX_FRAME_STDOUT, sizeof(out_bytes));
	memcpy(fr + SBX_FRAME_HDR, out_bytes, sizeof(out_bytes));
	sbx__frame_header(ex, SBX_FRAME_EXIT, SBX_FRAME_EXIT_LEN);
	sbx__frame_exit_encode(ex + SBX_FRAME_HDR, &e);
	engine_bytes_raw(&answer, ENGINE_UPGRADE, strlen(ENGINE_UPGRADE));
	engine_bytes_mux(&answer, 1, fr, sizeof(fr));
	engine_bytes_mux(&answer, 1, ex, sizeof(ex));
	{
		const struct fake_route routes[] = {
			{"POST", "/containers/fakebox/exec", 201, "{\"Id\":\"e1\"}"},
			{"POST", "/exec/e1/start", 101, "", answer.b, answer.len},
		};

		fe = fake_engine_start(routes, 2);
		assert_non_null(fe);
		assert_int_equal(sbx__http_init(&d.http, fake_engine_socket(fe), 5000), 0);
		b.id = "fakebox";
		sbx__error_clear();
		assert_int_equal(sbx__docker_exec(&d, &b, &req, &res), 0);
		assert_int_equal(fake_engine_count(fe, "POST", "/exec/e1/start"), 1);
		sbx__http_done(&d.http);
		fake_engine_stop(fe);
	}
	assert_int_equal(res.exit_code, 5);
	assert_int_equal(out.len, sizeof(out_bytes));
	assert_memory_equal(out.b, out_bytes, sizeof(out_bytes));
	free(out.b);
	free(answer.b);
}

/* ===== The attach stream: the init's first bytes came with the 101 ===== */

static void test_http_hijack__attach_early_bytes(void **state)
{
	struct sbx__chan_hello hi = {SBX_CHAN_VERSION, SBX_CHAN_RUNS_MAX, SBX_CHAN_WINDOW};
	unsigned char hp[SBX_FRAME_HELLO_LEN], fr[SBX_FRAME_HDR + SBX_FRAME_HELLO_LEN];
	static unsigned char diag[7000];
	struct engine_bytes answer = {0};
	struct sbx__docker d = {0};
	struct sbx__chan *c = NULL;
	struct fake_engine *fe;

	(void)state;
	/* Diagnostics first (past the old bound), then the HELLO: it must be seen. */
	memset(diag, 'd', sizeof(diag));
	sbx__chan_hello_encode(hp, &hi);
	sbx__chan_header(fr, SBX_FRAME_HELLO, 0, sizeof(hp));
	memcpy(fr + SBX_FRAME_HDR, hp, sizeof(hp));
	engine_bytes_raw(&answer, ENGINE_UPGRADE, strlen(ENGINE_UPGRADE));
	engine_bytes_mux(&answer, 2, diag, sizeof(diag));
	engine_bytes_mux(&answer, 1, fr, sizeof(fr));
	{
		const struct fake_route routes[] = {
			{"POST", "/containers/fakebox/attach", 101, "", answer.b, answer.len},
		};

		fe = fake_engine_start(routes, 1);
		assert_non_null(fe);
		assert_int_equal(sbx__http_init(&d.http, fake_engine_socket(fe), 5000), 0);
		assert_int_equal(sbx__chan_attach(&d, "fakebox", &c), 0);
		assert_int_equal(sbx__chan_ready(c, sbx__mono_ms() + 5000), 0);
		sbx__chan_free(c);
		sbx__http_done(&d.http);
		fake_engine_stop(fe);
	}
	free(answer.b);
}

/* A header section that never ends is refused, not buffered without bound. */
static void test_http_hijack__endless_headers_refused(void **state)
{
	struct engine_bytes answer = {0};
	struct sbx__hijack hj = {.fd = -1};
	struct sbx__http h;
	struct fake_engine *fe;

	(void)state;
	engine_bytes_raw(&answer, "HTTP/1.1 101 UPGRADED\r\n", 23);
	for (int i = 0; i < 2000; i++)
		engine_bytes_raw(&answer, "X-Pad: aaaaaaaaaaaaaaaaaaaa\r\n", 29);
	{
		const struct fake_route routes[] = {
			{"POST", "/exec/e1/start", 101, "", answer.b, answer.len},
		};

		fe = fake_engine_start(routes, 1);
		assert_non_null(fe);
		assert_int_equal(sbx__http_init(&h, fake_engine_socket(fe), 5000), 0);
		assert_int_equal(sbx__http_hijack(&h, "/exec/e1/start", "{}", 0, &hj), SBX_EENGINE);
		assert_null(hj.curl);
		assert_non_null(strstr(sbx_error_last()->message, "response headers are longer"));
		sbx__http_done(&h);
		fake_engine_stop(fe);
	}
	free(answer.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_hijack__early_bytes_past_4k),
		cmocka_unit_test(test_http_hijack__early_bytes_at_the_bounds),
		cmocka_unit_test(test_http_hijack__exec_output_with_the_upgrade),
		cmocka_unit_test(test_http_hijack__attach_early_bytes),
		cmocka_unit_test(test_http_hijack__endless_headers_refused),
	};

	return cmocka_run_group_tests_name("engine hijacked connection", tests, NULL, NULL);
}
