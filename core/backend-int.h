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

#include "core/policy-int.h"

#define SBX_BACKEND_OPS_VERSION 1

/* How a backend ended a sandbox during a run (struct sbx_run_req.ended). */
enum sbx__ended {
	SBX__ENDED_NO = 0,
	SBX__ENDED_TIMEOUT = 1, /* the host's deadline passed: the sandbox was killed */
	SBX__ENDED_KILLED = 2,	/* canceled by the caller, or by sbx_sandbox_kill() */
	SBX__ENDED_ERROR = 3,	/* the sandbox broke the run protocol and was killed */
};

/* One run, fully resolved by core. */
struct sbx_run_req {
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
 * One backend family. Core names none: backends/registry.c holds the table
 * of them and opens one by name (sbx_backend_open()).
 */
struct sbx_backend_ops {
	unsigned int version;
	const char *name;
	/* Sandboxes run on this host: the caller's host-side choices (a hosts
	 * file, the init) are bounded by the operator config
	 * (sbx__config_check_backend_choices()). */
	int host_choices;
	int (*open)(void **state, const sbx_backend_options *opts);
	void (*free)(void *state);
	/* Refuses (SBX_EUNSUPPORTED) any control of p it cannot enforce. */
	int (*check)(void *state, const sbx_policy *p);
	/* Creates and starts; writes *box, *id (malloc'ed) and *tier. */
	int (*create)(void *state, const sbx_policy *p, void **box, char **id, sbx_tier *tier);
	/* Opens an existing sandbox of ours; fills the policy it was created under. */
	int (*open_box)(void *state, const char *id, void **box, sbx_policy *p, sbx_tier *tier);
	/* Runs; fills res (buffers malloc'ed). */
	int (*run)(void *state, void *box, const struct sbx_run_req *req, sbx_result *res);
	/* Kills and removes; frees box whatever the outcome. */
	int (*destroy)(void *state, void *box);
	/* Kills the sandbox; may be called while another thread runs in it. */
	int (*kill)(void *state, void *box);
	/* Frees box only, leaving the sandbox alive. */
	void (*release)(void *state, void *box);
	int (*list)(void *state, const char *tenant, sbx_list_cb cb, void *payload);
	/* only_local: this host's sandboxes only (the reap at open). */
	int (*reap)(void *state,
		    const char *tenant,
		    int dry_run,
		    int only_local,
		    sbx_reap_cb cb,
		    void *payload);
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
};

#endif
