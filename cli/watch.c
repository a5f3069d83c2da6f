/*
 * cli/watch.c: the watcher thread of a run (cli/signals.c). The streaming
 * callback cancels a run when it sees a signal's record, but it is only
 * called when the program writes something; a silent program would hold
 * the command until its deadline. So this thread waits on the signals'
 * self-pipe and kills the sandbox with sbx_sandbox_kill(), which may be
 * called while another thread is in a run on the same sandbox. The run then
 * returns (status killed) and the main thread closes the sandbox as on
 * every other path.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "cli/cli.h"

static struct {
	pthread_t thread;
	int running;
	int stop[2];
	sbx_sandbox *sandbox;
} watch = {.stop = {-1, -1}};

static void *watch_main(void *arg)
{
	struct pollfd pfd[2] = {{.fd = cli_signal_fd(), .events = POLLIN},
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
		while (read(cli_signal_fd(), drain, sizeof(drain)) > 0)
			;
		if (cli_signal_pending())
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

	if (watch.running || cli_signal_fd() < 0 || pipe2(watch.stop, O_CLOEXEC) < 0)
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
