/*
 * engine/reap.c: the docker backend's halves of the reaper, whose loop is
 * core's (core/reap.c): the containers labelled managed-by=sandboxio, each
 * with the owner its labels record (with the PID namespace that made it,
 * owner-pidns: another namespace's owner is left to its deadline, and a
 * sandbox without the label is skipped), and the removal of one with its
 * link's rules and its disk; then the sweep of what sandboxes that are gone
 * left on the host.
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

/* Whether the sandbox named session still exists (for the netpolicy sweep). */
static int session_alive(const char *session, void *payload)
{
	char path[128];
	long status = 0;
	int rc;

	/* Another engine's sandbox is not this one's to judge. */
	if (sbx__mark_other(session, ((struct sbx__docker *)payload)->http.sock))
		return 1;
	snprintf(path, sizeof(path), "/containers/%s/json", session);
	rc = sbx__docker_call(payload, "GET", path, NULL, 0, &status, NULL);
	sbx__error_clear();
	return rc == 0 ? 1 : rc == SBX_ENOTFOUND ? 0 : -1;
}

/* The extra_flags of a container's item: what its removal takes with it. */
#define REAP_VETH 1u /* a netpolicy link, whose rules go */
#define REAP_DISK 2u /* a disk */

int sbx__docker_reap_list(
	void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg)
{
	struct sbx__docker *d = state;
	_cleanup_json_ json_t *list = NULL;
	struct sbx__owner self = {0};
	json_t *c;
	size_t i;
	int rc;

	rc = sbx__docker_list_ours(d, tenant, only_local, &list);
	if (rc < 0)
		return sbx__error_wrap("reap: list sandboxes");
	snprintf(self.host, sizeof(self.host), "%s", d->hostname);
	snprintf(self.boot, sizeof(self.boot), "%s", d->boot_id);
	self.pidns = sbx__owner_pidns();
	json_array_foreach(list, i, c)
	{
		json_t *labels = json_object_get(c, "Labels");
		const char *id = json_string_value(json_object_get(c, "Id"));
		struct sbx__reap_item item;
		struct sbx__paused pr;
		char when[24];
		int prc;

		/* The list was filtered by the Engine; check again, it costs nothing. */
		if (!id || !sbx__label_is(labels, SBX_LABEL_MANAGED, SBX_LABEL_MANAGED_VALUE))
			continue;
#define LABEL(k) json_string_value(json_object_get(labels, SBX_LABEL_PREFIX k))
		item = (struct sbx__reap_item){
			.id = id,
			.tenant = LABEL("tenant"),
			.self = &self,
			.deadline = LABEL("deadline"),
			.host = LABEL("owner-host"),
			.boot = LABEL("owner-boot"),
			.pid = LABEL("owner-pid"),
			.start = LABEL("owner-start"),
			.has_pidns = 1,
			.pidns = LABEL("owner-pidns"),
			.extra = LABEL("session"),
			.extra_flags =
				(sbx__label_is(labels, SBX_LABEL_PREFIX "netpolicy", "veth")
					 ? REAP_VETH
					 : 0) |
				(sbx__label_is(labels, SBX_LABEL_DISK, "ext4") ? REAP_DISK : 0),
		};
#undef LABEL
		/* A paused or resumed sandbox is judged by its record (its
		 * bound, or its moved deadline), never by its label; a record
		 * that cannot be read leaves it to a skip. */
		prc = sbx__paused_read(id, &pr);
		if (prc > 0) {
			snprintf(when, sizeof(when), "%llu",
				 (unsigned long long)sbx__paused_reap_at(&pr));
			item.deadline = when;
		} else if (prc < 0) {
			item.deadline = NULL;
		}
		rc = fn(arg, &item);
		if (rc == SBX_ENOMEM) {
			sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
			return sbx__error_wrap("reap: list sandboxes");
		}
		if (rc != 0)
			break;
	}
	return 0;
}

int sbx__docker_reap_remove(void *state, const struct sbx__reap_item *item)
{
	const char *session = item->extra;
	int rc = sbx__docker_remove(state, item->id);

	if (rc != 0)
		return rc;
	/* Its link went with it; its rules go now. */
	if ((item->extra_flags & REAP_VETH) && sbx__netpolicy_detach(session) < 0)
		sbx__error_clear();
	/* A removed sandbox's disk goes with it. */
	if (session && (item->extra_flags & REAP_DISK) && sbx__disk_remove(session) < 0)
		sbx__error_clear();
	/* Podman's profile file (engine/podman.c), before the mark. */
	if (session && ((struct sbx__docker *)state)->podman)
		sbx__podman_seccomp_remove(session);
	if (session)
		sbx__mark_remove(session);
	return 0;
}

void sbx__docker_reap_sweep(void *state)
{
	/* What sandboxes that are gone left on the host (links, rules). */
	if (sbx__netpolicy_sweep(session_alive, state) < 0)
		sbx__error_clear();
	/* Disks of sandboxes that are gone (ended at their deadline, or their
	 * creator died between making the disk and the container's removal). */
	(void)sbx__disk_sweep(session_alive, state);
	/* Records of paused sandboxes that are gone. */
	sbx__paused_sweep(session_alive, state);
	/* Podman's profile files (engine/podman.c) of sessions that are gone,
	 * under the uid lock, which a create holds from writing its file until
	 * its container exists. */
	if (((struct sbx__docker *)state)->podman) {
		int lock = sbx__uid_lock(sbx__mono_ms() + 10000);

		if (lock >= 0) {
			(void)sbx__podman_sweep(session_alive, state);
			close(lock);
		}
		sbx__error_clear();
	}
	/* Last: the marks of this engine's sessions that are gone. */
	(void)sbx__mark_sweep(session_alive, state, ((struct sbx__docker *)state)->http.sock);
}
