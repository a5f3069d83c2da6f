/*
 * core/sandbox-int.h: the backend and sandbox handles (core/sandbox.c owns
 * them; core/interp.c reads them), what core/pool.c needs of core/sandbox.c, and the
 * opening of a backend handle that backends/registry.c calls once it has
 * found the backend by name.
 */
#ifndef SBX_CORE_SANDBOX_INT_H
#define SBX_CORE_SANDBOX_INT_H

#include <sandboxio/sandbox.h>

#include "core/trace-int.h"
#include "util/redact-int.h"

struct sbx__backend_ops;
struct sbx__span_sink;

struct sbx_backend {
	const struct sbx__backend_ops *ops;
	void *state;
	sbx_config *config;	    /* the operator config (a reference); NULL: built-in */
	struct sbx__audit *audit;   /* NULL: no audit events */
	struct sbx__tracer *tracer; /* NULL: no spans */
};

struct sbx_sandbox {
	sbx_backend *backend;
	void *box;
	char *id;
	sbx_tier tier;
	sbx_policy *policy;
	int ended;	       /* an sbx__ended: how a run ended the sandbox, if one did */
	uint64_t deadline_ns;  /* when the sandbox ends by itself; 0: unknown */
	struct sbx__span span; /* the sandbox's life, parent of its operations' spans */
	/* The secrets its runs were given: its records are redacted with these
	 * and the process's own values, and with no other sandbox's. */
	struct sbx__redact_scope redact;
};

/* Whether s is paused (core/pause.c): its runs are refused with SBX_EPAUSED. */
int sbx__sandbox_paused(sbx_sandbox *s);

/* sbx_sandbox_run() recorded as what (with language, or NULL), its deadline
 * bounded by the policy's timeout of kind (core/interp.c runs cells so). */
int sbx__sandbox_run_kind(sbx_result **out,
			  sbx_sandbox *s,
			  const char *const *argv,
			  const sbx_run_options *opts,
			  sbx_timeout_kind kind,
			  const char *what,
			  const char *language);

/* sbx_backend_open() once the name is found: ops is the backend, spans the
 * exporter its tracer hands spans to (NULL: none). out is not NULL and
 * opts, when given, of a known version. */
int sbx__backend_open(sbx_backend **out,
		      const struct sbx__backend_ops *ops,
		      const sbx_backend_options *opts,
		      const struct sbx__span_sink *spans);

/* The policy p merged with b's operator config and checked by b, as a create
 * would do it; nothing is created. *out is the merged copy. */
int sbx__sandbox_prepare(sbx_policy **out, sbx_backend *b, const sbx_policy *p);

/* sbx_sandbox_create(), with the sandbox labelled as made by pool pool_id. */
int sbx__sandbox_create_pooled(sbx_sandbox **out,
			       sbx_backend *b,
			       const sbx_policy *p,
			       const char *pool_id);

#endif
