/*
 * util/json-text.h: a JSON string of arbitrary bytes (util/json-text.c),
 * shared by the command and the server of `sandboxio serve`.
 */
#ifndef SBX_UTIL_JSON_TEXT_H
#define SBX_UTIL_JSON_TEXT_H

#include <stddef.h>

#include <jansson.h>

/* A JSON string of arbitrary bytes (NULs included), each ill-formed UTF-8
 * subpart replaced by U+FFFD; lossy (may be NULL) tells whether anything
 * had to be replaced. NULL data is "". Returns NULL without memory. */
json_t *sbx__json_text(const char *data, size_t len, int *lossy);

#endif
