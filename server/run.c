/*
 * server/run.c: one command of envd's process service on the
 * E2B-compatible server, from its run to the end of its stream: the worker
 * thread that waits for the box's busy slot and runs the command, the
 * output callback that frames each chunk (at most 32 KiB, base64, as envd
 * does) into the process's queue, the end event in envd's words, and
 * libmicrohttpd's content reader that drains the queue into the Start
 * response (chunked encoding).
 *
 * The queue is bounded: a full one blocks the run, so a slow client holds
 * the command back rather than the server's memory growing. The reader
 * sends envd's keepalive after Keepalive-Ping-Interval idle seconds and
 * notices a client that went away even while the command is silent;
 * stopping a running command (SendSignal, or a client gone before its
 * deadline) kills it, and on this backend the whole sandbox with it. Base64
 * is util/base64.h's: the server may call the library's util/ helpers, which
 * are shared, but never its internals.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"
#include "util/base64.h"

#define QUEUE_MAX (1u << 20)
#define DEADLINE_GRACE_MS 1000

/* ===== A process and its queue of frames ===== */

void sbxs_proc_free(struct sbxs_proc *pr)
{
	struct sbxs_frame *f, *next;

	for (f = pr->qh; f; f = next) {
		next = f->next;
		free(f);
	}
	free(pr->cur);
	for (char **a = pr->argv; a && *a; a++)
		free(*a);
	free(pr->argv);
	for (char **e = pr->env; e && *e; e++) {
		explicit_bzero(*e, strlen(*e));
		free(*e);
	}
	free(pr->env);
	free(pr->cwd);
	free(pr->tag);
	json_decref(pr->config);
	if (pr->in)
		explicit_bzero(pr->in, pr->in_len);
	free(pr->in);
	if (pr->pty_open) {
		close(pr->pty_fd[0]);
		close(pr->pty_fd[1]);
	}
	pthread_cond_destroy(&pr->cv);
	if (pr->leader)
		sbxs_proc_unref(pr->leader);
	if (pr->box)
		sbxs_box_unref(pr->box);
	free(pr);
}

void sbxs_proc_unref(struct sbxs_proc *pr)
{
	struct sbxs_server *srv = pr->box->srv;
	int last;

	pthread_mutex_lock(&srv->mu);
	last = --pr->refs == 0;
	pthread_mutex_unlock(&srv->mu);
	if (last)
		sbxs_proc_free(pr);
}

/* Takes follower fl out of its leader's list (mu held). */
static void unfollow_locked(struct sbxs_proc *fl)
{
	for (struct sbxs_proc **pp = &fl->leader->followers; *pp; pp = &(*pp)->next_follower)
		if (*pp == fl) {
			*pp = fl->next_follower;
			break;
		}
	fl->next_follower = NULL;
}

void sbxs_followers_end_locked(struct sbxs_proc *pr)
{
	while (pr->followers) {
		struct sbxs_proc *fl = pr->followers;

		unfollow_locked(fl);
		fl->eos = 1;
		pthread_cond_broadcast(&fl->cv);
	}
}

/* Queues a frame (mu held); a frame nobody will read is dropped. A
 * follower that does not read falls behind by at most QUEUE_MAX: past it,
 * its stream ends (resource_exhausted) and the process goes on. */
void sbxs_push_locked(struct sbxs_proc *pr, struct sbxs_frame *f)
{
	struct sbxs_proc *fl, *next;

	if (!f)
		return;
	for (fl = pr->followers; fl; fl = next) {
		struct sbxs_frame *copy = malloc(sizeof(*copy) + f->len);

		next = fl->next_follower;
		if (copy && fl->qbytes + f->len <= QUEUE_MAX) {
			memcpy(copy, f, sizeof(*copy) + f->len);
			copy->next = NULL;
			sbxs_push_locked(fl, copy);
			continue;
		}
		free(copy);
		unfollow_locked(fl);
		sbxs_push_locked(fl,
				 sbxs_frame_eos("resource_exhausted",
						"this stream fell behind the process's output"));
		fl->eos = 1;
		pthread_cond_broadcast(&fl->cv);
	}
	if (pr->reader_done) {
		free(f);
		return;
	}
	if (pr->qt)
		pr->qt->next = f;
	else
		pr->qh = f;
	pr->qt = f;
	pr->qbytes += f->len;
	pthread_cond_broadcast(&pr->cv);
}

/*
 * Stops a process: one that waits is dropped before it runs; a running one
 * is ended with sbx_sandbox_kill(), which ends its sandbox too (Docker
 * cannot kill one exec), so the box is retired. A client that goes away at
 * its own deadline (the one the run has too) cancels nothing: the run ends
 * by that deadline, and the sandbox lives on.
 */
void sbxs_cancel_proc(struct sbxs_proc *pr, enum sbxs_cancel why)
{
	struct sbxs_box *b = pr->box;
	struct sbxs_server *srv = b->srv;
	int kill = 0, drop = 0, busy_kill = 0;

	pthread_mutex_lock(&srv->mu);
	if (pr->cancel == SBXS_CANCEL_NONE && !pr->run_done &&
	    !(why == SBXS_CANCEL_GONE && pr->deadline &&
	      sbx__mono_ms() + DEADLINE_GRACE_MS >= pr->deadline)) {
		pr->cancel = why;
		if (pr->started) {
			kill = 1;
			drop = sbxs_retire_locked(b, &busy_kill);
		}
	}
	pthread_cond_broadcast(&pr->cv);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&srv->mu);
	if (kill)
		sbx_sandbox_kill(b->s);
	if (drop)
		sbxs_box_unref(b);
}

/* ===== The events of a run ===== */

/* {"event":{"data":{"stdout":"<base64>"}}}, built directly: base64 needs
 * no escaping, and this is the hot path of a chatty command. */
static struct sbxs_frame *frame_data(const char *stream, const char *data, size_t n)
{
	static const char pre[] = "{\"event\":{\"data\":{\"";
	static const char mid[] = "\":\"";
	static const char post[] = "\"}}}";
	size_t json_len = strlen(pre) + strlen(stream) + strlen(mid) + sbx__base64_encoded_len(n) +
			  strlen(post);
	struct sbxs_frame *f = malloc(sizeof(*f) + 5 + json_len);
	char *p;

	if (!f)
		return NULL;
	f->next = NULL;
	f->len = 5 + json_len;
	f->data[0] = 0;
	f->data[1] = (char)(json_len >> 24 & 0xff);
	f->data[2] = (char)(json_len >> 16 & 0xff);
	f->data[3] = (char)(json_len >> 8 & 0xff);
	f->data[4] = (char)(json_len & 0xff);
	p = f->data + 5;
	p = stpcpy(p, pre);
	p = stpcpy(p, stream);
	p = stpcpy(p, mid);
	p += sbx__base64_encode(p, data, n); /* its NUL is overwritten by post */
	memcpy(p, post, strlen(post));
	return f;
}

static int on_output(int stream, const char *data, size_t len, void *payload)
{
	struct sbxs_proc *pr = payload;
	struct sbxs_server *srv = pr->box->srv;
	const char *name = pr->pty ? "pty" : stream == SBX_STREAM_STDERR ? "stderr" : "stdout";
	int stop = 0;

	if (pr->pty)
		sbxs_pty_resize_pending(pr);

	while (len && !stop) {
		size_t n = len < CHUNK_MAX ? len : CHUNK_MAX;
		struct sbxs_frame *f = frame_data(name, data, n);

		pthread_mutex_lock(&srv->mu);
		if (!f)
			pr->cancel = SBXS_CANCEL_GONE; /* no memory: fail closed */
		/* A client that does not read holds the run at most until the
		 * run's own deadline, which ends the command in the sandbox:
		 * past it, what the full queue cannot take is counted and
		 * dropped, and the end event says so. */
		while (pr->qbytes > QUEUE_MAX && !pr->cancel && !pr->reader_done &&
		       !pr->box->retired && sbx__mono_ms() < pr->run_end)
			sbxs_wait_until(&pr->cv, &srv->mu, pr->run_end);
		if (f && pr->qbytes > QUEUE_MAX && !pr->cancel && !pr->reader_done &&
		    !pr->box->retired) {
			pr->dropped += n;
			free(f);
		} else {
			sbxs_push_locked(pr, f);
		}
		stop = pr->cancel != SBXS_CANCEL_NONE;
		pthread_mutex_unlock(&srv->mu);
		data += n;
		len -= n;
	}
	return stop;
}

/* Go's names of the signals (os.ProcessState says "signal: killed"). */
static const char *signal_word(int sig)
{
	static const char *const names[] = {[1] = "hangup",
					    [2] = "interrupt",
					    [3] = "quit",
					    [4] = "illegal instruction",
					    [5] = "trace/breakpoint trap",
					    [6] = "aborted",
					    [7] = "bus error",
					    [8] = "floating point exception",
					    [9] = "killed",
					    [10] = "user defined signal 1",
					    [11] = "segmentation fault",
					    [12] = "user defined signal 2",
					    [13] = "broken pipe",
					    [14] = "alarm clock",
					    [15] = "terminated",
					    [24] = "CPU time limit exceeded",
					    [25] = "file size limit exceeded",
					    [31] = "bad system call"};

	if (sig > 0 && (size_t)sig < sizeof(names) / sizeof(names[0]) && names[sig])
		return names[sig];
	return NULL;
}

/* {"event":{"end":{...}}} with protojson's zero values omitted. */
static struct sbxs_frame *frame_end(int exit_code, int exited, const char *status, int with_error)
{
	json_t *end = json_object();

	if (exit_code)
		json_object_set_new(end, "exitCode", json_integer(exit_code));
	if (exited)
		json_object_set_new(end, "exited", json_true());
	json_object_set_new(end, "status", json_string(status));
	if (with_error)
		json_object_set_new(end, "error", json_string(status));
	return sbxs_frame_json(0, json_pack("{s:{s:o}}", "event", "end", end));
}

static struct sbxs_frame *frame_killed(void)
{
	return frame_end(-1, 0, "signal: killed", 1);
}

/* The end event of a run that returned a result. */
static struct sbxs_frame *frame_result(const sbx_result *r)
{
	char status[64];
	const char *w;
	int sig;

	switch (r->status) {
	case SBX_RUN_EXITED:
	case SBX_RUN_ERROR:
		snprintf(status, sizeof(status), "exit status %d", r->exit_code);
		return frame_end(r->exit_code, 1, status, r->exit_code != 0);
	case SBX_RUN_KILLED:
	case SBX_RUN_OOM:
		sig = r->status == SBX_RUN_OOM || !r->term_signal ? 9 : r->term_signal;
		w = signal_word(sig);
		if (w)
			snprintf(status, sizeof(status), "signal: %s", w);
		else
			snprintf(status, sizeof(status), "signal: signal %d", sig);
		return frame_end(-1, 0, status, 1);
	case SBX_RUN_TIMEOUT:
		return frame_killed();
	}
	return frame_killed();
}

static const char *connect_code(int rc)
{
	switch (rc) {
	case SBX_EINVALID:
		return "invalid_argument";
	case SBX_ETIMEOUT:
		return "deadline_exceeded";
	case SBX_EUNAVAILABLE:
		return "unavailable";
	case SBX_ECANCELED:
		return "canceled";
	case SBX_ETOOBIG:
		return "resource_exhausted";
	default:
		return "internal";
	}
}

/* The end of a stream whose sandbox ended under the command. */
static struct sbxs_frame *eos_box_gone(void)
{
	return sbxs_frame_eos("unavailable",
			      "The sandbox was killed or reached its end of life while the "
			      "command ran");
}

/* ===== The worker ===== */

enum fate { F_RUN, F_CANCELED, F_GONE, F_DEADLINE };

enum limit_by { BY_POLICY, BY_LIFE, BY_CLIENT };

/*
 * One function on purpose (some 150 lines): a worker's whole life, the run,
 * how it ended (fate), what limited it, and its removal from the box's list
 * under one lock; each step reads what the one before it decided.
 */
void *sbxs_worker_main(void *arg)
{
	struct sbxs_proc *pr = arg;
	struct sbxs_box *b = pr->box;
	struct sbxs_server *srv = b->srv;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	enum limit_by by = BY_POLICY;
	sbx_result *r = NULL;
	enum fate fate;
	char msg[1024] = "";
	uint64_t now, t = 0;
	unsigned rows = 0, cols = 0;
	int rc = 0, drop = 0, kill = 0;

	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t until;

		now = sbx__mono_ms();
		if (pr->cancel) {
			fate = F_CANCELED;
			break;
		}
		if (b->retired || srv->stopping) {
			fate = F_GONE;
			break;
		}
		if (pr->deadline && now >= pr->deadline) {
			fate = F_DEADLINE;
			break;
		}
		if (!b->busy) { /* stdin, if any, is streamed (server/stdin.c) */
			fate = F_RUN;
			break;
		}
		until = now + 1000;
		if (pr->deadline && pr->deadline < until)
			until = pr->deadline;
		sbxs_wait_until(&b->cv, &srv->mu, until);
	}
	if (fate == F_RUN) {
		b->busy = 1;
		pr->started = 1;
		rows = pr->rows; /* a later size goes to the run (server/pty.c) */
		cols = pr->cols;
		t = b->run_timeout_ms;
		if (b->end_mono <= now) {
			t = 0;
			by = BY_LIFE;
		} else if (b->end_mono - now < t) {
			t = b->end_mono - now;
			by = BY_LIFE;
		}
		if (pr->deadline && pr->deadline - now <= t) {
			t = pr->deadline - now;
			by = BY_CLIENT;
		}
		pr->run_end = now + t;
	}
	pthread_mutex_unlock(&srv->mu);

	if (fate == F_RUN && t > 0) {
		const char **argv = (const char **)pr->argv, **wrapped = NULL;
		int stream_in;

		pthread_mutex_lock(&srv->mu);
		stream_in = pr->want_stdin && !pr->stdin_closed;
		pthread_mutex_unlock(&srv->mu);
		if (stream_in) {
			size_t n = 0;
			uint64_t t0 = sbx__mono_ms();

			while (pr->argv[n])
				n++;
			wrapped = calloc(n + 6, sizeof(*wrapped));
			rc = wrapped ? sbxs_stdin_prepare(pr, t) : SBX_ENOMEM;
			if (rc == 0) {
				uint64_t took = sbx__mono_ms() - t0;

				wrapped[0] = "sh";
				wrapped[1] = "-c";
				wrapped[2] = sbxs_stdin_wrap;
				wrapped[3] = "sbx-stdin";
				wrapped[4] = pr->fifo;
				memcpy(wrapped + 5, pr->argv, n * sizeof(*wrapped));
				/* From now on input goes through the FIFO; what came
				 * before is the run's stdin, fed first. A CloseStdin
				 * that came first leaves the command its whole input. */
				pthread_mutex_lock(&srv->mu);
				if (!pr->stdin_closed) {
					pr->fifo_ready = 1;
					argv = wrapped;
				}
				pthread_mutex_unlock(&srv->mu);
				t = took < t ? t - took : 1;
			} else {
				snprintf(msg, sizeof(msg),
					 "cannot make the pipe of the command's stdin in the "
					 "sandbox's "
					 "/tmp (%s)",
					 sbx_strerror(rc));
			}
		}
		if (rc == 0) {
			ro.env = (const char *const *)pr->env;
			ro.workdir = pr->cwd;
			ro.as_root = pr->as_root;
			ro.stdin_data = pr->in;
			ro.stdin_len = pr->in_len;
			ro.timeout_ms = t;
			ro.on_output = on_output;
			ro.payload = pr;
			if (pr->pty) {
				/* The run `exec -it` makes; its input is the socket's. */
				ro.pty = 1;
				ro.pty_rows = rows;
				ro.pty_cols = cols;
				ro.stream_stdin = 1;
				ro.stdin_fd = pr->pty_fd[0];
			}
			rc = sbx_sandbox_run(&r, b->s, argv, &ro);
			if (rc < 0)
				snprintf(msg, sizeof(msg), "%s", sbx_error_last()->message);
		}
		free(wrapped);
	}

	pthread_mutex_lock(&srv->mu);
	if (fate == F_RUN) {
		pr->run_done = 1; /* no resize starts now (server/pty.c) ... */
		while (pr->resizing)
			pthread_cond_wait(&pr->cv, &srv->mu);
		b->busy = 0; /* ... and none under way reaches the next run */
		pthread_cond_broadcast(&b->cv);
	}
	for (struct sbxs_proc **pp = &b->procs; *pp; pp = &(*pp)->next)
		if (*pp == pr) {
			*pp = pr->next;
			break;
		}
	switch (fate) {
	case F_CANCELED:
		if (pr->cancel == SBXS_CANCEL_SIGNAL) {
			sbxs_push_locked(pr, frame_killed());
			sbxs_push_locked(pr, sbxs_frame_eos(NULL, NULL));
		}
		break;
	case F_GONE:
		sbxs_push_locked(pr, sbxs_frame_eos("unavailable",
						    srv->stopping ? "the server is shutting down"
								  : "The sandbox was not found"));
		break;
	case F_DEADLINE:
		sbxs_push_locked(
			pr,
			sbxs_frame_eos("deadline_exceeded",
				       pr->want_stdin && !pr->stdin_closed
					       ? "the deadline passed before stdin was closed"
					       : "the deadline passed while an earlier command of "
						 "the sandbox was running"));
		break;
	case F_RUN:
		if (t == 0) {
			sbxs_push_locked(pr, sbxs_frame_eos(by == BY_CLIENT ? "deadline_exceeded"
									    : "unavailable",
							    by == BY_CLIENT
								    ? "the deadline has passed"
								    : "The sandbox was not found"));
		} else if (rc < 0) {
			if (pr->cancel == SBXS_CANCEL_SIGNAL) {
				sbxs_push_locked(pr, frame_killed());
				sbxs_push_locked(pr, sbxs_frame_eos(NULL, NULL));
			} else if (b->retired) {
				sbxs_push_locked(pr, eos_box_gone());
			} else {
				sbxs_push_locked(pr, sbxs_frame_eos(connect_code(rc), msg));
			}
			/* The library killed the sandbox to end the run. */
			if (rc == SBX_ECANCELED || rc == SBX_ETIMEOUT)
				drop = sbxs_retire_locked(b, &kill);
		} else if ((b->retired && pr->cancel != SBXS_CANCEL_SIGNAL &&
			    r->status != SBX_RUN_EXITED) ||
			   (r->status == SBX_RUN_TIMEOUT && by == BY_LIFE)) {
			/* The sandbox ended under the command (killed, or its end of
			 * life): no end event, as envd that dies with it sends none,
			 * so the SDK says TimeoutError rather than an exit. */
			sbxs_push_locked(pr, eos_box_gone());
		} else {
			sbxs_push_locked(pr, frame_result(r));
			if (pr->dropped) {
				snprintf(msg, sizeof(msg),
					 "the client did not read the command's output before "
					 "its deadline: %zu bytes of it were dropped",
					 pr->dropped);
				sbxs_push_locked(pr, sbxs_frame_eos("deadline_exceeded", msg));
			} else if (r->status != SBX_RUN_TIMEOUT)
				sbxs_push_locked(pr, sbxs_frame_eos(NULL, NULL));
			else
				sbxs_push_locked(
					pr, sbxs_frame_eos("deadline_exceeded",
							   "the command's deadline passed; its "
							   "processes were killed"));
		}
		break;
	}
	pr->eos = 1;
	sbxs_followers_end_locked(pr);
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	if (pr->pty_open) /* a terminal's write still waiting fails at once */
		shutdown(pr->pty_fd[0], SHUT_RDWR);
	sbx_result_free(r);
	if (drop)
		sbxs_box_unref(b);
	sbxs_proc_unref(pr);
	pthread_mutex_lock(&srv->mu);
	srv->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* ===== The response stream ===== */

/*
 * Whether the client's side of the socket looks closed: 2 when it surely
 * is (an error or hang-up), 1 when it stopped sending (FIN), which is also
 * what a client that half-closes after its request looks like.
 */
int sbxs_client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	if (fd < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
		return 2;
	return (p.revents & POLLRDHUP) ? 1 : 0;
}

/*
 * libmicrohttpd's content reader of a Start response (its connection's
 * thread): hands out the queued frames, waits for more, and sends envd's
 * keepalive after the idle interval. While nothing is queued it looks at
 * the socket each second: a client that hung up ends the response; one
 * that only stopped sending gets a keepalive, whose write fails (and ends
 * the response) if nobody is there any more.
 */
ssize_t sbxs_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	static const char keepalive[] = "{\"event\":{\"keepalive\":{}}}";
	struct sbxs_proc *pr = cls;
	struct sbxs_server *srv = pr->box->srv;

	(void)pos;
	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t now, until;
		int gone;

		if (!pr->cur && pr->qh) {
			pr->cur = pr->qh;
			pr->qh = pr->qh->next;
			if (!pr->qh)
				pr->qt = NULL;
			pr->cur_off = 0;
		}
		if (pr->cur) {
			size_t left = pr->cur->len - pr->cur_off, k = left < max ? left : max;

			memcpy(buf, pr->cur->data + pr->cur_off, k);
			pr->cur_off += k;
			if (pr->cur_off == pr->cur->len) {
				pr->qbytes -= pr->cur->len;
				free(pr->cur);
				pr->cur = NULL;
				pthread_cond_broadcast(&pr->cv);
			}
			pr->last_sent = sbx__mono_ms();
			pthread_mutex_unlock(&srv->mu);
			return (ssize_t)k;
		}
		if (pr->eos) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		now = sbx__mono_ms();
		if (now >= pr->last_sent + pr->keepalive_ms) {
			sbxs_push_locked(pr, sbxs_frame_raw(0, keepalive, sizeof(keepalive) - 1));
			pr->last_sent = now;
			continue;
		}
		until = now + 1000;
		if (pr->last_sent + pr->keepalive_ms < until)
			until = pr->last_sent + pr->keepalive_ms;
		sbxs_wait_until(&pr->cv, &srv->mu, until);
		if (pr->qh || pr->eos)
			continue;
		gone = sbxs_client_gone(pr->fd);
		if (gone == 2) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (gone == 1)
			sbxs_push_locked(pr, sbxs_frame_raw(0, keepalive, sizeof(keepalive) - 1));
	}
}

/* The response is done with (sent, failed or the client gone). */
void sbxs_stream_done(void *cls)
{
	struct sbxs_proc *pr = cls;
	struct sbxs_server *srv = pr->box->srv;
	int gone;

	pthread_mutex_lock(&srv->mu);
	pr->reader_done = 1;
	gone = !pr->eos;
	if (pr->leader) { /* a follower going away stops nothing */
		if (gone)
			unfollow_locked(pr);
		gone = 0;
	}
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	if (gone)
		sbxs_cancel_proc(pr, SBXS_CANCEL_GONE);
	sbxs_proc_unref(pr);
}
