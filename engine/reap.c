/*
 * engine/reap.c: the reaper. Finds this library's sandboxes that nobody
 * will close and removes them.
 *
 * Only containers labelled managed-by=sandboxio are considered, and a
 * container is removed only for a reason its labels prove: its deadline is
 * in the past, or its owner process is gone. "Gone" is judged on the host
 * and boot that made it: the owner's pid must be absent, or present with a
 * different start time (a reused pid is not the owner). A detached sandbox
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

#include "engine/docker-int.h"
#include "netpolicy/netpolicy-int.h"
#include "util/error-int.h"

int sbx__proc_start_time(pid_t pid, unsigned long long *out)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p, " %llu", &v) != 1)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_num(const char *s, long long *out)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno || *end || *out < 0 ? -1 : 0;
}

/* Decides one container. Returns a reason, or 0 to leave it. */
static sbx_reap_reason judge(struct docker *d, json_t *labels, const char **why)
{
	const char *host =
		json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "owner-host"));
	const char *boot =
		json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "owner-boot"));
	long long deadline, pid, start;
	unsigned long long now_start;

	if (parse_num(json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "deadline")),
		      &deadline) < 0) {
		*why = "label deadline is missing or not a number";
		return SBX_REAP_SKIPPED;
	}
	if (deadline <= (long long)time(NULL))
		return SBX_REAP_DEADLINE_PASSED;
	if (!host || strcmp(host, d->hostname) != 0)
		return 0; /* another host's: only its deadline can condemn it */
	if (parse_num(json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "owner-pid")),
		      &pid) < 0 ||
	    parse_num(json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "owner-start")),
		      &start) < 0) {
		*why = "label owner-pid or owner-start is missing or not a number";
		return SBX_REAP_SKIPPED;
	}
	if (pid == 0)
		return 0; /* detached: lives until its deadline */
	if (!boot || strcmp(boot, d->boot_id) != 0)
		return SBX_REAP_OWNER_REBOOTED;
	if (pid > 0x7fffffff)
		return SBX_REAP_OWNER_GONE;
	if (sbx__proc_start_time((pid_t)pid, &now_start) < 0)
		return SBX_REAP_OWNER_GONE;
	if (now_start != (unsigned long long)start)
		return SBX_REAP_OWNER_GONE; /* the pid was reused */
	return 0;
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
	return count;
}
