/*
 * engine/podman.c: where Podman's Docker-compatible API differs from
 * dockerd's, and only that. The docker backend is one backend with two
 * flavours: everything else (the policy's HostConfig, the read-back, the
 * runs, the reaper) is shared.
 *
 * - The flavour is read from /info at open, which the backend asks for
 *   anyway: Podman's adds fields of its own to dockerd's (BuildahVersion,
 *   Rootless); /version, whose components name the "Podman Engine", is
 *   read by `sandboxio doctor` only, since Podman takes some 400 ms to
 *   answer it. /info also says whether it runs rootless and which cgroup
 *   version the host has (Podman 4.3's says rootless in its own "Rootless"
 *   field, not in SecurityOptions as dockerd does; either counts).
 * - The seccomp profile: dockerd takes the profile's JSON in
 *   SecurityOpt "seccomp=<json>", Podman reads what follows "seccomp=" as a
 *   path. So on Podman the profile is written to a file of the sandbox's
 *   own, SBX_RUN_DIR/seccomp/<session>.json (or $XDG_RUNTIME_DIR's when the
 *   caller is not root), created 0600 and owned by the engine's user (the
 *   owner of its socket). It lives as long as its sandbox and is removed on
 *   close, by the reaper with its sandbox, and by the sweep when its sandbox
 *   is gone (the sweep's alive() leaves another engine's sessions alone,
 *   engine/mark.c).
 * - What rootless Podman cannot give is refused before anything is made
 *   (sbx__podman_check): an egress allowlist (the host side of it is a link
 *   and nftables rules in the host's network namespace, which an
 *   unprivileged engine cannot reach), the caps on a cgroup v1 host (rootless
 *   Podman cannot write cgroup v1 limits and would run the sandbox
 *   uncapped), the sandbox's own host uid (SBX_UID_BASE's range is
 *   outside the subordinate ids a rootless engine maps, so with cgroup v2
 *   too a rootless create is refused) and the gvisor tier; and, on a
 *   cgroup v1 host, crun, Podman's
 *   default runtime, which refuses cgroup v1 hierarchies (runc does not).
 * - Podman gives every container RLIMIT_NPROC 1048576 unless the request
 *   names one, which a host without CAP_SYS_RESOURCE cannot set; the
 *   request names the policy's pids cap (engine/docker.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sandboxio.h>

#include "engine/docker-int.h"
#include "util/error-int.h"

int sbx__engine_flavour(struct sbx__docker *d, json_t *info)
{
	json_t *o;
	size_t i;
	struct stat st;

	/* Podman's compatible /info adds its own fields to dockerd's; its
	 * builder's version is one. (Its /version, which names the "Podman
	 * Engine" component, costs some 400 ms: it runs the runtime and
	 * conmon to ask theirs.) */
	d->podman = json_is_string(json_object_get(info, "BuildahVersion"));
	if (!d->podman)
		return 0;
	json_array_foreach(json_object_get(info, "SecurityOptions"), i, o)
	{
		const char *s = json_string_value(o);

		if (s && strcmp(s, "name=rootless") == 0)
			d->rootless = 1;
	}
	if (json_is_true(json_object_get(info, "Rootless")))
		d->rootless = 1;
	d->cgroup_v1 = !json_is_string(json_object_get(info, "CgroupVersion")) ||
		       strcmp(json_string_value(json_object_get(info, "CgroupVersion")), "2") != 0;
	{
		const char *rt = json_string_value(json_object_get(info, "DefaultRuntime"));
		const char *base = rt ? strrchr(rt, '/') : NULL;

		d->crun_v1 = d->cgroup_v1 && rt && strcmp(base ? base + 1 : rt, "crun") == 0;
	}
	/* The profile file is the engine's to read: its socket's owner. */
	if (stat(d->http.sock, &st) < 0)
		return sbx__error_os(SBX_EUNAVAILABLE, errno, "stat %s", d->http.sock);
	d->engine_uid = st.st_uid;
	d->engine_gid = st.st_gid;
	return 0;
}

int sbx__podman_check(const struct sbx__docker *d, const sbx_policy *p)
{
	if (!d->podman)
		return 0;
	if (p->min_tier == SBX_TIER_GVISOR)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "the gvisor tier is not available on Podman: it is measured "
				      "with dockerd's runsc runtimes only (docs/backends.md)");
	if (!d->rootless && d->crun_v1)
		return sbx__error_set(
			SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
			"Podman's runtime is crun, which cannot start containers on "
			"this host's cgroup v1 (hybrid) hierarchy: run Podman with "
			"--runtime runc, or set runtime = \"runc\" in containers.conf");
	if (!d->rootless)
		return 0;
	if (p->allow_n)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "an egress allowlist needs the host's network namespace and "
				      "nftables, and rootless Podman has neither: use a rootful "
				      "engine, or no allowlist (egress then stays denied)");
	if (d->cgroup_v1)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CGROUPS,
				      "rootless Podman cannot set memory, CPU or pids caps on this "
				      "host's cgroup v1 (it would run the sandbox uncapped): it "
				      "needs cgroup v2 with the cpu, memory and pids controllers "
				      "delegated to its user; use a rootful engine here");
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
			      "each sandbox runs as a host uid of its own (from %u), which lies "
			      "outside the ids rootless Podman maps (its user's subordinate "
			      "range): use a rootful engine",
			      SBX_UID_BASE);
}

/* Whether path is a directory (not a link) of this process's user that
 * no one else may write in: else another user could swap the profile
 * between its write and the engine's read ($XDG_RUNTIME_DIR may be /tmp). */
static int dir_ours(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return sbx__error_os(SBX_ERROR, errno, "stat %s", path);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
				      "%s is not a directory of uid %u that only it may write in: "
				      "the seccomp profile Podman reads is not put there",
				      path, (unsigned)geteuid());
	return 0;
}

static int seccomp_dir(char *out, size_t len, int make)
{
	const char *xdg;
	int rc;

	if (geteuid() == 0) {
		snprintf(out, len, SBX_RUN_DIR "/seccomp");
		if (make && mkdir(SBX_RUN_DIR, 0755) < 0 && errno != EEXIST)
			return sbx__error_os(SBX_ERROR, errno, "make " SBX_RUN_DIR);
	} else {
		xdg = secure_getenv("XDG_RUNTIME_DIR");
		if (!xdg || xdg[0] != '/')
			return sbx__error_set(
				SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				"Podman reads the seccomp profile from a file, which "
				"goes under $XDG_RUNTIME_DIR/sandboxio when not root, "
				"and XDG_RUNTIME_DIR is not an absolute path");
		if ((size_t)snprintf(out, len, "%s/sandboxio", xdg) >= len)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
					      "XDG_RUNTIME_DIR is too long");
		if (make && mkdir(out, 0700) < 0 && errno != EEXIST)
			return sbx__error_os(SBX_ERROR, errno, "make %s", out);
		if (make && (rc = dir_ours(out)) < 0)
			return rc;
		snprintf(out + strlen(out), len - strlen(out), "/seccomp");
	}
	/* Searchable by the engine's user, listable by nobody else. */
	if (make && mkdir(out, 0711) < 0 && errno != EEXIST)
		return sbx__error_os(SBX_ERROR, errno, "make %s", out);
	if (make && (rc = dir_ours(out)) < 0)
		return rc;
	return 0;
}

int sbx__podman_seccomp_write(const struct sbx__docker *d,
			      const char *session,
			      const char *profile,
			      char *path,
			      size_t len)
{
	char dir[256];
	size_t n = strlen(profile);
	ssize_t w;
	int fd, rc;

	if (!sbx__disk_session_ok(session))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE, "bad session name");
	if ((rc = seccomp_dir(dir, sizeof(dir), 1)) < 0)
		return rc;
	if ((size_t)snprintf(path, len, "%s/%s.json", dir, session) >= len)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "seccomp profile path too long");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx__error_os(SBX_ERROR, errno, "create %s", path);
	if (geteuid() == 0 && fchown(fd, d->engine_uid, d->engine_gid) < 0) {
		rc = sbx__error_os(SBX_ERROR, errno, "chown %s to the engine's user", path);
		goto fail;
	}
	for (size_t off = 0; off < n; off += (size_t)w) {
		w = write(fd, profile + off, n - off);
		if (w < 0 && errno == EINTR) {
			w = 0;
			continue;
		}
		if (w <= 0) {
			rc = sbx__error_os(SBX_ERROR, errno, "write %s", path);
			goto fail;
		}
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = sbx__error_os(SBX_ERROR, errno, "write %s", path);
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(path);
	return rc;
}

void sbx__podman_seccomp_remove(const char *session)
{
	char dir[256], path[320];

	if (!session || !sbx__disk_session_ok(session) || seccomp_dir(dir, sizeof(dir), 0) < 0) {
		sbx__error_clear();
		return;
	}
	snprintf(path, sizeof(path), "%s/%s.json", dir, session);
	(void)unlink(path);
}

int sbx__podman_sweep(int (*alive)(const char *session, void *payload), void *payload)
{
	char dir[256], session[32];
	struct dirent *e;
	DIR *dp;
	int n = 0;

	if (seccomp_dir(dir, sizeof(dir), 0) < 0) {
		sbx__error_clear();
		return 0;
	}
	dp = opendir(dir);
	if (!dp)
		return 0;
	while ((e = readdir(dp))) {
		size_t l = strlen(e->d_name);

		if (l < 6 || l - 5 >= sizeof(session) || strcmp(e->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(session, sizeof(session), "%.*s", (int)(l - 5), e->d_name);
		/* Only names this backend makes, and only when the engine says gone. */
		if (!sbx__disk_session_ok(session) || alive(session, payload) != 0)
			continue;
		if (unlinkat(dirfd(dp), e->d_name, 0) == 0)
			n++;
	}
	closedir(dp);
	return n;
}

int sbx__engine_describe(const char *sock, char *out, size_t len)
{
	_cleanup_json_ json_t *info = NULL, *ver = NULL;
	struct sbx__docker d = {0};
	long status = 0;
	int rc;

	rc = sbx__http_init(&d.http, sock, 10000);
	if (rc == 0)
		rc = sbx__docker_call(&d, "GET", "/info", NULL, 0, &status, &info);
	if (rc == 0)
		rc = sbx__engine_flavour(&d, info);
	if (rc == 0)
		rc = sbx__docker_call(&d, "GET", "/version", NULL, 0, &status, &ver);
	if (rc == 0 && d.podman)
		snprintf(out, len, "Podman %s, %s, cgroup v%d, runtime %s",
			 json_string_value(json_object_get(ver, "Version")) ?: "?",
			 d.rootless ? "rootless" : "rootful", d.cgroup_v1 ? 1 : 2,
			 json_string_value(json_object_get(info, "DefaultRuntime")) ?: "?");
	else if (rc == 0)
		snprintf(out, len, "Docker Engine %s",
			 json_string_value(json_object_get(ver, "Version")) ?: "?");
	sbx__http_done(&d.http);
	return rc;
}
