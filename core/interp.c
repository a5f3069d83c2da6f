/*
 * core/interp.c: code contexts (sandboxio/interp.h).
 *
 * A context is core/interp-driver.py's `serve` started by the backend's
 * spawn (a detached run under the sandbox's init, to the sandbox's
 * deadline), listening on CTX_DIR/NAME.sock inside the sandbox. A cell is
 * an ordinary run of the driver's `client`, which hands the cell to the
 * context and relays its JSON lines as stdout: those lines pass the run's
 * output cap and redactor, then core/interp-parse.c, which bounds and
 * redacts each part again once decoded. Interrupt, kill and list are runs
 * of the driver too. The driver's source is passed with python3 -c, so the
 * image needs python3 and nothing of this project.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/interp-int.h"
#include "core/policy-int.h"
#include "core/sandbox-int.h"
#include "core/secret-int.h"
#include "util/error-int.h"
#include "util/time.h"

#define CTX_DIR "/tmp/.sandboxio-ctx"
#define NAME_MAX_LEN 64
/* The grace after the deadline's interrupt: a fifth of the deadline, at most this. */
#define GRACE_MAX_MS 3000
/* Helper runs (list, interrupt, kill): their deadline at most. */
#define HELPER_TIMEOUT_MS 30000
/* Output cap bytes kept for the lines that end a cell. */
#define RESERVE 4096
/* Secret names forwarded to a cell, joined with commas: at most. */
#define ENVNAMES_MAX 8192

static const char driver_src[] =
#include "core/interp-driver.h"
	;

struct sbx_context {
	sbx_sandbox *s;
	char name[NAME_MAX_LEN + 1];
	char lang[8];
	char *cwd;
};

static int valid_name(const char *n)
{
	size_t len = n ? strlen(n) : 0;

	if (len == 0 || len > NAME_MAX_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9') || n[i] == '_' || n[i] == '-'))
			return 0;
	return 1;
}

const char *sbx_code_status_name(sbx_code_status st)
{
	switch (st) {
	case SBX_CODE_OK:
		return "ok";
	case SBX_CODE_ERROR:
		return "error";
	case SBX_CODE_INTERRUPTED:
		return "interrupted";
	case SBX_CODE_TIMEOUT:
		return "timeout";
	case SBX_CODE_RESTARTED:
		return "restarted";
	}
	return "unknown";
}

/* A helper run's deadline: at most HELPER_TIMEOUT_MS and the policy's. */
static uint64_t helper_timeout(const sbx_sandbox *s)
{
	uint64_t limit = sbx_policy_timeout_ms(s->policy, SBX_TIMEOUT_RUN);

	return limit && limit < HELPER_TIMEOUT_MS ? limit : HELPER_TIMEOUT_MS;
}

/* A run of the driver in mode args (at most 8), with its stdout. */
static int helper(sbx_result **r, sbx_sandbox *s, const char *const *args)
{
	const char *argv[16] = {"python3", "-I", "-S", "-c", driver_src};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	size_t i;

	for (i = 0; args[i] && i < 8; i++)
		argv[5 + i] = args[i];
	argv[5 + i] = NULL;
	o.timeout_ms = helper_timeout(s);
	return sbx__sandbox_run_kind(r, s, argv, &o, SBX_TIMEOUT_RUN, "run", NULL);
}

/* A helper's failure as an error: its stderr says why. */
static int helper_failed(const sbx_result *r, const char *what)
{
	if (r->status == SBX_RUN_EXITED && r->exit_code == 3)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_CORE, "%s: %.200s", what,
				      r->stderr_data ? r->stderr_data : "");
	return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_CORE, "%s: %s %d: %.200s", what,
			      sbx_run_status_name(r->status), r->exit_code,
			      r->stderr_data ? r->stderr_data : "");
}

typedef int (*each_fn)(const char *name, const char *lang, const char *cwd, void *arg);

/* The live contexts, as the sandbox lists them; lines that are not a
 * context's ("NAME LANG CWD", each checked) are skipped. */
static int each_context(sbx_sandbox *s, each_fn fn, void *arg)
{
	const char *args[] = {"list", CTX_DIR, NULL};
	sbx_result *r = NULL;
	char *line, *save = NULL;
	int rc = helper(&r, s, args);

	if (rc < 0)
		return rc;
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		rc = helper_failed(r, "list contexts");
		sbx_result_free(r);
		return rc;
	}
	for (line = strtok_r(r->stdout_data, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *lang = strchr(line, ' '), *cwd;

		if (!lang)
			continue;
		*lang++ = '\0';
		cwd = strchr(lang, ' ');
		if (!cwd)
			continue;
		*cwd++ = '\0';
		if (valid_name(line) &&
		    (strcmp(lang, "python") == 0 || strcmp(lang, "bash") == 0) &&
		    sbx__valid_abs_path(cwd))
			rc = fn(line, lang, cwd, arg);
	}
	sbx_result_free(r);
	return rc < 0 ? rc : 0;
}

/* Starts the context's process (ops->spawn), to the sandbox's deadline. */
static int spawn(sbx_context *c)
{
	sbx_sandbox *s = c->s;
	const char *argv[] = {"python3", "-I",	  "-c",	   driver_src, "serve",
			      CTX_DIR,	 c->name, c->lang, NULL};
	struct sbx__run_req req = {.argv = argv, .workdir = c->cwd};
	uint64_t left = sbx_policy_timeout_ms(s->policy, SBX_TIMEOUT_SANDBOX);
	struct timespec now;

	if (!s->backend->ops->spawn)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "backend %s has no code contexts", s->backend->ops->name);
	if (s->deadline_ns && clock_gettime(CLOCK_REALTIME, &now) == 0) {
		uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		if (ns >= s->deadline_ns)
			return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_CORE,
					      "sandbox %.12s: its deadline has passed", s->id);
		left = (s->deadline_ns - ns) / 1000000ull + 1;
	}
	req.timeout_ms = left ? left : 1;
	return s->backend->ops->spawn(s->backend->state, s->box, &req);
}

/* Waits until the context listens (its first cell could, but then a
 * second create of the name would not see it, and a start that failed
 * would show only at the first cell). */
static int wait_started(sbx_context *c)
{
	char ms[24];
	const char *args[] = {"wait", CTX_DIR, c->name, ms, NULL};
	sbx_result *r = NULL;
	int rc;

	/* It says why before its own run's deadline. */
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)(helper_timeout(c->s) * 4 / 5));
	rc = helper(&r, c->s, args);
	if (rc == 0 && (r->status != SBX_RUN_EXITED || r->exit_code != 0))
		rc = helper_failed(r, "start context");
	sbx_result_free(r);
	return rc;
}

static int signal_context(sbx_context *c, const char *sig)
{
	const char *args[] = {"signal", CTX_DIR, c->name, sig, NULL};
	sbx_result *r = NULL;
	int rc = helper(&r, c->s, args);

	if (rc == 0 && (r->status != SBX_RUN_EXITED || r->exit_code != 0))
		rc = helper_failed(r, "signal context");
	sbx_result_free(r);
	return rc;
}

static int
new_handle(sbx_context **out, sbx_sandbox *s, const char *name, const char *lang, const char *cwd)
{
	sbx_context *c = calloc(1, sizeof(*c));

	if (!c || !(c->cwd = strdup(cwd))) {
		free(c);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	}
	c->s = s;
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->lang, sizeof(c->lang), "%s", lang);
	*out = c;
	return 0;
}

struct find {
	const char *name;
	int found;
	char lang[8];
	char *cwd;
};

static int find_fn(const char *name, const char *lang, const char *cwd, void *arg)
{
	struct find *f = arg;

	if (strcmp(name, f->name) != 0)
		return 0;
	f->found = 1;
	snprintf(f->lang, sizeof(f->lang), "%s", lang);
	f->cwd = strdup(cwd);
	return f->cwd ? 1 : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
}

int sbx_context_create(sbx_context **out, sbx_sandbox *s, const sbx_context_options *opts)
{
	const char *lang = opts && opts->language ? opts->language : "python";
	const char *cwd, *name = opts ? opts->name : NULL;
	char gen[NAME_MAX_LEN + 1];
	sbx_context *c = NULL;
	int rc;

	sbx__error_clear();
	if (!out || !s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "context: NULL argument");
	if (opts && (opts->version == 0 || opts->version > SBX_CONTEXT_OPTIONS_VERSION))
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "context options version %u is not known (1..%u)",
				      opts->version, SBX_CONTEXT_OPTIONS_VERSION);
	if (strcmp(lang, "python") != 0 && strcmp(lang, "bash") != 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "context: language '%.32s' is not python or bash", lang);
	cwd = opts && opts->cwd ? opts->cwd : s->policy->workdir;
	if (!cwd)
		cwd = "/workspace";
	if (!sbx__valid_abs_path(cwd))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "context: cwd must be an absolute path without '..'");
	if (!s->backend->ops->spawn)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "backend %s has no code contexts", s->backend->ops->name);
	if (name) {
		struct find f = {.name = name};

		if (!valid_name(name))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "context: name '%.80s' is not 1 to 64 of "
					      "[A-Za-z0-9_-]",
					      name);
		rc = each_context(s, find_fn, &f);
		free(f.cwd);
		if (rc < 0)
			return rc;
		if (f.found)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "context %s is already alive in sandbox %.12s", name,
					      s->id);
	} else {
		unsigned char rnd[8];

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_OS,
					      "context: getrandom failed");
		snprintf(gen, sizeof(gen), "ctx-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
			 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
		name = gen;
	}
	rc = new_handle(&c, s, name, lang, cwd);
	if (rc < 0)
		return rc;
	rc = spawn(c);
	if (rc == 0)
		rc = wait_started(c);
	if (rc < 0) {
		sbx_context_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int sbx_context_open(sbx_context **out, sbx_sandbox *s, const char *name)
{
	struct find f = {.name = name};
	int rc;

	sbx__error_clear();
	if (!out || !s || !name)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "context: NULL argument");
	if (!valid_name(name))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "context: name '%.80s' is not 1 to 64 of [A-Za-z0-9_-]",
				      name);
	if (!s->backend->ops->spawn)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "backend %s has no code contexts", s->backend->ops->name);
	rc = each_context(s, find_fn, &f);
	if (rc == 0 && !f.found)
		rc = sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_CORE,
				    "no live context %s in sandbox %.12s", name, s->id);
	if (rc == 0)
		rc = new_handle(out, s, name, f.lang, f.cwd);
	free(f.cwd);
	return rc;
}

const char *sbx_context_name(const sbx_context *c)
{
	return c ? c->name : NULL;
}

const char *sbx_context_language(const sbx_context *c)
{
	return c ? c->lang : NULL;
}

void sbx_code_result_free(sbx_code_result *r)
{
	if (!r)
		return;
	free(r->stdout_data);
	free(r->stderr_data);
	free(r->text);
	free(r->error_name);
	free(r->error_value);
	free(r->error_traceback);
	for (size_t i = 0; i < r->n_items; i++) {
		free(r->items[i].mime);
		free(r->items[i].data);
	}
	free(r->items);
	free(r);
}

/* The run's output callback: the client's stdout goes to the parser; its
 * stderr (its own diagnostics) is not the cell's. */
static int cell_output(int stream, const char *data, size_t len, void *payload)
{
	struct sbx__interp_parser *p = payload;

	if (stream != SBX_STREAM_STDOUT)
		return 0;
	return sbx__interp_feed(p, data, len) < 0;
}

/* "NAME,NAME..." of the secrets, for the client to forward. */
static int env_names(char *dst, size_t size, const sbx_secrets *sec)
{
	size_t o = 0;

	dst[0] = '\0';
	for (size_t i = 0; sec && i < sbx_secrets_count(sec); i++) {
		const char *n = sbx_secrets_name(sec, i);
		int w = snprintf(dst + o, size - o, "%s%s", o ? "," : "", n ? n : "");
		if (w < 0 || (size_t)w >= size - o)
			return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
					      "context: too many secret names for one cell");
		o += (size_t)w;
	}
	return 0;
}

int sbx_context_run(sbx_code_result **out,
		    sbx_context *c,
		    const char *code,
		    size_t code_len,
		    const sbx_code_options *opts)
{
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	struct sbx__interp_parser p;
	char dl[24], gr[24], lim[24], names[ENVNAMES_MAX];
	int64_t cap;
	const char *argv[] = {"python3",	"-I", "-S", "-c", driver_src, "client", CTX_DIR,
			      c ? c->name : "", dl,   gr,   lim,  names,      NULL};
	uint64_t t, grace, start = sbx__mono_ms();
	sbx_code_result *res;
	sbx_result *r = NULL;
	int rc;

	sbx__error_clear();
	if (!out || !c || (!code && code_len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "context run: NULL argument");
	if (opts && (opts->version == 0 || opts->version > SBX_CODE_OPTIONS_VERSION))
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "code options version %u is not known (1..%u)", opts->version,
				      SBX_CODE_OPTIONS_VERSION);
	t = opts && opts->timeout_ms ? opts->timeout_ms
				     : sbx_policy_timeout_ms(c->s->policy, SBX_TIMEOUT_RUN_CODE);
	if (t < 100)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "context run: a deadline under 100 ms leaves no time to run");
	grace = t / 5 < GRACE_MAX_MS ? t / 5 : GRACE_MAX_MS;
	snprintf(dl, sizeof(dl), "%llu", (unsigned long long)(t - 2 * grace));
	snprintf(gr, sizeof(gr), "%llu", (unsigned long long)grace);
	/* The lines the client passes on: room is left under the output cap
	 * for the cell's end, which must reach the host. */
	cap = c->s->policy->limit[SBX_LIMIT_OUTPUT];
	snprintf(lim, sizeof(lim), "%lld",
		 (long long)(cap > 2 * RESERVE ? cap - RESERVE : cap / 2));
	rc = env_names(names, sizeof(names), opts ? opts->secrets : NULL);
	if (rc < 0)
		return rc;
	res = calloc(1, sizeof(*res));
	if (!res)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	res->version = 1;
	res->status = SBX_CODE_ERROR;
	sbx__interp_parser_init(&p, res, (uint64_t)c->s->policy->limit[SBX_LIMIT_OUTPUT],
				&c->s->redact);
	p.cb = opts ? opts->on_output : NULL;
	p.payload = opts ? opts->payload : NULL;
	ro.stdin_data = code;
	ro.stdin_len = code_len;
	ro.timeout_ms = t;
	ro.on_output = cell_output;
	ro.payload = &p;
	ro.secrets = opts ? opts->secrets : NULL;
	rc = sbx__sandbox_run_kind(&r, c->s, argv, &ro, SBX_TIMEOUT_RUN_CODE, "run_code", c->lang);
	if (rc == 0) {
		struct sbx__redact_scope *prev = sbx__redact_scope_enter(&c->s->redact);
		rc = sbx__interp_finish(&p) < 0
			     ? sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory")
			     : 0;
		sbx__redact_scope_leave(prev);
	}
	if (rc == 0 && r->stdout_truncated)
		res->truncated = 1;
	if (rc == 0 && (p.dead || !p.saw_end || r->status != SBX_RUN_EXITED)) {
		/* The context was lost: a new one takes its name. */
		int k = signal_context(c, "KILL");
		if (k < 0 && k != SBX_ENOTFOUND)
			rc = k;
		else if ((rc = spawn(c)) == 0)
			rc = wait_started(c);
		res->status = SBX_CODE_RESTARTED;
	} else if (rc == 0 && p.deadline && res->status == SBX_CODE_INTERRUPTED) {
		res->status = SBX_CODE_TIMEOUT;
	}
	sbx_result_free(r);
	sbx__interp_parser_done(&p);
	if (rc < 0) {
		sbx_code_result_free(res);
		return rc;
	}
	res->duration_ms = sbx__mono_ms() - start;
	*out = res;
	return 0;
}

int sbx_context_interrupt(sbx_context *c)
{
	sbx__error_clear();
	if (!c)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "context: NULL argument");
	return signal_context(c, "INT");
}

int sbx_context_restart(sbx_context *c)
{
	int rc;

	sbx__error_clear();
	if (!c)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "context: NULL argument");
	rc = signal_context(c, "KILL");
	if (rc < 0 && rc != SBX_ENOTFOUND)
		return rc;
	sbx__error_clear();
	rc = spawn(c);
	return rc < 0 ? rc : wait_started(c);
}

int sbx_context_close(sbx_context *c)
{
	int rc;

	sbx__error_clear();
	if (!c)
		return 0;
	rc = signal_context(c, "KILL");
	sbx_context_free(c);
	return rc;
}

void sbx_context_free(sbx_context *c)
{
	if (!c)
		return;
	free(c->cwd);
	free(c);
}

struct list_arg {
	sbx_context_list_cb cb;
	void *payload;
};

static int list_fn(const char *name, const char *lang, const char *cwd, void *arg)
{
	struct list_arg *l = arg;

	(void)cwd;
	return l->cb(name, lang, l->payload) != 0;
}

int sbx_context_list(sbx_sandbox *s, sbx_context_list_cb cb, void *payload)
{
	struct list_arg l = {.cb = cb, .payload = payload};

	sbx__error_clear();
	if (!s || !cb)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "context list: NULL argument");
	if (!s->backend->ops->spawn)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "backend %s has no code contexts", s->backend->ops->name);
	return each_context(s, list_fn, &l);
}
