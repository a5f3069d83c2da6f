/*
 * init/sbx-init.c: entry point of sbx-init, the static helper mounted
 * read-only at /.sbx/init in every sandbox, and its PID 1 mode.
 *
 * `sbx-init pid1 --deadline UNIX_SECONDS` is the container's PID 1. It exists
 * so that the sandbox has a hard wall-clock end even if the host that
 * created it dies: at the deadline it kills everything and exits, which
 * stops the container. Until then it reaps orphans (processes left behind by
 * `docker exec` runs are reparented to it) and turns SIGTERM/SIGINT/SIGHUP
 * into an immediate kill of the whole sandbox. The deadline is absolute wall
 * time because the container shares the host's clock and the host computed
 * it from that clock; each wait is capped at one second so a clock step is
 * noticed promptly.
 *
 * With --channel it also serves run requests from the host on its own stdin
 * and answers on its stdout (init/chan.c, docs/protocol.md): the fast path
 * that spares each run a `docker exec`.
 *
 * `sbx-init run ...` (init/run.c) supervises one program per exec.
 * `sbx-init connect PORT` (init/connect.c) relays one connection to a port
 * of the sandbox's loopback.
 */
#include "init/init.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A deadline beyond this (year 2200 or so) is treated as a typo. */
#define DEADLINE_MAX 7258118400LL
/* Zombies reaped per SIGCHLD before going back to waiting. */
#define REAP_MAX 65536

static void usage(void)
{
	sbx_init_msg("usage: sbx-init pid1 --deadline UNIX_SECONDS [--channel]\n"
		     "       sbx-init run [--tty ROWSxCOLS] [--as-root] --deadline-ms N [--cwd "
		     "DIR] -- PROG "
		     "[ARG...]\n"
		     "       sbx-init connect PORT");
}

static void reap_all(void)
{
	int i, st;

	for (i = 0; i < REAP_MAX; i++) {
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0)
			continue;
		if (p < 0 && errno == EINTR)
			continue;
		break;
	}
}

int sbx_init_pid1(int argc, char **argv)
{
	long long deadline;
	sigset_t all;
	int sweep;
	int channel = argc == 4 && strcmp(argv[3], "--channel") == 0;

	if ((argc != 3 && !channel) || strcmp(argv[1], "--deadline") != 0) {
		usage();
		return SBX_INIT_EXIT_USAGE;
	}
	if (sbx_init_parse_positive(argv[2], DEADLINE_MAX, &deadline) != 0) {
		sbx_init_msg("invalid --deadline %s: expected unix seconds", argv[2]);
		return SBX_INIT_EXIT_USAGE;
	}

	/* Same-uid sandboxed code must not read our memory or fds via /proc. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		sbx_init_msg("cannot clear the dumpable flag: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	if (sbx_init_lockdown() != 0)
		return SBX_INIT_EXIT_USAGE;

	/*
	 * Every signal is taken synchronously with sigtimedwait, so there is
	 * no handler to race with and a signal the sandbox sends us is just
	 * read and ignored unless it means "stop".
	 */
	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, NULL) != 0) {
		sbx_init_msg("cannot block signals: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	if (channel)
		return sbx_init_chan_serve(deadline);
	sweep = sbx_init_no_subreapers();

	/* Bounded by the deadline: every pass waits at most until it. */
	for (;;) {
		struct timespec now, wait;
		siginfo_t si;
		long long left_ns;
		int sig;

		if (clock_gettime(CLOCK_REALTIME, &now) != 0) {
			sbx_init_msg("cannot read the clock: %s", strerror(errno));
			sbx_init_kill_sandbox();
			return SBX_INIT_EXIT_USAGE;
		}
		if (now.tv_sec >= deadline) {
			sbx_init_msg("sandbox deadline reached");
			sbx_init_kill_sandbox();
			return SBX_INIT_EXIT_TIMEOUT;
		}
		left_ns = (deadline - now.tv_sec) * 1000000000LL - now.tv_nsec;
		if (left_ns > 1000000000LL)
			left_ns = 1000000000LL;
		wait.tv_sec = left_ns / 1000000000LL;
		wait.tv_nsec = left_ns % 1000000000LL;

		/* Without subreapers, what `docker exec` runs left behind is ours to end. */
		if (sweep)
			(void)sbx_init_sweep_orphans(NULL, 0);
		sig = sigtimedwait(&all, &si, &wait);
		if (sig < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				struct timespec pause = {0, 100 * 1000 * 1000};

				sbx_init_msg("sigtimedwait: %s", strerror(errno));
				nanosleep(&pause, NULL);
			}
			continue;
		}
		switch (sig) {
		case SIGCHLD:
			reap_all();
			break;
		case SIGTERM:
		case SIGINT:
		case SIGHUP:
			sbx_init_kill_sandbox();
			return SBX_INIT_EXIT_TERM;
		default:
			break;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage();
		return SBX_INIT_EXIT_USAGE;
	}
	if (strcmp(argv[1], "pid1") == 0)
		return sbx_init_pid1(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return sbx_init_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "connect") == 0)
		return sbx_init_connect(argc - 1, argv + 1);
	sbx_init_msg("unknown mode '%s'", argv[1]);
	usage();
	return SBX_INIT_EXIT_USAGE;
}
