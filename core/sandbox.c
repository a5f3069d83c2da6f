/*
 * core/sandbox.c: the public sandbox API, backend-independent.
 *
 * Everything a caller passes is validated here, once, before a backend sees
 * it: argv and env bounds, deadlines (a run may narrow the policy's deadline,
 * never widen it), output caps. Records are closed here too, so each
 * backend only maps a resolved request onto its engine: a run's output
 * passes the streaming redactor (core/output.c), each operation writes its
 * audit events (core/audit.c, failing closed when it cannot) and ends its
 * span (core/trace.c, which never fails anything). Secrets reach a backend
 * only as entries of one run's environment.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/audit-int.h"
#include "core/backend-int.h"
#include "core/config-int.h"
#include "core/limit-kinds.h"
#include "core/output-int.h"
#include "core/reap-int.h"
#include "core/record-int.h"
#include "core/sandbox-int.h"
#include "core/secret-int.h"
#include "core/trace-int.h"
#include "core/tty-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/redact-int.h"

#define SBX_MAX_ARGV_BYTES (1u << 20)
#define SBX_MAX_ARGC 4096
#define SBX_READ_DEFAULT_MAX (64u << 20)

static struct sbx__audit_ctx ctx_of(const sbx_sandbox *s)
{
	return (struct sbx__audit_ctx){.sandbox_id = s->id,
				       .tenant = s->policy ? s->policy->tenant : NULL};
}

/* The operation's span, in its audit events, when the span is recorded. */
static struct sbx__audit_ctx ctx_span(const sbx_sandbox *s, const struct sbx__span *sp)
{
	struct sbx__audit_ctx c = ctx_of(s);

	if (sp->t) {
		c.trace_id = sp->trace_id;
		c.span_id = sp->span_id;
	}
	return c;
}

/* Attributes every span of a sandbox carries. */
static void span_sandbox_attrs(struct sbx__span *sp, const sbx_sandbox *s)
{
	sbx__span_str(sp, "sandboxio.backend", s->backend->ops->name);
	if (s->id)
		sbx__span_str(sp, "sandboxio.sandbox.id", s->id);
	if (s->policy)
		sbx__span_str(sp, "sandboxio.tenant", s->policy->tenant);
}

/* Refusals by policy, config or backend get an event of their own. */
static void audit_refused(sbx_backend *b, const struct sbx__audit_ctx *c, const char *op, int rc)
{
	if (rc == SBX_EDENIED || rc == SBX_EUNSUPPORTED)
		sbx__audit_refused(b->audit, c, op, rc);
}

struct reap_audit {
	sbx_backend *b;
	sbx_reap_cb cb;
	void *payload;
	int failed; /* an event could not be written */
};

/* Records each sandbox a reap removed, then tells the caller's callback. */
static int reap_audit_cb(const sbx_reap_info *info, void *arg)
{
	struct reap_audit *ra = arg;
	struct sbx__audit_ctx c = {.sandbox_id = info->id, .tenant = info->tenant};

	if (info->removed && sbx__audit_destroy(ra->b->audit, &c, "reaped", 0) < 0)
		ra->failed = 1;
	return ra->cb ? ra->cb(info, ra->payload) : 0;
}

int sbx__backend_open(sbx_backend **out,
		      const struct sbx__backend_ops *ops,
		      const sbx_backend_options *opts,
		      const struct sbx__span_sink *spans)
{
	const sbx_config *cfg = NULL;
	sbx_backend_options bound;
	sbx_backend *b;
	int rc;

	if (opts && opts->version >= 2 && opts->config) {
		rc = sbx__config_check_backend(opts->config, ops->name);
		if (rc < 0)
			return rc;
		cfg = opts->config;
	}
	/* What the operator's bound takes from the caller (core/config.c). */
	if (ops->host_choices) {
		const char *hf = NULL;

		rc = sbx__config_check_backend_choices(
			cfg, opts && opts->version >= 4 ? opts->hosts_file : NULL, &hf);
		if (rc < 0)
			return rc;
		if (opts) {
			bound = *opts;
			if (opts->version >= 4)
				bound.hosts_file = hf;
			opts = &bound;
		}
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	b->ops = ops;
	rc = ops->open(opts, &b->state);
	if (rc < 0) {
		free(b);
		return rc;
	}
	if (opts && opts->version >= 3)
		rc = sbx__audit_open_required(&b->audit, sbx__config_audit_path(cfg),
					      opts->audit_path, opts->audit_cb, opts->audit_payload,
					      ops->name);
	else
		rc = sbx__audit_open_required(&b->audit, sbx__config_audit_path(cfg), NULL, NULL,
					      NULL, ops->name);
	if (rc < 0) {
		ops->free(b->state);
		free(b);
		return rc;
	}
	sbx__tracer_open(&b->tracer, spans, opts && opts->version >= 3 ? opts->traceparent : NULL);
	if (opts && opts->version >= 2)
		b->config = sbx__config_ref(opts->config);
	if (!(opts && opts->no_reap_at_open)) {
		struct reap_audit ra = {.b = b};

		/* Best effort: an orphan left now is found by the next open or reap. */
		sbx__reap(ops, b->state, NULL, 0, 1, b->audit ? reap_audit_cb : NULL, &ra);
		sbx__error_clear();
	}
	*out = b;
	return 0;
}

void sbx_backend_free(sbx_backend *b)
{
	if (!b)
		return;
	b->ops->free(b->state);
	sbx_config_free(b->config);
	sbx__audit_free(b->audit);
	sbx__tracer_free(b->tracer);
	free(b);
}

const char *sbx_backend_name(const sbx_backend *b)
{
	return b ? b->ops->name : NULL;
}

uint64_t sbx_backend_spans_dropped(const sbx_backend *b)
{
	return b ? sbx__tracer_dropped(b->tracer) : 0;
}

static int sandbox_new(sbx_sandbox **out, sbx_backend *b)
{
	sbx_sandbox *s = calloc(1, sizeof(*s));

	if (!s)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	s->backend = b;
	sbx__redact_scope_init(&s->redact);
	*out = s;
	return 0;
}

static void sandbox_free_handle(sbx_sandbox *s)
{
	struct sbx__redact_scope *prev = sbx__redact_scope_enter(&s->redact);

	sbx__span_end(&s->span, 0); /* a no-op once ended */
	sbx__redact_scope_leave(prev);
	sbx_policy_free(s->policy);
	sbx__redact_scope_done(&s->redact);
	free(s->id);
	free(s);
}

int sbx__sandbox_prepare(sbx_policy **out, sbx_backend *b, const sbx_policy *p)
{
	sbx_policy *m = NULL;
	int rc;

	rc = sbx__config_merge(&m, b->config, p, b->ops->name, NULL);
	if (rc < 0)
		return rc;
	rc = b->ops->check(b->state, m);
	if (rc < 0) {
		sbx_policy_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

static int create_common(sbx_sandbox **out, sbx_backend *b, const sbx_policy *p, const char *pool);

int sbx_sandbox_create(sbx_sandbox **out, sbx_backend *b, const sbx_policy *p)
{
	return create_common(out, b, p, NULL);
}

int sbx__sandbox_create_pooled(sbx_sandbox **out,
			       sbx_backend *b,
			       const sbx_policy *p,
			       const char *pool_id)
{
	return create_common(out, b, p, pool_id);
}

static int create_common(sbx_sandbox **out, sbx_backend *b, const sbx_policy *p, const char *pool)
{
	uint64_t t0 = sbx__record_now_ns();
	struct sbx__audit_ctx c;
	struct sbx__span sp;
	sbx_sandbox *s = NULL;
	int rc;

	sbx__error_clear();
	if (!out || !b || !p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "create: NULL argument");
	rc = sandbox_new(&s, b);
	if (rc < 0)
		return rc;
	sbx__span_begin(b->tracer, &s->span, "sandboxio.sandbox", NULL, NULL);
	sbx__span_begin(b->tracer, &sp, "sandboxio.create", &s->span, NULL);
	/* The one merge with the operator config, before the backend sees anything. */
	rc = sbx__config_merge(&s->policy, b->config, p, b->ops->name, NULL);
	if (rc < 0)
		goto fail;
	if (pool)
		snprintf(s->policy->pool, sizeof(s->policy->pool), "%s", pool);
	/* For the egress name checker, which writes its own events. */
	s->policy->audit_file[0] = sbx__audit_file(b->audit, 0);
	s->policy->audit_file[1] = sbx__audit_file(b->audit, 1);
	if (s->span.t) {
		snprintf(s->policy->trace_id, sizeof(s->policy->trace_id), "%s", s->span.trace_id);
		snprintf(s->policy->span_id, sizeof(s->policy->span_id), "%s", s->span.span_id);
		s->policy->otlp = sbx__tracer_text(b->tracer);
	}
	rc = b->ops->check(b->state, s->policy);
	if (rc < 0)
		goto fail;
	rc = b->ops->create(b->state, s->policy, &s->box, &s->id, &s->tier);
	if (rc < 0)
		goto fail;
	s->deadline_ns = t0 + s->policy->timeout_ms[SBX_TIMEOUT_SANDBOX] * 1000000u;
	span_sandbox_attrs(&s->span, s);
	sbx__span_str(&s->span, "sandboxio.image", s->policy->image);
	sbx__span_str(&s->span, "sandboxio.tier", sbx_tier_name(s->tier));
	span_sandbox_attrs(&sp, s);
	sbx__span_str(&sp, "sandboxio.image", s->policy->image);
	sbx__span_str(&sp, "sandboxio.tier", sbx_tier_name(s->tier));
	sbx__span_str(&sp, "sandboxio.network", "none");
	for (int k = SBX__LIMIT_FIRST; k <= SBX__LIMIT_LAST; k++)
		if (sbx__limit_kinds[k].span)
			sbx__span_int(&sp, sbx__limit_kinds[k].span, s->policy->limit[k]);
	c = ctx_span(s, &sp);
	rc = sbx__audit_create(b->audit, &c, s->policy, s->tier, 0,
			       (sbx__record_now_ns() - t0) / 1000000u);
	if (rc < 0) {
		/* Fail closed: a sandbox whose creation is not on record is not handed out. */
		b->ops->destroy(b->state, s->box);
		rc = sbx__error_set(rc, SBX_ERRCLASS_CORE, "%s; the sandbox was removed",
				    sbx__audit_why(b->audit));
		sbx__span_end(&sp, rc);
		sbx__span_end(&s->span, rc);
		sandbox_free_handle(s);
		return rc;
	}
	sbx__span_end(&sp, 0);
	*out = s;
	return 0;
fail:
	c = ctx_span(s, &sp);
	if (!c.tenant)
		c.tenant = p->tenant;
	sbx__audit_create(b->audit, &c, s->policy ? s->policy : p, s->tier, rc,
			  (sbx__record_now_ns() - t0) / 1000000u);
	audit_refused(b, &c, "create", rc);
	sbx__span_str(&sp, "sandboxio.tenant", c.tenant);
	sbx__span_end(&sp, rc);
	sbx__span_end(&s->span, rc);
	sandbox_free_handle(s);
	return rc;
}

int sbx_sandbox_open(sbx_sandbox **out, sbx_backend *b, const char *id)
{
	struct sbx__audit_ctx c;
	sbx_sandbox *s = NULL;
	int rc;

	sbx__error_clear();
	if (!out || !b || !id || !*id)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "open: NULL argument");
	rc = sandbox_new(&s, b);
	if (rc < 0)
		return rc;
	sbx__span_begin(b->tracer, &s->span, "sandboxio.sandbox", NULL, NULL);
	rc = sbx_policy_new(&s->policy);
	if (rc < 0)
		goto fail;
	s->policy->pause_max_ms = sbx_config_pause_ceiling_ms(b->config);
	rc = b->ops->open_box(b->state, id, &s->box, s->policy, &s->tier);
	if (rc < 0)
		goto fail;
	s->id = strdup(id);
	if (!s->id) {
		b->ops->release(b->state, s->box);
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
		goto fail;
	}
	span_sandbox_attrs(&s->span, s);
	sbx__span_bool(&s->span, "sandboxio.opened", 1);
	c = ctx_span(s, &s->span);
	rc = sbx__audit_open_box(b->audit, &c, 0);
	if (rc < 0) {
		b->ops->release(b->state, s->box);
		rc = sbx__error_set(rc, SBX_ERRCLASS_CORE, "%s", sbx__audit_why(b->audit));
		sbx__span_end(&s->span, rc);
		sandbox_free_handle(s);
		return rc;
	}
	*out = s;
	return 0;
fail:
	c = (struct sbx__audit_ctx){.sandbox_id = id};
	sbx__audit_open_box(b->audit, &c, rc);
	sbx__span_str(&s->span, "sandboxio.sandbox.id", id);
	sbx__span_end(&s->span, rc);
	sandbox_free_handle(s);
	return rc;
}

const char *sbx_sandbox_id(const sbx_sandbox *s)
{
	return s ? s->id : NULL;
}

sbx_tier sbx_sandbox_tier(const sbx_sandbox *s)
{
	return s ? s->tier : SBX_TIER_CONTAINER;
}

/* Why a sandbox being closed is gone, for its sandbox.destroy event. */
static const char *end_reason(const sbx_sandbox *s)
{
	switch (__atomic_load_n(&s->ended, __ATOMIC_SEQ_CST)) {
	case SBX__ENDED_TIMEOUT:
		return "timeout";
	case SBX__ENDED_KILLED:
		return "killed";
	case SBX__ENDED_ERROR:
		return "error";
	case SBX__ENDED_OOM:
		return "oom";
	default:
		break;
	}
	if (s->deadline_ns && sbx__record_now_ns() >= s->deadline_ns)
		return "timeout"; /* the init ended it at its own deadline */
	return "closed";
}

int sbx_sandbox_close(sbx_sandbox *s)
{
	struct sbx__redact_scope *prev;
	const char *reason;
	struct sbx__audit_ctx c;
	struct sbx__span sp;
	int rc, arc;

	if (!s)
		return 0;
	prev = sbx__redact_scope_enter(&s->redact);
	sbx__span_begin(s->backend->tracer, &sp, "sandboxio.destroy", &s->span, NULL);
	reason = end_reason(s);
	rc = s->backend->ops->destroy(s->backend->state, s->box);
	c = ctx_span(s, &sp);
	arc = sbx__audit_destroy(s->backend->audit, &c, reason, rc);
	if (arc < 0 && rc == 0)
		rc = sbx__error_set(arc, SBX_ERRCLASS_CORE, "%s",
				    sbx__audit_why(s->backend->audit));
	span_sandbox_attrs(&sp, s);
	sbx__span_str(&sp, "sandboxio.destroy.reason", reason);
	sbx__span_end(&sp, rc);
	sbx__span_str(&s->span, "sandboxio.destroy.reason", reason);
	sbx__span_end(&s->span, rc);
	sbx__redact_scope_leave(prev);
	sandbox_free_handle(s);
	return rc;
}

const sbx_policy *sbx_sandbox_policy(const sbx_sandbox *s)
{
	return s ? s->policy : NULL;
}

/* Keeps the first way the sandbox ended: a later one is a consequence. */
static void set_ended(sbx_sandbox *s, int how)
{
	int none = SBX__ENDED_NO;

	if (how != SBX__ENDED_NO)
		__atomic_compare_exchange_n(&s->ended, &none, how, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
}

int sbx_sandbox_kill(sbx_sandbox *s)
{
	if (!s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "kill: sandbox is NULL");
	set_ended(s, SBX__ENDED_KILLED);
	return s->backend->ops->kill(s->backend->state, s->box);
}

void sbx_sandbox_detach(sbx_sandbox *s)
{
	struct sbx__audit_ctx c;

	if (!s)
		return;
	s->backend->ops->release(s->backend->state, s->box);
	c = ctx_span(s, &s->span);
	sbx__audit_detach(s->backend->audit, &c);
	sbx__span_bool(&s->span, "sandboxio.detached", 1);
	sbx__span_end(&s->span, 0);
	sandbox_free_handle(s);
}

void sbx_result_free(sbx_result *r)
{
	if (!r)
		return;
	free(r->stdout_data);
	free(r->stderr_data);
	free(r);
}

/* Whether env[0..n) (n == SIZE_MAX: NULL-terminated) has an entry for name. */
static int env_has(const char *const *env, size_t n, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; env && i < n && env[i]; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return 1;
	return 0;
}

/*
 * Builds the run's environment: the policy's, then the caller's (later
 * wins), then the secrets, which point into the secrets object's locked
 * memory and are never copied here.
 */
static int
build_env(char ***out, const sbx_policy *p, const char *const *extra, const sbx_secrets *sec)
{
	size_t n = p->env_n, total = 0, k = 0, nsec = sbx_secrets_count(sec);
	char **env;

	for (size_t i = 0; i < nsec; i++) {
		const char *name = sbx_secrets_name(sec, i);

		if (env_has((const char *const *)p->env, p->env_n, name) ||
		    env_has(extra, SIZE_MAX, name))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run: %s is both a plain variable and a secret; "
					      "which one the program sees would be ambiguous",
					      name);
		total += strlen(sbx__secret_expose_env(sec, i));
		n++;
	}
	if (n > SBX_MAX_ENV || total > SBX_MAX_ENV_BYTES)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
				      "run env: at most %d variables and %u bytes", SBX_MAX_ENV,
				      SBX_MAX_ENV_BYTES);

	for (size_t i = 0; extra && extra[i]; i++) {
		const char *eq = strchr(extra[i], '=');
		if (!eq || !sbx__valid_env_name(extra[i], (size_t)(eq - extra[i])))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run env entry %zu is not NAME=VALUE with a valid "
					      "name",
					      i);
		total += strlen(extra[i]);
		if (++n > SBX_MAX_ENV || total > SBX_MAX_ENV_BYTES)
			return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
					      "run env: at most %d variables and %u bytes",
					      SBX_MAX_ENV, SBX_MAX_ENV_BYTES);
	}
	env = calloc(n + 1, sizeof(char *));
	if (!env)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	for (size_t i = 0; i < p->env_n; i++)
		env[k++] = p->env[i];
	for (size_t i = 0; extra && extra[i]; i++)
		env[k++] = (char *)extra[i];
	for (size_t i = 0; i < nsec; i++)
		env[k++] = (char *)sbx__secret_expose_env(sec, i);
	*out = env;
	return 0;
}

int sbx_sandbox_resize(sbx_sandbox *s, unsigned int rows, unsigned int cols)
{
	if (!s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "resize: no sandbox");
	if (sbx__winsize_check(rows, cols) < 0)
		return SBX_EINVALID;
	if (!s->backend->ops->resize)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "resize: the %s backend has no terminals",
				      s->backend->ops->name);
	return s->backend->ops->resize(s->backend->state, s->box, rows, cols);
}

int sbx_sandbox_usage(sbx_sandbox *s, sbx_usage *out)
{
	sbx_usage u = {.version = SBX_USAGE_VERSION};
	int rc;

	if (!s || !out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "usage: %s is NULL",
				      s ? "out" : "the sandbox");
	if (out->version != SBX_USAGE_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "usage: sbx_usage version %u (this library knows %u)",
				      out->version, SBX_USAGE_VERSION);
	if (!s->backend->ops->usage)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "usage: the %s backend does not read a sandbox's usage back",
				      s->backend->ops->name);
	u.cpu_used_us = u.memory_bytes = u.memory_peak_bytes = u.memory_limit_bytes = -1;
	u.disk_used_bytes = u.disk_total_bytes = -1;
	rc = s->backend->ops->usage(s->backend->state, s->box, &u);
	if (rc == 0)
		*out = u;
	return rc;
}

/*
 * A file moved by the backend itself (ops->write_file, ops->read_file)
 * instead of by a run of sh or cat. It is recorded, traced and, when read,
 * redacted and capped exactly as that run would have been.
 */
struct file_op {
	const char *path;
	unsigned int mode; /* write */
	size_t max;	   /* read */
	int write;
};

static int file_op_run(sbx_sandbox *s,
		       const struct file_op *fop,
		       const struct sbx__run_req *req,
		       sbx_result *res)
{
	char *data = NULL;
	size_t len = 0;
	int rc;

	if (fop->write)
		rc = s->backend->ops->write_file(s->backend->state, s->box, fop->path,
						 req->stdin_data, req->stdin_len, fop->mode);
	else
		rc = s->backend->ops->read_file(s->backend->state, s->box, fop->path, fop->max,
						&data, &len);
	if (rc < 0)
		return rc;
	if (data) {
		rc = req->sink(req->sink_arg, SBX_STREAM_STDOUT, data, len);
		free(data);
		if (rc == -2)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
		if (rc == 1)
			return sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_CORE,
					      "read_file: canceled");
	}
	res->status = SBX_RUN_EXITED;
	res->exit_code = 0;
	return 0;
}

/*
 * One run, recorded as what ("run", "run_code", "write_file", "read_file").
 * One function on purpose (some 140 lines): the one path of every run, file
 * transfer included, whose steps (checks, the secrets' scope, the span, the
 * audit's start, the run, the close of its output, the audit's end) must
 * come in this order and be undone in reverse on every exit.
 */
static int run_scoped(sbx_result **out,
		      sbx_sandbox *s,
		      const char *const *argv,
		      const sbx_run_options *opts,
		      sbx_timeout_kind kind,
		      const void *stdin_data,
		      size_t stdin_len,
		      const char *what,
		      const char *language,
		      const struct file_op *fop)
{
	struct sbx__audit *audit = s ? s->backend->audit : NULL;
	struct sbx__audit_run ar = {.kind = what, .language = language, .argv = argv};
	struct sbx__audit_ctx c = {0};
	struct sbx__span sp;
	char span_name[48];
	uint64_t t0;
	_sbx_cleanup_free_ char **env = NULL;
	struct sbx__run_req req = {0};
	struct sbx__output output;
	sbx_run_options o;
	sbx_result *res = NULL;
	size_t bytes = 0, argc = 0;
	uint64_t limit;
	int rc, ended = SBX__ENDED_NO;

	if (!out || !s || !argv || !argv[0] || !argv[0][0])
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run: argv must hold at least a program name");
	rc = sbx__run_options_load(&o, opts);
	if (rc < 0)
		return rc;
	opts = &o;
	c = ctx_of(s);
	for (; argv[argc]; argc++) {
		bytes += strlen(argv[argc]) + 1;
		if (argc >= SBX_MAX_ARGC || bytes > SBX_MAX_ARGV_BYTES)
			return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
					      "run: argv is over %d arguments or %u bytes; pass "
					      "large inputs on stdin or as a file",
					      SBX_MAX_ARGC, SBX_MAX_ARGV_BYTES);
	}
	limit = s->policy->timeout_ms[kind];
	req.timeout_ms = limit;
	if (opts->timeout_ms) {
		if (opts->timeout_ms > limit)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run timeout %llu ms is above the policy's %llu ms; "
					      "a run may only narrow its deadline",
					      (unsigned long long)opts->timeout_ms,
					      (unsigned long long)limit);
		req.timeout_ms = opts->timeout_ms;
	}
	if (opts->workdir && !sbx__valid_abs_path(opts->workdir))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run: working directory must be an absolute path without "
				      "'..'");
	/* A frozen sandbox would hold the run until its deadline: refused now. */
	if (sbx__sandbox_paused(s)) {
		rc = sbx__error_set(SBX_EPAUSED, SBX_ERRCLASS_CORE,
				    "%s: sandbox %.12s is paused; resume it first", what, s->id);
		audit_refused(s->backend, &c, what, rc);
		return rc;
	}
	if (sbx_secrets_count(opts->secrets)) {
		rc = sbx__config_check_secrets(s->backend->config,
					       sbx_secrets_count(opts->secrets));
		if (rc < 0) {
			audit_refused(s->backend, &c, what, rc);
			return rc;
		}
	}
	/* From now on the sandbox's records are redacted with these too. */
	if (sbx__redact_scope_add(&s->redact, sbx__secrets_redact_set(opts->secrets)) < 0)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	rc = build_env(&env, s->policy, opts->env, opts->secrets);
	if (rc < 0)
		return rc;
	req.argv = argv;
	req.env = (const char *const *)env;
	req.has_secrets = sbx_secrets_count(opts->secrets) > 0;
	req.workdir = opts->workdir ? opts->workdir : s->policy->workdir;
	req.stdin_data = stdin_data;
	req.stdin_len = stdin_len;
	rc = sbx__run_tty_req(&req, opts, s->backend->ops);
	if (rc < 0)
		return rc;
	req.sink = sbx__output_sink;
	req.sink_arg = &output;
	req.ended = &ended;
	res = calloc(1, sizeof(*res));
	if (!res)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	res->version = 1;
	ar.workdir = req.workdir;
	ar.timeout_ms = req.timeout_ms;
	ar.env = opts->env;
	ar.secrets = opts->secrets;
	ar.stdin_len = stdin_len;
	ar.raw_output = opts->raw_output;
	ar.as_root = req.as_root;
	/* The run's span: its id is the run's id in the audit events too. */
	snprintf(span_name, sizeof(span_name), "sandboxio.%s", what);
	sbx__span_begin(s->backend->tracer, &sp, span_name, &s->span, opts->traceparent);
	ar.run_id = sp.span_id;
	c = ctx_span(s, &sp);
	span_sandbox_attrs(&sp, s);
	sbx__span_str(&sp, "sandboxio.run.kind", what);
	if (language)
		sbx__span_str(&sp, "sandboxio.run.language", language);
	sbx__span_strv(&sp, "process.command_args", argv);
	sbx__span_int(&sp, "sandboxio.run.timeout_ms", (int64_t)req.timeout_ms);
	sbx__span_int(&sp, "sandboxio.run.secrets", (int64_t)sbx_secrets_count(opts->secrets));
	sbx__span_int(&sp, "sandboxio.run.stdin_bytes", (int64_t)stdin_len);
	/* No run starts unless its start is on record. */
	rc = sbx__audit_run_start(audit, &c, &ar);
	if (rc < 0) {
		sbx_result_free(res);
		rc = sbx__error_set(rc, SBX_ERRCLASS_CORE, "%s; the run was not started",
				    sbx__audit_why(audit));
		sbx__span_end(&sp, rc);
		return rc;
	}
	t0 = sbx__record_now_ns();
	sbx__output_init(&output, s->policy->limit[SBX_LIMIT_OUTPUT], opts->raw_output,
			 opts->on_output, opts->payload);
	/* The output is redacted with the sandbox's secrets, not the process's others. */
	output.s[0].red.scope = output.s[1].red.scope = &s->redact;
	if (fop)
		rc = file_op_run(s, fop, &req, res);
	else
		rc = s->backend->ops->run(s->backend->state, s->box, &req, res);
	set_ended(s, ended);
	/* The one place a run's output is closed: redacted, capped, kept. */
	if (rc == 0)
		rc = sbx__output_finish(&output, res);
	sbx__output_done(&output);
	{
		int arc = sbx__audit_run_end(audit, &c, &ar, rc, res,
					     (sbx__record_now_ns() - t0) / 1000000u);

		/* Fail closed: a result whose end is not on record is withheld. */
		if (arc < 0 && rc == 0)
			rc = sbx__error_set(arc, SBX_ERRCLASS_CORE,
					    "%s; the run's result is withheld",
					    sbx__audit_why(audit));
	}
	audit_refused(s->backend, &c, what, rc);
	if (rc == 0) {
		sbx__span_str(&sp, "sandboxio.run.status", sbx_run_status_name(res->status));
		sbx__span_int(&sp, "process.exit.code", res->exit_code);
		sbx__span_int(&sp, "sandboxio.run.stdout_bytes", (int64_t)res->stdout_total);
		sbx__span_int(&sp, "sandboxio.run.stderr_bytes", (int64_t)res->stderr_total);
		sbx__span_int(&sp, "sandboxio.run.limits_hit", res->limits_hit);
	}
	sbx__span_end(&sp, rc);
	if (rc < 0) {
		sbx_result_free(res);
		return rc;
	}
	*out = res;
	return 0;
}

/*
 * Every record a run closes (its errors, audit events and spans) is closed
 * inside the sandbox's redaction scope, on this thread.
 */
static int run_common(sbx_result **out,
		      sbx_sandbox *s,
		      const char *const *argv,
		      const sbx_run_options *opts,
		      sbx_timeout_kind kind,
		      const void *stdin_data,
		      size_t stdin_len,
		      const char *what,
		      const char *language,
		      const struct file_op *fop)
{
	struct sbx__redact_scope *prev = sbx__redact_scope_enter(s ? &s->redact : NULL);
	int rc = run_scoped(out, s, argv, opts, kind, stdin_data, stdin_len, what, language, fop);

	sbx__redact_scope_leave(prev);
	return rc;
}

int sbx__sandbox_run_kind(sbx_result **out,
			  sbx_sandbox *s,
			  const char *const *argv,
			  const sbx_run_options *opts,
			  sbx_timeout_kind kind,
			  const char *what,
			  const char *language)
{
	return run_common(out, s, argv, opts, kind, opts ? opts->stdin_data : NULL,
			  opts ? opts->stdin_len : 0, what, language, NULL);
}

int sbx_sandbox_run(sbx_result **out,
		    sbx_sandbox *s,
		    const char *const *argv,
		    const sbx_run_options *opts)
{
	sbx__error_clear();
	return run_common(out, s, argv, opts, SBX_TIMEOUT_RUN, opts ? opts->stdin_data : NULL,
			  opts ? opts->stdin_len : 0, "run", NULL, NULL);
}

int sbx_sandbox_run_code(sbx_result **out,
			 sbx_sandbox *s,
			 const char *language,
			 const char *code,
			 size_t code_len,
			 const sbx_run_options *opts)
{
	static const char *const py[] = {"python3", "-", NULL};
	static const char *const sh[] = {"bash", "-s", NULL};
	const char *const *argv;

	sbx__error_clear();
	if (!language || !code)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run_code: language and code are required");
	if (opts && opts->stdin_len)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run_code: the code is passed on stdin, so stdin must be "
				      "empty");
	if (strcmp(language, "python") == 0)
		argv = py;
	else if (strcmp(language, "bash") == 0)
		argv = sh;
	else
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "run_code: language '%.32s' is not supported (python, bash)",
				      language);
	return run_common(out, s, argv, opts, SBX_TIMEOUT_RUN_CODE, code, code_len, "run_code",
			  language, NULL);
}

/*
 * Maps a failed file helper's stderr onto an error code. The stderr is the
 * sandbox's own text: the error is closed in the sandbox's scope.
 */
static int file_error(sbx_sandbox *s, const char *what, const char *path, const sbx_result *r)
{
	const char *err = r->stderr_data ? r->stderr_data : "";
	struct sbx__redact_scope *prev;
	int code = SBX_EENGINE, rc;

	if (strstr(err, "No such file or directory"))
		code = SBX_ENOTFOUND;
	else if (strstr(err, "Permission denied") || strstr(err, "Read-only file system"))
		code = SBX_EDENIED;
	else if (strstr(err, "No space left on device"))
		code = SBX_ETOOBIG;
	else if (strstr(err, "Is a directory"))
		code = SBX_EINVALID;
	prev = sbx__redact_scope_enter(&s->redact);
	rc = sbx__error_set(code, SBX_ERRCLASS_CORE, "%s %.256s: %.400s", what, path,
			    r->status == SBX_RUN_EXITED ? err : sbx_run_status_name(r->status));
	sbx__redact_scope_leave(prev);
	return rc;
}

int sbx_sandbox_write_file(
	sbx_sandbox *s, const char *path, const void *data, size_t len, unsigned int mode)
{
	char modestr[8];
	const char *argv[] = {"sh",	   "-c", "umask 077 && cat > \"$1\" && chmod \"$2\" \"$1\"",
			      "sbx-write", path, modestr,
			      NULL};
	struct file_op fop = {0};
	sbx_result *r = NULL;
	int rc;

	sbx__error_clear();
	if (!s || !path || (!data && len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "write_file: NULL argument");
	if (!sbx__valid_abs_path(path) || mode > 07777)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "write_file: path must be absolute without '..', mode at "
				      "most 07777");
	snprintf(modestr, sizeof(modestr), "%o", mode);
	fop.path = path;
	fop.mode = mode;
	fop.write = 1;
	rc = run_common(&r, s, argv, NULL, SBX_TIMEOUT_RUN, data, len, "write_file", NULL,
			s->backend->ops->write_file ? &fop : NULL);
	if (rc < 0)
		return rc;
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		rc = file_error(s, "write_file", path, r);
	sbx_result_free(r);
	return rc;
}

int sbx_sandbox_read_file(void **out, size_t *len_out, sbx_sandbox *s, const char *path, size_t max)
{
	const char *argv[] = {"cat", "--", path, NULL};
	struct file_op fop = {0};
	sbx_result *r = NULL;
	int64_t saved;
	int rc;

	sbx__error_clear();
	if (!out || !len_out || !s || !path)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "read_file: NULL argument");
	if (!sbx__valid_abs_path(path))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "read_file: path must be absolute without '..'");
	/* The bytes held in memory are bounded by the operator's output ceiling. */
	if (max == 0) {
		max = (size_t)sbx_config_limit_ceiling(s->backend->config, SBX_LIMIT_OUTPUT);
		if (max > SBX_READ_DEFAULT_MAX)
			max = SBX_READ_DEFAULT_MAX;
	}
	if (max > SBX_MAX_OUTPUT)
		max = SBX_MAX_OUTPUT;
	rc = sbx__config_check_limit(s->backend->config, SBX_LIMIT_OUTPUT, (int64_t)max);
	if (rc < 0)
		return rc;
	saved = s->policy->limit[SBX_LIMIT_OUTPUT];
	s->policy->limit[SBX_LIMIT_OUTPUT] = (int64_t)max;
	fop.path = path;
	fop.max = max;
	rc = run_common(&r, s, argv, NULL, SBX_TIMEOUT_RUN, NULL, 0, "read_file", NULL,
			s->backend->ops->read_file ? &fop : NULL);
	s->policy->limit[SBX_LIMIT_OUTPUT] = saved;
	if (rc < 0)
		return rc;
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		rc = file_error(s, "read_file", path, r);
	else if (r->stdout_truncated)
		rc = sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
				    "read_file %.256s: larger than %zu bytes", path, max);
	if (rc == 0) {
		*out = SBX_STEAL(&r->stdout_data);
		*len_out = r->stdout_len;
	}
	sbx_result_free(r);
	return rc;
}

int sbx_backend_reap(sbx_backend *b, const sbx_reap_options *opts, sbx_reap_cb cb, void *payload)
{
	sbx__error_clear();
	if (!b)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "reap: backend is NULL");
	if (opts && (opts->version == 0 || opts->version > SBX_REAP_OPTIONS_VERSION))
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "reap options version %u is not known (1..%u)", opts->version,
				      SBX_REAP_OPTIONS_VERSION);
	struct reap_audit ra = {.b = b, .cb = cb, .payload = payload};
	int rc;

	rc = sbx__reap(b->ops, b->state, opts ? opts->tenant : NULL, opts ? opts->dry_run : 0, 0,
		       b->audit ? reap_audit_cb : cb, b->audit ? (void *)&ra : payload);
	if (rc >= 0 && ra.failed)
		rc = sbx__error_set(SBX_ERROR, SBX_ERRCLASS_CORE, "%s (the sandboxes were removed)",
				    sbx__audit_why(b->audit));
	return rc;
}
