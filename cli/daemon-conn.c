/*
 * cli/daemon-conn.c: the local daemon's work (cli/daemon.c is the command
 * around it): the connections it accepts, each client's request (create,
 * exec, kill, list), the sandboxes it holds, and the audit of its events
 * with the client's peer credentials. cli/daemon.h is what the two share;
 * docs/daemon.md says what the daemon does and why.
 *
 * One request per connection, a thread each, at most DAEMON_MAX_CONNS at
 * once; the request must come within DAEMON_REQ_S seconds. A run's client
 * that goes away (or sends anything more) ends the run, which kills the
 * sandbox as an interrupted direct exec does. Runs in one sandbox take
 * turns (the API's rule: one thread per sandbox at a time). A sandbox the
 * daemon does not hold is opened by id and kept (adopted); its runs go
 * through docker exec (docs/daemon.md says why its channel is not reopened).
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

#include <jansson.h>

#include "cli/daemon.h"
#include "cli/dclient.h"

#define DAEMON_MAX_CONNS 256
#define DAEMON_REQ_S 10		     /* the request must come within this */
#define DAEMON_SEND_S 30	     /* a client that reads nothing this long is gone */
#define DAEMON_STDIN_MAX (64u << 20) /* an exec's stdin, held until the run */
/* All the stdin held at once, across clients: without it, DAEMON_MAX_CONNS
 * clients could make the daemon hold 16 GiB. */
#define DAEMON_STDIN_TOTAL (128u << 20)

/* A sandbox the daemon holds: created here (channel) or adopted (exec). */
struct cli_dbox {
	struct cli_dbox *next;
	char *id;
	sbx_sandbox *s;
	pthread_mutex_t run; /* held across a run: runs take turns */
	int refs, gone;
	unsigned gen; /* sweep_gen when it was added */
};

struct cli_dstate cli_dstate = {.mu = PTHREAD_MUTEX_INITIALIZER, .audit_fd = -1};
#define g cli_dstate

struct conn {
	int fd;
	struct ucred peer;
};

/* The stdin bytes held by all connections now (g.mu). */
static size_t stdin_held;

/* The sweeps begun (g.mu): a box added during a sweep is not judged by it. */
static unsigned sweep_gen;

/* The client on whose behalf this thread works, for the audit. */
static __thread const struct ucred *tl_peer;

/* ===== Audit ===== */

/* The library's event with "peer" added, written whole and synced. */
int cli_daemon_audit_line(const char *line, size_t len, void *payload)
{
	char tail[128];
	char *buf;
	int n, rc = 0;

	(void)payload;
	if (g.audit_fd < 0)
		return 0;
	if (tl_peer && len > 2 && line[len - 1] == '}')
		n = snprintf(tail, sizeof(tail),
			     ",\"peer\":{\"pid\":%ld,\"uid\":%lu,\"gid\":%lu}}\n",
			     (long)tl_peer->pid, (unsigned long)tl_peer->uid,
			     (unsigned long)tl_peer->gid);
	else
		n = snprintf(tail, sizeof(tail), "%s\n", len ? "}" : "");
	buf = malloc(len + (size_t)n);
	if (!buf)
		return -1;
	memcpy(buf, line, len - (len ? 1 : 0));
	memcpy(buf + len - (len ? 1 : 0), tail, (size_t)n);
	if (write(g.audit_fd, buf, len - (len ? 1 : 0) + (size_t)n) !=
		    (ssize_t)(len - (len ? 1 : 0) + (size_t)n) ||
	    fdatasync(g.audit_fd) < 0)
		rc = -1;
	free(buf);
	return rc;
}

/* ===== Frames ===== */

/* Sends j (taken) as the REPLY. */
static int reply(int fd, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int rc = text ? cli_dsend_frame(fd, CLI_D_REPLY, text, strlen(text)) : -1;

	free(text);
	json_decref(j);
	return rc;
}

static int reply_error(int fd, int code, const char *msg)
{
	json_t *j = json_pack("{s:b, s:i, s:s}", "ok", 0, "code", code, "error", msg);

	if (!j) /* msg was not UTF-8: it may quote input */
		j = json_pack("{s:b, s:i, s:s}", "ok", 0, "code", code, "error",
			      "the error message is not UTF-8");
	return reply(fd, j);
}

static int reply_lib_error(int fd)
{
	const sbx_error *e = sbx_error_last();
	int code = e->code ? e->code : SBX_ERROR;

	return reply_error(fd, code, e->message[0] ? e->message : sbx_strerror(code));
}

static int reply_capture(int fd, const struct cli_capture *cap)
{
	return reply_error(fd, cap->set ? cap->code : SBX_ERROR,
			   cap->set ? cap->msg : "the daemon failed without a message");
}

/* ===== Boxes ===== */

static void box_unref(struct cli_dbox *bx)
{
	int last;

	pthread_mutex_lock(&g.mu);
	last = --bx->refs == 0;
	pthread_mutex_unlock(&g.mu);
	if (!last)
		return;
	sbx_sandbox_detach(bx->s); /* NULL after a close */
	pthread_mutex_destroy(&bx->run);
	free(bx->id);
	free(bx);
}

/* Adds s to the registry with a reference for the caller (mu held). */
static struct cli_dbox *box_add_locked(sbx_sandbox *s)
{
	struct cli_dbox *bx = calloc(1, sizeof(*bx));

	if (!bx || !(bx->id = strdup(sbx_sandbox_id(s)))) {
		free(bx);
		return NULL;
	}
	bx->s = s;
	pthread_mutex_init(&bx->run, NULL);
	bx->refs = 2;
	bx->gen = sweep_gen;
	bx->next = g.boxes;
	g.boxes = bx;
	return bx;
}

static struct cli_dbox *find_locked(const char *id)
{
	for (struct cli_dbox *bx = g.boxes; bx; bx = bx->next)
		if (!bx->gone && strcmp(bx->id, id) == 0)
			return bx;
	return NULL;
}

/* Takes bx out of the registry (mu held); 1 when this call did, and so
 * owns closing it. */
static int retire_locked(struct cli_dbox *bx)
{
	if (bx->gone)
		return 0;
	bx->gone = 1;
	for (struct cli_dbox **p = &g.boxes; *p; p = &(*p)->next)
		if (*p == bx) {
			*p = bx->next;
			bx->refs--;
			break;
		}
	return 1;
}

static int add_live(const sbx_sandbox_info *info, void *payload)
{
	/* An exited one's channel is dead too: its handle is only descriptors. */
	if (strcmp(info->state, "exited") != 0 && strcmp(info->state, "dead") != 0)
		json_array_append_new(payload, json_string(info->id));
	return 0;
}

static int is_live(json_t *live, const char *id)
{
	size_t k, n = strlen(id);
	json_t *v;

	json_array_foreach(live, k, v)
	{
		const char *s = json_string_value(v);

		if (s && strncmp(s, id, n) == 0)
			return 1;
	}
	return 0;
}

/*
 * Lets go of the boxes whose sandbox is gone (removed directly, by the
 * reaper, or ended at its lifetime): each holds the channel's descriptors,
 * and a daemon that lives long would run out of them. Their handles are
 * detached, not closed: what is left of a sandbox is the reaper's. Called
 * before a box is added; a failed listing sweeps nothing.
 */
static void sweep(void)
{
	json_t *live = json_array();
	struct cli_dbox *dead = NULL, **p, *bx;
	unsigned gen;

	if (!live)
		return;
	pthread_mutex_lock(&g.mu);
	gen = ++sweep_gen;
	pthread_mutex_unlock(&g.mu);
	if (sbx_backend_list(g.b, NULL, add_live, live) < 0) {
		json_decref(live);
		return;
	}
	pthread_mutex_lock(&g.mu);
	for (p = &g.boxes; (bx = *p);) {
		if (bx->gen >= gen || is_live(live, bx->id)) {
			p = &bx->next;
			continue;
		}
		*p = bx->next;
		bx->gone = 1; /* the registry's reference is now this sweep's */
		bx->next = dead;
		dead = bx;
	}
	pthread_mutex_unlock(&g.mu);
	json_decref(live);
	while ((bx = dead)) {
		dead = bx->next;
		box_unref(bx);
	}
}

/* The box of id with a reference, adopting a sandbox the daemon does not
 * hold yet; NULL with the library's error, or *oom. */
static struct cli_dbox *box_get(const char *id, int *oom)
{
	sbx_sandbox *s = NULL;
	struct cli_dbox *bx;

	pthread_mutex_lock(&g.mu);
	bx = find_locked(id);
	if (bx)
		bx->refs++;
	pthread_mutex_unlock(&g.mu);
	if (bx)
		return bx;
	sweep();
	if (sbx_sandbox_open(&s, g.b, id) < 0)
		return NULL;
	pthread_mutex_lock(&g.mu);
	bx = find_locked(sbx_sandbox_id(s)); /* id was a prefix of one we hold */
	if (bx) {
		bx->refs++;
		pthread_mutex_unlock(&g.mu);
		sbx_sandbox_detach(s);
		return bx;
	}
	bx = box_add_locked(s);
	pthread_mutex_unlock(&g.mu);
	if (!bx) {
		sbx_sandbox_detach(s);
		*oom = 1;
	}
	return bx;
}

/* Kills and removes bx (whoever retired it). Returns the close's result. */
static int box_close(struct cli_dbox *bx)
{
	int rc;

	pthread_mutex_lock(&bx->run);
	rc = sbx_sandbox_close(bx->s);
	bx->s = NULL;
	pthread_mutex_unlock(&bx->run);
	return rc;
}

/* ===== Requests ===== */

/* Counts n more stdin bytes against DAEMON_STDIN_TOTAL; -1: over it. */
static int stdin_reserve(size_t n)
{
	int rc = -1;

	pthread_mutex_lock(&g.mu);
	if (stdin_held + n <= DAEMON_STDIN_TOTAL) {
		stdin_held += n;
		rc = 0;
	}
	pthread_mutex_unlock(&g.mu);
	return rc;
}

static void stdin_release(size_t n)
{
	pthread_mutex_lock(&g.mu);
	stdin_held -= n;
	pthread_mutex_unlock(&g.mu);
}

/* An exec's stdin: STDIN frames up to STDIN_EOF. -1 with err. *len bytes
 * are counted against DAEMON_STDIN_TOTAL, on failure too: the caller
 * releases them. */
static int read_stdin(int fd, char **out, size_t *len, char *err, size_t esize)
{
	uint8_t hdr[CLI_D_HDR];
	enum cli_dtype t;
	size_t n, cap = 0;

	*out = NULL;
	*len = 0;
	for (;;) {
		char *grown;

		if (cli_dread_full(fd, hdr, sizeof(hdr)) < 0) {
			snprintf(err, esize, "the client went away before its stdin ended");
			return -1;
		}
		if (cli_dframe_check(hdr, 0, &t, &n, err, esize) < 0)
			return -1;
		if (t == CLI_D_STDIN_EOF)
			return 0;
		if (t != CLI_D_STDIN) {
			snprintf(err, esize, "expected STDIN or STDIN_EOF, got frame type 0x%02x",
				 (unsigned)t);
			return -1;
		}
		if (*len + n > DAEMON_STDIN_MAX) {
			snprintf(err, esize, "standard input: more than the daemon's %u bytes",
				 DAEMON_STDIN_MAX);
			return -1;
		}
		if (stdin_reserve(n) < 0) {
			snprintf(err, esize,
				 "standard input: the daemon holds its most (%u bytes) across its "
				 "clients; try again later",
				 DAEMON_STDIN_TOTAL);
			return -1;
		}
		/* Grown by doubling: one realloc per frame would copy the whole
		 * input again for each of a client's small frames. */
		if (*len + n + 1 > cap) {
			size_t want = cap ? cap : CLI_D_DATA_MAX;

			while (want < *len + n + 1)
				want *= 2;
			grown = realloc(*out, want);
			if (!grown) {
				stdin_release(n);
				snprintf(err, esize, "out of memory");
				return -1;
			}
			*out = grown;
			cap = want;
		}
		if (cli_dread_full(fd, *out + *len, n) < 0) {
			stdin_release(n);
			snprintf(err, esize, "the client went away before its stdin ended");
			return -1;
		}
		*len += n;
	}
}

struct exec_ctx {
	int fd;
	int broken; /* a write to the client failed */
};

static int on_output(int stream, const char *data, size_t len, void *payload)
{
	struct exec_ctx *x = payload;

	while (len) {
		size_t n = len > CLI_D_DATA_MAX ? CLI_D_DATA_MAX : len;

		if (cli_dsend_frame(x->fd,
				    stream == SBX_STREAM_STDERR ? CLI_D_STDERR : CLI_D_STDOUT, data,
				    n) < 0) {
			x->broken = 1;
			return 1;
		}
		data += n;
		len -= n;
	}
	return 0;
}

/* Watches a run's client: one that goes away, or sends anything more, ends
 * the run (the sandbox is killed, as an interrupted direct exec does). */
struct watch {
	int fd, stop[2];
	sbx_sandbox *s;
	pthread_t thread;
	int fired;
};

static void *watch_main(void *arg)
{
	struct watch *w = arg;
	struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN | POLLRDHUP},
			      {.fd = w->stop[0], .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (p[0].revents)
			break;
	}
	__atomic_store_n(&w->fired, 1, __ATOMIC_SEQ_CST);
	sbx_sandbox_kill(w->s);
	return NULL;
}

static int watch_start(struct watch *w, int fd, sbx_sandbox *s)
{
	w->fd = fd;
	w->s = s;
	w->fired = 0;
	if (pipe2(w->stop, O_CLOEXEC) < 0)
		return -1;
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		close(w->stop[0]);
		close(w->stop[1]);
		return -1;
	}
	return 0;
}

static int watch_stop(struct watch *w)
{
	while (write(w->stop[1], "q", 1) < 0 && errno == EINTR)
		;
	pthread_join(w->thread, NULL);
	close(w->stop[0]);
	close(w->stop[1]);
	return __atomic_load_n(&w->fired, __ATOMIC_SEQ_CST);
}

static json_t *result_json(const sbx_result *r, sbx_sandbox *s, uint64_t timeout_ms)
{
	const sbx_policy *pol = sbx_sandbox_policy(s);
	const char *tier = sbx_tier_name(sbx_sandbox_tier(s));

	return json_pack(
		"{s:b, s:i, s:i, s:i, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:s, s:s, "
		"s:I, s:I, s:I, s:I}",
		"ok", 1, "status", (int)r->status, "exit_code", r->exit_code, "signal",
		r->term_signal, "stdout_truncated", r->stdout_truncated != 0, "stderr_truncated",
		r->stderr_truncated != 0, "stdout_bytes", (json_int_t)r->stdout_total,
		"stderr_bytes", (json_int_t)r->stderr_total, "duration_ms",
		(json_int_t)r->duration_ms, "cpu_user_us", (json_int_t)r->cpu_user_us,
		"cpu_system_us", (json_int_t)r->cpu_system_us, "max_rss_kb",
		(json_int_t)r->max_rss_kb, "limits_hit", (int)r->limits_hit, "path", (int)r->path,
		"backend", sbx_backend_name(g.b), "tier", tier ? tier : "unknown", "memory_cap",
		(json_int_t)sbx_policy_limit(pol, SBX_LIMIT_MEMORY), "output_cap",
		(json_int_t)sbx_policy_limit(pol, SBX_LIMIT_OUTPUT), "timeout_ms",
		(json_int_t)(timeout_ms ? timeout_ms : sbx_policy_timeout_ms(pol, SBX_TIMEOUT_RUN)),
		"spans_dropped", (json_int_t)sbx_backend_spans_dropped(g.b));
}

/* The run of one exec, with the box's turn held. Returns 1 when the client
 * went away (nothing more is sent). */
static int run_in_box(const struct conn *c,
		      const struct cli_dreq *rq,
		      struct cli_dbox *bx,
		      const char *in,
		      size_t in_len)
{
	struct exec_ctx x = {.fd = c->fd};
	struct watch w;
	sbx_run_options ro;
	sbx_result *r = NULL;
	int lrc, gone, mine = 0;

	sbx_run_options_init(&ro, SBX_RUN_OPTIONS_VERSION);
	ro.env = rq->env;
	ro.workdir = rq->workdir;
	ro.stdin_data = in;
	ro.stdin_len = in_len;
	ro.timeout_ms = rq->timeout_ms;
	ro.on_output = on_output;
	ro.payload = &x;
	ro.raw_output = rq->raw_output;
	if (watch_start(&w, c->fd, bx->s) < 0) {
		reply_error(c->fd, SBX_ERROR, "daemon: cannot watch the client during the run");
		return 0;
	}
	lrc = sbx_sandbox_run(&r, bx->s, (const char *const *)rq->argv, &ro);
	gone = watch_stop(&w) || x.broken;
	if (gone) {
		/* The run cannot be stopped alone: its sandbox was killed. */
		pthread_mutex_lock(&g.mu);
		mine = retire_locked(bx);
		pthread_mutex_unlock(&g.mu);
		if (mine) {
			sbx_sandbox_close(bx->s);
			bx->s = NULL;
		}
	} else if (lrc < 0) {
		reply_lib_error(c->fd);
	} else {
		reply(c->fd, result_json(r, bx->s, rq->timeout_ms));
	}
	sbx_result_free(r);
	return gone;
}

static void do_exec(const struct conn *c, const struct cli_dreq *rq)
{
	char err[256], *in = NULL;
	size_t in_len = 0;
	struct cli_dbox *bx;
	int oom = 0;

	if (rq->want_stdin && read_stdin(c->fd, &in, &in_len, err, sizeof(err)) < 0) {
		reply_error(c->fd, SBX_EINVALID, err);
		stdin_release(in_len);
		free(in);
		return;
	}
	bx = box_get(rq->id, &oom);
	if (!bx) {
		if (oom)
			reply_error(c->fd, SBX_ENOMEM, "out of memory");
		else
			reply_lib_error(c->fd);
		stdin_release(in_len);
		free(in);
		return;
	}
	pthread_mutex_lock(&bx->run);
	if (!bx->s)
		reply_error(c->fd, SBX_ENOTFOUND, "sandbox was removed while the run waited");
	else
		run_in_box(c, rq, bx, in, in_len);
	pthread_mutex_unlock(&bx->run);
	box_unref(bx);
	stdin_release(in_len);
	free(in);
}

/* The create's options as the command line gives them (struct cli_opts). */
static void create_opts(struct cli_opts *o, const struct cli_dreq *rq)
{
	memset(o, 0, sizeof(*o));
	o->cmd = CMD_CREATE;
	o->cmd_name = "create";
	o->image = rq->image;
	o->timeout = rq->timeout;
	o->create_timeout = rq->create_timeout;
	o->lifetime = rq->lifetime;
	memcpy(o->limit, rq->limit, sizeof(o->limit));
	o->tenant = rq->tenant;
	o->workdir = rq->workdir;
	o->tier = rq->tier;
	o->env = rq->env;
	o->env_n = rq->env_n;
	o->allow = rq->allow;
	o->allow_n = rq->allow_n;
}

static void do_create(const struct conn *c, const struct cli_dreq *rq)
{
	struct cli_capture cap;
	struct cli_opts o;
	sbx_policy *p = NULL, *eff = NULL;
	sbx_sandbox *s = NULL;
	struct cli_dbox *bx = NULL;
	int rc;

	create_opts(&o, rq);
	sweep();
	cli_capture_errors(&cap);
	rc = cli_build_policy(&o, g.cfg, &p, &eff);
	if (!rc)
		rc = cli_ensure_image(&o, g.b, sbx_policy_image(eff));
	if (!rc && sbx_sandbox_create(&s, g.b, p) < 0) {
		cli_print_lib_error(&o);
		rc = CLI_EXIT_FAIL;
	}
	cli_capture_errors(NULL);
	sbx_policy_free(eff);
	sbx_policy_free(p);
	if (rc) {
		reply_capture(c->fd, &cap);
		return;
	}
	pthread_mutex_lock(&g.mu);
	bx = box_add_locked(s);
	pthread_mutex_unlock(&g.mu);
	if (!bx) {
		sbx_sandbox_close(s);
		reply_error(c->fd, SBX_ENOMEM, "out of memory");
		return;
	}
	if (reply(c->fd, json_pack("{s:b, s:s, s:s, s:s, s:s, s:I}", "ok", 1, "sandbox_id", bx->id,
				   "backend", sbx_backend_name(g.b), "tier",
				   sbx_tier_name(sbx_sandbox_tier(s)), "tenant",
				   sbx_policy_tenant(sbx_sandbox_policy(s)), "spans_dropped",
				   (json_int_t)sbx_backend_spans_dropped(g.b))) < 0) {
		/* Nobody learnt the id: the sandbox would only wait for its deadline. */
		int mine;

		pthread_mutex_lock(&g.mu);
		mine = retire_locked(bx);
		pthread_mutex_unlock(&g.mu);
		if (mine)
			box_close(bx);
	}
	box_unref(bx);
}

static void do_kill(const struct conn *c, const struct cli_dreq *rq)
{
	struct cli_dbox *bx;
	int oom = 0, mine, rc;

	bx = box_get(rq->id, &oom);
	if (!bx) {
		if (oom)
			reply_error(c->fd, SBX_ENOMEM, "out of memory");
		else
			reply_lib_error(c->fd);
		return;
	}
	pthread_mutex_lock(&g.mu);
	mine = retire_locked(bx);
	pthread_mutex_unlock(&g.mu);
	if (!mine) {
		reply_error(c->fd, SBX_ENOTFOUND, "sandbox is being removed already");
		box_unref(bx);
		return;
	}
	/* A run in flight ends now rather than at its deadline. */
	if (pthread_mutex_trylock(&bx->run) == 0)
		pthread_mutex_unlock(&bx->run);
	else
		sbx_sandbox_kill(bx->s);
	rc = box_close(bx);
	if (rc < 0)
		reply_lib_error(c->fd);
	else
		reply(c->fd, json_pack("{s:b}", "ok", 1));
	box_unref(bx);
}

/* pause and resume of a sandbox the daemon holds: its creating handle is
 * the one that can (sbx_sandbox_pause()); between runs only. */
static void do_pause(const struct conn *c, const struct cli_dreq *rq)
{
	struct cli_dbox *bx;
	int oom = 0, rc;

	bx = box_get(rq->id, &oom);
	if (!bx) {
		if (oom)
			reply_error(c->fd, SBX_ENOMEM, "out of memory");
		else
			reply_lib_error(c->fd);
		return;
	}
	if (pthread_mutex_trylock(&bx->run) != 0) {
		reply_error(c->fd, SBX_EPAUSED,
			    "a run is in flight in the sandbox: it is paused or resumed between "
			    "runs only");
		box_unref(bx);
		return;
	}
	rc = rq->op == CLI_DOP_PAUSE ? sbx_sandbox_pause(bx->s, rq->max_ms)
				     : sbx_sandbox_resume(bx->s);
	pthread_mutex_unlock(&bx->run);
	if (rc < 0)
		reply_lib_error(c->fd);
	else
		reply(c->fd, json_pack("{s:b}", "ok", 1));
	box_unref(bx);
}

static int collect(const sbx_sandbox_info *info, void *payload)
{
	json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "id", info->id, "tenant",
				info->tenant, "image", info->image, "state", info->state, "created",
				(json_int_t)info->created, "deadline", (json_int_t)info->deadline);

	/* A label the engine hands back is not necessarily UTF-8: skip, never crash. */
	if (row)
		json_array_append_new(payload, row);
	return 0;
}

static void do_list(const struct conn *c, const struct cli_dreq *rq)
{
	json_t *rows = json_array();

	if (!rows) {
		reply_error(c->fd, SBX_ENOMEM, "out of memory");
		return;
	}
	if (sbx_backend_list(g.b, rq->tenant, collect, rows) < 0) {
		json_decref(rows);
		reply_lib_error(c->fd);
		return;
	}
	reply(c->fd, json_pack("{s:b, s:o}", "ok", 1, "sandboxes", rows));
}

static void set_timeout(int fd, int opt, unsigned s)
{
	struct timeval tv = {.tv_sec = s};

	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	uint8_t hdr[CLI_D_HDR];
	enum cli_dtype t = 0;
	struct cli_dreq rq;
	char err[256], *body = NULL;
	size_t n = 0;

	tl_peer = &c->peer;
	if (cli_dread_full(c->fd, hdr, sizeof(hdr)) < 0)
		goto out;
	if (cli_dframe_check(hdr, 0, &t, &n, err, sizeof(err)) < 0 || t != CLI_D_REQUEST) {
		reply_error(c->fd, SBX_EINVALID,
			    t && t != CLI_D_REQUEST ? "the first frame must be a request" : err);
		goto out;
	}
	body = malloc(n ? n : 1);
	if (!body) {
		reply_error(c->fd, SBX_ENOMEM, "out of memory");
		goto out;
	}
	if (cli_dread_full(c->fd, body, n) < 0)
		goto out;
	set_timeout(c->fd, SO_RCVTIMEO, 0);
	if (cli_dreq_parse(body, n, &rq, err, sizeof(err)) < 0) {
		reply_error(c->fd, SBX_EINVALID, err);
		goto out;
	}
	switch (rq.op) {
	case CLI_DOP_CREATE:
		do_create(c, &rq);
		break;
	case CLI_DOP_EXEC:
		do_exec(c, &rq);
		break;
	case CLI_DOP_KILL:
		do_kill(c, &rq);
		break;
	case CLI_DOP_LIST:
		do_list(c, &rq);
		break;
	case CLI_DOP_PAUSE:
	case CLI_DOP_RESUME:
		do_pause(c, &rq);
		break;
	}
	cli_dreq_free(&rq);
out:
	free(body);
	close(c->fd);
	free(c);
	pthread_mutex_lock(&g.mu);
	g.conns--;
	pthread_mutex_unlock(&g.mu);
	return NULL;
}

/* ===== The socket ===== */

void *cli_daemon_accept_main(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		struct conn *c;
		socklen_t len = sizeof(c->peer);
		pthread_attr_t attr;
		pthread_t t;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), rc;

		if (fd < 0) {
			if (__atomic_load_n(&g.stopping, __ATOMIC_SEQ_CST))
				return NULL;
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			    errno == ENOBUFS) {
				struct timespec ts = {.tv_nsec = 10000000};

				nanosleep(&ts, NULL); /* a descriptor may come free */
			}
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) < 0) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		set_timeout(fd, SO_RCVTIMEO, DAEMON_REQ_S);
		set_timeout(fd, SO_SNDTIMEO, DAEMON_SEND_S);
		pthread_mutex_lock(&g.mu);
		rc = g.conns < DAEMON_MAX_CONNS ? 0 : -1;
		if (!rc)
			g.conns++;
		pthread_mutex_unlock(&g.mu);
		if (!rc) {
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			rc = pthread_create(&t, &attr, conn_main, c) ? -1 : 0;
			pthread_attr_destroy(&attr);
			if (rc) {
				pthread_mutex_lock(&g.mu);
				g.conns--;
				pthread_mutex_unlock(&g.mu);
			}
		}
		if (rc) {
			close(fd);
			free(c);
		}
	}
}

/* Leaves every sandbox held to its lifetime (no connection is left). */
void cli_daemon_boxes_free(void)
{
	while (g.boxes) {
		struct cli_dbox *bx = g.boxes;

		g.boxes = bx->next;
		box_unref(bx);
	}
}
