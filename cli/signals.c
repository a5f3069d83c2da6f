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
 * watcher thread waits on the self-pipe and kills the sandbox with
 * sbx_sandbox_kill(), which may be called while another thread is in a run
 * on the same sandbox. The run then returns (status killed) and the main
 * thread closes the sandbox as on every other path.
 *
 * Handlers are installed without SA_RESTART, so blocking reads and waits of
 * the command return EINTR and can look at the record. Threads started here
 * block every signal, so the handler always runs on the main thread and
 * sigprocmask() there really defers the signals (around sandbox creation).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static volatile sig_atomic_t pending_sig;
static int sig_pipe[2] = {-1, -1};

static struct {
	pthread_t thread;
	int running;
	int stop[2];
	sbx_sandbox *sandbox;
} watch = {.stop = {-1, -1}};

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

static void *watch_main(void *arg)
{
	struct pollfd pfd[2] = {{.fd = sig_pipe[0], .events = POLLIN},
				{.fd = watch.stop[0], .events = POLLIN}};
	char drain[64];

	(void)arg;
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
		while (read(sig_pipe[0], drain, sizeof(drain)) > 0)
			;
		if (pending_sig)
			break;
	}
	/* A failure is left to the main thread, whose close reports it. */
	sbx_sandbox_kill(watch.sandbox);
	return NULL;
}

int cli_watch_start(sbx_sandbox *s)
{
	sigset_t all, old;
	int rc;

	if (watch.running || sig_pipe[0] < 0 || pipe2(watch.stop, O_CLOEXEC) < 0)
		return -1;
	watch.sandbox = s;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&watch.thread, NULL, watch_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		close(watch.stop[0]);
		close(watch.stop[1]);
		watch.stop[0] = watch.stop[1] = -1;
		watch.sandbox = NULL;
		return -1;
	}
	watch.running = 1;
	return 0;
}

void cli_watch_stop(void)
{
	if (!watch.running)
		return;
	while (write(watch.stop[1], "q", 1) < 0 && errno == EINTR)
		;
	pthread_join(watch.thread, NULL);
	close(watch.stop[0]);
	close(watch.stop[1]);
	watch.stop[0] = watch.stop[1] = -1;
	watch.sandbox = NULL;
	watch.running = 0;
}
