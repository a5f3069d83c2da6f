/*
 * engine/docker-int.h: internals of the docker backend shared between its files.
 */
#ifndef SBX_ENGINE_DOCKER_INT_H
#define SBX_ENGINE_DOCKER_INT_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "cgroups/cgroups-int.h"
#include "core/backend-int.h"
#include "engine/http-int.h"
#include "util/cleanup.h"
#include "util/time.h"

/*
 * dockerd's runtimes of the gvisor tier, as scripts/setup.sh registers them:
 * runsc with no network for every sandbox, and runsc with gVisor's host
 * network mode for those with an egress allowlist (gVisor's own network
 * stack refuses every network namespace on current kernels: docs/backends.md).
 */
#define SBX_RUNTIME_GVISOR "runsc"
#define SBX_RUNTIME_GVISOR_HOSTINET "runsc-hostinet"
/* The least pids cap the gvisor tier takes (engine/tiers.c). */
#define SBX_GVISOR_PIDS_MIN 64
/* The gvisor tier's host pids cap for a policy's cap of n: the Sentry's own
 * threads, and the host tasks each of the sandbox's processes costs there
 * (engine/tiers.c says what was measured). */
#define SBX_GVISOR_SENTRY_PIDS 128
#define SBX_GVISOR_HOST_PIDS_PER_TASK 8

/* Whether a container's HostConfig.Runtime is one of the gvisor tier's. */
static inline int sbx__runtime_is_gvisor(const char *runtime)
{
	return runtime && (strcmp(runtime, SBX_RUNTIME_GVISOR) == 0 ||
			   strcmp(runtime, SBX_RUNTIME_GVISOR_HOSTINET) == 0);
}

struct sbx__docker {
	struct sbx__http http;
	char *init_path;
	char *resolv_path;	/* beside the init: the sandbox's /etc/resolv.conf */
	char init_error[512];	/* why the init cannot be used; creating then fails */
	int has_runsc;		/* SBX_RUNTIME_GVISOR is registered */
	int has_runsc_hostinet; /* SBX_RUNTIME_GVISOR_HOSTINET is registered */
	char hostname[65];
	char boot_id[40];
	char *hosts_file;  /* resolves allowlist names instead of the host's resolver; NULL: none */
	char *egress_path; /* the name checker (sbx-egress) for allow_host entries; NULL: none */
	/* The engine's flavour (engine/podman.c): Podman, rootless or not, the
	 * host's cgroup version as it reports it, and its socket's owner. */
	int podman;
	int rootless;
	int cgroup_v1;
	int crun_v1; /* its default runtime is crun, which refuses cgroup v1 hosts */
	uid_t engine_uid;
	gid_t engine_gid;
};

struct sbx__chan;

/* Why a sandbox's box is dead (its dead field; 0: alive). */
#define SBX__DEAD_KILLED 1 /* the host killed it: a deadline, a cancel, a kill */
#define SBX__DEAD_OOM 2	   /* its memory cap ended the whole sandbox (the gvisor tier) */

/* The end of "sandbox <id> ..." for a refused run of a dead box. */
static inline const char *sbx__dead_why(int dead)
{
	return dead == SBX__DEAD_OOM ? "ended when a run reached its memory cap (on the gvisor "
				       "tier the cap ends the whole sandbox, not only the run)"
				     : "was killed at an earlier deadline or cancel";
}

struct sbx__docker_box {
	char *id;
	/* Its container name, "sbx-<hex>", and whether an egress link and
	 * rules exist on the host for it (netpolicy/). */
	char session[32];
	int netpolicy;
	pid_t pid;    /* the init's host pid, for cgroup accounting; 0 if unknown */
	unsigned uid; /* the sandbox's own uid and gid */
	int disk;     /* /workspace is a disk of its own on the host (engine/disk.c) */
	int dead;     /* SBX__DEAD_*: ended by the host, runs are refused */
	int gvisor;   /* made at the gvisor tier (by this handle) */
	/* The deadline it was made with (unix s; 0: opened, not made by this
	 * handle): the init's deadline past it is time spent paused. */
	uint64_t made_deadline;
	int paused; /* paused by this handle (its record says so for any handle) */
	/* The gvisor tier: a run with secrets takes docker exec. gVisor lets a
	 * run open PID 1's /proc/1/fd/N, so a request on the channel (with its
	 * secrets) would be within reach of the runs beside it. */
	int chan_no_secrets;
	/* The init's run channel (engine/attach.c), held by the creating handle
	 * only; NULL: runs use docker exec. */
	struct sbx__chan *chan;
	/* The docker exec of a run with a terminal in flight, or "" (engine/tty.c). */
	char tty_exec[160];
	/* The gvisor tier: its v1 memory cgroup, where each run keeps an OOM
	 * witness (cgroups/oom-watch.c); NULL: none, the Engine's events tell. */
	char *memcg;
};

/* engine/egress.c: the allowlist resolved into a plan on the host, written
 * into the create request (pins, label), and removed keeping an earlier
 * error (rc; 0: none). */
struct sbx__np_plan;
int sbx__docker_egress_plan(struct sbx__docker *d, const sbx_policy *p, struct sbx__np_plan *plan);
void sbx__docker_egress_apply(const struct sbx__np_plan *plan, json_t *body);
int sbx__docker_egress_detach(const char *session, int rc);

/* engine/call.c: the Engine requests the files of the backend share. */

/* One Engine request with an optional JSON body and answer. A non-2xx status
 * is an error carrying the Engine's message (SBX_ENOTFOUND for 404). */
/* Refuses, naming what is missing, a tier this daemon cannot give p
 * (engine/tiers.c). Returns 0 or SBX_EUNSUPPORTED. */
int sbx__docker_tier_check(const struct sbx__docker *d, const sbx_policy *p);

/* What a policy's tier adds to a create request's HostConfig hc (its
 * runtime, and on the gvisor tier the pids cap as RLIMIT_NPROC). Returns 0
 * or SBX_ENOMEM. */
int sbx__docker_tier_hostconfig(const sbx_policy *p, json_t *hc);

/* The pids cap of the sandbox's host cgroup for policy p: the policy's on
 * the container tier; on the gvisor tier, room for the Sentry and the host
 * tasks of as many processes as the policy's cap (which the Sentry enforces
 * as RLIMIT_NPROC). */
int64_t sbx__docker_tier_host_pids(const sbx_policy *p);

int sbx__docker_call(struct sbx__docker *d,
		     const char *method,
		     const char *path,
		     json_t *body,
		     long timeout_ms,
		     long *status_out,
		     json_t **out);
/* As sbx__docker_call, with the body given as JSON text (NULL: none). */
int sbx__docker_call_text(struct sbx__docker *d,
			  const char *method,
			  const char *path,
			  const char *text,
			  long timeout_ms,
			  long *status_out,
			  json_t **out);
/* Kills the sandbox's container (it is then removed by AutoRemove) and marks it dead. */
int sbx__docker_kill(struct sbx__docker *d, struct sbx__docker_box *b);
/* The vtable's kill: sbx__docker_kill, with a container gone already as killed. */
int sbx__docker_kill_op(void *state, void *box);
/* Whether the Engine logged an "oom" event for container id since the unix
 * time since, once it is no longer running: the witness that its memory cap
 * ended the whole sandbox (on the gvisor tier the host kills the Sentry).
 * 0 when not, or when the Engine cannot tell. Never sets an error. */
int sbx__docker_ended_by_oom(struct sbx__docker *d, const char *id, long long since);
/* How long an OOM witness may wait for the kernel's second signal. */
#define OOM_WITNESS_WAIT_MS 5000
/* Sets b->memcg for a gvisor sandbox (full id, host pid of its init) when
 * its memory cgroup is v1 and names the container; else leaves it NULL. */
void sbx__docker_box_memcg(struct sbx__docker_box *b, const char *full_id, pid_t pid);
/* A run's own OOM witness on b's cgroup, if b has one (w zeroed first). */
void sbx__docker_run_witness(const struct sbx__docker_box *b, struct sbx__cgroup_oom_watch *w);
/* Whether the memory cap ended sandbox b, which has ended: the run's
 * witness w when it has one, else the Engine's events as above. */
int sbx__docker_box_ended_by_oom(struct sbx__docker *d,
				 struct sbx__docker_box *b,
				 struct sbx__cgroup_oom_watch *w,
				 long long since);
/* Marks b and the run as ended by the memory cap (the gvisor tier: the
 * host's OOM killer takes the Sentry with the run): its exit is a SIGKILL
 * with the OOM flag. */
struct sbx__frame_exit;
void sbx__docker_oom_end(struct sbx__docker_box *b,
			 const struct sbx__run_req *req,
			 struct sbx__frame_exit *exit);
/* For _sbx_cleanup_: a run's witness ends with its scope. */
static inline void sbx__oom_unwatchp(struct sbx__cgroup_oom_watch *w)
{
	sbx__cgroup_oom_unwatch(w);
}
#define _cleanup_oom_watch_ _sbx_cleanup_(sbx__oom_unwatchp)
/* Ends b as sbx__docker_kill does, with why (SBX__DEAD_*) as its end. */
int sbx__docker_kill_why(struct sbx__docker *d, struct sbx__docker_box *b, int why);
/* Whether an /events answer (JSON objects, one per line) holds an "oom"
 * event of container id: 1 or 0. */
int sbx__docker_events_oom(const char *data, size_t len, const char *id);
/* Lists the containers labelled as ours (of one tenant, or this host's only). */
int sbx__docker_list_ours(struct sbx__docker *d, const char *tenant, int only_local, json_t **out);
/* Whether labels[key] is exactly value. */
int sbx__label_is(json_t *labels, const char *key, const char *value);
/* URL-escapes s; free() the result. NULL when out of memory. */
char *sbx__url_escape(const char *s);
/* Removes a container of ours; gone already counts as removed. A paused one
 * is thawed first, and its record (engine/pause.c) removed with it. */
int sbx__docker_remove(struct sbx__docker *d, const char *id);
/* engine/exec.c: runs one request in the sandbox through `sbx-init run`
 * under docker exec. */
int sbx__docker_exec(struct sbx__docker *d,
		     struct sbx__docker_box *b,
		     const struct sbx__run_req *req,
		     sbx_result *res);
/* engine/exec.c: the vtable's spawn: starts req's program detached in the
 * sandbox box (a struct sbx__docker_box; state, the struct sbx__docker). */
int sbx__docker_spawn(void *state, void *box, const struct sbx__run_req *req);
/* engine/exec.c: names the exec of the run with a terminal in flight (NULL:
 * none), under sbx__tty_lock; sets an exec's terminal size. engine/attach.c:
 * the vtable's resize. */
extern pthread_mutex_t sbx__tty_lock;
void sbx__tty_exec_set(struct sbx__docker_box *b, const char *exec_id);
int sbx__tty_exec_resize(struct sbx__docker *d,
			 const char *exec_id,
			 unsigned int rows,
			 unsigned int cols);
int sbx__docker_resize(void *state, void *box, unsigned int rows, unsigned int cols);
/* The vtable's usage (engine/usage.c). */
int sbx__docker_usage(void *state, void *box, sbx_usage *out);
/* The reaper's halves (engine/reap.c): the vtable's reap_list,
 * reap_remove and reap_sweep. */
int sbx__docker_reap_list(
	void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg);
int sbx__docker_reap_remove(void *state, const struct sbx__reap_item *item);
void sbx__docker_reap_sweep(void *state);
/* Start time of a process in clock ticks since boot (/proc/PID/stat field 22). */

/* One mount a sandbox is expected to have (container inspect's Mounts). */
struct sbx__mount_want {
	const char *type;	 /* "bind" */
	const char *source;	 /* on the host */
	const char *destination; /* in the sandbox */
	int rw;
};
/* Checks the Mounts of a container inspect against the expected set: each
 * expected mount present once with its source and mode, nothing else (an
 * image VOLUME, an anonymous or named volume, a bind nobody asked for).
 * Returns 0, or -1 with why naming the first mount that differs. */
int sbx__docker_check_mounts(json_t *mounts,
			     const struct sbx__mount_want *want,
			     size_t want_n,
			     char *why,
			     size_t why_len);
/* Refuses an image whose config declares volumes (Config.Volumes of an image
 * inspect): Docker would give each an anonymous volume on the host's disk,
 * outside the sandbox's disk cap. Returns 0, or -1 with why naming the
 * first volume and the image. */
int sbx__docker_check_image_volumes(json_t *image_inspect,
				    const char *image,
				    char *why,
				    size_t why_len);

/* The seccomp profile given to every sandbox, as compact JSON; free() it. */
char *sbx__seccomp_profile_json(void);

/* engine/image.c: the vtable's image_exists and import_image. */
int sbx__docker_image_exists(void *state, const char *ref);
int sbx__docker_import_image(void *state, const char *tar_path, const char *ref);

/* engine/podman.c: where Podman's compatible API differs. */
/* Reads the flavour, rootless or not and the cgroup version from info, the
 * answer of /info, into d. */
int sbx__engine_flavour(struct sbx__docker *d, json_t *info);
/* Refuses, naming what is missing, what Podman (rootless or not) cannot give p. */
int sbx__podman_check(const struct sbx__docker *d, const sbx_policy *p);
/* Writes profile to the session's own file (0600, the engine's user's) and
 * puts its path in path. */
int sbx__podman_seccomp_write(const struct sbx__docker *d,
			      const char *session,
			      const char *profile,
			      char *path,
			      size_t len);
/* The engine on socket sock in words ("Podman 4.3.1, rootless, cgroup v1,
 * runtime runc", "Docker Engine 24.0.7"), for `sandboxio doctor`. */
int sbx__engine_describe(const char *sock, char *out, size_t len);
/* Removes the session's profile file; gone already is fine. Never fails. */
void sbx__podman_seccomp_remove(const char *session);
/* Removes the profile files of sessions alive() says are gone (0). Call
 * under sbx__uid_lock(), which a create holds from writing its file until
 * its container exists. Returns how many. */
int sbx__podman_sweep(int (*alive)(const char *session, void *payload), void *payload);

/* The docker backend's table (backends/registry.c opens it). */
extern const struct sbx__backend_ops sbx__docker_ops;

/* Labels: every container of ours carries these. */
#define SBX_LABEL_PREFIX "io.sandboxio."
#define SBX_LABEL_MANAGED SBX_LABEL_PREFIX "managed-by"
#define SBX_LABEL_MANAGED_VALUE "sandboxio"

/* Where the init is mounted inside every sandbox, read-only. */
#define SBX_INIT_MOUNT "/.sbx/init"
/* The image's user (its USER when imported); a sandbox runs as a uid of its own. */
#define SBX_SANDBOX_USER "1000:1000"

/*
 * Each live sandbox runs as a uid (and gid) of its own from this range, so
 * that per-uid kernel counters (RLIMIT_NPROC, inotify instances, mqueue
 * bytes, pipe pages) are not shared with other sandboxes or host users. The
 * range lies far above the ids distributions hand out (below 65536) and the
 * subordinate ranges useradd assigns (from 100000, 65536 each); any id of
 * it that the host's passwd or group database knows, or that /etc/subuid
 * or /etc/subgid gives out, is skipped.
 */
#define SBX_UID_BASE 1500000000u
#define SBX_UID_COUNT 65536u
/* Host state of the docker backend: the uid lock, the sandboxes' disks. */
#define SBX_RUN_DIR "/run/sandboxio"
#define SBX_LABEL_UID SBX_LABEL_PREFIX "uid"
#define SBX_LABEL_DISK SBX_LABEL_PREFIX "disk"
/* Where the sandboxes' disk files live: on the host's disk, never a tmpfs. */
#define SBX_DISK_DIR "/var/lib/sandboxio/disks"

/* engine/disk.c: /workspace as a filesystem of its own on the host's disk. */
/* Whether this host can make disks (root, mkfs.ext4, loop devices). */
int sbx__disk_usable(void);
/* Makes the session's disk, bytes big, its root owned by uid, and mounts it
 * where sbx__disk_mount_path says. */
int sbx__disk_make(const char *session, int64_t bytes, unsigned uid);
void sbx__disk_mount_path(const char *session, char *mnt, size_t len);
/* Fails unless the session's disk is mounted (checked before start). */
int sbx__disk_check_mounted(const char *session);
/* Unmounts and deletes the session's disk; gone already counts as done. */
int sbx__disk_remove(const char *session);
/* Whether session is a name this backend makes ("sbx-" and 12 hex digits):
 * the only names that become paths on the host. */
int sbx__disk_session_ok(const char *session);
/* Whether the session's disk is full (for limits_hit). */
int sbx__disk_full(const char *session);
/* Removes the disks of sessions alive() says are gone (0); returns how many. */
int sbx__disk_sweep(int (*alive)(const char *session, void *payload), void *payload);

/* engine/mark.c: which engine a session's host-side pieces belong to. */
/* Marks session as this engine's (the Engine at sock), before its disk or
 * egress link is made. */
int sbx__mark_engine(const char *session, const char *sock);
/* 1 when another engine marked session: a sweep of this one leaves it. */
int sbx__mark_other(const char *session, const char *sock);
/* Removes the mark, once the session's pieces are gone. */
void sbx__mark_remove(const char *session);
/* Removes this engine's marks of sessions alive() says are gone. */
int sbx__mark_sweep(int (*alive)(const char *session, void *payload),
		    void *payload,
		    const char *sock);

/* uid.c: one uid per live sandbox. */
/* Whether uid is one the host uses (passwd, group, subuid, subgid). */
int sbx__uid_host_taken(unsigned uid, const char *subuid_path, const char *subgid_path);
/* Takes the host's lock on choosing uids, waiting until the monotonic
 * deadline (ms); returns the fd that holds it (close it to let go), or an
 * error recorded. */
int sbx__uid_lock(uint64_t deadline);
/* Chooses a uid that no container of ours carries and the host does not
 * use; call under sbx__uid_lock(). */
int sbx__uid_pick(struct sbx__docker *d, unsigned *out);

/* engine/paused.c: the record of a paused sandbox (read by the reaper). */
#define SBX_PAUSED_DIR SBX_RUN_DIR "/paused"
/* Its times are unix seconds, at most this (year 2200 or so). */
#define SBX_PAUSED_TIME_MAX 7258118400ULL
/* A record's line is at most this long. */
#define SBX_PAUSED_LINE_MAX 128
struct sbx__paused {
	uint64_t at;	   /* when it was paused; 0: running again */
	uint64_t bound;	   /* paused: when it is reaped; 0 when running */
	uint64_t deadline; /* the init's deadline (kept while paused, moved once resumed) */
};
/* Parses one record, exactly as sbx__paused_format() writes it: returns 0,
 * or -1 for anything else (a field missing, out of order or past
 * SBX_PAUSED_TIME_MAX, a leading zero, bytes after the newline, a bound not
 * after at, a bound while running). */
int sbx__paused_parse(struct sbx__paused *out, const char *text, size_t len);
/* Writes a record's line into buf; returns its length, or -1 if len is short. */
int sbx__paused_format(char *buf, size_t len, const struct sbx__paused *r);
/* When the reaper may remove the sandbox: bound while paused, else deadline. */
uint64_t sbx__paused_reap_at(const struct sbx__paused *r);
/* engine/paused-file.c: reads container id's record into *out. Returns 1 read,
 * 0 none, -1 one that cannot be read or parsed (no error recorded). */
int sbx__paused_read(const char *id, struct sbx__paused *out);
/* Removes container id's record; none already is fine. */
void sbx__paused_remove(const char *id);
/* Writes container id's record atomically (a 0600 file renamed over the old one). */
int sbx__paused_write(const char *id, const struct sbx__paused *r);
/* engine/call.c: thaws container id if it is paused, so that it can be killed and removed
 * (errors are dropped: the removal that follows says what matters). */
void sbx__paused_thaw(struct sbx__docker *d, const char *id);
/* engine/paused-file.c: removes the records of containers that are gone
 * (alive() says 0) and whose time (sbx__paused_reap_at) has passed. */
void sbx__paused_sweep(int (*alive)(const char *session, void *payload), void *payload);
/* engine/pause.c: the vtable's pause, resume, deadline and paused. */
int sbx__docker_pause(void *state, void *box, uint64_t max_ms);
int sbx__docker_resume(void *state, void *box, int64_t *deadline);
int sbx__docker_deadline(void *state, void *box, int64_t *deadline);
int sbx__docker_paused(void *state, void *box);

/* Slack given to the engine past a run's own deadline before the host kills
 * the sandbox itself. */
#define SBX_RUN_GRACE_MS 5000

#endif
