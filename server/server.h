/*
 * server/server.h: the E2B-compatible server (server/) as the command
 * `sandboxio serve` (cli/serve.c: options, the key file, the ready line)
 * uses it. The files of the server share server/server-int.h.
 *
 * The command blocks the shutdown signals before any thread exists (the
 * backend may start some), makes the listening socket with sbxs_listen(),
 * starts the server, prints the ready line, and then calls sbxs_run()
 * until a signal arrives; sbxs_stop() and sbxs_free() end it. The server
 * never prints except to warn, through the config, about a sandbox it
 * could not remove.
 */
#ifndef SBX_SERVER_SERVER_H
#define SBX_SERVER_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <sandboxio.h>

struct sbxs_server;

struct sbxs_config {
	sbx_backend *backend;	   /* lent: outlives the server */
	const char *default_image; /* templateID absent or "base"; copied */
	/* Template "base" as E2B's flavour: this image (the e2b recipe's:
	 * user `user`, home /home/user), and envd's user "root" a run as the
	 * sandbox's root (sbx_run_options.as_root) unless no_root. NULL: base
	 * is default_image, and root is refused. Copied. */
	const char *e2b_image;
	int no_root;
	const char *api_key;		 /* NUL-terminated; copied into memory wiped at stop */
	uint64_t max_timeout_s;		 /* the ceiling of every sandbox timeout */
	uint64_t pause_max_ms;		 /* how long one may stay paused; 0: an hour */
	sbx_tier min_tier;		 /* the least isolation of every sandbox it makes */
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

/* A listening TCP socket bound to sa (host: its address as messages show
 * it), and in *port the port the kernel gave (port 0 picks one). Returns
 * the socket, or -1 with err. */
int sbxs_listen(const struct sockaddr *sa,
		socklen_t len,
		const char *host,
		unsigned *port,
		char *err,
		size_t errlen);

/* Starts serving on c->listen_fd. On failure *out is untouched and err says why. */
int sbxs_start(struct sbxs_server **out, const struct sbxs_config *c, char *err, size_t errlen);

/* Serves until one of the signals of set (blocked in every thread)
 * arrives, closing about four times a second the sandboxes whose timeout
 * has passed and the connections that sent no authenticated request in
 * time. Returns the signal. */
int sbxs_run(struct sbxs_server *srv, const sigset_t *set);

/* Stops serving, closes every sandbox (ending the runs in them) and waits
 * for every thread of the server. NULL is a no-op. */
void sbxs_stop(struct sbxs_server *srv);

/* Frees a stopped server, wiping its key. NULL is a no-op. */
void sbxs_free(struct sbxs_server *srv);

#endif
