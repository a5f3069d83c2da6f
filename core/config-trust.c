/*
 * core/config-trust.c: finding the config file and trusting it. A file that
 * someone other than root or the caller could write is refused, as ssh
 * refuses such key files: whoever can write it could widen every sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sandboxio/config.h>

#include "core/config-impl.h"
#include "core/config-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

/* ===== Loading ===== */

/*
 * ssh's rule: owned by root or by me, and writable by nobody else. A
 * directory writable by others is accepted only with the sticky bit (as
 * /tmp): there no one else may rename or remove an entry we own. The
 * system config passes me = 0: root only.
 */
static int
check_owner_mode(const char *cfg, const char *what, const char *path, struct stat *st, uid_t me)
{
	if (st->st_uid != 0 && st->st_uid != me)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
				      "config %s: refused: %s %s is owned by uid %u, %s; its "
				      "owner could widen every sandbox",
				      cfg, what, path, (unsigned)st->st_uid,
				      me ? "neither root nor the caller" : "not root");
	if ((st->st_mode & 022) && !(S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
				      "config %s: refused: %s %s is writable by %s (mode %04o); "
				      "anyone who can write it could widen every sandbox: chmod "
				      "go-w %s",
				      cfg, what, path,
				      (st->st_mode & 020) && (st->st_mode & 002)
					      ? "group and others"
				      : (st->st_mode & 020) ? "its group"
							    : "others",
				      (unsigned)(st->st_mode & 07777), path);
	return 0;
}

/* Checks every directory above real (an absolute path without symlinks). */
static int check_dirs(const char *cfg, const char *real, uid_t me)
{
	_sbx_cleanup_free_ char *dir = strdup(real);
	struct stat st;
	char *slash;
	int rc;

	if (!dir)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	for (;;) {
		slash = strrchr(dir, '/');
		if (!slash)
			return 0;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (lstat(dir, &st) < 0)
			return sbx__error_os(SBX_EDENIED, errno, "config %s: cannot check %s", cfg,
					     dir);
		if (!S_ISDIR(st.st_mode))
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
					      "config %s: refused: %s is not a directory", cfg,
					      dir);
		rc = check_owner_mode(cfg, "directory", dir, &st, me);
		if (rc < 0)
			return rc;
		if (strcmp(dir, "/") == 0)
			return 0;
	}
}

#define SBX__CONFIG_NOT_FOUND 1

/*
 * Loads path, which must be owned by root or me. A missing file is
 * SBX_ENOTFOUND when required, else SBX__CONFIG_NOT_FOUND. whole: as sbx__config_parse_text().
 */
int sbx__config_load_file(
	sbx_config **out, const char *path, int required, const char *named_by, uid_t me, int whole)
{
	_sbx_cleanup_free_ char *real = NULL, *buf = NULL;
	_sbx_cleanup_close_ int fd = -1;
	struct stat st;
	size_t n = 0;
	ssize_t r;
	int rc;

	real = realpath(path, NULL);
	if (!real) {
		int e = errno;

		if ((e == ENOENT || e == ENOTDIR) && !required)
			return SBX__CONFIG_NOT_FOUND;
		if (e == ENOENT || e == ENOTDIR)
			return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_POLICY,
					      "config %s (%s): no such file", path, named_by);
		if (e == ENOMEM)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					      "config: out of memory");
		return sbx__error_os(SBX_EDENIED, e, "config %s (%s)", path, named_by);
	}
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sbx__error_os(SBX_EDENIED, errno, "config %s (%s): cannot open", path,
				     named_by);
	if (fstat(fd, &st) < 0)
		return sbx__error_os(SBX_EDENIED, errno, "config %s: cannot check", path);
	if (!S_ISREG(st.st_mode))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
				      "config %s: refused: not a regular file", path);
	rc = check_owner_mode(path, "file", real, &st, me);
	if (rc == 0)
		rc = check_dirs(path, real, me);
	if (rc < 0)
		return rc;
	if (st.st_size > (off_t)SBX_CONFIG_MAX_BYTES)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_POLICY,
				      "config %s: %lld bytes, more than the %u a config may hold",
				      path, (long long)st.st_size, SBX_CONFIG_MAX_BYTES);
	buf = malloc(SBX_CONFIG_MAX_BYTES + 1);
	if (!buf)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	while (n <= SBX_CONFIG_MAX_BYTES) {
		r = read(fd, buf + n, SBX_CONFIG_MAX_BYTES + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sbx__error_os(SBX_EDENIED, errno, "config %s: cannot read", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return sbx__config_parse_text(out, buf, n, path, whole);
}

int sbx__config_load_search(sbx_config **out, const char *path, const char *system_path)
{
	const char *env;
	sbx_config *c;
	int rc;

	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_load: out is NULL");
	if (path)
		return sbx__config_load_file(out, path, 1, "given explicitly", geteuid(), 1);
	env = secure_getenv(SBX_CONFIG_ENV);
	if (env && *env)
		return sbx__config_load_file(out, env, 1, "named by $" SBX_CONFIG_ENV, geteuid(),
					     1);
	rc = sbx__config_load_file(out, system_path, 0, "the system config", geteuid(), 1);
	if (rc != SBX__CONFIG_NOT_FOUND)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	c->refs = 1;
	*out = c;
	return 0;
}

int sbx_config_load(sbx_config **out, const char *path)
{
	sbx__error_clear();
	return sbx__config_load_search(out, path, SBX_CONFIG_SYSTEM_PATH);
}
