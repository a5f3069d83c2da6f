/*
 * core/config-impl.h: the operator config's object, shared by the files
 * that make it up and by no one else:
 *
 *   core/config.c           the object, its formatting and checks, the merge
 *   core/config-file.c      the one table of keys, and parsing a config's text
 *   core/config-trust.c     finding the file and refusing one others could write
 *   core/config-narrow.c    a caller's config narrowing the system's
 *   core/config-describe.c  what `config --effective` prints
 *
 * Each uses only core/config.c and the files listed above it (describe
 * and narrow use config.c; narrow also loads with config-trust.c, which
 * parses with config-file.c): no circle.
 */
#ifndef SBX_CORE_CONFIG_IMPL_H
#define SBX_CORE_CONFIG_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/config-int.h"
#include "core/limit-kinds.h"

#define NSLOT SBX__LIMIT_N /* slot 0: timeout; then each sbx_limit_kind */
#define MAX_LIST 1024	   /* entries per list (images, cidrs, hosts) */

struct sbx__cidr {
	int family;
	unsigned char addr[16];
	unsigned int prefix;
};

struct sbx_config {
	int refs;
	char *source; /* file or origin; NULL: built-in */
	/* [0] defaults, [1] ceilings; 0: not in the file (the built-in value). */
	int64_t bound[2][NSLOT];
	int64_t pause_ceil; /* ceilings.pause in ms; 0: not in the file (built-in) */
	char *def_image;
	char **images; /* NULL with images_set 0: any image */
	size_t images_n;
	int images_set;
	struct sbx__cidr *cidrs;
	char **cidr_text;
	size_t cidrs_n;
	char **hosts; /* lower case */
	size_t hosts_n;
	int egress_set; /* 0: the built-in config permits any; a file without it, none */
	char **backends;
	size_t backends_n;
	int backends_set;
	int secrets, secrets_set;
	int require_tenant, require_tenant_set;
	sbx_tier min_tier;
	int min_tier_set;
	int is_file;	  /* parsed from text: an absent "egress" then permits nothing */
	char *hosts_file; /* egress.hosts_file: resolves allowlist names; NULL: the host's resolver */
	char *audit_path; /* audit.path: a sink no call turns off */
	/*
	 * Layered (sbx_config_load_narrowed() with a narrowing file): source is
	 * the narrowing file, sys_source the system file (NULL: built-in), and
	 * each from_* says which of the two a value came from.
	 */
	int layered;
	int is_system; /* the system config itself, as the CLI loads it */
	char *sys_source;
	unsigned char from_bound[2][NSLOT];
	unsigned char from_image, from_images, from_egress, from_backends;
	unsigned char from_secrets, from_tenant, from_tier, from_pause;
};

enum { FROM_SYSTEM = 0, FROM_NARROW = 1 };

/* The built-in config: every field zero (core/config.c). */
extern const struct sbx_config sbx__config_builtin;

/* A slot's name, built-in default, floor and ceiling, in the policy's units. */
static inline const char *slot_name(int slot)
{
	return slot ? sbx__limit_kinds[slot].key : "timeout";
}

static inline int64_t slot_def(int slot)
{
	return slot ? sbx__limit_kinds[slot].def : SBX_DEFAULT_TIMEOUT_MS;
}

static inline int64_t slot_min(int slot)
{
	return slot ? sbx__limit_kinds[slot].min : 1;
}

static inline int64_t slot_max(int slot)
{
	return slot ? sbx__limit_kinds[slot].max : SBX_MAX_TIMEOUT_MS;
}

/* ===== core/config.c ===== */

/* "512m", "2g", "1024": a size in the largest unit that divides it. */
const char *sbx__config_fmt_size(char *buf, size_t n, int64_t v);

/* A slot's value as the config spells it: "300 s", "2", "512m", "256". */
const char *sbx__config_fmt_slot(char *buf, size_t n, int slot, int64_t v);

/* c's source for messages: the file, or "(built-in)". */
const char *sbx__config_source_name(const sbx_config *c);

/*
 * The file a value that the config sets came from: the config's own source,
 * or for a layered config the system or narrowing file. builtin names the
 * built-in config ("builtin" in descriptions, "(built-in)" in messages).
 */
const char *sbx__config_from_name(const sbx_config *c, unsigned char from, const char *builtin);

/* Appends a copy of s to *list. Returns: 0, SBX_ENOMEM. */
int sbx__config_push(char ***list, size_t *n, const char *s);

/* Whether s is "sha256:" and 64 lower-case hex digits. */
int sbx__config_valid_digest(const char *s);

/* Parses "a.b.c.d/n" or "x::y/n" (prefix required unless need_prefix is 0); -1 if not. */
int sbx__config_cidr_parse(struct sbx__cidr *out, const char *text, int need_prefix);

/* Whether want lies inside one of c's egress.cidrs. */
int sbx__config_cidr_inside(const sbx_config *c, const struct sbx__cidr *want);

/* Whether c's images permit ref (a bare digest permits any name@digest). */
int sbx__config_image_permitted(const sbx_config *c, const char *ref);

/* ===== core/config-file.c ===== */

/*
 * Parses a config; whole 0 skips the checks that need the whole file (each
 * default at or below its ceiling, the default image permitted), for a
 * narrowing config, whose defaults and ceilings are checked once merged
 * with the system's.
 */
int sbx__config_parse_text(
	sbx_config **out, const char *json, size_t len, const char *origin, int whole);

/* ===== core/config-trust.c ===== */

#define SBX__CONFIG_NOT_FOUND 1

/*
 * Loads path, which must be owned by root or me, as must every directory
 * above it, and writable by nobody else. A missing file is SBX_ENOTFOUND
 * when required, else SBX__CONFIG_NOT_FOUND. whole: as
 * sbx__config_parse_text().
 */
int sbx__config_load_file(sbx_config **out,
			  const char *path,
			  int required,
			  const char *named_by,
			  uid_t me,
			  int whole);

#endif
