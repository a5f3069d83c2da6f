/*
 * util/buf.h: a growable byte buffer with a hard cap.
 *
 * Appends past the cap are counted, not stored, so a flood of output costs
 * a counter, never memory.
 */
#ifndef SBX_UTIL_BUF_H
#define SBX_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

struct sbx__buf {
	char *data; /* always NUL-terminated when non-NULL */
	size_t len;
	size_t alloc;
	size_t cap;	/* most bytes kept; 0 means SIZE_MAX */
	uint64_t total; /* bytes offered, kept or not */
	int truncated;
};

/* Appends up to the cap. Returns 0, or -1 when memory ran out. */
int sbx__buf_append(struct sbx__buf *b, const void *data, size_t len);
/* Appends formatted text (no cap check beyond the buffer's). */
int sbx__buf_printf(struct sbx__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the data out (the buffer becomes empty). Never NULL unless out of memory. */
char *sbx__buf_steal(struct sbx__buf *b);
void sbx__buf_clear(struct sbx__buf *b);

#endif
