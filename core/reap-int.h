/*
 * core/reap-int.h: the reaper, once for every backend (core/reap.c).
 */
#ifndef SBX_CORE_REAP_INT_H
#define SBX_CORE_REAP_INT_H

#include <sandboxio/sandbox.h>

#include "core/backend-int.h"

/*
 * Lists the backend's sandboxes (ops->reap_list), judges each, removes the
 * condemned unless dry_run (ops->reap_remove) and tells cb (may be NULL)
 * about each condemned or skipped one, in the order listed; cb returning
 * non-zero stops. Then, unless dry_run, ops->reap_sweep. Returns the
 * number removed (or, in a dry run, that would be), or the listing's error.
 */
int sbx__reap(const struct sbx__backend_ops *ops,
	      void *state,
	      const char *tenant,
	      int dry_run,
	      int only_local,
	      sbx_reap_cb cb,
	      void *payload);

/* The judgement of one listed sandbox (core/owner.c): an sbx_reap_reason,
 * or 0 to leave it; *why is set for SBX_REAP_SKIPPED. */
int sbx__reap_judge(const struct sbx__reap_item *item, const char **why);

#endif
