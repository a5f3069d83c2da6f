/*
 * netpolicy/preset-int.h: egress presets, the names a package registry
 * needs, from share/sandboxio/presets/egress.conf (its header says the
 * format). The library carries that file compiled in; the parser also reads
 * any text given, for tests and the fuzz target.
 */
#ifndef SBX_NETPOLICY_PRESET_INT_H
#define SBX_NETPOLICY_PRESET_INT_H

#include <stddef.h>
#include <stdint.h>

#include "netpolicy/names-int.h"

#define SBX_PRESET_TEXT_MAX (64 * 1024) /* bytes of a preset file */
#define SBX_PRESET_LINE_MAX 1024	/* bytes of a line */
#define SBX_PRESETS_MAX 64		/* presets in a file */
#define SBX_PRESET_ENTRIES_MAX 64	/* entries of a preset (SBX_ALLOW_MAX) */
#define SBX_PRESET_PINS_MAX 16		/* names pinned for one wildcard */
#define SBX_PRESET_NAME_MAX 32

struct sbx__preset_entry {
	char name[SBX_NAME_BUF]; /* canonical; "*.NAME" for a wildcard */
	int wildcard;
	uint16_t port;		    /* 0: every port */
	char (*pins)[SBX_NAME_BUF]; /* wildcard: the names pinned at create */
	size_t pins_n;
};

struct sbx__preset {
	char name[SBX_PRESET_NAME_MAX + 1];
	struct sbx__preset_entry *e;
	size_t n;
};

struct sbx__presets {
	struct sbx__preset *p;
	size_t n;
};

/*
 * Parses preset text (len bytes, at most SBX_PRESET_TEXT_MAX; a NUL inside
 * is refused). origin names it in messages. Refused with SBX_EINVALID naming
 * the line: a line over SBX_PRESET_LINE_MAX, an entry before any "[NAME]",
 * a preset name that is not 1 to 32 of [a-z0-9-] or is repeated, an empty
 * preset, a name refused by sbx__names_parse_entry(), a bad port, a
 * wildcard without "= NAME..." or with a name that does not match it, "="
 * after an exact name, a repeated entry, and more than the limits above.
 * Returns 0, SBX_EINVALID, SBX_ETOOBIG (the text or a count over its limit),
 * SBX_ENOMEM. *out is left untouched on error.
 */
int sbx__presets_parse(struct sbx__presets *out, const char *text, size_t len, const char *origin);
void sbx__presets_clear(struct sbx__presets *ps);

/* The preset called name, or NULL. */
const struct sbx__preset *sbx__presets_find(const struct sbx__presets *ps, const char *name);

/*
 * The presets compiled into the library, parsed once (thread-safe).
 * Returns 0 or the parse error of the built-in text (a build defect).
 */
int sbx__presets_builtin(const struct sbx__presets **out);

/* "pypi, npm, ..." of ps into dst (for messages). */
void sbx__presets_names(const struct sbx__presets *ps, char *dst, size_t cap);

#endif
