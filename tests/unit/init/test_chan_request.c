/*
 * tests/unit/init/test_chan_request.c: unit tests of init/request.c, the
 * init's parser of the host's run requests, and of the channel's frame
 * helpers in util/frame.c.
 *
 * The parser is driven with byte streams built here; a scripted table
 * stands in for PID 1's runs. Every rule that makes a request a violation
 * has a case, and so does each bound (runs in flight, window, spec size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "init/init.h"
#include "util/frame.h"

struct seen {
	int starts;
	unsigned int id[32];
	char cwd[64];
	char argv[8][64];
	int argc;
	char env[8][64];
	int envc;
	long long deadline_ms;
	size_t stdin_bytes;
	unsigned int stdin_id;
	int eofs;
	int pty;
	unsigned int rows, cols;
	int resizes;
	unsigned int rs_id, rs_rows, rs_cols;
	int deadlines;
	uint64_t deadline_to;
};

static void on_start(void *arg, struct sbx_init_spec *s)
{
	struct seen *w = arg;

	if (w->starts < 32)
		w->id[w->starts] = s->id;
	w->starts++;
	snprintf(w->cwd, sizeof(w->cwd), "%s", s->cwd);
	for (w->argc = 0; s->argv[w->argc] && w->argc < 8; w->argc++)
		snprintf(w->argv[w->argc], sizeof(w->argv[0]), "%s", s->argv[w->argc]);
	for (w->envc = 0; s->env[w->envc] && w->envc < 8; w->envc++)
		snprintf(w->env[w->envc], sizeof(w->env[0]), "%s", s->env[w->envc]);
	w->deadline_ms = s->deadline_ms;
	w->pty = s->pty;
	w->rows = s->rows;
	w->cols = s->cols;
	sbx_init_spec_free(s);
}

static void on_stdin(void *arg, unsigned int id, const unsigned char *p, size_t len)
{
	struct seen *w = arg;

	(void)p;
	w->stdin_bytes += len;
	w->stdin_id = id;
}

static void on_eof(void *arg, unsigned int id)
{
	struct seen *w = arg;

	(void)id;
	w->eofs++;
}

static void on_resize(void *arg, unsigned int id, uint16_t rows, uint16_t cols)
{
	struct seen *w = arg;

	w->resizes++;
	w->rs_id = id;
	w->rs_rows = rows;
	w->rs_cols = cols;
}

static void on_deadline(void *arg, uint64_t unix_s)
{
	struct seen *w = arg;

	w->deadlines++;
	w->deadline_to = unix_s;
}

static const struct sbx_init_req_ops ops = {on_start, on_stdin, on_eof, on_resize, on_deadline};

struct stream {
	unsigned char *b;
	size_t len, cap;
};

static void put_raw(struct stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->b = realloc(s->b, s->cap);
		assert_non_null(s->b);
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static void put(struct stream *s, int type, unsigned int id, const void *p, size_t n)
{
	unsigned char h[SBX_FRAME_HDR];

	sbx__chan_header(h, type, id, (uint32_t)n);
	put_raw(s, h, sizeof(h));
	if (n)
		put_raw(s, p, n);
}

static void put_open(struct stream *s,
		     unsigned int id,
		     uint32_t argc,
		     uint32_t envc,
		     uint32_t len,
		     uint64_t deadline)
{
	struct sbx__chan_open o = {0, argc, envc, len, deadline};
	unsigned char p[SBX_FRAME_OPEN_LEN];

	sbx__chan_open_encode(p, &o);
	put(s, SBX_FRAME_OPEN, id, p, sizeof(p));
}

/* OPEN and one SPEC for "/tmp", argv, env. */
static void
put_request(struct stream *s, unsigned int id, const char *const *argv, const char *const *env)
{
	struct stream spec = {0};
	uint32_t argc = 0, envc = 0;

	put_raw(&spec, "/tmp", 5);
	for (; argv[argc]; argc++)
		put_raw(&spec, argv[argc], strlen(argv[argc]) + 1);
	for (; env && env[envc]; envc++)
		put_raw(&spec, env[envc], strlen(env[envc]) + 1);
	put_open(s, id, argc, envc, (uint32_t)spec.len, 5000);
	put(s, SBX_FRAME_SPEC, id, spec.b, spec.len);
	free(spec.b);
}

static const char *const argv_echo[] = {"echo", "a b", "", NULL};

/* OPEN with a terminal of rows x cols and one SPEC for "/tmp", "sh". */
static void put_pty_request(struct stream *s, unsigned int id, uint16_t rows, uint16_t cols)
{
	struct sbx__chan_open o = {SBX_CHAN_OPEN_PTY, 1, 0, 8, 5000, rows, cols};
	unsigned char p[SBX_FRAME_OPEN_PTY_LEN];

	assert_int_equal(sbx__chan_open_encode(p, &o), SBX_FRAME_OPEN_PTY_LEN);
	put(s, SBX_FRAME_OPEN, id, p, sizeof(p));
	put(s, SBX_FRAME_SPEC, id, "/tmp\0sh", 8);
}

static void put_resize(struct stream *s, unsigned int id, uint16_t rows, uint16_t cols)
{
	unsigned char p[SBX_FRAME_RESIZE_LEN];

	sbx__chan_resize_encode(p, rows, cols);
	put(s, SBX_FRAME_RESIZE, id, p, sizeof(p));
}
static const char *const env_one[] = {"SECRET=s3", NULL};

struct fx {
	struct sbx_init_req r;
	struct seen w;
	struct stream s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	sbx_init_req_init(&f->r, &ops, &f->w);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sbx_init_req_done(&f->r);
	free(f->s.b);
	free(f);
	return 0;
}

static int feed(struct fx *f)
{
	int rc = sbx_init_req_feed(&f->r, f->s.b, f->s.len);

	f->s.len = 0;
	return rc;
}

/* Feeds and expects a violation whose message holds word. */
static void expect_violation(struct fx *f, const char *word)
{
	assert_int_equal(feed(f), -1);
	assert_non_null(f->r.why);
	if (!strstr(f->r.why, word))
		fail_msg("violation '%s' does not say '%s'", f->r.why, word);
	/* Sticky: nothing is accepted afterwards. */
	put_request(&f->s, 999, argv_echo, NULL);
	assert_int_equal(feed(f), -1);
}

static void test_chan_request__valid_request_starts(void **state)
{
	struct fx *f = *state;

	put_request(&f->s, 7, argv_echo, env_one);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.starts, 1);
	assert_int_equal(f->w.id[0], 7);
	assert_string_equal(f->w.cwd, "/tmp");
	assert_int_equal(f->w.argc, 3);
	assert_string_equal(f->w.argv[1], "a b");
	assert_string_equal(f->w.argv[2], "");
	assert_int_equal(f->w.envc, 1);
	assert_string_equal(f->w.env[0], "SECRET=s3");
	assert_int_equal(f->w.deadline_ms, 5000);
}

static void test_chan_request__bytewise_and_split_spec(void **state)
{
	struct fx *f = *state;
	static const char spec[] = "/w\0prog\0arg\0A=1";
	unsigned char *all;
	size_t n;

	put_open(&f->s, 3, 2, 1, sizeof(spec), 100);
	put(&f->s, SBX_FRAME_SPEC, 3, spec, 5);
	put(&f->s, SBX_FRAME_SPEC, 3, spec + 5, sizeof(spec) - 5);
	n = f->s.len;
	all = malloc(n);
	memcpy(all, f->s.b, n);
	f->s.len = 0;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sbx_init_req_feed(&f->r, all + i, 1), 0);
	free(all);
	assert_int_equal(f->w.starts, 1);
	assert_string_equal(f->w.cwd, "/w");
	assert_string_equal(f->w.argv[1], "arg");
	assert_string_equal(f->w.env[0], "A=1");
}

static void test_chan_request__stdin_window_and_eof(void **state)
{
	struct fx *f = *state;
	static unsigned char chunk[SBX_FRAME_MAX];

	put_request(&f->s, 1, argv_echo, NULL);
	put(&f->s, SBX_FRAME_STDIN, 1, chunk, sizeof(chunk));
	put(&f->s, SBX_FRAME_STDIN, 1, chunk, SBX_CHAN_WINDOW - sizeof(chunk));
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.stdin_bytes, SBX_CHAN_WINDOW);
	/* Consumed bytes leave the window, so more may come. */
	sbx_init_req_consumed(&f->r, 1, 1000);
	put(&f->s, SBX_FRAME_STDIN, 1, chunk, 1000);
	put(&f->s, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.eofs, 1);
}

static void test_chan_request__stdin_past_window(void **state)
{
	struct fx *f = *state;
	static unsigned char chunk[SBX_FRAME_MAX];

	put_request(&f->s, 1, argv_echo, NULL);
	put(&f->s, SBX_FRAME_STDIN, 1, chunk, sizeof(chunk));
	put(&f->s, SBX_FRAME_STDIN, 1, chunk, sizeof(chunk));
	put(&f->s, SBX_FRAME_STDIN, 1, chunk, 1);
	expect_violation(f, "window");
}

static void test_chan_request__finished_run_drops_input_and_frees_at_eof(void **state)
{
	struct fx *f = *state;

	put_request(&f->s, 5, argv_echo, NULL);
	assert_int_equal(feed(f), 0);
	sbx_init_req_finished(&f->r, 5);
	put(&f->s, SBX_FRAME_STDIN, 5, "late", 4);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.stdin_bytes, 0);
	/* The id is still taken until its EOF... */
	put_request(&f->s, 5, argv_echo, NULL);
	expect_violation(f, "reuses");
}

static void test_chan_request__id_free_after_finish_and_eof(void **state)
{
	struct fx *f = *state;

	put_request(&f->s, 5, argv_echo, NULL);
	put(&f->s, SBX_FRAME_STDIN_EOF, 5, NULL, 0);
	assert_int_equal(feed(f), 0);
	sbx_init_req_finished(&f->r, 5);
	put_request(&f->s, 5, argv_echo, NULL);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.starts, 2);
}

static void test_chan_request__runs_in_flight_bounded(void **state)
{
	struct fx *f = *state;

	for (unsigned int i = 1; i <= SBX_CHAN_RUNS_MAX; i++)
		put_request(&f->s, i, argv_echo, NULL);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.starts, SBX_CHAN_RUNS_MAX);
	put_request(&f->s, SBX_CHAN_RUNS_MAX + 1, argv_echo, NULL);
	expect_violation(f, "most runs");
}

static void test_chan_request__spec_without_open(void **state)
{
	struct fx *f = *state;

	put(&f->s, SBX_FRAME_SPEC, 1, "/\0x", 4);
	expect_violation(f, "follow");
}

static void test_chan_request__frame_between_open_and_spec(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 8, 100);
	put(&f->s, SBX_FRAME_STDIN_EOF, 2, NULL, 0);
	expect_violation(f, "between OPEN");
}

static void test_chan_request__spec_of_another_id(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 4, 100);
	put(&f->s, SBX_FRAME_SPEC, 2, "/\0x", 4);
	expect_violation(f, "follow");
}

static void test_chan_request__spec_longer_than_announced(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 4, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "/\0xy\0", 5);
	expect_violation(f, "longer");
}

static void test_chan_request__string_counts_must_match(void **state)
{
	struct fx *f = *state;

	/* Three strings where OPEN said two. */
	put_open(&f->s, 1, 1, 0, 7, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "/\0x\0y\0", 7);
	expect_violation(f, "more strings");
}

static void test_chan_request__fewer_strings(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 2, 1, 7, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "/\0xyzw\0", 7);
	expect_violation(f, "fewer strings");
}

static void test_chan_request__no_final_nul(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 4, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "/\0xy", 4);
	expect_violation(f, "NUL");
}

static void test_chan_request__relative_cwd(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 6, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "tmp\0x", 6);
	expect_violation(f, "absolute");
}

static void test_chan_request__empty_program(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 3, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "/\0", 3);
	expect_violation(f, "program name");
}

static void test_chan_request__env_needs_name(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 1, 7, 100);
	put(&f->s, SBX_FRAME_SPEC, 1, "/\0x\0=v", 7);
	expect_violation(f, "NAME=VALUE");
}

static void test_chan_request__malformed_open(void **state)
{
	static const struct sbx__chan_open bad[] = {
		{1, 1, 0, 8, 100},			    /* flags */
		{0, 0, 0, 8, 100},			    /* no program */
		{0, SBX_CHAN_ARGC_MAX + 1, 0, 100000, 100}, /* too many args */
		{0, 1, SBX_CHAN_ENVC_MAX + 1, 100000, 100}, /* too many env entries */
		{0, 3, 3, 6, 100},			    /* spec too short for its strings */
		{0, 1, 0, SBX_CHAN_SPEC_MAX + 1, 100},	    /* spec too long */
		{0, 1, 0, 8, 0},			    /* no deadline */
		{0, 1, 0, 8, SBX_CHAN_DEADLINE_MS_MAX + 1}, /* deadline too far */
		{2, 1, 0, 8, 100},			    /* an unknown flag */
		{3, 1, 0, 8, 100, 24, 80},		    /* an unknown flag beside PTY */
		{SBX_CHAN_OPEN_PTY, 1, 0, 8, 100, 0, 80},   /* a terminal without rows */
		{SBX_CHAN_OPEN_PTY, 1, 0, 8, 100, 24, 0},   /* ... or columns */
		{SBX_CHAN_OPEN_PTY, 1, 0, 8, 100, SBX_CHAN_WINSZ_MAX + 1, 80}, /* too tall */
		{SBX_CHAN_OPEN_PTY, 1, 0, 8, 100, 24, SBX_CHAN_WINSZ_MAX + 1}, /* too wide */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fx f = {0};
		unsigned char p[SBX_FRAME_OPEN_PTY_LEN];
		size_t n;

		sbx_init_req_init(&f.r, &ops, &f.w);
		n = sbx__chan_open_encode(p, &bad[i]);
		assert_int_equal(sbx__chan_open_decode(NULL, p, n), -1);
		put(&f.s, SBX_FRAME_OPEN, 1, p, n);
		assert_int_equal(feed(&f), -1);
		assert_int_equal(f.w.starts, 0);
		sbx_init_req_done(&f.r);
		free(f.s.b);
	}
}

static void test_chan_request__pty_open_and_resize(void **state)
{
	struct fx *f = *state;

	put_pty_request(&f->s, 3, 30, 100);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.starts, 1);
	assert_int_equal(f->w.pty, 1);
	assert_int_equal(f->w.rows, 30);
	assert_int_equal(f->w.cols, 100);
	put_resize(&f->s, 3, 40, 120);
	put_resize(&f->s, 3, 1, SBX_CHAN_WINSZ_MAX);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.resizes, 2);
	assert_int_equal(f->w.rs_id, 3);
	assert_int_equal(f->w.rs_rows, 1);
	assert_int_equal(f->w.rs_cols, SBX_CHAN_WINSZ_MAX);
	/* Also after its stdin ended: the terminal is still there. */
	put(&f->s, SBX_FRAME_STDIN_EOF, 3, NULL, 0);
	put_resize(&f->s, 3, 50, 60);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.resizes, 3);
	/* A finished run's resize goes nowhere; after its EOF the id is free. */
	put_pty_request(&f->s, 4, 24, 80);
	assert_int_equal(feed(f), 0);
	sbx_init_req_finished(&f->r, 4);
	put_resize(&f->s, 4, 10, 10);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.resizes, 3);
}

static void test_chan_request__plain_open_has_no_terminal(void **state)
{
	struct fx *f = *state;

	put_request(&f->s, 2, argv_echo, NULL);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.pty, 0);
	put_resize(&f->s, 2, 24, 80);
	expect_violation(f, "without a terminal");
	assert_int_equal(f->w.resizes, 0);
}

static void test_chan_request__resize_for_unknown_run(void **state)
{
	struct fx *f = *state;

	put_resize(&f->s, 9, 24, 80);
	expect_violation(f, "not open");
}

static void test_chan_request__resize_between_open_and_spec(void **state)
{
	struct fx *f = *state;
	struct sbx__chan_open o = {SBX_CHAN_OPEN_PTY, 1, 0, 8, 5000, 24, 80};
	unsigned char p[SBX_FRAME_OPEN_PTY_LEN];

	sbx__chan_open_encode(p, &o);
	put(&f->s, SBX_FRAME_OPEN, 1, p, sizeof(p));
	put_resize(&f->s, 1, 24, 80);
	expect_violation(f, "between OPEN");
}

static void test_chan_request__malformed_resize(void **state)
{
	/* rows 0, cols 0, rows too many, cols too many, 3 and 5 bytes */
	static const unsigned char bad[][SBX_FRAME_HDR + 5] = {
		{0xA5, SBX_FRAME_RESIZE, 0, 1, 0, 0, 0, 4, 0, 0, 0, 80},
		{0xA5, SBX_FRAME_RESIZE, 0, 1, 0, 0, 0, 4, 0, 24, 0, 0},
		{0xA5, SBX_FRAME_RESIZE, 0, 1, 0, 0, 0, 4, 0x10, 0x01, 0, 80},
		{0xA5, SBX_FRAME_RESIZE, 0, 1, 0, 0, 0, 4, 0, 24, 0x10, 0x01},
		{0xA5, SBX_FRAME_RESIZE, 0, 1, 0, 0, 0, 3, 0, 24, 0},
		{0xA5, SBX_FRAME_RESIZE, 0, 1, 0, 0, 0, 5, 0, 24, 0, 80, 0},
		{0xA5, SBX_FRAME_RESIZE, 0, 0, 0, 0, 0, 4, 0, 24, 0, 80},
	};
	static const size_t len[] = {12, 12, 12, 12, 11, 13, 12};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fx f = {0};

		sbx_init_req_init(&f.r, &ops, &f.w);
		put_pty_request(&f.s, 1, 24, 80);
		assert_int_equal(feed(&f), 0);
		put_raw(&f.s, bad[i], len[i]);
		assert_int_equal(feed(&f), -1);
		assert_int_equal(f.w.resizes, 0);
		sbx_init_req_done(&f.r);
		free(f.s.b);
	}
}

static void test_chan_request__open_length_follows_flags(void **state)
{
	struct sbx__chan_open o = {SBX_CHAN_OPEN_PTY, 1, 0, 8, 100, 24, 80};
	unsigned char p[SBX_FRAME_OPEN_PTY_LEN];

	(void)state;
	assert_int_equal(sbx__chan_open_encode(p, &o), SBX_FRAME_OPEN_PTY_LEN);
	assert_int_equal(sbx__chan_open_decode(NULL, p, SBX_FRAME_OPEN_PTY_LEN), 0);
	/* The flag without the window size, and the size without the flag. */
	assert_int_equal(sbx__chan_open_decode(NULL, p, SBX_FRAME_OPEN_LEN), -1);
	o.flags = 0;
	assert_int_equal(sbx__chan_open_encode(p, &o), SBX_FRAME_OPEN_LEN);
	assert_int_equal(sbx__chan_open_decode(NULL, p, SBX_FRAME_OPEN_PTY_LEN), -1);
	assert_int_equal(sbx__chan_open_decode(NULL, p, SBX_FRAME_OPEN_LEN), 0);
}

static void test_chan_request__malformed_frames(void **state)
{
	/* id 0, a reply type, an unknown type, bad magic, EOF with a payload, huge length */
	static const unsigned char bad[][SBX_FRAME_HDR + 1] = {
		{0xA5, SBX_FRAME_STDIN_EOF, 0, 0, 0, 0, 0, 0},
		{0xA5, SBX_FRAME_STDOUT, 0, 1, 0, 0, 0, 1, 'x'},
		{0xA5, 0x77, 0, 1, 0, 0, 0, 0},
		{0x5A, SBX_FRAME_STDIN_EOF, 0, 1, 0, 0, 0, 0},
		{0xA5, SBX_FRAME_STDIN_EOF, 0, 1, 0, 0, 0, 1, 'x'},
		{0xA5, SBX_FRAME_STDIN, 0, 1, 0, 1, 0, 1, 'x'},
		{0xA5, SBX_FRAME_EXIT, 0, 1, 0, 0, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fx f = {0};

		sbx_init_req_init(&f.r, &ops, &f.w);
		put_raw(&f.s, bad[i], sizeof(bad[i]));
		assert_int_equal(feed(&f), -1);
		assert_non_null(f.r.why);
		sbx_init_req_done(&f.r);
		free(f.s.b);
	}
}

static void test_chan_request__stdin_for_unknown_run(void **state)
{
	struct fx *f = *state;

	put(&f->s, SBX_FRAME_STDIN, 4, "x", 1);
	expect_violation(f, "not open");
}

static void test_chan_request__stdin_after_eof(void **state)
{
	struct fx *f = *state;

	put_request(&f->s, 1, argv_echo, NULL);
	put(&f->s, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	put(&f->s, SBX_FRAME_STDIN, 1, "x", 1);
	expect_violation(f, "after STDIN_EOF");
}

static void test_chan_request__double_eof(void **state)
{
	struct fx *f = *state;

	put_request(&f->s, 1, argv_echo, NULL);
	put(&f->s, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	put(&f->s, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	expect_violation(f, "second STDIN_EOF");
}

static void test_chan_request__open_while_pending(void **state)
{
	struct fx *f = *state;

	put_open(&f->s, 1, 1, 0, 4, 100);
	put_open(&f->s, 2, 1, 0, 4, 100);
	expect_violation(f, "between OPEN");
}

static void put_deadline(struct stream *s, unsigned int id, uint64_t unix_s)
{
	unsigned char p[SBX_FRAME_DEADLINE_LEN];

	sbx__chan_deadline_encode(p, unix_s);
	put(s, SBX_FRAME_DEADLINE, id, p, sizeof(p));
}

/* DEADLINE (id 0) moves the deadline, or with 0 only asks for it; between
 * runs or while one is in flight. */
static void test_chan_request__deadline_moves_or_asks(void **state)
{
	struct fx *f = *state;

	put_deadline(&f->s, 0, 2000000000ULL);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.deadlines, 1);
	assert_true(f->w.deadline_to == 2000000000ULL);
	put_request(&f->s, 1, argv_echo, NULL);
	put_deadline(&f->s, 0, 0);
	assert_int_equal(feed(f), 0);
	assert_int_equal(f->w.starts, 1);
	assert_int_equal(f->w.deadlines, 2);
	assert_true(f->w.deadline_to == 0);
}

/* DEADLINE on a run's id, of another length, past the year 2200, or
 * between OPEN and its spec is a violation. */
static void test_chan_request__malformed_deadline(void **state)
{
	struct fx *f = *state;
	unsigned char p[SBX_FRAME_DEADLINE_LEN + 1] = {0};
	struct sbx__chan_decoder d;
	unsigned char b[SBX_FRAME_HDR + SBX_FRAME_DEADLINE_LEN];

	put_deadline(&f->s, 0, SBX_CHAN_DEADLINE_MAX + 1);
	expect_violation(f, "malformed");
	teardown(state);
	setup(state);
	f = *state;
	put(&f->s, SBX_FRAME_DEADLINE, 0, p, sizeof(p));
	expect_violation(f, "malformed");
	teardown(state);
	setup(state);
	f = *state;
	put_open(&f->s, 1, 1, 0, 4, 100);
	put_deadline(&f->s, 0, 0);
	expect_violation(f, "between OPEN");
	/* A run's id is refused by the decoder itself. */
	sbx__chan_header(b, SBX_FRAME_DEADLINE, 1, SBX_FRAME_DEADLINE_LEN);
	sbx__chan_deadline_encode(b + SBX_FRAME_HDR, 5);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_INIT);
	assert_int_equal(sbx__chan_feed(&d, b, sizeof(b), NULL, NULL), -1);
}

/* DEADLINE_AT names a deadline (not 0), on id 0, towards the host only;
 * an init of version 2 meets DEADLINE as a frame type it does not know. */
static void test_chan_request__deadline_at_rules(void **state)
{
	unsigned char b[SBX_FRAME_HDR + SBX_FRAME_DEADLINE_LEN];
	struct sbx__chan_decoder d;
	uint64_t v = 0;

	(void)state;
	sbx__chan_header(b, SBX_FRAME_DEADLINE_AT, 0, SBX_FRAME_DEADLINE_LEN);
	sbx__chan_deadline_encode(b + SBX_FRAME_HDR, 1234567890);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, sizeof(b), NULL, NULL), 0);
	assert_int_equal(sbx__chan_deadline_decode(b + SBX_FRAME_HDR, 8, 0, &v), 0);
	assert_true(v == 1234567890);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_INIT);
	assert_int_equal(sbx__chan_feed(&d, b, sizeof(b), NULL, NULL), -1);
	sbx__chan_deadline_encode(b + SBX_FRAME_HDR, 0);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, sizeof(b), NULL, NULL), -1);
	sbx__chan_header(b, SBX_FRAME_DEADLINE_AT, 2, SBX_FRAME_DEADLINE_LEN);
	sbx__chan_deadline_encode(b + SBX_FRAME_HDR, 7);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, sizeof(b), NULL, NULL), -1);
	assert_int_equal(SBX_CHAN_VERSION, 3);
}

/* The host's own bounds: a reply decoder refuses what only the host may send, and back. */
static void test_chan_request__directions_apart(void **state)
{
	struct sbx__chan_decoder d;
	unsigned char h[SBX_FRAME_HDR + SBX_FRAME_OPEN_LEN];
	struct sbx__chan_open o = {0, 1, 0, 4, 100};

	(void)state;
	sbx__chan_header(h, SBX_FRAME_OPEN, 1, SBX_FRAME_OPEN_LEN);
	sbx__chan_open_encode(h + SBX_FRAME_HDR, &o);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, h, sizeof(h), NULL, NULL), -1);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_INIT);
	assert_int_equal(sbx__chan_feed(&d, h, sizeof(h), NULL, NULL), 0);
}

static void test_chan_request__reply_rules(void **state)
{
	struct sbx__chan_hello hi = {1, 16, SBX_CHAN_WINDOW};
	unsigned char b[64], p[SBX_FRAME_HELLO_LEN];
	struct sbx__chan_decoder d;

	(void)state;
	/* HELLO only on id 0; data only on a run's id; credit within the window. */
	sbx__chan_hello_encode(p, &hi);
	sbx__chan_header(b, SBX_FRAME_HELLO, 1, sizeof(p));
	memcpy(b + SBX_FRAME_HDR, p, sizeof(p));
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, SBX_FRAME_HDR + sizeof(p), NULL, NULL), -1);
	sbx__chan_header(b, SBX_FRAME_STDOUT, 0, 1);
	b[SBX_FRAME_HDR] = 'x';
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, SBX_FRAME_HDR + 1, NULL, NULL), -1);
	sbx__chan_header(b, SBX_FRAME_STDOUT, 1, 0);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, SBX_FRAME_HDR, NULL, NULL), -1);
	sbx__chan_header(b, SBX_FRAME_CREDIT, 1, 4);
	sbx__chan_credit_encode(b + SBX_FRAME_HDR, SBX_CHAN_WINDOW + 1);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, SBX_FRAME_HDR + 4, NULL, NULL), -1);
	sbx__chan_header(b, SBX_FRAME_ERROR, 0, SBX_CHAN_ERROR_MAX + 1);
	sbx__chan_decoder_init(&d, SBX_CHAN_TO_HOST);
	assert_int_equal(sbx__chan_feed(&d, b, SBX_FRAME_HDR, NULL, NULL), -1);
	/* A HELLO that claims nothing is refused too. */
	hi.runs_max = 0;
	sbx__chan_hello_encode(p, &hi);
	assert_int_equal(sbx__chan_hello_decode(NULL, p, sizeof(p)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_chan_request__valid_request_starts),
		T(test_chan_request__bytewise_and_split_spec),
		T(test_chan_request__stdin_window_and_eof),
		T(test_chan_request__stdin_past_window),
		T(test_chan_request__finished_run_drops_input_and_frees_at_eof),
		T(test_chan_request__id_free_after_finish_and_eof),
		T(test_chan_request__runs_in_flight_bounded),
		T(test_chan_request__spec_without_open),
		T(test_chan_request__frame_between_open_and_spec),
		T(test_chan_request__spec_of_another_id),
		T(test_chan_request__spec_longer_than_announced),
		T(test_chan_request__string_counts_must_match),
		T(test_chan_request__fewer_strings),
		T(test_chan_request__no_final_nul),
		T(test_chan_request__relative_cwd),
		T(test_chan_request__empty_program),
		T(test_chan_request__env_needs_name),
		T(test_chan_request__stdin_for_unknown_run),
		T(test_chan_request__stdin_after_eof),
		T(test_chan_request__double_eof),
		T(test_chan_request__open_while_pending),
		T(test_chan_request__pty_open_and_resize),
		T(test_chan_request__plain_open_has_no_terminal),
		T(test_chan_request__resize_for_unknown_run),
		T(test_chan_request__resize_between_open_and_spec),
		cmocka_unit_test(test_chan_request__malformed_resize),
		cmocka_unit_test(test_chan_request__open_length_follows_flags),
		cmocka_unit_test(test_chan_request__malformed_open),
		cmocka_unit_test(test_chan_request__malformed_frames),
		cmocka_unit_test(test_chan_request__directions_apart),
		cmocka_unit_test(test_chan_request__reply_rules),
		T(test_chan_request__deadline_moves_or_asks),
		T(test_chan_request__malformed_deadline),
		cmocka_unit_test(test_chan_request__deadline_at_rules),
#undef T
	};

	return cmocka_run_group_tests_name("init channel requests", tests, NULL, NULL);
}
