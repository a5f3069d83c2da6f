/*
 * core/sandbox-int.h: what core/pool.c needs of core/sandbox.c.
 */
#ifndef SBX_CORE_SANDBOX_INT_H
#define SBX_CORE_SANDBOX_INT_H

#include <sandboxio/sandbox.h>

/* The policy p merged with b's operator config and checked by b, as a create
 * would do it; nothing is created. *out is the merged copy. */
int sbx__sandbox_prepare(sbx_policy **out, sbx_backend *b, const sbx_policy *p);

/* sbx_sandbox_create(), with the sandbox labelled as made by pool pool_id. */
int sbx__sandbox_create_pooled(sbx_sandbox **out,
			       sbx_backend *b,
			       const sbx_policy *p,
			       const char *pool_id);

#endif
