/*
 * remote/e2b/run.c: a run in an E2B sandbox, through envd's process
 * service.
 *
 * A run is one Connect server stream (process.Process/Start, JSON codec)
 * decoded by connect.c, driven by a libcurl multi handle so that stdin can
 * be fed (SendInput) while output streams back, and so that a kill from
 * another thread wakes the run at once. envd kills the process at the
 * Connect deadline; the host keeps a deadline of its own past that and
 * deletes the sandbox when the stream outlives it. Any break of the
 * protocol deletes the sandbox: nothing more from it is trusted.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "remote/e2b/e2b-int.h"
#include "remote/remote-int.h"
#include "util/base64.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define ERRBODY_MAX 65536 /* a non-200 answer to Start */
#define POLL_MS 250	  /* a run's loop wakes at least this often */

/* ===== Runs ===== */

/* What Go's os.ProcessState says for each signal ("signal: killed"). */
static const char *const signal_names[] = {
	[SIGHUP] = "hangup",
	[SIGINT] = "interrupt",
	[SIGQUIT] = "quit",
	[SIGILL] = "illegal instruction",
	[SIGTRAP] = "trace/breakpoint trap",
	[SIGABRT] = "aborted",
	[SIGBUS] = "bus error",
	[SIGFPE] = "floating point exception",
	[SIGKILL] = "killed",
	[SIGUSR1] = "user defined signal 1",
	[SIGSEGV] = "segmentation fault",
	[SIGUSR2] = "user defined signal 2",
	[SIGPIPE] = "broken pipe",
	[SIGALRM] = "alarm clock",
	[SIGTERM] = "terminated",
	[SIGSTKFLT] = "stack fault",
	[SIGCHLD] = "child exited",
	[SIGCONT] = "continued",
	[SIGSTOP] = "stopped (signal)",
	[SIGTSTP] = "stopped",
	[SIGTTIN] = "stopped (tty input)",
	[SIGTTOU] = "stopped (tty output)",
	[SIGURG] = "urgent I/O condition",
	[SIGXCPU] = "CPU time limit exceeded",
	[SIGXFSZ] = "file size limit exceeded",
	[SIGVTALRM] = "virtual timer expired",
	[SIGPROF] = "profiling timer expired",
	[SIGWINCH] = "window changed",
	[SIGIO] = "I/O possible",
	[SIGPWR] = "power failure",
	[SIGSYS] = "bad system call",
};

/* "signal: NAME[ (core dumped)]" to a signal number; 0 if not. */
static int parse_signal(const char *status)
{
	char name[64];
	const char *s;
	size_t n;

	if (strncmp(status, "signal: ", 8) != 0)
		return 0;
	s = status + 8;
	n = strlen(s);
	if (n > 14 && strcmp(s + n - 14, " (core dumped)") == 0)
		n -= 14;
	if (n == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, s, n);
	name[n] = '\0';
	for (size_t i = 1; i < SBX_ARRAY_SIZE(signal_names); i++)
		if (signal_names[i] && strcmp(signal_names[i], name) == 0)
			return (int)i;
	if (strncmp(name, "signal ", 7) == 0) {
		char *end;
		long v = strtol(name + 7, &end, 10);

		if (!*end && v > 0 && v < 128)
			return (int)v;
	}
	return 0;
}

/* One process in the sandbox, from its Start stream. */
struct proc {
	struct sbx__e2b *e;
	struct sbx__e2b_box *b;
	const struct sbx__run_req *req;
	CURL *stream;
	long status; /* of the Start answer; 0 until its first body byte */
	struct sbx__connect_dec dec;
	struct sbx__buf errbody; /* a non-200 answer */
	/* Why the stream was stopped from a callback. */
	int proto; /* it broke the protocol: the error is in err */
	int canceled, nomem;
	struct sbx__error_saved err;
	/* What it said. */
	int have_start, have_end, have_eos;
	uint32_t pid;
	long long exit_code;
	int exited;
	char end_status[128];
	char eos_code[48];
	char eos_msg[SBX_E2B_MSG_MAX + 1];
	/* stdin, fed in SendInput calls once the pid is known */
	const unsigned char *in;
	size_t in_left;
	int in_closing, in_done;
	CURL *in_easy;
	struct curl_slist *in_h;
	char *in_url, *in_body;
	struct sbx__e2b_req in_rq;
	struct sbx__e2b_resp in_rs;
};

static int proto_error(struct proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Untrusted text, made fit for a message. */
static const char *clean(struct proc *p, char *dst, size_t n, const char *s)
{
	sbx__e2b_sanitize(p->e, dst, n, s ? s : "", s ? strlen(s) : 0, p->b->token);
	return dst;
}

static int proto_error(struct proc *p, const char *fmt, ...)
{
	char msg[SBX_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE, "e2b: sandbox %s: %s", p->b->id, msg);
	sbx__error_save(&p->err);
	p->proto = 1;
	return SBX_EENGINE;
}

static int on_event_data(struct proc *p, json_t *data)
{
	const char *key;
	json_t *v;
	int stream;

	if (json_object_size(data) == 0)
		return 0;
	if (json_object_size(data) != 1)
		return proto_error(p, "a data event with %zu outputs", json_object_size(data));
	json_object_foreach(data, key, v)
	{
		const char *text = json_string_value(v);
		size_t tl = json_string_length(v);
		unsigned char *bytes;
		size_t n;
		int rc;

		if (strcmp(key, "stdout") == 0)
			stream = SBX_STREAM_STDOUT;
		else if (strcmp(key, "stderr") == 0)
			stream = SBX_STREAM_STDERR;
		else
			return proto_error(p, "a data event of kind '%s'",
					   clean(p, (char[40]){0}, 40, key));
		if (!text)
			return proto_error(p, "a data event whose %s is not a string", key);
		bytes = malloc(sbx__base64_decoded_max(tl) + 1);
		if (!bytes) {
			p->nomem = 1;
			return -2;
		}
		if (sbx__base64_decode(bytes, &n, text, tl, 0) < 0) {
			free(bytes);
			return proto_error(p, "a data event whose %s is not base64", key);
		}
		rc = n ? p->req->sink(p->req->sink_arg, stream, bytes, n) : 0;
		explicit_bzero(bytes, n);
		free(bytes);
		if (rc == 1) {
			p->canceled = 1;
			return 1;
		}
		if (rc < 0) {
			p->nomem = 1;
			return -2;
		}
	}
	return 0;
}

static int on_event_end(struct proc *p, json_t *end)
{
	json_t *code = json_object_get(end, "exitCode"), *exited = json_object_get(end, "exited");
	json_t *status = json_object_get(end, "status");

	if (!json_is_object(end) || (code && !json_is_integer(code)) ||
	    (exited && !json_is_boolean(exited)) || (status && !json_is_string(status)))
		return proto_error(p, "a malformed end event");
	p->have_end = 1;
	p->exit_code = code ? (long long)json_integer_value(code) : 0;
	p->exited = json_is_true(exited);
	snprintf(p->end_status, sizeof(p->end_status), "%s",
		 status ? json_string_value(status) : "");
	return 0;
}

static int on_frame(int kind, const char *json, size_t len, void *arg)
{
	struct proc *p = arg;
	_cleanup_json_ json_t *j = NULL;
	json_error_t jerr;
	const char *key;
	json_t *ev, *v;

	j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(j))
		return proto_error(p, "malformed JSON in the process stream (%.80s at byte %d)",
				   j ? "not an object" : jerr.text, j ? 0 : jerr.position);
	if (kind == SBX_CONNECT_END) {
		json_t *err = json_object_get(j, "error");

		p->have_eos = 1;
		if (!err)
			return 0;
		if (!json_is_object(err) || !json_is_string(json_object_get(err, "code")))
			return proto_error(p, "a malformed error in the end-of-stream frame");
		sbx__e2b_sanitize(p->e, p->eos_code, sizeof(p->eos_code),
				  json_string_value(json_object_get(err, "code")),
				  json_string_length(json_object_get(err, "code")), p->b->token);
		if (json_is_string(json_object_get(err, "message")))
			sbx__e2b_sanitize(p->e, p->eos_msg, sizeof(p->eos_msg),
					  json_string_value(json_object_get(err, "message")),
					  json_string_length(json_object_get(err, "message")),
					  p->b->token);
		return 0;
	}
	ev = json_object_get(j, "event");
	if (json_object_size(j) != 1 || !json_is_object(ev) || json_object_size(ev) != 1)
		return proto_error(p, "a message that is not one process event");
	if (p->have_end)
		return proto_error(p, "an event after the end event");
	json_object_foreach(ev, key, v)
	{
		if (strcmp(key, "start") == 0) {
			json_t *pid = json_object_get(v, "pid");

			if (p->have_start || !json_is_integer(pid) ||
			    json_integer_value(pid) <= 0 ||
			    json_integer_value(pid) > (json_int_t)UINT32_MAX)
				return proto_error(p, "a start event that is repeated or has no "
						      "valid pid");
			p->pid = (uint32_t)json_integer_value(pid);
			p->have_start = 1;
		} else if (strcmp(key, "keepalive") == 0) {
			continue;
		} else if (!p->have_start) {
			return proto_error(p, "a %s event before the start event",
					   clean(p, (char[40]){0}, 40, key));
		} else if (strcmp(key, "data") == 0) {
			if (!json_is_object(v))
				return proto_error(p, "a data event that is not an object");
			return on_event_data(p, v);
		} else if (strcmp(key, "end") == 0) {
			return on_event_end(p, v);
		} else {
			return proto_error(p, "an unknown event '%s'",
					   clean(p, (char[40]){0}, 40, key));
		}
	}
	return 0;
}

static size_t on_stream(char *data, size_t sz, size_t n, void *arg)
{
	struct proc *p = arg;
	size_t len = sz * n;
	int rc;

	if (!p->status) {
		const char *ct = NULL;

		curl_easy_getinfo(p->stream, CURLINFO_RESPONSE_CODE, &p->status);
		curl_easy_getinfo(p->stream, CURLINFO_CONTENT_TYPE, &ct);
		if (p->status == 200 &&
		    (!ct || strncasecmp(ct, "application/connect+json", 24) != 0)) {
			proto_error(p,
				    "the process stream has Content-Type '%s', not "
				    "application/connect+json",
				    clean(p, (char[72]){0}, 72, ct));
			return 0;
		}
	}
	if (p->status != 200) {
		sbx__buf_append(&p->errbody, data, len); /* capped */
		return len;
	}
	rc = sbx__connect_feed(&p->dec, data, len, on_frame, p);
	if (rc == 0)
		return len;
	if (rc < 0 && !p->proto && !p->canceled && !p->nomem) {
		/* The decoder's own finding (flags, size, bytes after the end). */
		if (rc == SBX_ENOMEM) {
			p->nomem = 1;
		} else {
			sbx__error_save(&p->err);
			p->proto = 1;
		}
	}
	return 0; /* stops the transfer */
}

/* Starts the next stdin call: a SendInput chunk, then CloseStdin. */
static int stdin_next(struct proc *p, CURLM *m)
{
	const char *what = p->in_left ? "SendInput" : "CloseStdin";
	size_t chunk = p->in_left > SBX_E2B_STDIN_CHUNK ? SBX_E2B_STDIN_CHUNK : p->in_left;
	static const char *const extra[] = {"Connect-Protocol-Version: 1", NULL};
	size_t need;

	free(p->in_url);
	free(p->in_body);
	p->in_url = p->in_body = NULL;
	if (asprintf(&p->in_url, "%s/process.Process/%s", p->b->envd_url, what) < 0) {
		p->in_url = NULL;
		return -1;
	}
	need = 64 + sbx__base64_encoded_len(chunk);
	p->in_body = malloc(need);
	if (!p->in_body)
		return -1;
	if (p->in_left) {
		size_t o = (size_t)snprintf(p->in_body, need,
					    "{\"process\":{\"pid\":%lu},\"input\":{\"stdin\":\"",
					    (unsigned long)p->pid);
		o += sbx__base64_encode(p->in_body + o, p->in, chunk);
		memcpy(p->in_body + o, "\"}}", 4);
		p->in += chunk;
		p->in_left -= chunk;
	} else {
		snprintf(p->in_body, need, "{\"process\":{\"pid\":%lu}}", (unsigned long)p->pid);
		p->in_closing = 1;
	}
	p->in_rq = (struct sbx__e2b_req){
		.method = "POST",
		.url = p->in_url,
		.box = p->b,
		.content_type = "application/json",
		.body = p->in_body,
		.body_len = strlen(p->in_body),
		.timeout_ms = p->e->api_timeout_ms,
		.max = 65536,
		.extra = extra,
	};
	p->in_easy = sbx__e2b_prepare(p->e, &p->in_rq, &p->in_rs, &p->in_h);
	if (!p->in_easy)
		return -1;
	curl_multi_add_handle(m, p->in_easy);
	return 0;
}

/* One stdin call ended. A failure (the program exited and stopped reading,
 * say) drops the rest of the input, as a closed pipe would. */
static void stdin_done(struct proc *p, CURLM *m, CURLcode cc)
{
	long status = 0;

	curl_easy_getinfo(p->in_easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(m, p->in_easy);
	curl_easy_cleanup(p->in_easy);
	p->in_easy = NULL;
	sbx__e2b_headers_free(p->in_h);
	p->in_h = NULL;
	sbx__e2b_resp_clear(&p->in_rs);
	if (p->in_closing)
		p->in_done = 1;
	else if (cc != CURLE_OK || status != 200)
		p->in_left = 0; /* straight to CloseStdin */
}

static void stdin_clear(struct proc *p, CURLM *m)
{
	if (p->in_easy) {
		curl_multi_remove_handle(m, p->in_easy);
		curl_easy_cleanup(p->in_easy);
		p->in_easy = NULL;
	}
	sbx__e2b_headers_free(p->in_h);
	p->in_h = NULL;
	sbx__e2b_resp_clear(&p->in_rs);
	free(p->in_url);
	free(p->in_body);
	p->in_url = p->in_body = NULL;
}

/* Kills the process (best effort), then deletes the sandbox. */
static void end_sandbox(struct proc *p, int signal_first)
{
	struct sbx__error_saved s;

	sbx__error_save(&s);
	if (signal_first && p->have_start && !p->have_end) {
		static const char *const extra[] = {"Connect-Protocol-Version: 1", NULL};
		_sbx_cleanup_free_ char *url = NULL;
		char body[96];
		struct sbx__e2b_resp rs;

		snprintf(body, sizeof(body),
			 "{\"process\":{\"pid\":%lu},\"signal\":\"SIGNAL_SIGKILL\"}",
			 (unsigned long)p->pid);
		if (asprintf(&url, "%s/process.Process/SendSignal", p->b->envd_url) >= 0) {
			struct sbx__e2b_req rq = {.method = "POST",
						  .url = url,
						  .box = p->b,
						  .content_type = "application/json",
						  .body = body,
						  .body_len = strlen(body),
						  .timeout_ms = p->e->api_timeout_ms,
						  .max = 65536,
						  .extra = extra};
			sbx__e2b_http(p->e, &rq, &rs);
			sbx__e2b_resp_clear(&rs);
		} else {
			url = NULL;
		}
	}
	sbx__e2b_mark_dead(p->b);
	sbx__e2b_delete(p->e, p->b->id, 0);
	sbx__error_restore(&s, s.code);
	sbx__error_http(s.http_status);
}

static void set_ended(const struct sbx__run_req *req, int how)
{
	if (req->ended)
		*req->ended = how;
}

/* The error of an end-of-stream frame that carries one. */
static int eos_error(struct proc *p)
{
	static const struct {
		const char *code;
		int err;
	} map[] = {
		{"invalid_argument", SBX_EINVALID}, {"not_found", SBX_ENOTFOUND},
		{"permission_denied", SBX_EDENIED}, {"unauthenticated", SBX_EDENIED},
		{"unavailable", SBX_EUNAVAILABLE},  {"resource_exhausted", SBX_EUNAVAILABLE},
		{"canceled", SBX_ECANCELED},	    {"failed_precondition", SBX_EINVALID},
	};
	int code = SBX_EENGINE;

	for (size_t i = 0; i < SBX_ARRAY_SIZE(map); i++)
		if (strcmp(map[i].code, p->eos_code) == 0)
			code = map[i].err;
	return sbx__error_set(code, SBX_ERRCLASS_REMOTE,
			      "e2b: sandbox %s: the process failed: %s%s%s", p->b->id, p->eos_code,
			      p->eos_msg[0] ? ": " : "", p->eos_msg);
}

/* The result of an end event. */
static int map_end(struct proc *p, uint64_t elapsed, sbx_result *res)
{
	int sig;

	if (p->exited || strncmp(p->end_status, "exit status ", 12) == 0) {
		long long code = p->exited ? p->exit_code : strtoll(p->end_status + 12, NULL, 10);

		if (code < 0 || code > 255)
			return proto_error(p, "an exit code of %lld", code);
		res->status = SBX_RUN_EXITED;
		res->exit_code = (int)code;
		return 0;
	}
	sig = parse_signal(p->end_status);
	if (!sig)
		return proto_error(p, "an end event with status '%s'",
				   clean(p, (char[72]){0}, 72, p->end_status));
	if (sig == SIGKILL && elapsed >= p->req->timeout_ms) {
		/* envd kills the process at the Connect deadline. */
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		return 0;
	}
	res->status = SBX_RUN_KILLED;
	res->term_signal = sig;
	res->exit_code = 128 + sig;
	return 0;
}

/* How a run's stream loop ended. */
struct proc_loop {
	CURLcode stream_cc;
	int stream_done, killed, backstop;
};

/* Drives the Start stream, and the stdin calls beside it, until the stream
 * ends, the box is killed, the host deadline passes or memory runs out. */
static void proc_pump(struct proc *p, CURLM *m, uint64_t host_deadline, struct proc_loop *l)
{
	for (;;) {
		CURLMsg *msg;
		int running = 0, q;
		uint64_t now;
		long wait;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &q))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			if (msg->easy_handle == p->stream) {
				l->stream_done = 1;
				l->stream_cc = msg->data.result;
			} else if (msg->easy_handle == p->in_easy) {
				stdin_done(p, m, msg->data.result);
			}
		}
		if (l->stream_done)
			break;
		if (__atomic_load_n(&p->b->dead, __ATOMIC_SEQ_CST)) {
			l->killed = 1;
			break;
		}
		now = sbx__e2b_now_ms();
		if (now >= host_deadline) {
			l->backstop = 1;
			break;
		}
		if (p->have_start && !p->have_end && p->req->stdin_len && !p->in_done &&
		    !p->in_easy && stdin_next(p, m) < 0) {
			p->nomem = 1;
			break;
		}
		wait = (long)(host_deadline - now);
		curl_multi_poll(m, NULL, 0, wait < POLL_MS ? (int)wait : POLL_MS, NULL);
	}
}

/* The run's result, or its error, from how its stream ended; the sandbox
 * is ended where nothing more from it is trusted. */
static int proc_outcome(struct proc *p,
			const struct proc_loop *l,
			const struct sbx__e2b_req *rq,
			struct sbx__e2b_resp *rs,
			sbx_result *res)
{
	const struct sbx__run_req *req = p->req;
	struct sbx__e2b_box *b = p->b;
	int rc;

	if (p->canceled) {
		end_sandbox(p, 1);
		set_ended(req, SBX__ENDED_KILLED);
		return sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE,
				      "e2b: run canceled by the output callback; sandbox %s was "
				      "deleted",
				      b->id);
	}
	if (p->nomem)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory for output");
	if (l->killed) {
		/* sbx_sandbox_kill() from another thread, while the run was in flight. */
		if (p->have_end && map_end(p, res->duration_ms, res) == 0)
			return 0;
		sbx__error_clear();
		res->status = SBX_RUN_KILLED;
		res->term_signal = SIGKILL;
		res->exit_code = 128 + SIGKILL;
		return 0;
	}
	if (l->backstop) {
		/* The stream outlived its deadline by the grace: end the sandbox. */
		end_sandbox(p, 1);
		set_ended(req, SBX__ENDED_TIMEOUT);
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		return 0;
	}
	if (p->proto) {
		sbx__error_restore(&p->err, p->err.code);
		sbx__error_http(p->err.http_status);
		rc = SBX_EENGINE;
		goto broken;
	}
	if (l->stream_done) {
		curl_easy_getinfo(p->stream, CURLINFO_RESPONSE_CODE, &rs->status);
		if (!p->status)
			p->status = rs->status;
	}
	if (p->status == 0) {
		/* No answer at all: nothing started, nothing to end. */
		return sbx__e2b_finish(p->stream,
				       l->stream_cc == CURLE_OK ? CURLE_GOT_NOTHING : l->stream_cc,
				       rq, rs);
	}
	if (p->status != 200) {
		struct sbx__e2b_resp er = {.status = p->status, .body = p->errbody};

		rc = sbx__e2b_status_error(p->e, "start process", b->id, &er);
		if (rc == SBX_ENOTFOUND && p->status == 502)
			__atomic_store_n(&b->dead, 1, __ATOMIC_SEQ_CST);
		return rc;
	}
	rc = sbx__connect_finish(&p->dec);
	if (rc < 0)
		goto broken;
	if (p->eos_code[0] && strcmp(p->eos_code, "deadline_exceeded") == 0) {
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		return 0;
	}
	if (!p->have_end && p->eos_code[0])
		return eos_error(p);
	if (!p->have_end) {
		rc = proto_error(p, "the process stream ended without an end event");
		goto broken;
	}
	rc = map_end(p, res->duration_ms, res);
	if (rc < 0)
		goto broken;
	return rc;
broken:
	/* A protocol break: nothing more from this sandbox is trusted. */
	rc = sbx__error_code() ? sbx__error_code() : rc;
	end_sandbox(p, 0);
	set_ended(req, SBX__ENDED_ERROR);
	return rc;
}

/*
 * Starts argv (final: already wrapped) in the sandbox and streams it to its
 * end. Fills res's status fields; output goes to req->sink.
 */
int sbx__e2b_proc_run(struct sbx__e2b *e,
		      struct sbx__e2b_box *b,
		      const struct sbx__run_req *req,
		      char *const *argv,
		      sbx_result *res)
{
	char tmo[64];
	const char *const extra[] = {"Connect-Protocol-Version: 1", tmo,
				     "Keepalive-Ping-Interval: 50", NULL};
	_sbx_cleanup_free_ char *url = NULL;
	struct sbx__e2b_body body = {0};
	struct proc p = {
		.e = e, .b = b, .req = req, .in = req->stdin_data, .in_left = req->stdin_len};
	struct proc_loop l = {.stream_cc = CURLE_OK};
	struct sbx__e2b_req rq;
	struct sbx__e2b_resp rs;
	struct curl_slist *h = NULL;
	uint64_t t0 = sbx__e2b_now_ms(), host_deadline = t0 + req->timeout_ms + SBX_E2B_GRACE_MS;
	int rc;
	CURLM *m = NULL;

	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s was deleted (killed, canceled or broken); "
				      "runs are refused",
				      b->id);
	rc = sbx__e2b_start_body(&body, req, argv);
	if (rc < 0)
		return rc;
	snprintf(tmo, sizeof(tmo), "Connect-Timeout-Ms: %llu", (unsigned long long)req->timeout_ms);
	if (asprintf(&url, "%s/process.Process/Start", b->envd_url) < 0) {
		url = NULL;
		sbx__e2b_body_free(&body);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	rq = (struct sbx__e2b_req){.method = "POST",
				   .url = url,
				   .box = b,
				   .content_type = "application/connect+json",
				   .body = body.p,
				   .body_len = body.len,
				   .timeout_ms = 0, /* the host deadline below bounds it */
				   .extra = extra};
	sbx__connect_init(&p.dec, SBX_E2B_FRAME_MAX);
	p.errbody.cap = ERRBODY_MAX;
	p.stream = sbx__e2b_prepare(e, &rq, &rs, &h);
	m = curl_multi_init();
	if (!p.stream || !m) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
		goto out;
	}
	curl_easy_setopt(p.stream, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(p.stream, CURLOPT_WRITEDATA, &p);
	curl_multi_add_handle(m, p.stream);
	pthread_mutex_lock(&b->lock);
	b->wake = m;
	pthread_mutex_unlock(&b->lock);
	proc_pump(&p, m, host_deadline, &l);
	pthread_mutex_lock(&b->lock);
	b->wake = NULL;
	pthread_mutex_unlock(&b->lock);
	stdin_clear(&p, m);
	curl_multi_remove_handle(m, p.stream);
	res->duration_ms = sbx__e2b_now_ms() - t0;
	res->path = SBX_RUN_PATH_UNKNOWN;
	rc = proc_outcome(&p, &l, &rq, &rs, res);
out:
	if (p.stream) {
		curl_multi_remove_handle(m, p.stream);
		curl_easy_cleanup(p.stream);
	}
	if (m)
		curl_multi_cleanup(m);
	sbx__e2b_headers_free(h);
	sbx__e2b_resp_clear(&rs);
	sbx__buf_clear(&p.errbody);
	sbx__connect_done(&p.dec);
	sbx__e2b_body_free(&body);
	return rc;
}

int sbx__e2b_op_run(void *state, void *box, const struct sbx__run_req *req, sbx_result *res)
{
	struct sbx__e2b_box *b = box;
	char **argv = NULL;
	int rc;

	struct sbx__run_req r = *req;

	/* The built-in default working directory is left to the template
	 * (E2B's templates have no /workspace; a cwd that does not exist fails
	 * the run); one set by the policy or the run is sent as it is. */
	if (r.workdir && !(b->policy->set & SBX__SET_WORKDIR) &&
	    strcmp(r.workdir, SBX_DEFAULT_WORKDIR) == 0)
		r.workdir = NULL;
	rc = sbx__remote_argv(&argv, b->policy, req->argv);
	if (rc < 0)
		return rc;
	rc = sbx__e2b_proc_run(state, b, &r, argv, res);
	sbx__remote_argv_free(argv);
	return rc;
}
