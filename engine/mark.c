/*
 * engine/mark.c: which engine a sandbox's host-side pieces belong to.
 *
 * A host may run more than one engine (dockerd beside a Podman service, or
 * two dockerds), and the sandboxes of each leave pieces in the same
 * host-wide places: egress links and nftables tables (netpolicy/) and disks
 * (engine/disk.c). A sweep removes the pieces of a sandbox that its Engine
 * says is gone, and to one engine every other engine's sandbox is gone too:
 * a `sandboxio --socket <podman> reap` took the links and disks of dockerd's
 * live sandboxes. So before it makes any such piece, a create writes
 * SBX_RUN_DIR/engines/<session> holding the canonical path of its Engine's
 * socket, and a sweep leaves alone every session that another engine
 * marked. A session with no mark (made by an earlier version) is asked of
 * the sweep's Engine, as before. The mark goes last, after the pieces.
 *
 * The file is compared as a whole with this engine's path (at most
 * PATH_MAX bytes are read): nothing in it is parsed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <sandboxio/errors.h>

#include "engine/docker-int.h"
#include "util/error-int.h"

#define MARK_DIR SBX_RUN_DIR "/engines"

/* The engine's identity: its socket's canonical path (so /var/run and
 * /run name one dockerd). */
static int engine_id(const char *sock, char out[PATH_MAX])
{
	if (!realpath(sock, out))
		snprintf(out, PATH_MAX, "%s", sock);
	return 0;
}

int sbx__mark_engine(const char *session, const char *sock)
{
	char path[128], id[PATH_MAX];
	size_t n;
	int fd;

	if (!sbx__disk_session_ok(session))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE, "mark: bad session %s",
				      session);
	engine_id(sock, id);
	n = strlen(id);
	if ((mkdir(SBX_RUN_DIR, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(MARK_DIR, 0700) < 0 && errno != EEXIST))
		return sbx__error_os(SBX_ERROR, errno, "create %s", MARK_DIR);
	snprintf(path, sizeof(path), MARK_DIR "/%s", session);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx__error_os(SBX_ERROR, errno, "create %s", path);
	if (write(fd, id, n) != (ssize_t)n) {
		int e = errno ?: EIO;

		close(fd);
		unlink(path);
		return sbx__error_os(SBX_ERROR, e, "write %s", path);
	}
	close(fd);
	return 0;
}

int sbx__mark_other(const char *session, const char *sock)
{
	char path[128], id[PATH_MAX], got[PATH_MAX + 1];
	ssize_t n;
	int fd;

	if (!sbx__disk_session_ok(session))
		return 0;
	snprintf(path, sizeof(path), MARK_DIR "/%s", session);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no mark: asked of this engine, as before */
	n = read(fd, got, sizeof(got));
	close(fd);
	if (n < 0)
		return 1; /* in doubt, keep it */
	engine_id(sock, id);
	return (size_t)n != strlen(id) || memcmp(got, id, (size_t)n) != 0;
}

void sbx__mark_remove(const char *session)
{
	char path[128];

	if (!sbx__disk_session_ok(session))
		return;
	snprintf(path, sizeof(path), MARK_DIR "/%s", session);
	(void)unlink(path);
}

int sbx__mark_sweep(int (*alive)(const char *session, void *payload),
		    void *payload,
		    const char *sock)
{
	DIR *d = opendir(MARK_DIR);
	struct dirent *e;
	int removed = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!sbx__disk_session_ok(e->d_name) || sbx__mark_other(e->d_name, sock))
			continue;
		if (alive(e->d_name, payload) != 0)
			continue;
		sbx__mark_remove(e->d_name);
		removed++;
	}
	closedir(d);
	return removed;
}
