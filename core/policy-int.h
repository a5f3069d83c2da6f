/*
 * core/policy-int.h: the policy object's layout, shared by core and the
 * backends. Backends read it; only core/policy.c writes it.
 */
#ifndef SBX_CORE_POLICY_INT_H
#define SBX_CORE_POLICY_INT_H

#include <sandboxio/policy.h>

#define SBX_DEFAULT_IMAGE "sandboxio/python:3.11"
#define SBX_DEFAULT_TENANT "default"
#define SBX_DEFAULT_WORKDIR "/workspace"
#define SBX_MAX_ENV 256
#define SBX_MAX_ENV_BYTES (256u * 1024u)

struct sbx_policy {
	uint64_t timeout_ms[SBX_TIMEOUT_SANDBOX + 1];
	int64_t limit[SBX_LIMIT_OUTPUT + 1];
	char *image;
	char *tenant;
	char *workdir;
	char **env; /* "NAME=VALUE", env_n entries */
	size_t env_n;
	sbx_tier min_tier;
	int detached;
};

/* Validators shared with the run path and the CLI. */
int sbx__valid_env_name(const char *name, size_t len);
int sbx__valid_abs_path(const char *path);

#endif
