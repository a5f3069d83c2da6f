/*
 * core/limit-kinds.c: the table of core/limit-kinds.h, built from its one
 * list, and checked against the public enum at compile time.
 */
#include <stddef.h>

#include <sandboxio/sandbox.h>

#include "core/limit-kinds.h"

#define DESC(ID, name_, key_, label_, audit_, span_, option_, unit_, ddoc, cdoc)                   \
	[SBX_LIMIT_##ID] = {.kind = SBX_LIMIT_##ID,                                                \
			    .name = name_,                                                         \
			    .key = key_,                                                           \
			    .label = label_,                                                       \
			    .audit = audit_,                                                       \
			    .span = span_,                                                         \
			    .option = option_,                                                     \
			    .unit = SBX__LIMIT_UNIT_##unit_,                                       \
			    .def = SBX_DEFAULT_##ID,                                               \
			    .min = SBX_MIN_##ID,                                                   \
			    .max = SBX_MAX_##ID},

const struct sbx__limit_desc sbx__limit_kinds[SBX__LIMIT_N] = {SBX__LIMIT_KINDS(DESC)};

/*
 * The list covers every SBX_LIMIT_* value: it has one entry per value from
 * the first to the last, each in its own slot (a slot named twice is an
 * error of -Woverride-init), and the enum's values run without a gap.
 */
#define ONE(...) +1
_Static_assert(0 SBX__LIMIT_KINDS(ONE) == SBX__LIMIT_LAST - SBX__LIMIT_FIRST + 1,
	       "SBX__LIMIT_KINDS lists every sbx_limit_kind");
/* A new kind in the public enum moves SBX__LIMIT_LAST, and this count with it. */
_Static_assert(SBX__LIMIT_FIRST == 1 && SBX_LIMIT_INVALID == 0 && SBX__LIMIT_LAST == 6,
	       "sbx_limit_kind runs from 1 to SBX_LIMIT_OUTPUT");

#define HIT(ID, name_, audited_) {SBX_HIT_##ID, name_, audited_},

const struct sbx__limit_hit sbx__limit_hits[] = {SBX__LIMIT_HITS(HIT){0, NULL, 0}};

const struct sbx__limit_desc *sbx__limit_desc(int kind)
{
	if (kind < SBX__LIMIT_FIRST || kind > SBX__LIMIT_LAST)
		return NULL;
	return &sbx__limit_kinds[kind];
}
