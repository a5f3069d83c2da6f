/*
 * cli/signals.c: SIGINT, SIGTERM and SIGHUP while a sandbox exists.
 *
 * A sandbox made by `run` or `run-code` must be removed whenever the command
 * ends, so these signals never kill the process outright. The handler only
 * records the first signal and writes a byte to a self-pipe (both
 * async-signal-safe); the code that owns the sandbox notices the record,
 * closes the sandbox and exits 128+signal.
 *
 * During a run the streaming callback cancels the run when it sees the
 * record, but it is only called when the program writes something. A
 * silent program would then hold the command until its deadline, so a
 * watcher thread (cli/watch.c) waits on the self-pipe and kills the
 * sandbox.
 *
 * Handlers are installed without SA_RESTART, so blocking reads and waits of
 * the command return EINTR and can look at the record. Threads started here
 * block every signal, so the handler always runs on the main thread and
 * sigprocmask() there really defers the signals (around sandbox creation).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static volatile sig_atomic_t pending_sig;
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;

	if (!pending_sig)
		pending_sig = sig;
	if (sig_pipe[1] >= 0) {
		ssize_t w = write(sig_pipe[1], "s", 1);
		(void)w;
	}
	errno = saved;
}

static void signal_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

int cli_signals_install(void)
{
	struct sigaction sa;
	int fds[2];

	if (sig_pipe[0] < 0) {
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
			return -1;
		sig_pipe[0] = fds[0];
		sig_pipe[1] = fds[1];
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 ||
	    sigaction(SIGHUP, &sa, NULL) < 0)
		return -1;
	return 0;
}

int cli_signal_pending(void)
{
	return pending_sig;
}

int cli_signal_fd(void)
{
	return sig_pipe[0];
}

int cli_signal_exit(void)
{
	return 128 + pending_sig;
}

void cli_signals_block(void)
{
	sigset_t set;

	signal_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void cli_signals_unblock(void)
{
	sigset_t set;

	signal_set(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}
