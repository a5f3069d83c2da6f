/*
 * tests/support/engine_stream.h: the bytes a hijacked Engine call answers
 * with, built by hand for the tests of the host side (engine/chan.c,
 * engine/http.c): the 101 head, and stdout/stderr frames of the Engine's
 * multiplexed stream, [stream, 0, 0, 0, length big-endian] then the payload.
 */
#ifndef SBX_TESTS_ENGINE_STREAM_H
#define SBX_TESTS_ENGINE_STREAM_H

#include <stddef.h>

#define ENGINE_UPGRADE                                                                             \
	"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"             \
	"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"

/* A growing byte string; b is NUL-terminated past len. Free b when done. */
struct engine_bytes {
	unsigned char *b;
	size_t len;
};

/* Appends n bytes as they are (aborts when memory runs out). */
void engine_bytes_raw(struct engine_bytes *s, const void *p, size_t n);
/* Appends one frame of the multiplexed stream (1 stdout, 2 stderr). */
void engine_bytes_mux(struct engine_bytes *s, int stream, const void *p, size_t n);

#endif
