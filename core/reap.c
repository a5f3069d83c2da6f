/*
 * core/reap.c: the reaper, once for every backend. Finds this library's
 * sandboxes that nobody will close and removes them.
 *
 * A backend lists what is ours (reap_list: labels, metadata or tags
 * managed-by=sandboxio, of one tenant, or this host's only), one sandbox at
 * a time with the owner facts recorded with it, and core judges each with
 * core/owner.c: a sandbox is removed only for a reason its facts prove,
 * its deadline in the past or its owner process gone (judged on the host
 * and boot that made it, and, where the backend records it, in the PID
 * namespace that made it). A detached sandbox (owner pid 0) waits for its
 * deadline; a fact that cannot be read makes the sandbox a skip, reported,
 * never a removal. The whole list is judged first (removing changes what a
 * later page of a listing holds), then each condemned one is removed
 * (reap_remove) and reported, and the backend sweeps what removed
 * sandboxes left (reap_sweep).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/owner-int.h"
#include "core/reap-int.h"
#include "util/error-int.h"

int sbx__reap_judge(const struct sbx__reap_item *item, const char **why)
{
	if (item->has_pidns)
		return sbx__owner_judge_ns(item->self, item->deadline, item->host, item->boot,
					   item->pid, item->start, item->pidns, why);
	return sbx__owner_judge(item->self, item->deadline, item->host, item->boot, item->pid,
				item->start, why);
}

/* One condemned (or skipped) sandbox, kept past the listing. */
struct condemned {
	struct sbx__reap_item item; /* id, tenant, extra and extra_flags, owned */
	sbx_reap_reason reason;
	const char *why;
};

struct collect {
	struct condemned *v;
	size_t n, cap, max;
};

static void condemned_free(struct condemned *c)
{
	free((char *)c->item.id);
	free((char *)c->item.tenant);
	free((char *)c->item.extra);
}

/* Judges each listed sandbox; the condemned are kept for after the listing. */
static int collect_one(void *arg, const struct sbx__reap_item *item)
{
	struct collect *co = arg;
	struct condemned *c;
	const char *why = "";
	int reason;

	reason = sbx__reap_judge(item, &why);
	if (!reason)
		return 0;
	if (co->n == co->cap) {
		size_t cap = co->cap ? co->cap * 2 : 16;
		struct condemned *v;

		if (co->max && cap > co->max)
			return 1;
		v = realloc(co->v, cap * sizeof(*v));
		if (!v)
			return SBX_ENOMEM;
		co->v = v;
		co->cap = cap;
	}
	c = &co->v[co->n];
	*c = (struct condemned){
		.item =
			{
				.id = strdup(item->id),
				.tenant = strdup(item->tenant ? item->tenant : ""),
				.extra = item->extra ? strdup(item->extra) : NULL,
				.extra_flags = item->extra_flags,
			},
		.reason = (sbx_reap_reason)reason,
		.why = why,
	};
	if (!c->item.id || !c->item.tenant || (item->extra && !c->item.extra)) {
		condemned_free(c);
		return SBX_ENOMEM;
	}
	co->n++;
	return 0;
}

int sbx__reap(const struct sbx__backend_ops *ops,
	      void *state,
	      const char *tenant,
	      int dry_run,
	      int only_local,
	      sbx_reap_cb cb,
	      void *payload)
{
	struct collect co = {.max = ops->reap_max};
	int rc, count = 0;

	rc = ops->reap_list(state, tenant, only_local, collect_one, &co);
	if (rc < 0) {
		for (size_t i = 0; i < co.n; i++)
			condemned_free(&co.v[i]);
		free(co.v);
		return rc;
	}
	for (size_t i = 0; i < co.n; i++) {
		struct condemned *c = &co.v[i];
		char detail[SBX_ERROR_MSG_MAX] = "";
		sbx_reap_info info = {
			.id = c->item.id,
			.tenant = c->item.tenant,
			.reason = c->reason,
			.detail = c->why,
		};

		if (c->reason != SBX_REAP_SKIPPED && !dry_run) {
			if (ops->reap_remove(state, &c->item) == 0) {
				info.removed = 1;
				count++;
			} else {
				snprintf(detail, sizeof(detail), "%s", sbx_error_last()->message);
				info.detail = detail;
				sbx__error_clear();
			}
		} else if (c->reason != SBX_REAP_SKIPPED) {
			count++;
		}
		if (cb && cb(&info, payload) != 0)
			break;
	}
	for (size_t i = 0; i < co.n; i++)
		condemned_free(&co.v[i]);
	free(co.v);
	if (!dry_run && ops->reap_sweep)
		ops->reap_sweep(state);
	return count;
}
