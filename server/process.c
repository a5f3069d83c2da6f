/*
 * server/process.c: the requests of envd's process service
 * (process.Process, Connect protocol, JSON codec) on the E2B-compatible
 * server: Start and Connect, server streams, and the unary List, SendInput,
 * CloseStdin, SendSignal and Update. Running the command and streaming its
 * events are server/run.c's; a command's terminal (Start's "pty",
 * SendInput's pty bytes, Update's size) is server/pty.c's.
 *
 * Requests are read as connect-go's protojson reads them: unknown fields
 * and wrong types are invalid_argument, null is an unset field, and bytes
 * are base64 in either alphabet, padded or not. Start answers at once with
 * the start event; the command waits for the box's busy slot within its
 * deadline. With "stdin": true the command starts as soon as the slot is
 * its, and each SendInput reaches it as it is sent, CloseStdin ending its
 * input (server/stdin.c); input sent before it starts (at most 16 MiB) is
 * fed to it first. SendSignal (KILL or TERM) cancels the run,
 * which on this backend ends the whole sandbox (Docker cannot kill one
 * exec). Base64 is util/base64.h's: the server may call the library's util/
 * helpers, which are shared, but never its internals.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"
#include "util/base64.h"

#define MAX_PROCS 16 /* commands of one sandbox running or waiting their turn */
#define STDIN_MAX (16u << 20)
#define PTY_INPUT_MAX (1u << 20) /* bytes of one SendInput to a terminal */
#define KEEPALIVE_DEFAULT_S 90
/* protojson's readers take base64 in either alphabet, padded or not. */
#define B64_PROTOJSON (SBX__BASE64_URL | SBX__BASE64_NOPAD)

/* ===== envd: Process.Start ===== */

/* The user of an "Authorization: Basic base64(user:)" header into out
 * (empty when none). Returns -1 for a malformed header. */
int sbxs_basic_user(struct MHD_Connection *c, char *out, size_t size)
{
	const char *h = sbxs_header(c, "Authorization");
	unsigned char dec[768]; /* sbx__base64_decoded_max(1024) */
	size_t len = 0, k;

	out[0] = '\0';
	if (!h)
		return 0;
	if (strncasecmp(h, "Basic ", 6) != 0 || strlen(h + 6) > 1024 ||
	    sbx__base64_decode(dec, &len, h + 6, strlen(h + 6), B64_PROTOJSON) < 0)
		return -1;
	for (k = 0; k < len && dec[k] != ':' && k + 1 < size; k++)
		out[k] = dec[k] >= 0x20 && dec[k] < 0x7f ? (char)dec[k] : '?';
	out[k] = '\0';
	explicit_bzero(dec, len);
	return 0;
}

static char *xstrdup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* [A-Za-z_][A-Za-z0-9_]*, as the library takes environment names. */
static int env_name_ok(const char *k)
{
	if (!(*k == '_' || (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z')))
		return 0;
	for (; *k; k++)
		if (!(*k == '_' || (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= '0' && *k <= '9')))
			return 0;
	return 1;
}

/*
 * StartRequest as connect-go's protojson reads it: unknown fields and wrong
 * types are invalid_argument; null is an unset field. Fills pr; on failure
 * *code and err say why.
 */
static int parse_start(json_t *j, struct sbxs_proc *pr, const char **code, char *err, size_t esize)
{
	static const char *const top[] = {"process", "pty", "tag", "stdin", NULL};
	static const char *const cfg[] = {"cmd", "args", "envs", "cwd", NULL};
	json_t *proc, *cmd, *args, *envs, *cwd, *v;
	const char *bad, *k;
	char mapped[PATH_MAX_LEN + 16];
	size_t n = 0, i;

	*code = "invalid_argument";
	if (!json_is_object(j)) {
		snprintf(err, esize, "unmarshal into process.StartRequest: not an object");
		return -1;
	}
	bad = sbxs_unknown_key(j, top);
	if (bad) {
		snprintf(err, esize, "unmarshal into process.StartRequest: unknown field \"%.64s\"",
			 bad);
		return -1;
	}
	proc = json_object_get(j, "process");
	if (!json_is_object(proc)) {
		snprintf(err, esize, "process is required");
		return -1;
	}
	bad = sbxs_unknown_key(proc, cfg);
	if (bad) {
		snprintf(err, esize,
			 "unmarshal into process.ProcessConfig: unknown field \"%.64s\"", bad);
		return -1;
	}
	v = json_object_get(j, "pty");
	if (v && !json_is_null(v)) {
		/* A terminal (server/pty.c): its input is the pty's, never stdin. */
		if (sbxs_pty_parse(v, &pr->rows, &pr->cols, err, esize) < 0)
			return -1;
		pr->pty = 1;
	}
	v = json_object_get(j, "stdin");
	if (v && !json_is_null(v) && !json_is_boolean(v)) {
		snprintf(err, esize, "stdin must be a boolean");
		return -1;
	}
	pr->want_stdin = json_is_true(v) && !pr->pty;
	v = json_object_get(j, "tag");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			snprintf(err, esize, "tag must be a string");
			return -1;
		}
		pr->tag = strdup(json_string_value(v));
	}
	cmd = json_object_get(proc, "cmd");
	args = json_object_get(proc, "args");
	envs = json_object_get(proc, "envs");
	cwd = json_object_get(proc, "cwd");
	if (!json_is_string(cmd) || !*json_string_value(cmd)) {
		snprintf(err, esize, "process.cmd is required");
		return -1;
	}
	if (args && !json_is_null(args) && !sbxs_string_array(args)) {
		snprintf(err, esize, "process.args must be an array of strings");
		return -1;
	}
	if (envs && !json_is_null(envs) && !sbxs_string_map(envs)) {
		snprintf(err, esize, "process.envs must be an object of strings");
		return -1;
	}
	if (cwd && !json_is_null(cwd)) {
		if (!json_is_string(cwd)) {
			snprintf(err, esize, "process.cwd must be a string");
			return -1;
		}
		if (sbxs_map_path(json_string_value(cwd), mapped, sizeof(mapped)) < 0) {
			snprintf(err, esize, "cwd '%.256s' is not a usable path here",
				 json_string_value(cwd));
			return -1;
		}
		pr->cwd = strdup(mapped);
	}
	pr->argv = calloc(json_array_size(args) + 2, sizeof(char *));
	pr->env = calloc(json_object_size(envs) + 1, sizeof(char *));
	if (!pr->argv || !pr->env)
		goto nomem;
	if (!(pr->argv[0] = strdup(json_string_value(cmd))))
		goto nomem;
	json_array_foreach(args, i, v)
	{
		if (!(pr->argv[i + 1] = xstrdup_n(json_string_value(v), json_string_length(v))))
			goto nomem;
	}
	json_object_foreach(envs, k, v)
	{
		if (!env_name_ok(k)) {
			snprintf(err, esize, "process.envs: '%.64s' is not a variable name", k);
			return -1;
		}
		if (asprintf(&pr->env[n], "%s=%s", k, json_string_value(v)) < 0) {
			pr->env[n] = NULL;
			goto nomem;
		}
		n++;
	}
	pr->config = json_deep_copy(proc);
	if (!pr->config)
		goto nomem;
	return 0;
nomem:
	*code = "resource_exhausted";
	snprintf(err, esize, "out of memory");
	return -1;
}

/* Connect-Timeout-Ms: 1 to 10 digits, as the Connect protocol writes it. */
static int parse_timeout_header(const char *h, uint64_t *ms)
{
	uint64_t v = 0;
	size_t n = strlen(h);

	if (n == 0 || n > 10)
		return -1;
	for (; *h; h++) {
		if (*h < '0' || *h > '9')
			return -1;
		v = v * 10 + (uint64_t)(*h - '0');
	}
	*ms = v;
	return 0;
}

enum MHD_Result
/*
 * One function on purpose (some 140 lines): a Start request from its
 * headers to the worker that runs it, with one reply on every refusal
 * before the process exists and none after; the checks share the parsed
 * body and the box.
 */
sbxs_envd_start(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	const char *ct = sbxs_header(c, "Content-Type"),
		   *tmo = sbxs_header(c, "Connect-Timeout-Ms");
	const char *ka = sbxs_header(c, "Keepalive-Ping-Interval"), *enc;
	const union MHD_ConnectionInfo *ci;
	struct sbxs_box *b = rq->box;
	char err[1024], user[128];
	const char *code;
	struct MHD_Response *r;
	struct sbxs_proc *pr;
	pthread_attr_t attr;
	pthread_t th;
	json_error_t je;
	uint64_t timeout = 0, ka_s = KEEPALIVE_DEFAULT_S;
	uint32_t len;
	json_t *j;
	int started, as_root = 0;

	if (!ct || strncasecmp(ct, "application/connect+json", 24) != 0)
		return sbxs_connect_error(
			c, "invalid_argument",
			"Content-Type must be application/connect+json (got '%.64s')",
			ct ? ct : "");
	enc = sbxs_header(c, "Connect-Content-Encoding");
	if (enc && strcmp(enc, "identity") != 0)
		return sbxs_stream_error(c, "unimplemented", "compression is not supported");
	if (tmo && parse_timeout_header(tmo, &timeout) < 0)
		return sbxs_stream_error(c, "invalid_argument", "malformed Connect-Timeout-Ms");
	if (ka) {
		char *end;
		unsigned long v = strtoul(ka, &end, 10);

		if (end == ka || *end || v < 1 || v > 3600)
			return sbxs_stream_error(
				c, "invalid_argument",
				"Keepalive-Ping-Interval must be 1 to 3600 seconds");
		ka_s = v;
	}
	if (sbxs_basic_user(c, user, sizeof(user)) < 0) {
		snprintf(err, sizeof(err),
			 "user '%s' is not available on this server: commands run as the sandbox "
			 "user",
			 user);
		return sbxs_stream_error(c, "permission_denied", err);
	}
	if (sbxs_run_user(b, user, &as_root, err, sizeof(err)) < 0)
		return sbxs_stream_error(c, "permission_denied", err);
	if (rq->len < 5 || (rq->body[0] & 0xff) != 0)
		return sbxs_stream_error(c, "invalid_argument",
					 rq->len >= 5 && (rq->body[0] & 1)
						 ? "compressed messages are not supported"
						 : "malformed request envelope");
	len = (uint32_t)(unsigned char)rq->body[1] << 24 |
	      (uint32_t)(unsigned char)rq->body[2] << 16 |
	      (uint32_t)(unsigned char)rq->body[3] << 8 | (uint32_t)(unsigned char)rq->body[4];
	if ((size_t)len != rq->len - 5)
		return sbxs_stream_error(c, "invalid_argument",
					 "a server-streaming request is exactly one message");
	j = json_loadb(rq->body + 5, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, sizeof(err), "unmarshal into process.StartRequest: %s", je.text);
		return sbxs_stream_error(c, "invalid_argument", err);
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr) {
		json_decref(j);
		return sbxs_stream_error(c, "resource_exhausted", "out of memory");
	}
	sbxs_cond_init(&pr->cv);
	pr->fd = -1;
	if (parse_start(j, pr, &code, err, sizeof(err)) < 0) {
		json_decref(j);
		sbxs_proc_free(pr);
		return sbxs_stream_error(c, code, err);
	}
	json_decref(j);
	pr->as_root = as_root;
	if (sbxs_user_defaults(b, pr) < 0) {
		sbxs_proc_free(pr);
		return sbxs_stream_error(c, "resource_exhausted", "out of memory");
	}
	if (pr->pty && sbxs_pty_open(pr) < 0) {
		sbxs_proc_free(pr);
		return sbxs_stream_error(c, "resource_exhausted",
					 "cannot make the terminal's input socket");
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	pr->fd = ci ? ci->connect_fd : -1;
	pr->keepalive_ms = ka_s * 1000;
	pr->last_sent = sbx__mono_ms();
	if (timeout)
		pr->deadline = pr->last_sent + timeout;
	pr->refs = 2; /* the worker's and the response's */

	pthread_mutex_lock(&srv->mu);
	if (b->retired || srv->stopping) {
		pthread_mutex_unlock(&srv->mu);
		sbxs_proc_free(pr);
		return sbxs_stream_error(c, "unavailable", "The sandbox was not found");
	}
	{
		int waiting = 0;

		for (struct sbxs_proc *q = b->procs; q; q = q->next)
			waiting++;
		if (waiting >= MAX_PROCS) {
			pthread_mutex_unlock(&srv->mu);
			sbxs_proc_free(pr);
			snprintf(err, sizeof(err),
				 "the sandbox already has %d commands running or waiting (the "
				 "bound of this server)",
				 MAX_PROCS);
			return sbxs_stream_error(c, "resource_exhausted", err);
		}
	}
	b->refs++;
	pr->box = b;
	pr->pid = ++b->next_pid;
	pr->next = b->procs;
	b->procs = pr;
	sbxs_push_locked(pr, sbxs_frame_json(0, json_pack("{s:{s:{s:I}}}", "event", "start", "pid",
							  (json_int_t)pr->pid)));
	srv->workers++;
	pthread_mutex_unlock(&srv->mu);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&th, &attr, sbxs_worker_main, pr) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		pthread_mutex_lock(&srv->mu);
		srv->workers--;
		for (struct sbxs_proc **pp = &b->procs; *pp; pp = &(*pp)->next)
			if (*pp == pr) {
				*pp = pr->next;
				break;
			}
		sbxs_push_locked(pr, sbxs_frame_eos("resource_exhausted", "cannot start a thread"));
		pr->eos = 1;
		sbxs_followers_end_locked(pr);
		pr->refs--;
		pthread_mutex_unlock(&srv->mu);
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK_MAX, sbxs_stream_read, pr,
					      sbxs_stream_done);
	if (!r) {
		sbxs_cancel_proc(pr, SBXS_CANCEL_GONE);
		sbxs_proc_unref(pr);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/connect+json");
	return sbxs_queue(c, 200, r);
}

/* ===== envd: the unary process calls ===== */

/* ProcessSelector: exactly one of pid (a number, or protojson's string
 * form of one) and tag. */
static int parse_selector(json_t *sel, unsigned *pid, const char **tag, char *err, size_t esize)
{
	static const char *const keys[] = {"pid", "tag", NULL};
	json_t *p, *t;
	const char *bad;

	*tag = NULL;
	if (!json_is_object(sel)) {
		snprintf(err, esize, "process (a ProcessSelector) is required");
		return -1;
	}
	bad = sbxs_unknown_key(sel, keys);
	if (bad) {
		snprintf(err, esize,
			 "unmarshal into process.ProcessSelector: unknown field \"%.64s\"", bad);
		return -1;
	}
	p = json_object_get(sel, "pid");
	t = json_object_get(sel, "tag");
	if (p && !json_is_null(p)) {
		if (json_is_integer(p) && json_integer_value(p) >= 0 &&
		    json_integer_value(p) <= 0xffffffffLL) {
			*pid = (unsigned)json_integer_value(p);
		} else if (json_is_string(p)) {
			char *end;
			unsigned long v = strtoul(json_string_value(p), &end, 10);

			if (end == json_string_value(p) || *end || v > 0xffffffffUL) {
				snprintf(err, esize, "pid must be a uint32");
				return -1;
			}
			*pid = (unsigned)v;
		} else {
			snprintf(err, esize, "pid must be a uint32");
			return -1;
		}
		if (t && !json_is_null(t)) {
			snprintf(err, esize, "a ProcessSelector holds one of pid and tag");
			return -1;
		}
		return 0;
	}
	if (json_is_string(t)) {
		*tag = json_string_value(t);
		return 0;
	}
	snprintf(err, esize, "the ProcessSelector names no process");
	return -1;
}

/* The process of the box that sel names, with a reference; NULL: none. */
static struct sbxs_proc *find_proc(struct sbxs_box *b, unsigned pid, const char *tag)
{
	struct sbxs_server *srv = b->srv;
	struct sbxs_proc *pr;

	pthread_mutex_lock(&srv->mu);
	for (pr = b->procs; pr; pr = pr->next)
		if (!pr->run_done &&
		    (tag ? pr->tag && strcmp(pr->tag, tag) == 0 : pr->pid == pid)) {
			pr->refs++;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	return pr;
}

static enum MHD_Result proc_not_found(struct MHD_Connection *c, unsigned pid, const char *tag)
{
	if (tag)
		return sbxs_connect_error(c, "not_found", "process with tag %.64s not found", tag);
	return sbxs_connect_error(c, "not_found", "process with pid %u not found", pid);
}

/*
 * process.Process/Connect: a stream of a running (or waiting) process's
 * events from now on, as envd gives it: its start event, then its output
 * and its end, beside the stream of its Start. The follower going away
 * stops nothing; one that does not read is dropped past the queue's bound.
 */
enum MHD_Result
sbxs_envd_connect(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	static const char *const keys[] = {"process", NULL};
	const char *ct = sbxs_header(c, "Content-Type");
	const char *ka = sbxs_header(c, "Keepalive-Ping-Interval"), *tag = NULL, *bad;
	const union MHD_ConnectionInfo *ci;
	struct sbxs_box *b = rq->box;
	struct sbxs_proc *leader, *fl;
	struct MHD_Response *r;
	json_error_t je;
	char err[512];
	unsigned pid = 0;
	uint64_t ka_s = KEEPALIVE_DEFAULT_S;
	uint32_t len;
	json_t *j;

	if (!ct || strncasecmp(ct, "application/connect+json", 24) != 0)
		return sbxs_connect_error(
			c, "invalid_argument",
			"Content-Type must be application/connect+json (got '%.64s')",
			ct ? ct : "");
	if (ka) {
		char *end;
		unsigned long v = strtoul(ka, &end, 10);

		if (end == ka || *end || v < 1 || v > 3600)
			return sbxs_stream_error(
				c, "invalid_argument",
				"Keepalive-Ping-Interval must be 1 to 3600 seconds");
		ka_s = v;
	}
	if (rq->len < 5 || (rq->body[0] & 0xff) != 0)
		return sbxs_stream_error(c, "invalid_argument", "malformed request envelope");
	len = (uint32_t)(unsigned char)rq->body[1] << 24 |
	      (uint32_t)(unsigned char)rq->body[2] << 16 |
	      (uint32_t)(unsigned char)rq->body[3] << 8 | (uint32_t)(unsigned char)rq->body[4];
	if ((size_t)len != rq->len - 5)
		return sbxs_stream_error(c, "invalid_argument",
					 "a server-streaming request is exactly one message");
	j = json_loadb(rq->body + 5, len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		snprintf(err, sizeof(err), "unmarshal into process.ConnectRequest: %s",
			 j ? "not an object" : je.text);
		json_decref(j);
		return sbxs_stream_error(c, "invalid_argument", err);
	}
	bad = sbxs_unknown_key(j, keys);
	if (bad) {
		snprintf(err, sizeof(err),
			 "unmarshal into process.ConnectRequest: unknown field \"%.64s\"", bad);
		json_decref(j);
		return sbxs_stream_error(c, "invalid_argument", err);
	}
	if (parse_selector(json_object_get(j, "process"), &pid, &tag, err, sizeof(err)) < 0) {
		json_decref(j);
		return sbxs_stream_error(c, "invalid_argument", err);
	}
	leader = find_proc(b, pid, tag);
	if (!leader) {
		if (tag)
			snprintf(err, sizeof(err), "process with tag %.64s not found", tag);
		else
			snprintf(err, sizeof(err), "process with pid %u not found", pid);
		json_decref(j);
		return sbxs_stream_error(c, "not_found", err);
	}
	json_decref(j);
	fl = calloc(1, sizeof(*fl));
	if (!fl) {
		sbxs_proc_unref(leader);
		return sbxs_stream_error(c, "resource_exhausted", "out of memory");
	}
	sbxs_cond_init(&fl->cv);
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	fl->fd = ci ? ci->connect_fd : -1;
	fl->keepalive_ms = ka_s * 1000;
	fl->last_sent = sbx__mono_ms();
	fl->refs = 1;	     /* the response's */
	fl->leader = leader; /* find_proc's reference */
	pthread_mutex_lock(&srv->mu);
	b->refs++;
	fl->box = b;
	fl->pid = leader->pid;
	sbxs_push_locked(fl, sbxs_frame_json(0, json_pack("{s:{s:{s:I}}}", "event", "start", "pid",
							  (json_int_t)fl->pid)));
	if (leader->eos) {
		fl->eos = 1; /* it ended meanwhile: its end went to its own stream */
		sbxs_push_locked(fl, sbxs_frame_eos("not_found", "the process ended"));
	} else {
		fl->next_follower = leader->followers;
		leader->followers = fl;
	}
	pthread_mutex_unlock(&srv->mu);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK_MAX, sbxs_stream_read, fl,
					      sbxs_stream_done);
	if (!r) {
		pthread_mutex_lock(&srv->mu);
		fl->reader_done = 1;
		pthread_mutex_unlock(&srv->mu);
		sbxs_stream_done(fl);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/connect+json");
	return sbxs_queue(c, 200, r);
}

static enum MHD_Result
envd_list(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_box *b)
{
	json_t *arr = json_array(), *out;

	pthread_mutex_lock(&srv->mu);
	for (struct sbxs_proc *pr = b->procs; pr; pr = pr->next) {
		json_t *info =
			json_pack("{s:O, s:I}", "config", pr->config, "pid", (json_int_t)pr->pid);

		if (info && pr->tag)
			json_object_set_new(info, "tag", json_string(pr->tag));
		json_array_append_new(arr, info);
	}
	pthread_mutex_unlock(&srv->mu);
	out = json_object();
	if (json_array_size(arr))
		json_object_set(out, "processes", arr);
	json_decref(arr);
	return sbxs_reply_json(c, 200, out);
}

/*
 * One function on purpose (some 230 lines): envd's unary methods (List,
 * SendInput, CloseStdin, SendSignal, Update) share one parsing of the body, one
 * check of its keys and one lookup of the process under srv->mu, and each
 * answers from inside that lock.
 */
enum MHD_Result sbxs_envd_unary(struct sbxs_server *srv,
				struct MHD_Connection *c,
				struct sbxs_req *rq,
				const char *method)
{
	static const char *const in_keys[] = {"process", "input", NULL};
	static const char *const close_keys[] = {"process", NULL};
	static const char *const sig_keys[] = {"process", "signal", NULL};
	static const char *const update_keys[] = {"process", "pty", NULL};
	const char *ct = sbxs_header(c, "Content-Type"), *tag = NULL, *bad;
	struct sbxs_box *b = rq->box;
	struct sbxs_proc *pr;
	json_error_t je;
	char err[512];
	unsigned pid = 0, rows = 0, cols = 0;
	json_t *j, *sel;
	enum MHD_Result ret;
	unsigned char *bytes = NULL; /* SendInput's */
	size_t n = 0;
	int is_pty = 0, has_size = 0; /* Update's */

	if (!ct || strncasecmp(ct, "application/json", 16) != 0)
		return sbxs_connect_error(c, "invalid_argument",
					  "Content-Type must be application/json (got '%.64s')",
					  ct ? ct : "");
	j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return sbxs_connect_error(c, "invalid_argument",
					  "unmarshal into process.%sRequest: %s", method,
					  j ? "not an object" : je.text);
	}
	if (strcmp(method, "List") == 0) {
		if (json_object_size(j)) {
			json_decref(j);
			return sbxs_connect_error(
				c, "invalid_argument",
				"unmarshal into process.ListRequest: unknown field");
		}
		json_decref(j);
		return envd_list(srv, c, b);
	}
	bad = sbxs_unknown_key(j, strcmp(method, "SendInput") == 0    ? in_keys
				  : strcmp(method, "CloseStdin") == 0 ? close_keys
				  : strcmp(method, "Update") == 0     ? update_keys
								      : sig_keys);
	if (bad) {
		ret = sbxs_connect_error(
			c, "invalid_argument",
			"unmarshal into process.%sRequest: unknown field \"%.64s\"", method, bad);
		json_decref(j);
		return ret;
	}
	sel = json_object_get(j, "process");
	if (parse_selector(sel, &pid, &tag, err, sizeof(err)) < 0) {
		json_decref(j);
		return sbxs_connect_error(c, "invalid_argument", "%s", err);
	}
	/* The request is read whole before the process is looked up. */
	if (strcmp(method, "SendInput") == 0 &&
	    sbxs_pty_parse_input(json_object_get(j, "input"), PTY_INPUT_MAX, &bytes, &n, &is_pty,
				 err, sizeof(err)) < 0) {
		json_decref(j);
		return sbxs_connect_error(c, "invalid_argument", "%s", err);
	}
	if (strcmp(method, "Update") == 0 &&
	    (has_size = sbxs_pty_parse_update(j, &rows, &cols, err, sizeof(err))) < 0) {
		json_decref(j);
		return sbxs_connect_error(c, "invalid_argument", "%s", err);
	}
	pr = find_proc(b, pid, tag);
	if (!pr) {
		ret = proc_not_found(c, pid, tag);
		json_decref(j);
		if (bytes)
			explicit_bzero(bytes, n);
		free(bytes);
		return ret;
	}
	pid = pr->pid;
	if (strcmp(method, "SendSignal") == 0) {
		json_t *s = json_object_get(j, "signal");
		int ok = (json_is_string(s) &&
			  (strcmp(json_string_value(s), "SIGNAL_SIGKILL") == 0 ||
			   strcmp(json_string_value(s), "SIGNAL_SIGTERM") == 0)) ||
			 (json_is_integer(s) &&
			  (json_integer_value(s) == 9 || json_integer_value(s) == 15));

		json_decref(j);
		if (!ok) {
			sbxs_proc_unref(pr);
			return sbxs_connect_error(
				c, "invalid_argument",
				"signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
		}
		sbxs_cancel_proc(pr, SBXS_CANCEL_SIGNAL);
		sbxs_proc_unref(pr);
		return sbxs_reply_json(c, 200, json_object());
	}
	if (strcmp(method, "Update") == 0) {
		json_decref(j);
		if (has_size && !pr->pty) {
			sbxs_proc_unref(pr);
			return sbxs_connect_error(
				c, "internal", "error resizing tty: tty not assigned to process");
		}
		if (has_size && sbxs_pty_resize(pr, rows, cols, err, sizeof(err)) < 0) {
			sbxs_proc_unref(pr);
			return sbxs_connect_error(c, "internal", "%s", err);
		}
		sbxs_proc_unref(pr);
		return sbxs_reply_json(c, 200, json_object());
	}
	if (strcmp(method, "CloseStdin") == 0) {
		json_decref(j);
		pthread_mutex_lock(&srv->mu);
		if (pr->pty) {
			pthread_mutex_unlock(&srv->mu);
			sbxs_proc_unref(pr);
			return sbxs_connect_error(c, "failed_precondition",
						  "cannot close stdin for PTY process \xe2\x80\x94 "
						  "send Ctrl+D (0x04) instead");
		}
		if (!pr->want_stdin) {
			pthread_mutex_unlock(&srv->mu);
			sbxs_proc_unref(pr);
			return sbxs_connect_error(c, "failed_precondition",
						  "process %u was started without stdin", pid);
		}
		if (pr->fifo_ready && !pr->stdin_closed) {
			pr->stdin_closed = 1;
			pthread_mutex_unlock(&srv->mu);
			if (sbxs_stdin_write(pr, NULL, 0, 1, err, sizeof(err)) < 0) {
				sbxs_proc_unref(pr);
				return sbxs_connect_error(c, "unavailable", "%s", err);
			}
			sbxs_proc_unref(pr);
			return sbxs_reply_json(c, 200, json_object());
		}
		pr->stdin_closed = 1;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&srv->mu);
		sbxs_proc_unref(pr);
		return sbxs_reply_json(c, 200, json_object());
	}
	/* SendInput */
	{
		json_decref(j);
		if (is_pty != pr->pty) {
			explicit_bzero(bytes, n);
			free(bytes);
			sbxs_proc_unref(pr);
			return sbxs_connect_error(
				c, "failed_precondition", "%s",
				is_pty ? "error writing to tty: tty not assigned to process "
					 "\xe2\x80\x94 "
					 "input should be written to the stdin, not the tty"
				       : "error writing to stdin: tty assigned to process "
					 "\xe2\x80\x94 "
					 "input should be written to the pty, not the stdin");
		}
		if (is_pty) {
			const char *code;
			int wr = sbxs_pty_write(pr, bytes, n, &code, err, sizeof(err));

			explicit_bzero(bytes, n);
			free(bytes);
			sbxs_proc_unref(pr);
			if (wr < 0)
				return sbxs_connect_error(c, code, "%s", err);
			return sbxs_reply_json(c, 200, json_object());
		}
		pthread_mutex_lock(&srv->mu);
		if (!pr->want_stdin || pr->stdin_closed) {
			pthread_mutex_unlock(&srv->mu);
			explicit_bzero(bytes, n);
			free(bytes);
			sbxs_proc_unref(pr);
			return sbxs_connect_error(c, "failed_precondition",
						  "stdin of process %u is %s", pid,
						  pr->want_stdin ? "closed" : "not open");
		}
		if (pr->fifo_ready) {
			/* The command runs: the input goes to it now. */
			int wr;

			pthread_mutex_unlock(&srv->mu);
			wr = sbxs_stdin_write(pr, bytes, n, 0, err, sizeof(err));
			explicit_bzero(bytes, n);
			free(bytes);
			sbxs_proc_unref(pr);
			if (wr < 0)
				return sbxs_connect_error(c, "unavailable", "%s", err);
			return sbxs_reply_json(c, 200, json_object());
		}
		if (pr->in_len + n > STDIN_MAX) {
			pthread_mutex_unlock(&srv->mu);
			explicit_bzero(bytes, n);
			free(bytes);
			sbxs_proc_unref(pr);
			return sbxs_connect_error(
				c, "resource_exhausted",
				"stdin of process %u would pass 16 MiB before the "
				"command started",
				pid);
		}
		if (n) {
			char *grown = realloc(pr->in, pr->in_len + n);

			if (!grown) {
				pthread_mutex_unlock(&srv->mu);
				explicit_bzero(bytes, n);
				free(bytes);
				sbxs_proc_unref(pr);
				return sbxs_connect_error(c, "resource_exhausted", "out of memory");
			}
			memcpy(grown + pr->in_len, bytes, n);
			pr->in = grown;
			pr->in_len += n;
		}
		pthread_mutex_unlock(&srv->mu);
		explicit_bzero(bytes, n);
		free(bytes);
		sbxs_proc_unref(pr);
		return sbxs_reply_json(c, 200, json_object());
	}
}
