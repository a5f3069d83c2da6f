/*
 * engine/uid.c: one uid per live sandbox. A sandbox's processes run as a
 * host uid of their own, from SBX_UID_BASE on (docker-int.h), never one that
 * another live sandbox of this Engine holds nor one that /etc/subuid or
 * /etc/subgid gives out. The choice is made under a lock (an abstract unix
 * socket's name, held by every process of this host that creates) from the
 * uids the Engine's containers carry, and kept until the container exists.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <sandboxio.h>

#include "engine/docker-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/time.h"

/*
 * Whether a subordinate-id file (name:start:count per line) gives out id.
 * Written by hand: shadow's libsubid is not packaged for linking here, and
 * the format is three fields; a line that does not parse is skipped.
 */
static int subid_listed(const char *path, unsigned id)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *c = strchr(line, ':');
		unsigned long long start, count;
		char *end;

		if (!c)
			continue;
		errno = 0;
		start = strtoull(c + 1, &end, 10);
		if (errno || *end != ':')
			continue;
		count = strtoull(end + 1, &end, 10);
		if (errno || (*end && *end != '\n'))
			continue;
		found = id >= start && id - start < count;
	}
	fclose(f);
	return found;
}

int sbx__uid_host_taken(unsigned uid, const char *subuid_path, const char *subgid_path)
{
	return getpwuid((uid_t)uid) != NULL || getgrgid((gid_t)uid) != NULL ||
	       subid_listed(subuid_path, uid) || subid_listed(subgid_path, uid);
}

/*
 * Takes the host-wide lock under which a uid is chosen and the container
 * that carries it in a label is created; returns the fd that holds it.
 *
 * The lock is a bound name in the abstract unix socket namespace, not a
 * file: any caller of the Engine, root or a user of the docker group, can
 * take it without a directory of its own, and the kernel releases it when
 * the holder's process ends however it ends. Threads and processes alike
 * wait for it. It is shared within one network namespace: creators in
 * different ones do not exclude each other (docs/threat-model.md).
 */
int sbx__uid_lock(uint64_t deadline)
{
	static const char name[] = "\0sandboxio/uid-allocation";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof(name) - 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned wait_us = 1000;

	if (fd < 0)
		return sbx__error_os(SBX_ERROR, errno, "socket for the uid lock");
	memcpy(sa.sun_path, name, sizeof(name) - 1);
	while (bind(fd, (struct sockaddr *)&sa, len) < 0) {
		int e = errno;

		if (e != EADDRINUSE) {
			close(fd);
			return sbx__error_os(SBX_ERROR, e, "take the uid lock");
		}
		if (sbx__mono_ms() >= deadline) {
			close(fd);
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_ENGINE,
					      "create: the create deadline passed while waiting "
					      "for another create to choose its uid");
		}
		usleep(wait_us);
		if (wait_us < 32000)
			wait_us *= 2;
	}
	return fd;
}

/* Chooses a uid that no container of ours carries and the host does not use.
 * Call under sbx__uid_lock(). */
int sbx__uid_pick(struct sbx__docker *d, unsigned *out)
{
	_cleanup_json_ json_t *list = NULL;
	_sbx_cleanup_free_ unsigned char *used = calloc(SBX_UID_COUNT / 8, 1);
	json_t *c;
	size_t i;
	int rc;

	if (!used)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	rc = sbx__docker_list_ours(d, NULL, 0, &list);
	if (rc < 0)
		return sbx__error_wrap("list the sandboxes' uids");
	json_array_foreach(list, i, c)
	{
		const char *v = json_string_value(
			json_object_get(json_object_get(c, "Labels"), SBX_LABEL_UID));
		unsigned long u;
		char *end;

		if (!v)
			continue;
		errno = 0;
		u = strtoul(v, &end, 10);
		if (errno || *end || u < SBX_UID_BASE || u - SBX_UID_BASE >= SBX_UID_COUNT)
			continue;
		used[(u - SBX_UID_BASE) / 8] |= (unsigned char)(1u << ((u - SBX_UID_BASE) % 8));
	}
	for (unsigned n = 0; n < SBX_UID_COUNT; n++) {
		if (used[n / 8] & (1u << (n % 8)))
			continue;
		if (sbx__uid_host_taken(SBX_UID_BASE + n, "/etc/subuid", "/etc/subgid"))
			continue;
		*out = SBX_UID_BASE + n;
		return 0;
	}
	return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
			      "every sandbox uid (%u to %u) is in use", SBX_UID_BASE,
			      SBX_UID_BASE + SBX_UID_COUNT - 1);
}
