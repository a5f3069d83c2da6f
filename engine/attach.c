/*
 * engine/attach.c: runs over the init's channel, the fast path of a docker
 * sandbox (docs/protocol.md).
 *
 * At create, before the container starts, the host attaches to its stdio
 * (the container has OpenStdin) and keeps that connection: PID 1, the
 * project's init, reads run requests on its stdin and answers in frames on
 * its stdout, so a run costs two writes and a few reads on a socket that is
 * already open instead of three Engine API calls and a runtime exec. The
 * environment, secrets included, travels only on this stream: no Engine
 * record (exec inspect, container config, daemon log) ever holds it.
 *
 * The host trusts nothing it reads: engine/chan.c checks every byte, and a
 * violation, a run past its host deadline (the run's own plus a grace) or a
 * cancel kills the sandbox. Runs fall back to docker exec when the channel
 * is gone, busy or broken, but only when the request cannot have reached
 * the init, so that no run is started twice; a channel lost mid-run fails
 * that run and sends the later ones through exec. Only the handle that
 * created a sandbox holds its channel: a second attacher would share its
 * stdin, so sbx_sandbox_open() handles use exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

#include "cgroups/cgroups-int.h"
#include "engine/chan-int.h"
#include "engine/docker-int.h"
#include "util/error-int.h"
#include "util/secmem.h"

/* Reads between runs, of what the init said while idle, are bounded. */
#define IDLE_READS 16
/* How long create waits for the init's HELLO before settling for exec. */
#define HELLO_WAIT_MS 5000

struct sbx__chan {
	struct sbx__hijack hj;
	pthread_mutex_t lock; /* held by the run in flight */
	int broken;	      /* no more runs over it */
	unsigned int next_id;
	uint32_t window;
	struct sbx__chan_rx rx;
	unsigned char stdin_frame[SBX_FRAME_HDR + SBX_FRAME_MAX];
	/* A run with a terminal in flight: window sizes from other threads
	 * (rows << 16 | cols, 0: none pending), and a pipe that wakes the run. */
	int tty_run;
	uint32_t rs;
	int wake[2];
};

static struct sbx__chan *chan_new(void)
{
	struct sbx__chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->hj.fd = -1;
	c->wake[0] = c->wake[1] = -1;
	c->next_id = 1;
	pthread_mutex_init(&c->lock, NULL);
	sbx__chan_rx_init(&c->rx);
	return c;
}

void sbx__chan_free(struct sbx__chan *c)
{
	if (!c)
		return;
	if (c->hj.curl)
		sbx__hijack_close(&c->hj);
	else if (c->hj.fd >= 0)
		close(c->hj.fd);
	sbx__chan_rx_done(&c->rx);
	pthread_mutex_destroy(&c->lock);
	if (c->wake[0] >= 0) {
		close(c->wake[0]);
		close(c->wake[1]);
	}
	free(c);
}

int sbx__chan_resize(struct sbx__chan *c, unsigned int rows, unsigned int cols)
{
	ssize_t w;

	if (!c || !__atomic_load_n(&c->tty_run, __ATOMIC_SEQ_CST))
		return -1;
	__atomic_store_n(&c->rs, (uint32_t)rows << 16 | cols, __ATOMIC_SEQ_CST);
	w = write(c->wake[1], "w", 1);
	(void)w; /* a full pipe already wakes the run */
	return 0;
}

/* The next frame of a run with a terminal or a streamed stdin, if one is due:
 * a window size set since, else stdin read from its fd once poll said so. */
static size_t
next_tty_frame(struct sbx__chan *c, struct sbx__chan_run *run, int *in_open, int *in_ready)
{
	const struct sbx__run_req *req = run->req;
	unsigned char *w = c->stdin_frame;
	uint32_t rs = req->pty ? __atomic_exchange_n(&c->rs, 0, __ATOMIC_SEQ_CST) : 0;
	ssize_t n;
	size_t room;

	if (rs) {
		sbx__chan_header(w, SBX_FRAME_RESIZE, run->id, SBX_FRAME_RESIZE_LEN);
		sbx__chan_resize_encode(w + SBX_FRAME_HDR, (uint16_t)(rs >> 16), (uint16_t)rs);
		return SBX_FRAME_HDR + SBX_FRAME_RESIZE_LEN;
	}
	if (!*in_open || !*in_ready || run->stdin_sent - run->stdin_acked >= c->window)
		return 0;
	room = c->window - (size_t)(run->stdin_sent - run->stdin_acked);
	if (room > SBX_FRAME_MAX)
		room = SBX_FRAME_MAX;
	*in_ready = 0;
	n = read(req->stdin_fd, w + SBX_FRAME_HDR, room);
	if (n > 0) {
		sbx__chan_header(w, SBX_FRAME_STDIN, run->id, (uint32_t)n);
		run->stdin_sent += (uint64_t)n;
		return SBX_FRAME_HDR + (size_t)n;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		*in_open = 0; /* its end (or an fd that fails): STDIN_EOF goes */
	return 0;
}

int sbx__chan_attach(struct sbx__docker *d, const char *id, struct sbx__chan **out)
{
	struct sbx__chan *c = chan_new();
	char path[256];
	int rc;

	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	snprintf(path, sizeof(path), "/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1",
		 id);
	rc = sbx__http_hijack(&d->http, path, "", 0, &c->hj);
	if (rc < 0) {
		sbx__chan_free(c);
		return rc;
	}
	/* Nothing can have come before the start; whatever did is judged with the rest. */
	if (c->hj.pre_len)
		(void)sbx__chan_rx_feed(&c->rx, c->hj.pre, c->hj.pre_len);
	*out = c;
	return 0;
}

void sbx__chan_open(struct sbx__docker *d, const char *id, struct sbx__chan **out)
{
	*out = NULL;
	if (sbx__chan_attach(d, id, out) < 0)
		sbx__error_clear();
}

int sbx__chan_start(struct sbx__chan **c, uint64_t create_deadline)
{
	uint64_t deadline = sbx__mono_ms() + HELLO_WAIT_MS;
	int rc;

	if (!*c)
		return 0;
	rc = sbx__chan_ready(*c, create_deadline < deadline ? create_deadline : deadline);
	if (rc == 0)
		return 0;
	sbx__chan_free(*c);
	*c = NULL;
	return rc < 0 ? rc : 0;
}

int sbx__chan_from_fd(int fd, struct sbx__chan **out)
{
	struct sbx__chan *c = chan_new();

	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	c->hj.fd = fd;
	*out = c;
	return 0;
}

/* Reads once without waiting: 1 read, 0 nothing there, -1 end of stream or error. */
static int read_some(struct sbx__chan *c, int *rx_rc)
{
	unsigned char buf[65536];
	ssize_t r = recv(c->hj.fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (r <= 0)
		return -1;
	*rx_rc = sbx__chan_rx_feed(&c->rx, buf, (size_t)r);
	return 1;
}

int sbx__chan_ready(struct sbx__chan *c, uint64_t deadline)
{
	int rx_rc = c->rx.sticky;

	while (!c->rx.hello && rx_rc == SBX_CHAN_RX_OK) {
		struct pollfd pfd = {.fd = c->hj.fd, .events = POLLIN};
		uint64_t now = sbx__mono_ms();
		int r;

		if (now >= deadline)
			break;
		if (poll(&pfd, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		r = read_some(c, &rx_rc);
		if (r < 0)
			break;
	}
	if (rx_rc == SBX_CHAN_RX_VIOLATION)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT,
				      "the sandbox's init broke the run protocol at start (%s)",
				      c->rx.why ? c->rx.why : "?");
	if (!c->rx.hello || rx_rc != SBX_CHAN_RX_OK || c->rx.hi.version != SBX_CHAN_VERSION) {
		c->broken = 1;
		return SBX_CHAN_FALLBACK;
	}
	c->window = c->rx.hi.window < SBX_CHAN_WINDOW ? c->rx.hi.window : SBX_CHAN_WINDOW;
	return 0;
}

/*
 * Reads what the init said since the last run, which may only be
 * diagnostics: returns 0, SBX_CHAN_FALLBACK when the connection is gone
 * or the init closed the channel, or a negative rx code.
 */
static int read_idle(struct sbx__chan *c)
{
	for (int i = 0; i < IDLE_READS; i++) {
		int rx_rc = SBX_CHAN_RX_OK, r = read_some(c, &rx_rc);

		if (r < 0 || rx_rc == SBX_CHAN_RX_CLOSED)
			return SBX_CHAN_FALLBACK;
		if (rx_rc != SBX_CHAN_RX_OK)
			return rx_rc;
		if (r == 0)
			return 0;
	}
	return 0;
}

/* Kills the sandbox because of how a run ended, and records it for core. */
static void end_sandbox(struct sbx__docker *d,
			struct sbx__docker_box *b,
			const struct sbx__run_req *req,
			int how)
{
	struct sbx__error_saved saved;

	/* The kill's own error must not replace the reason. */
	sbx__error_save(&saved);
	(void)sbx__docker_kill(d, b);
	if (saved.code != SBX_OK)
		sbx__error_restore(&saved, saved.code);
	else
		sbx__error_clear();
	if (req->ended)
		*req->ended = how;
}

enum run_end { RUN_GOING, RUN_DONE, RUN_HOST_TIMEOUT, RUN_LOST, RUN_RX };

/*
 * One function on purpose (some 200 lines): the loop, its four ends and the
 * reading of the caps after it share one run's state (the decoder, the two
 * deadlines, how the run ended, what was written), and the order of the
 * steps is the channel's protocol; split, each part would take most of it
 * by pointer.
 */
int sbx__chan_run(struct sbx__docker *d,
		  struct sbx__docker_box *b,
		  const struct sbx__run_req *req,
		  sbx_result *res)
{
	struct sbx__chan *c = b->chan;
	struct sbx__chan_run run = {.req = req};
	unsigned char *wreq = NULL, *w;
	size_t wreq_len = 0, wreq_alloc = 0, wlen, wpos = 0;
	const unsigned char *in = req->stdin_data;
	size_t in_left = req->stdin_len;
	uint64_t start = sbx__mono_ms(), deadline;
	long long since = (long long)time(NULL) - 1;
	int rc, rx_rc = SBX_CHAN_RX_OK, eof_queued = 0, delivered = 0, have_u0;
	int in_open = req->stdin_fd >= 0, in_ready = 0;
	enum run_end end = RUN_GOING;
	sbx_cgroup_usage u0, u1;
	_cleanup_oom_watch_ struct sbx__cgroup_oom_watch oomw = {0};

	if (!c || (b->chan_no_secrets && req->has_secrets) || pthread_mutex_trylock(&c->lock) != 0)
		return SBX_CHAN_FALLBACK;
	if (c->broken || __atomic_load_n(&b->dead, __ATOMIC_SEQ_CST)) {
		pthread_mutex_unlock(&c->lock);
		return SBX_CHAN_FALLBACK;
	}
	run.id = c->next_id;
	rc = sbx__chan_encode_request(&wreq, &wreq_len, &wreq_alloc, run.id, req);
	if (rc != 0) {
		pthread_mutex_unlock(&c->lock);
		if (rc > 0)
			return SBX_CHAN_FALLBACK;
		return sbx__error_os(SBX_EDENIED, errno,
				     "cannot lock memory for the run's environment "
				     "(RLIMIT_MEMLOCK)");
	}
	c->next_id = c->next_id % SBX_CHAN_ID_MAX + 1;
	if (req->pty && c->wake[0] < 0 && pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		c->wake[0] = c->wake[1] = -1;
		sbx__secmem_free(wreq, wreq_alloc);
		pthread_mutex_unlock(&c->lock);
		return SBX_CHAN_FALLBACK;
	}
	rc = read_idle(c);
	if (rc != 0) {
		sbx__secmem_free(wreq, wreq_alloc);
		c->broken = 1;
		pthread_mutex_unlock(&c->lock);
		if (rc == SBX_CHAN_FALLBACK)
			return SBX_CHAN_FALLBACK;
		/* The init spoke out of turn between runs. */
		sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT,
			       "sandbox %.12s broke the run protocol (%s), so it was killed", b->id,
			       c->rx.why ? c->rx.why : "?");
		end_sandbox(d, b, req, SBX__ENDED_ERROR);
		return SBX_EENGINE;
	}
	sbx__buf_clear(&c->rx.diag);
	c->rx.run = &run;
	have_u0 = b->pid > 0 && sbx__cgroup_read_usage(&u0, "/sys/fs/cgroup", "/proc", b->pid) == 0;
	sbx__docker_run_witness(b, &oomw);
	deadline = start + req->timeout_ms + SBX_RUN_GRACE_MS;
	w = wreq;
	wlen = wreq_len;
	if (req->pty) {
		__atomic_store_n(&c->rs, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&c->tty_run, 1, __ATOMIC_SEQ_CST);
	}

	while (end == RUN_GOING) {
		struct pollfd pfds[3] = {
			{.fd = c->hj.fd, .events = POLLIN}, {.fd = -1}, {.fd = -1}};
		struct pollfd *pfd = &pfds[0];
		uint64_t now;

		if (wpos == wlen) {
			if (w == wreq) {
				/* The request is out: wipe it now rather than at the end. */
				delivered = 1;
				sbx__secmem_free(wreq, wreq_alloc);
				wreq = NULL;
			}
			w = c->stdin_frame;
			wlen = wpos = 0;
			if (!run.have_exit && in_left &&
			    run.stdin_sent - run.stdin_acked < c->window) {
				size_t n = c->window - (size_t)(run.stdin_sent - run.stdin_acked);

				if (n > in_left)
					n = in_left;
				if (n > SBX_FRAME_MAX)
					n = SBX_FRAME_MAX;
				sbx__chan_header(w, SBX_FRAME_STDIN, run.id, (uint32_t)n);
				memcpy(w + SBX_FRAME_HDR, in, n);
				wlen = SBX_FRAME_HDR + n;
				in += n;
				in_left -= n;
				run.stdin_sent += n;
			} else if (!run.have_exit && (req->pty || in_open) &&
				   (wlen = next_tty_frame(c, &run, &in_open, &in_ready)) > 0) {
				/* A window size or streamed stdin. */
			} else if (!eof_queued && ((in_left == 0 && !in_open) || run.have_exit)) {
				/* Also after EXIT, so the init can let go of the run id. */
				sbx__chan_header(w, SBX_FRAME_STDIN_EOF, run.id, 0);
				wlen = SBX_FRAME_HDR;
				eof_queued = 1;
			}
		}
		if (run.have_exit && eof_queued && wpos == wlen) {
			end = RUN_DONE;
			break;
		}
		now = sbx__mono_ms();
		if (now >= deadline) {
			end = RUN_HOST_TIMEOUT;
			break;
		}
		if (wpos < wlen)
			pfd->events |= POLLOUT;
		if (in_open && !in_ready && wpos == wlen && !run.have_exit &&
		    run.stdin_sent - run.stdin_acked < c->window)
			pfds[1] = (struct pollfd){.fd = req->stdin_fd, .events = POLLIN};
		if (req->pty)
			pfds[2] = (struct pollfd){.fd = c->wake[0], .events = POLLIN};
		if (poll(pfds, 3, (int)(deadline - now)) < 0) {
			if (errno == EINTR)
				continue;
			end = RUN_LOST;
			break;
		}
		if (pfds[1].revents)
			in_ready = 1;
		if (pfds[2].revents) {
			char drain[64];
			ssize_t dn = read(c->wake[0], drain, sizeof(drain));

			(void)dn;
		}
		if (wpos < wlen && (pfd->revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t s =
				send(c->hj.fd, w + wpos, wlen - wpos, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (s > 0)
				wpos += (size_t)s;
			else if (s < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
				 errno != EINTR) {
				end = RUN_LOST;
				break;
			}
		}
		if (pfd->revents & (POLLIN | POLLHUP | POLLERR)) {
			int r = read_some(c, &rx_rc);

			if (r < 0)
				end = RUN_LOST;
			else if (rx_rc != SBX_CHAN_RX_OK)
				end = RUN_RX;
		}
	}
	c->rx.run = NULL;
	__atomic_store_n(&c->tty_run, 0, __ATOMIC_SEQ_CST);
	if (wreq)
		sbx__secmem_free(wreq, wreq_alloc);
	if (w == c->stdin_frame)
		explicit_bzero(c->stdin_frame, wlen);
	res->duration_ms = sbx__mono_ms() - start;
	res->path = SBX_RUN_PATH_CHANNEL;
	rc = 0;

	switch (end) {
	case RUN_GOING:
	case RUN_DONE:
		break;
	case RUN_HOST_TIMEOUT:
		/* The init did not end the run by its deadline: end the sandbox. */
		c->broken = 1;
		end_sandbox(d, b, req, SBX__ENDED_TIMEOUT);
		run.exit = (struct sbx__frame_exit){.status = SBX_FRAME_ST_TIMEOUT, .code = 124};
		run.have_exit = 1;
		break;
	case RUN_LOST:
		c->broken = 1;
		if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST)) {
			/* Killed through sbx_sandbox_kill() while the run was in flight. */
			run.exit = (struct sbx__frame_exit){
				.status = SBX_FRAME_ST_SIGNALED, .code = 137, .signal = 9};
			run.have_exit = 1;
			break;
		}
		if (delivered && sbx__docker_box_ended_by_oom(d, b, &oomw, since)) {
			sbx__docker_oom_end(b, req, &run.exit);
			run.have_exit = 1;
			break;
		}
		pthread_mutex_unlock(&c->lock);
		if (!delivered)
			return SBX_CHAN_FALLBACK;
		{
			/* The init's stderr, quoted: the sandbox wrote it. */
			char dq[SBX_ERROR_MSG_MAX];
			int any = sbx__error_quote(dq, sizeof(dq), c->rx.diag.data,
						   c->rx.diag.len) > 0;

			return sbx__error_set(
				SBX_EENGINE, SBX_ERRCLASS_ENGINE,
				"the run channel to sandbox %.12s was lost during the "
				"run; later runs use docker exec%s%s",
				b->id, any ? ": " : "", dq);
		}
	case RUN_RX:
		c->broken = 1;
		if (rx_rc == SBX_CHAN_RX_CANCEL) {
			rc = sbx__error_set(
				SBX_ECANCELED, SBX_ERRCLASS_ENGINE,
				"run canceled by the output callback; sandbox %.12s was "
				"killed",
				b->id);
			end_sandbox(d, b, req, SBX__ENDED_KILLED);
		} else if (rx_rc == SBX_CHAN_RX_NOMEM) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE,
					    "out of memory for output");
		} else if (rx_rc == SBX_CHAN_RX_CLOSED) {
			pthread_mutex_unlock(&c->lock);
			if (!delivered)
				return SBX_CHAN_FALLBACK;
			return sbx__error_set(
				SBX_EENGINE, SBX_ERRCLASS_INIT,
				"sandbox %.12s: the init closed the run channel during "
				"the run (%s); later runs use docker exec",
				b->id, c->rx.closed_why);
		} else {
			/* A protocol violation: the sandbox is not trusted any further. */
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT,
					    "sandbox %.12s broke the run protocol (%s), so it was "
					    "killed",
					    b->id, c->rx.why ? c->rx.why : "?");
			end_sandbox(d, b, req, SBX__ENDED_ERROR);
		}
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	pthread_mutex_unlock(&c->lock);

	sbx__chan_fill_status(&run.exit, res);
	/* Which caps the run ran into: the cgroup's counters are the witness. */
	if (have_u0 && sbx__cgroup_read_usage(&u1, "/sys/fs/cgroup", "/proc", b->pid) == 0) {
		if (u1.pids_events_max > u0.pids_events_max)
			res->limits_hit |= SBX_HIT_PIDS;
		if (u0.oom_kills >= 0 && u1.oom_kills > u0.oom_kills)
			res->limits_hit |= SBX_HIT_MEMORY;
	}
	if (run.exit.flags & SBX_FRAME_F_OOM)
		res->limits_hit |= SBX_HIT_MEMORY;
	if (res->status == SBX_RUN_TIMEOUT)
		res->limits_hit |= SBX_HIT_TIMEOUT;
	return 0;
}

int sbx__docker_run(struct sbx__docker *d,
		    struct sbx__docker_box *b,
		    const struct sbx__run_req *req,
		    sbx_result *res)
{
	/* A root run makes a user namespace of its own before the init's
	 * lockdown, which the channel's supervisors have had since PID 1's: it
	 * is an exec of `sbx-init run --as-root` (init/userns.c). */
	int rc = req->as_root ? SBX_CHAN_FALLBACK : sbx__chan_run(d, b, req, res);

	if (rc != SBX_CHAN_FALLBACK)
		return rc;
	rc = sbx__docker_exec(d, b, req, res);
	if (rc == 0)
		res->path = SBX_RUN_PATH_EXEC;
	return rc;
}

/*
 * The vtable's resize, from any thread: over the channel the size goes
 * in-band, as a RESIZE frame the run sends; through docker exec, whose
 * terminal is the Engine's (Tty), as the Engine's /exec/{id}/resize.
 */
int sbx__docker_resize(void *state, void *box, unsigned int rows, unsigned int cols)
{
	struct sbx__docker_box *b = box;
	char exec_id[sizeof(b->tty_exec)];

	pthread_mutex_lock(&sbx__tty_lock);
	memcpy(exec_id, b->tty_exec, sizeof(exec_id));
	pthread_mutex_unlock(&sbx__tty_lock);
	if (exec_id[0])
		return sbx__tty_exec_resize(state, exec_id, rows, cols);
	if (b->chan && sbx__chan_resize(b->chan, rows, cols) == 0)
		return 0;
	return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
			      "resize: no run with a terminal is in flight in sandbox %.12s",
			      b->id);
}

/* Sends all of p[0..len) on the channel until deadline; 0 or -1. */
static int send_all(struct sbx__chan *c, const unsigned char *p, size_t len, uint64_t deadline)
{
	while (len) {
		struct pollfd pfd = {.fd = c->hj.fd, .events = POLLOUT};
		uint64_t now = sbx__mono_ms();
		ssize_t w;

		if (now >= deadline)
			return -1;
		if (poll(&pfd, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			return -1;
		w = send(c->hj.fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (w > 0) {
			p += w;
			len -= (size_t)w;
		}
	}
	return 0;
}

int sbx__chan_deadline(struct sbx__chan *c,
		       uint64_t unix_s,
		       int (*between)(void *arg),
		       void *arg,
		       uint64_t *at,
		       uint64_t deadline)
{
	unsigned char f[SBX_FRAME_HDR + SBX_FRAME_DEADLINE_LEN];
	struct timespec until;
	int rc = 0, rx_rc = SBX_CHAN_RX_OK;

	if (!c || c->broken || c->rx.hi.version < 3)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "this handle holds no run channel of version 3 to the "
				      "sandbox's init, which alone can move its deadline");
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)((deadline - sbx__mono_ms()) / 1000) + 1;
	if (pthread_mutex_timedlock(&c->lock, &until) != 0)
		return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_ENGINE,
				      "a run in flight held the run channel past the deadline: "
				      "the init's deadline was not moved");
	sbx__chan_header(f, SBX_FRAME_DEADLINE, 0, SBX_FRAME_DEADLINE_LEN);
	sbx__chan_deadline_encode(f + SBX_FRAME_HDR, unix_s);
	if (read_idle(c) != 0 || send_all(c, f, sizeof(f), deadline) != 0) {
		c->broken = 1;
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT,
				    "the run channel to the sandbox's init is gone");
		goto out;
	}
	c->rx.deadline_asked++;
	if (between) {
		rc = between(arg);
		if (rc < 0)
			goto out;
	}
	while (c->rx.deadline_asked && rx_rc == SBX_CHAN_RX_OK) {
		struct pollfd pfd = {.fd = c->hj.fd, .events = POLLIN};
		uint64_t now = sbx__mono_ms();

		if (now >= deadline)
			break;
		if (poll(&pfd, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		if (read_some(c, &rx_rc) < 0)
			break;
	}
	if (c->rx.deadline_asked) {
		c->broken = 1;
		rc = sbx__error_set(rx_rc == SBX_CHAN_RX_OK ? SBX_ETIMEOUT : SBX_EENGINE,
				    SBX_ERRCLASS_INIT,
				    "the sandbox's init did not answer DEADLINE (%s)",
				    c->rx.why ? c->rx.why : "no answer by the deadline");
		goto out;
	}
	*at = c->rx.deadline_at;
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}
