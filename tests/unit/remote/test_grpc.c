/*
 * tests/unit/remote/test_grpc.c: the gRPC transport of the modal backend
 * (remote/modal/grpc.c) against a scripted HTTP/2 peer
 * (tests/support/h2_peer.c) that answers what a well-behaved server never
 * would.
 *
 * Covers: messages reassembled across any DATA boundaries (a split prefix,
 * a message over three frames, an empty message); a stream cut in the
 * middle of a message (reset, and the connection closed) naming the bytes
 * got and expected, not retried; a declared length over the default and
 * over a configured limit; a non-OK status with a percent-encoded
 * grpc-message; an RPCStatus in grpc-status-details-bin (its message, and
 * an RPCRetryPolicy honoured once and not counted as a retry, or refused
 * past the throttle cap); a response without grpc-status; a Trailers-Only
 * error; a non-200 HTTP status; retries on UNAVAILABLE with one
 * idempotency key and a counting x-retry-attempt, and the limit of three;
 * no retry past the caller's deadline; the request's headers; two
 * streams of one set sharing a connection; the kill flag; a receiver
 * that stops a stream.
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

#include "remote/modal/grpc-int.h"
#include "remote/modal/modal.pb-c.h"
#include "support/h2_peer.h"

#define M_ECHO "/test.Svc/Echo"
#define M_LIST "/test.Svc/List"

struct t;
typedef void (*answer_fn)(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r);

struct t {
	struct h2_peer *peer;
	struct sbx__grpc_chan *ch;
	answer_fn answer;
	int calls; /* handled so far (peer thread) */
	int kill;
	char details[2048];
};

static void handler(void *arg, const struct h2_req *req, struct h2_resp *r)
{
	struct t *t = arg;
	int nth = __atomic_fetch_add(&t->calls, 1, __ATOMIC_SEQ_CST);

	t->answer(t, nth, req, r);
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->peer = h2_peer_start(handler, t);
	assert_non_null(t->peer);
	assert_int_equal(sbx__grpc_chan_new(&t->ch, h2_peer_url(t->peer)), 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	sbx__grpc_chan_free(t->ch);
	h2_peer_stop(t->peer);
	free(t);
	return 0;
}

static struct sbx__grpc_opts opts(uint64_t ms)
{
	return (struct sbx__grpc_opts){.deadline_ms = sbx__grpc_now_ms() + ms, .retries = -1};
}

/* A request buffer: prefix space and the message. */
static uint8_t *framed(const char *msg, size_t *len)
{
	size_t n = strlen(msg);
	uint8_t *b = calloc(1, SBX__GRPC_PREFIX + n + 1);

	assert_non_null(b);
	memcpy(b + SBX__GRPC_PREFIX, msg, n);
	*len = SBX__GRPC_PREFIX + n;
	return b;
}

static int unary(struct t *t,
		 const struct sbx__grpc_opts *o,
		 const char *msg,
		 uint8_t **resp,
		 size_t *resp_len,
		 struct sbx__grpc_status *st)
{
	size_t len;
	uint8_t *req = framed(msg, &len);
	int rc = sbx__grpc_unary(t->ch, M_ECHO, req, len, o, resp, resp_len, st);

	free(req);
	return rc;
}

static void assert_msg(const char *word)
{
	const char *m = sbx_error_last()->message;

	if (!strstr(m, word))
		fail_msg("error message '%s' does not name '%s'", m, word);
}

/* grpc-status-details-bin of RPCStatus{code, message, [Any{type_url, value}]}. */
static void details(char *dst,
		    size_t cap,
		    int code,
		    const char *message,
		    const char *type_url,
		    float retry_after)
{
	Modal__Client__RPCRetryPolicy rp = MODAL__CLIENT__RPCRETRY_POLICY__INIT;
	Modal__Client__Any any = MODAL__CLIENT__ANY__INIT;
	Modal__Client__Any *anys[1] = {&any};
	Modal__Client__RPCStatus rs = MODAL__CLIENT__RPCSTATUS__INIT;
	uint8_t rpb[64], spb[1024];
	size_t n;
	char b64[1600];

	rp.retry_after_secs = retry_after;
	any.type_url = (char *)type_url;
	any.value.len = modal__client__rpcretry_policy__pack(&rp, rpb);
	any.value.data = rpb;
	rs.code = code;
	rs.message = (char *)message;
	if (type_url) {
		rs.n_details = 1;
		rs.details = anys;
	}
	n = modal__client__rpcstatus__pack(&rs, spb);
	h2_base64(b64, sizeof(b64), spb, n);
	snprintf(dst, cap, "grpc-status-details-bin: %s\n", b64);
}

/* ===== Framing ===== */

static void ans_split(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	static const uint8_t wire[] = {0,   0,	 0,   0,   11,	'h', 'e', 'l',
				       'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 200, NULL);
	h2_resp_data(r, wire, 2);     /* part of the prefix */
	h2_resp_data(r, wire + 2, 5); /* the rest of it, and two bytes */
	h2_resp_data(r, wire + 7, 1); /* one byte */
	h2_resp_data(r, wire + 8, 8); /* the rest */
	h2_resp_trailers(r, 0, NULL, NULL);
}

static void test_remote_grpc__framing_across_chunks(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_split;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), 0);
	assert_int_equal(len, 11);
	assert_memory_equal(resp, "hello world", 11);
	assert_int_equal(st.code, SBX__GRPC_OK);
	free(resp);
}

struct got {
	char text[256];
	int n;
	int stop_after; /* 0: never */
};

static int collect(void *arg, const uint8_t *msg, size_t len)
{
	struct got *g = arg;
	size_t have = strlen(g->text);

	snprintf(g->text + have, sizeof(g->text) - have, "[%.*s]", (int)len, (const char *)msg);
	g->n++;
	return g->stop_after && g->n >= g->stop_after ? 7 : 0;
}

static void ans_stream(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	/* "abc", "" and "defg", the second and third prefixes straddling frames. */
	static const uint8_t wire[] = {0, 0, 0, 0, 3, 'a', 'b', 'c', 0,	  0,   0,
				       0, 0, 0, 0, 0, 0,   4,	'd', 'e', 'f', 'g'};
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 200, NULL);
	h2_resp_data(r, wire, 9);
	h2_resp_data(r, wire + 9, 6);
	h2_resp_data(r, wire + 15, 7);
	h2_resp_trailers(r, 0, NULL, NULL);
}

static void test_remote_grpc__stream_messages_across_chunks(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct got g = {0};
	size_t len;
	uint8_t *req = framed("x", &len);

	t->answer = ans_stream;
	assert_int_equal(sbx__grpc_stream(t->ch, M_LIST, req, len, &o, collect, &g, NULL), 0);
	assert_string_equal(g.text, "[abc][][defg]");
	free(req);
}

static void test_remote_grpc__receiver_stops_stream(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	struct got g = {.stop_after = 1};
	size_t len;
	uint8_t *req = framed("x", &len);

	t->answer = ans_stream;
	assert_int_equal(sbx__grpc_stream(t->ch, M_LIST, req, len, &o, collect, &g, &st),
			 SBX_ECANCELED);
	assert_int_equal(st.cb_rc, 7);
	assert_int_equal(g.n, 1);
	free(req);
}

/* ===== Broken streams ===== */

static void ans_cut(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	uint8_t wire[45] = {0, 0, 0, 0, 100};

	(void)t;
	(void)nth;
	(void)req;
	memset(wire + 5, 'x', 40);
	h2_resp_headers(r, 200, NULL);
	h2_resp_data(r, wire, sizeof(wire));
	/* libcurl drops data still buffered when a reset arrives with it: let it land. */
	h2_resp_delay(r, 500);
	h2_resp_reset(r);
}

static void test_remote_grpc__cut_mid_message(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_cut;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EENGINE);
	assert_true(st.broken);
	assert_msg("got 40 of 100 bytes");
	assert_msg(M_ECHO);
	assert_null(resp);
	/* A broken stream is not retried. */
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

static void ans_cut_conn(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	uint8_t wire[9] = {0, 0, 0, 1, 0, 'a', 'b', 'c', 'd'};

	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 200, NULL);
	h2_resp_data(r, wire, sizeof(wire));
	h2_resp_close(r);
}

static void test_remote_grpc__cut_connection_mid_message(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	struct got g = {0};
	size_t len;
	uint8_t *req = framed("x", &len);

	t->answer = ans_cut_conn;
	assert_int_equal(sbx__grpc_stream(t->ch, M_LIST, req, len, &o, collect, &g, &st),
			 SBX_EENGINE);
	assert_true(st.broken);
	assert_msg("got 4 of 256 bytes");
	assert_int_equal(g.n, 0);
	free(req);
}

static void ans_huge(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	static const uint8_t wire[] = {0, 0x7f, 0xff, 0xff, 0xff, 'a', 'b'};

	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 200, NULL);
	h2_resp_data(r, wire, sizeof(wire));
	h2_resp_delay(r, 100);
	h2_resp_trailers(r, 0, NULL, NULL);
}

static void test_remote_grpc__declared_length_over_default_limit(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_huge;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EENGINE);
	assert_true(st.broken);
	assert_msg("2147483647 bytes");
	assert_msg("104857600");
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

static void test_remote_grpc__declared_length_over_set_limit(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	o.max_msg = 10;
	t->answer = ans_split; /* an 11-byte message */
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EENGINE);
	assert_msg("declares 11 bytes, over the limit of 10");
	/* The same answer passes at the limit. */
	o.max_msg = 11;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), 0);
	free(resp);
}

static void ans_no_status(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 200, NULL);
	h2_resp_message(r, "ok", 2);
	h2_resp_end(r);
}

static void test_remote_grpc__missing_status_trailer(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_no_status;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EENGINE);
	assert_true(st.broken);
	assert_msg("grpc: response ended without grpc-status");
	assert_null(resp);
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

/* ===== Status ===== */

static void ans_not_found(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 200, NULL);
	h2_resp_trailers(r, 5, "App%20%22x%22%20not%20found%3A%E2%9C%93", NULL);
}

static void test_remote_grpc__status_and_message(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_not_found;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_ENOTFOUND);
	assert_int_equal(st.code, SBX__GRPC_NOT_FOUND);
	assert_false(st.broken);
	assert_string_equal(st.message, "App \"x\" not found:\xe2\x9c\x93");
	assert_msg(M_ECHO);
	assert_msg("NOT_FOUND");
	assert_msg("App \"x\" not found");
	/* NOT_FOUND is not retried. */
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

static void ans_details_only(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)nth;
	(void)req;
	details(t->details, sizeof(t->details), 9, "sandbox already terminated", NULL, 0);
	h2_resp_trailers_only(r, 9, NULL, t->details);
}

static void test_remote_grpc__status_details_message(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_details_only;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EINVALID);
	assert_int_equal(st.code, SBX__GRPC_FAILED_PRECONDITION);
	assert_true(st.retry_after < 0);
	assert_msg("FAILED_PRECONDITION");
	assert_msg("sandbox already terminated");
}

static void ans_throttle_once(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)req;
	if (nth == 0) {
		details(t->details, sizeof(t->details), 8, "slow down",
			"type.modal.com/modal.client.RPCRetryPolicy", 0.2f);
		h2_resp_trailers_only(r, 8, "slow%20down", t->details);
		return;
	}
	h2_resp_ok(r, "done", 4);
}

static void test_remote_grpc__throttle_honoured_once(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	const struct h2_req *a, *b;
	char key[64];
	uint8_t *resp = NULL;
	size_t len = 0;

	o.retries = 0; /* a throttle wait is not a retry */
	t->answer = ans_throttle_once;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), 0);
	assert_int_equal(len, 4);
	assert_memory_equal(resp, "done", 4);
	free(resp);
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 2);
	a = h2_peer_req(t->peer, M_ECHO, 0);
	b = h2_peer_req(t->peer, M_ECHO, 1);
	snprintf(key, sizeof(key), "%s", h2_req_header(a, "x-idempotency-key"));
	assert_string_equal(h2_req_header(b, "x-idempotency-key"), key);
	assert_string_equal(h2_req_header(a, "x-throttle-retry-attempt"), "0");
	assert_string_equal(h2_req_header(b, "x-throttle-retry-attempt"), "1");
	assert_string_equal(h2_req_header(b, "x-retry-attempt"), "0");
}

static void ans_throttle_long(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)nth;
	(void)req;
	details(t->details, sizeof(t->details), 8, "slow down",
		"type.modal.com/modal.client.RPCRetryPolicy", 30.0f);
	h2_resp_trailers_only(r, 8, "slow%20down", t->details);
}

static void test_remote_grpc__throttle_past_cap_not_waited(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(60000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	o.max_throttle_ms = 1000;
	t->answer = ans_throttle_long;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EUNAVAILABLE);
	assert_true(st.retry_after > 29.0 && st.retry_after < 31.0);
	assert_msg("RESOURCE_EXHAUSTED");
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

static void ans_unauth(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_trailers_only(r, 16, "token%20expired", NULL);
}

static void test_remote_grpc__trailers_only_error(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_unauth;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EDENIED);
	assert_int_equal(st.code, SBX__GRPC_UNAUTHENTICATED);
	assert_false(st.broken);
	assert_msg("UNAUTHENTICATED: token expired");
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

static void ans_http_403(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_headers(r, 403, NULL);
	h2_resp_data(r, "denied", 6);
	h2_resp_end(r);
}

static void test_remote_grpc__http_status(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_http_403;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EDENIED);
	assert_msg("HTTP status 403");
}

/* ===== Retries ===== */

static int unavailable_first; /* how many UNAVAILABLE answers before OK */

static void ans_unavailable(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)req;
	if (nth < unavailable_first) {
		h2_resp_headers(r, 200, NULL);
		h2_resp_trailers(r, 14, "try%20again", NULL);
		return;
	}
	h2_resp_ok(r, "ok", 2);
}

static void test_remote_grpc__retry_unavailable_same_key(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(20000);
	struct sbx__grpc_status st;
	char key[64], want[8];
	uint8_t *resp = NULL;
	size_t len = 0;

	unavailable_first = 3;
	t->answer = ans_unavailable;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), 0);
	free(resp);
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 4);
	snprintf(key, sizeof(key), "%s",
		 h2_req_header(h2_peer_req(t->peer, M_ECHO, 0), "x-idempotency-key"));
	assert_int_equal(strlen(key), 36);
	assert_int_equal(key[14], '4'); /* a version 4 UUID */
	for (int i = 0; i < 4; i++) {
		const struct h2_req *q = h2_peer_req(t->peer, M_ECHO, i);

		snprintf(want, sizeof(want), "%d", i);
		assert_string_equal(h2_req_header(q, "x-retry-attempt"), want);
		assert_string_equal(h2_req_header(q, "x-idempotency-key"), key);
	}
}

static void test_remote_grpc__retry_limit(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(20000);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	unavailable_first = 100;
	t->answer = ans_unavailable;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_EUNAVAILABLE);
	assert_int_equal(st.code, SBX__GRPC_UNAVAILABLE);
	assert_msg("UNAVAILABLE: try again");
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 4); /* one call and three retries */
}

static void test_remote_grpc__no_retry_past_deadline(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(90);
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;

	/* UNAVAILABLE at once: the first backoff (100 ms) would end past the deadline. */
	unavailable_first = 100;
	t->answer = ans_unavailable;
	assert_true(unary(t, &o, "hi", &resp, &len, &st) < 0);
	/* Without the deadline rule this would be 4 (a call and three retries). */
	assert_true(h2_peer_count(t->peer, M_ECHO) <= 1);
}

static void ans_slow(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)nth;
	(void)req;
	h2_resp_delay(r, 3000);
	h2_resp_ok(r, "late", 4);
}

static void test_remote_grpc__deadline_passes(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(500);
	struct sbx__grpc_status st;
	const char *tmo;
	uint8_t *resp = NULL;
	size_t len = 0;

	t->answer = ans_slow;
	assert_int_equal(unary(t, &o, "hi", &resp, &len, &st), SBX_ETIMEOUT);
	assert_int_equal(st.code, SBX__GRPC_DEADLINE_EXCEEDED);
	assert_msg("DEADLINE_EXCEEDED");
	/* DEADLINE_EXCEEDED is retryable, but never past the caller's deadline. */
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
	tmo = h2_req_header(h2_peer_req(t->peer, M_ECHO, 0), "grpc-timeout");
	assert_non_null(tmo);
	assert_int_equal(tmo[strlen(tmo) - 1], 'm');
	assert_true(atoi(tmo) > 0 && atoi(tmo) <= 500);
}

/* ===== Requests ===== */

static void ans_echo(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	size_t n = 0;
	const uint8_t *m = h2_req_message(req, &n);

	(void)t;
	(void)nth;
	h2_resp_ok(r, m, m ? n : 0);
}

static void test_remote_grpc__request_headers_and_framing(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_md md[] = {{"x-modal-token-id", "ak-123"}, {"authorization", "Bearer j"}};
	struct sbx__grpc_opts o = opts(10000);
	const struct h2_req *q;
	uint8_t *resp = NULL;
	size_t len = 0;

	o.md = md;
	o.md_n = 2;
	t->answer = ans_echo;
	assert_int_equal(unary(t, &o, "payload", &resp, &len, NULL), 0);
	assert_int_equal(len, 7);
	assert_memory_equal(resp, "payload", 7);
	free(resp);
	q = h2_peer_req(t->peer, M_ECHO, 0);
	assert_int_equal(q->body_len, 12);
	assert_memory_equal(q->body, "\0\0\0\0\7payload", 12);
	assert_string_equal(h2_req_header(q, "content-type"), "application/grpc");
	assert_string_equal(h2_req_header(q, "te"), "trailers");
	assert_string_equal(h2_req_header(q, "x-modal-token-id"), "ak-123");
	assert_string_equal(h2_req_header(q, "authorization"), "Bearer j");
	assert_non_null(h2_req_header(q, "grpc-timeout"));
	/* A value that would split the header block is refused before sending. */
	md[1].value = "Bearer j\r\nx-evil: 1";
	assert_int_equal(unary(t, &o, "payload", &resp, &len, NULL), SBX_EINVALID);
	assert_int_equal(h2_peer_count(t->peer, M_ECHO), 1);
}

static void ans_two(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)t;
	(void)nth;
	h2_resp_headers(r, 200, NULL);
	h2_resp_delay(r, 50);
	h2_resp_message(r, req->body + 5, req->body_len - 5);
	h2_resp_delay(r, 50);
	h2_resp_message(r, req->body + 5, req->body_len - 5);
	h2_resp_trailers(r, 0, NULL, NULL);
}

static void test_remote_grpc__set_shares_connection(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(10000);
	struct sbx__grpc_set *s = NULL;
	struct sbx__grpc_call *a = NULL, *b = NULL, *done = NULL;
	struct got ga = {0}, gb = {0};
	size_t la, lb;
	uint8_t *ra = framed("out", &la), *rb = framed("err", &lb);
	int open = 2;

	t->answer = ans_two;
	assert_int_equal(sbx__grpc_set_new(&s, t->ch), 0);
	assert_int_equal(sbx__grpc_start(s, &a, M_LIST, ra, la, &o, collect, &ga), 0);
	assert_int_equal(sbx__grpc_start(s, &b, M_LIST, rb, lb, &o, collect, &gb), 0);
	while (open) {
		assert_int_equal(sbx__grpc_set_step(s, 50, &done), 0);
		if (done) {
			assert_int_equal(sbx__grpc_call_end(done, NULL), 0);
			open--;
		}
	}
	sbx__grpc_set_free(s);
	assert_string_equal(ga.text, "[out][out]");
	assert_string_equal(gb.text, "[err][err]");
	assert_int_equal(h2_peer_count(t->peer, M_LIST), 2);
	assert_int_equal(h2_peer_req(t->peer, M_LIST, 0)->conn,
			 h2_peer_req(t->peer, M_LIST, 1)->conn);
	free(ra);
	free(rb);
}

static void ans_kill(struct t *t, int nth, const struct h2_req *req, struct h2_resp *r)
{
	(void)nth;
	(void)req;
	__atomic_store_n(&t->kill, 1, __ATOMIC_SEQ_CST);
	h2_resp_headers(r, 200, NULL);
	h2_resp_delay(r, 30000);
	h2_resp_message(r, "late", 4);
	h2_resp_trailers(r, 0, NULL, NULL);
}

static void test_remote_grpc__kill_flag_aborts(void **state)
{
	struct t *t = *state;
	struct sbx__grpc_opts o = opts(60000);
	struct sbx__grpc_status st;
	struct got g = {0};
	size_t len;
	uint8_t *req = framed("x", &len);

	o.kill = &t->kill;
	t->answer = ans_kill;
	assert_int_equal(sbx__grpc_stream(t->ch, M_LIST, req, len, &o, collect, &g, &st),
			 SBX_ECANCELED);
	assert_true(st.canceled);
	assert_int_equal(g.n, 0);
	free(req);
}

static void test_remote_grpc__code_mapping(void **state)
{
	(void)state;
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_UNAUTHENTICATED), SBX_EDENIED);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_PERMISSION_DENIED), SBX_EDENIED);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_NOT_FOUND), SBX_ENOTFOUND);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_INVALID_ARGUMENT), SBX_EINVALID);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_FAILED_PRECONDITION), SBX_EINVALID);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_DEADLINE_EXCEEDED), SBX_ETIMEOUT);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_UNAVAILABLE), SBX_EUNAVAILABLE);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_RESOURCE_EXHAUSTED), SBX_EUNAVAILABLE);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_INTERNAL), SBX_EENGINE);
	assert_int_equal(sbx__grpc_sbx_code(SBX__GRPC_ALREADY_EXISTS), SBX_EENGINE);
	assert_true(sbx__grpc_retryable(SBX__GRPC_UNKNOWN));
	assert_true(sbx__grpc_retryable(SBX__GRPC_CANCELLED));
	assert_false(sbx__grpc_retryable(SBX__GRPC_RESOURCE_EXHAUSTED));
	assert_false(sbx__grpc_retryable(SBX__GRPC_NOT_FOUND));
}

static void test_remote_grpc__bad_urls(void **state)
{
	struct sbx__grpc_chan *ch = NULL;

	(void)state;
	assert_int_equal(sbx__grpc_chan_new(&ch, "ftp://x"), SBX_EINVALID);
	assert_int_equal(sbx__grpc_chan_new(&ch, "https://"), SBX_EINVALID);
	assert_int_equal(sbx__grpc_chan_new(&ch, "https://h/path"), SBX_EINVALID);
	assert_int_equal(sbx__grpc_chan_new(&ch, "https://h@evil:1"), SBX_EINVALID);
	assert_null(ch);
	assert_int_equal(sbx__grpc_chan_new(&ch, "https://api.example.test:443/"), 0);
	assert_string_equal(sbx__grpc_chan_url(ch), "https://api.example.test:443");
	sbx__grpc_chan_free(ch);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_remote_grpc__framing_across_chunks),
		T(test_remote_grpc__stream_messages_across_chunks),
		T(test_remote_grpc__receiver_stops_stream),
		T(test_remote_grpc__cut_mid_message),
		T(test_remote_grpc__cut_connection_mid_message),
		T(test_remote_grpc__declared_length_over_default_limit),
		T(test_remote_grpc__declared_length_over_set_limit),
		T(test_remote_grpc__missing_status_trailer),
		T(test_remote_grpc__status_and_message),
		T(test_remote_grpc__status_details_message),
		T(test_remote_grpc__throttle_honoured_once),
		T(test_remote_grpc__throttle_past_cap_not_waited),
		T(test_remote_grpc__trailers_only_error),
		T(test_remote_grpc__http_status),
		T(test_remote_grpc__retry_unavailable_same_key),
		T(test_remote_grpc__retry_limit),
		T(test_remote_grpc__no_retry_past_deadline),
		T(test_remote_grpc__deadline_passes),
		T(test_remote_grpc__request_headers_and_framing),
		T(test_remote_grpc__set_shares_connection),
		T(test_remote_grpc__kill_flag_aborts),
		cmocka_unit_test(test_remote_grpc__code_mapping),
		cmocka_unit_test(test_remote_grpc__bad_urls),
	};

	return cmocka_run_group_tests_name("remote_grpc", tests, NULL, NULL);
}
