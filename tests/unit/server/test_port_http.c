/*
 * tests/unit/server/test_port_http.c: the port proxy's readers of what a
 * server inside a sandbox answers (server/port-http.c): response heads
 * (framing, headers, 1xx, and every refusal: bare LF, folded lines, a bad
 * name or value, Content-Length and Transfer-Encoding together or
 * malformed, a head too long or with too many headers), chunked bodies
 * (whole, a byte at a time, into a small output; and their refusals), and
 * which headers are hop-by-hop (never passed on).
 *
 * The pure file is included: it needs nothing but libc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/port-http.c"

static struct sbxs_http_head hd;
static char err[256];

static long head(const char *s, int head_req)
{
	err[0] = '\0';
	return sbxs_http_head_parse(s, strlen(s), head_req, &hd, err, sizeof(err));
}

static void test_port_http__framings(void **state)
{
	const char *h =
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length:  5 \r\n\r\nhello";

	(void)state;
	assert_int_equal(head(h, 0), (long)(strlen(h) - 5));
	assert_int_equal(hd.status, 200);
	assert_int_equal(hd.framing, SBXS_BODY_LENGTH);
	assert_int_equal(hd.length, 5);
	assert_int_equal(hd.n, 2);
	assert_int_equal(hd.h[1].value_len, 1); /* spaces around a value go */
	assert_int_equal(head(h, 1), (long)(strlen(h) - 5));
	assert_int_equal(hd.framing, SBXS_BODY_NONE); /* the answer to a HEAD */
	head("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", 0);
	assert_int_equal(hd.framing, SBXS_BODY_CHUNKED);
	head("HTTP/1.0 200 OK\r\n\r\n", 0);
	assert_int_equal(hd.framing, SBXS_BODY_CLOSE);
	head("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", 0);
	assert_int_equal(hd.framing, SBXS_BODY_NONE);
	head("HTTP/1.1 304 Not Modified\r\n\r\n", 0);
	assert_int_equal(hd.framing, SBXS_BODY_NONE);
	assert_int_equal(head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", 0), 25);
	assert_int_equal(hd.status, 100);
	assert_int_equal(hd.framing, SBXS_BODY_NONE);
	assert_int_equal(head("HTTP/1.1 200", 0), 0); /* more is needed */
	assert_int_equal(head("HTTP/1.1 200 OK\r\nA: b\r\n", 0), 0);
	head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\n", 0);
	assert_int_equal(hd.length, 3); /* repeated alike: one length */
}

static void test_port_http__head_refusals(void **state)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"HTTP/1.1 200 OK\nA: b\r\n\r\n", "without CR"},
		{"HTTP/1.1 200 OK\r\nA: b\n\r\n\r\n", "without CR"},
		{"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", "folded"},
		{"HTTP/1.1 200 OK\r\nA b: c\r\n\r\n", "token characters"},
		{"HTTP/1.1 200 OK\r\n: c\r\n\r\n", "no name"},
		{"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", "no name"},
		{"HTTP/1.1 200 OK\r\nA: b\x01\r\n\r\n", "control byte"},
		{"HTTP/1.1 200 OK\r\nA: b\x7f\r\n\r\n", "control byte"},
		{"HTTP/2 200 OK\r\n\r\n", "status line"},
		{"HTTP/1.1 600 No\r\n\r\n", "status line"},
		{"HTTP/1.1 20 OK\r\n\r\n", "status line"},
		{"HTTP/1.1 200OK\r\n\r\n", "status line"},
		{"HTTP/1.1 200 O\x02K\r\n\r\n", "control byte"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		 "both Content-Length and Transfer-Encoding"},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		 "Transfer-Encoding"},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
		 "chunked\r\n\r\n",
		 "Transfer-Encoding"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "disagree"},
		{"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\n", "not a length"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456\r\n\r\n", "not a length"},
		{"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", "not a length"},
	};

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		if (head(bad[k].in, 0) != -1 || !strstr(err, bad[k].why))
			fail_msg("case %zu: %s", k, err);
	}
}

static void test_port_http__head_bounds(void **state)
{
	char *big = malloc(SBXS_HEAD_MAX + 64);
	size_t n;

	(void)state;
	assert_non_null(big);
	/* No blank line within the bound. */
	n = (size_t)sprintf(big, "HTTP/1.1 200 OK\r\nA: ");
	memset(big + n, 'x', SBXS_HEAD_MAX);
	big[n + SBXS_HEAD_MAX] = '\0';
	assert_int_equal(head(big, 0), -1);
	assert_non_null(strstr(err, "longer than"));
	/* 101 headers. */
	n = (size_t)sprintf(big, "HTTP/1.1 200 OK\r\n");
	for (int k = 0; k <= SBXS_HEADERS_MAX; k++)
		n += (size_t)sprintf(big + n, "H%d: v\r\n", k);
	sprintf(big + n, "\r\n");
	assert_int_equal(head(big, 0), -1);
	assert_non_null(strstr(err, "more than 100 headers"));
	free(big);
}

/* Decodes in, step bytes at a time, into outputs of outcap; the output
 * (NUL-terminated in out), or -1; *done: the end came. */
static long chunks(const char *in, size_t step, size_t outcap, char *out, int *done)
{
	struct sbxs_chunks d = {0};
	size_t len = strlen(in), off = 0, total = 0;

	err[0] = '\0';
	while (off < len && !sbxs_chunks_done(&d)) {
		size_t n = len - off < step ? len - off : step, got = 0;
		long used = sbxs_chunks_feed(&d, in + off, n, out + total, outcap, &got, err,
					     sizeof(err));

		if (used < 0)
			return -1;
		total += got;
		off += (size_t)used;
	}
	out[total] = '\0';
	*done = sbxs_chunks_done(&d);
	return (long)total;
}

static void test_port_http__chunks(void **state)
{
	const char *body = "5\r\nhello\r\nA;name=value\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nafter";
	char out[64];
	int done;

	(void)state;
	for (size_t step = 1; step <= 60; step += 7)
		for (size_t cap = 1; cap <= 16; cap += 5) {
			assert_int_equal(chunks(body, step, cap, out, &done), 15);
			assert_string_equal(out, "hello0123456789");
			assert_true(done);
		}
	assert_int_equal(chunks("3\r\nabc\r\n", 100, 64, out, &done), 3);
	assert_false(done); /* the last chunk has not come */
}

static void test_port_http__chunk_refusals(void **state)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"5\r\nhelloX\r\n", "not followed by CRLF"},
		{"5\nhello\r\n", "stray byte"},
		{"5\r\r\n", "without CRLF"},
		{"g\r\n", "size in hex"},
		{"\r\n", "size in hex"},
		{"1000000000000000\r\n", "15 digits"},
		{"0\r\nX: y\rZ\r\n\r\n", "CR in the trailer"},
		{"0\r\nX: y\n\r\n", "without CRLF"},
		{"0\r\nX: \x01\r\n\r\n", "malformed"},
		{"5;\x01\r\nhello\r\n", "extension"},
	};
	char out[64];
	int done;

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		if (chunks(bad[k].in, 100, 64, out, &done) != -1 || !strstr(err, bad[k].why))
			fail_msg("case %zu: %s", k, err);
}

static void test_port_http__hop_headers(void **state)
{
	(void)state;
	assert_true(sbxs_http_hop_header("Connection"));
	assert_true(sbxs_http_hop_header("transfer-encoding"));
	assert_true(sbxs_http_hop_header("Content-Length"));
	assert_true(sbxs_http_hop_header("UPGRADE"));
	assert_false(sbxs_http_hop_header("Content-Type"));
	assert_false(sbxs_http_hop_header("Connections"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_http__framings),
		cmocka_unit_test(test_port_http__head_refusals),
		cmocka_unit_test(test_port_http__head_bounds),
		cmocka_unit_test(test_port_http__chunks),
		cmocka_unit_test(test_port_http__chunk_refusals),
		cmocka_unit_test(test_port_http__hop_headers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
