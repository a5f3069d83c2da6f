/*
 * tests/unit/init/test_frame.c: unit tests of util/frame.c, the framing
 * between sbx-init and the host.
 *
 * The decoder faces bytes an untrusted program may have influenced, so
 * besides round trips (whole and one byte at a time) every rejection rule is
 * exercised, as is the boundary at exactly SBX_FRAME_MAX.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/frame.h"

#define STREAM_MAX (4 * (SBX_FRAME_HDR + SBX_FRAME_MAX))

struct collected {
	int frames;
	int types[16];
	unsigned char out[SBX_FRAME_MAX * 2];
	size_t out_len;
	unsigned char err[256];
	size_t err_len;
	char msg[256];
	size_t msg_len;
	int exits;
	struct sbx__frame_exit exit;
	int abort_with; /* returned by the callback when non-zero */
};

struct stream {
	unsigned char b[STREAM_MAX];
	size_t len;
};

static int collect(int type, const unsigned char *p, size_t len, void *arg)
{
	struct collected *c = arg;

	if (c->frames < 16)
		c->types[c->frames] = type;
	c->frames++;
	switch (type) {
	case SBX_FRAME_STDOUT:
		assert_true(c->out_len + len <= sizeof(c->out));
		memcpy(c->out + c->out_len, p, len);
		c->out_len += len;
		break;
	case SBX_FRAME_STDERR:
		assert_true(c->err_len + len <= sizeof(c->err));
		memcpy(c->err + c->err_len, p, len);
		c->err_len += len;
		break;
	case SBX_FRAME_ERROR:
		assert_true(c->msg_len + len < sizeof(c->msg));
		memcpy(c->msg + c->msg_len, p, len);
		c->msg_len += len;
		break;
	case SBX_FRAME_EXIT:
		assert_int_equal(sbx__frame_exit_decode(&c->exit, p, len), 0);
		c->exits++;
		break;
	default:
		fail_msg("unexpected frame type %d", type);
	}
	return c->abort_with;
}

static void put(struct stream *s, int type, const void *payload, size_t len)
{
	assert_true(s->len + SBX_FRAME_HDR + len <= sizeof(s->b));
	sbx__frame_header(s->b + s->len, type, (uint32_t)len);
	if (len)
		memcpy(s->b + s->len + SBX_FRAME_HDR, payload, len);
	s->len += SBX_FRAME_HDR + len;
}

static void put_exit(struct stream *s, const struct sbx__frame_exit *e)
{
	unsigned char p[SBX_FRAME_EXIT_LEN];

	sbx__frame_exit_encode(p, e);
	put(s, SBX_FRAME_EXIT, p, sizeof(p));
}

static const struct sbx__frame_exit sample_exit = {
	.status = SBX_FRAME_ST_SIGNALED,
	.code = 137,
	.signal = 9,
	.flags = SBX_FRAME_F_OOM,
	.utime_us = 0x0123456789abcdefULL,
	.stime_us = 42,
	.maxrss_kb = 0xfffffffffffffffeULL,
};

/* Per-test state on the heap: the decoder alone is over 64 KiB. */
struct fixture {
	struct sbx__frame_decoder d;
	struct collected c;
	struct stream s;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	sbx__frame_decoder_init(&f->d);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static void build_sample(struct stream *s)
{
	put(s, SBX_FRAME_STDOUT, "hello ", 6);
	put(s, SBX_FRAME_STDERR, "oops\n", 5);
	put(s, SBX_FRAME_STDOUT, "world\n", 6);
	put(s, SBX_FRAME_ERROR, "a message", 9);
	put_exit(s, &sample_exit);
}

static void check_sample(const struct collected *c)
{
	assert_int_equal(c->frames, 5);
	assert_int_equal(c->types[0], SBX_FRAME_STDOUT);
	assert_int_equal(c->types[1], SBX_FRAME_STDERR);
	assert_int_equal(c->types[2], SBX_FRAME_STDOUT);
	assert_int_equal(c->types[3], SBX_FRAME_ERROR);
	assert_int_equal(c->types[4], SBX_FRAME_EXIT);
	assert_int_equal(c->out_len, 12);
	assert_memory_equal(c->out, "hello world\n", 12);
	assert_int_equal(c->err_len, 5);
	assert_memory_equal(c->err, "oops\n", 5);
	assert_int_equal(c->msg_len, 9);
	assert_memory_equal(c->msg, "a message", 9);
	assert_int_equal(c->exits, 1);
	assert_memory_equal(&c->exit, &sample_exit, sizeof(sample_exit));
}

static void test_frame__header_layout(void **state)
{
	unsigned char h[SBX_FRAME_HDR];
	static const unsigned char want[SBX_FRAME_HDR] = {0xA5, 2, 0, 0, 0x00, 0x01, 0x02, 0x03};

	(void)state;
	sbx__frame_header(h, SBX_FRAME_STDERR, 0x010203);
	assert_memory_equal(h, want, sizeof(want));
}

static void test_frame__exit_layout(void **state)
{
	unsigned char p[SBX_FRAME_EXIT_LEN];
	static const unsigned char want[SBX_FRAME_EXIT_LEN] = {
		0, 0, 0,    1,	  0,	0,    0,    137,  0,	0,    0,    9,	 0, 0,
		0, 1, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0,    0,	 0, 0,
		0, 0, 0,    42,	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};

	(void)state;
	sbx__frame_exit_encode(p, &sample_exit);
	assert_memory_equal(p, want, sizeof(want));
}

static void test_frame__exit_roundtrip(void **state)
{
	unsigned char p[SBX_FRAME_EXIT_LEN];
	struct sbx__frame_exit e;
	static const struct sbx__frame_exit ok[] = {
		{.status = SBX_FRAME_ST_EXITED, .code = 0},
		{.status = SBX_FRAME_ST_EXITED, .code = 255, .utime_us = 1, .stime_us = 2},
		{.status = SBX_FRAME_ST_SIGNALED, .code = 128 + 64, .signal = 64},
		{.status = SBX_FRAME_ST_TIMEOUT, .code = 124, .signal = 9},
		{.status = SBX_FRAME_ST_TIMEOUT, .code = 124},
		{.status = SBX_FRAME_ST_EXECFAIL, .code = 126},
		{.status = SBX_FRAME_ST_EXECFAIL, .code = 127, .flags = SBX_FRAME_F_OOM},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		sbx__frame_exit_encode(p, &ok[i]);
		memset(&e, 0xee, sizeof(e));
		assert_int_equal(sbx__frame_exit_decode(&e, p, sizeof(p)), 0);
		assert_memory_equal(&e, &ok[i], sizeof(e));
	}
}

static void test_frame__exit_decode_rejects_fields(void **state)
{
	unsigned char p[SBX_FRAME_EXIT_LEN];
	struct sbx__frame_exit e;
	static const struct sbx__frame_exit bad[] = {
		{.status = 4, .code = 0},
		{.status = 0xffffffffu, .code = 0},
		{.status = SBX_FRAME_ST_EXITED, .code = 256},
		{.status = SBX_FRAME_ST_EXITED, .code = -1},
		{.status = SBX_FRAME_ST_EXITED, .code = 0, .signal = 9},
		{.status = SBX_FRAME_ST_EXITED, .code = 0, .flags = 2},
		{.status = SBX_FRAME_ST_SIGNALED, .code = 137, .signal = 0},
		{.status = SBX_FRAME_ST_SIGNALED, .code = 138, .signal = 9},
		{.status = SBX_FRAME_ST_SIGNALED, .code = 128 + 65, .signal = 65},
		{.status = SBX_FRAME_ST_TIMEOUT, .code = 0},
		{.status = SBX_FRAME_ST_EXECFAIL, .code = 1},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx__frame_exit_encode(p, &bad[i]);
		assert_int_equal(sbx__frame_exit_decode(&e, p, sizeof(p)), -1);
	}
	sbx__frame_exit_encode(p, &sample_exit);
	assert_int_equal(sbx__frame_exit_decode(&e, p, sizeof(p) - 1), -1);
	assert_int_equal(sbx__frame_exit_decode(&e, NULL, sizeof(p)), -1);
}

static void test_frame__roundtrip_whole(void **state)
{
	struct fixture *f = *state;

	build_sample(&f->s);
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), 0);
	check_sample(&f->c);
	assert_int_equal(f->d.done, 1);
	assert_int_equal(f->d.error, 0);
}

static void test_frame__roundtrip_bytewise(void **state)
{
	struct fixture *f = *state;
	size_t i;

	build_sample(&f->s);
	for (i = 0; i < f->s.len; i++)
		assert_int_equal(sbx__frame_feed(&f->d, f->s.b + i, 1, collect, &f->c), 0);
	check_sample(&f->c);
	assert_int_equal(f->d.done, 1);
}

static void test_frame__roundtrip_odd_chunks(void **state)
{
	struct fixture *f = *state;
	size_t i, n;

	build_sample(&f->s);
	for (i = 0; i < f->s.len; i += n) {
		n = 7;
		if (n > f->s.len - i)
			n = f->s.len - i;
		assert_int_equal(sbx__frame_feed(&f->d, f->s.b + i, n, collect, &f->c), 0);
	}
	check_sample(&f->c);
}

static void test_frame__empty_payload(void **state)
{
	struct fixture *f = *state;

	put(&f->s, SBX_FRAME_STDOUT, NULL, 0);
	put(&f->s, SBX_FRAME_ERROR, NULL, 0);
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), 0);
	assert_int_equal(f->c.frames, 2);
	assert_int_equal(f->c.out_len, 0);
	assert_int_equal(f->d.done, 0);
}

static void test_frame__feed_nothing(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sbx__frame_feed(&f->d, NULL, 0, collect, &f->c), 0);
	assert_int_equal(f->c.frames, 0);
}

static void test_frame__max_payload(void **state)
{
	struct fixture *f = *state;
	unsigned char *big = malloc(SBX_FRAME_MAX);
	struct sbx__frame_exit e = {.status = SBX_FRAME_ST_EXITED};
	size_t i, n;

	assert_non_null(big);
	for (i = 0; i < SBX_FRAME_MAX; i++)
		big[i] = (unsigned char)(i * 31 + 7);
	put(&f->s, SBX_FRAME_STDOUT, big, SBX_FRAME_MAX);
	put(&f->s, SBX_FRAME_STDOUT, big, SBX_FRAME_MAX);
	put_exit(&f->s, &e);

	/* Chunks that straddle both headers and the payload boundaries. */
	for (i = 0; i < f->s.len; i += n) {
		n = 1000;
		if (n > f->s.len - i)
			n = f->s.len - i;
		assert_int_equal(sbx__frame_feed(&f->d, f->s.b + i, n, collect, &f->c), 0);
	}
	assert_int_equal(f->c.frames, 3);
	assert_int_equal(f->c.out_len, 2 * SBX_FRAME_MAX);
	assert_memory_equal(f->c.out, big, SBX_FRAME_MAX);
	assert_memory_equal(f->c.out + SBX_FRAME_MAX, big, SBX_FRAME_MAX);
	assert_int_equal(f->c.exits, 1);
	free(big);
}

static void expect_reject(struct fixture *f, const unsigned char *b, size_t len)
{
	assert_int_equal(sbx__frame_feed(&f->d, b, len, collect, &f->c), -1);
	assert_int_equal(f->d.error, 1);
	assert_int_equal(f->c.frames, 0);
}

static void test_frame__reject_oversize(void **state)
{
	struct fixture *f = *state;
	unsigned char h[SBX_FRAME_HDR];

	sbx__frame_header(h, SBX_FRAME_STDOUT, SBX_FRAME_MAX + 1);
	/* Rejected from the header alone, before any payload arrives. */
	expect_reject(f, h, sizeof(h));
}

static void test_frame__reject_huge_length(void **state)
{
	struct fixture *f = *state;
	static const unsigned char h[SBX_FRAME_HDR] = {0xA5, 1, 0, 0, 0xff, 0xff, 0xff, 0xff};

	expect_reject(f, h, sizeof(h));
}

static void test_frame__reject_bad_magic(void **state)
{
	struct fixture *f = *state;
	static const unsigned char b[] = {0xA4};

	/* A single wrong byte is enough. */
	expect_reject(f, b, sizeof(b));
}

static void test_frame__reject_bad_magic_later(void **state)
{
	struct fixture *f = *state;

	put(&f->s, SBX_FRAME_STDOUT, "ok", 2);
	put(&f->s, SBX_FRAME_STDOUT, "no", 2);
	f->s.b[SBX_FRAME_HDR + 2] = 'x';
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), -1);
	assert_int_equal(f->c.frames, 1);
	assert_int_equal(f->d.error, 1);
	assert_string_equal(f->d.why, "a frame without the magic byte");
}

static void test_frame__reject_unknown_type(void **state)
{
	struct fixture *f = *state;
	static const int types[] = {0, 5, 6, 0x7f, 0xff};
	unsigned char h[SBX_FRAME_HDR];
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		sbx__frame_decoder_init(&f->d);
		sbx__frame_header(h, types[i], 0);
		expect_reject(f, h, sizeof(h));
	}
}

static void test_frame__reject_reserved(void **state)
{
	struct fixture *f = *state;
	unsigned char h[SBX_FRAME_HDR];
	int byte;

	for (byte = 2; byte <= 3; byte++) {
		sbx__frame_decoder_init(&f->d);
		sbx__frame_header(h, SBX_FRAME_STDOUT, 0);
		h[byte] = 1;
		expect_reject(f, h, sizeof(h));
	}
}

static void test_frame__reject_exit_length(void **state)
{
	struct fixture *f = *state;
	static const uint32_t lens[] = {0, 1, SBX_FRAME_EXIT_LEN - 1, SBX_FRAME_EXIT_LEN + 1,
					SBX_FRAME_MAX};
	unsigned char h[SBX_FRAME_HDR];
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		sbx__frame_decoder_init(&f->d);
		sbx__frame_header(h, SBX_FRAME_EXIT, lens[i]);
		expect_reject(f, h, sizeof(h));
	}
}

static void test_frame__reject_exit_status(void **state)
{
	struct fixture *f = *state;
	struct sbx__frame_exit e = {.status = 4, .code = 0};

	put_exit(&f->s, &e);
	expect_reject(f, f->s.b, f->s.len);
	assert_int_equal(f->d.done, 0);
}

static void test_frame__reject_exit_status_bytewise(void **state)
{
	struct fixture *f = *state;
	struct sbx__frame_exit e = {.status = SBX_FRAME_ST_EXITED, .code = 300};
	size_t i;

	put_exit(&f->s, &e);
	for (i = 0; i + 1 < f->s.len; i++)
		assert_int_equal(sbx__frame_feed(&f->d, f->s.b + i, 1, collect, &f->c), 0);
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b + i, 1, collect, &f->c), -1);
	assert_int_equal(f->c.frames, 0);
}

static void test_frame__reject_bytes_after_exit(void **state)
{
	struct fixture *f = *state;
	struct sbx__frame_exit e = {.status = SBX_FRAME_ST_EXITED, .code = 1};

	put_exit(&f->s, &e);
	f->s.b[f->s.len++] = SBX_FRAME_MAGIC;
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), -1);
	assert_int_equal(f->c.exits, 1);
	assert_int_equal(f->d.error, 1);
	/* The reason is kept for the message that ends the sandbox. */
	assert_string_equal(f->d.why, "bytes after the exit frame");
}

static void test_frame__reject_frame_after_exit_later_feed(void **state)
{
	struct fixture *f = *state;
	struct sbx__frame_exit e = {.status = SBX_FRAME_ST_EXITED, .code = 0};
	struct stream *more = calloc(1, sizeof(*more));

	assert_non_null(more);
	put_exit(&f->s, &e);
	put(more, SBX_FRAME_STDOUT, "late", 4);
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), 0);
	assert_int_equal(f->d.done, 1);
	assert_int_equal(sbx__frame_feed(&f->d, more->b, 1, collect, &f->c), -1);
	assert_int_equal(f->c.frames, 1);
	assert_int_equal(f->c.out_len, 0);
	free(more);
}

static void test_frame__error_is_sticky(void **state)
{
	struct fixture *f = *state;
	static const unsigned char bad[] = {0x00};

	put(&f->s, SBX_FRAME_STDOUT, "fine", 4);
	expect_reject(f, bad, sizeof(bad));
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), -1);
	assert_int_equal(f->c.frames, 0);
}

static void test_frame__callback_abort(void **state)
{
	struct fixture *f = *state;

	build_sample(&f->s);
	f->c.abort_with = 7;
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), 7);
	assert_int_equal(f->c.frames, 1);
	/* The rest of the stream was not consumed, so going on would misalign. */
	f->c.abort_with = 0;
	assert_int_equal(sbx__frame_feed(&f->d, f->s.b, f->s.len, collect, &f->c), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame__header_layout),
		cmocka_unit_test(test_frame__exit_layout),
		cmocka_unit_test(test_frame__exit_roundtrip),
		cmocka_unit_test(test_frame__exit_decode_rejects_fields),
		cmocka_unit_test_setup_teardown(test_frame__roundtrip_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__roundtrip_bytewise, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__roundtrip_odd_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__empty_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__feed_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__max_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_oversize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_huge_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_bad_magic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_bad_magic_later, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_unknown_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_reserved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_exit_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_exit_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_exit_status_bytewise, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_bytes_after_exit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_frame__reject_frame_after_exit_later_feed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__error_is_sticky, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame__callback_abort, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
