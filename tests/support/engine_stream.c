/*
 * tests/support/engine_stream.c: building an Engine's hijacked stream
 * (engine_stream.h).
 */
#include <stdlib.h>
#include <string.h>

#include "support/engine_stream.h"

void engine_bytes_raw(struct engine_bytes *s, const void *p, size_t n)
{
	unsigned char *b = realloc(s->b, s->len + n + 1);

	if (!b)
		abort();
	s->b = b;
	memcpy(s->b + s->len, p, n);
	s->len += n;
	s->b[s->len] = 0;
}

void engine_bytes_mux(struct engine_bytes *s, int stream, const void *p, size_t n)
{
	unsigned char h[8] = {(unsigned char)stream,
			      0,
			      0,
			      0,
			      (unsigned char)(n >> 24),
			      (unsigned char)(n >> 16),
			      (unsigned char)(n >> 8),
			      (unsigned char)n};

	engine_bytes_raw(s, h, sizeof(h));
	engine_bytes_raw(s, p, n);
}
