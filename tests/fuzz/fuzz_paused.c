/*
 * tests/fuzz/fuzz_paused.c: libFuzzer target for the record of a paused
 * sandbox (sbx__paused_parse() in engine/paused.c), which the reaper reads
 * from /run/sandboxio/paused/<id>.
 *
 * Invariants besides the sanitizers': an accepted record formats back to
 * exactly the bytes it was parsed from, its times lie within
 * SBX_PAUSED_TIME_MAX, and a paused one's bound comes after its pause.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/docker-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__paused r;
	char line[SBX_PAUSED_LINE_MAX];
	int n;

	if (sbx__paused_parse(&r, (const char *)data, size) != 0)
		return 0;
	if (r.at > SBX_PAUSED_TIME_MAX || r.bound > SBX_PAUSED_TIME_MAX ||
	    r.deadline > SBX_PAUSED_TIME_MAX || !r.deadline || (r.at && r.bound <= r.at) ||
	    (!r.at && r.bound))
		abort();
	n = sbx__paused_format(line, sizeof(line), &r);
	if (n < 0 || (size_t)n != size || memcmp(line, data, size) != 0)
		abort();
	return 0;
}
