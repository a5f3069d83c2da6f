/*
 * tests/contract/test_docker_tty.c: runs with a terminal and with streamed
 * stdin against the real dockerd, both ways a run reaches a sandbox: over
 * the init's channel (the creating handle) and through docker exec (a
 * handle from sbx_sandbox_open(), where the terminal is the Engine's Tty).
 *
 * Each case synchronises on the program's own output: the output callback
 * sees "ready", then resizes the terminal or feeds the stdin pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s; /* created: the channel */
	sbx_sandbox *x; /* opened: docker exec */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || !t_engine_ready())
		return -1;
	f->b = t_backend();
	f->p = t_policy();
	if (t_make(f->b, f->p, &f->s, &f->x) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	t_unmake(f->b, f->p, f->s, f->x);
	free(f);
	return 0;
}

/* What the output callback does once the program says "ready". */
struct act {
	sbx_sandbox *s;
	char seen[8192];
	size_t len;
	int done;
	int resize;	  /* resize to 40 x 120 */
	int feed_fd;	  /* write feed here, then close it (-1: none) */
	const char *feed; /* NULL: "go\n" */
	int resize_rc;
};

static int on_out(int stream, const char *data, size_t len, void *payload)
{
	struct act *a = payload;

	if (stream != SBX_STREAM_STDOUT)
		return 0;
	if (a->len + len < sizeof(a->seen)) {
		memcpy(a->seen + a->len, data, len);
		a->len += len;
		a->seen[a->len] = '\0';
	}
	if (a->done || !strstr(a->seen, "ready"))
		return 0;
	a->done = 1;
	if (a->resize)
		a->resize_rc = sbx_sandbox_resize(a->s, 40, 120);
	if (a->feed_fd >= 0) {
		const char *w = a->feed ? a->feed : "go\n";

		assert_int_equal(write(a->feed_fd, w, strlen(w)), (ssize_t)strlen(w));
		close(a->feed_fd);
		a->feed_fd = -1;
	}
	return 0;
}

static sbx_result *run_tty(sbx_sandbox *s, const char *line, struct act *a, int stream)
{
	const char *argv[] = {"sh", "-c", line, NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r = NULL;
	int p[2] = {-1, -1};

	o.pty = 1;
	o.pty_rows = 30;
	o.pty_cols = 100;
	o.on_output = on_out;
	o.payload = a;
	a->s = s;
	a->feed_fd = -1;
	if (stream) {
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		o.stream_stdin = 1;
		o.stdin_fd = p[0];
		a->feed_fd = p[1];
	}
	if (sbx_sandbox_run(&r, s, argv, &o) != 0)
		fail_msg("run: %s", sbx_error_last()->message);
	if (p[0] >= 0)
		close(p[0]);
	if (a->feed_fd >= 0)
		close(a->feed_fd);
	return r;
}

static void terminal(sbx_sandbox *s, unsigned int path)
{
	struct act a = {0};
	sbx_result *r = run_tty(s,
				"test -t 0 && test -t 1 && test -t 2 && echo tty; stty size; "
				"echo err >&2; exit 3",
				&a, 0);

	assert_int_equal(r->path, path);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 3);
	if (!strstr(r->stdout_data, "tty\r\n"))
		fail_msg("stdout [%s] code %d", r->stdout_data, r->exit_code);
	assert_non_null(strstr(r->stdout_data, "err"));
	assert_int_equal(r->stderr_len, 0);
	sbx_result_free(r);
}

static void test_engine_tty__terminal_channel(void **state)
{
	struct fx *f = *state;

	terminal(f->s, SBX_RUN_PATH_CHANNEL);
}

static void test_engine_tty__terminal_exec(void **state)
{
	struct fx *f = *state;

	terminal(f->x, SBX_RUN_PATH_EXEC);
}

/* The size asked at the start (the channel's OPEN; exec's first resize). */
static void test_engine_tty__initial_size(void **state)
{
	struct fx *f = *state;
	sbx_sandbox *both[] = {f->s, f->x};

	for (int i = 0; i < 2; i++) {
		struct act a = {0};
		sbx_result *r = run_tty(both[i], "echo ready; read x; stty size", &a, 1);

		assert_int_equal(r->exit_code, 0);
		assert_non_null(strstr(r->stdout_data, "30 100"));
		sbx_result_free(r);
	}
}

/* sbx_sandbox_resize() during the run, then a line on the streamed stdin. */
static void resize(sbx_sandbox *s)
{
	struct act a = {.resize = 1};
	sbx_result *r = run_tty(s, "echo ready; read x; echo \"got:$x\"; stty size", &a, 1);

	assert_int_equal(a.resize_rc, 0);
	assert_int_equal(r->exit_code, 0);
	assert_non_null(strstr(r->stdout_data, "got:go"));
	assert_non_null(strstr(r->stdout_data, "40 120"));
	sbx_result_free(r);
}

static void test_engine_tty__resize_channel(void **state)
{
	resize(((struct fx *)*state)->s);
}

static void test_engine_tty__resize_exec(void **state)
{
	resize(((struct fx *)*state)->x);
}

/* ^C as a byte on stdin: the terminal's line discipline makes SIGINT of it. */
static void test_engine_tty__ctrl_c(void **state)
{
	struct fx *f = *state;
	sbx_sandbox *both[] = {f->s, f->x};

	for (int i = 0; i < 2; i++) {
		struct act a = {.feed = "\003"};
		sbx_result *r = run_tty(
			both[i],
			"trap 'echo caught; exit 5' INT; echo ready; while :; do sleep 1; done", &a,
			1);

		assert_int_equal(r->status, SBX_RUN_EXITED);
		assert_int_equal(r->exit_code, 5);
		assert_non_null(strstr(r->stdout_data, "caught"));
		sbx_result_free(r);
	}
}

/* Streamed stdin without a terminal: the bytes as written, then end of file. */
static void test_engine_tty__streamed_stdin(void **state)
{
	struct fx *f = *state;
	sbx_sandbox *both[] = {f->s, f->x};
	const char *argv[] = {"sh", "-c", "echo ready; cat; echo end", NULL};

	for (int i = 0; i < 2; i++) {
		sbx_run_options o = SBX_RUN_OPTIONS_INIT;
		struct act a = {0};
		sbx_result *r = NULL;
		int p[2];

		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		o.stream_stdin = 1;
		o.stdin_fd = p[0];
		o.on_output = on_out;
		o.payload = &a;
		a.feed_fd = p[1];
		if (sbx_sandbox_run(&r, both[i], argv, &o) != 0)
			fail_msg("run: %s", sbx_error_last()->message);
		close(p[0]);
		assert_int_equal(r->exit_code, 0);
		assert_string_equal(r->stdout_data, "ready\ngo\nend\n");
		sbx_result_free(r);
	}
}

static void test_engine_tty__bad_options(void **state)
{
	struct fx *f = *state;
	const char *argv[] = {"true", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r = NULL;

	o.pty = 1;
	o.pty_rows = 5000;
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, &o), SBX_EINVALID);
	o = (sbx_run_options)SBX_RUN_OPTIONS_INIT;
	o.pty_cols = 80;
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, &o), SBX_EINVALID);
	o = (sbx_run_options)SBX_RUN_OPTIONS_INIT;
	o.stream_stdin = 1;
	o.stdin_fd = 0;
	o.stdin_data = "x";
	o.stdin_len = 1;
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, &o), SBX_EINVALID);
	o.stdin_data = NULL;
	o.stdin_len = 0;
	o.stdin_fd = -1;
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, &o), SBX_EINVALID);
	/* No run with a terminal in flight. */
	assert_int_equal(sbx_sandbox_resize(f->s, 24, 80), SBX_ENOTFOUND);
	assert_int_equal(sbx_sandbox_resize(f->x, 24, 80), SBX_ENOTFOUND);
	assert_int_equal(sbx_sandbox_resize(f->s, 0, 80), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_resize(NULL, 24, 80), SBX_EINVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_tty__terminal_channel),
		cmocka_unit_test(test_engine_tty__terminal_exec),
		cmocka_unit_test(test_engine_tty__initial_size),
		cmocka_unit_test(test_engine_tty__resize_channel),
		cmocka_unit_test(test_engine_tty__resize_exec),
		cmocka_unit_test(test_engine_tty__ctrl_c),
		cmocka_unit_test(test_engine_tty__streamed_stdin),
		cmocka_unit_test(test_engine_tty__bad_options),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] terminals", tests, setup,
					   teardown);
}
