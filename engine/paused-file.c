/*
 * engine/paused-file.c: where the record of a paused sandbox lives,
 * SBX_PAUSED_DIR/<container id> (its line: engine/paused.c): read by the
 * reaper and by removal (engine/call.c), written by pause and resume
 * (engine/pause.c), swept with the sandboxes that are gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio/errors.h>

#include "engine/docker-int.h"
#include "util/error-int.h"

/* Whether id is a container id the Engine gives (64 hex digits): the only
 * names that become paths here. */
static int id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n != 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

int sbx__paused_read(const char *id, struct sbx__paused *out)
{
	char path[sizeof(SBX_PAUSED_DIR) + 80], buf[SBX_PAUSED_LINE_MAX + 1];
	ssize_t n;
	int fd;

	if (!id_ok(id))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", SBX_PAUSED_DIR, id);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n > SBX_PAUSED_LINE_MAX)
		return -1;
	return sbx__paused_parse(out, buf, (size_t)n) == 0 ? 1 : -1;
}

void sbx__paused_remove(const char *id)
{
	char path[sizeof(SBX_PAUSED_DIR) + 80];

	if (!id_ok(id))
		return;
	snprintf(path, sizeof(path), "%s/%s", SBX_PAUSED_DIR, id);
	(void)unlink(path);
}

/* Writes id's record atomically (a 0644 file renamed over the old one).
 * The folder is root's, 0755, and the record holds only times: a reaper
 * that is not root reads it too, and judges a paused sandbox by it rather
 * than skipping every sandbox for a record it cannot read. */
int sbx__paused_write(const char *id, const struct sbx__paused *r)
{
	char path[sizeof(SBX_PAUSED_DIR) + 80], tmp[sizeof(path) + 8], line[SBX_PAUSED_LINE_MAX];
	int n = sbx__paused_format(line, sizeof(line), r), fd, ok;

	if (n < 0 || !id_ok(id))
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_ENGINE, "pause: bad record");
	if ((mkdir(SBX_RUN_DIR, 0755) != 0 && errno != EEXIST) ||
	    (mkdir(SBX_PAUSED_DIR, 0755) != 0 && errno != EEXIST) ||
	    chmod(SBX_PAUSED_DIR, 0755) != 0)
		return sbx__error_os(SBX_EDENIED, errno, "pause: cannot make %s", SBX_PAUSED_DIR);
	snprintf(path, sizeof(path), "%s/%s", SBX_PAUSED_DIR, id);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return sbx__error_os(SBX_EDENIED, errno, "pause: cannot write %s", tmp);
	ok = write(fd, line, (size_t)n) == n && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		int e = errno;

		(void)unlink(tmp);
		return sbx__error_os(SBX_EDENIED, e, "pause: cannot write %s", path);
	}
	return 0;
}

void sbx__paused_sweep(int (*alive)(const char *session, void *payload), void *payload)
{
	DIR *dir = opendir(SBX_PAUSED_DIR);
	struct dirent *e;

	if (!dir)
		return;
	while ((e = readdir(dir)) != NULL) {
		struct sbx__paused r;

		if (!id_ok(e->d_name))
			continue;
		/* Another engine's sweep finds every container of this one gone
		 * (engine/mark.c): a record whose time has not come is kept, so
		 * that its sandbox is never judged by its label before then. */
		if (sbx__paused_read(e->d_name, &r) == 1 &&
		    sbx__paused_reap_at(&r) > (uint64_t)time(NULL))
			continue;
		if (alive(e->d_name, payload) == 0)
			sbx__paused_remove(e->d_name);
	}
	closedir(dir);
}
