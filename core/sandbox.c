/*
 * core/sandbox.c: the public sandbox API, backend-independent.
 *
 * Everything a caller passes is validated here, once, before a backend sees
 * it: argv and env bounds, deadlines (a run may narrow the policy's deadline,
 * never widen it), output caps. Results are closed here too (redaction), so
 * each backend only maps a resolved request onto its engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/redact-int.h"

#define SBX_MAX_ARGV_BYTES (1u << 20)
#define SBX_MAX_ARGC 4096
#define SBX_READ_DEFAULT_MAX (64u << 20)

struct sbx_backend {
	const struct sbx_backend_ops *ops;
	void *state;
};

struct sbx_sandbox {
	sbx_backend *backend;
	void *box;
	char *id;
	sbx_tier tier;
	sbx_policy *policy;
};

static const struct sbx_backend_ops *const backends[] = {
	&sbx__docker_ops,
};

const char *sbx_version(void)
{
	return SBX_VERSION_STRING;
}

void sbx_free(void *p)
{
	free(p);
}

int sbx_backend_options_init(sbx_backend_options *opts, unsigned int version)
{
	if (!opts)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "options are NULL");
	if (version == 0 || version > SBX_BACKEND_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "backend options version %u is not known (1..%u)", version,
				      SBX_BACKEND_OPTIONS_VERSION);
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return 0;
}

int sbx_run_options_init(sbx_run_options *opts, unsigned int version)
{
	if (!opts)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "options are NULL");
	if (version == 0 || version > SBX_RUN_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "run options version %u is not known (1..%u)", version,
				      SBX_RUN_OPTIONS_VERSION);
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return 0;
}

int sbx_backend_open(sbx_backend **out, const char *name, const sbx_backend_options *opts)
{
	const struct sbx_backend_ops *ops = NULL;
	sbx_backend *b;
	int rc;

	sbx__error_clear();
	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "backend_open: out is NULL");
	if (opts && (opts->version == 0 || opts->version > SBX_BACKEND_OPTIONS_VERSION))
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "backend options version %u is not known (1..%u)",
				      opts->version, SBX_BACKEND_OPTIONS_VERSION);
	if (!name)
		name = "docker";
	for (size_t i = 0; i < SBX_ARRAY_SIZE(backends); i++)
		if (strcmp(backends[i]->name, name) == 0)
			ops = backends[i];
	if (!ops)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "unknown backend '%.32s' (this build has: docker)", name);
	b = calloc(1, sizeof(*b));
	if (!b)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	b->ops = ops;
	rc = ops->open(&b->state, opts);
	if (rc < 0) {
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void sbx_backend_free(sbx_backend *b)
{
	if (!b)
		return;
	b->ops->free(b->state);
	free(b);
}

const char *sbx_backend_name(const sbx_backend *b)
{
	return b ? b->ops->name : NULL;
}

static int sandbox_new(sbx_sandbox **out, sbx_backend *b)
{
	sbx_sandbox *s = calloc(1, sizeof(*s));

	if (!s)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	s->backend = b;
	*out = s;
	return 0;
}

static void sandbox_free_handle(sbx_sandbox *s)
{
	sbx_policy_free(s->policy);
	free(s->id);
	free(s);
}

int sbx_sandbox_create(sbx_sandbox **out, sbx_backend *b, const sbx_policy *p)
{
	sbx_sandbox *s = NULL;
	int rc;

	sbx__error_clear();
	if (!out || !b || !p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "create: NULL argument");
	rc = b->ops->check(b->state, p);
	if (rc < 0)
		return rc;
	rc = sandbox_new(&s, b);
	if (rc < 0)
		return rc;
	rc = sbx_policy_dup(&s->policy, p);
	if (rc < 0)
		goto fail;
	rc = b->ops->create(b->state, s->policy, &s->box, &s->id, &s->tier);
	if (rc < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	sandbox_free_handle(s);
	return rc;
}

int sbx_sandbox_open(sbx_sandbox **out, sbx_backend *b, const char *id)
{
	sbx_sandbox *s = NULL;
	int rc;

	sbx__error_clear();
	if (!out || !b || !id || !*id)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "open: NULL argument");
	rc = sandbox_new(&s, b);
	if (rc < 0)
		return rc;
	rc = sbx_policy_new(&s->policy);
	if (rc < 0)
		goto fail;
	rc = b->ops->open_box(b->state, id, &s->box, s->policy, &s->tier);
	if (rc < 0)
		goto fail;
	s->id = strdup(id);
	if (!s->id) {
		b->ops->release(b->state, s->box);
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
		goto fail;
	}
	*out = s;
	return 0;
fail:
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

int sbx_sandbox_close(sbx_sandbox *s)
{
	int rc;

	if (!s)
		return 0;
	rc = s->backend->ops->destroy(s->backend->state, s->box);
	sandbox_free_handle(s);
	return rc;
}

const sbx_policy *sbx_sandbox_policy(const sbx_sandbox *s)
{
	return s ? s->policy : NULL;
}

int sbx_sandbox_kill(sbx_sandbox *s)
{
	if (!s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "kill: sandbox is NULL");
	return s->backend->ops->kill(s->backend->state, s->box);
}

void sbx_sandbox_detach(sbx_sandbox *s)
{
	if (!s)
		return;
	s->backend->ops->release(s->backend->state, s->box);
	sandbox_free_handle(s);
}

const char *sbx_run_status_name(sbx_run_status st)
{
	switch (st) {
	case SBX_RUN_EXITED:
		return "exited";
	case SBX_RUN_TIMEOUT:
		return "timeout";
	case SBX_RUN_OOM:
		return "oom";
	case SBX_RUN_KILLED:
		return "killed";
	case SBX_RUN_ERROR:
		return "error";
	}
	return "unknown";
}

void sbx_result_free(sbx_result *r)
{
	if (!r)
		return;
	free(r->stdout_data);
	free(r->stderr_data);
	free(r);
}

/* Builds the run's environment: the policy's, then the caller's (later wins). */
static int build_env(char ***out, const sbx_policy *p, const char *const *extra)
{
	size_t n = p->env_n, total = 0, k = 0;
	char **env;

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
	*out = env;
	return 0;
}

static int run_common(sbx_result **out,
		      sbx_sandbox *s,
		      const char *const *argv,
		      const sbx_run_options *opts,
		      sbx_timeout_kind kind,
		      const void *stdin_data,
		      size_t stdin_len)
{
	_sbx_cleanup_free_ char **env = NULL;
	struct sbx_run_req req = {0};
	sbx_result *res = NULL;
	size_t bytes = 0, argc = 0;
	uint64_t limit;
	int rc;

	if (!out || !s || !argv || !argv[0] || !argv[0][0])
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run: argv must hold at least a program name");
	if (opts && (opts->version == 0 || opts->version > SBX_RUN_OPTIONS_VERSION))
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "run options version %u is not known (1..%u)", opts->version,
				      SBX_RUN_OPTIONS_VERSION);
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
	if (opts && opts->timeout_ms) {
		if (opts->timeout_ms > limit)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run timeout %llu ms is above the policy's %llu ms; "
					      "a run may only narrow its deadline",
					      (unsigned long long)opts->timeout_ms,
					      (unsigned long long)limit);
		req.timeout_ms = opts->timeout_ms;
	}
	if (opts && opts->workdir && !sbx__valid_abs_path(opts->workdir))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run: working directory must be an absolute path without "
				      "'..'");
	rc = build_env(&env, s->policy, opts ? opts->env : NULL);
	if (rc < 0)
		return rc;
	req.argv = argv;
	req.env = (const char *const *)env;
	req.workdir = opts && opts->workdir ? opts->workdir : s->policy->workdir;
	req.stdin_data = stdin_data;
	req.stdin_len = stdin_len;
	req.output_cap = s->policy->limit[SBX_LIMIT_OUTPUT];
	req.on_output = opts ? opts->on_output : NULL;
	req.payload = opts ? opts->payload : NULL;
	res = calloc(1, sizeof(*res));
	if (!res)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	res->version = 1;
	rc = s->backend->ops->run(s->backend->state, s->box, &req, res);
	if (rc < 0) {
		sbx_result_free(res);
		return rc;
	}
	*out = res;
	return 0;
}

int sbx_sandbox_run(sbx_result **out,
		    sbx_sandbox *s,
		    const char *const *argv,
		    const sbx_run_options *opts)
{
	sbx__error_clear();
	return run_common(out, s, argv, opts, SBX_TIMEOUT_RUN, opts ? opts->stdin_data : NULL,
			  opts ? opts->stdin_len : 0);
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
	return run_common(out, s, argv, opts, SBX_TIMEOUT_RUN_CODE, code, code_len);
}

/* Maps a failed file helper's stderr onto an error code. */
static int file_error(const char *what, const char *path, const sbx_result *r)
{
	const char *err = r->stderr_data ? r->stderr_data : "";
	int code = SBX_EENGINE;

	if (strstr(err, "No such file or directory"))
		code = SBX_ENOTFOUND;
	else if (strstr(err, "Permission denied") || strstr(err, "Read-only file system"))
		code = SBX_EDENIED;
	else if (strstr(err, "No space left on device"))
		code = SBX_ETOOBIG;
	else if (strstr(err, "Is a directory"))
		code = SBX_EINVALID;
	return sbx__error_set(code, SBX_ERRCLASS_CORE, "%s %.256s: %.400s", what, path,
			      r->status == SBX_RUN_EXITED ? err : sbx_run_status_name(r->status));
}

int sbx_sandbox_write_file(
	sbx_sandbox *s, const char *path, const void *data, size_t len, unsigned int mode)
{
	char modestr[8];
	const char *argv[] = {"sh",	   "-c", "umask 077 && cat > \"$1\" && chmod \"$2\" \"$1\"",
			      "sbx-write", path, modestr,
			      NULL};
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
	rc = run_common(&r, s, argv, NULL, SBX_TIMEOUT_RUN, data, len);
	if (rc < 0)
		return rc;
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		rc = file_error("write_file", path, r);
	sbx_result_free(r);
	return rc;
}

int sbx_sandbox_read_file(void **out, size_t *len_out, sbx_sandbox *s, const char *path, size_t max)
{
	const char *argv[] = {"cat", "--", path, NULL};
	sbx_result *r = NULL;
	int64_t saved;
	int rc;

	sbx__error_clear();
	if (!out || !len_out || !s || !path)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "read_file: NULL argument");
	if (!sbx__valid_abs_path(path))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "read_file: path must be absolute without '..'");
	if (max == 0)
		max = SBX_READ_DEFAULT_MAX;
	if (max > SBX_MAX_OUTPUT)
		max = SBX_MAX_OUTPUT;
	saved = s->policy->limit[SBX_LIMIT_OUTPUT];
	s->policy->limit[SBX_LIMIT_OUTPUT] = (int64_t)max;
	rc = run_common(&r, s, argv, NULL, SBX_TIMEOUT_RUN, NULL, 0);
	s->policy->limit[SBX_LIMIT_OUTPUT] = saved;
	if (rc < 0)
		return rc;
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		rc = file_error("read_file", path, r);
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

int sbx_backend_list(sbx_backend *b, const char *tenant, sbx_list_cb cb, void *payload)
{
	sbx__error_clear();
	if (!b || !cb)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "list: NULL argument");
	return b->ops->list(b->state, tenant, cb, payload);
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
	return b->ops->reap(b->state, opts ? opts->tenant : NULL, opts ? opts->dry_run : 0, cb,
			    payload);
}

int sbx_backend_image_exists(sbx_backend *b, const char *ref)
{
	sbx__error_clear();
	if (!b || !ref)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "image_exists: NULL argument");
	return b->ops->image_exists(b->state, ref);
}

int sbx_backend_import_image(sbx_backend *b, const char *tar_path, const char *ref)
{
	sbx__error_clear();
	if (!b || !tar_path || !ref)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "import_image: NULL argument");
	if (!b->ops->import_image)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "backend %s cannot import images", b->ops->name);
	return b->ops->import_image(b->state, tar_path, ref);
}
