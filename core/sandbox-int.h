/*
 * core/sandbox-int.h: what core/pool.c needs of core/sandbox.c, and the
 * opening of a backend handle that backends/registry.c calls once it has
 * found the backend by name.
 */
#ifndef SBX_CORE_SANDBOX_INT_H
#define SBX_CORE_SANDBOX_INT_H

#include <sandboxio/sandbox.h>

struct sbx__backend_ops;
struct sbx__span_sink;

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
