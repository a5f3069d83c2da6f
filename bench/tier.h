/*
 * bench/tier.h: the tier a benchmark's sandboxes ask for, from
 * SBX_BENCH_TIER (container when unset), for bench/loop.c and bench/mem.c.
 */
#ifndef SBX_BENCH_TIER_H
#define SBX_BENCH_TIER_H

#include <stdlib.h>

#include <sandboxio.h>

/* Sets p's least tier from SBX_BENCH_TIER; nonzero when it names no tier. */
static inline int bench_tier(sbx_policy *p)
{
	const char *name = getenv("SBX_BENCH_TIER");
	sbx_tier t;

	if (!name || !*name)
		return 0;
	return sbx_tier_parse(&t, name) || sbx_policy_set_min_tier(p, t);
}

#endif
