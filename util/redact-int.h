/*
 * util/redact-int.h: the one redactor.
 *
 * Secret values are registered while a secret object lives; every record
 * the library closes (error messages, run results, descriptions) passes
 * through sbx__redact_* before any rendering can see it.
 */
#ifndef SBX_UTIL_REDACT_INT_H
#define SBX_UTIL_REDACT_INT_H

#include <stddef.h>

#define SBX_REDACTED "<redacted>"

/* Registers a value (copied into locked memory). Returns a handle id > 0, or negative. */
int sbx__redact_register(const void *value, size_t len);
void sbx__redact_unregister(int id);
/* Replaces every registered value in a NUL-terminated string, truncating to cap. */
void sbx__redact_inplace(char *s, size_t cap);
/* Number of registered values (for fast paths). */
int sbx__redact_count(void);

#endif
