/*
 * core/config-int.h: the operator config inside the library: references
 * held by backends, the one merge, and the checks that other modules call
 * where their own input enters (secrets, egress allowlists).
 */
#ifndef SBX_CORE_CONFIG_INT_H
#define SBX_CORE_CONFIG_INT_H

#include <sys/types.h>

#include <sandboxio/config.h>

#include "core/policy-int.h"

/* Where an effective value came from. */
enum sbx__origin {
	SBX__ORIGIN_BUILTIN = 0,
	SBX__ORIGIN_FILE = 1,
	SBX__ORIGIN_REQUEST = 2,
};

/* Filled by sbx__config_merge() for sbx_config_describe(). */
struct sbx__config_origins {
	enum sbx__origin timeout[SBX_TIMEOUT_SANDBOX + 1];
	enum sbx__origin limit[SBX__LIMIT_N];
	enum sbx__origin image;
	enum sbx__origin tenant;
	enum sbx__origin min_tier;
};

/* Value types of the config's keys. */
enum sbx__config_type {
	SBX__CFG_OBJECT,
	SBX__CFG_SECONDS,
	SBX__CFG_CPUS,
	SBX__CFG_SIZE,
	SBX__CFG_COUNT,
	SBX__CFG_IMAGE,
	SBX__CFG_IMAGES,
	SBX__CFG_CIDRS,
	SBX__CFG_HOSTS,
	SBX__CFG_BACKENDS,
	SBX__CFG_BOOL,
	SBX__CFG_TIER,
	SBX__CFG_PATH,
	SBX__CFG_PAUSE,
};

/*
 * The one table of keys: the parser accepts exactly these paths, and the
 * unit tests check that docs/config.md documents each of them. Ends with a
 * NULL path.
 */
struct sbx__config_key {
	const char *path; /* "ceilings.memory" */
	enum sbx__config_type type;
	int which; /* 0: defaults, 1: ceilings (bound keys only) */
	int slot;  /* 0: timeout, else an sbx_limit_kind (bound keys only) */
	const char *doc;
};
extern const struct sbx__config_key sbx__config_keys[];

/* Takes a reference; c may be NULL (then returns NULL). */
sbx_config *sbx__config_ref(const sbx_config *c);

/*
 * The merge: built-in defaults < the config's defaults < the request.
 * c NULL means the built-in config. origins may be NULL.
 */
int sbx__config_merge(sbx_policy **out,
		      const sbx_config *c,
		      const sbx_policy *req,
		      const char *backend,
		      struct sbx__config_origins *origins);

/* SBX_EDENIED when v is above the config's own ceiling for kind (a
 * built-in ceiling is the setters' business, not this check's). */
int sbx__config_check_limit(const sbx_config *c, sbx_limit_kind kind, int64_t v);

/*
 * SBX_EDENIED when a pause bound of max_ms is above ceiling_ms, the pause
 * ceiling of a sandbox's policy, which the merge took from c (NULL: the
 * built-in config); the message names ceilings.pause and where it is set.
 */
int sbx__config_check_pause(const sbx_config *c, uint64_t ceiling_ms, uint64_t max_ms);

/* SBX_EDENIED unless the config permits the backend. */
int sbx__config_check_backend(const sbx_config *c, const char *backend);

/*
 * Secrets: called by the run path with the number of secrets a run passes,
 * before any of them reaches a backend. SBX_EDENIED when the config says
 * "secrets": false and n is not 0.
 */
int sbx__config_check_secrets(const sbx_config *c, size_t n);

/*
 * Egress allowlists: the merge checks every allowlist entry with these; it
 * must lie inside the config's "egress". A host must be listed in egress.hosts
 * (compared without case); a CIDR or bare address must lie inside one of
 * egress.cidrs. SBX_EDENIED otherwise, and always when the config has no
 * "egress" key. The built-in config (no file) permits any entry.
 */
int sbx__config_check_egress_host(const sbx_config *c, const char *host);
int sbx__config_check_egress_cidr(const sbx_config *c, const char *cidr);

/*
 * Whether c carries the operator's bound: the system config (or one
 * narrowed from it) loaded by sbx_config_load_narrowed() from an existing
 * system file. Then the call's arguments and environment are untrusted, and
 * what they could otherwise choose (how allowed names resolve, which init
 * becomes PID 1, whether there is an audit) is the operator's.
 */
int sbx__config_operator_bound(const sbx_config *c);

/* The system config's egress.hosts_file and audit.path (NULL: none). */
const char *sbx__config_hosts_file(const sbx_config *c);
const char *sbx__config_audit_path(const sbx_config *c);

/*
 * Checks the caller's choices of a docker backend against c (NULL: the
 * built-in config) and says which hosts file resolves allowlist names:
 * *hosts_file is c's egress.hosts_file when it has one, else caller_hosts.
 * Under the operator's bound, a caller's hosts file (caller_hosts, or
 * $SANDBOXIO_HOSTS_FILE) and $SANDBOXIO_INIT are refused with SBX_EDENIED
 * naming the system config; so is, under any config that names a hosts
 * file, a caller's different one.
 */
int sbx__config_check_backend_choices(const sbx_config *c,
				      const char *caller_hosts,
				      const char **hosts_file);

/* sbx_config_load() with the system path replaced (for tests). */
int sbx__config_load_search(sbx_config **out, const char *path, const char *system_path);

/*
 * sbx_config_load_narrowed() with the system path and the owner it must
 * have (besides root) replaced, for tests; the library passes
 * SBX_CONFIG_SYSTEM_PATH and 0 (root only).
 */
int sbx__config_load_narrowed(sbx_config **out,
			      const char *path,
			      const char *system_path,
			      uid_t system_owner);

#endif
