/*
 * sandboxio/policy.h: the policy object, the same on every backend.
 *
 * A new policy is already the secure default: no network, every deadline
 * 300 s, CPU 1, memory 512 MiB (swap equal to memory), 256 pids, 1 GiB of
 * writable space, 1024 open files, no core dumps, 16 MiB of captured output
 * per stream, tier "container". A setter may raise a value up to the built-in
 * ceiling (or lower it to a floor); ^it refuses 0, negative and "unlimited"
 * with SBX_EINVALID and leaves the policy unchanged. There is no way to unset
 * a limit or a deadline.
 */
#ifndef SANDBOXIO_POLICY_H
#define SANDBOXIO_POLICY_H

#include "common.h"

SBX_BEGIN_DECL

typedef struct sbx_policy sbx_policy;

/** Which deadline a timeout applies to. */
typedef enum {
	SBX_TIMEOUT_INVALID = 0,
	SBX_TIMEOUT_CREATE = 1,	  /* create: image check, create, start, read-back */
	SBX_TIMEOUT_RUN = 2,	  /* each sbx_sandbox_run() */
	SBX_TIMEOUT_RUN_CODE = 3, /* each sbx_sandbox_run_code() */
	SBX_TIMEOUT_SANDBOX = 4	  /* the sandbox's whole life: the dead-man deadline */
} sbx_timeout_kind;

/**
 * Resource caps. Each is always applied. On the gvisor tier of the docker
 * backend the pids and memory caps bound the whole sandbox, the Sentry (its
 * user-space kernel) included: its threads count against pids, so a pids
 * cap below 64 is refused there (SBX_EUNSUPPORTED at create).
 */
typedef enum {
	SBX_LIMIT_INVALID = 0,
	SBX_LIMIT_CPU_MILLI = 1, /* CPU in thousandths of a core; default 1000 */
	SBX_LIMIT_MEMORY = 2,	 /* bytes; swap is set equal; default 512 MiB */
	SBX_LIMIT_PIDS = 3,	 /* processes and threads; default 256 */
	SBX_LIMIT_DISK = 4,	 /* bytes of writable space; default 1 GiB */
	SBX_LIMIT_NOFILE = 5,	 /* open files per process; default 1024 */
	SBX_LIMIT_OUTPUT = 6	 /* captured bytes per stream per run; default 16 MiB */
} sbx_limit_kind;

/** Isolation tiers, weakest first. */
typedef enum {
	SBX_TIER_CONTAINER = 0, /* runc: shared kernel */
	SBX_TIER_GVISOR = 1,	/* gVisor (runsc) */
	SBX_TIER_MICROVM = 2	/* a virtual machine per sandbox */
} sbx_tier;

/** Built-in bounds, in the units of each setter. */
#define SBX_DEFAULT_TIMEOUT_MS 300000u
#define SBX_MAX_TIMEOUT_MS (24u * 3600u * 1000u)
#define SBX_DEFAULT_CPU_MILLI 1000
#define SBX_MAX_CPU_MILLI 64000
#define SBX_MIN_CPU_MILLI 10
#define SBX_DEFAULT_MEMORY (512ll << 20)
#define SBX_MIN_MEMORY (16ll << 20)
#define SBX_MAX_MEMORY (64ll << 30)
#define SBX_DEFAULT_PIDS 256
#define SBX_MAX_PIDS 32768
#define SBX_MIN_PIDS 8
#define SBX_DEFAULT_DISK (1ll << 30)
#define SBX_MIN_DISK (1ll << 20)
#define SBX_MAX_DISK (64ll << 30)
#define SBX_DEFAULT_NOFILE 1024
#define SBX_MIN_NOFILE 64
#define SBX_MAX_NOFILE 65536
#define SBX_DEFAULT_OUTPUT (16ll << 20)
#define SBX_MIN_OUTPUT 1024
#define SBX_MAX_OUTPUT (1ll << 30)

/**
 * Creates a policy holding the defaults above.
 *
 * @param[out] out the new policy; written only on success.
 * Ownership: the caller frees it with sbx_policy_free().
 * Returns: 0, SBX_EINVALID (out is NULL), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_new(sbx_policy **out);

/** Copies a policy. Returns: 0, SBX_EINVALID, SBX_ENOMEM. */
SBX_EXTERN int sbx_policy_dup(sbx_policy **out, const sbx_policy *p);

/** Frees a policy. ^NULL is a harmless no-op. */
SBX_EXTERN void sbx_policy_free(sbx_policy *p);

/**
 * Sets one deadline, in milliseconds.
 *
 * ^0 is refused (there is no "unbounded"), and so is anything above
 * SBX_MAX_TIMEOUT_MS (24 h). Returns: 0, SBX_EINVALID.
 */
SBX_EXTERN int sbx_policy_set_timeout_ms(sbx_policy *p, sbx_timeout_kind which, uint64_t ms);

/** Reads one deadline back, in milliseconds (0 for an unknown kind). */
SBX_EXTERN uint64_t sbx_policy_timeout_ms(const sbx_policy *p, sbx_timeout_kind which);

/**
 * Sets one resource cap. ^A value of 0 or below, or outside the kind's
 * [SBX_MIN_*, SBX_MAX_*] range, is refused with SBX_EINVALID and changes
 * nothing. Returns: 0, SBX_EINVALID.
 */
SBX_EXTERN int sbx_policy_set_limit(sbx_policy *p, sbx_limit_kind which, int64_t value);

/** Reads one cap back (0 for an unknown kind). */
SBX_EXTERN int64_t sbx_policy_limit(const sbx_policy *p, sbx_limit_kind which);

/**
 * Sets the image reference ("sandboxio/python:3.11" by default).
 * ^A reference with characters outside [A-Za-z0-9._:/@-], or longer than 255
 * bytes, is refused. The string is copied. Returns: 0, SBX_EINVALID, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_set_image(sbx_policy *p, const char *ref);

/** The image reference; lent until the policy is changed or freed. */
SBX_EXTERN const char *sbx_policy_image(const sbx_policy *p);

/**
 * Sets the tenant id, written into the sandbox's labels (default "default").
 * 1 to 63 bytes of [A-Za-z0-9._-]. Returns: 0, SBX_EINVALID, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_set_tenant(sbx_policy *p, const char *tenant);

/** The tenant id; lent until the policy is changed or freed. */
SBX_EXTERN const char *sbx_policy_tenant(const sbx_policy *p);

/**
 * Adds a plain environment variable for every run (NAME=VALUE). Plain env is
 * not secret: it may be seen in the engine's records. Secrets go through
 * sbx_secrets. NAME is [A-Za-z_][A-Za-z0-9_]*; a later value for the same
 * name replaces the earlier one. At most 256 variables and 256 KiB in all.
 * Returns: 0, SBX_EINVALID, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_set_env(sbx_policy *p, const char *name, const char *value);

/**
 * Sets the working directory of runs ("/workspace" by default): an absolute
 * path without "..". Returns: 0, SBX_EINVALID, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_set_workdir(sbx_policy *p, const char *dir);

/** The working directory; lent until the policy is changed or freed. */
SBX_EXTERN const char *sbx_policy_workdir(const sbx_policy *p);

/**
 * Demands an isolation tier. ^A backend that cannot provide at least this
 * tier refuses to create with SBX_EUNSUPPORTED. Returns: 0, SBX_EINVALID.
 */
SBX_EXTERN int sbx_policy_set_min_tier(sbx_policy *p, sbx_tier tier);

/** The demanded tier. */
SBX_EXTERN sbx_tier sbx_policy_min_tier(const sbx_policy *p);

/**
 * Marks sandboxes created under this policy as detached: they have no owning
 * process, so the reaper leaves them alone until their deadline (or until
 * they are removed). ^By default a sandbox is owned by the process that
 * created it, and the reaper removes it once that process is gone.
 * Returns: 0, SBX_EINVALID.
 */
SBX_EXTERN int sbx_policy_set_detached(sbx_policy *p, int detached);

/** Whether the policy makes detached sandboxes. */
SBX_EXTERN int sbx_policy_detached(const sbx_policy *p);

/* ===== Egress allowlist =====
 *
 * ^A new policy allows no egress at all: no address, no name, no DNS. Each
 * entry opens one destination, on one port (TCP and UDP) or on every port
 * and protocol (port 0); nothing else is reachable. ^Repeating an entry is a
 * no-op; at most 64 entries (SBX_ETOOBIG). How the docker backend enforces
 * them, and what they leave open: docs/threat-model.md.
 */

/**
 * Allows egress to a host name: TCP and UDP to port, or everything when 0.
 *
 * The name is resolved on the host when the sandbox is created (from the
 * backend's hosts_file when one is given, and then nowhere else) and its
 * addresses are pinned into the sandbox's /etc/hosts; ^the sandbox gets no
 * resolver, so no other name resolves inside it and DNS is not a channel.
 * Addresses that change after create are not followed.
 * ^Refused with SBX_EINVALID: an empty name, more than 253 bytes, a label
 * that is empty, over 63 bytes or starts or ends with '-', a character other
 * than letters, digits, '-' and '.', an all-digit last label, a wildcard
 * ('*'), an address (use sbx_policy_allow_cidr()), and "localhost".
 * ^At create, a name that resolves to a loopback, link-local, cloud metadata,
 * multicast or one of the host's own addresses is refused with SBX_EDENIED,
 * and one with no address with SBX_ENOTFOUND. The name is copied.
 * Returns: 0, SBX_EINVALID, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_allow_host(sbx_policy *p, const char *name, uint16_t port);

/**
 * Allows egress to an IPv4 or IPv6 prefix ("198.51.100.0/24",
 * "2001:db8::/32", or one address such as "198.51.100.7"): TCP and UDP to
 * port, or everything when port is 0.
 *
 * ^Refused with SBX_EINVALID: an empty string, text that is not an address,
 * a prefix length that is not decimal or out of range, host bits set beyond
 * the prefix length (the message names the prefix meant), a prefix of
 * length 0, a wildcard, and prefixes inside ranges a sandbox never reaches:
 * 0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4, 240.0.0.0/4, ::/128, ::1/128,
 * ::ffff:0:0/96, ff00::/8, and the sandbox links 169.254.64.0/18 and
 * fd73:6278::/32. ^Link-local addresses (169.254.0.0/16, fe80::/10), cloud
 * metadata (169.254.169.254, fd00:ec2::254) and the host's own addresses
 * stay denied unless an entry names them explicitly: a prefix inside the
 * link-local range, or exactly one address (/32, /128); a wider prefix that
 * merely contains them does not open them. ^A backend that cannot enforce an
 * IPv6 entry (docker: IPv6 forwarding off on the host) refuses the create
 * with SBX_EUNSUPPORTED. Returns: 0, SBX_EINVALID, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_allow_cidr(sbx_policy *p, const char *cidr, uint16_t port);

/**
 * As sbx_policy_allow_host(), from "NAME[:PORT]" (the CLI's --allow-host).
 * ^A port that is 0, not decimal or above 65535 is refused.
 * Returns: as sbx_policy_allow_host().
 */
SBX_EXTERN int sbx_policy_allow_host_spec(sbx_policy *p, const char *spec);

/**
 * As sbx_policy_allow_cidr(), from "CIDR[:PORT]" (the CLI's --allow-cidr):
 * "198.51.100.0/24", "198.51.100.0/24:443", "198.51.100.7:443",
 * "2001:db8::/32:443", "[2001:db8::1]:443", "2001:db8::1".
 * ^A port that is 0, not decimal or above 65535 is refused.
 * Returns: as sbx_policy_allow_cidr().
 */
SBX_EXTERN int sbx_policy_allow_cidr_spec(sbx_policy *p, const char *spec);

/**
 * Allows egress to the names a package registry needs: a preset of the
 * project's share/sandboxio/presets/egress.conf, compiled into the library
 * ("pypi", "npm", "crates", "debian", "github"; the file lists each name and
 * port). ^Each name is added as sbx_policy_allow_host() adds it, so it is
 * resolved and pinned at create and enforced by its addresses; a wildcard
 * entry of a preset opens the names the file pins for it. ^All of the
 * preset's entries are added or, on error, none; entries already present
 * are not repeated. ^An unknown name is refused with SBX_EINVALID naming the
 * presets there are; an operator config permits a preset's names with its
 * egress.presets (docs/config.md).
 * Returns: 0, SBX_EINVALID, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_policy_allow_preset(sbx_policy *p, const char *name);

/** The number of allowlist entries; 0 means no egress. */
SBX_EXTERN size_t sbx_policy_allow_count(const sbx_policy *p);

/** Names a tier: "container", "gvisor", "microvm"; NULL for an unknown value. */
SBX_EXTERN const char *sbx_tier_name(sbx_tier tier);

/** Parses a tier name. Returns: 0, SBX_EINVALID. */
SBX_EXTERN int sbx_tier_parse(sbx_tier *out, const char *name);

/**
 * Parses a size such as "512m", "1g", "1048576", "64k" (binary units,
 * case-insensitive, optional trailing "b"/"ib"). ^Rejects empty strings,
 * signs, overflow, fractions and unknown suffixes. Returns: 0, SBX_EINVALID.
 */
SBX_EXTERN int sbx_parse_size(int64_t *out, const char *text);

/**
 * Parses a duration in seconds ("300", "1.5", "90s", "5m", "2h") into
 * milliseconds. ^Rejects 0, negatives, empty strings and overflow.
 * Returns: 0, SBX_EINVALID.
 */
SBX_EXTERN int sbx_parse_duration_ms(uint64_t *out, const char *text);

SBX_END_DECL

#endif
