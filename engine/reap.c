/*
 * engine/reap.c: the reaper. Finds this library's sandboxes that nobody
 * will close and removes them.
 *
 * Only containers labelled managed-by=sandboxio are considered, and a
 * container is removed only for a reason its labels prove: its deadline is
 * in the past, or its owner process is gone. "Gone" is judged on the host
 * and boot that made it, in the PID namespace that made it (recorded as
 * owner-pidns; another namespace's owner is left to its deadline, and a
 * sandbox without the label is skipped): the owner's pid must be absent,
 * or present with a different start time (a reused pid is not the owner). A detached sandbox
 * (owner pid 0) has no owner and waits for its deadline. A label that
 * cannot be parsed makes the container a skip, reported, never a removal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

#include "core/owner-int.h"
#include "engine/docker-int.h"
#include "netpolicy/netpolicy-int.h"
#include "util/error-int.h"

/* Decides one container. Returns a reason, or 0 to leave it. */
static sbx_reap_reason judge(struct docker *d, json_t *labels, const char **why)
{
	struct sbx__owner self = {0};

#define LABEL(k) json_string_value(json_object_get(labels, SBX_LABEL_PREFIX k))
	snprintf(self.host, sizeof(self.host), "%s", d->hostname);
	snprintf(self.boot, sizeof(self.boot), "%s", d->boot_id);
	self.pidns = sbx__owner_pidns();
	return (sbx_reap_reason)sbx__owner_judge_ns(
		&self, LABEL("deadline"), LABEL("owner-host"), LABEL("owner-boot"),
		LABEL("owner-pid"), LABEL("owner-start"), LABEL("owner-pidns"), why);
#undef LABEL
}

/* Whether the sandbox named session still exists (for the netpolicy sweep). */
static int session_alive(const char *session, void *payload)
{
	char path[128];
	long status = 0;
	int rc;

	snprintf(path, sizeof(path), "/containers/%s/json", session);
	rc = sbx__docker_call(payload, "GET", path, NULL, 0, &status, NULL);
	sbx__error_clear();
	return rc == 0 ? 1 : rc == SBX_ENOTFOUND ? 0 : -1;
}

/* A removed sandbox's disk goes with it. */
static void reap_disk(json_t *labels)
{
	const char *session =
		json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "session"));

	if (session && sbx__label_is(labels, SBX_LABEL_DISK, "ext4") &&
	    sbx__disk_remove(session) < 0)
		sbx__error_clear();
}

int sbx__docker_reap(struct docker *d,
		     const char *tenant,
		     int dry_run,
		     int only_local,
		     sbx_reap_cb cb,
		     void *payload)
{
	_cleanup_json_ json_t *list = NULL;
	json_t *c;
	size_t i;
	int rc, count = 0;

	rc = sbx__docker_list_ours(d, tenant, only_local, &list);
	if (rc < 0)
		return sbx__error_wrap("reap: list sandboxes");
	json_array_foreach(list, i, c)
	{
		json_t *labels = json_object_get(c, "Labels");
		const char *id = json_string_value(json_object_get(c, "Id"));
		const char *why = "";
		char detail[SBX_ERROR_MSG_MAX] = "";
		sbx_reap_info info;
		sbx_reap_reason reason;

		/* The list was filtered by the Engine; check again, it costs nothing. */
		if (!id || !sbx__label_is(labels, SBX_LABEL_MANAGED, SBX_LABEL_MANAGED_VALUE))
			continue;
		reason = judge(d, labels, &why);
		if (!reason)
			continue;
		info = (sbx_reap_info){
			.id = id,
			.tenant = json_string_value(
					  json_object_get(labels, SBX_LABEL_PREFIX "tenant"))
					  ?: "",
			.reason = reason,
			.detail = why,
		};
		if (reason != SBX_REAP_SKIPPED && !dry_run) {
			if (sbx__docker_remove(d, id) == 0) {
				/* Its link went with it; its rules go now. */
				if (sbx__label_is(labels, SBX_LABEL_PREFIX "netpolicy", "veth") &&
				    sbx__netpolicy_detach(json_string_value(json_object_get(
					    labels, SBX_LABEL_PREFIX "session"))) < 0)
					sbx__error_clear();
				reap_disk(labels);
				info.removed = 1;
				count++;
			} else {
				snprintf(detail, sizeof(detail), "%s", sbx_error_last()->message);
				info.detail = detail;
				sbx__error_clear();
			}
		} else if (reason != SBX_REAP_SKIPPED) {
			count++;
		}
		if (cb && cb(&info, payload) != 0)
			break;
	}
	/* What sandboxes that are gone left on the host (links, rules). */
	if (!dry_run && sbx__netpolicy_sweep(session_alive, d) < 0)
		sbx__error_clear();
	/* Disks of sandboxes that are gone (ended at their deadline, or their
	 * creator died between making the disk and the container's removal). */
	if (!dry_run)
		(void)sbx__disk_sweep(session_alive, d);
	return count;
}
