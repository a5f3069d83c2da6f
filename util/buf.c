/*
 * util/buf.c: growable, capped byte buffers (see buf.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static int reserve(struct sbx__buf *b, size_t extra)
{
	size_t want = b->len + extra + 1, n;
	char *p;

	if (want <= b->alloc)
		return 0;
	n = b->alloc ? b->alloc : 256;
	while (n < want)
		n *= 2;
	p = realloc(b->data, n);
	if (!p)
		return -1;
	b->data = p;
	b->alloc = n;
	return 0;
}

int sbx__buf_append(struct sbx__buf *b, const void *data, size_t len)
{
	size_t cap = b->cap ? b->cap : SIZE_MAX;
	size_t keep = len;

	b->total += len;
	if (b->len >= cap)
		keep = 0;
	else if (len > cap - b->len)
		keep = cap - b->len;
	if (keep < len)
		b->truncated = 1;
	if (reserve(b, keep) < 0)
		return -1;
	if (keep)
		memcpy(b->data + b->len, data, keep);
	b->len += keep;
	b->data[b->len] = '\0';
	return 0;
}

int sbx__buf_printf(struct sbx__buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	b->total += (size_t)n;
	return 0;
}

char *sbx__buf_steal(struct sbx__buf *b)
{
	char *p;

	if (reserve(b, 0) < 0)
		return NULL;
	b->data[b->len] = '\0';
	p = b->data;
	b->data = NULL;
	b->len = b->alloc = 0;
	return p;
}

void sbx__buf_clear(struct sbx__buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->alloc = 0;
	b->total = 0;
	b->truncated = 0;
}
