/*
 * init/run.c: the supervisor of every program the host runs in a sandbox:
 * `sbx-init run`, started by `docker exec`, and the same code in the
 * supervisors PID 1 forks for runs on its channel (init/chan.c).
 *
 * It starts the program with its stdout and stderr on pipes and relays them
 * to the host as STDOUT/STDERR frames on its own stdout, followed by one EXIT
 * frame (util/frame.h). Framing keeps the two streams and the exit status
 * apart on a single byte stream the host can parse strictly, and lets the
 * host learn about timeouts, exec failures and OOM kills in-band.
 *
 * Because the program runs under the same uid as this process, the
 * supervisor makes itself non-dumpable: otherwise the program could open
 * /proc/<supervisor>/fd/1 and write forged frames into the host's stream.
 * It is a child subreaper so that anything the program leaves behind is
 * reparented to it and can be killed: a run ends together with its whole
 * process tree, at exit or at the deadline. Where the kernel has no
 * subreapers, PID 1 ends what escapes (sbx_init_sweep_orphans).
 *
 * Frames go out with raw write(2), never stdio, so nothing is buffered or
 * reordered behind the host's back. The program is started with clone
 * (CLONE_VM | CLONE_VFORK), as posix_spawn does: on a VM, copying page
 * tables for a fork is the costliest step of a short run.
 */
#include "init/init.h"
#include "util/frame.h"
#include "util/time.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Longest accepted --deadline-ms: a year. */
#define DEADLINE_MS_MAX 31536000000LL
/* How long killing the tree may take before we report anyway. */
#define KILL_BUDGET_MS 5000
/* Output still buffered after the tree is dead: at most this much, this long. */
#define DRAIN_BYTES (4LL << 20)
#define DRAIN_MS 2000
/* How long a write to the host may stall past the deadline. */
#define WRITE_GRACE_MS 10000
/* The stack the program's child runs on until it execs (execvp's own needs included). */
#define SPAWN_STACK (256 * 1024)

#define NO_TTY "cannot open a terminal in the sandbox"

enum { STAGE_CHDIR = 1, STAGE_EXEC = 2 };

struct exec_report {
	int stage;
	int err;
};

struct stream {
	int fd; /* read end of the program's pipe, -1 once at EOF */
	int type;
};

static struct {
	long long deadline;    /* CLOCK_MONOTONIC ms */
	long long write_limit; /* CLOCK_MONOTONIC ms */
	pid_t child;
	int child_status;
	int child_reaped;
	int sfd;
	struct stream out, err;
	int out_p[2], err_p[2]; /* the program's stdout and stderr pipes */
	unsigned char buf[SBX_FRAME_HDR + SBX_FRAME_MAX];
	/* With a terminal: the master, our stdin on its way to it, window sizes. */
	int master;
	int in_fd; /* our stdin, -1 at its end */
	unsigned char ibuf[4096];
	size_t ilen, ioff;
	int resize_fd;
	unsigned char rbuf[4];
	size_t rlen;
} R;

static void kill_tree(int budget_ms)
{
	(void)sbx_init_kill_tree(R.child, R.child, &R.child_status, &R.child_reaped, R.sfd,
				 budget_ms);
}

/* The host is gone or stuck: nobody will read an EXIT frame, so just stop. */
static void __attribute__((noreturn)) host_gone(const char *why)
{
	sbx_init_msg("cannot write to the host (%s); stopping the run", why);
	kill_tree(KILL_BUDGET_MS);
	_exit(SBX_INIT_EXIT_HOST_GONE);
}

static void write_all(const unsigned char *p, size_t len)
{
	unsigned int spins = 0;

	while (len > 0) {
		ssize_t w = write(STDOUT_FILENO, p, len);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = STDOUT_FILENO, .events = POLLOUT};
			long long left = R.write_limit - (long long)sbx__mono_ms();

			if (left <= 0)
				host_gone("timed out");
			(void)poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
			continue;
		}
		/* write() returning 0 for a non-zero length should not happen; do not spin. */
		if (w == 0 && ++spins < 100)
			continue;
		host_gone(w < 0 ? strerror(errno) : "no progress");
	}
}

/* One frame in one write: the reader wakes once, and a frame is whole in the pipe. */
static void emit(int type, const void *payload, size_t len)
{
	sbx__frame_header(R.buf, type, (uint32_t)len);
	if (len)
		memcpy(R.buf + SBX_FRAME_HDR, payload, len);
	write_all(R.buf, SBX_FRAME_HDR + len);
}

/*
 * Reads once from a stream and forwards what came as one frame. Returns the
 * number of bytes forwarded, 0 at EOF (the stream is closed) or when nothing
 * was ready.
 */
static size_t pump(struct stream *s)
{
	ssize_t n;

	if (s->fd < 0)
		return 0;
	do
		n = read(s->fd, R.buf + SBX_FRAME_HDR, SBX_FRAME_MAX);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		close(s->fd);
		s->fd = -1;
		return 0;
	}
	/* Header and payload in one write keeps a frame whole in the common case. */
	sbx__frame_header(R.buf, s->type, (uint32_t)n);
	write_all(R.buf, SBX_FRAME_HDR + (size_t)n);
	return (size_t)n;
}

/* Reaps exited children: the program, and orphans reparented to us. */
static void reap(void)
{
	int i;

	for (i = 0; i < 65536; i++) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			if (p == R.child) {
				R.child_status = st;
				R.child_reaped = 1;
			}
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		return;
	}
}

/* Reads pending signals; returns 1 if one of them asks us to stop. */
static int read_signals(void)
{
	struct signalfd_siginfo si[16];
	int i, stop = 0;

	for (i = 0; i < 64; i++) {
		ssize_t n = read(R.sfd, si, sizeof(si));
		size_t k;

		if (n <= 0)
			break;
		for (k = 0; k < (size_t)n / sizeof(si[0]); k++)
			if (si[k].ssi_signo != SIGCHLD)
				stop = 1;
	}
	return stop;
}

/*
 * Reads the memory cgroup's oom-kill counter: cgroup v2 first, then v1.
 * Returns -1 if neither file is there, which means "unknown".
 */
static long long oom_kills(void)
{
	static const char *const files[] = {"/sys/fs/cgroup/memory.events",
					    "/sys/fs/cgroup/memory/memory.oom_control"};
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char buf[4096], *line;
		ssize_t n;
		size_t have = 0;
		int fd = open(files[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		while (have < sizeof(buf) - 1) {
			n = read(fd, buf + have, sizeof(buf) - 1 - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			have += (size_t)n;
		}
		close(fd);
		buf[have] = '\0';
		line = buf;
		while (line) {
			if (strncmp(line, "oom_kill ", 9) == 0) {
				char *end;
				long long v;

				errno = 0;
				v = strtoll(line + 9, &end, 10);
				if (errno || end == line + 9 || v < 0)
					return -1;
				return v;
			}
			line = strchr(line, '\n');
			if (line)
				line++;
		}
		return -1;
	}
	return -1;
}

/* Makes sure fds 0 and 2 exist so pipe() cannot land on them. */
static int fix_std_fds(void)
{
	int fd;

	if (fcntl(STDOUT_FILENO, F_GETFD) < 0)
		return -1;
	for (fd = 0; fd <= 2; fd += 2) {
		int nfd;

		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (nfd != fd) {
			if (nfd >= 0)
				close(nfd);
			return -1;
		}
	}
	return 0;
}

/*
 * Makes writes to the host non-blocking so a host that stops reading cannot
 * hold the run past its deadline. Skipped when fd 1 might share its file
 * description with the program's stdin, whose blocking mode is not ours to
 * change.
 */
static void host_fd_nonblock(void)
{
	struct stat s0, s1;
	int fl;

	if (fstat(STDOUT_FILENO, &s1) != 0)
		return;
	if (!S_ISFIFO(s1.st_mode) && !S_ISSOCK(s1.st_mode))
		return;
	if (fstat(STDIN_FILENO, &s0) == 0 && s0.st_dev == s1.st_dev && s0.st_ino == s1.st_ino)
		return;
	fl = fcntl(STDOUT_FILENO, F_GETFL);
	if (fl >= 0)
		(void)fcntl(STDOUT_FILENO, F_SETFL, fl | O_NONBLOCK);
}

/* What the program's child reports when it could not become the program. */
static struct exec_report spawn_rep;

struct spawn_args {
	int out_w, err_w;
	/* 1: out_w is a terminal's slave, to be the controlling terminal;
	 * 2: stdio is our own terminal already, the program takes its foreground. */
	int tty;
	const char *cwd;
	char **argv;
};

static void __attribute__((noreturn)) child_fail(int stage)
{
	/* The child shares our memory until it execs: the report is a store. */
	spawn_rep.err = errno;
	spawn_rep.stage = stage;
	_exit(spawn_rep.err == ENOENT ? 127 : 126);
}

/*
 * In the child: becomes the program. It runs on its own stack in our memory
 * (clone with CLONE_VM|CLONE_VFORK, as posix_spawn does) while we wait, so
 * only async-signal-safe calls, and nothing that allocates.
 */
static int child_exec(void *arg)
{
	const struct spawn_args *a = arg;
	struct sigaction dfl;
	sigset_t none;
	int sig;

	/* Ignored signals and the blocked mask survive exec; the program gets neither. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &dfl, NULL);

	if (a->tty == 2) {
		sigset_t ttou;

		/* Its own group, in the terminal's foreground: ^C signals it, not us. */
		sigemptyset(&ttou);
		sigaddset(&ttou, SIGTTOU);
		(void)sigprocmask(SIG_BLOCK, &ttou, NULL);
		(void)setpgid(0, 0);
		(void)tcsetpgrp(STDIN_FILENO, getpid());
	} else if (a->tty) {
		/* A new session (so its own process group too) whose terminal is the slave. */
		if (setsid() < 0 || ioctl(a->out_w, TIOCSCTTY, 0) != 0 ||
		    dup2(a->out_w, STDIN_FILENO) < 0)
			child_fail(STAGE_EXEC);
	} else {
		/* Its own process group, so one kill(-pgid) reaches the usual tree. */
		(void)setpgid(0, 0);
	}

	if (a->tty != 2 && (dup2(a->out_w, STDOUT_FILENO) < 0 || dup2(a->err_w, STDERR_FILENO) < 0))
		child_fail(STAGE_EXEC);

	/* Nothing but 0, 1 and 2 may reach the program. */
	sbx_init_fds_past_stdio(-1, 1);

	if (a->cwd && chdir(a->cwd) != 0)
		child_fail(STAGE_CHDIR);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(a->argv[0], a->argv);
	child_fail(STAGE_EXEC);
}

static unsigned char *spawn_stack_top;

/* Maps the stack the program's child starts on. Returns 0, or -1 with errno set. */
static int spawn_stack(void)
{
	void *m;

	if (spawn_stack_top)
		return 0;
	m = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		 -1, 0);
	if (m == MAP_FAILED)
		return -1;
	spawn_stack_top = (unsigned char *)m + SPAWN_STACK;
	return 0;
}

/*
 * Starts the program without copying our page tables (fork's cost, which
 * dominates a short run on a VM). Returns its pid, or -1 with errno set.
 */
static pid_t spawn(struct spawn_args *a)
{
	if (spawn_stack() != 0)
		return -1;
	spawn_rep.stage = 0;
	return clone(child_exec, spawn_stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
}

static void exec_fail_message(const struct exec_report *rep, const char *prog, const char *cwd)
{
	char msg[1024];
	int n;

	if (rep->stage == STAGE_CHDIR)
		n = snprintf(msg, sizeof(msg), "cannot change directory to %s: %s", cwd,
			     strerror(rep->err));
	else if (rep->err == ENOENT && !strchr(prog, '/'))
		n = snprintf(msg, sizeof(msg), "%s: command not found", prog);
	else if (rep->err == ENOENT)
		n = snprintf(msg, sizeof(msg), "%s: no such file or directory", prog);
	else if (rep->err == EACCES)
		n = snprintf(msg, sizeof(msg), "%s: permission denied", prog);
	else
		n = snprintf(msg, sizeof(msg), "%s: cannot execute: %s", prog, strerror(rep->err));
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	emit(SBX_FRAME_ERROR, msg, (size_t)n);
}

/* Forwards output left in the pipes once the tree is dead, within bounds. */
static void drain(void)
{
	long long end = (long long)sbx__mono_ms() + DRAIN_MS, bytes = 0;

	while ((R.out.fd >= 0 || R.err.fd >= 0) && bytes < DRAIN_BYTES) {
		struct pollfd pfd[2];
		struct stream *st[2];
		long long left = end - (long long)sbx__mono_ms();
		nfds_t n = 0, i;

		if (left <= 0)
			break;
		if (R.out.fd >= 0) {
			pfd[n] = (struct pollfd){.fd = R.out.fd, .events = POLLIN};
			st[n++] = &R.out;
		}
		if (R.err.fd >= 0) {
			pfd[n] = (struct pollfd){.fd = R.err.fd, .events = POLLIN};
			st[n++] = &R.err;
		}
		if (poll(pfd, n, (int)left) <= 0)
			continue;
		for (i = 0; i < n; i++)
			if (pfd[i].revents)
				bytes += (long long)pump(st[i]);
	}
}

static int run_usage(const char *why)
{
	sbx_init_msg("run: %s", why);
	sbx_init_msg(
		"usage: sbx-init run [--tty ROWSxCOLS] [--as-root] --deadline-ms N [--cwd DIR] "
		"-- PROG [ARG...]");
	return SBX_INIT_EXIT_USAGE;
}

/* Sets a pipe's read end non-blocking so draining never stalls on it. */
static int make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	return fcntl(p[0], F_SETFL, O_NONBLOCK);
}

/*
 * `sbx-init run --tty RxC`: docker exec with a terminal (Tty), whose session we
 * lead. The program runs on that terminal, in its own process group in the
 * foreground (so ^C signals it), its whole tree killed at its exit or
 * deadline. No frames: the terminal carries its bytes, and our exit code is
 * its report (124 at the deadline, 128+N killed by signal N, 126 or 127 when
 * it could not start, with the reason on the terminal).
 */
static int run_on_tty(long long deadline_ms,
		      const char *cwd,
		      char **prog,
		      unsigned short rows,
		      unsigned short cols)
{
	struct spawn_args sa = {.tty = 2, .cwd = cwd, .argv = prog};
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	struct exec_report rep;
	int rc = sbx_init_supervise_prepare(1);

	if (rc)
		return rc;
	if (!isatty(STDIN_FILENO))
		return run_usage("--tty needs a terminal on stdin");
	/* The size asked, before the program can look (the Engine's resize comes later). */
	(void)ioctl(STDIN_FILENO, TIOCSWINSZ, &ws);
	R.deadline = (long long)sbx__mono_ms() + deadline_ms;
	R.child = spawn(&sa);
	if (R.child < 0) {
		sbx_init_msg("run: clone: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	rep = spawn_rep;
	while (!R.child_reaped) {
		struct pollfd pfd = {.fd = R.sfd, .events = POLLIN};
		long long left = R.deadline - (long long)sbx__mono_ms();

		if (left <= 0)
			break;
		if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) > 0 && read_signals()) {
			kill_tree(KILL_BUDGET_MS);
			return SBX_INIT_EXIT_TERM;
		}
		reap();
	}
	if (!R.child_reaped) {
		kill_tree(KILL_BUDGET_MS);
		return SBX_INIT_EXIT_TIMEOUT;
	}
	kill_tree(KILL_BUDGET_MS);
	if (rep.stage != 0) {
		sbx_init_msg("%s: %s", prog[0], strerror(rep.err));
		return rep.err == ENOENT ? 127 : 126;
	}
	if (WIFSIGNALED(R.child_status))
		return 128 + WTERMSIG(R.child_status);
	return WEXITSTATUS(R.child_status);
}

/*
 * After the EXIT frame of a docker exec: waits until the host lets go of
 * our stdin (its end of file) before exiting, reading and dropping what
 * still comes. The host lets go as soon as it reads the frame
 * (engine/exec.c). Until then the Engine may still be carrying stdin
 * bytes the program never read, and an exec that ends with such bytes
 * in flight can lose its output: Podman's conmon closes its attach
 * socket with them unread, and the kernel then answers Podman's next read
 * of that socket with a reset instead of the frames still queued in it.
 * Bounded by the run's deadline, or SBX_FRAME_LETGO_INIT_MS from now when
 * that is later (the EXIT of a run that timed out gets through too), and
 * by a signal to stop. A program that kept a writer of our stdin (it can
 * open its own /proc/self/fd/0 for writing) keeps this process until then,
 * in its own sandbox; the host does not wait for it (engine/exec.c).
 */
static void await_host_letgo(void)
{
	long long until = (long long)sbx__mono_ms() + SBX_FRAME_LETGO_INIT_MS;
	unsigned char sink[4096];

	if (until < R.deadline)
		until = R.deadline;
	for (;;) {
		struct pollfd pfd[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
					{.fd = R.sfd, .events = POLLIN}};
		long long left = until - (long long)sbx__mono_ms();
		ssize_t n;
		int r;

		if (left <= 0)
			return;
		r = poll(pfd, 2, (int)left);
		if (r < 0 && errno != EINTR)
			return;
		if (r <= 0)
			continue;
		if (pfd[1].revents && read_signals())
			return;
		if (!pfd[0].revents)
			continue;
		n = read(STDIN_FILENO, sink, sizeof(sink));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

int sbx_init_run(int argc, char **argv)
{
	long long deadline_ms = -1;
	const char *cwd = NULL;
	long long rows = 0, cols = 0;
	int i, rc, tty = 0, as_root = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--deadline-ms") == 0 && i + 1 < argc && deadline_ms < 0) {
			if (sbx_init_parse_positive(argv[++i], DEADLINE_MS_MAX, &deadline_ms) != 0)
				return run_usage("--deadline-ms needs a positive number of ms");
		} else if (strcmp(argv[i], "--tty") == 0 && i + 1 < argc && !tty) {
			char size[16], *x;

			snprintf(size, sizeof(size), "%s", argv[++i]);
			x = strchr(size, 'x');
			if (x)
				*x++ = '\0';
			if (!x || sbx_init_parse_positive(size, 4096, &rows) != 0 ||
			    sbx_init_parse_positive(x, 4096, &cols) != 0)
				return run_usage("--tty needs a size ROWSxCOLS, each 1 to 4096");
			tty = 1;
		} else if (strcmp(argv[i], "--as-root") == 0 && !as_root) {
			as_root = 1;
		} else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc && !cwd) {
			cwd = argv[++i];
			if (!*cwd)
				return run_usage("--cwd needs a directory");
		} else {
			return run_usage("unexpected or repeated argument");
		}
	}
	if (deadline_ms < 0)
		return run_usage("--deadline-ms is required");
	if (i >= argc || i + 1 >= argc || !*argv[i + 1])
		return run_usage("a program is required after --");
	/* Before anything else: the maps are written while we are dumpable. */
	if (as_root && sbx_init_enter_root_ns() != 0)
		return SBX_INIT_EXIT_USAGE;
	if (tty)
		return run_on_tty(deadline_ms, cwd, argv + i + 1, (unsigned short)rows,
				  (unsigned short)cols);
	rc = sbx_init_supervise(deadline_ms, cwd, argv + i + 1, 1);
	if (rc == 0)
		await_host_letgo();
	return rc;
}

int sbx_init_supervise(long long deadline_ms, const char *cwd, char **prog, int lockdown)
{
	int rc = sbx_init_supervise_prepare(lockdown);

	return rc ? rc : sbx_init_supervise_start(deadline_ms, cwd, prog);
}

int sbx_init_supervise_prepare(int lockdown)
{
	sigset_t sigs;

	if (fix_std_fds() != 0) {
		sbx_init_msg("run: standard file descriptors are not usable");
		return SBX_INIT_EXIT_USAGE;
	}
	R.child = -1;
	R.sfd = -1;
	R.out = (struct stream){-1, SBX_FRAME_STDOUT};
	R.err = (struct stream){-1, SBX_FRAME_STDERR};

	/* A host that hangs up must not kill us before we kill the tree. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return SBX_INIT_EXIT_USAGE;
	/*
	 * A kernel without child subreapers (EINVAL: gVisor as Debian 12
	 * ships it) leaves the orphans of a run to PID 1, which sweeps them
	 * (sbx_init_sweep_orphans); the group kill and the walk below still
	 * end everything that stays in the tree.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 && errno != EINVAL)) {
		sbx_init_msg("run: prctl: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	if (lockdown && sbx_init_lockdown() != 0)
		return SBX_INIT_EXIT_USAGE;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGCHLD);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL) != 0 ||
	    (R.sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		sbx_init_msg("run: signalfd: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	if (make_pipe(R.out_p) != 0 || make_pipe(R.err_p) != 0) {
		sbx_init_msg("run: pipe: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	host_fd_nonblock();
	if (spawn_stack() != 0) {
		sbx_init_msg("run: mmap: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	return 0;
}

/*
 * Opens a pseudo-terminal of the given size: the master (non-blocking) in
 * R.master, the slave returned. Returns -1 with errno set on failure.
 */
static int open_pty(const struct sbx_init_tty *tty)
{
	struct winsize ws = {.ws_row = tty->rows, .ws_col = tty->cols};
	char name[128];
	int slave;

	R.master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (R.master < 0)
		return -1;
	if (grantpt(R.master) != 0 || unlockpt(R.master) != 0 ||
	    ptsname_r(R.master, name, sizeof(name)) != 0)
		return -1;
	slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return -1;
	if (ioctl(R.master, TIOCSWINSZ, &ws) != 0 ||
	    fcntl(R.master, F_SETFL, fcntl(R.master, F_GETFL) | O_NONBLOCK) != 0) {
		close(slave);
		return -1;
	}
	return slave;
}

/* Our stdin to the terminal's master, as far as it takes it. */
static void tty_input(int readable)
{
	ssize_t n;

	if (readable && R.ilen == 0 && R.in_fd >= 0) {
		do
			n = read(R.in_fd, R.ibuf, sizeof(R.ibuf));
		while (n < 0 && errno == EINTR);
		if (n > 0) {
			R.ilen = (size_t)n;
			R.ioff = 0;
		} else if (!(n < 0 && errno == EAGAIN)) {
			/* The host's input ended: the terminal stays as it is. */
			R.in_fd = -1;
		}
	}
	while (R.ioff < R.ilen) {
		n = write(R.master, R.ibuf + R.ioff, R.ilen - R.ioff);
		if (n > 0) {
			R.ioff += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EINTR))
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* The terminal is gone (EIO): input goes nowhere now. */
		R.in_fd = -1;
		break;
	}
	R.ilen = R.ioff = 0;
}

/* Window sizes from PID 1: each one set on the terminal (its foreground group gets SIGWINCH). */
static void tty_resize(void)
{
	ssize_t n;

	do
		n = read(R.resize_fd, R.rbuf + R.rlen, sizeof(R.rbuf) - R.rlen);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		close(R.resize_fd);
		R.resize_fd = -1;
		return;
	}
	R.rlen += (size_t)n;
	if (R.rlen == sizeof(R.rbuf)) {
		struct winsize ws = {.ws_row = (unsigned short)(R.rbuf[0] << 8 | R.rbuf[1]),
				     .ws_col = (unsigned short)(R.rbuf[2] << 8 | R.rbuf[3])};

		(void)ioctl(R.master, TIOCSWINSZ, &ws);
		R.rlen = 0;
	}
}

int sbx_init_supervise_start(long long deadline_ms, const char *cwd, char **prog)
{
	return sbx_init_supervise_start_tty(deadline_ms, cwd, prog, NULL);
}

/*
 * One function on purpose: the program's start, the loop and the report
 * share the run's state (streams, deadline, how it ended).
 */
int sbx_init_supervise_start_tty(long long deadline_ms,
				 const char *cwd,
				 char **prog,
				 const struct sbx_init_tty *tty)
{
	long long oom_before, oom_after;
	int timed_out = 0, *out_p = R.out_p, *err_p = R.err_p, slave = -1;
	struct spawn_args sa;
	struct exec_report rep;
	int exec_failed = 0;
	struct sbx__frame_exit ex;
	unsigned char payload[SBX_FRAME_EXIT_LEN];
	struct rusage ru;

	R.deadline = (long long)sbx__mono_ms() + deadline_ms;
	R.write_limit = R.deadline + WRITE_GRACE_MS;
	oom_before = oom_kills();
	sa = (struct spawn_args){.out_w = out_p[1], .err_w = err_p[1], .cwd = cwd, .argv = prog};
	R.master = R.in_fd = R.resize_fd = -1;
	if (tty) {
		slave = open_pty(tty);
		if (slave < 0) {
			sbx_init_msg("run: cannot open a terminal: %s", strerror(errno));
			emit(SBX_FRAME_ERROR, NO_TTY, sizeof(NO_TTY) - 1);
			return SBX_INIT_EXIT_USAGE;
		}
		sa.out_w = sa.err_w = slave;
		sa.tty = 1;
		R.in_fd = STDIN_FILENO;
		R.resize_fd = tty->resize_fd;
		if (R.resize_fd >= 0)
			(void)fcntl(R.resize_fd, F_SETFL, fcntl(R.resize_fd, F_GETFL) | O_NONBLOCK);
	}
	R.child = spawn(&sa);
	if (R.child < 0) {
		sbx_init_msg("run: clone: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	/* Also from this side, so the group exists before the program gets to run
	 * (a terminal's program made its own session, and this then fails). */
	if (!tty)
		(void)setpgid(R.child, R.child);
	close(out_p[1]);
	close(err_p[1]);
	/* The child has exec'd or exited: its report, if any, is in. */
	rep = spawn_rep;
	R.out.fd = out_p[0];
	R.err.fd = err_p[0];
	if (tty) {
		/* The program holds the slave; its output is the master's. */
		close(slave);
		close(out_p[0]);
		close(err_p[0]);
		R.out.fd = R.master;
		R.err.fd = -1;
	}

	/* Bounded by the deadline: each pass waits at most until it. */
	while (!R.child_reaped) {
		struct pollfd pfd[6];
		struct stream *st[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
		int k_in = -1, k_rs = -1;
		long long left = R.deadline - (long long)sbx__mono_ms();
		nfds_t n = 0, k;
		int r;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		pfd[n++] = (struct pollfd){.fd = R.sfd, .events = POLLIN};
		if (R.out.fd >= 0) {
			pfd[n] = (struct pollfd){.fd = R.out.fd, .events = POLLIN};
			st[n++] = &R.out;
		}
		if (R.err.fd >= 0) {
			pfd[n] = (struct pollfd){.fd = R.err.fd, .events = POLLIN};
			st[n++] = &R.err;
		}
		if (R.ilen == 0 && R.in_fd >= 0) {
			k_in = (int)n;
			pfd[n++] = (struct pollfd){.fd = R.in_fd, .events = POLLIN};
		} else if (R.ilen) {
			k_in = (int)n;
			pfd[n++] = (struct pollfd){.fd = R.master, .events = POLLOUT};
		}
		if (R.resize_fd >= 0) {
			k_rs = (int)n;
			pfd[n++] = (struct pollfd){.fd = R.resize_fd, .events = POLLIN};
		}
		r = poll(pfd, n, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR) {
			sbx_init_msg("run: poll: %s", strerror(errno));
			break;
		}
		if (r > 0 && pfd[0].revents && read_signals()) {
			sbx_init_msg("run: stopped by a signal");
			kill_tree(KILL_BUDGET_MS);
			return SBX_INIT_EXIT_TERM;
		}
		for (k = 1; r > 0 && k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if ((int)k == k_in)
				tty_input(R.ilen == 0);
			else if ((int)k == k_rs)
				tty_resize();
			else
				(void)pump(st[k]);
		}
		/* Also on timeouts, in case a SIGCHLD was coalesced away. */
		reap();
	}

	kill_tree(KILL_BUDGET_MS);
	if (!R.child_reaped && !timed_out) {
		/* poll failed and the program could not be killed in time. */
		timed_out = 1;
	}
	drain();

	exec_failed = R.child_reaped && rep.stage != 0;

	memset(&ex, 0, sizeof(ex));
	if (timed_out) {
		ex.status = SBX_FRAME_ST_TIMEOUT;
		ex.code = SBX_INIT_EXIT_TIMEOUT;
		if (R.child_reaped && WIFSIGNALED(R.child_status))
			ex.signal = (uint32_t)WTERMSIG(R.child_status);
	} else if (exec_failed) {
		exec_fail_message(&rep, prog[0], cwd);
		ex.status = SBX_FRAME_ST_EXECFAIL;
		ex.code = rep.err == ENOENT ? 127 : 126;
	} else if (WIFSIGNALED(R.child_status)) {
		ex.status = SBX_FRAME_ST_SIGNALED;
		ex.signal = (uint32_t)WTERMSIG(R.child_status);
		ex.code = 128 + (int32_t)ex.signal;
	} else {
		ex.status = SBX_FRAME_ST_EXITED;
		ex.code = WEXITSTATUS(R.child_status);
	}
	oom_after = oom_kills();
	if (oom_before >= 0 && oom_after > oom_before)
		ex.flags |= SBX_FRAME_F_OOM;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		ex.utime_us =
			(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
		ex.stime_us =
			(uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
		ex.maxrss_kb = ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss : 0;
	}
	sbx__frame_exit_encode(payload, &ex);
	emit(SBX_FRAME_EXIT, payload, sizeof(payload));
	return 0;
}
