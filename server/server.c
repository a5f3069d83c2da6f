/*
 * server/server.c: the E2B-compatible server as a whole: its life (the
 * listening socket, start, the sweeps between signals, stop) and its
 * routes, which the HTTP layer (server/http.c) is given at start and knows
 * nothing of. A request's headers decide its route: envd when an
 * E2b-Sandbox-Id header or a Host of <port>-<id>.<domain> names a sandbox
 * (port 49983; 49999 is the code interpreter, server/interp.c, and any
 * other port is proxied into the sandbox by server/port.c, which checks
 * its traffic token), the REST control plane otherwise; then its
 * authentication (the API key for REST, the sandbox's access token for
 * envd, both compared in constant time, or for /files a URL signed with
 * that token: server/sign.c) and the bound of its body (64 KiB REST, 1 MiB
 * Start, 23 MiB for a unary process call, 64 MiB files and ports), whose
 * excess gets the 413 (or the route's own error). A whole request goes to
 * server/rest.c, server/envd.c, server/interp.c or server/port.c.
 *
 * The socket is made here, not by libmicrohttpd, so that port 0 works
 * (getsockname tells the port picked) and the ready line names the real
 * address. The caller blocks the shutdown signals before any thread exists
 * (the backend's, libmicrohttpd's, the server's workers), so that every
 * thread inherits the mask and sbxs_run() alone takes them, with
 * sigtimedwait(), between sweeps that close expired sandboxes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"
#include "server/server.h"

#define SWEEP_NS 250000000L

/* ===== Routes ===== */

/* Compares secrets without an early exit on the first difference. */
static int ct_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char d = 0;

	if (alen != blen)
		return 0;
	for (size_t k = 0; k < alen; k++)
		d |= (unsigned char)(a[k] ^ b[k]);
	return d == 0;
}

/* The sandbox an envd request is for: the E2b-Sandbox-Id header, or a
 * Host of the form <port>-<id>.<domain>. Returns 1 for envd. */
static int envd_target(struct MHD_Connection *c, char *id, size_t size, unsigned *port)
{
	const char *h = sbxs_header(c, "E2b-Sandbox-Id"), *ph = sbxs_header(c, "E2b-Sandbox-Port");
	const char *dash, *dot;

	*port = ENVD_PORT;
	if (h) {
		snprintf(id, size, "%s", h);
		if (ph) /* 0: not a port (server/port.c refuses it) */
			*port = sbxs_port_parse(ph);
		return 1;
	}
	h = sbxs_header(c, "Host");
	if (!h)
		return 0;
	dash = strchr(h, '-');
	dot = strchr(h, '.');
	if (!dash || !dot || dash > dot || dash == h)
		return 0;
	for (const char *p = h; p < dash; p++)
		if (*p < '0' || *p > '9')
			return 0;
	{
		char digits[8];
		size_t n = (size_t)(dash - h);

		/* 0: not a port (server/port.c refuses it) */
		snprintf(digits, sizeof(digits), "%.*s", (int)(n < 7 ? n : 7), h);
		*port = n < 7 ? sbxs_port_parse(digits) : 0;
	}
	{
		const char *idend = memchr(dash + 1, '-', (size_t)(dot - dash - 1));
		size_t n = (size_t)((idend ? idend : dot) - dash - 1);

		if (n >= size)
			n = size - 1;
		memcpy(id, dash + 1, n);
		id[n] = '\0';
	}
	return 1;
}

static enum MHD_Result sandbox_not_found(struct MHD_Connection *c, const char *id)
{
	char safe[65];
	size_t k;

	for (k = 0; id[k] && k < 64; k++)
		safe[k] = (id[k] >= 'a' && id[k] <= 'z') || (id[k] >= '0' && id[k] <= '9') ? id[k]
											   : '?';
	safe[k] = '\0';
	return sbxs_reply_json(c, 502,
			       json_pack("{s:s, s:s, s:i}", "sandboxId", safe, "message",
					 "The sandbox was not found", "code", 502));
}

static int sandbox_paused(struct sbxs_server *srv, const struct sbxs_box *b)
{
	int paused;

	pthread_mutex_lock(&srv->mu);
	paused = b->paused;
	pthread_mutex_unlock(&srv->mu);
	return paused;
}

static size_t envd_limit(const char *url)
{
	if (strcmp(url, "/files") == 0)
		return FILE_BODY_MAX;
	if (strcmp(url, "/process.Process/Start") == 0)
		return START_BODY_MAX;
	if (strncmp(url, "/process.Process/", 17) == 0)
		return UNARY_BODY_MAX;
	return REST_BODY_MAX;
}

static enum MHD_Result too_big(struct MHD_Connection *c, struct sbxs_req *rq, const char *url)
{
	if (rq->route == SBXS_ROUTE_REST)
		return sbxs_rest_error(c, 413, "Request body larger than %zu bytes", rq->limit);
	if (rq->route == SBXS_ROUTE_INTERP)
		return sbxs_interp_error(c, 413, "the request is larger than %zu bytes", rq->limit);
	if (rq->route == SBXS_ROUTE_PORT)
		return sbxs_port_too_big(c, rq);
	if (strcmp(url, "/process.Process/Start") == 0)
		return sbxs_stream_error(c, "resource_exhausted",
					 "the request is larger than 1 MiB");
	if (strcmp(url, "/files") == 0)
		return sbxs_envd_error(c, 413, "the upload is larger than 64 MiB");
	return sbxs_connect_error(c, "resource_exhausted", "the request is larger than %zu bytes",
				  rq->limit);
}

/* The headers are in: route, authenticate, bound the body. */
static enum MHD_Result
on_headers(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq, const char *url)
{
	const char *cl = sbxs_header(c, "Content-Length"),
		   *te = sbxs_header(c, "Transfer-Encoding");
	char id[72];
	unsigned port;

	/* A body framed otherwise than by its length or chunks cannot be read:
	 * answered now, and libmicrohttpd closes the connection after. */
	if (te && strcasecmp(te, "chunked") != 0) {
		rq->answered = 1;
		return sbxs_reply_json(
			c, 501,
			json_pack(
				"{s:i, s:o}", "code", 501, "message",
				sbxs_jtext("Transfer-Encoding other than chunked is not supported "
					   "by this server")));
	}
	if (envd_target(c, id, sizeof(id), &port)) {
		const char *tok;

		rq->route = SBXS_ROUTE_ENVD;
		rq->box = sbxs_box_get(srv, id);
		rq->answered = 1;
		if (!rq->box)
			return sandbox_not_found(c, id);
		if (port == INTERP_PORT)
			rq->route = SBXS_ROUTE_INTERP;
		else if (port != ENVD_PORT) /* every other port: server/port.c */
			return sbxs_port_headers(srv, c, rq, port);
		tok = sbxs_header(c, "X-Access-Token");
		/* The code interpreter's SDK sends the access token with
		 * /execute only, and the traffic token (the Sandbox's
		 * trafficAccessToken) with every call: that one opens its other
		 * routes, which run no code. */
		if (!tok && rq->route == SBXS_ROUTE_INTERP && strcmp(url, "/execute") != 0) {
			const char *tt = sbxs_header(c, "E2B-Traffic-Access-Token");

			if (tt &&
			    ct_equal(tt, strlen(tt), rq->box->traffic, strlen(rq->box->traffic)))
				tok = rq->box->token;
		}
		/* Every sandbox has a token (secure: false is refused at create):
		 * only /health answers without it, and /files to a URL signed
		 * with it. */
		if (!tok && strcmp(url, "/files") == 0 && sbxs_query(c, "signature")) {
			/* A signed URL: signed with this sandbox's own token. */
			const char *path = sbxs_query(c, "path"), *user = sbxs_query(c, "username");
			char err[128];

			if (sbxs_signature_check(path ? path : "",
						 strcmp(rq->method, "GET") == 0 ? "read" : "write",
						 user ? user : "", rq->box->token,
						 sbxs_query(c, "signature"),
						 sbxs_query(c, "signature_expiration"),
						 (int64_t)time(NULL), err, sizeof(err)) < 0)
				return sbxs_envd_error(c, 401, "%s", err);
			sbxs_http_authenticated(srv, c);
		} else if (strcmp(url, "/health") != 0) {
			if (!(tok &&
			      ct_equal(tok, strlen(tok), rq->box->token, strlen(rq->box->token))))
				return sbxs_envd_error(
					c, 401,
					"unauthorized access, please provide a valid "
					"access token or method signing if supported");
			sbxs_http_authenticated(srv, c);
		}
		/* A paused sandbox runs nothing until a resume (server/pause.c). */
		if (sandbox_paused(srv, rq->box))
			return sbxs_reply_json(
				c, 502,
				json_pack(
					"{s:s, s:s, s:i}", "sandboxId", rq->box->id, "message",
					"The sandbox is paused: resume it (Sandbox.connect) first",
					"code", 502));
		rq->answered = 0;
		rq->limit =
			rq->route == SBXS_ROUTE_INTERP ? sbxs_interp_limit(url) : envd_limit(url);
	} else {
		const char *key = sbxs_header(c, "X-API-Key");

		rq->route = SBXS_ROUTE_REST;
		rq->limit = REST_BODY_MAX;
		if (!key) {
			rq->answered = 1;
			return sbxs_rest_error(c, 401,
					       "Invalid API key: send it in the X-API-Key header");
		}
		if (!ct_equal(key, strlen(key), srv->key, srv->key_len)) {
			rq->answered = 1;
			return sbxs_rest_error(c, 401, "Invalid API key");
		}
		sbxs_http_authenticated(srv, c);
	}
	if (cl && strtoull(cl, NULL, 10) > rq->limit) {
		rq->answered = 1;
		return too_big(c, rq, url);
	}
	return MHD_YES;
}

/* A whole request (or one past its bound) to its route. */
static enum MHD_Result on_request(struct sbxs_server *srv,
				  struct MHD_Connection *c,
				  struct sbxs_req *rq,
				  const char *method,
				  const char *url)
{
	if (rq->route == SBXS_ROUTE_INTERP)
		return sbxs_interp(srv, c, rq, method, url);
	if (rq->route == SBXS_ROUTE_PORT)
		return sbxs_port_request(srv, c, rq);
	if (rq->too_big)
		return too_big(c, rq, url);
	if (rq->route == SBXS_ROUTE_ENVD)
		return sbxs_envd(srv, c, rq, method, url);
	return sbxs_rest(srv, c, rq, method, url);
}

/* A request is done with: an envd request's reference to its box goes. */
static void on_done(struct sbxs_req *rq)
{
	if (rq->conn)
		sbxs_port_done(rq);
	if (rq->box)
		sbxs_box_unref(rq->box);
}

static const struct sbxs_handlers routes = {on_headers, sbxs_port_body, on_request, on_done};

/* ===== The server's life ===== */

int sbxs_listen(const struct sockaddr *sa,
		socklen_t len,
		const char *host,
		unsigned *port_out,
		char *err,
		size_t errlen)
{
	struct sockaddr_storage got;
	socklen_t glen = sizeof(got);
	int fd, one = 1;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, len) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
		snprintf(err, errlen, "cannot listen on %s:%u: %s", host,
			 ntohs(sa->sa_family == AF_INET
				       ? ((const struct sockaddr_in *)sa)->sin_port
				       : ((const struct sockaddr_in6 *)sa)->sin6_port),
			 strerror(errno));
		close(fd);
		return -1;
	}
	*port_out = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
						   : ((struct sockaddr_in6 *)&got)->sin6_port);
	return fd;
}

int sbxs_start(struct sbxs_server **out, const struct sbxs_config *c, char *err, size_t errlen)
{
	struct sbxs_server *srv = calloc(1, sizeof(*srv));

	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&srv->mu, NULL);
	sbxs_cond_init(&srv->cv);
	srv->b = c->backend;
	srv->max_timeout_s = c->max_timeout_s;
	srv->pause_max_ms = c->pause_max_ms ? c->pause_max_ms : SBX_PAUSE_MAX_DEFAULT_MS;
	srv->min_tier = c->min_tier;
	srv->default_image = strdup(c->default_image);
	srv->e2b_image = c->e2b_image ? strdup(c->e2b_image) : NULL;
	srv->no_root = c->no_root;
	srv->key = strdup(c->api_key);
	if (!srv->default_image || !srv->key || (c->e2b_image && !srv->e2b_image)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	srv->key_len = strlen(srv->key);
	srv->idle_timeout_s = c->idle_timeout_s;
	srv->auth_timeout_s = c->auth_timeout_s;
	srv->transfer_ms = c->transfer_timeout_ms;
	srv->warn = c->warn;
	if (sbxs_http_start(srv, &routes, c->listen_fd, c->ipv6, c->max_connections,
			    c->max_client_connections, c->auth_timeout_s) < 0) {
		snprintf(err, errlen, "libmicrohttpd could not start serving");
		goto fail;
	}
	*out = srv;
	return 0;
fail:
	if (srv->key)
		explicit_bzero(srv->key, strlen(srv->key));
	free(srv->key);
	free(srv->default_image);
	free(srv->e2b_image);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
	return -1;
}

/* Closes what has outlived its bound: a connection that sent no
 * authenticated request within --auth-timeout, a sandbox whose timeout has
 * passed. */
static void sweep(struct sbxs_server *srv)
{
	sbxs_conns_sweep(srv);
	sbxs_boxes_sweep(srv);
}

int sbxs_run(struct sbxs_server *srv, const sigset_t *set)
{
	struct timespec ts = {0, SWEEP_NS};
	siginfo_t info;
	int sig;

	for (;;) {
		sig = sigtimedwait(set, &info, &ts);
		if (sig > 0)
			return sig;
		sweep(srv);
	}
}

void sbxs_stop(struct sbxs_server *srv)
{
	if (!srv)
		return;
	sbxs_boxes_stop(srv);
	/* Joins every connection thread: their streams end as their runs do. */
	sbxs_http_stop(srv);
	pthread_mutex_lock(&srv->mu);
	while (srv->workers > 0 || srv->live > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
}

void sbxs_free(struct sbxs_server *srv)
{
	if (!srv)
		return;
	explicit_bzero(srv->key, srv->key_len);
	free(srv->key);
	free(srv->default_image);
	free(srv->e2b_image);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
}
