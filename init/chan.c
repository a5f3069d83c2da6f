/*
 * init/chan.c: PID 1's run channel, the fast path for runs in a live
 * sandbox (docs/protocol.md).
 *
 * The host attaches to the container's stdio before it starts, so PID 1's
 * stdin and stdout are a byte stream only the host holds. Requests come in
 * on stdin (parsed strictly by init/request.c); each run gets a supervisor
 * forked from PID 1 that is exactly `sbx-init run`'s (init/run.c): a
 * subreaper whose program runs in its own process group and whose whole
 * tree dies at the program's exit or its deadline. The supervisor's frames
 * are decoded here and relayed on stdout with the run's id, so the runs in
 * flight share one stream without tearing each other's frames.
 *
 * Why not run the program straight under PID 1: PID 1 is the reaper of
 * everything in the sandbox, so "its descendants" would be every run at
 * once; a supervisor per run keeps each run's tree apart and killable.
 * Supervisors inherit PID 1's lockdown (no_new_privs, no capabilities, the
 * seccomp layer) and non-dumpable flag, so the program can neither read the
 * requests of other runs (their environment may hold secrets) nor forge
 * frames through /proc/1/fd.
 *
 * Everything is bounded: the output queue (the host may stop reading:
 * then supervisors' pipes fill and they stop their runs at their own write
 * limit), each run's buffered stdin (the window, enforced by the parser),
 * the runs in flight. PID 1 never blocks on the host: both ends of the
 * channel are non-blocking and polled.
 */
#include "init/init.h"
#include "util/frame.h"
#include "util/time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUTQ_CAP (4 * (SBX_FRAME_HDR + SBX_FRAME_MAX))
/* Room kept free in the queue for control frames (CREDIT, ERROR, EXIT). */
#define OUTQ_SLACK 16384
/* One read from a supervisor. */
#define RELAY_READ (SBX_FRAME_HDR + SBX_FRAME_MAX)
/*
 * Room a read needs: it may complete a frame whose start an earlier read
 * left in the decoder, and then carry almost another whole one.
 */
#define RELAY_ROOM (2 * RELAY_READ + OUTQ_SLACK)
/*
 * Runs held: those in flight, and those whose EXIT is out while their
 * supervisor is not reaped yet (their id may already be in use again).
 * When all are held, requests are not read until one is freed.
 */
#define RUNS_HELD (2 * SBX_CHAN_RUNS_MAX)

struct run {
	int used;
	unsigned int id;
	pid_t pid; /* the supervisor, or 0 when it never started */
	int reaped;
	int wstatus;
	int frames_fd;	     /* its frames; -1 at EOF */
	int stdin_fd;	     /* the program's stdin; -1 once closed */
	int stdin_gone;	     /* the program stopped reading: input is dropped */
	int eof;	     /* the host's input ended: close stdin once ibuf drains */
	unsigned char *ibuf; /* input the pipe has not taken yet, within the window */
	size_t ilen;
	uint32_t credit; /* input consumed and not yet reported */
	struct sbx__frame_decoder *dec;
	int exit_out; /* its EXIT is queued (or the channel closed): nothing more for it */
	int failed;   /* the supervisor broke down: report once it is reaped */
	char why[200];
	int ctl_fd;	     /* the supervisor's spec pipe, until the spec is written */
	unsigned char *cbuf; /* the spec on its way there (it holds the environment) */
	size_t clen, coff;
	int pty;		      /* a terminal's run: ctl_fd stays for window sizes */
	unsigned char rs[CTL_RESIZE]; /* the latest window size not yet passed on */
	int rs_pending;
};

/* A supervisor forked ahead of its run, waiting for a spec on ctl_fd. */
struct spare {
	pid_t pid; /* 0: none */
	int ctl_fd;
	int frames_fd;
	int stdin_fd;
};

static struct {
	int sfd;
	int in_fd;   /* -1 once the channel is closed */
	int out_fd;  /* -1 once nothing more is written */
	int closing; /* closed: flush what is queued, then stop writing */
	struct sbx_init_req req;
	struct run runs[RUNS_HELD];
	unsigned char outq[OUTQ_CAP];
	size_t oh, ol; /* queued bytes: outq[oh .. oh + ol) */
	unsigned char rbuf[RELAY_READ];
	struct spare spare;
	int spare_wanted; /* the spare went to a run: fork the next one */
	int sweep;	  /* no subreapers: orphans of runs are ours to end */
	int swept;	  /* no run ended since the last sweep */
	long long sweep_ms;
	long long deadline; /* unix seconds: the sandbox ends then (DEADLINE moves it) */
	int deadline_ask;   /* a DEADLINE came: DEADLINE_AT is owed to the host */
} C;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The live run of an id: once its EXIT is out, the id may already name a new run. */
static struct run *run_of(unsigned int id)
{
	size_t i;

	for (i = 0; i < RUNS_HELD; i++)
		if (C.runs[i].used && !C.runs[i].exit_out && C.runs[i].id == id)
			return &C.runs[i];
	return NULL;
}

/* Drops what is left of the spec (wiped) and the window sizes; closes the pipe. */
static void ctl_done(struct run *r)
{
	if (r->cbuf)
		explicit_bzero(r->cbuf, r->clen);
	free(r->cbuf);
	r->cbuf = NULL;
	r->clen = r->coff = 0;
	r->rs_pending = 0;
	close_fd(&r->ctl_fd);
}

/* Its EXIT is out: the parser may free the id (at its EOF), the host hears no more. */
static void exit_out(struct run *r)
{
	if (r->exit_out)
		return;
	r->exit_out = 1;
	r->ilen = 0;
	r->credit = 0;
	close_fd(&r->stdin_fd);
	ctl_done(r);
	sbx_init_req_finished(&C.req, r->id);
}

static size_t outq_room(void)
{
	return OUTQ_CAP - C.ol;
}

/* Queues one frame; -1 when the queue has no room (or nothing is written any more). */
static int enqueue(int type, unsigned int id, const void *p, size_t len)
{
	if (C.out_fd < 0 || outq_room() < SBX_FRAME_HDR + len)
		return -1;
	if (C.oh + C.ol + SBX_FRAME_HDR + len > OUTQ_CAP) {
		memmove(C.outq, C.outq + C.oh, C.ol);
		C.oh = 0;
	}
	sbx__chan_header(C.outq + C.oh + C.ol, type, id, (uint32_t)len);
	if (len)
		memcpy(C.outq + C.oh + C.ol + SBX_FRAME_HDR, p, len);
	C.ol += SBX_FRAME_HDR + len;
	return 0;
}

static void drop_spare(void)
{
	/* End of file on its control pipe: it exits. */
	close_fd(&C.spare.ctl_fd);
	close_fd(&C.spare.frames_fd);
	close_fd(&C.spare.stdin_fd);
	C.spare.pid = 0;
}

/*
 * Hands the spec to the run's supervisor as far as its pipe takes it; for a
 * run with a terminal, then the latest window size (4 bytes: one write to a
 * pipe, whole or not at all).
 */
static void write_ctl(struct run *r)
{
	ssize_t w;

	while (r->ctl_fd >= 0 && r->coff < r->clen) {
		w = write(r->ctl_fd, r->cbuf + r->coff, r->clen - r->coff);
		if (w > 0) {
			r->coff += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		/* The supervisor is gone: its frames pipe tells the rest. */
		ctl_done(r);
		return;
	}
	if (r->cbuf)
		explicit_bzero(r->cbuf, r->clen);
	free(r->cbuf);
	r->cbuf = NULL;
	r->clen = r->coff = 0;
	if (!r->pty) {
		close_fd(&r->ctl_fd);
		return;
	}
	while (r->ctl_fd >= 0 && r->rs_pending) {
		w = write(r->ctl_fd, r->rs, sizeof(r->rs));
		if (w == (ssize_t)sizeof(r->rs))
			r->rs_pending = 0;
		else if (w < 0 && errno == EINTR)
			continue;
		else if (w < 0 && errno == EAGAIN)
			return;
		else
			ctl_done(r);
	}
}

/* Stops serving: the runs in flight are stopped and nothing more is read. */
static void channel_close(const char *why)
{
	size_t i;

	if (C.closing)
		return;
	if (why) {
		size_t n = strlen(why);

		sbx_init_msg("run channel closed: %s", why);
		(void)enqueue(SBX_FRAME_ERROR, 0, why,
			      n < SBX_CHAN_ERROR_MAX ? n : SBX_CHAN_ERROR_MAX);
	}
	C.closing = 1;
	C.in_fd = -1;
	sbx_init_req_done(&C.req);
	for (i = 0; i < RUNS_HELD; i++) {
		struct run *r = &C.runs[i];

		if (!r->used)
			continue;
		/* The supervisor kills its tree on SIGTERM (init/run.c). */
		if (r->pid > 0 && !r->reaped)
			(void)kill(r->pid, SIGTERM);
		close_fd(&r->frames_fd);
		close_fd(&r->stdin_fd);
		ctl_done(r);
		exit_out(r);
	}
	drop_spare();
}

static void flush(void)
{
	while (C.out_fd >= 0 && C.ol) {
		ssize_t w = write(C.out_fd, C.outq + C.oh, C.ol);

		if (w > 0) {
			C.oh += (size_t)w;
			C.ol -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		/* Nobody reads the channel any more. */
		channel_close(NULL);
		C.out_fd = -1;
		C.ol = 0;
	}
	C.oh = 0;
	if (C.closing)
		C.out_fd = -1;
}

/* Reports input taken off a run's hands: to the parser now, to the host as CREDIT. */
static void consumed(struct run *r, size_t n)
{
	/* After its EXIT the id is the parser's to reuse: no more accounting. */
	if (r->exit_out)
		return;
	sbx_init_req_consumed(&C.req, r->id, (uint32_t)n);
	r->credit += (uint32_t)n;
}

static void drop_input(struct run *r)
{
	consumed(r, r->ilen);
	r->ilen = 0;
	r->stdin_gone = 1;
	close_fd(&r->stdin_fd);
}

/* Moves buffered input into the program's pipe as far as it takes it. */
static void write_input(struct run *r)
{
	size_t off = 0;

	while (r->stdin_fd >= 0 && off < r->ilen) {
		ssize_t w = write(r->stdin_fd, r->ibuf + off, r->ilen - off);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		/* EPIPE: the program closed its stdin; the rest goes nowhere. */
		consumed(r, off);
		memmove(r->ibuf, r->ibuf + off, r->ilen - off);
		r->ilen -= off;
		drop_input(r);
		return;
	}
	if (off) {
		consumed(r, off);
		memmove(r->ibuf, r->ibuf + off, r->ilen - off);
		r->ilen -= off;
	}
	if (r->ilen == 0 && r->eof)
		close_fd(&r->stdin_fd);
}

static void on_stdin(void *arg, unsigned int id, const unsigned char *p, size_t len)
{
	struct run *r = run_of(id);

	(void)arg;
	if (!r)
		return;
	if (r->exit_out || r->stdin_gone || r->stdin_fd < 0) {
		consumed(r, len);
		return;
	}
	/* The parser holds each run to the window, and ibuf is part of it. */
	if (!r->ibuf)
		r->ibuf = malloc(SBX_CHAN_WINDOW);
	if (!r->ibuf || len > SBX_CHAN_WINDOW - r->ilen) {
		sbx_init_msg("run %u: no room for its input; it gets end of file", id);
		consumed(r, len);
		drop_input(r);
		return;
	}
	memcpy(r->ibuf + r->ilen, p, len);
	r->ilen += len;
	write_input(r);
}

static void on_stdin_eof(void *arg, unsigned int id)
{
	struct run *r = run_of(id);

	(void)arg;
	if (!r)
		return;
	r->eof = 1;
	if (r->ilen == 0)
		close_fd(&r->stdin_fd);
}

static void on_resize(void *arg, unsigned int id, uint16_t rows, uint16_t cols)
{
	struct run *r = run_of(id);

	(void)arg;
	if (!r || !r->pty || r->ctl_fd < 0)
		return;
	/* Only the latest size matters: one that has not gone out yet is replaced. */
	r->rs[0] = (unsigned char)(rows >> 8);
	r->rs[1] = (unsigned char)rows;
	r->rs[2] = (unsigned char)(cols >> 8);
	r->rs[3] = (unsigned char)cols;
	r->rs_pending = 1;
	write_ctl(r);
}

/*
 * Forks the next run's supervisor ahead of its request, so that no fork is
 * on a run's way (a fork is the costliest step of a short run on a VM).
 */
static int make_spare(void)
{
	int in_p[2] = {-1, -1}, fr_p[2] = {-1, -1}, ctl_p[2] = {-1, -1};
	pid_t pid;

	if (pipe2(in_p, O_CLOEXEC) != 0 || pipe2(fr_p, O_CLOEXEC) != 0 ||
	    pipe2(ctl_p, O_CLOEXEC) != 0 || fcntl(fr_p[0], F_SETFL, O_NONBLOCK) != 0 ||
	    fcntl(in_p[1], F_SETFL, O_NONBLOCK) != 0 || fcntl(ctl_p[1], F_SETFL, O_NONBLOCK) != 0)
		goto fail;
	pid = fork();
	if (pid == 0)
		sbx_init_spare_main(in_p[0], fr_p[1], ctl_p[0]);
	if (pid < 0)
		goto fail;
	close(in_p[0]);
	close(fr_p[1]);
	close(ctl_p[0]);
	C.spare = (struct spare){
		.pid = pid, .ctl_fd = ctl_p[1], .frames_fd = fr_p[0], .stdin_fd = in_p[1]};
	return 0;
fail:
	close_fd(&in_p[0]);
	close_fd(&in_p[1]);
	close_fd(&fr_p[0]);
	close_fd(&fr_p[1]);
	close_fd(&ctl_p[0]);
	close_fd(&ctl_p[1]);
	return -1;
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static void on_start(void *arg, struct sbx_init_spec *s)
{
	struct run *r = NULL;
	size_t i;

	(void)arg;
	/* Requests are read only with room for every run the parser may admit (runs_free). */
	for (i = 0; i < RUNS_HELD && !r; i++)
		if (!C.runs[i].used)
			r = &C.runs[i];
	if (!r) {
		channel_close("no room for a run the parser admitted");
		sbx_init_spec_free(s);
		return;
	}
	*r = (struct run){.used = 1, .id = s->id, .frames_fd = -1, .stdin_fd = -1, .ctl_fd = -1};
	r->dec = malloc(sizeof(*r->dec));
	r->cbuf = malloc(CTL_HEAD + (size_t)s->len);
	if (!r->dec || !r->cbuf) {
		snprintf(r->why, sizeof(r->why), "cannot set up the run: out of memory");
		goto fail;
	}
	if (!C.spare.pid && make_spare() != 0) {
		snprintf(r->why, sizeof(r->why), "cannot start the run: %s", strerror(errno));
		goto fail;
	}
	sbx__frame_decoder_init(r->dec);
	r->pid = C.spare.pid;
	r->frames_fd = C.spare.frames_fd;
	r->stdin_fd = C.spare.stdin_fd;
	r->ctl_fd = C.spare.ctl_fd;
	C.spare = (struct spare){.ctl_fd = -1, .frames_fd = -1, .stdin_fd = -1};
	C.spare_wanted = 1;
	put_be(r->cbuf, (uint64_t)s->deadline_ms, 8);
	put_be(r->cbuf + 8, s->argc, 4);
	put_be(r->cbuf + 12, s->envc, 4);
	put_be(r->cbuf + 16, s->len, 4);
	put_be(r->cbuf + 20, s->pty ? CTL_PTY : 0, 4);
	put_be(r->cbuf + 24, s->rows, 2);
	put_be(r->cbuf + 26, s->cols, 2);
	r->pty = s->pty;
	memcpy(r->cbuf + CTL_HEAD, s->blob, s->len);
	r->clen = CTL_HEAD + (size_t)s->len;
	sbx_init_spec_free(s);
	write_ctl(r);
	return;
fail:
	free(r->cbuf);
	r->cbuf = NULL;
	r->failed = 1;
	r->reaped = 1;
	sbx_init_spec_free(s);
}

/* The host moves the sandbox's deadline (after a pause) or asks for it. */
static void on_deadline(void *arg, uint64_t unix_s)
{
	(void)arg;
	if (unix_s)
		C.deadline = (long long)unix_s;
	C.deadline_ask = 1;
}

static const struct sbx_init_req_ops req_ops = {
	.start = on_start,
	.stdin_data = on_stdin,
	.stdin_eof = on_stdin_eof,
	.resize = on_resize,
	.deadline = on_deadline,
};

static void queue_credit(struct run *r)
{
	unsigned char p[SBX_FRAME_CREDIT_LEN];

	while (r->credit && !r->exit_out) {
		uint32_t n = r->credit > SBX_CHAN_WINDOW ? SBX_CHAN_WINDOW : r->credit;

		sbx__chan_credit_encode(p, n);
		if (enqueue(SBX_FRAME_CREDIT, r->id, p, sizeof(p)) != 0)
			return;
		r->credit -= n;
	}
}

static int relay(int type, const unsigned char *p, size_t len, void *arg)
{
	struct run *r = arg;

	if (r->exit_out)
		return 0;
	/* Empty data frames carry nothing; the channel does not allow them. */
	if (len == 0 && (type == SBX_FRAME_STDOUT || type == SBX_FRAME_STDERR))
		return 0;
	if (len == 0 && type == SBX_FRAME_ERROR)
		return 0;
	if (type == SBX_FRAME_ERROR && len > SBX_CHAN_ERROR_MAX)
		len = SBX_CHAN_ERROR_MAX;
	if (type == SBX_FRAME_EXIT)
		queue_credit(r);
	if (enqueue(type, r->id, p, len) != 0)
		return -1;
	if (type == SBX_FRAME_EXIT)
		exit_out(r);
	return 0;
}

static void read_frames(struct run *r)
{
	ssize_t n;

	/* Another run's output may have taken the room since the poll. */
	if (outq_room() < RELAY_ROOM)
		return;
	do
		n = read(r->frames_fd, C.rbuf, sizeof(C.rbuf));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n > 0 && sbx__frame_feed(r->dec, C.rbuf, (size_t)n, relay, r) == 0)
		return;
	if (n > 0) {
		/* Our own supervisor broke the protocol: stop it and its tree. */
		if (r->pid > 0 && !r->reaped)
			(void)kill(r->pid, SIGTERM);
		snprintf(r->why, sizeof(r->why), "the run's supervisor sent a malformed frame");
	} else {
		snprintf(r->why, sizeof(r->why), "the run's supervisor ended without a report");
	}
	close_fd(&r->frames_fd);
	if (!r->exit_out)
		r->failed = 1;
}

/* A supervisor that broke down: say why, and end the run for the host. */
static void report_failure(struct run *r)
{
	struct sbx__frame_exit ex = {.status = SBX_FRAME_ST_EXECFAIL, .code = 126};
	unsigned char p[SBX_FRAME_EXIT_LEN];
	size_t n = strlen(r->why);

	if (outq_room() < 2 * SBX_FRAME_HDR + n + sizeof(p) + SBX_FRAME_HDR + SBX_FRAME_CREDIT_LEN)
		return;
	if (r->pid > 0 && WIFSIGNALED(r->wstatus)) {
		ex.status = SBX_FRAME_ST_SIGNALED;
		ex.signal = (uint32_t)WTERMSIG(r->wstatus);
		ex.code = 128 + (int32_t)ex.signal;
	}
	sbx__frame_exit_encode(p, &ex);
	queue_credit(r);
	(void)enqueue(SBX_FRAME_ERROR, r->id, r->why, n);
	(void)enqueue(SBX_FRAME_EXIT, r->id, p, sizeof(p));
	exit_out(r);
	r->failed = 0;
}

static void run_free(struct run *r)
{
	close_fd(&r->frames_fd);
	close_fd(&r->stdin_fd);
	ctl_done(r);
	free(r->ibuf);
	free(r->dec);
	memset(r, 0, sizeof(*r));
	r->frames_fd = r->stdin_fd = r->ctl_fd = -1;
}

static void reap(void)
{
	int i;

	for (i = 0; i < 65536; i++) {
		int st;
		size_t k;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			if (p == C.spare.pid)
				drop_spare();
			for (k = 0; k < RUNS_HELD; k++) {
				if (C.runs[k].used && C.runs[k].pid == p) {
					C.runs[k].reaped = 1;
					C.runs[k].wstatus = st;
				}
			}
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		return;
	}
}

/* Reads pending signals; returns 1 if one of them asks the sandbox to stop. */
static int read_signals(void)
{
	struct signalfd_siginfo si[16];
	int i, stop = 0;

	for (i = 0; i < 64; i++) {
		ssize_t n = read(C.sfd, si, sizeof(si));
		size_t k;

		if (n <= 0)
			break;
		for (k = 0; k < (size_t)n / sizeof(si[0]); k++) {
			if (si[k].ssi_signo == SIGCHLD)
				reap();
			if (si[k].ssi_signo == SIGTERM || si[k].ssi_signo == SIGINT ||
			    si[k].ssi_signo == SIGHUP)
				stop = 1;
		}
	}
	return stop;
}

static void read_requests(void)
{
	ssize_t n;
	int rc;

	do
		n = read(C.in_fd, C.rbuf, sizeof(C.rbuf));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		/* The host let go of the channel: its runs cannot be answered. */
		sbx_init_msg("the run channel's input ended");
		channel_close(NULL);
		return;
	}
	rc = sbx_init_req_feed(&C.req, C.rbuf, (size_t)n);
	/* Requests hold environments, secrets included: leave no copy about. */
	explicit_bzero(C.rbuf, (size_t)n);
	if (rc != 0)
		channel_close(C.req.why);
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/*
 * Whether requests may be read: one read may start as many runs as the
 * parser lets be in flight, and each needs a place.
 */
static int runs_free(void)
{
	size_t n = 0;

	for (size_t i = 0; i < RUNS_HELD; i++)
		n += !C.runs[i].used;
	return n >= SBX_CHAN_RUNS_MAX;
}

/* Whether a run is in flight (its EXIT not out yet). */
static int runs_busy(void)
{
	for (size_t i = 0; i < RUNS_HELD; i++)
		if (C.runs[i].used && !C.runs[i].exit_out)
			return 1;
	return 0;
}

/*
 * Without subreapers, what a run left behind is ended once no run is in
 * flight: when a run has finished since the last sweep, else every second.
 */
static void sweep_orphans(void)
{
	pid_t keep[RUNS_HELD + 1];
	size_t n = 0, i;
	long long now = (long long)sbx__mono_ms();

	if (!C.sweep || runs_busy() || (C.swept && now - C.sweep_ms < 1000))
		return;
	for (i = 0; i < RUNS_HELD; i++)
		if (C.runs[i].used && C.runs[i].pid > 0 && !C.runs[i].reaped)
			keep[n++] = C.runs[i].pid;
	if (C.spare.pid > 0)
		keep[n++] = C.spare.pid;
	(void)sbx_init_sweep_orphans(keep, n);
	C.swept = 1;
	C.sweep_ms = now;
}

/* After each pass: credits, reports of broken-down runs, runs that are done. */
static void settle(void)
{
	unsigned char dp[SBX_FRAME_DEADLINE_LEN];
	size_t i;

	if (C.deadline_ask) {
		sbx__chan_deadline_encode(dp, (uint64_t)C.deadline);
		if (enqueue(SBX_FRAME_DEADLINE_AT, 0, dp, sizeof(dp)) == 0)
			C.deadline_ask = 0;
	}
	for (i = 0; i < RUNS_HELD; i++) {
		struct run *r = &C.runs[i];

		if (!r->used)
			continue;
		queue_credit(r);
		if (r->failed && r->reaped && r->frames_fd < 0 && !r->exit_out)
			report_failure(r);
		if ((r->exit_out || C.closing) && (r->pid == 0 || r->reaped) && r->frames_fd < 0) {
			run_free(r);
			C.swept = 0;
		}
	}
}

/*
 * One function on purpose (some 130 lines): PID 1's event loop, with the
 * reaping of children, the frames in and out and the deadline in one pass,
 * so that every pass is bounded by the deadline in one place.
 */
int sbx_init_chan_serve(long long deadline)
{
	struct sbx__chan_hello hello = {.version = SBX_CHAN_VERSION,
					.runs_max = SBX_CHAN_RUNS_MAX,
					.window = SBX_CHAN_WINDOW};
	unsigned char hp[SBX_FRAME_HELLO_LEN];
	sigset_t all;
	size_t i;

	sigfillset(&all);
	C.sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	if (C.sfd < 0) {
		sbx_init_msg("signalfd: %s", strerror(errno));
		return SBX_INIT_EXIT_USAGE;
	}
	/*
	 * Without subreapers the orphans of runs come to us, and we end them
	 * between runs. As PID 1 the call changes nothing; elsewhere (tests)
	 * it keeps orphans ours.
	 */
	C.sweep = sbx_init_no_subreapers();
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	set_nonblock(STDIN_FILENO);
	set_nonblock(STDOUT_FILENO);
	C.in_fd = STDIN_FILENO;
	C.out_fd = STDOUT_FILENO;
	C.deadline = deadline;
	for (i = 0; i < RUNS_HELD; i++)
		C.runs[i].frames_fd = C.runs[i].stdin_fd = C.runs[i].ctl_fd = -1;
	C.spare = (struct spare){.ctl_fd = -1, .frames_fd = -1, .stdin_fd = -1};
	sbx_init_req_init(&C.req, &req_ops, NULL);
	sbx__chan_hello_encode(hp, &hello);
	(void)enqueue(SBX_FRAME_HELLO, 0, hp, sizeof(hp));
	flush();
	(void)make_spare();

	/* Bounded by the deadline: every pass waits at most until it. */
	for (;;) {
		struct pollfd pfd[3 + 3 * RUNS_HELD];
		struct run *who[3 + 3 * RUNS_HELD];
		enum { K_SIG, K_IN, K_OUT, K_FRAMES, K_STDIN, K_CTL } kind[3 + 3 * RUNS_HELD];
		struct timespec now;
		long long left_ms;
		nfds_t n = 0, k;
		int r;

		if (clock_gettime(CLOCK_REALTIME, &now) != 0) {
			sbx_init_msg("cannot read the clock: %s", strerror(errno));
			sbx_init_kill_sandbox();
			return SBX_INIT_EXIT_USAGE;
		}
		/* A DEADLINE the host sent while the sandbox was paused is read
		 * before the deadline it moves is judged. */
		if (now.tv_sec >= C.deadline && C.in_fd >= 0 && runs_free())
			read_requests();
		if (now.tv_sec >= C.deadline) {
			sbx_init_msg("sandbox deadline reached");
			sbx_init_kill_sandbox();
			return SBX_INIT_EXIT_TIMEOUT;
		}
		left_ms = (C.deadline - now.tv_sec) * 1000 - now.tv_nsec / 1000000;
		if (left_ms > 1000)
			left_ms = 1000;

		pfd[n] = (struct pollfd){.fd = C.sfd, .events = POLLIN};
		kind[n] = K_SIG;
		who[n++] = NULL;
		if (C.in_fd >= 0 && runs_free()) {
			pfd[n] = (struct pollfd){.fd = C.in_fd, .events = POLLIN};
			kind[n] = K_IN;
			who[n++] = NULL;
		}
		if (C.out_fd >= 0 && C.ol) {
			pfd[n] = (struct pollfd){.fd = C.out_fd, .events = POLLOUT};
			kind[n] = K_OUT;
			who[n++] = NULL;
		}
		for (i = 0; i < RUNS_HELD; i++) {
			struct run *rr = &C.runs[i];

			if (!rr->used)
				continue;
			/* Only read a supervisor when its output is sure to fit. */
			if (rr->frames_fd >= 0 && outq_room() >= RELAY_ROOM) {
				pfd[n] = (struct pollfd){.fd = rr->frames_fd, .events = POLLIN};
				kind[n] = K_FRAMES;
				who[n++] = rr;
			}
			if (rr->stdin_fd >= 0 && rr->ilen) {
				pfd[n] = (struct pollfd){.fd = rr->stdin_fd, .events = POLLOUT};
				kind[n] = K_STDIN;
				who[n++] = rr;
			}
			if (rr->ctl_fd >= 0 && (rr->coff < rr->clen || rr->rs_pending)) {
				pfd[n] = (struct pollfd){.fd = rr->ctl_fd, .events = POLLOUT};
				kind[n] = K_CTL;
				who[n++] = rr;
			}
		}
		r = poll(pfd, n, (int)left_ms);
		if (r < 0 && errno != EINTR) {
			struct timespec pause = {0, 100 * 1000 * 1000};

			sbx_init_msg("poll: %s", strerror(errno));
			nanosleep(&pause, NULL);
			continue;
		}
		for (k = 0; r > 0 && k < n; k++) {
			if (!pfd[k].revents)
				continue;
			switch (kind[k]) {
			case K_SIG:
				if (read_signals()) {
					sbx_init_kill_sandbox();
					return SBX_INIT_EXIT_TERM;
				}
				break;
			case K_IN:
				if (C.in_fd >= 0)
					read_requests();
				break;
			case K_OUT:
				flush();
				break;
			case K_FRAMES:
				/* It may have been closed earlier in this pass. */
				if (who[k]->frames_fd == pfd[k].fd)
					read_frames(who[k]);
				break;
			case K_STDIN:
				if (who[k]->stdin_fd == pfd[k].fd)
					write_input(who[k]);
				break;
			case K_CTL:
				if (who[k]->ctl_fd == pfd[k].fd)
					write_ctl(who[k]);
				break;
			}
		}
		settle();
		flush();
		sweep_orphans();
		if (C.spare_wanted && !C.spare.pid && !C.closing && !runs_busy()) {
			C.spare_wanted = 0;
			(void)make_spare();
		}
	}
}
