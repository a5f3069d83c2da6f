/*
 * server/server.h: what `sandboxio serve` (cli/serve.c: options, key file,
 * listener, signals) and the E2B-compatible server (server/: routes
 * and their semantics, laid out in server/server-int.h) share.
 *
 * serve.c owns the process: it blocks the shutdown signals before any thread
 * exists, makes the listening socket, starts the server, prints the ready
 * line, and then calls sbxs_sweep() until a signal arrives. The server
 * never prints except to warn about a sandbox it could not remove.
 */
#ifndef SBX_SERVER_SERVER_H
#define SBX_SERVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <sandboxio.h>

struct sbxs_server;

struct sbxs_config {
	sbx_backend *backend;		 /* lent: outlives the server */
	const char *default_image;	 /* templateID absent or "base"; copied */
	const char *api_key;		 /* NUL-terminated; copied into memory wiped at stop */
	uint64_t max_timeout_s;		 /* the ceiling of every sandbox timeout */
	int listen_fd;			 /* bound and listening; the server owns it once started */
	int ipv6;			 /* listen_fd is an AF_INET6 socket */
	unsigned max_connections;	 /* connections at once (a thread each) */
	unsigned max_client_connections; /* of those, from one address */
	unsigned auth_timeout_s;	 /* idle bound before an authenticated request */
	unsigned idle_timeout_s;	 /* idle bound after one */
	uint64_t transfer_timeout_ms;	 /* deadline of one file transfer in a sandbox */
	/* How the server warns about a sandbox it could not remove (a line,
	 * printf-like; required); the server prints nothing else. */
	void (*warn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
};

/* Starts serving on c->listen_fd. On failure *out is untouched and err says why. */
int sbxs_start(struct sbxs_server **out, const struct sbxs_config *c, char *err, size_t errlen);

/* Closes the sandboxes whose timeout has passed. Called about four times a second. */
void sbxs_sweep(struct sbxs_server *srv);

/* Stops serving, closes every sandbox (ending the runs in them), waits for
 * every thread of the server and frees it. NULL is a no-op. */
void sbxs_stop(struct sbxs_server *srv);

#endif
