/*
 * core/policy-int.h: the policy object's layout, shared by core and the
 * backends. Backends read it; only core writes it (core/policy.c, and
 * core/config.c, which fills in the operator's defaults).
 */
#ifndef SBX_CORE_POLICY_INT_H
#define SBX_CORE_POLICY_INT_H

#include <sandboxio/policy.h>

#include "core/limit-kinds.h"
#include "netpolicy/allow-int.h"

#define SBX_DEFAULT_IMAGE "sandboxio/python:3.11"
#define SBX_DEFAULT_TENANT "default"
#define SBX_DEFAULT_WORKDIR "/workspace"
#define SBX_MAX_ENV 256
#define SBX_MAX_ENV_BYTES (256u * 1024u)

struct sbx_policy {
	uint64_t timeout_ms[SBX_TIMEOUT_SANDBOX + 1];
	int64_t limit[SBX__LIMIT_N];
	char *image;
	char *tenant;
	char *workdir;
	char **env; /* "NAME=VALUE", env_n entries */
	size_t env_n;
	sbx_tier min_tier;
	/* How long a sandbox may stay paused: the operator config's
	 * ceilings.pause, carried in by the merge; SBX_PAUSE_MAX_DEFAULT_MS in a
	 * policy that no config has seen. Not set by a caller. */
	uint64_t pause_max_ms;
	int detached;
	struct sbx__allow *allow; /* egress allowlist, allow_n entries; none: no egress */
	size_t allow_n;
	uint32_t set; /* SBX__SET_* bits: what a setter set explicitly */
	/* The id of the pool that made the sandbox (core/pool.c); "": none. Set
	 * by core on the merged copy only; never copied by sbx_policy_dup(). */
	char pool[40];
	/* What the sandbox's egress name checker records with (netpolicy/egress.c):
	 * the backend's audit files (lent by the backend handle, which outlives
	 * the create; NULL: none) and the sandbox span's ids ("": not tracing).
	 * Set by core on the merged copy only; never copied by sbx_policy_dup(). */
	const char *audit_file[2];
	char trace_id[33], span_id[17];
	/* The tracer's exporter settings (sbx__tracer_text, lent by the backend
	 * handle; NULL: not tracing), so that the checker exports its spans. */
	const char *otlp;
};

/*
 * Which fields the caller set explicitly, so that the operator config's
 * defaults fill only the others and its ceilings check only these
 * (core/config.c). Each setter sets its bit on success.
 */
#define SBX__SET_TIMEOUT(kind) (1u << (unsigned)(kind))	     /* bits 1..4 */
#define SBX__SET_LIMIT(kind) (1u << (8u + (unsigned)(kind))) /* bits 9..14 */
#define SBX__SET_IMAGE (1u << 16)
#define SBX__SET_TENANT (1u << 17)
#define SBX__SET_WORKDIR (1u << 18)
#define SBX__SET_MIN_TIER (1u << 19)

/* Validators shared with the run path and the CLI. */
int sbx__valid_env_name(const char *name, size_t len);
int sbx__valid_abs_path(const char *path);

#endif
