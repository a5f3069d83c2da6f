/*
 * tests/unit/remote/test_e2b_connect.c: the Connect envelope decoder of the
 * e2b backend (remote/e2b/connect.c) on canned streams: every split of a
 * stream into two chunks and into single bytes gives the same frames;
 * several frames in one chunk; the end-of-stream frame with an error;
 * compressed, unknown-flag, oversize and truncated envelopes, and bytes
 * after the end, each refused with a message that names what was wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "remote/e2b/e2b-int.h"

struct bytes {
	unsigned char *b;
	size_t len;
};

static void env(struct bytes *s, unsigned int flags, const char *json)
{
	size_t n = strlen(json);

	s->b = realloc(s->b, s->len + SBX_CONNECT_HDR + n);
	assert_non_null(s->b);
	sbx__connect_prefix(s->b + s->len, flags, (uint32_t)n);
	memcpy(s->b + s->len + SBX_CONNECT_HDR, json, n);
	s->len += SBX_CONNECT_HDR + n;
}

/* What the callback saw: "M:<json>|" per message, "E:<json>|" for the end. */
struct seen {
	char log[8192];
	size_t n;
	int stop_at; /* stop (return 7) at this frame number; 0: never */
	int frames;
};

static int on_frame(int kind, const char *json, size_t len, void *arg)
{
	struct seen *s = arg;

	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, "%c:%.*s|",
				 kind == SBX_CONNECT_END ? 'E' : 'M', (int)len, json);
	s->frames++;
	return s->stop_at && s->frames == s->stop_at ? 7 : 0;
}

static const char *const frames_json[] = {
	"{\"event\":{\"start\":{\"pid\":412}}}",
	"{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}",
	"{\"event\":{\"keepalive\":{}}}",
	"{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,\"status\":\"exit status 3\"}}}",
};

static const char *expected_log = "M:{\"event\":{\"start\":{\"pid\":412}}}|"
				  "M:{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}|"
				  "M:{\"event\":{\"keepalive\":{}}}|"
				  "M:{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,"
				  "\"status\":\"exit status 3\"}}}|"
				  "E:{}|";

static void make_stream(struct bytes *s)
{
	for (size_t i = 0; i < sizeof(frames_json) / sizeof(frames_json[0]); i++)
		env(s, 0, frames_json[i]);
	env(s, SBX_CONNECT_FLAG_END, "{}");
}

static void test_e2b_connect__whole_stream_one_chunk(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	make_stream(&s);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), 0);
	assert_string_equal(seen.log, expected_log);
	assert_int_equal(sbx__connect_finish(&d), 0);
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__every_split(void **state)
{
	struct bytes s = {0};

	(void)state;
	make_stream(&s);
	for (size_t cut = 0; cut <= s.len; cut++) {
		struct sbx__connect_dec d;
		struct seen seen = {0};

		sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
		assert_int_equal(sbx__connect_feed(&d, s.b, cut, on_frame, &seen), 0);
		assert_int_equal(sbx__connect_feed(&d, s.b + cut, s.len - cut, on_frame, &seen), 0);
		assert_string_equal(seen.log, expected_log);
		assert_int_equal(sbx__connect_finish(&d), 0);
		sbx__connect_done(&d);
	}
	free(s.b);
}

static void test_e2b_connect__byte_at_a_time(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	make_stream(&s);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	for (size_t i = 0; i < s.len; i++) {
		assert_int_equal(sbx__connect_feed(&d, s.b + i, 1, on_frame, &seen), 0);
		/* Never the end before its last byte. */
		if (i + 1 < s.len)
			assert_int_not_equal(sbx__connect_finish(&d), 0);
	}
	assert_string_equal(seen.log, expected_log);
	assert_int_equal(sbx__connect_finish(&d), 0);
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__eos_with_error(void **state)
{
	static const char *err = "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":"
				 "\"context deadline exceeded\"},\"metadata\":{}}";
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};
	char want[512];

	(void)state;
	env(&s, 0, frames_json[0]);
	env(&s, SBX_CONNECT_FLAG_END, err);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), 0);
	snprintf(want, sizeof(want), "M:%s|E:%s|", frames_json[0], err);
	assert_string_equal(seen.log, want);
	assert_int_equal(sbx__connect_finish(&d), 0);
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__callback_stops(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {.stop_at = 2};

	(void)state;
	make_stream(&s);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), 7);
	assert_int_equal(seen.frames, 2);
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__compressed_refused(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	env(&s, SBX_CONNECT_FLAG_COMPRESSED, frames_json[0]);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "compressed"));
	assert_int_equal(seen.frames, 0);
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__unknown_flags_refused(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	env(&s, 0x80, frames_json[0]);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "flags 0x80"));
	assert_int_equal(seen.frames, 0);
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__oversize_refused(void **state)
{
	unsigned char hdr[SBX_CONNECT_HDR];
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	/* Only the header arrives: the length is refused before any allocation. */
	sbx__connect_prefix(hdr, 0, SBX_E2B_FRAME_MAX + 1);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, hdr, sizeof(hdr), on_frame, &seen), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "4194305 bytes"));
	assert_non_null(strstr(sbx_error_last()->message, "4194304-byte limit"));
	sbx__connect_done(&d);

	/* Exactly the limit is taken. */
	sbx__connect_prefix(hdr, 0, 8);
	sbx__connect_init(&d, 8);
	assert_int_equal(sbx__connect_feed(&d, hdr, sizeof(hdr), on_frame, &seen), 0);
	assert_int_equal(sbx__connect_feed(&d, "{\"a\":12}", 8, on_frame, &seen), 0);
	assert_int_equal(seen.frames, 1);
	sbx__connect_done(&d);
}

static void test_e2b_connect__truncated(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};
	char want[128];

	(void)state;
	env(&s, 0, frames_json[1]);
	assert_int_equal(s.len, SBX_CONNECT_HDR + strlen(frames_json[1]));
	/* Cut inside the body. */
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, 20, on_frame, &seen), 0);
	assert_int_equal(sbx__connect_finish(&d), SBX_EENGINE);
	snprintf(want, sizeof(want), "ended mid-frame (got 20 of %zu bytes)", s.len);
	assert_non_null(strstr(sbx_error_last()->message, want));
	sbx__connect_done(&d);
	/* Cut inside the header. */
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, 3, on_frame, &seen), 0);
	assert_int_equal(sbx__connect_finish(&d), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "ended mid-frame (got 3 of 5"));
	sbx__connect_done(&d);
	/* Whole frames, but no end-of-stream frame. */
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), 0);
	assert_int_equal(sbx__connect_finish(&d), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "without its end-of-stream frame"));
	sbx__connect_done(&d);
	assert_int_equal(seen.frames, 1);
	free(s.b);
}

static void test_e2b_connect__bytes_after_end(void **state)
{
	struct bytes s = {0};
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	env(&s, SBX_CONNECT_FLAG_END, "{}");
	env(&s, 0, frames_json[0]);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, s.b, s.len, on_frame, &seen), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "after the end-of-stream frame"));
	assert_string_equal(seen.log, "E:{}|");
	sbx__connect_done(&d);
	free(s.b);
}

static void test_e2b_connect__empty_body(void **state)
{
	unsigned char hdr[SBX_CONNECT_HDR];
	struct sbx__connect_dec d;
	struct seen seen = {0};

	(void)state;
	sbx__connect_prefix(hdr, 0, 0);
	sbx__connect_init(&d, SBX_E2B_FRAME_MAX);
	assert_int_equal(sbx__connect_feed(&d, hdr, sizeof(hdr), on_frame, &seen), 0);
	assert_string_equal(seen.log, "M:|");
	sbx__connect_done(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e2b_connect__whole_stream_one_chunk),
		cmocka_unit_test(test_e2b_connect__every_split),
		cmocka_unit_test(test_e2b_connect__byte_at_a_time),
		cmocka_unit_test(test_e2b_connect__eos_with_error),
		cmocka_unit_test(test_e2b_connect__callback_stops),
		cmocka_unit_test(test_e2b_connect__compressed_refused),
		cmocka_unit_test(test_e2b_connect__unknown_flags_refused),
		cmocka_unit_test(test_e2b_connect__oversize_refused),
		cmocka_unit_test(test_e2b_connect__truncated),
		cmocka_unit_test(test_e2b_connect__bytes_after_end),
		cmocka_unit_test(test_e2b_connect__empty_body),
	};

	return cmocka_run_group_tests_name("e2b_connect", tests, NULL, NULL);
}
