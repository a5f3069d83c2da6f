/*
 * util/time.h: the monotonic clock in milliseconds, the one every deadline
 * of the library, its backends and sbx-init is measured on.
 */
#ifndef SBX_UTIL_TIME_H
#define SBX_UTIL_TIME_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t sbx__mono_ms(void);

#endif
