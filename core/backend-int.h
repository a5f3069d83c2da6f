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

/* One run, fully resolved by core. */
struct sbx_run_req {
	const char *const *argv;
	const char *const *env; /* NULL-terminated "NAME=VALUE", plain and secret */
	const char *workdir;
	const void *stdin_data;
	size_t stdin_len;
	uint64_t timeout_ms; /* > 0, always */
	int64_t output_cap;  /* bytes per stream */
	sbx_output_cb on_output;
	void *payload;
};

struct sbx_backend_ops {
	unsigned int version;
	const char *name;
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
	int (*reap)(void *state, const char *tenant, int dry_run, sbx_reap_cb cb, void *payload);
	int (*image_exists)(void *state, const char *ref);
	int (*import_image)(void *state, const char *tar_path, const char *ref);
};

extern const struct sbx_backend_ops sbx__docker_ops;

#endif
