/*
 * tests/support/h2_peer.c: see h2_peer.h. One thread polls the listening
 * socket and every connection; nghttp2 does the framing through its
 * in-memory interface (mem_recv/mem_send), so the socket I/O stays here.
 *
 * Steps of a response are submitted one at a time and the next waits for
 * nghttp2 to report the previous frame sent: nghttp2 keeps HEADERS and DATA
 * in separate queues, so trailers submitted behind pending DATA could
 * otherwise overtake it, and DATA boundaries would not be the script's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "support/h2_peer.h"

#define BODY_MAX (64u << 20)
#define MAX_CONNS 64

enum step_kind {
	ST_HEADERS,
	ST_DATA,
	ST_TRAILERS,
	ST_TRAILERS_ONLY,
	ST_END,
	ST_RESET,
	ST_CLOSE,
	ST_DELAY,
};

struct step {
	enum step_kind kind;
	int status;
	char *hdrs; /* "name: value\n" lines, the first ones made by the step itself */
	uint8_t *data;
	size_t len;
	int ms;
	struct step *next;
};

struct h2_resp {
	struct step *head, *tail;
};

struct conn;

struct stream {
	int32_t id;
	struct conn *conn;
	struct h2_req *req; /* until it is complete and logged */
	struct h2_resp resp;
	struct step *cur; /* submitted, not yet sent */
	const uint8_t *dp;
	size_t dleft;
	int dend, dlast;
	uint64_t not_before;
	struct stream *next;
};

struct conn {
	int fd;
	int no;
	int closing;
	nghttp2_session *s;
	struct stream *streams;
	struct h2_peer *peer;
};

struct h2_peer {
	int lfd;
	int port;
	char url[64];
	int wake[2];
	pthread_t th;
	pthread_mutex_t lock;
	h2_peer_handler handler;
	void *arg;
	struct h2_req **log;
	size_t n, cap;
	struct conn *conns[MAX_CONNS];
	int nconns;
	int conn_no;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p)
		abort();
	return p;
}

static void req_free(struct h2_req *r)
{
	if (!r)
		return;
	free(r->headers);
	free(r->body);
	free(r);
}

static void steps_free(struct step *s)
{
	while (s) {
		struct step *n = s->next;
		free(s->hdrs);
		free(s->data);
		free(s);
		s = n;
	}
}

/* ===== Response building ===== */

static struct step *push(struct h2_resp *r, enum step_kind kind)
{
	struct step *s = xcalloc(1, sizeof(*s));

	s->kind = kind;
	if (r->tail)
		r->tail->next = s;
	else
		r->head = s;
	r->tail = s;
	return s;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = b ? strlen(b) : 0;
	char *p = xcalloc(la + lb + 2, 1);

	memcpy(p, a, la);
	if (lb) {
		memcpy(p + la, b, lb);
		if (b[lb - 1] != '\n')
			p[la + lb] = '\n';
	}
	return p;
}

void h2_resp_headers(struct h2_resp *r, int status, const char *extra)
{
	struct step *s = push(r, ST_HEADERS);

	s->status = status;
	s->hdrs = join("content-type: application/grpc\n", extra);
}

void h2_resp_data(struct h2_resp *r, const void *data, size_t len)
{
	struct step *s = push(r, ST_DATA);

	s->data = xcalloc(len, 1);
	memcpy(s->data, data, len);
	s->len = len;
}

void h2_resp_message(struct h2_resp *r, const void *msg, size_t len)
{
	struct step *s = push(r, ST_DATA);

	s->data = xcalloc(len + 5, 1);
	s->data[1] = (uint8_t)(len >> 24);
	s->data[2] = (uint8_t)(len >> 16);
	s->data[3] = (uint8_t)(len >> 8);
	s->data[4] = (uint8_t)len;
	if (len)
		memcpy(s->data + 5, msg, len);
	s->len = len + 5;
}

static char *status_lines(int grpc_status, const char *msg, const char *extra)
{
	char head[64];
	char *a, *b;

	snprintf(head, sizeof(head), "grpc-status: %d\n", grpc_status);
	if (!msg)
		return join(head, extra);
	a = xcalloc(strlen(head) + strlen(msg) + 32, 1);
	sprintf(a, "%sgrpc-message: %s\n", head, msg);
	b = join(a, extra);
	free(a);
	return b;
}

void h2_resp_trailers(struct h2_resp *r, int grpc_status, const char *msg, const char *extra)
{
	struct step *s = push(r, ST_TRAILERS);

	s->hdrs = status_lines(grpc_status, msg, extra);
}

void h2_resp_trailers_only(struct h2_resp *r, int grpc_status, const char *msg, const char *extra)
{
	struct step *s = push(r, ST_TRAILERS_ONLY);
	char *t = status_lines(grpc_status, msg, extra);

	s->status = 200;
	s->hdrs = join("content-type: application/grpc\n", t);
	free(t);
}

void h2_resp_end(struct h2_resp *r)
{
	push(r, ST_END);
}

void h2_resp_reset(struct h2_resp *r)
{
	push(r, ST_RESET);
}

void h2_resp_close(struct h2_resp *r)
{
	push(r, ST_CLOSE);
}

void h2_resp_delay(struct h2_resp *r, int ms)
{
	push(r, ST_DELAY)->ms = ms;
}

void h2_resp_ok(struct h2_resp *r, const void *msg, size_t len)
{
	h2_resp_headers(r, 200, NULL);
	h2_resp_message(r, msg, len);
	h2_resp_trailers(r, 0, NULL, NULL);
}

void h2_base64(char *dst, size_t cap, const void *data, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *p = data;
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		acc = acc << 8 | p[i];
		bits += 8;
		while (bits >= 6 && o + 1 < cap) {
			bits -= 6;
			dst[o++] = tab[(acc >> bits) & 63];
		}
	}
	if (bits > 0 && o + 1 < cap)
		dst[o++] = tab[(acc << (6 - bits)) & 63];
	if (cap)
		dst[o] = '\0';
}

/* ===== Requests ===== */

const char *h2_req_header(const struct h2_req *r, const char *name)
{
	static __thread char val[4096];
	size_t k = strlen(name);

	for (const char *p = r->headers; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (len > k + 1 && strncmp(p, name, k) == 0 && p[k] == ':' && p[k + 1] == ' ') {
			snprintf(val, sizeof(val), "%.*s", (int)(len - k - 2), p + k + 2);
			return val;
		}
		p = eol ? eol + 1 : p + len;
	}
	return NULL;
}

const uint8_t *h2_req_message(const struct h2_req *r, size_t *len)
{
	size_t n;

	if (r->body_len < 5)
		return NULL;
	n = (size_t)r->body[1] << 24 | (size_t)r->body[2] << 16 | (size_t)r->body[3] << 8 |
	    r->body[4];
	if (n > r->body_len - 5)
		return NULL;
	*len = n;
	return r->body + 5;
}

int h2_peer_count(struct h2_peer *p, const char *path)
{
	int n = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n; i++)
		if (!path || strcmp(p->log[i]->path, path) == 0)
			n++;
	pthread_mutex_unlock(&p->lock);
	return n;
}

const struct h2_req *h2_peer_req(struct h2_peer *p, const char *path, int nth)
{
	const struct h2_req *r = NULL;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n; i++) {
		if (path && strcmp(p->log[i]->path, path) != 0)
			continue;
		if (nth-- == 0) {
			r = p->log[i];
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* ===== nghttp2 callbacks ===== */

static struct stream *stream_of(nghttp2_session *s, int32_t id)
{
	return nghttp2_session_get_stream_user_data(s, id);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct conn *c = ud;
	struct stream *st;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	st = xcalloc(1, sizeof(*st));
	st->id = f->hd.stream_id;
	st->conn = c;
	st->req = xcalloc(1, sizeof(*st->req));
	st->req->conn = c->no;
	st->req->stream_id = st->id;
	st->req->headers = xstrdup("");
	st->next = c->streams;
	c->streams = st;
	nghttp2_session_set_stream_user_data(s, st->id, st);
	return 0;
}

static int on_header(nghttp2_session *s,
		     const nghttp2_frame *f,
		     const uint8_t *name,
		     size_t namelen,
		     const uint8_t *value,
		     size_t valuelen,
		     uint8_t flags,
		     void *ud)
{
	struct stream *st = stream_of(s, f->hd.stream_id);
	size_t old;
	char *h;

	(void)flags;
	(void)ud;
	if (!st || !st->req)
		return 0;
	if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
		snprintf(st->req->path, sizeof(st->req->path), "%.*s", (int)valuelen, value);
		return 0;
	}
	old = strlen(st->req->headers);
	h = realloc(st->req->headers, old + namelen + valuelen + 4);
	if (!h)
		abort();
	sprintf(h + old, "%.*s: %.*s\n", (int)namelen, name, (int)valuelen, value);
	st->req->headers = h;
	return 0;
}

static int on_data_chunk(
	nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *ud)
{
	struct stream *st = stream_of(s, id);
	uint8_t *b;

	(void)flags;
	(void)ud;
	if (!st || !st->req || st->req->body_len + len > BODY_MAX)
		return 0;
	b = realloc(st->req->body, st->req->body_len + len + 1);
	if (!b)
		abort();
	memcpy(b + st->req->body_len, data, len);
	st->req->body = b;
	st->req->body_len += len;
	return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct conn *c = ud;
	struct h2_peer *p = c->peer;
	struct stream *st;
	struct h2_req *r;

	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	st = stream_of(s, f->hd.stream_id);
	if (!st || !st->req)
		return 0;
	r = st->req;
	st->req = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->log = realloc(p->log, p->cap * sizeof(*p->log));
		if (!p->log)
			abort();
	}
	p->log[p->n++] = r;
	pthread_mutex_unlock(&p->lock);
	p->handler(p->arg, r, &st->resp);
	return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct stream *st = stream_of(s, f->hd.stream_id);

	(void)ud;
	if (!st || !st->cur)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS || (f->hd.type == NGHTTP2_DATA && st->dlast)) {
		steps_free(st->cur);
		st->cur = NULL;
		st->dlast = 0;
	}
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
	struct conn *c = ud;
	struct stream **pp;

	(void)err;
	for (pp = &c->streams; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			struct stream *st = *pp;
			*pp = st->next;
			nghttp2_session_set_stream_user_data(s, id, NULL);
			req_free(st->req);
			steps_free(st->resp.head);
			steps_free(st->cur);
			free(st);
			break;
		}
	}
	return 0;
}

static ssize_t read_data(nghttp2_session *s,
			 int32_t id,
			 uint8_t *buf,
			 size_t length,
			 uint32_t *flags,
			 nghttp2_data_source *src,
			 void *ud)
{
	struct stream *st = src->ptr;
	size_t n = st->dleft < length ? st->dleft : length;

	(void)s;
	(void)id;
	(void)ud;
	if (n)
		memcpy(buf, st->dp, n);
	st->dp += n;
	st->dleft -= n;
	if (st->dleft == 0) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (!st->dend)
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		st->dlast = 1;
	}
	return (ssize_t)n;
}

/* "name: value\n" lines (plus :status when given) as nghttp2 headers. */
static size_t make_nva(nghttp2_nv *nva, size_t cap, char *status_buf, int status, char *lines)
{
	size_t n = 0;

	if (status) {
		snprintf(status_buf, 8, "%d", status);
		nva[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status_buf, 7,
					strlen(status_buf), NGHTTP2_NV_FLAG_NONE};
	}
	for (char *p = lines; p && *p && n < cap;) {
		char *eol = strchr(p, '\n'), *colon = strchr(p, ':');
		if (!eol)
			eol = p + strlen(p);
		if (colon && colon < eol) {
			char *v = colon + 1;
			while (*v == ' ')
				v++;
			nva[n++] = (nghttp2_nv){(uint8_t *)p, (uint8_t *)v, (size_t)(colon - p),
						(size_t)(eol - v), NGHTTP2_NV_FLAG_NONE};
		}
		p = *eol ? eol + 1 : eol;
	}
	return n;
}

/* Submits the script's next steps, one frame at a time. */
static void advance(struct conn *c, struct stream *st)
{
	uint64_t now = now_ms();

	while (!st->cur && st->resp.head && now >= st->not_before && !c->closing) {
		struct step *s = st->resp.head;
		nghttp2_data_provider prov = {.source.ptr = st, .read_callback = read_data};
		nghttp2_nv nva[32];
		char sb[8];
		size_t n;

		st->resp.head = s->next;
		if (!st->resp.head)
			st->resp.tail = NULL;
		s->next = NULL;
		switch (s->kind) {
		case ST_HEADERS:
		case ST_TRAILERS:
		case ST_TRAILERS_ONLY:
			n = make_nva(nva, 32, sb, s->kind == ST_TRAILERS ? 0 : s->status, s->hdrs);
			st->cur = s;
			nghttp2_submit_headers(c->s,
					       s->kind == ST_HEADERS ? NGHTTP2_FLAG_NONE
								     : NGHTTP2_FLAG_END_STREAM,
					       st->id, NULL, nva, n, NULL);
			return;
		case ST_DATA:
		case ST_END:
			st->cur = s;
			st->dp = s->data;
			st->dleft = s->len;
			st->dend = s->kind == ST_END;
			st->dlast = 0;
			nghttp2_submit_data(c->s,
					    s->kind == ST_END ? NGHTTP2_FLAG_END_STREAM
							      : NGHTTP2_FLAG_NONE,
					    st->id, &prov);
			return;
		case ST_RESET:
			steps_free(s);
			nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, st->id,
						  NGHTTP2_INTERNAL_ERROR);
			return;
		case ST_CLOSE:
			steps_free(s);
			c->closing = 1;
			return;
		case ST_DELAY:
			st->not_before = now + (uint64_t)s->ms;
			steps_free(s);
			break;
		}
	}
}

static int flush(struct conn *c)
{
	for (;;) {
		const uint8_t *out;
		ssize_t n = nghttp2_session_mem_send(c->s, &out);

		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = send(c->fd, out + off, (size_t)(n - off), MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			off += w;
		}
	}
}

static void conn_free(struct conn *c)
{
	while (c->streams) {
		struct stream *st = c->streams;
		c->streams = st->next;
		req_free(st->req);
		steps_free(st->resp.head);
		steps_free(st->cur);
		free(st);
	}
	nghttp2_session_del(c->s);
	close(c->fd);
	free(c);
}

static void conn_new(struct h2_peer *p, int fd)
{
	nghttp2_session_callbacks *cb;
	struct conn *c;
	int one = 1;

	if (p->nconns >= MAX_CONNS) {
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->peer = p;
	c->no = ++p->conn_no;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	nghttp2_session_server_new(&c->s, cb, c);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, NULL, 0);
	p->conns[p->nconns++] = c;
	if (flush(c) < 0)
		c->closing = 1;
}

/* Steps not yet sent, over every stream of c. */
static size_t pending(const struct conn *c)
{
	size_t n = 0;

	for (const struct stream *st = c->streams; st; st = st->next) {
		n += st->cur != NULL;
		for (const struct step *s = st->resp.head; s; s = s->next)
			n++;
	}
	return n;
}

static void *serve(void *arg)
{
	struct h2_peer *p = arg;

	for (;;) {
		struct pollfd pfd[MAX_CONNS + 2];
		uint64_t now = now_ms(), next = now + 200;
		int timeout;

		pfd[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
		for (int i = 0; i < p->nconns; i++) {
			pfd[2 + i] = (struct pollfd){.fd = p->conns[i]->fd, .events = POLLIN};
			for (struct stream *st = p->conns[i]->streams; st; st = st->next)
				if (st->resp.head && st->not_before > now && st->not_before < next)
					next = st->not_before;
		}
		timeout = (int)(next > now ? next - now : 0);
		if (poll(pfd, (nfds_t)(2 + p->nconns), timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN) {
			int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				conn_new(p, fd);
		}
		for (int i = 0; i < p->nconns; i++) {
			struct conn *c = p->conns[i];

			if (i + 2 < (int)(sizeof(pfd) / sizeof(pfd[0])) && pfd[2 + i].fd == c->fd &&
			    (pfd[2 + i].revents & (POLLIN | POLLHUP | POLLERR))) {
				uint8_t buf[65536];
				ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
					c->closing = 2;
				else if (r > 0 &&
					 nghttp2_session_mem_recv(c->s, buf, (size_t)r) < 0)
					c->closing = 2;
			}
			/* Submit, send, and go on while frames leave (each unblocks the next). */
			for (int round = 0; round < 4096 && c->closing != 2; round++) {
				size_t before = pending(c), after;

				for (struct stream *st = c->streams; st; st = st->next)
					advance(c, st);
				if (flush(c) < 0) {
					c->closing = 2;
					break;
				}
				after = pending(c);
				if (after == before || c->closing)
					break;
			}
			if (c->closing) {
				flush(c);
				shutdown(c->fd, SHUT_RDWR);
				conn_free(c);
				p->conns[i] = p->conns[--p->nconns];
				i--;
			}
		}
	}
	return NULL;
}

struct h2_peer *h2_peer_start(h2_peer_handler handler, void *arg)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	struct h2_peer *p = xcalloc(1, sizeof(*p));
	int one = 1;

	p->handler = handler;
	p->arg = arg;
	pthread_mutex_init(&p->lock, NULL);
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lfd < 0 || setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(p->lfd, 16) < 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &alen) < 0 ||
	    pipe2(p->wake, O_CLOEXEC) < 0) {
		if (p->lfd >= 0)
			close(p->lfd);
		free(p);
		return NULL;
	}
	p->port = ntohs(a.sin_port);
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
	if (pthread_create(&p->th, NULL, serve, p) != 0) {
		close(p->lfd);
		close(p->wake[0]);
		close(p->wake[1]);
		free(p);
		return NULL;
	}
	return p;
}

int h2_peer_port(const struct h2_peer *p)
{
	return p->port;
}

const char *h2_peer_url(const struct h2_peer *p)
{
	return p->url;
}

void h2_peer_stop(struct h2_peer *p)
{
	if (!p)
		return;
	if (write(p->wake[1], "x", 1) < 0) {
		/* The thread also stops when the pipe closes. */
	}
	pthread_join(p->th, NULL);
	for (int i = 0; i < p->nconns; i++)
		conn_free(p->conns[i]);
	for (size_t i = 0; i < p->n; i++)
		req_free(p->log[i]);
	free(p->log);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
