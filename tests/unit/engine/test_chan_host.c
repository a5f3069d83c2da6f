/*
 * tests/unit/engine/test_chan_host.c: the host's end of the run channel
 * (engine/chan.c, engine/attach.c) against a scripted, hostile init.
 *
 * A socketpair stands in for the attach connection and a thread for the
 * init: it parses the host's request with the init's own parser
 * (init/request.c), so the host's encoding is checked on the way, then
 * answers with a scripted byte stream in the Engine's multiplexed format.
 * A fake Engine (tests/support/fake_engine.c) records the kill the host
 * sends. Each way the stream can break the protocol must make the host fail
 * closed: an error, the sandbox killed, the channel given up. The reader's
 * rules are also checked on their own, with canned streams.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/chan-int.h"
#include "engine/docker-int.h"
#include "init/init.h"
#include "support/engine_stream.h"
#include "support/fake_engine.h"
#include "util/error-int.h"
#include "util/redact-int.h"
#include "util/secmem.h"

/* ===== Building streams ===== */

/* A channel frame on the init's stdout. */
static void frame(struct engine_bytes *s, int type, unsigned int id, const void *p, size_t n)
{
	unsigned char buf[SBX_FRAME_HDR + 8192];

	assert_true(n <= 8192);
	sbx__chan_header(buf, type, id, (uint32_t)n);
	if (n)
		memcpy(buf + SBX_FRAME_HDR, p, n);
	engine_bytes_mux(s, 1, buf, SBX_FRAME_HDR + n);
}

static void hello(struct engine_bytes *s)
{
	struct sbx__chan_hello h = {SBX_CHAN_VERSION, SBX_CHAN_RUNS_MAX, SBX_CHAN_WINDOW};
	unsigned char p[SBX_FRAME_HELLO_LEN];

	sbx__chan_hello_encode(p, &h);
	frame(s, SBX_FRAME_HELLO, 0, p, sizeof(p));
}

static void
exit_frame(struct engine_bytes *s, unsigned int id, uint32_t status, int code, uint32_t sig)
{
	struct sbx__frame_exit e = {.status = status, .code = code, .signal = sig};
	unsigned char p[SBX_FRAME_EXIT_LEN];

	sbx__frame_exit_encode(p, &e);
	frame(s, SBX_FRAME_EXIT, id, p, sizeof(p));
}

static void credit(struct engine_bytes *s, unsigned int id, uint32_t n)
{
	unsigned char p[SBX_FRAME_CREDIT_LEN];

	sbx__chan_credit_encode(p, n);
	frame(s, SBX_FRAME_CREDIT, id, p, sizeof(p));
}

/* ===== The scripted init ===== */

enum script {
	S_GOOD,
	S_CREDITS,
	S_SILENT,
	S_HANG_UP,
	S_DIAG_HANG_UP,
	S_CLOSE_CHANNEL,
	S_GARBAGE,
	S_WRONG_ID,
	S_AFTER_EXIT,
	S_CREDIT_UNSENT,
	S_SECOND_HELLO,
	S_BAD_STREAM,
	S_HUGE_MUX,
	S_BAD_EXIT,
	S_HUGE_FRAME,
	S_LONG_ERROR,
	S_EMPTY_STDOUT,
	S_TYPE_OF_HOST,
	S_FLOOD_UNTIL_CANCEL,
};

struct init {
	int fd;
	enum script script;
	pthread_t th;
	struct sbx_init_req req;
	int started, eof;
	unsigned int id;
	char argv0[64], env0[64], cwd[64];
	long long deadline_ms;
	size_t stdin_bytes;
	int violation;
};

static void i_start(void *arg, struct sbx_init_spec *s)
{
	struct init *in = arg;

	in->started = 1;
	in->id = s->id;
	snprintf(in->argv0, sizeof(in->argv0), "%s", s->argv[0]);
	snprintf(in->env0, sizeof(in->env0), "%s", s->env[0] ? s->env[0] : "");
	snprintf(in->cwd, sizeof(in->cwd), "%s", s->cwd);
	in->deadline_ms = s->deadline_ms;
	sbx_init_spec_free(s);
}

static void i_stdin(void *arg, unsigned int id, const unsigned char *p, size_t n)
{
	struct init *in = arg;

	(void)p;
	in->stdin_bytes += n;
	sbx_init_req_consumed(&in->req, id, (uint32_t)n);
}

static void i_eof(void *arg, unsigned int id)
{
	struct init *in = arg;

	(void)id;
	in->eof = 1;
}

static const struct sbx_init_req_ops i_ops = {i_start, i_stdin, i_eof};

static void send_bytes(int fd, const struct engine_bytes *s)
{
	size_t off = 0;

	while (off < s->len) {
		ssize_t w = send(fd, s->b + off, s->len - off, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

/* The scripted answer, once the request (and, for some, its stdin) is in. */
static void answer(struct init *in)
{
	struct engine_bytes s = {0};
	unsigned int id = in->id;
	static unsigned char big[SBX_FRAME_MAX];
	unsigned char junk[16] = {0x5A, 1, 2, 3};

	switch (in->script) {
	case S_GOOD:
		frame(&s, SBX_FRAME_STDOUT, id, "hi\n", 3);
		frame(&s, SBX_FRAME_ERROR, id, "note", 4);
		engine_bytes_mux(&s, 2, "init says\n", 10);
		exit_frame(&s, id, SBX_FRAME_ST_EXITED, 3, 0);
		break;
	case S_CREDITS:
		exit_frame(&s, id, SBX_FRAME_ST_EXITED, 0, 0);
		break;
	case S_SILENT:
		return;
	case S_HANG_UP:
		shutdown(in->fd, SHUT_RDWR);
		return;
	case S_DIAG_HANG_UP:
		/* The sandbox's words on the init's stderr, then it is gone. */
		engine_bytes_mux(&s, 2, "init says\x1b]0;owned\x07\r\nsandboxio: ok secret-value",
				 47);
		send_bytes(in->fd, &s);
		free(s.b);
		shutdown(in->fd, SHUT_RDWR);
		return;
	case S_CLOSE_CHANNEL:
		frame(&s, SBX_FRAME_ERROR, 0, "closing", 7);
		break;
	case S_GARBAGE:
		engine_bytes_mux(&s, 1, junk, sizeof(junk));
		break;
	case S_WRONG_ID:
		frame(&s, SBX_FRAME_STDOUT, id + 1, "x", 1);
		break;
	case S_AFTER_EXIT:
		exit_frame(&s, id, SBX_FRAME_ST_EXITED, 0, 0);
		frame(&s, SBX_FRAME_STDOUT, id, "late", 4);
		break;
	case S_CREDIT_UNSENT:
		credit(&s, id, 100);
		break;
	case S_SECOND_HELLO:
		hello(&s);
		break;
	case S_BAD_STREAM:
		engine_bytes_mux(&s, 3, "x", 1);
		break;
	case S_HUGE_MUX: {
		unsigned char h[8] = {1, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff};

		engine_bytes_raw(&s, h, sizeof(h));
		break;
	}
	case S_BAD_EXIT:
		exit_frame(&s, id, SBX_FRAME_ST_SIGNALED, 137, 0);
		break;
	case S_HUGE_FRAME: {
		unsigned char h[SBX_FRAME_HDR];

		sbx__chan_header(h, SBX_FRAME_STDOUT, id, 0);
		h[4] = 0x01; /* 16 MiB */
		engine_bytes_mux(&s, 1, h, sizeof(h));
		break;
	}
	case S_LONG_ERROR: {
		unsigned char h[SBX_FRAME_HDR];

		sbx__chan_header(h, SBX_FRAME_ERROR, id, SBX_CHAN_ERROR_MAX + 1);
		engine_bytes_mux(&s, 1, h, sizeof(h));
		break;
	}
	case S_EMPTY_STDOUT:
		frame(&s, SBX_FRAME_STDOUT, id, NULL, 0);
		break;
	case S_TYPE_OF_HOST:
		frame(&s, SBX_FRAME_STDIN_EOF, id, NULL, 0);
		break;
	case S_FLOOD_UNTIL_CANCEL:
		for (int i = 0; i < 4; i++)
			frame(&s, SBX_FRAME_STDOUT, id, big, 8192);
		exit_frame(&s, id, SBX_FRAME_ST_EXITED, 0, 0);
		break;
	}
	send_bytes(in->fd, &s);
	free(s.b);
}

static void *init_main(void *arg)
{
	struct init *in = arg;
	unsigned char buf[65536];
	int answered = 0;

	for (;;) {
		ssize_t n = recv(in->fd, buf, sizeof(buf), 0);

		if (n <= 0)
			break;
		if (sbx_init_req_feed(&in->req, buf, (size_t)n) != 0) {
			in->violation = 1;
			break;
		}
		/* Stdin flows under credit: give it back as it comes. */
		if (in->script == S_CREDITS && in->stdin_bytes) {
			struct engine_bytes s = {0};
			size_t left = in->stdin_bytes;

			while (left) {
				uint32_t k =
					left > SBX_CHAN_WINDOW ? SBX_CHAN_WINDOW : (uint32_t)left;
				credit(&s, in->id, k);
				left -= k;
			}
			in->stdin_bytes = 0;
			send_bytes(in->fd, &s);
			free(s.b);
		}
		if (in->started && in->eof && !answered) {
			answered = 1;
			answer(in);
		}
	}
	return NULL;
}

/* ===== Fixture: a fake Engine, a box whose channel is a socketpair ===== */

static const struct fake_route routes[] = {
	{"POST", "/containers/", 204, ""},
};

struct fx {
	struct fake_engine *fe;
	struct sbx__docker d;
	struct sbx__docker_box b;
	struct init in;
	int sv[2];
	struct engine_bytes out, err;
	int cancel_after;
	int ended;
};

static int sink(void *arg, int stream, const void *p, size_t n)
{
	struct fx *f = arg;

	engine_bytes_raw(stream == SBX_STREAM_STDOUT ? &f->out : &f->err, p, n);
	if (f->cancel_after && f->out.len >= (size_t)f->cancel_after)
		return 1;
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct engine_bytes s = {0};

	assert_non_null(f);
	f->fe = fake_engine_start(routes, 1);
	assert_non_null(f->fe);
	assert_int_equal(sbx__http_init(&f->d.http, fake_engine_socket(f->fe), 5000), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->sv), 0);
	f->b.id = strdup("fakebox");
	assert_int_equal(sbx__chan_from_fd(f->sv[0], &f->b.chan), 0);
	hello(&s);
	send_bytes(f->sv[1], &s);
	free(s.b);
	assert_int_equal(sbx__chan_ready(f->b.chan, sbx__mono_ms() + 5000), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sbx__chan_free(f->b.chan);
	close(f->sv[1]);
	if (f->in.th)
		pthread_join(f->in.th, NULL);
	sbx_init_req_done(&f->in.req);
	sbx__http_done(&f->d.http);
	fake_engine_stop(f->fe);
	free(f->b.id);
	free(f->out.b);
	free(f->err.b);
	free(f);
	return 0;
}

static void script(struct fx *f, enum script sc)
{
	f->in = (struct init){.fd = f->sv[1], .script = sc};
	sbx_init_req_init(&f->in.req, &i_ops, &f->in);
	assert_int_equal(pthread_create(&f->in.th, NULL, init_main, &f->in), 0);
}

static int run(struct fx *f, sbx_result *res, const void *in, size_t in_len, uint64_t tmo)
{
	static const char *const argv[] = {"prog", "arg", NULL};
	static const char *const env[] = {"TOKEN=secret-value", NULL};
	struct sbx__run_req req = {
		.argv = argv,
		.env = env,
		.workdir = "/work",
		.stdin_data = in,
		.stdin_len = in_len,
		.timeout_ms = tmo,
		.sink = sink,
		.sink_arg = f,
		.ended = &f->ended,
	};

	memset(res, 0, sizeof(*res));
	sbx__error_clear();
	return sbx__chan_run(&f->d, &f->b, &req, res);
}

static int kills(struct fx *f)
{
	return fake_engine_count(f->fe, "POST", "/containers/fakebox/kill");
}

/* ===== Runs ===== */

static void test_chan_host__good_run(void **state)
{
	struct fx *f = *state;
	sbx_result res;

	script(f, S_GOOD);
	assert_int_equal(run(f, &res, NULL, 0, 10000), 0);
	assert_int_equal(res.path, SBX_RUN_PATH_CHANNEL);
	assert_int_equal(res.status, SBX_RUN_EXITED);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(f->out.len, 3);
	assert_memory_equal(f->out.b, "hi\n", 3);
	assert_int_equal(f->err.len, 4);
	/* What the host sent is what the init's parser took. */
	assert_false(f->in.violation);
	assert_string_equal(f->in.argv0, "prog");
	assert_string_equal(f->in.env0, "TOKEN=secret-value");
	assert_string_equal(f->in.cwd, "/work");
	assert_int_equal(f->in.deadline_ms, 10000);
	assert_int_equal(kills(f), 0);
	assert_int_equal(f->ended, 0);
	assert_false(f->b.dead);
}

static void test_chan_host__stdin_under_credit(void **state)
{
	struct fx *f = *state;
	static unsigned char big[700000];
	sbx_result res;

	script(f, S_CREDITS);
	assert_int_equal(run(f, &res, big, sizeof(big), 20000), 0);
	assert_int_equal(res.exit_code, 0);
	/* The init's parser holds the host to the window: no violation. */
	assert_false(f->in.violation);
	assert_int_equal(kills(f), 0);
}

/* The init does not answer: the host's own deadline ends the sandbox. */
static void test_chan_host__silent_init_hits_host_deadline(void **state)
{
	struct fx *f = *state;
	uint64_t t0 = sbx__mono_ms();
	sbx_result res;

	script(f, S_SILENT);
	assert_int_equal(run(f, &res, NULL, 0, 100), 0);
	assert_true(sbx__mono_ms() - t0 >= 100 + SBX_RUN_GRACE_MS);
	assert_int_equal(res.status, SBX_RUN_TIMEOUT);
	assert_int_equal(res.exit_code, 124);
	assert_int_equal(kills(f), 1);
	assert_int_equal(f->ended, SBX__ENDED_TIMEOUT);
	assert_true(f->b.dead);
}

/* The connection drops after the request went out: that run fails, no rerun. */
static void test_chan_host__lost_mid_run(void **state)
{
	struct fx *f = *state;
	sbx_result res;

	script(f, S_HANG_UP);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "lost"));
	assert_int_equal(kills(f), 0);
	/* The channel is given up: the next run is for docker exec. */
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_CHAN_FALLBACK);
}

/* Lost with words on the init's stderr: quoted in the message, the secret
 * redacted, no control byte of the sandbox's left (util/error.c). */
static void test_chan_host__lost_quotes_the_init(void **state)
{
	struct fx *f = *state;
	const char *m;
	sbx_result res;
	int id = sbx__redact_register("secret-value", 12);

	assert_true(id > 0);
	script(f, S_DIAG_HANG_UP);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_EENGINE);
	m = sbx_error_last()->message;
	assert_non_null(strstr(m, "lost"));
	for (const unsigned char *p = (const unsigned char *)m; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			fail_msg("byte 0x%02x in the message: %s", *p, m);
	assert_non_null(
		strstr(m, ": init says\\x1b]0;owned\\x07\\x0d\\x0asandboxio: ok " SBX_REDACTED));
	sbx__redact_unregister(id);
}

/* The connection is gone before a run: docker exec takes it, nothing was sent. */
static void test_chan_host__gone_before_run_falls_back(void **state)
{
	struct fx *f = *state;
	sbx_result res;

	shutdown(f->sv[1], SHUT_RDWR);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_CHAN_FALLBACK);
	assert_int_equal(kills(f), 0);
}

static void test_chan_host__init_closes_channel(void **state)
{
	struct fx *f = *state;
	sbx_result res;

	script(f, S_CLOSE_CHANNEL);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "closing"));
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_CHAN_FALLBACK);
}

static void test_chan_host__cancel_kills(void **state)
{
	struct fx *f = *state;
	sbx_result res;

	f->cancel_after = 1;
	script(f, S_FLOOD_UNTIL_CANCEL);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_ECANCELED);
	assert_int_equal(kills(f), 1);
	assert_int_equal(f->ended, SBX__ENDED_KILLED);
}

/* Every way of breaking the protocol: an error, the sandbox killed, the channel given up. */
static void fails_closed(void **state, enum script sc)
{
	struct fx *f = *state;
	sbx_result res;

	script(f, sc);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_EENGINE);
	assert_non_null(strstr(sbx_error_last()->message, "broke the run protocol"));
	assert_int_equal(kills(f), 1);
	assert_int_equal(f->ended, SBX__ENDED_ERROR);
	assert_true(f->b.dead);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_CHAN_FALLBACK);
}

static void test_chan_host__garbage(void **state)
{
	fails_closed(state, S_GARBAGE);
}

static void test_chan_host__wrong_run_id(void **state)
{
	fails_closed(state, S_WRONG_ID);
}

static void test_chan_host__frame_after_exit(void **state)
{
	fails_closed(state, S_AFTER_EXIT);
}

static void test_chan_host__credit_never_sent(void **state)
{
	fails_closed(state, S_CREDIT_UNSENT);
}

static void test_chan_host__second_hello(void **state)
{
	fails_closed(state, S_SECOND_HELLO);
}

static void test_chan_host__bad_engine_stream(void **state)
{
	fails_closed(state, S_BAD_STREAM);
}

static void test_chan_host__huge_engine_frame(void **state)
{
	fails_closed(state, S_HUGE_MUX);
}

static void test_chan_host__impossible_exit(void **state)
{
	fails_closed(state, S_BAD_EXIT);
}

static void test_chan_host__oversized_frame(void **state)
{
	fails_closed(state, S_HUGE_FRAME);
}

static void test_chan_host__oversized_error(void **state)
{
	fails_closed(state, S_LONG_ERROR);
}

static void test_chan_host__empty_data_frame(void **state)
{
	fails_closed(state, S_EMPTY_STDOUT);
}

static void test_chan_host__host_frame_type(void **state)
{
	fails_closed(state, S_TYPE_OF_HOST);
}

/* Something said between runs, on the init's stdout, is a violation too. */
static void test_chan_host__unsolicited_between_runs(void **state)
{
	struct fx *f = *state;
	struct engine_bytes s = {0};
	sbx_result res;
	struct pollfd pfd = {.fd = f->sv[0], .events = POLLIN};

	frame(&s, SBX_FRAME_STDOUT, 1, "x", 1);
	send_bytes(f->sv[1], &s);
	free(s.b);
	/* The stray bytes wait on the host's end before the run (hang guard 120 s). */
	assert_int_equal(poll(&pfd, 1, 120000), 1);
	script(f, S_GOOD);
	assert_int_equal(run(f, &res, NULL, 0, 10000), SBX_EENGINE);
	assert_int_equal(kills(f), 1);
	assert_false(f->in.started);
}

/* ===== The reader alone ===== */

static int rx_sink(void *arg, int stream, const void *p, size_t n)
{
	(void)arg;
	(void)stream;
	(void)p;
	(void)n;
	return 0;
}

static void test_chan_host__reader_hello_first(void **state)
{
	struct sbx__chan_rx rx;
	struct engine_bytes s = {0};

	(void)state;
	sbx__chan_rx_init(&rx);
	frame(&s, SBX_FRAME_STDOUT, 1, "x", 1);
	assert_int_equal(sbx__chan_rx_feed(&rx, s.b, s.len), SBX_CHAN_RX_VIOLATION);
	/* Sticky. */
	assert_int_equal(sbx__chan_rx_feed(&rx, s.b, s.len), SBX_CHAN_RX_VIOLATION);
	sbx__chan_rx_done(&rx);
	free(s.b);
}

static void test_chan_host__reader_bytewise(void **state)
{
	struct sbx__run_req req = {.sink = rx_sink};
	struct sbx__chan_run run = {.id = 9, .req = &req};
	struct sbx__chan_rx rx;
	struct engine_bytes s = {0};

	(void)state;
	sbx__chan_rx_init(&rx);
	rx.run = &run;
	hello(&s);
	engine_bytes_mux(&s, 2, "diag", 4);
	frame(&s, SBX_FRAME_STDOUT, 9, "abc", 3);
	exit_frame(&s, 9, SBX_FRAME_ST_SIGNALED, 137, 9);
	for (size_t i = 0; i < s.len; i++)
		assert_int_equal(sbx__chan_rx_feed(&rx, s.b + i, 1), SBX_CHAN_RX_OK);
	assert_true(run.have_exit);
	assert_int_equal(run.exit.signal, 9);
	assert_int_equal(rx.diag.len, 4);
	sbx__chan_rx_done(&rx);
	free(s.b);
}

static void test_chan_host__diagnostics_bounded(void **state)
{
	static unsigned char lots[100000];
	struct sbx__chan_rx rx;
	struct engine_bytes s = {0};

	(void)state;
	sbx__chan_rx_init(&rx);
	engine_bytes_mux(&s, 2, lots, sizeof(lots));
	assert_int_equal(sbx__chan_rx_feed(&rx, s.b, s.len), SBX_CHAN_RX_OK);
	assert_int_equal(rx.diag.len, SBX_CHAN_DIAG_MAX);
	sbx__chan_rx_done(&rx);
	free(s.b);
}

/* A request past the channel's bounds goes to docker exec, untouched. */
static void test_chan_host__too_big_for_channel(void **state)
{
	static const char *argv[SBX_CHAN_ARGC_MAX + 2];
	struct sbx__run_req req = {.argv = argv, .workdir = "/", .timeout_ms = 1000};
	unsigned char *w = NULL;
	size_t len = 0, alloc = 0;

	(void)state;
	for (size_t i = 0; i < SBX_CHAN_ARGC_MAX + 1; i++)
		argv[i] = "a";
	assert_int_equal(sbx__chan_encode_request(&w, &len, &alloc, 1, &req), 1);
	assert_null(w);
	argv[SBX_CHAN_ARGC_MAX] = NULL;
	assert_int_equal(sbx__chan_encode_request(&w, &len, &alloc, 1, &req), 0);
	assert_non_null(w);
	sbx__secmem_free(w, alloc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_chan_host__good_run),
		T(test_chan_host__stdin_under_credit),
		T(test_chan_host__silent_init_hits_host_deadline),
		T(test_chan_host__lost_mid_run),
		T(test_chan_host__lost_quotes_the_init),
		T(test_chan_host__gone_before_run_falls_back),
		T(test_chan_host__init_closes_channel),
		T(test_chan_host__cancel_kills),
		T(test_chan_host__garbage),
		T(test_chan_host__wrong_run_id),
		T(test_chan_host__frame_after_exit),
		T(test_chan_host__credit_never_sent),
		T(test_chan_host__second_hello),
		T(test_chan_host__bad_engine_stream),
		T(test_chan_host__huge_engine_frame),
		T(test_chan_host__impossible_exit),
		T(test_chan_host__oversized_frame),
		T(test_chan_host__oversized_error),
		T(test_chan_host__empty_data_frame),
		T(test_chan_host__host_frame_type),
		T(test_chan_host__unsolicited_between_runs),
#undef T
		cmocka_unit_test(test_chan_host__reader_hello_first),
		cmocka_unit_test(test_chan_host__reader_bytewise),
		cmocka_unit_test(test_chan_host__diagnostics_bounded),
		cmocka_unit_test(test_chan_host__too_big_for_channel),
	};

	return cmocka_run_group_tests_name("engine channel, host side", tests, NULL, NULL);
}
