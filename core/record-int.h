/*
 * core/record-int.h: closing a record (an audit event, a span): the one
 * redactor applied to every string it holds, before any rendering of it
 * (ADR-0021), and the ids and clocks records carry.
 */
#ifndef SBX_CORE_RECORD_INT_H
#define SBX_CORE_RECORD_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Redacts every string in v (object values, array items, nested), in place.
 * Keys are the library's own names and are left alone. Returns 0, or -1
 * when memory ran out (the string is then replaced by the marker alone). */
int sbx__record_redact(json_t *v);
/* A string value, redacted now; NULL when out of memory. */
json_t *sbx__record_string(const char *s);
/* Fills dst with 2 * n lowercase hex digits of fresh random bytes, never all
 * zero (W3C trace and span ids). */
void sbx__record_random_hex(char *dst, size_t n);
/* Wall clock, nanoseconds since the epoch. */
uint64_t sbx__record_now_ns(void);
/* RFC 3339 UTC with microseconds: "2024-06-01T12:00:00.123456Z". */
void sbx__record_time(char dst[32], uint64_t ns);

#endif
