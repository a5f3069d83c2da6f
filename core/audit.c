/*
 * core/audit.c: audit events as JSON Lines (docs/audit.md), to a file and/or
 * a callback.
 *
 * Durable and whole: each event is one write(2) of a complete line to a
 * file opened O_APPEND, then fdatasync, before the operation it records
 * returns. Writers (threads of this process and other processes sharing
 * the file) take an exclusive flock around the write, so a line is never
 * interleaved with another; a tail left without its newline by a crash
 * (or a failed write) is cut off by the next writer, under the same lock,
 * before it appends. The file must be a regular file of the effective
 * user, with no permission for group or others; it is created 0600.
 *
 * Every string an event holds is redacted before the event is encoded
 * (core/record.c), and argv is bounded, so that a line stays small.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sandboxio.h>

#include "core/audit-int.h"
#include "core/limit-kinds.h"
#include "core/record-int.h"
#include "util/error-int.h"

#define AUDIT_SCHEMA 1
#define ARG_MAX_BYTES 4096	   /* one argument, as recorded */
#define ARGV_MAX_BYTES (64u << 10) /* all of argv, as recorded */
#define TAIL_MAX (1u << 20)	   /* longest torn tail the repair will cut */
#define LINE_PREFIX "{\"v\":"	   /* how every line starts */

struct sbx__audit {
	pthread_mutex_t lock;
	int fd; /* -1: no file */
	char *path;
	sbx_audit_cb cb;
	void *payload;
	char backend[32];
	char host[65];
	uint64_t seq;
	char why[512];
	struct sbx__audit *next; /* the caller's sink, after the operator's */
};

const char *sbx__error_code_name(int code)
{
	switch (code) {
	case SBX_OK:
		return "OK";
	case SBX_EINVALID:
		return "EINVALID";
	case SBX_ENOTFOUND:
		return "ENOTFOUND";
	case SBX_EDENIED:
		return "EDENIED";
	case SBX_EENGINE:
		return "EENGINE";
	case SBX_ETIMEOUT:
		return "ETIMEOUT";
	case SBX_EUNSUPPORTED:
		return "EUNSUPPORTED";
	case SBX_EVERSION:
		return "EVERSION";
	case SBX_ENOMEM:
		return "ENOMEM";
	case SBX_EUNAVAILABLE:
		return "EUNAVAILABLE";
	case SBX_ECANCELED:
		return "ECANCELED";
	case SBX_ETOOBIG:
		return "ETOOBIG";
	case SBX_EPAUSED:
		return "EPAUSED";
	default:
		return "ERROR";
	}
}

int sbx__audit_open(struct sbx__audit **out,
		    const char *path,
		    sbx_audit_cb cb,
		    void *payload,
		    const char *backend)
{
	struct sbx__audit *a;
	struct stat st;

	*out = NULL;
	if (!path && !cb)
		return 0;
	a = calloc(1, sizeof(*a));
	if (!a || (path && !(a->path = strdup(path)))) {
		free(a);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	}
	a->fd = -1;
	if (path) {
		a->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
			     0600);
		if (a->fd < 0) {
			int e = errno;

			free(a->path);
			free(a);
			return sbx__error_os(e == ENOENT ? SBX_ENOTFOUND : SBX_EDENIED, e,
					     "audit log %.256s", path);
		}
		if (fstat(a->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & 077)) {
			int rc = sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_CORE,
						"audit log %.256s must be a regular file of this "
						"user with mode 0600 (it is %o, owner %d)",
						path, (unsigned)(st.st_mode & 07777),
						(int)st.st_uid);

			close(a->fd);
			free(a->path);
			free(a);
			return rc;
		}
	}
	pthread_mutex_init(&a->lock, NULL);
	a->cb = cb;
	a->payload = payload;
	snprintf(a->backend, sizeof(a->backend), "%s", backend ? backend : "");
	gethostname(a->host, sizeof(a->host) - 1);
	*out = a;
	return 0;
}

int sbx__audit_open_required(struct sbx__audit **out,
			     const char *required,
			     const char *path,
			     sbx_audit_cb cb,
			     void *payload,
			     const char *backend)
{
	struct sbx__audit *op = NULL, *caller = NULL;
	struct stat a, b;
	int rc;

	if (!required)
		return sbx__audit_open(out, path, cb, payload, backend);
	*out = NULL;
	rc = sbx__audit_open(&op, required, NULL, NULL, backend);
	if (rc < 0)
		return sbx__error_wrap("the audit log the system config requires (audit.path)");
	rc = sbx__audit_open(&caller, path, cb, payload, backend);
	if (rc < 0) {
		sbx__audit_free(op);
		return rc;
	}
	/* The same file named twice is written once. */
	if (caller && caller->fd >= 0 && fstat(caller->fd, &a) == 0 && fstat(op->fd, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		close(caller->fd);
		caller->fd = -1;
		if (!caller->cb) {
			sbx__audit_free(caller);
			caller = NULL;
		}
	}
	op->next = caller;
	*out = op;
	return 0;
}

void sbx__audit_free(struct sbx__audit *a)
{
	if (!a)
		return;
	sbx__audit_free(a->next);
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a);
}

const char *sbx__audit_why(const struct sbx__audit *a)
{
	return a ? a->why : "";
}

/* ===== Writing ===== */

static int fail(struct sbx__audit *a, int e, const char *what)
{
	char ebuf[128];

	snprintf(a->why, sizeof(a->why), "audit log %.256s: %s: %s", a->path ? a->path : "", what,
		 e ? strerror_r(e, ebuf, sizeof(ebuf)) : "refused");
	return e == ENOSPC ? SBX_ETOOBIG : SBX_ERROR;
}

/*
 * Cuts a tail that lacks its newline (a write cut short by a crash), if it
 * is one of ours: it starts like every line and is not longer than one can
 * be. Anything else means the file is not an audit log, and nothing is cut.
 */
static int repair_tail(struct sbx__audit *a)
{
	char buf[4096], head[sizeof(LINE_PREFIX) - 1];
	struct stat st;
	off_t pos, end;
	char last;

	if (fstat(a->fd, &st) < 0)
		return fail(a, errno, "stat");
	if (st.st_size == 0)
		return 0;
	if (pread(a->fd, &last, 1, st.st_size - 1) != 1)
		return fail(a, errno, "read");
	if (last == '\n')
		return 0;
	end = st.st_size;
	pos = end;
	while (pos > 0 && end - pos < (off_t)TAIL_MAX) {
		size_t n = pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
		ssize_t r;

		pos -= (off_t)n;
		r = pread(a->fd, buf, n, pos);
		if (r != (ssize_t)n)
			return fail(a, errno, "read");
		for (size_t i = n; i-- > 0;) {
			off_t start = pos + (off_t)i + 1;

			if (buf[i] != '\n')
				continue;
			if (pread(a->fd, head, sizeof(head), start) != (ssize_t)sizeof(head) ||
			    memcmp(head, LINE_PREFIX, sizeof(head)) != 0)
				return fail(a, 0, "ends with a line that is not an audit event");
			return ftruncate(a->fd, start) < 0 ? fail(a, errno, "cut a torn line") : 0;
		}
	}
	if (pos == 0 && pread(a->fd, head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
	    memcmp(head, LINE_PREFIX, sizeof(head)) == 0)
		return ftruncate(a->fd, 0) < 0 ? fail(a, errno, "cut a torn line") : 0;
	return fail(a, 0, "ends with a line that is not an audit event");
}

static int write_file(struct sbx__audit *a, const char *line, size_t len)
{
	struct stat st;
	ssize_t w;
	int rc;

	while (flock(a->fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return fail(a, errno, "lock");
	rc = repair_tail(a);
	if (rc == 0 && fstat(a->fd, &st) < 0)
		rc = fail(a, errno, "stat");
	if (rc == 0) {
		do
			w = write(a->fd, line, len);
		while (w < 0 && errno == EINTR);
		if (w != (ssize_t)len) {
			int e = w < 0 ? errno : ENOSPC;

			/* Never leave part of a line behind. */
			if (w > 0 && ftruncate(a->fd, st.st_size) < 0)
				e = errno;
			rc = fail(a, e, "write");
		} else if (fdatasync(a->fd) < 0) {
			rc = fail(a, errno, "sync");
		}
	}
	flock(a->fd, LOCK_UN);
	return rc;
}

/* Redacts, numbers, encodes and writes ev (stolen). */
static int emit(struct sbx__audit *a, json_t *ev)
{
	json_t *copy = NULL;
	char *text;
	size_t len;
	int rc = 0;

	if (!ev)
		return fail(a, ENOMEM, "build event");
	/* The one redactor, before any encoding (core/record.c). */
	sbx__record_redact(ev);
	if (a->next && !(copy = json_deep_copy(ev))) {
		json_decref(ev);
		return fail(a, ENOMEM, "build event");
	}
	pthread_mutex_lock(&a->lock);
	json_object_set_new(ev, "seq", json_integer((json_int_t)++a->seq));
	/* "v" first: every line starts the same way, which the repair relies on. */
	text = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(ev);
	if (!text) {
		pthread_mutex_unlock(&a->lock);
		json_decref(copy);
		return fail(a, ENOMEM, "encode event");
	}
	len = strlen(text);
	if (a->cb && a->cb(text, len, a->payload) != 0)
		rc = fail(a, 0, "the audit callback");
	if (rc == 0 && a->fd >= 0) {
		text[len] = '\n';
		rc = write_file(a, text, len + 1);
	}
	pthread_mutex_unlock(&a->lock);
	free(text);
	/* Then the caller's sink, which adds to the operator's. */
	if (copy) {
		int rc2 = emit(a->next, copy);

		if (rc == 0 && rc2 < 0) {
			snprintf(a->why, sizeof(a->why), "%s", a->next->why);
			rc = rc2;
		}
	}
	return rc;
}

/* A new event with the fields every event has, in the schema's order. */
static json_t *event_new(struct sbx__audit *a, const struct sbx__audit_ctx *c, const char *name)
{
	json_t *ev = json_object();
	char when[32];

	if (!ev)
		return NULL;
	sbx__record_time(when, sbx__record_now_ns());
	json_object_set_new(ev, "v", json_integer(AUDIT_SCHEMA));
	json_object_set_new(ev, "time", json_string(when));
	json_object_set_new(ev, "seq", json_integer(0)); /* numbered when written */
	json_object_set_new(ev, "event", json_string(name));
	json_object_set_new(ev, "backend", json_string(a->backend));
	json_object_set_new(ev, "host", sbx__record_string(a->host));
	json_object_set_new(ev, "pid", json_integer((json_int_t)getpid()));
	if (c && c->tenant)
		json_object_set_new(ev, "tenant", sbx__record_string(c->tenant));
	if (c && c->sandbox_id)
		json_object_set_new(ev, "sandbox_id", sbx__record_string(c->sandbox_id));
	if (c && c->trace_id)
		json_object_set_new(ev, "trace_id", json_string(c->trace_id));
	if (c && c->span_id)
		json_object_set_new(ev, "span_id", json_string(c->span_id));
	return ev;
}

static void add_error(json_t *ev, int rc)
{
	json_object_set_new(ev, "outcome", json_string(rc < 0 ? "error" : "ok"));
	if (rc < 0)
		json_object_set_new(ev, "error",
				    json_pack("{s:s,s:s}", "code", sbx__error_code_name(rc),
					      "message", sbx_error_last()->message));
}

/* ===== Events ===== */

/* The egress allowlist, in the policy's order: {"host"|"cidr": NAME[, "port": N]}. */
static json_t *allow_summary(const sbx_policy *p)
{
	json_t *v = json_array();

	for (size_t i = 0; v && i < p->allow_n; i++) {
		const struct sbx__allow *a = &p->allow[i];
		json_t *e = json_object();

		json_object_set_new(e, a->kind == SBX_ALLOW_HOST ? "host" : "cidr",
				    json_string(a->name));
		if (a->port)
			json_object_set_new(e, "port", json_integer(a->port));
		json_array_append_new(v, e);
	}
	return v;
}

static json_t *policy_summary(const sbx_policy *p)
{
	json_t *names = json_array(), *limits = json_object();

	for (size_t i = 0; i < p->env_n; i++)
		json_array_append_new(names, json_stringn(p->env[i], strcspn(p->env[i], "=")));
	for (int k = SBX__LIMIT_FIRST; limits && k <= SBX__LIMIT_LAST; k++)
		json_object_set_new(limits, sbx__limit_kinds[k].audit,
				    json_integer((json_int_t)p->limit[k]));
	/* An allowlist is not secret: it is what the sandbox may reach. */
	return json_pack("{s:s,s:o*,s:{s:I,s:I,s:I,s:I},s:o,s:s,s:b,s:o}", "network",
			 p->allow_n ? "allowlist" : "none", "allow",
			 p->allow_n ? allow_summary(p) : NULL, "timeouts_ms", "create",
			 (json_int_t)p->timeout_ms[SBX_TIMEOUT_CREATE], "run",
			 (json_int_t)p->timeout_ms[SBX_TIMEOUT_RUN], "run_code",
			 (json_int_t)p->timeout_ms[SBX_TIMEOUT_RUN_CODE], "sandbox",
			 (json_int_t)p->timeout_ms[SBX_TIMEOUT_SANDBOX], "limits", limits,
			 "workdir", p->workdir ? p->workdir : "", "detached", p->detached,
			 "env_names", names ? names : json_array());
}

int sbx__audit_create(struct sbx__audit *a,
		      const struct sbx__audit_ctx *c,
		      const sbx_policy *p,
		      sbx_tier tier,
		      int rc,
		      uint64_t duration_ms)
{
	json_t *ev;

	if (!a)
		return 0;
	ev = event_new(a, c, "sandbox.create");
	if (ev && p) {
		json_object_set_new(ev, "image", json_string(p->image ? p->image : ""));
		json_object_set_new(ev, "min_tier", json_string(sbx_tier_name(p->min_tier)));
		json_object_set_new(ev, "policy", policy_summary(p));
	}
	if (ev && rc == 0)
		json_object_set_new(ev, "tier", json_string(sbx_tier_name(tier)));
	if (ev) {
		json_object_set_new(ev, "duration_ms", json_integer((json_int_t)duration_ms));
		add_error(ev, rc);
	}
	return emit(a, ev);
}

int sbx__audit_open_box(struct sbx__audit *a, const struct sbx__audit_ctx *c, int rc)
{
	json_t *ev;

	if (!a)
		return 0;
	ev = event_new(a, c, "sandbox.open");
	if (ev)
		add_error(ev, rc);
	return emit(a, ev);
}

static json_t *names_of(const char *const *env)
{
	json_t *names = json_array();

	for (size_t i = 0; env && env[i]; i++)
		json_array_append_new(names, json_stringn(env[i], strcspn(env[i], "=")));
	return names;
}

static void add_run(json_t *ev, const struct sbx__audit_run *r)
{
	json_object_set_new(ev, "run_id", json_string(r->run_id));
	json_object_set_new(ev, "kind", json_string(r->kind));
}

int sbx__audit_run_start(struct sbx__audit *a,
			 const struct sbx__audit_ctx *c,
			 const struct sbx__audit_run *r)
{
	json_t *ev, *argv, *secrets;
	size_t total = 0;
	int cut = 0;

	if (!a)
		return 0;
	ev = event_new(a, c, "run.start");
	argv = json_array();
	secrets = json_array();
	if (!ev || !argv || !secrets) {
		json_decref(ev);
		json_decref(argv);
		json_decref(secrets);
		return emit(a, NULL);
	}
	add_run(ev, r);
	if (r->language)
		json_object_set_new(ev, "language", json_string(r->language));
	for (size_t i = 0; r->argv && r->argv[i]; i++) {
		size_t n = strlen(r->argv[i]);

		if (n > ARG_MAX_BYTES)
			n = ARG_MAX_BYTES, cut = 1;
		if (total + n > ARGV_MAX_BYTES) {
			cut = 1;
			break;
		}
		total += n;
		/* Redacted whole before it is cut, so a cut cannot split a value. */
		json_t *arg = sbx__record_string(r->argv[i]);
		if (arg && json_string_length(arg) > n)
			json_string_setn(arg, json_string_value(arg), n);
		json_array_append_new(argv, arg ? arg : json_string(""));
	}
	for (size_t i = 0; i < sbx_secrets_count(r->secrets); i++)
		json_array_append_new(secrets, json_string(sbx_secrets_name(r->secrets, i)));
	json_object_set_new(ev, "argv", argv);
	if (cut)
		json_object_set_new(ev, "argv_truncated", json_true());
	json_object_set_new(ev, "workdir", json_string(r->workdir ? r->workdir : ""));
	json_object_set_new(ev, "timeout_ms", json_integer((json_int_t)r->timeout_ms));
	json_object_set_new(ev, "env_names", names_of(r->env));
	json_object_set_new(ev, "secret_names", secrets);
	json_object_set_new(ev, "stdin_bytes", json_integer((json_int_t)r->stdin_len));
	json_object_set_new(ev, "raw_output", json_boolean(r->raw_output));
	json_object_set_new(ev, "as_root", json_boolean(r->as_root));
	return emit(a, ev);
}

int sbx__audit_run_end(struct sbx__audit *a,
		       const struct sbx__audit_ctx *c,
		       const struct sbx__audit_run *r,
		       int rc,
		       const sbx_result *res,
		       uint64_t duration_ms)
{
	json_t *ev, *lh;

	if (!a)
		return 0;
	ev = event_new(a, c, "run.end");
	if (!ev)
		return emit(a, NULL);
	add_run(ev, r);
	json_object_set_new(ev, "duration_ms", json_integer((json_int_t)duration_ms));
	add_error(ev, rc);
	if (rc == 0 && res) {
		lh = json_array();
		for (const struct sbx__limit_hit *h = sbx__limit_hits; h->bit; h++)
			if (h->audited && (res->limits_hit & h->bit))
				json_array_append_new(lh, json_string(h->name));
		json_object_set_new(ev, "status", json_string(sbx_run_status_name(res->status)));
		json_object_set_new(ev, "exit_code", json_integer(res->exit_code));
		json_object_set_new(ev, "signal", json_integer(res->term_signal));
		json_object_set_new(ev, "usage",
				    json_pack("{s:I,s:I,s:I}", "cpu_user_us",
					      (json_int_t)res->cpu_user_us, "cpu_system_us",
					      (json_int_t)res->cpu_system_us, "max_rss_kb",
					      (json_int_t)res->max_rss_kb));
		json_object_set_new(ev, "output",
				    json_pack("{s:I,s:I,s:I,s:I,s:b,s:b}", "stdout_bytes",
					      (json_int_t)res->stdout_total, "stderr_bytes",
					      (json_int_t)res->stderr_total, "stdout_kept",
					      (json_int_t)res->stdout_len, "stderr_kept",
					      (json_int_t)res->stderr_len, "stdout_truncated",
					      res->stdout_truncated, "stderr_truncated",
					      res->stderr_truncated));
		json_object_set_new(ev, "limits_hit", lh ? lh : json_array());
	}
	return emit(a, ev);
}

int sbx__audit_destroy(struct sbx__audit *a,
		       const struct sbx__audit_ctx *c,
		       const char *reason,
		       int rc)
{
	json_t *ev;

	if (!a)
		return 0;
	ev = event_new(a, c, "sandbox.destroy");
	if (ev) {
		json_object_set_new(ev, "reason", json_string(reason));
		add_error(ev, rc);
	}
	return emit(a, ev);
}

int sbx__audit_detach(struct sbx__audit *a, const struct sbx__audit_ctx *c)
{
	return a ? emit(a, event_new(a, c, "sandbox.detach")) : 0;
}

int sbx__audit_refused(struct sbx__audit *a,
		       const struct sbx__audit_ctx *c,
		       const char *op,
		       int code)
{
	json_t *ev;

	if (!a)
		return 0;
	ev = event_new(a, c, "policy.refused");
	if (ev) {
		json_object_set_new(ev, "op", json_string(op));
		json_object_set_new(ev, "code", json_string(sbx__error_code_name(code)));
		json_object_set_new(ev, "message", json_string(sbx_error_last()->message));
	}
	return emit(a, ev);
}

int sbx__audit_egress(struct sbx__audit *a,
		      const struct sbx__audit_ctx *c,
		      const struct sbx__audit_egress *e)
{
	json_t *ev;

	if (!a)
		return 0;
	ev = event_new(a, c, "egress.connection");
	if (ev) {
		json_object_set_new(ev, "verdict", json_string(e->allowed ? "allowed" : "refused"));
		if (!e->allowed)
			json_object_set_new(ev, "reason", json_string(e->reason ? e->reason : ""));
		json_object_set_new(ev, "name",
				    e->name ? sbx__record_string(e->name) : json_null());
		json_object_set_new(ev, "name_len", json_integer((json_int_t)e->name_len));
		json_object_set_new(ev, "address", json_string(e->address ? e->address : ""));
		json_object_set_new(ev, "port", json_integer((json_int_t)e->port));
		json_object_set_new(ev, "bytes_up", json_integer((json_int_t)e->bytes_up));
		json_object_set_new(ev, "bytes_down", json_integer((json_int_t)e->bytes_down));
		json_object_set_new(ev, "duration_ms", json_integer((json_int_t)e->duration_ms));
		add_error(ev, 0);
	}
	return emit(a, ev);
}

const char *sbx__audit_file(const struct sbx__audit *a, int i)
{
	for (; a; a = a->next)
		if (a->fd >= 0 && i-- == 0)
			return a->path;
	return NULL;
}
