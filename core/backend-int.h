/*
 * core/backend-int.h: the backend vtable (curl's vtls shape: one struct of
 * function pointers per family) and the records core hands to backends.
 *
 * Core validates arguments, merges env and deadlines, and closes records;
 * a backend only maps a validated request onto its engine. A backend that
 * cannot enforce a control returns SBX_EUNSUPPORTED from check().
 */
#ifndef SBX_CORE_BACKEND_INT_H
#define SBX_CORE_BACKEND_INT_H

#include <sandboxio/sandbox.h>

#include "core/owner-int.h"
#include "core/policy-int.h"

#define SBX_BACKEND_OPS_VERSION 1

/* How a backend ended a sandbox during a run (struct sbx__run_req.ended). */
enum sbx__ended {
	SBX__ENDED_NO = 0,
	SBX__ENDED_TIMEOUT = 1, /* the host's deadline passed: the sandbox was killed */
	SBX__ENDED_KILLED = 2,	/* canceled by the caller, or by sbx_sandbox_kill() */
	SBX__ENDED_ERROR = 3,	/* the sandbox broke the run protocol and was killed */
	SBX__ENDED_OOM = 4,	/* its memory cap ended the whole sandbox (gvisor tier) */
};

/* One run, fully resolved by core. */
struct sbx__run_req {
	const char *const *argv;
	/* NULL-terminated "NAME=VALUE", plain and secret; the secret ones live in
	 * locked memory, so a backend copies them only into buffers it wipes, and
	 * only into the per-run process environment, never into a container's
	 * config, labels, image or any command line. */
	const char *const *env;
	int has_secrets; /* env holds secrets */
	const char *workdir;
	const void *stdin_data;
	size_t stdin_len;
	int stdin_fd; /* >= 0: stdin is read from it as it comes (stdin_len is 0) */
	int pty;      /* under a pseudo-terminal of rows x cols (1..4096) */
	int as_root;  /* as uid/gid 0 of the sandbox, with no capability (ops->root_runs) */
	unsigned int rows, cols;
	uint64_t timeout_ms; /* > 0, always */
	/* Every chunk of program output goes, raw, to sink (core/output.c), which
	 * redacts, caps, keeps and forwards it. It returns 0 to go on, 1 when the
	 * caller canceled the run (the backend kills the sandbox and returns
	 * SBX_ECANCELED), -2 when memory ran out. */
	int (*sink)(void *arg, int stream, const void *data, size_t len);
	void *sink_arg;
	int *ended; /* out: an sbx__ended, when the backend ended the sandbox */
};

/*
 * One sandbox of ours as a backend lists it for the reaper (core/reap.c):
 * its id, its tenant and the owner facts recorded with it, as strings (any
 * may be NULL), which core judges with core/owner.c. Valid only during the
 * call it is handed to.
 */
struct sbx__reap_item {
	const char *id;
	const char *tenant; /* NULL: none recorded (reported as "") */
	/* This process as the backend sees it: the host and boot (and PID
	 * namespace) the owner facts are judged against. */
	const struct sbx__owner *self;
	const char *deadline;
	const char *host;
	const char *boot;
	const char *pid; /* "0": detached, left to its deadline */
	const char *start;
	/* Non-zero: the backend records the owner's PID namespace (pidns) and
	 * an owner pid is judged only in it (sbx__owner_judge_ns()). */
	int has_pidns;
	const char *pidns;
	/* What the backend's reap_remove needs besides the id, kept by core
	 * for it: a name (NULL: none) and flags of the backend's own. */
	const char *extra;
	unsigned int extra_flags;
};

/* Hears each listed sandbox. Returns 0 to go on, 1 to stop the listing
 * (not an error), or SBX_ENOMEM to stop it with the backend's own
 * out-of-memory error. */
typedef int (*sbx__reap_fn)(void *arg, const struct sbx__reap_item *item);

/*
 * One backend family. Core names none: backends/registry.c holds the table
 * of them and opens one by name (sbx_backend_open()).
 */
struct sbx__backend_ops {
	unsigned int version;
	const char *name;
	/* Sandboxes run on this host: the caller's host-side choices (a hosts
	 * file, the init) are bounded by the operator config
	 * (sbx__config_check_backend_choices()). */
	int host_choices;
	/* Runs may ask to run as the sandbox's root (sbx_run_options.as_root);
	 * the backend keeps every other control of the run as it is. */
	int root_runs;
	/* Every entry takes its outputs last. Writes *state. */
	int (*open)(const sbx_backend_options *opts, void **state);
	void (*free)(void *state);
	/* Refuses (SBX_EUNSUPPORTED) any control of p it cannot enforce. */
	int (*check)(void *state, const sbx_policy *p);
	/* Creates and starts; writes *box, *id (malloc'ed) and *tier. */
	int (*create)(void *state, const sbx_policy *p, void **box, char **id, sbx_tier *tier);
	/* Opens an existing sandbox of ours; fills the policy it was created under. */
	int (*open_box)(void *state, const char *id, void **box, sbx_policy *p, sbx_tier *tier);
	/* Runs; fills res (buffers malloc'ed). */
	int (*run)(void *state, void *box, const struct sbx__run_req *req, sbx_result *res);
	/* Kills and removes; frees box whatever the outcome. */
	int (*destroy)(void *state, void *box);
	/* Kills the sandbox; may be called while another thread runs in it. */
	int (*kill)(void *state, void *box);
	/* Frees box only, leaving the sandbox alive. */
	void (*release)(void *state, void *box);
	int (*list)(void *state, const char *tenant, sbx_list_cb cb, void *payload);
	/* The reaper's two halves (the loop is core's, core/reap.c). reap_list
	 * calls fn for each sandbox of ours, of one tenant or all (NULL);
	 * only_local: this host's only (the reap at open). Returns 0 or an
	 * error, already said as the backend's reap says it. */
	int (*reap_list)(
		void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg);
	/* Removes one listed sandbox (item: its id, tenant, extra and
	 * extra_flags; no owner facts). Gone already counts as removed. */
	int (*reap_remove)(void *state, const struct sbx__reap_item *item);
	/* Optional: after a reap that removes (not a dry run), what sandboxes
	 * that are gone left behind. */
	void (*reap_sweep)(void *state);
	/* Sandboxes one reap condemns at most: core's list of them grows by
	 * doubling from 16, and the listing stops when the next size would pass
	 * this; 0: no bound. */
	size_t reap_max;
	int (*image_exists)(void *state, const char *ref);
	int (*import_image)(void *state, const char *tar_path, const char *ref);
	/* Optional (NULL: core moves files through a run of sh/cat). Writes
	 * len bytes to the absolute path (created or replaced, mode bits). */
	int (*write_file)(void *state,
			  void *box,
			  const char *path,
			  const void *data,
			  size_t len,
			  unsigned int mode);
	/* Optional. Reads at most max bytes of path into *out (malloc'ed,
	 * NUL-terminated; raw: core redacts); more than max is SBX_ETOOBIG. */
	int (*read_file)(
		void *state, void *box, const char *path, size_t max, char **out, size_t *len);
	/* Optional (NULL: code contexts are SBX_EUNSUPPORTED). Starts req's
	 * program as a run nobody waits for: under the sandbox's init, user,
	 * seccomp, caps and limits, killed at req->timeout_ms; its output is
	 * dropped and its stdin is empty. No secrets. */
	int (*spawn)(void *state, void *box, const struct sbx__run_req *req);
	/* Optional (NULL: runs with a terminal or streamed stdin are refused).
	 * Sets the size of the terminal of the run in flight in box, from any
	 * thread; SBX_ENOTFOUND when none is. */
	int (*resize)(void *state, void *box, unsigned int rows, unsigned int cols);
	/* Optional (NULL: SBX_EUNSUPPORTED). What the sandbox uses now, read
	 * back from the host; fields it cannot read are -1. */
	int (*usage)(void *state, void *box, sbx_usage *out);
	/* Optional (NULL: SBX_EUNSUPPORTED). Freezes every process of the
	 * sandbox; it is reaped once max_ms (1..SBX_PAUSE_MAX_MS) pass paused. */
	int (*pause)(void *state, void *box, uint64_t max_ms);
	/* Thaws a paused sandbox and moves its deadline by the time it was
	 * paused; writes the moved deadline (unix seconds). */
	int (*resume)(void *state, void *box, int64_t *deadline);
	/* The deadline (unix seconds) the sandbox itself keeps now. */
	int (*deadline)(void *state, void *box, int64_t *deadline);
	/* Whether the sandbox is paused (by any handle): 1 or 0. */
	int (*paused)(void *state, void *box);
};

#endif
