/*
 * server/port.c: every port of a sandbox other than envd's (49983) and the
 * code interpreter's (49999), as `sandbox.getHost(port)` reaches it: an
 * HTTP/1.1 request to <port>-<id>.<domain> (or with E2B's E2b-Sandbox-Id
 * and E2b-Sandbox-Port headers) is proxied to a server listening on that
 * port of the sandbox's own loopback.
 *
 * The connection is the library's sbx_sandbox_connect_port() (a run of the
 * init's relay, init/connect.c) on a handle of its own (sbx_sandbox_open(),
 * so docker exec: it does not take the box's busy slot, and commands go on
 * beside it), on a thread of its own, over a socketpair: the sandbox keeps
 * no network (network "none" stays so). One request, one connection: the
 * request goes with "Connection: close".
 *
 * Access (server/server.c calls sbxs_port_headers() once a box is found):
 * E2B's traffic access token, a token of each sandbox distinct from its
 * envd access token (a holder reaches the sandbox's ports, not its
 * processes or files), sent as E2B-Traffic-Access-Token and compared in
 * constant time; a sandbox created with network.allowPublicTraffic true
 * needs none. A missing token is 401, a wrong one 403, before anything
 * reaches the sandbox. A protocol upgrade (WebSocket) is refused with 501.
 *
 * The request: its method, its target as the client sent it (not
 * unescaped), its headers but the hop-by-hop ones, E2B's and the envd
 * token, sent at its headers (the relay starts then), and its body as it
 * comes (http.c hands it on, rq->stream), within FILE_BODY_MAX: framed by
 * the client's Content-Length, or in chunks again when the client's came
 * in chunks (libmicrohttpd de-chunks them). While it is sent, what the
 * sandbox's server answers is read, so neither waits on the other. The
 * response: its head read strictly (server/port-http.c), its status and
 * headers but the hop-by-hop ones passed on, its body streamed as it comes
 * (by its length, its chunks, or the connection's end; chunked to the
 * client when its length is not known), bounded by the sandbox's output
 * cap and the run's deadline. Nothing listening is E2B's 502 naming the
 * port.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/port-int.h"
#include "server/server-int.h"

#define IN_CAP (SBXS_HEAD_MAX + 65536)
#define REQ_HEAD_MAX (256u << 10)

/* One proxied request: shared by the handler (then the response's reader)
 * and the relay's thread. */
struct pconn {
	struct sbxs_server *srv;
	int refs;	/* under srv->mu */
	int fd;		/* our end of the socketpair, non-blocking */
	int relay_fd;	/* the relay's end, the thread's */
	int client_fd;	/* the client's socket, to notice it going away */
	sbx_sandbox *h; /* the thread's handle */
	unsigned port;
	uint64_t timeout_ms, deadline;
	int relay_done, rc;
	char msg[512];
	int chunked_up; /* the body goes on in chunks (the client's came so) */
	int out_dead;	/* the relay ended: the rest of the request is dropped */
	char *in;	/* read and not yet handed on */
	size_t in_len;
	int eof;
	int responding; /* a response streams the body */
	struct sbxs_http_head hd;
	struct sbxs_chunks ch;
	uint64_t body_left;
	char id[21];
};

/* ===== E2B's proxy errors ===== */

static enum MHD_Result port_error(
	struct MHD_Connection *c, const char *id, unsigned status, unsigned port, const char *msg)
{
	json_t *j = json_pack("{s:s, s:o, s:i}", "sandboxId", id, "message", sbxs_jtext(msg),
			      "code", (int)status);

	if (j && port)
		json_object_set_new(j, "port", json_integer(port));
	return sbxs_reply_json(c, status, j);
}

unsigned sbxs_port_parse(const char *s)
{
	unsigned v = 0;

	if (!s || s[0] < '1' || s[0] > '9')
		return 0;
	for (size_t n = 0; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= 5)
			return 0;
		v = v * 10 + (unsigned)(s[n] - '0');
	}
	return v <= 65535 ? v : 0;
}

/* Compares secrets without an early exit on the first difference. */
static int ct_equal(const char *a, const char *b)
{
	size_t alen = strlen(a), blen = strlen(b);
	unsigned char d = 0;

	if (alen != blen)
		return 0;
	for (size_t k = 0; k < alen; k++)
		d |= (unsigned char)(a[k] ^ b[k]);
	return d == 0;
}

enum MHD_Result sbxs_port_too_big(struct MHD_Connection *c, struct sbxs_req *rq)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "the request's body is larger than %zu bytes", rq->limit);
	return port_error(c, rq->box->id, 413, rq->port, msg);
}

/* ===== The connection ===== */

static void pconn_unref(struct pconn *pc)
{
	struct sbxs_server *srv = pc->srv;
	int last;

	pthread_mutex_lock(&srv->mu);
	last = --pc->refs == 0;
	pthread_mutex_unlock(&srv->mu);
	if (!last)
		return;
	if (pc->fd >= 0)
		close(pc->fd);
	free(pc->in);
	free(pc);
}

static void *relay_main(void *arg)
{
	struct pconn *pc = arg;
	struct sbxs_server *srv = pc->srv;
	int rc = sbx_sandbox_connect_port(pc->h, pc->port, pc->relay_fd, pc->timeout_ms);
	char msg[sizeof(pc->msg)];

	snprintf(msg, sizeof(msg), "%s", rc < 0 ? sbx_error_last()->message : "");
	sbx_sandbox_detach(pc->h);
	pthread_mutex_lock(&srv->mu);
	pc->rc = rc;
	memcpy(pc->msg, msg, sizeof(msg));
	pc->relay_done = 1;
	pthread_mutex_unlock(&srv->mu);
	/* Our end sees the end of file only once the outcome is set. */
	close(pc->relay_fd);
	pconn_unref(pc);
	pthread_mutex_lock(&srv->mu);
	srv->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

struct head_acc {
	char *buf;
	size_t len, cap;
	int bad;
};

static void acc_add(struct head_acc *a, const char *s, size_t n)
{
	if (a->bad || a->len + n > a->cap) {
		a->bad = 1;
		return;
	}
	memcpy(a->buf + a->len, s, n);
	a->len += n;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	static const char *const drop[] = {
		"e2b-traffic-access-token", "e2b-sandbox-id", "e2b-sandbox-port",
		"x-access-token",	    "expect",	      NULL};
	struct head_acc *a = cls;

	(void)kind;
	if (!k || !v || sbxs_http_hop_header(k))
		return MHD_YES;
	for (const char *const *d = drop; *d; d++)
		if (strcasecmp(*d, k) == 0)
			return MHD_YES;
	acc_add(a, k, strlen(k));
	acc_add(a, ": ", 2);
	acc_add(a, v, strlen(v));
	acc_add(a, "\r\n", 2);
	return MHD_YES;
}

/* The head of the request to the sandbox's server: its method, target,
 * headers but the hop-by-hop ones and E2B's, and the body's framing (the
 * client's length, or chunks when the client's came in chunks). *out
 * malloc'ed; -1: too large or out of memory. */
static int
build_head(struct pconn *pc, struct MHD_Connection *c, struct sbxs_req *rq, char **out, size_t *len)
{
	struct head_acc a = {.cap = REQ_HEAD_MAX};
	const char *cl = sbxs_header(c, "Content-Length"),
		   *te = sbxs_header(c, "Transfer-Encoding");
	char line[48];

	a.buf = malloc(a.cap);
	if (!a.buf)
		return -1;
	acc_add(&a, rq->method, strlen(rq->method));
	acc_add(&a, " ", 1);
	acc_add(&a, rq->uri, strlen(rq->uri));
	acc_add(&a, " HTTP/1.1\r\n", 11);
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, &a);
	if (te) { /* "chunked": server/server.c refuses any other */
		pc->chunked_up = 1;
		acc_add(&a, "Transfer-Encoding: chunked\r\n", 28);
	} else if (cl || strcmp(rq->method, "POST") == 0 || strcmp(rq->method, "PUT") == 0 ||
		   strcmp(rq->method, "PATCH") == 0) {
		/* libmicrohttpd has checked the length; it is written anew. */
		snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
			 cl ? strtoull(cl, NULL, 10) : 0ull);
		acc_add(&a, line, strlen(line));
	}
	acc_add(&a, "Connection: close\r\n\r\n", 21);
	if (a.bad) {
		free(a.buf);
		return -1;
	}
	*out = a.buf;
	*len = a.len;
	return 0;
}

/* Reads what came into pc->in (room permitting); its end or an error
 * sets pc->eof. */
static void take_in(struct pconn *pc)
{
	ssize_t n = recv(pc->fd, pc->in + pc->in_len, IN_CAP - pc->in_len, 0);

	if (n > 0)
		pc->in_len += (size_t)n;
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		pc->eof = 1;
}

/*
 * Sends p[0..n) to the sandbox's server, reading what it answers
 * meanwhile (so that neither side waits on the other), one poll of at
 * most a second at a time. A relay that ended drops the rest (what it
 * said stands). Returns 0, or -1 when the deadline passed or the client
 * went away.
 */
static int send_all(struct pconn *pc, const char *p, size_t n)
{
	size_t off = 0;

	while (off < n && !pc->out_dead) {
		struct pollfd f = {.fd = pc->fd, .events = POLLOUT};
		int room = pc->in_len < IN_CAP && !pc->eof;

		if (sbx__mono_ms() >= pc->deadline || sbxs_client_gone(pc->client_fd) == 2)
			return -1;
		if (room)
			f.events |= POLLIN;
		if (poll(&f, 1, 1000) <= 0)
			continue;
		if (room && (f.revents & (POLLIN | POLLHUP | POLLERR)))
			take_in(pc);
		if (f.revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t k = send(pc->fd, p + off, n - off, MSG_NOSIGNAL);

			if (k > 0)
				off += (size_t)k;
			else if (k < 0 && errno != EAGAIN && errno != EINTR)
				pc->out_dead = 1;
		}
	}
	return 0;
}

/* Waits at most a second for what the sandbox's server says, into
 * pc->in. Returns 0, or -1 when the deadline passed or the client went
 * away. */
static int pump(struct pconn *pc)
{
	struct pollfd p = {.fd = pc->fd, .events = POLLIN};

	if (sbx__mono_ms() >= pc->deadline || sbxs_client_gone(pc->client_fd) == 2)
		return -1;
	if (pc->in_len >= IN_CAP || pc->eof)
		return 0;
	if (poll(&p, 1, 1000) > 0)
		take_in(pc);
	return 0;
}

static void consume(struct pconn *pc, size_t n)
{
	memmove(pc->in, pc->in + n, pc->in_len - n);
	pc->in_len -= n;
}

/* libmicrohttpd's content reader: the body as it comes. */
static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct pconn *pc = cls;
	char err[160];

	(void)pos;
	for (;;) {
		if (pc->hd.framing == SBXS_BODY_LENGTH && pc->body_left == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (pc->hd.framing == SBXS_BODY_CHUNKED && sbxs_chunks_done(&pc->ch))
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (pc->in_len) {
			size_t n = 0;

			if (pc->hd.framing == SBXS_BODY_CHUNKED) {
				long used = sbxs_chunks_feed(&pc->ch, pc->in, pc->in_len, buf, max,
							     &n, err, sizeof(err));

				if (used < 0)
					return MHD_CONTENT_READER_END_WITH_ERROR;
				consume(pc, (size_t)used);
			} else {
				n = pc->in_len < max ? pc->in_len : max;
				if (pc->hd.framing == SBXS_BODY_LENGTH && n > pc->body_left)
					n = (size_t)pc->body_left;
				memcpy(buf, pc->in, n);
				consume(pc, n);
				pc->body_left -= pc->hd.framing == SBXS_BODY_LENGTH ? n : 0;
			}
			if (n)
				return (ssize_t)n;
			continue;
		}
		if (pc->eof) {
			int cut;

			/* Bytes the relay dropped (past the output cap) make a
			 * body framed by its end a truncated one: the client is
			 * told by an error, not by a short body. */
			pthread_mutex_lock(&pc->srv->mu);
			cut = pc->relay_done && pc->rc < 0;
			pthread_mutex_unlock(&pc->srv->mu);
			return pc->hd.framing == SBXS_BODY_CLOSE && !cut
				       ? MHD_CONTENT_READER_END_OF_STREAM
				       : MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (pump(pc) < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

/* The response is done with: the connection ends (the relay sees its
 * input end and stops). */
static void body_done(void *cls)
{
	struct pconn *pc = cls;

	shutdown(pc->fd, SHUT_RDWR);
	pconn_unref(pc);
}

/* The connection's first head (past any 1xx), into pc->hd; the response,
 * or an error already queued. */
static enum MHD_Result answer(struct MHD_Connection *c, struct pconn *pc, int head_req)
{
	char err[200], msg[800];
	struct MHD_Response *r;
	long used;

	for (;;) {
		used = sbxs_http_head_parse(pc->in, pc->in_len, head_req, &pc->hd, err,
					    sizeof(err));
		if (used < 0) {
			snprintf(msg, sizeof(msg),
				 "the server on port %u answered with a malformed response: %s",
				 pc->port, err);
			return port_error(c, pc->id, 502, pc->port, msg);
		}
		if (used > 0 && pc->hd.status == 101)
			return port_error(c, pc->id, 502, pc->port,
					  "the server switched protocols without being asked to");
		if (used > 0 && pc->hd.status < 200) {
			consume(pc, (size_t)used);
			continue;
		}
		if (used > 0)
			break;
		if (pc->eof) {
			int rc, done;

			/* The relay ended; its outcome is set before its end of file. */
			pthread_mutex_lock(&pc->srv->mu);
			done = pc->relay_done;
			rc = pc->rc;
			snprintf(msg, sizeof(msg), "%s", pc->msg);
			pthread_mutex_unlock(&pc->srv->mu);
			if (done && rc == SBX_ENOTFOUND)
				return port_error(c, pc->id, 502, pc->port,
						  "The sandbox is running but port is not open");
			if (pc->in_len == 0 && done && rc < 0)
				return port_error(c, pc->id, 502, pc->port, msg);
			return port_error(c, pc->id, 502, pc->port,
					  "the server on the port closed the connection without "
					  "a whole response");
		}
		if (pump(pc) < 0)
			return port_error(c, pc->id, 504, pc->port,
					  "the server on the port did not answer within the "
					  "sandbox's run timeout");
	}
	{
		/* Headers are copied NUL-terminated; they were checked by the parser. */
		char name[256], *value = malloc(SBXS_HEAD_MAX);
		uint64_t size = pc->hd.framing == SBXS_BODY_LENGTH ? pc->hd.length
				: pc->hd.framing == SBXS_BODY_NONE ? 0
								   : MHD_SIZE_UNKNOWN;

		if (!value)
			return MHD_NO;
		pc->body_left = pc->hd.length;
		r = MHD_create_response_from_callback(size, CHUNK_MAX, body_read, pc, body_done);
		if (!r) {
			free(value);
			return MHD_NO;
		}
		pthread_mutex_lock(&pc->srv->mu);
		pc->refs++; /* the response's */
		pthread_mutex_unlock(&pc->srv->mu);
		pc->responding = 1;
		for (size_t k = 0; k < pc->hd.n; k++) {
			const struct sbxs_http_field *f = &pc->hd.h[k];

			if (f->name_len >= sizeof(name))
				continue;
			memcpy(name, f->name, f->name_len);
			name[f->name_len] = '\0';
			memcpy(value, f->value, f->value_len);
			value[f->value_len] = '\0';
			if (!sbxs_http_hop_header(name))
				MHD_add_response_header(r, name, value);
		}
		free(value);
		/* The head is handed on: what follows it is the body. */
		consume(pc, (size_t)used);
		return sbxs_queue(c, pc->hd.status, r);
	}
}

/* The connection into the sandbox, made at the request's headers: the
 * relay's thread started and the head sent; the body follows as it comes.
 * An error is answered (rq->answered). */
static enum MHD_Result start(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	struct sbxs_box *b = rq->box;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pconn *pc;
	pthread_attr_t attr;
	pthread_t th;
	uint64_t now = sbx__mono_ms(), t;
	char *head = NULL;
	size_t head_len = 0;
	int sv[2], started;

	pthread_mutex_lock(&srv->mu);
	t = b->run_timeout_ms;
	if (b->end_mono <= now || b->retired)
		t = 0;
	else if (b->end_mono - now < t)
		t = b->end_mono - now;
	pthread_mutex_unlock(&srv->mu);
	if (t == 0)
		return sbxs_reply_json(c, 502,
				       json_pack("{s:s, s:s, s:i}", "sandboxId", b->id, "message",
						 "The sandbox was not found", "code", 502));
	pc = calloc(1, sizeof(*pc));
	if (!pc || !(pc->in = malloc(IN_CAP)) || build_head(pc, c, rq, &head, &head_len) < 0) {
		if (pc)
			free(pc->in);
		free(pc);
		return port_error(c, b->id, 500, rq->port,
				  "out of memory, or the request's headers pass 256 KiB");
	}
	pc->srv = srv;
	pc->port = rq->port;
	pc->timeout_ms = t;
	pc->deadline = now + t;
	pc->client_fd = ci ? ci->connect_fd : -1;
	snprintf(pc->id, sizeof(pc->id), "%s", b->id);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		free(head);
		free(pc->in);
		free(pc);
		return port_error(c, b->id, 500, rq->port, "cannot make a socket pair");
	}
	pc->fd = sv[0];
	pc->relay_fd = sv[1];
	pc->refs = 1;
	fcntl(pc->fd, F_SETFL, fcntl(pc->fd, F_GETFL) | O_NONBLOCK);
	if (sbx_sandbox_open(&pc->h, srv->b, sbx_sandbox_id(b->s)) < 0) {
		char msg[600];

		snprintf(msg, sizeof(msg), "cannot reach the sandbox: %s",
			 sbx_error_last()->message);
		free(head);
		close(sv[1]);
		pconn_unref(pc);
		return port_error(c, b->id, 502, rq->port, msg);
	}
	pc->refs = 2; /* the request's (then its response's) and the relay's */
	pthread_mutex_lock(&srv->mu);
	srv->workers++;
	pthread_mutex_unlock(&srv->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&th, &attr, relay_main, pc) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		sbx_sandbox_detach(pc->h);
		close(sv[1]);
		pthread_mutex_lock(&srv->mu);
		srv->workers--;
		pthread_mutex_unlock(&srv->mu);
		pc->refs = 1;
		pconn_unref(pc);
		free(head);
		return port_error(c, b->id, 500, rq->port, "cannot start a thread");
	}
	rq->conn = pc;
	/* The head fits the socket's buffer: the relay reads it once it runs. */
	if (send_all(pc, head, head_len) < 0) {
		free(head);
		return MHD_NO;
	}
	free(head);
	rq->stream = 1;
	rq->answered = 0;
	return MHD_YES;
}

enum MHD_Result sbxs_port_body(struct sbxs_server *srv,
			       struct MHD_Connection *c,
			       struct sbxs_req *rq,
			       const char *data,
			       size_t len)
{
	struct pconn *pc = rq->conn;
	char size[24];

	(void)srv;
	(void)c;
	if (!pc->chunked_up)
		return send_all(pc, data, len) < 0 ? MHD_NO : MHD_YES;
	snprintf(size, sizeof(size), "%zx\r\n", len);
	if (send_all(pc, size, strlen(size)) < 0 || send_all(pc, data, len) < 0 ||
	    send_all(pc, "\r\n", 2) < 0)
		return MHD_NO;
	return MHD_YES;
}

enum MHD_Result
sbxs_port_request(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	struct pconn *pc = rq->conn;

	(void)srv;
	if (rq->too_big)
		return sbxs_port_too_big(c, rq);
	if (pc->chunked_up && send_all(pc, "0\r\n\r\n", 5) < 0)
		return MHD_NO;
	return answer(c, pc, strcmp(rq->method, "HEAD") == 0);
}

void sbxs_port_done(struct sbxs_req *rq)
{
	struct pconn *pc = rq->conn;

	/* Not answered by a response of its own: the connection ends here,
	 * and the relay with it. */
	if (!pc->responding)
		shutdown(pc->fd, SHUT_RDWR);
	rq->conn = NULL;
	pconn_unref(pc);
}

enum MHD_Result sbxs_port_headers(struct sbxs_server *srv,
				  struct MHD_Connection *c,
				  struct sbxs_req *rq,
				  unsigned port)
{
	struct sbxs_box *b = rq->box;
	const char *tok = sbxs_header(c, "E2B-Traffic-Access-Token"),
		   *cl = sbxs_header(c, "Content-Length");
	char msg[160];

	rq->route = SBXS_ROUTE_PORT;
	rq->port = port;
	rq->answered = 1;
	if (port == 0)
		return port_error(c, b->id, 400, 0, "the port must be 1 to 65535, in plain digits");
	if (!b->public_traffic) {
		if (!tok)
			return port_error(c, b->id, 401, port,
					  "a traffic access token is required to reach the "
					  "sandbox's ports: send it in the "
					  "E2B-Traffic-Access-Token header");
		if (!ct_equal(tok, b->traffic))
			return port_error(c, b->id, 403, port, "the traffic access token is wrong");
	}
	sbxs_http_authenticated(srv, c);
	if (sbxs_header(c, "Upgrade")) {
		snprintf(msg, sizeof(msg),
			 "protocol upgrades (WebSocket) to port %u are not proxied by this "
			 "server; plain HTTP/1.1 requests are",
			 port);
		return port_error(c, b->id, 501, port, msg);
	}
	if (!rq->uri || rq->uri[0] != '/')
		return port_error(c, b->id, 400, port,
				  "the request target must be a path (origin form) of at most "
				  "8192 bytes");
	rq->limit = FILE_BODY_MAX;
	if (cl && strtoull(cl, NULL, 10) > rq->limit)
		return sbxs_port_too_big(c, rq);
	return start(srv, c, rq);
}
