/*
 * util/time.c: the monotonic clock in milliseconds (util/time.h).
 */
#include <time.h>

#include "util/time.h"

uint64_t sbx__mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
