/*
 * sandboxio/config.h: the operator config, which bounds what any call may
 * ask for.
 *
 * An operator writes a JSON file (docs/config.md) holding defaults and
 * ceilings for deadlines and resource caps, the permitted images, egress,
 * backends and tiers, whether secrets may be passed and whether a tenant id
 * is required. A backend opened with a config (sbx_backend_options.config)
 * applies it to every sandbox it creates, in one merge:
 *
 *	built-in defaults < the config's defaults < the call's request
 *
 * ^Each value the call set explicitly is checked against the config's
 * ceiling; a request beyond a ceiling is refused with SBX_EDENIED and a
 * message naming the ceiling and the config file. ^A request is never
 * clamped. ^A value the call did not set takes the config's default.
 *
 * A config is immutable once parsed and may be shared by threads.
 */
#ifndef SANDBOXIO_CONFIG_H
#define SANDBOXIO_CONFIG_H

#include "common.h"
#include "policy.h"

SBX_BEGIN_DECL

typedef struct sbx_config sbx_config;

/** Where sbx_config_load() looks last; the bound of sbx_config_load_narrowed(). */
#define SBX_CONFIG_SYSTEM_PATH "/etc/sandboxio/config.json"
/** The environment variable sbx_config_load() reads (with secure_getenv). */
#define SBX_CONFIG_ENV "SANDBOXIO_CONFIG"
/** A config file larger than this is refused. */
#define SBX_CONFIG_MAX_BYTES (1u << 20)

/**
 * Loads the operator config, trusting whoever names it.
 *
 * For a host program that is itself the operator: the config it names (or
 * that $SANDBOXIO_CONFIG names) replaces the system config and may widen
 * every bound up to the built-in ranges. ^A path given through this call is
 * trusted as the operator's. A program that takes the path, or its
 * environment, from a caller it does not trust (a command line an agent
 * writes) uses sbx_config_load_narrowed() instead.
 *
 * Looks at path if it is not NULL, else at $SANDBOXIO_CONFIG if it is set
 * and not empty (read with secure_getenv, so ignored in setuid programs),
 * else at SBX_CONFIG_SYSTEM_PATH. ^When path is NULL, the variable is unset
 * and the system file does not exist, *out is the built-in config (no
 * operator defaults, the built-in ceilings, anything else permitted);
 * sbx_config_source() then returns NULL. ^A path given explicitly or by the
 * variable that does not exist is SBX_ENOTFOUND.
 *
 * ^The file is refused with SBX_EDENIED unless it is a regular file owned by
 * root or the effective user and writable by nobody else, and each directory
 * above it is owned by root or the effective user and writable by nobody
 * else (a root-owned sticky directory such as /tmp is accepted). ^The
 * content is parsed as strictly as sbx_config_parse() does.
 *
 * @param[out] out written only on success.
 * Ownership: free with sbx_config_free().
 * Returns: 0, SBX_EINVALID (malformed config), SBX_ENOTFOUND, SBX_EDENIED
 * (unsafe permissions, unreadable), SBX_ETOOBIG (over SBX_CONFIG_MAX_BYTES),
 * SBX_ENOMEM.
 */
SBX_EXTERN int sbx_config_load(sbx_config **out, const char *path);

/**
 * Loads the system config narrowed by an untrusted one.
 *
 * The bound is SBX_CONFIG_SYSTEM_PATH when it exists, else the built-in
 * config. ^The system file is refused with SBX_EDENIED unless it and each
 * directory above it are owned by root and writable by nobody else (a
 * root-owned sticky directory is accepted). The narrowing config is path
 * if it is not NULL, else $SANDBOXIO_CONFIG if set and not empty (read with
 * secure_getenv); it is checked as sbx_config_load() checks a file. ^With
 * neither, *out is the system config.
 *
 * ^The narrowing config can only narrow the bound: each ceiling is the
 * smaller of the two; each default is the narrowing config's, else the
 * system's, and must lie within the system's ceilings and the narrowed
 * ones; images, egress cidrs and hosts, and backends are the narrowing
 * config's lists, each entry of which must be permitted by the system
 * config (an absent "images" or "backends" keeps the system's list; an
 * absent "egress" permits none, as in any file); secrets are allowed only
 * if both allow them; a tenant is required if either requires one;
 * min_tier is the higher. ^A narrowing value beyond the bound is refused
 * with SBX_EDENIED and a message naming the key, the narrowing file and
 * the system config; it is never clamped or dropped.
 *
 * ^sbx_config_source() of the result is the narrowing file (NULL when
 * there is none and the bound is built-in); sbx_config_describe() names
 * the file each value came from.
 *
 * @param path the narrowing config; NULL: $SANDBOXIO_CONFIG, else none.
 * @param[out] out written only on success.
 * Ownership: free with sbx_config_free().
 * Returns: as sbx_config_load(); SBX_EDENIED also for a narrowing config
 * that would widen the bound.
 */
SBX_EXTERN int sbx_config_load_narrowed(sbx_config **out, const char *path);

/**
 * Parses a config from memory.
 *
 * ^Unknown keys, duplicate keys, wrong types, a default or ceiling that
 * would unset a control (0, negative), one outside the built-in range, and
 * an effective default above its ceiling are refused with SBX_EINVALID and
 * a message naming the key path (such as "ceilings.memory") and origin.
 *
 * @param json the config text, len bytes (need not be NUL-terminated).
 * @param origin what errors and sbx_config_describe() call the config (a
 *        file name); NULL: "(inline)". Copied.
 * @param[out] out written only on success.
 * Ownership: free with sbx_config_free().
 * Returns: 0, SBX_EINVALID, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_config_parse(sbx_config **out, const char *json, size_t len, const char *origin);

/**
 * Drops the caller's reference. A backend opened with the config holds its
 * own, so the config may be freed right after sbx_backend_open().
 * ^NULL is a harmless no-op.
 */
SBX_EXTERN void sbx_config_free(sbx_config *c);

/**
 * The file the config came from (or the origin given to sbx_config_parse());
 * NULL for the built-in config and for NULL. Lent for the config's lifetime.
 */
SBX_EXTERN const char *sbx_config_source(const sbx_config *c);

/**
 * The ceiling on every deadline, in milliseconds: the config's
 * "ceilings.timeout", else SBX_MAX_TIMEOUT_MS. c may be NULL (built-in).
 */
SBX_EXTERN uint64_t sbx_config_timeout_ceiling_ms(const sbx_config *c);

/**
 * The ceiling on one resource cap, in the units of sbx_policy_set_limit():
 * the config's ceiling, else the built-in SBX_MAX_*; 0 for an unknown kind.
 * c may be NULL (built-in).
 */
SBX_EXTERN int64_t sbx_config_limit_ceiling(const sbx_config *c, sbx_limit_kind which);

/**
 * The ceiling on how long a sandbox may stay paused (sbx_sandbox_pause()),
 * in milliseconds: the config's "ceilings.pause", else
 * SBX_PAUSE_MAX_DEFAULT_MS (one hour). c may be NULL (built-in).
 */
SBX_EXTERN uint64_t sbx_config_pause_ceiling_ms(const sbx_config *c);

/**
 * Merges a request with a config, as sbx_sandbox_create() does: the
 * request's explicitly set values are checked against the ceilings and the
 * permitted images, backends and egress; unset values take the config's
 * defaults; the tier is raised to the config's min_tier.
 *
 * @param c the config; NULL: the built-in config.
 * @param request the caller's policy; not changed.
 * @param backend the backend's name; NULL: "docker".
 * @param[out] out the effective policy; written only on success.
 * Ownership: free *out with sbx_policy_free().
 * Returns: 0, SBX_EINVALID (NULL argument), SBX_EDENIED (beyond a ceiling,
 * an image, backend or egress entry not permitted, a tenant required),
 * SBX_ENOMEM.
 */
SBX_EXTERN int sbx_config_apply(sbx_policy **out,
				const sbx_config *c,
				const sbx_policy *request,
				const char *backend);

/**
 * Describes the effective result of sbx_config_apply() as JSON: every value
 * with its origin ("builtin", the config's source, for a config of
 * sbx_config_load_narrowed() the system or the narrowing file, or
 * "request"), the system config ("system", for those configs only), the
 * ceilings, and the permitted images, egress, backends, secrets, tenant
 * rule and minimum tier. ^Values of environment variables and secrets never
 * appear in it.
 *
 * @param request NULL: a caller that set nothing.
 * @param[out] out NUL-terminated JSON text; written only on success.
 * Ownership: free *out with sbx_free().
 * Returns: as sbx_config_apply().
 */
SBX_EXTERN int sbx_config_describe(char **out,
				   const sbx_config *c,
				   const sbx_policy *request,
				   const char *backend);

SBX_END_DECL

#endif
