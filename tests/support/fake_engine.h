/*
 * tests/support/fake_engine.h: a scripted Engine on a unix socket, for the
 * few answers a real dockerd on the test machine cannot be made to give
 * (create Warnings when a limit is dropped, a daemon that answers garbage).
 * Served by libmicrohttpd; records every request it gets. A route with raw
 * bytes is answered by the engine itself instead: once the request (head
 * and body) is in, exactly those bytes go out in one write and the
 * connection is closed, as the Engine answers a hijacked (upgraded) call
 * with a status line, headers and stream bytes the host reads together.
 */
#ifndef SBX_TESTS_FAKE_ENGINE_H
#define SBX_TESTS_FAKE_ENGINE_H

struct fake_route {
	const char *method;
	const char *path_prefix; /* matched against the path after the API version */
	unsigned int status;
	const char *body;
	const void *raw; /* non-NULL: the whole answer, sent in one write */
	size_t raw_len;
	/* With raw: the connection is then held open until the client ends
	 * its input, and which end it was is logged as a request "EOF half"
	 * (a half-close: it still reads) or "EOF full" (fake_engine_count). */
	int hold;
};

struct fake_engine;

/* Starts a server at a fresh socket path; routes must outlive it. */
struct fake_engine *fake_engine_start(const struct fake_route *routes, int n);
const char *fake_engine_socket(const struct fake_engine *f);
/* How many requests matched "METHOD path_prefix". */
int fake_engine_count(struct fake_engine *f, const char *method, const char *path_prefix);
void fake_engine_stop(struct fake_engine *f);

#endif
