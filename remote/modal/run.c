/*
 * remote/modal/run.c: a run in a Modal sandbox.
 *
 * Runs go through the task command router, a second gRPC host reached with
 * a JWT from TaskGetCommandRouterAccess, as the current SDKs do (the
 * control-plane exec RPCs are no longer used by any SDK). A run's start,
 * stdout and stderr reads, stdin writes and wait share one HTTP/2
 * connection (one call set). Secrets travel only in TaskExecStart.env, in
 * a request buffer of locked memory wiped after it is sent; never in the
 * definition, tags, or a Modal Secret object. Any break of the run
 * protocol terminates the sandbox before returning.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "remote/modal/grpc-int.h"
#include "remote/modal/modal-int.h"
#include "remote/modal/task_command_router.pb-c.h"
#include "remote/remote-int.h"
#include "util/error-int.h"
#include "util/secmem.h"

#define RUN_GRACE_MS 5000u	/* host backstop past a run's deadline */
#define DRAIN_IDLE_MS 5000u	/* a stream silent this long after the exit is ended */
#define STDIN_CHUNK (1u << 20)	/* bytes per TaskExecStdinWrite */
#define STDIN_FIRST (64u << 10) /* the first write: what a pipe takes without blocking */
#define STDIO_RETRIES 10	/* reopenings of a broken output stream, as the SDKs */
#define STEP_MS 50

/* ===== Runs ===== */

enum { CALL_OUT, CALL_ERR, CALL_IN, CALL_WAIT, CALL_N };

struct rcall {
	struct sbx__grpc_call *call;
	uint8_t *framed;
	size_t len;
	uint64_t retry_at; /* 0: not waiting to start */
	uint64_t delay;
	int tries;
	int done;
};

struct run {
	struct sbx__modal *m;
	struct sbx__modal_box *b;
	const struct sbx__run_req *req;
	struct sbx__grpc_set *set;
	char exec_id[37];
	struct rcall c[CALL_N];
	uint64_t offset[2]; /* stdout, stderr bytes received */
	uint64_t in_off;    /* stdin bytes acknowledged */
	size_t in_chunk;    /* bytes in the write in flight */
	int in_first;	    /* the first stdin write has ended */
	int have_exit, code, signal, exit_case;
	int sink_rc;
	const char *bad; /* why a message of the router could not be read */
	int auth_retried;
	int start_broken;
	uint64_t exec_deadline;
	uint64_t drain_until; /* after the exit: when silent streams are ended */
	char auth[SBX_MODAL_TOKEN_MAX + 16];
	struct sbx__grpc_md md[1];
};

static int run_opts(struct run *r, uint64_t deadline, struct sbx__grpc_opts *o)
{
	pthread_mutex_lock(&r->b->lock);
	snprintf(r->auth, sizeof(r->auth), "Bearer %s", r->b->jwt);
	pthread_mutex_unlock(&r->b->lock);
	r->md[0] = (struct sbx__grpc_md){"authorization", r->auth};
	*o = (struct sbx__grpc_opts){.deadline_ms = deadline,
				     .md = r->md,
				     .md_n = 1,
				     .retries = -1,
				     .kill = &r->b->killed,
				     .max_throttle_ms = r->m->max_throttle_ms};
	return 0;
}

/* A new JWT for the router (it answered UNAUTHENTICATED). */
static int refresh_router(struct sbx__modal *m, struct sbx__modal_box *b)
{
	char *jwt = NULL;
	int rc = sbx__modal_router_access(m, b->task_id, sbx__modal_deadline_in(m->api_timeout_ms),
					  &jwt, NULL);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&b->lock);
	sbx__modal_wipe_free(b->jwt);
	b->jwt = jwt;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

static int stdio_cb(void *arg, const uint8_t *msg, size_t len, int which);

static int out_cb(void *arg, const uint8_t *msg, size_t len)
{
	return stdio_cb(arg, msg, len, 0);
}

static int err_cb(void *arg, const uint8_t *msg, size_t len)
{
	return stdio_cb(arg, msg, len, 1);
}

static int stdio_cb(void *arg, const uint8_t *msg, size_t len, int which)
{
	struct run *r = arg;
	Modal__TaskCommandRouter__TaskExecStdioReadResponse *m =
		modal__task_command_router__task_exec_stdio_read_response__unpack(NULL, len, msg);
	int rc = 0;

	if (!m) {
		r->bad = "TaskExecStdioRead answered a message that is not a "
			 "TaskExecStdioReadResponse";
		return -1;
	}
	if (m->data.len) {
		r->offset[which] += m->data.len;
		rc = r->req->sink(r->req->sink_arg, which ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT,
				  m->data.data, m->data.len);
		if (r->drain_until)
			r->drain_until = sbx__grpc_now_ms() + DRAIN_IDLE_MS;
	}
	modal__task_command_router__task_exec_stdio_read_response__free_unpacked(m, NULL);
	if (rc) {
		r->sink_rc = rc;
		return rc;
	}
	return 0;
}

static int wait_cb(void *arg, const uint8_t *msg, size_t len)
{
	struct run *r = arg;
	Modal__TaskCommandRouter__TaskExecWaitResponse *m =
		modal__task_command_router__task_exec_wait_response__unpack(NULL, len, msg);

	if (!m) {
		r->bad = "TaskExecWait answered a message that is not a TaskExecWaitResponse";
		return -1;
	}
	r->exit_case = (int)m->exit_status_case;
	if (m->exit_status_case ==
	    MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_CODE)
		r->code = m->code;
	else if (m->exit_status_case ==
		 MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL)
		r->signal = m->signal;
	modal__task_command_router__task_exec_wait_response__free_unpacked(m, NULL);
	return 0;
}

/* (Re)starts one of the run's calls, building its request. */
static int start_call(struct run *r, int which, uint64_t deadline)
{
	static const sbx__grpc_msg_cb cbs[CALL_N] = {out_cb, err_cb, NULL, wait_cb};
	static const char *const methods[CALL_N] = {
		SBX_MODAL_EXEC_STDIO_READ, SBX_MODAL_EXEC_STDIO_READ, SBX_MODAL_EXEC_STDIN_WRITE,
		SBX_MODAL_EXEC_WAIT};
	struct rcall *c = &r->c[which];
	struct sbx__grpc_opts o;

	free(c->framed);
	c->framed = NULL;
	if (which == CALL_OUT || which == CALL_ERR) {
		Modal__TaskCommandRouter__TaskExecStdioReadRequest q =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_READ_REQUEST__INIT;

		q.task_id = r->b->task_id;
		q.exec_id = r->exec_id;
		q.offset = r->offset[which];
		q.file_descriptor =
			which == CALL_OUT
				? MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_FILE_DESCRIPTOR__TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT
				: MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_FILE_DESCRIPTOR__TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR;
		c->framed = sbx__modal_pack(&q.base, &c->len, 0);
	} else if (which == CALL_IN) {
		Modal__TaskCommandRouter__TaskExecStdinWriteRequest q =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIN_WRITE_REQUEST__INIT;
		size_t left = r->req->stdin_len - (size_t)r->in_off;

		size_t most = r->in_off ? STDIN_CHUNK : STDIN_FIRST;

		r->in_chunk = left > most ? most : left;
		q.task_id = r->b->task_id;
		q.exec_id = r->exec_id;
		q.offset = r->in_off;
		q.data.data = r->in_chunk ? (uint8_t *)r->req->stdin_data + r->in_off : NULL;
		q.data.len = r->in_chunk;
		q.eof = r->in_off + r->in_chunk == r->req->stdin_len;
		c->framed = sbx__modal_pack(&q.base, &c->len, 0);
	} else {
		Modal__TaskCommandRouter__TaskExecWaitRequest q =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_REQUEST__INIT;

		q.task_id = r->b->task_id;
		q.exec_id = r->exec_id;
		c->framed = sbx__modal_pack(&q.base, &c->len, 0);
	}
	if (!c->framed)
		return sbx__modal_nomem();
	run_opts(r, deadline, &o);
	o.unary = which == CALL_IN || which == CALL_WAIT;
	c->retry_at = 0;
	return sbx__grpc_start(r->set, &c->call, methods[which], c->framed, c->len, &o, cbs[which],
			       r);
}

/* Starts the exec: TaskExecStart, its env (secrets included) in wiped memory. */
static int exec_start(struct run *r, char **argv)
{
	const struct sbx__run_req *req = r->req;
	Modal__TaskCommandRouter__TaskExecStartRequest q =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_START_REQUEST__INIT;
	Modal__TaskCommandRouter__TaskExecStartRequest__EnvEntry *ents = NULL, **entp = NULL;
	char **names = NULL;
	size_t n_env = 0, argc = 0, len = 0;
	struct sbx__grpc_status st = {0};
	struct sbx__grpc_opts o;
	uint8_t *framed = NULL, *resp = NULL;
	size_t resp_len = 0;
	int rc = 0;

	while (argv[argc])
		argc++;
	while (req->env && req->env[n_env])
		n_env++;
	ents = calloc(n_env + 1, sizeof(*ents));
	entp = calloc(n_env + 1, sizeof(*entp));
	names = calloc(n_env + 1, sizeof(*names));
	if (!ents || !entp || !names) {
		rc = sbx__modal_nomem();
		goto out;
	}
	for (size_t i = 0; i < n_env; i++) {
		const char *eq = strchr(req->env[i], '=');

		if (!eq) {
			rc = sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					    "modal: run environment entry %zu has no '='", i);
			goto out;
		}
		/* Names are not secret; values stay where core keeps them. */
		names[i] = strndup(req->env[i], (size_t)(eq - req->env[i]));
		if (!names[i]) {
			rc = sbx__modal_nomem();
			goto out;
		}
		modal__task_command_router__task_exec_start_request__env_entry__init(&ents[i]);
		ents[i].key = names[i];
		ents[i].value = (char *)eq + 1;
		entp[i] = &ents[i];
	}
	q.task_id = r->b->task_id;
	q.exec_id = r->exec_id;
	q.n_command_args = argc;
	q.command_args = argv;
	q.stdout_config =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDOUT_CONFIG__TASK_EXEC_STDOUT_CONFIG_PIPE;
	q.stderr_config =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDERR_CONFIG__TASK_EXEC_STDERR_CONFIG_PIPE;
	q.timeout_secs = (uint32_t)((req->timeout_ms + 999u) / 1000u);
	q.workdir = (char *)req->workdir;
	q.n_env = n_env;
	q.env = entp;
	/* A packed request with secrets lives in locked memory, wiped when freed. */
	framed = sbx__modal_pack(&q.base, &len, req->has_secrets);
	if (!framed) {
		rc = sbx__error_os(SBX_ENOMEM, errno, "modal: locked memory for the run request");
		goto out;
	}
	for (int attempt = 0;; attempt++) {
		run_opts(r, sbx__modal_deadline_in(r->m->api_timeout_ms), &o);
		/* Retried with the same exec_id, which makes the start idempotent. */
		rc = sbx__grpc_unary(r->b->router, SBX_MODAL_EXEC_START, framed, len, &o, &resp,
				     &resp_len, &st);
		free(resp);
		resp = NULL;
		if (rc < 0 && st.code == SBX__GRPC_UNAUTHENTICATED && attempt == 0 &&
		    !r->auth_retried) {
			r->auth_retried = 1;
			rc = refresh_router(r->m, r->b);
			if (rc < 0)
				break;
			continue;
		}
		break;
	}
	r->start_broken = rc < 0 && st.broken;
	if (rc < 0)
		sbx__error_wrap("modal: sandbox %s: start the run", r->b->id);
out:
	if (framed && req->has_secrets) {
		sbx__secmem_free(framed, len);
	} else if (framed) {
		explicit_bzero(framed, len);
		free(framed);
	}
	for (size_t i = 0; names && i < n_env; i++)
		free(names[i]);
	free(names);
	free(ents);
	free(entp);
	return rc;
}

static void fill_exit(struct run *r, sbx_result *res, uint64_t exec_deadline)
{
	int past = sbx__grpc_now_ms() >= exec_deadline;

	if (r->exit_case ==
	    MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL) {
		res->term_signal = r->signal;
		if (past) {
			res->status = SBX_RUN_TIMEOUT;
			res->exit_code = 124;
		} else {
			res->status = SBX_RUN_KILLED;
			res->exit_code = 128 + r->signal;
		}
	} else if (r->code >= 0 && r->code <= 255) {
		res->status = SBX_RUN_EXITED;
		res->exit_code = r->code;
	} else {
		/* Out of range past the deadline (on_end refused it before): a timeout. */
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
	}
	if (res->status == SBX_RUN_TIMEOUT)
		res->limits_hit |= SBX_HIT_TIMEOUT;
}

static void run_done(struct run *r)
{
	if (r->set)
		sbx__grpc_set_free(r->set); /* ends the calls still open */
	for (int i = 0; i < CALL_N; i++)
		free(r->c[i].framed);
	explicit_bzero(r->auth, sizeof(r->auth));
}

/* What to do with a call that ended; 0 to go on, or <0 to end the run. */
enum {
	END_OK = 0,
	END_BREAK = -100,    /* the router broke the protocol */
	END_CANCEL = -101,   /* the sink canceled (or ran out of memory) */
	END_KILLED = -102,   /* sbx_sandbox_kill() */
	END_ERROR = -103,    /* a call failed for good */
	END_BACKSTOP = -104, /* the host's deadline passed */
};

static int
on_end_call(struct run *r, int which, int rc, const struct sbx__grpc_status *st, uint64_t now);

static int on_end(struct run *r, int which, int rc, const struct sbx__grpc_status *st, uint64_t now)
{
	struct rcall *c = &r->c[which];

	c->call = NULL;
	rc = on_end_call(r, which, rc, st, now);
	if (which == CALL_IN && !r->in_first && (r->in_off > 0 || c->done)) {
		/* The first stdin write is in (or dropped): output and exit may be asked. */
		r->in_first = 1;
		for (int i = 0; i < CALL_N; i++)
			if (i != CALL_IN)
				r->c[i].retry_at = now;
	}
	return rc;
}

static int
on_end_call(struct run *r, int which, int rc, const struct sbx__grpc_status *st, uint64_t now)
{
	struct rcall *c = &r->c[which];

	if (rc == 0) {
		if (which == CALL_IN) {
			r->in_off += r->in_chunk;
			if (r->in_off < r->req->stdin_len) {
				c->retry_at = now; /* the next chunk */
				c->delay = 0;
				c->tries = 0;
				return 0;
			}
		}
		if (which == CALL_WAIT) {
			if (r->exit_case == 0 ||
			    (r->exit_case ==
				     MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL &&
			     (r->signal <= 0 || r->signal > 64))) {
				sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					       "TaskExecWait answered neither an exit code nor a "
					       "signal");
				return END_BREAK;
			}
			if (r->exit_case ==
				    MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_CODE &&
			    (r->code < 0 || r->code > 255) && now < r->exec_deadline) {
				sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					       "TaskExecWait answered exit code %d", r->code);
				return END_BREAK;
			}
			r->have_exit = 1;
			r->drain_until = now + DRAIN_IDLE_MS;
		}
		c->done = 1;
		return 0;
	}
	if (st->cb_rc && r->sink_rc)
		return END_CANCEL;
	if (st->cb_rc) {
		sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE, "%s",
			       r->bad ? r->bad : "an unreadable message");
		return END_BREAK;
	}
	if (st->canceled)
		return END_KILLED;
	if (st->broken)
		return END_BREAK;
	if (st->code == SBX__GRPC_UNAUTHENTICATED && !r->auth_retried) {
		r->auth_retried = 1;
		if (refresh_router(r->m, r->b) < 0)
			return END_ERROR;
		sbx__error_clear();
		c->retry_at = now;
		return 0;
	}
	if (which == CALL_IN && !sbx__grpc_retryable(st->code)) {
		/* The program stopped taking input (it exited, or closed stdin): drop the rest. */
		sbx__error_clear();
		c->done = 1;
		return 0;
	}
	if (sbx__grpc_retryable(st->code) && (which == CALL_WAIT || c->tries < STDIO_RETRIES)) {
		sbx__error_clear();
		c->tries++;
		c->delay = which == CALL_WAIT ? 1000 : c->delay ? c->delay * 2 : 100;
		if (c->delay > 1000)
			c->delay = 1000;
		c->retry_at = now + c->delay;
		return 0;
	}
	return END_ERROR;
}

/* The run's result, or its error, from how its loop ended (end: 0 or an
 * END_* code); the sandbox is terminated where the run's state is unknown
 * or not trusted. */
static int run_outcome(struct run *r, int end, sbx_result *res, uint64_t exec_deadline)
{
	struct sbx__modal *m = r->m;
	struct sbx__modal_box *b = r->b;
	const struct sbx__run_req *req = r->req;
	int rc;

	if (end == END_BACKSTOP) {
		/* The router did not end the run by its deadline: end the sandbox. */
		sbx__modal_terminate(m, b->id);
		sbx__error_clear();
		if (req->ended)
			*req->ended = SBX__ENDED_TIMEOUT;
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->term_signal = 9;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		rc = 0;
	} else if (end == END_KILLED) {
		/* Killed through sbx_sandbox_kill() while the run was in flight. */
		sbx__error_clear();
		res->status = SBX_RUN_KILLED;
		res->exit_code = 137;
		res->term_signal = 9;
		rc = 0;
	} else if (end == END_CANCEL && r->sink_rc == 1) {
		sbx__modal_terminate(m, b->id);
		if (req->ended)
			*req->ended = SBX__ENDED_KILLED;
		rc = sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE,
				    "modal: run canceled by the output callback; sandbox %s was "
				    "terminated",
				    b->id);
	} else if (end == END_CANCEL) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory for output");
	} else if (end == END_BREAK) {
		char why[SBX_ERROR_MSG_MAX];

		/* A protocol violation: the sandbox is not trusted any further. */
		snprintf(why, sizeof(why), "%s", sbx_error_last()->message);
		sbx__modal_terminate(m, b->id);
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: sandbox %s broke the run protocol (%s), so it was "
				    "terminated",
				    b->id, why);
	} else if (end == END_ERROR) {
		int code = sbx__error_code() ? sbx__error_code() : SBX_EENGINE;

		/* The run's state is unknown: end the sandbox rather than leave it running. */
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		rc = sbx__modal_terminate_keep(m, b->id, code);
	} else {
		fill_exit(r, res, exec_deadline);
		rc = 0;
	}
	return rc;
}

int sbx__modal_op_run(void *state, void *box, const struct sbx__run_req *req, sbx_result *res)
{
	struct sbx__modal *m = state;
	struct sbx__modal_box *b = box;
	struct run *r = NULL;
	char **argv = NULL;
	uint64_t start, exec_deadline, backstop;
	int rc, end = 0;

	if (__atomic_load_n(&b->killed, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "modal: sandbox %s was terminated by an earlier kill", b->id);
	rc = sbx__remote_argv(&argv, b->policy, req->argv);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		sbx__remote_argv_free(argv);
		return sbx__modal_nomem();
	}
	r->m = m;
	r->b = b;
	r->req = req;
	sbx__grpc_uuid4(r->exec_id);
	start = sbx__grpc_now_ms();
	rc = exec_start(r, argv);
	sbx__remote_argv_free(argv);
	if (rc < 0 && r->start_broken) {
		/* A protocol violation: the sandbox is not trusted any further. */
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		rc = sbx__modal_terminate_keep(m, b->id, SBX_EENGINE);
	}
	if (rc < 0)
		goto out;
	exec_deadline = start + req->timeout_ms;
	r->exec_deadline = exec_deadline;
	backstop = exec_deadline + RUN_GRACE_MS;
	rc = sbx__grpc_set_new(&r->set, b->router);
	/*
	 * The first stdin write (at most what a pipe holds, and eof when that
	 * is all) goes before the reads and the wait: a server may start the
	 * program, or hand it its input, as soon as its output is asked for
	 * (Modal's local double does), and on the real service the order
	 * costs one round trip. The rest of stdin flows alongside the output.
	 */
	for (int i = 0; i < CALL_N; i++)
		r->c[i].retry_at = UINT64_MAX;
	if (rc == 0)
		rc = start_call(r, CALL_IN, backstop);
	while (rc == 0) {
		struct sbx__grpc_call *done = NULL;
		uint64_t now = sbx__grpc_now_ms();

		if (r->c[CALL_OUT].done && r->c[CALL_ERR].done && r->have_exit)
			break;
		if (__atomic_load_n(&b->killed, __ATOMIC_SEQ_CST)) {
			end = END_KILLED;
			break;
		}
		if (now >= backstop) {
			end = END_BACKSTOP;
			break;
		}
		if (r->have_exit && now >= r->drain_until)
			break; /* the program is gone; a silent stream keeps nothing back */
		for (int i = 0; rc == 0 && i < CALL_N; i++)
			if (!r->c[i].done && !r->c[i].call && r->c[i].retry_at &&
			    now >= r->c[i].retry_at)
				rc = start_call(r, i, backstop);
		if (rc < 0)
			break;
		rc = sbx__grpc_set_step(r->set, STEP_MS, &done);
		if (rc < 0 || !done)
			continue;
		for (int i = 0; i < CALL_N; i++) {
			if (r->c[i].call == done) {
				struct sbx__grpc_status st;
				int crc = sbx__grpc_call_end(done, &st);

				end = on_end(r, i, crc, &st, sbx__grpc_now_ms());
				break;
			}
		}
		if (end)
			break;
	}
	res->duration_ms = sbx__grpc_now_ms() - start;
	if (rc < 0 && !end) {
		end = END_ERROR;
	}
	rc = run_outcome(r, end, res, exec_deadline);
out:
	run_done(r);
	free(r);
	return rc;
}
