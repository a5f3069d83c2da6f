/*
 * engine/docker.c: the docker backend: the policy mapped onto a container.
 *
 * The container's HostConfig is built here from the policy alone, never from
 * caller JSON, so there is no field a caller can slip in. Every sandbox:
 * network none, CapDrop ALL, no-new-privileges, this project's seccomp
 * profile, read-only root, a uid of its own, private IPC/PID/cgroup namespaces, caps
 * on CPU, memory (swap equal), pids, open files, core dumps and writable
 * space, and the project's init as PID 1 (mounted read-only), which ends the
 * sandbox at its deadline whatever happens to the host process. Create
 * fails closed: engine Warnings, a limit read back that differs, or any
 * failure after the container exists remove it before returning.
 *
 * Runs go to the init over its attached stdio (engine/attach.c), or through
 * `docker exec` of `sbx-init run` when that channel cannot carry them; either
 * way the program runs in its own process group under a subreaper, its whole
 * tree dies at the deadline, and output and status come back in frames
 * (util/frame.h). Docker has no API to kill an exec; the host keeps a
 * deadline of its own and kills the sandbox if the init does not answer in
 * time.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sandboxio.h>

#include "cgroups/cgroups-int.h"
#include "core/limit-kinds.h"
#include "core/owner-int.h"
#include "engine/chan-int.h"
#include "engine/docker-int.h"
#include "engine/http-int.h"
#include "netpolicy/netpolicy-int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/frame.h"

#define DEFAULT_SOCK "/var/run/docker.sock"
#define DEFAULT_API_TIMEOUT_MS 30000L

static int valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '_' || id[i] == '-' ||
		      id[i] == '.'))
			return 0;
	return 1;
}

/* ===== Backend open ===== */

static int resolve_socket(char **out, const char *given)
{
	const char *env;

	if (given) {
		*out = strdup(given);
	} else if ((env = secure_getenv("DOCKER_HOST")) && *env) {
		if (strncmp(env, "unix://", 7) != 0)
			return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
					      "DOCKER_HOST=%.200s: only a local engine over a "
					      "unix:// socket is supported",
					      env);
		*out = strdup(env + 7);
	} else {
		*out = strdup(DEFAULT_SOCK);
	}
	return *out ? 0 : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
}

static int resolve_init(char **out, const char *given)
{
	const char *p = given;
	struct stat st;

	if (!p)
		p = secure_getenv("SANDBOXIO_INIT");
	if (!p || !*p)
		p = SBX_LIBEXECDIR "/sbx-init";
	if (p[0] != '/')
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "init path '%.200s' must be absolute", p);
	if (stat(p, &st) < 0)
		return sbx__error_os(SBX_ENOTFOUND, errno,
				     "sandbox init %.200s (build it with make, install it with "
				     "make install, or set SANDBOXIO_INIT)",
				     p);
	if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXOTH))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "sandbox init %.200s is not an executable file that the "
				      "sandbox user may run",
				      p);
	*out = strdup(p);
	return *out ? 0 : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
}

/*
 * The sandbox's /etc/resolv.conf: a file beside the init that names no
 * server. Docker would otherwise copy the host's resolvers in, and a sandbox
 * has no business knowing them, even without a route to reach them.
 */
static int resolve_resolv(char **out, const char *init_path)
{
	const char *slash = strrchr(init_path, '/');
	struct stat st;

	if (asprintf(out, "%.*s/sbx-resolv.conf", (int)(slash - init_path), init_path) < 0)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	if (stat(*out, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 4096)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "%s is missing: it is installed beside the init, and every "
				      "sandbox's /etc/resolv.conf is that file",
				      *out);
	return 0;
}

static void d_free(void *state)
{
	struct sbx__docker *d = state;

	if (!d)
		return;
	sbx__http_done(&d->http);
	free(d->init_path);
	free(d->hosts_file);
	free(d->egress_path);
	free(d->resolv_path);
	free(d);
}

static int d_open(const sbx_backend_options *o, void **state)
{
	_sbx_cleanup_free_ char *sock = NULL;
	_cleanup_json_ json_t *info = NULL;
	struct sbx__docker *d;
	json_t *rt;
	long status = 0;
	int rc;

	d = calloc(1, sizeof(*d));
	if (!d)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	rc = resolve_socket(&sock, o ? o->socket_path : NULL);
	if (rc == 0)
		rc = sbx__http_init(&d->http, sock,
				    o && o->api_timeout_ms ? (long)o->api_timeout_ms
							   : DEFAULT_API_TIMEOUT_MS);
	/* Only creating needs the init: listing, removing and reaping work without. */
	if (rc == 0 && (resolve_init(&d->init_path, o ? o->init_path : NULL) < 0 ||
			resolve_resolv(&d->resolv_path, d->init_path) < 0)) {
		snprintf(d->init_error, sizeof(d->init_error), "%s", sbx_error_last()->message);
		sbx__error_clear();
	}
	d->egress_path = sbx__egress_path(d->init_path); /* NULL: checked when needed */
	if (rc == 0)
		rc = sbx__docker_call(d, "GET", "/info", NULL, 0, &status, &info);
	if (rc == 0)
		rc = sbx__engine_flavour(d, info);
	if (rc < 0) {
		d_free(d);
		return rc;
	}
	rt = json_object_get(info, "Runtimes");
	d->has_runsc = json_object_get(rt, SBX_RUNTIME_GVISOR) != NULL;
	d->has_runsc_hostinet = json_object_get(rt, SBX_RUNTIME_GVISOR_HOSTINET) != NULL;
	{
		/* Names in allowlists resolve from this file, and then from nothing else. */
		const char *hf = o && o->version >= 4 && o->hosts_file
					 ? o->hosts_file
					 : secure_getenv("SANDBOXIO_HOSTS_FILE");
		if (hf && *hf && !(d->hosts_file = strdup(hf))) {
			d_free(d);
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
		}
	}
	{
		struct sbx__owner self;

		sbx__owner_self(&self, 1);
		memcpy(d->hostname, self.host, sizeof(d->hostname));
		memcpy(d->boot_id, self.boot, sizeof(d->boot_id));
	}
	/* The reap at open is core's (core/sandbox.c), so that it is audited. */
	*state = d;
	return 0;
}

static int d_check(void *state, const sbx_policy *p)
{
	struct sbx__docker *d = state;
	int rc;

	if (d->init_error[0])
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE, "%s", d->init_error);

	if ((rc = sbx__podman_check(d, p)) < 0 || (rc = sbx__docker_tier_check(d, p)) < 0)
		return rc;
	if (p->allow_n) {
		int v6_ok = 0;

		return sbx__netpolicy_check(p->allow, p->allow_n, &v6_ok);
	}
	return 0;
}

/* ===== Create ===== */

static json_t *labels_for(struct sbx__docker *d,
			  const sbx_policy *p,
			  const char *session,
			  time_t created,
			  time_t deadline)
{
	char buf[256];
	size_t used;
	json_t *l = json_object();

	json_object_set_new(l, SBX_LABEL_MANAGED, json_string(SBX_LABEL_MANAGED_VALUE));
	json_object_set_new(l, SBX_LABEL_PREFIX "tenant", json_string(p->tenant));
	json_object_set_new(l, SBX_LABEL_PREFIX "session", json_string(session));
	json_object_set_new(l, SBX_LABEL_PREFIX "owner-host", json_string(d->hostname));
	json_object_set_new(l, SBX_LABEL_PREFIX "owner-boot", json_string(d->boot_id));
	if (p->detached) {
		json_object_set_new(l, SBX_LABEL_PREFIX "owner-pid", json_string("0"));
		json_object_set_new(l, SBX_LABEL_PREFIX "owner-start", json_string("0"));
	} else {
		unsigned long long start = 0;
		sbx__proc_start_time(getpid(), &start);
		snprintf(buf, sizeof(buf), "%ld", (long)getpid());
		json_object_set_new(l, SBX_LABEL_PREFIX "owner-pid", json_string(buf));
		snprintf(buf, sizeof(buf), "%llu", start);
		json_object_set_new(l, SBX_LABEL_PREFIX "owner-start", json_string(buf));
	}
	snprintf(buf, sizeof(buf), "%llu", sbx__owner_pidns());
	json_object_set_new(l, SBX_LABEL_PREFIX "owner-pidns", json_string(buf));
	snprintf(buf, sizeof(buf), "%lld", (long long)created);
	json_object_set_new(l, SBX_LABEL_PREFIX "created", json_string(buf));
	snprintf(buf, sizeof(buf), "%lld", (long long)deadline);
	json_object_set_new(l, SBX_LABEL_PREFIX "deadline", json_string(buf));
	/* "cpu=1000,memory=536870912,...": every kind, read back by d_open_box(). */
	used = 0;
	for (int k = SBX__LIMIT_FIRST; k <= SBX__LIMIT_LAST && used < sizeof(buf); k++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s=%lld",
					 k == SBX__LIMIT_FIRST ? "" : ",",
					 sbx__limit_kinds[k].label, (long long)p->limit[k]);
	json_object_set_new(l, SBX_LABEL_PREFIX "limits", json_string(buf));
	snprintf(buf, sizeof(buf), "run=%llu,run_code=%llu",
		 (unsigned long long)p->timeout_ms[SBX_TIMEOUT_RUN],
		 (unsigned long long)p->timeout_ms[SBX_TIMEOUT_RUN_CODE]);
	json_object_set_new(l, SBX_LABEL_PREFIX "timeouts", json_string(buf));
	json_object_set_new(l, SBX_LABEL_PREFIX "workdir", json_string(p->workdir));
	if (p->pool[0])
		json_object_set_new(l, SBX_LABEL_PREFIX "pool", json_string(p->pool));
	return l;
}

/*
 * The writable space is split so that the sizes add up to the disk cap:
 * /workspace 7/8, /tmp 1/16, /dev/shm 1/16. /workspace is a disk of its own
 * on the host (engine/disk.c) when the host can make one, else a tmpfs like
 * the others; tmpfs pages are charged to the sandbox's memory cgroup
 * (docs/threat-model.md says what that costs). The policy's working
 * directory is where runs start, not a mount.
 */
static int64_t tmp_bytes(const sbx_policy *p)
{
	int64_t tmp = p->limit[SBX_LIMIT_DISK] / 16;

	return tmp < 4096 ? 4096 : tmp;
}

/* /workspace: the disk cap less /tmp and /dev/shm. */
static int64_t work_bytes(const sbx_policy *p)
{
	return p->limit[SBX_LIMIT_DISK] - 2 * (p->limit[SBX_LIMIT_DISK] / 16);
}

static json_t *tmpfs_for(const sbx_policy *p, unsigned uid, int disk, int64_t *shm)
{
	int64_t tmp = tmp_bytes(p), work = work_bytes(p);
	char wbuf[160], tbuf[160];
	json_t *t = json_object();

	snprintf(wbuf, sizeof(wbuf), "rw,nosuid,nodev,size=%lld,uid=%u,gid=%u,mode=0700",
		 (long long)work, uid, uid);
	snprintf(tbuf, sizeof(tbuf), "rw,nosuid,nodev,noexec,size=%lld,mode=1777", (long long)tmp);
	/* Fixed places: a working directory elsewhere is only where runs start. */
	if (!disk)
		json_object_set_new(t, "/workspace", json_string(wbuf));
	json_object_set_new(t, "/tmp", json_string(tbuf));
	*shm = tmp;
	return t;
}

static json_t *create_body(struct sbx__docker *d,
			   const sbx_policy *p,
			   const char *session,
			   time_t deadline,
			   unsigned uid,
			   int disk,
			   const char *profile_file)
{
	_sbx_cleanup_free_ char *profile = profile_file ? NULL : sbx__seccomp_profile_json();
	_sbx_cleanup_free_ char *seccomp = NULL, *bind = NULL, *resolv = NULL;
	char deadline_s[32], user[32], home = 0;
	json_t *body, *hc, *env, *labels;
	int64_t shm = 0;

	/* dockerd takes the profile's JSON; Podman a file's path (engine/podman.c). */
	if ((!profile && !profile_file) ||
	    asprintf(&seccomp, "seccomp=%s", profile_file ? profile_file : profile) < 0 ||
	    asprintf(&bind, "%s:" SBX_INIT_MOUNT ":ro", d->init_path) < 0 ||
	    asprintf(&resolv, "%s:/etc/resolv.conf:ro", d->resolv_path) < 0)
		return NULL;
	snprintf(deadline_s, sizeof(deadline_s), "%lld", (long long)deadline);
	env = json_array();
	for (size_t i = 0; i < p->env_n; i++) {
		json_array_append_new(env, json_string(p->env[i]));
		home |= strncmp(p->env[i], "HOME=", 5) == 0;
	}
	/* The sandbox's uid has no passwd entry in the image: name its home. */
	if (!home)
		json_array_append_new(env, json_string("HOME=/workspace"));
	snprintf(user, sizeof(user), "%u:%u", uid, uid);
	labels = labels_for(d, p, session, time(NULL), deadline);
	if (labels) {
		char u[16];

		snprintf(u, sizeof(u), "%u", uid);
		json_object_set_new(labels, SBX_LABEL_UID, json_string(u));
	}
	hc = json_pack("{s:s, s:[s], s:[s,s], s:b, s:b, s:s, s:s, s:s,"
		       " s:I, s:I, s:I, s:I, s:I, s:[{s:s,s:I,s:I},{s:s,s:I,s:I}],"
		       " s:o, s:[s,s], s:b, s:b, s:{s:s, s:{}}, s:I}",
		       "NetworkMode", "none", "CapDrop", "ALL", "SecurityOpt",
		       "no-new-privileges:true", seccomp, "ReadonlyRootfs", 1, "Privileged", 0,
		       "IpcMode", "private", "PidMode", "", "CgroupnsMode", "private", "Memory",
		       (json_int_t)p->limit[SBX_LIMIT_MEMORY], "MemorySwap",
		       (json_int_t)p->limit[SBX_LIMIT_MEMORY], "NanoCpus",
		       (json_int_t)p->limit[SBX_LIMIT_CPU_MILLI] * 1000000, "PidsLimit",
		       (json_int_t)p->limit[SBX_LIMIT_PIDS], "ShmSize", (json_int_t)0, "Ulimits",
		       "Name", "nofile", "Soft", (json_int_t)p->limit[SBX_LIMIT_NOFILE], "Hard",
		       (json_int_t)p->limit[SBX_LIMIT_NOFILE], "Name", "core", "Soft",
		       (json_int_t)0, "Hard", (json_int_t)0, "Tmpfs", tmpfs_for(p, uid, disk, &shm),
		       "Binds", bind, resolv, "AutoRemove", 1, "Init", 0, "LogConfig", "Type",
		       "none", "Config", "OomScoreAdj", (json_int_t)500);
	if (!hc)
		return NULL;
	if (disk) {
		char mnt[256], b[300];

		sbx__disk_mount_path(session, mnt, sizeof(mnt));
		snprintf(b, sizeof(b), "%s:/workspace:rw", mnt);
		json_array_append_new(json_object_get(hc, "Binds"), json_string(b));
		if (labels)
			json_object_set_new(labels, SBX_LABEL_DISK, json_string("ext4"));
	}
	json_object_set_new(hc, "ShmSize", json_integer(shm));
	if (sbx__docker_tier_hostconfig(p, hc) < 0) {
		json_decref(hc);
		return NULL;
	}
	/* Podman gives a container RLIMIT_NPROC 1048576 unless told, which a
	 * host without CAP_SYS_RESOURCE cannot set (the runtime's start fails).
	 * The sandbox's uid is its own: one above the pids cap, so that the
	 * cgroup's cap is the one that binds (and its events count the hit). */
	if (d->podman)
		json_array_append_new(json_object_get(hc, "Ulimits"),
				      json_pack("{s:s,s:I,s:I}", "Name", "nproc", "Soft",
						(json_int_t)p->limit[SBX_LIMIT_PIDS] + 1, "Hard",
						(json_int_t)p->limit[SBX_LIMIT_PIDS] + 1));
	/* The init's stdio is its run channel (engine/attach.c): stdin stays open. */
	body = json_pack("{s:s, s:[s,s,s,s,s], s:[], s:s, s:s, s:o, s:o, s:b, s:b, s:b, s:b,"
			 " s:b, s:b, s:b, s:s, s:o}",
			 "Image", p->image, "Cmd", SBX_INIT_MOUNT, "pid1", "--deadline", deadline_s,
			 "--channel", "Entrypoint", "User", user, "WorkingDir", "/", "Env", env,
			 "Labels", labels, "NetworkDisabled", 1, "AttachStdin", 1, "AttachStdout",
			 1, "AttachStderr", 1, "OpenStdin", 1, "StdinOnce", 0, "Tty", 0,
			 "StopSignal", "SIGKILL", "HostConfig", hc);
	return body;
}

static int check_readback(struct sbx__docker *d,
			  const char *id,
			  const char *session,
			  int disk,
			  const sbx_policy *p,
			  long tmo,
			  pid_t *pid_out)
{
	_cleanup_json_ json_t *info = NULL;
	char path[256], why[512];
	sbx_cgroup_limits lim;
	json_t *hc, *st;
	long status = 0;
	int rc;

	snprintf(path, sizeof(path), "/containers/%s/json", id);
	rc = sbx__docker_call(d, "GET", path, NULL, tmo, &status, &info);
	if (rc < 0)
		return rc;
	hc = json_object_get(info, "HostConfig");
	st = json_object_get(info, "State");
	if (!json_is_true(json_object_get(st, "Running")))
		return sbx__error_set(
			SBX_EENGINE, SBX_ERRCLASS_ENGINE,
			"sandbox %.12s is not running right after start (state "
			"%s, exit code %lld): is the init at %s usable?",
			id, json_string_value(json_object_get(st, "Status")),
			(long long)json_integer_value(json_object_get(st, "ExitCode")),
			d->init_path);
	if (p->min_tier == SBX_TIER_GVISOR &&
	    !sbx__runtime_is_gvisor(json_string_value(json_object_get(hc, "Runtime"))))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
				      "sandbox %.12s: the engine did not keep the gvisor runtime "
				      "(it runs under '%.32s')",
				      id, json_string_value(json_object_get(hc, "Runtime")) ?: "?");
	if (strcmp(json_string_value(json_object_get(hc, "NetworkMode")) ?: "", "none") != 0 ||
	    !json_is_true(json_object_get(hc, "ReadonlyRootfs")) ||
	    json_is_true(json_object_get(hc, "Privileged")))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
				      "sandbox %.12s: the engine did not keep network none, a "
				      "read-only root, or unprivileged mode",
				      id);
	{
		char mnt[256];
		const struct sbx__mount_want want[] = {
			{"bind", d->init_path, SBX_INIT_MOUNT, 0},
			{"bind", d->resolv_path, "/etc/resolv.conf", 0},
			{"bind", mnt, "/workspace", 1},
		};

		sbx__disk_mount_path(session, mnt, sizeof(mnt));
		if (sbx__docker_check_mounts(json_object_get(info, "Mounts"), want,
					     SBX_ARRAY_SIZE(want) - !disk, why, sizeof(why)) < 0)
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
					      "sandbox %.12s was removed: %s", id, why);
	}
	*pid_out = (pid_t)json_integer_value(json_object_get(st, "Pid"));
	rc = sbx__cgroup_read_limits(&lim, "/sys/fs/cgroup", "/proc", *pid_out);
	if (rc < 0)
		return sbx__error_os(SBX_EDENIED, -rc,
				     "sandbox %.12s: cannot read its limits back from its cgroup, "
				     "so they cannot be verified",
				     id);
	if (sbx__cgroup_check(&lim, p->limit[SBX_LIMIT_MEMORY], sbx__docker_tier_host_pids(p),
			      p->limit[SBX_LIMIT_CPU_MILLI], why, sizeof(why)) < 0)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_CGROUPS,
				      "sandbox %.12s: limits read back differ from the policy: %s",
				      id, why);
	return 0;
}

static long left_ms(uint64_t deadline)
{
	uint64_t now = sbx__mono_ms();

	return now >= deadline ? 1 : (long)(deadline - now);
}

/*
 * One function on purpose (some 160 lines): create's steps in order (the
 * checks, the names resolved, the uid chosen under its lock, the disk, the
 * container, the attach, the start, the read-back) with one cleanup path
 * that removes what was made, keeping the first error.
 */
static int
d_create(void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out)
{
	struct sbx__docker *d = state;
	_cleanup_json_ json_t *body = NULL, *resp = NULL, *img = NULL;
	_sbx_cleanup_free_ char *ref = NULL, *id = NULL;
	uint64_t deadline = sbx__mono_ms() + p->timeout_ms[SBX_TIMEOUT_CREATE];
	time_t made_deadline;
	unsigned char rnd[6];
	char session[32], path[512], seccomp_file[320];
	json_t *warn;
	struct sbx__docker_box *b;
	struct sbx__chan *chan = NULL;
	long status = 0;
	_sbx_cleanup_(sbx__netpolicy_plan_clear) struct sbx__np_plan plan = {0};
	pid_t pid = 0;
	_sbx_cleanup_close_ int lock = -1;
	unsigned uid = 0;
	/* gVisor's gofer would serve the bind, but the tier is not measured with it. */
	int disk = sbx__disk_usable() && p->min_tier != SBX_TIER_GVISOR, disk_made = 0, marked = 0;
	int rc;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return sbx__error_os(SBX_ERROR, errno, "getrandom");
	snprintf(session, sizeof(session), "sbx-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
		 rnd[3], rnd[4], rnd[5]);
	ref = sbx__url_escape(p->image);
	if (!ref)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	snprintf(path, sizeof(path), "/images/%s/json", ref);
	rc = sbx__docker_call(d, "GET", path, NULL, left_ms(deadline), &status, &img);
	if (rc == SBX_ENOTFOUND)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "image %s is not present: build the default image with "
				      "'sandboxio image build', or load or pull %s into the engine",
				      p->image, p->image);
	if (rc < 0)
		return rc;
	{
		char why[512];

		if (sbx__docker_check_image_volumes(img, p->image, why, sizeof(why)) < 0)
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE, "%s", why);
	}
	/* Names are resolved before the uid lock is taken, so that a slow
	 * resolver holds up this create alone. */
	if (p->allow_n && (rc = sbx__docker_egress_plan(d, p, &plan)) < 0)
		return rc;
	/* From choosing the uid until the container carrying it exists. */
	lock = sbx__uid_lock(deadline);
	if (lock < 0)
		return lock;
	rc = sbx__uid_pick(d, &uid);
	if (rc < 0)
		return rc;
	if (d->podman) {
		_sbx_cleanup_free_ char *profile = sbx__seccomp_profile_json();

		if (!profile)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
		rc = sbx__podman_seccomp_write(d, session, profile, seccomp_file,
					       sizeof(seccomp_file));
		if (rc < 0)
			return sbx__error_wrap("write the sandbox's seccomp profile for Podman");
	}
	made_deadline = time(NULL) + (time_t)(p->timeout_ms[SBX_TIMEOUT_SANDBOX] / 1000 ?: 1);
	body = create_body(d, p, session, made_deadline, uid, disk,
			   d->podman ? seccomp_file : NULL);
	if (!body) {
		if (d->podman)
			sbx__podman_seccomp_remove(session);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "build create request");
	}
	if (p->allow_n)
		sbx__docker_egress_apply(&plan, body);
	snprintf(path, sizeof(path), "/containers/create?name=%s", session);
	rc = sbx__docker_call(d, "POST", path, body, left_ms(deadline), &status, &resp);
	close(SBX_STEAL_FD(&lock));
	if (rc < 0) {
		if (d->podman)
			sbx__podman_seccomp_remove(session);
		return sbx__error_wrap("create sandbox");
	}
	/* Without an Id, Podman's mark stays for the sweep: a container may
	 * exist under the session's name. */
	if (!json_is_string(json_object_get(resp, "Id")))
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE,
				      "create sandbox: the Engine's answer has no Id");
	id = strdup(json_string_value(json_object_get(resp, "Id")));
	if (!id)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	warn = json_object_get(resp, "Warnings");
	if (json_array_size(warn) > 0) {
		char all[512] = "";
		size_t i;
		json_t *w;

		json_array_foreach(warn, i, w)
		{
			size_t n = strlen(all);
			snprintf(all + n, sizeof(all) - n, "%s%s", n ? "; " : "",
				 json_string_value(w) ?: "?");
		}
		rc = sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
				    "the engine could not apply every limit, so the sandbox was "
				    "removed: %s",
				    all);
		goto rollback;
	}
	/* Before any host-side piece: another engine's sweep leaves them. */
	if ((disk || plan.n) && (rc = sbx__mark_engine(session, d->http.sock)) < 0)
		goto rollback;
	marked = disk || plan.n;
	if (disk) {
		/* After the container exists, so the reaper never takes a disk
		 * whose sandbox is being made for a leftover. */
		disk_made = 1;
		rc = sbx__disk_make(session, work_bytes(p), uid);
		if (rc == 0)
			rc = sbx__disk_check_mounted(session);
		if (rc < 0) {
			sbx__error_wrap("make the sandbox's disk");
			goto rollback;
		}
	}
	/* Attached before the start, so not a byte of the init's is missed. */
	sbx__chan_open(d, id, &chan);
	snprintf(path, sizeof(path), "/containers/%s/start", id);
	rc = sbx__docker_call(d, "POST", path, NULL, left_ms(deadline), &status, NULL);
	if (rc < 0) {
		sbx__error_wrap("start sandbox");
		goto rollback;
	}
	rc = check_readback(d, id, session, disk, p, left_ms(deadline), &pid);
	if (rc < 0)
		goto rollback;
	if (plan.n) {
		/* Before the sandbox is handed out: its only link, filtered on the host. */
		plan.sandbox_id = id;
		rc = sbx__netpolicy_attach(session, pid, &plan, deadline);
		if (rc < 0)
			goto rollback;
	}
	rc = sbx__chan_start(&chan, deadline);
	if (rc < 0)
		goto rollback;
	if (sbx__mono_ms() > deadline) {
		rc = sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_ENGINE,
				    "create: the %llu ms create deadline passed",
				    (unsigned long long)p->timeout_ms[SBX_TIMEOUT_CREATE]);
		goto rollback;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
		goto rollback;
	}
	b->id = strdup(id);
	b->pid = pid;
	b->uid = uid;
	b->made_deadline = (uint64_t)made_deadline;
	b->disk = disk;
	snprintf(b->session, sizeof(b->session), "%s", session);
	b->netpolicy = plan.n > 0;
	if (!b->id) {
		free(b);
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
		goto rollback;
	}
	b->chan = SBX_STEAL(&chan);
	b->gvisor = p->min_tier == SBX_TIER_GVISOR;
	/* The Sentry's OOM ends the whole sandbox: a witness on its cgroup,
	 * where the host has one (cgroup v1); else the Engine's events tell. */
	if (b->gvisor)
		sbx__docker_box_memcg(b, b->id, pid);
	b->chan_no_secrets = b->gvisor;
	*box_out = b;
	*id_out = SBX_STEAL(&id);
	*tier_out = p->min_tier == SBX_TIER_GVISOR ? SBX_TIER_GVISOR : SBX_TIER_CONTAINER;
	return 0;
rollback : {
	/* Keep the first error: removal must not overwrite why create failed. */
	struct sbx__error_saved saved;

	sbx__error_save(&saved);
	sbx__chan_free(chan);
	sbx__docker_remove(d, id);
	if (plan.n)
		sbx__netpolicy_detach(session);
	if (disk_made)
		sbx__disk_remove(session);
	if (d->podman)
		sbx__podman_seccomp_remove(session);
	if (marked)
		sbx__mark_remove(session);
	sbx__error_restore(&saved, rc);
	sbx__error_http(saved.http_status);
}
	return rc;
}

/* ===== Open an existing sandbox ===== */

static int parse_kv_label(const char *text, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(p + kl + 1, &end, 10);
			if (errno || (*end && *end != ','))
				return -1;
			*out = v;
			return 0;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return -1;
}

static int
d_open_box(void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out)
{
	struct sbx__docker *d = state;
	_cleanup_json_ json_t *info = NULL;
	const char *limits, *timeouts, *workdir, *tenant;
	char path[256];
	json_t *labels;
	struct sbx__docker_box *b;
	uint64_t v;
	long status = 0;
	int rc;

	if (!valid_id(id))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "'%.64s' is not a sandbox id", id);
	snprintf(path, sizeof(path), "/containers/%s/json", id);
	rc = sbx__docker_call(d, "GET", path, NULL, 0, &status, &info);
	if (rc == SBX_ENOTFOUND)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE, "no sandbox '%.64s'", id);
	if (rc < 0)
		return rc;
	labels = json_object_get(json_object_get(info, "Config"), "Labels");
	limits = json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "limits"));
	timeouts = json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "timeouts"));
	workdir = json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "workdir"));
	tenant = json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "tenant"));
	if (!sbx__label_is(labels, SBX_LABEL_MANAGED, SBX_LABEL_MANAGED_VALUE))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "container '%.64s' is not a sandboxio sandbox", id);
	if (!limits || !timeouts || !workdir || !tenant)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "sandbox '%.64s' has incomplete labels", id);
	for (int k = SBX__LIMIT_FIRST; k <= SBX__LIMIT_LAST; k++)
		if (parse_kv_label(limits, sbx__limit_kinds[k].label, &v) < 0 ||
		    sbx_policy_set_limit(p, (sbx_limit_kind)k, (int64_t)v) < 0)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
					      "sandbox '%.64s': label limits has a bad %s", id,
					      sbx__limit_kinds[k].label);
	if (parse_kv_label(timeouts, "run", &v) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, v) < 0 ||
	    parse_kv_label(timeouts, "run_code", &v) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN_CODE, v) < 0 ||
	    sbx_policy_set_workdir(p, workdir) < 0 || sbx_policy_set_tenant(p, tenant) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "sandbox '%.64s': labels timeouts, workdir or tenant are bad",
				      id);
	b = calloc(1, sizeof(*b));
	if (!b || !(b->id = strdup(id))) {
		free(b);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	}
	{
		/* The rest of the policy as it was made: image, lifetime, detached. */
		const char *image = json_string_value(
			json_object_get(json_object_get(info, "Config"), "Image"));
		const char *c =
			json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "created"));
		const char *dl =
			json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "deadline"));
		long long created = 0, deadline = 0;

		if (image)
			sbx_policy_set_image(p, image);
		/* Labels are whatever the container's creator wrote: the
		 * difference is taken unsigned (no signed overflow) and used only
		 * within the policy's range (no wrap of the product). */
		if (c && dl && sscanf(c, "%lld", &created) == 1 &&
		    sscanf(dl, "%lld", &deadline) == 1 && deadline > created &&
		    (uint64_t)deadline - (uint64_t)created <= SBX_MAX_TIMEOUT_MS / 1000u)
			sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX,
						  ((uint64_t)deadline - (uint64_t)created) * 1000u);
		sbx_policy_set_detached(p,
					sbx__label_is(labels, SBX_LABEL_PREFIX "owner-pid", "0"));
		sbx__error_clear();
	}
	b->pid = (pid_t)json_integer_value(json_object_get(json_object_get(info, "State"), "Pid"));
	snprintf(b->session, sizeof(b->session), "%s",
		 json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "session")) ?: "");
	b->netpolicy = sbx__label_is(labels, SBX_LABEL_PREFIX "netpolicy", "veth");
	/* A disk only under a session name of ours: the labels are whatever
	 * the container's creator wrote, and the name becomes host paths. */
	b->disk = sbx__label_is(labels, SBX_LABEL_DISK, "ext4") && sbx__disk_session_ok(b->session);
	*box_out = b;
	*tier_out = sbx__runtime_is_gvisor(json_string_value(
			    json_object_get(json_object_get(info, "HostConfig"), "Runtime")))
			    ? SBX_TIER_GVISOR
			    : SBX_TIER_CONTAINER;
	if (*tier_out == SBX_TIER_GVISOR)
		sbx__docker_box_memcg(b, json_string_value(json_object_get(info, "Id")), b->pid);
	return 0;
}

static void d_release(void *state, void *box)
{
	struct sbx__docker_box *b = box;

	(void)state;
	if (!b)
		return;
	sbx__chan_free(b->chan);
	free(b->memcg);
	free(b->id);
	free(b);
}

static int d_destroy(void *state, void *box)
{
	struct sbx__docker_box *b = box;
	int rc;

	if (!b)
		return 0;
	rc = sbx__docker_remove(state, b->id);
	if (b->netpolicy)
		rc = sbx__docker_egress_detach(b->session, rc);
	/* Only once the container is gone: then nothing holds the disk. */
	if (b->disk && rc == 0)
		rc = sbx__disk_remove(b->session);
	/* Podman's profile file (engine/podman.c), then the mark, last. */
	if (((struct sbx__docker *)state)->podman && rc == 0)
		sbx__podman_seccomp_remove(b->session);
	if ((b->disk || b->netpolicy) && rc == 0)
		sbx__mark_remove(b->session);
	d_release(state, b);
	return rc;
}

static int d_run(void *state, void *box, const struct sbx__run_req *req, sbx_result *res)
{
	struct sbx__docker_box *b = box;
	int rc = sbx__docker_run(state, box, req, res);

	/* The disk is the witness: full when the run ended. */
	if (rc == 0 && b->disk && sbx__disk_full(b->session))
		res->limits_hit |= SBX_HIT_DISK;
	return rc;
}

/* ===== Listing ===== */

static int d_list(void *state, const char *tenant, sbx_list_cb cb, void *payload)
{
	_cleanup_json_ json_t *list = NULL;
	json_t *c;
	size_t i;
	int rc;

	rc = sbx__docker_list_ours(state, tenant, 0, &list);
	if (rc < 0)
		return rc;
	json_array_foreach(list, i, c)
	{
		json_t *labels = json_object_get(c, "Labels");
		const char *created =
			json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "created"));
		const char *deadline =
			json_string_value(json_object_get(labels, SBX_LABEL_PREFIX "deadline"));
		sbx_sandbox_info info = {
			.id = json_string_value(json_object_get(c, "Id")),
			.tenant = json_string_value(
				json_object_get(labels, SBX_LABEL_PREFIX "tenant")),
			.image = json_string_value(json_object_get(c, "Image")),
			.state = json_string_value(json_object_get(c, "State")),
			.created = created ? strtoll(created, NULL, 10) : 0,
			.deadline = deadline ? strtoll(deadline, NULL, 10) : 0,
		};
		/* A label can hold anything: only list what we can describe. */
		if (!info.id || !info.tenant)
			continue;
		if (!info.image)
			info.image = "";
		if (!info.state)
			info.state = "";
		if (cb(&info, payload) != 0)
			break;
	}
	return 0;
}

const struct sbx__backend_ops sbx__docker_ops = {
	.version = SBX_BACKEND_OPS_VERSION,
	.name = "docker",
	.host_choices = 1,
	.root_runs = 1,
	.open = d_open,
	.free = d_free,
	.check = d_check,
	.create = d_create,
	.open_box = d_open_box,
	.run = d_run,
	.destroy = d_destroy,
	.kill = sbx__docker_kill_op,
	.release = d_release,
	.list = d_list,
	.reap_list = sbx__docker_reap_list,
	.reap_remove = sbx__docker_reap_remove,
	.reap_sweep = sbx__docker_reap_sweep,
	.image_exists = sbx__docker_image_exists,
	.import_image = sbx__docker_import_image,
	.spawn = sbx__docker_spawn,
	.pause = sbx__docker_pause,
	.resume = sbx__docker_resume,
	.deadline = sbx__docker_deadline,
	.paused = sbx__docker_paused,
	.resize = sbx__docker_resize,
	.usage = sbx__docker_usage,
};
