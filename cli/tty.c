/*
 * cli/tty.c: -i and -t of `exec` and `run`.
 *
 * -i streams our standard input to the program as it comes (until its end
 * of file), instead of reading it all first as --stdin - does. -t asks for
 * a terminal in the sandbox (its size ours) and puts ours in raw mode for
 * the run, so that every key goes to the program as a byte: ^C reaches it
 * through its terminal's line discipline as SIGINT, and never stops us.
 * Our terminal's settings are restored on every way the run ends: its exit,
 * its deadline, an error, and SIGTERM, SIGHUP or SIGINT to us (cli/signals.c
 * turns those into a cancel, and the run returns); an atexit handler is the
 * last resort. A thread waits for SIGWINCH (blocked everywhere else) and
 * passes our new size on with sbx_sandbox_resize().
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"

static struct {
	int raw; /* our terminal is in raw mode: saved holds its settings */
	struct termios saved;
	int thread;
	pthread_t th;
	volatile sig_atomic_t stop;
	sbx_sandbox *s;
	int atexit_set;
} T;

static void restore(void)
{
	if (T.raw) {
		(void)tcsetattr(STDIN_FILENO, TCSADRAIN, &T.saved);
		T.raw = 0;
	}
}

int cli_tty_check(const struct cli_opts *o)
{
	if (!o->tty && !o->interactive)
		return 0;
	if (o->stdin_path) {
		cli_print_error(o, SBX_EINVALID,
				"%s: -i and -t read standard input as it comes; --stdin reads "
				"it first: give one",
				o->cmd_name);
		return CLI_EXIT_FAIL;
	}
	if (o->tty && !isatty(STDIN_FILENO)) {
		cli_print_error(o, SBX_EINVALID,
				"%s: -t needs a terminal, and standard input is not one (use -i "
				"alone to stream it)",
				o->cmd_name);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

void cli_tty_options(const struct cli_opts *o, sbx_run_options *ro)
{
	struct winsize ws;

	if (o->interactive) {
		ro->stream_stdin = 1;
		ro->stdin_fd = STDIN_FILENO;
	}
	if (!o->tty)
		return;
	ro->pty = 1;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		ro->pty_rows = ws.ws_row;
		ro->pty_cols = ws.ws_col;
	}
}

static void *winch_thread(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	while (!T.stop) {
		struct winsize ws;

		if (sigwait(&set, &sig) != 0 || T.stop)
			break;
		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col &&
		    sbx_sandbox_resize(T.s, ws.ws_row, ws.ws_col) < 0)
			cli_warn("cannot pass the new window size on: %s",
				 sbx_error_last()->message);
	}
	return NULL;
}

int cli_tty_begin(const struct cli_opts *o, sbx_sandbox *s)
{
	struct termios raw;
	sigset_t set;

	if (!o->tty)
		return 0;
	if (tcgetattr(STDIN_FILENO, &T.saved) != 0) {
		cli_print_error(o, SBX_ERROR, "%s: cannot read the terminal's settings: %s",
				o->cmd_name, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (!T.atexit_set && atexit(restore) == 0)
		T.atexit_set = 1;
	raw = T.saved;
	cfmakeraw(&raw);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) != 0) {
		cli_print_error(o, SBX_ERROR, "%s: cannot put the terminal in raw mode: %s",
				o->cmd_name, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	T.raw = 1;
	T.s = s;
	T.stop = 0;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) == 0 &&
	    pthread_create(&T.th, NULL, winch_thread, NULL) == 0)
		T.thread = 1;
	else
		cli_warn("cannot watch for window size changes: the size stays as it is");
	return 0;
}

void cli_tty_end(void)
{
	if (T.thread) {
		T.stop = 1;
		pthread_kill(T.th, SIGWINCH);
		pthread_join(T.th, NULL);
		T.thread = 0;
	}
	restore();
}
