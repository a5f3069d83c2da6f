/*
 * core/audit-int.h: audit events (docs/audit.md), written by core where
 * each operation is closed.
 *
 * Every builder closes its event (common fields, redaction) and writes it
 * before returning; a NULL sink writes nothing and succeeds. On failure a
 * builder returns a negative sbx_error_code and leaves the thread's error
 * record alone, so that the caller decides: an operation that succeeded
 * fails closed (an unaudited run is not handed out), one that had failed
 * keeps its own error. sbx__audit_why() says what went wrong.
 */
#ifndef SBX_CORE_AUDIT_INT_H
#define SBX_CORE_AUDIT_INT_H

#include <sandboxio/sandbox.h>

#include "core/policy-int.h"

struct sbx__audit;

/* Opens a sink: a file (appended to, created 0600) and/or a callback. With
 * neither, *out is NULL. Records an error and returns it on failure. */
int sbx__audit_open(struct sbx__audit **out,
		    const char *path,
		    sbx_audit_cb cb,
		    void *payload,
		    const char *backend);
/*
 * The same, with the sink the operator requires (the system config's
 * audit.path; NULL: none) written first: the caller's path and callback
 * add to it and cannot replace it. The caller's path, when it is the same
 * file, is written once.
 */
int sbx__audit_open_required(struct sbx__audit **out,
			     const char *required,
			     const char *path,
			     sbx_audit_cb cb,
			     void *payload,
			     const char *backend);
void sbx__audit_free(struct sbx__audit *a);
const char *sbx__audit_why(const struct sbx__audit *a);

/* What the events of one operation share. */
struct sbx__audit_ctx {
	const char *sandbox_id; /* NULL before one exists */
	const char *tenant;
	const char *trace_id; /* NULL when not tracing */
	const char *span_id;
};

struct sbx__audit_run {
	const char *run_id;
	const char *kind;     /* "run", "run_code", "write_file", "read_file" */
	const char *language; /* run_code only */
	const char *const *argv;
	const char *workdir;
	uint64_t timeout_ms;
	const char *const *env; /* the run's own plain env; only names are recorded */
	const sbx_secrets *secrets;
	size_t stdin_len;
	int raw_output;
	int as_root; /* as the sandbox's root (sbx_run_options.as_root) */
};

int sbx__audit_create(struct sbx__audit *a,
		      const struct sbx__audit_ctx *c,
		      const sbx_policy *p,
		      sbx_tier tier,
		      int rc,
		      uint64_t duration_ms);
int sbx__audit_open_box(struct sbx__audit *a, const struct sbx__audit_ctx *c, int rc);
int sbx__audit_run_start(struct sbx__audit *a,
			 const struct sbx__audit_ctx *c,
			 const struct sbx__audit_run *r);
int sbx__audit_run_end(struct sbx__audit *a,
		       const struct sbx__audit_ctx *c,
		       const struct sbx__audit_run *r,
		       int rc,
		       const sbx_result *res,
		       uint64_t duration_ms);
/* reason: "closed", "timeout", "killed", "error", "reaped"; rc: the removal's. */
int sbx__audit_destroy(struct sbx__audit *a,
		       const struct sbx__audit_ctx *c,
		       const char *reason,
		       int rc);
int sbx__audit_detach(struct sbx__audit *a, const struct sbx__audit_ctx *c);
/* op: "create", "run", ...; code: SBX_EDENIED or SBX_EUNSUPPORTED. */
int sbx__audit_refused(struct sbx__audit *a,
		       const struct sbx__audit_ctx *c,
		       const char *op,
		       int code);

/* The i-th file (0, 1) the sink writes, the operator's first; NULL past the
 * last. A file named twice is one. */
const char *sbx__audit_file(const struct sbx__audit *a, int i);

/* One connection of a sandbox to a name entry, as its name checker saw it
 * (sbx-egress, cli/egress/). */
struct sbx__audit_egress {
	int allowed;
	const char *reason;  /* refused: no-sni, name, ...; NULL when allowed */
	const char *name;    /* the name presented, when it is an allowed entry's;
				NULL otherwise (never recorded: see docs/audit.md) */
	size_t name_len;     /* the length of the name presented, 0: none */
	const char *address; /* the destination the sandbox named */
	unsigned port;
	uint64_t bytes_up, bytes_down, duration_ms;
};
int sbx__audit_egress(struct sbx__audit *a,
		      const struct sbx__audit_ctx *c,
		      const struct sbx__audit_egress *e);

/* "EDENIED" for SBX_EDENIED, and so on. */
const char *sbx__error_code_name(int code);

#endif
