/*
 * server/http.c: the transport of the E2B-compatible server: the
 * libmicrohttpd daemon (start and stop), its connections (each tracked
 * from accept to close, so that one that authenticates too late is shut
 * down) and the life of each request, from its headers to its completion:
 * the body is read whole into memory within the bound its route set (see
 * server/server.c), or handed on as it comes when the route streams it; a larger one gets its route's refusal while the rest
 * of it is read and dropped, up to a bound. It knows no route: the routes
 * it calls are the sbxs_handlers that server/server.c gives it at start.
 * It also holds what both APIs answer with: JSON responses, E2B's, envd's
 * and Connect's error bodies, the frames of a Connect stream, and the
 * shape checks their parsers share.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"
#include "util/json-text.h"

/* ===== Small helpers ===== */

/* A JSON string of any bytes (the messages quote untrusted input). */
json_t *sbxs_jtext(const char *s)
{
	json_t *j = sbx__json_text(s, strlen(s), NULL);

	return j ? j : json_string("");
}

const char *sbxs_header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

const char *sbxs_query(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* ===== Responses ===== */

enum MHD_Result sbxs_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A response holding j (which it takes), as application/json. */
struct MHD_Response *sbxs_json_response(json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct MHD_Response *r;

	json_decref(j);
	if (!text)
		return NULL;
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return NULL;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	return r;
}

enum MHD_Result sbxs_reply_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
	return sbxs_queue(c, status, sbxs_json_response(j));
}

enum MHD_Result sbxs_reply_empty(struct MHD_Connection *c, unsigned status)
{
	return sbxs_queue(c, status,
			  MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

/* E2B's API error: {"code": status, "message": "..."}. */
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbxs_reply_json(
		c, status,
		json_pack("{s:i, s:o}", "code", (int)status, "message", sbxs_jtext(msg)));
}

/* envd's own error: {"message": "...", "code": status}. */
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_envd_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbxs_reply_json(
		c, status,
		json_pack("{s:o, s:i}", "message", sbxs_jtext(msg), "code", (int)status));
}

/* The HTTP status of a Connect error code (the Connect protocol's table). */
static unsigned connect_status(const char *code)
{
	static const struct {
		const char *code;
		unsigned status;
	} map[] = {{"canceled", 499},
		   {"invalid_argument", 400},
		   {"deadline_exceeded", 504},
		   {"not_found", 404},
		   {"already_exists", 409},
		   {"permission_denied", 403},
		   {"resource_exhausted", 429},
		   {"failed_precondition", 400},
		   {"aborted", 409},
		   {"out_of_range", 400},
		   {"unimplemented", 501},
		   {"unavailable", 503},
		   {"unauthenticated", 401}};

	for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
		if (strcmp(map[k].code, code) == 0)
			return map[k].status;
	return 500;
}

/* A unary Connect error: non-200 with {"code": "...", "message": "..."}. */
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_connect_error(struct MHD_Connection *c, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbxs_reply_json(c, connect_status(code),
			       json_pack("{s:s, s:o}", "code", code, "message", sbxs_jtext(msg)));
}

/* ===== Frames of a Connect stream: flags, uint32 BE length, JSON ===== */

struct sbxs_frame *sbxs_frame_raw(int flags, const char *json, size_t n)
{
	struct sbxs_frame *f = malloc(sizeof(*f) + 5 + n);

	if (!f)
		return NULL;
	f->next = NULL;
	f->len = 5 + n;
	f->data[0] = (char)flags;
	f->data[1] = (char)(n >> 24 & 0xff);
	f->data[2] = (char)(n >> 16 & 0xff);
	f->data[3] = (char)(n >> 8 & 0xff);
	f->data[4] = (char)(n & 0xff);
	memcpy(f->data + 5, json, n);
	return f;
}

/* A frame of j, which it takes. */
struct sbxs_frame *sbxs_frame_json(int flags, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct sbxs_frame *f;

	json_decref(j);
	if (!text)
		return NULL;
	f = sbxs_frame_raw(flags, text, strlen(text));
	free(text);
	return f;
}

/* The end-of-stream frame: {} or {"error": {"code", "message"}}. */
struct sbxs_frame *sbxs_frame_eos(const char *code, const char *msg)
{
	if (!code)
		return sbxs_frame_raw(2, "{}", 2);
	return sbxs_frame_json(
		2, json_pack("{s:{s:s, s:o}}", "error", "code", code, "message", sbxs_jtext(msg)));
}

/* A response that is only the end-of-stream frame: how a streaming call
 * fails (HTTP 200, the error in the frame). */
enum MHD_Result sbxs_stream_error(struct MHD_Connection *c, const char *code, const char *msg)
{
	struct sbxs_frame *f = sbxs_frame_eos(code, msg);
	struct MHD_Response *r;

	if (!f)
		return MHD_NO;
	r = MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_MUST_COPY);
	free(f);
	if (r)
		MHD_add_response_header(r, "Content-Type", "application/connect+json");
	return sbxs_queue(c, 200, r);
}

/* ===== JSON shapes both APIs check ===== */

int sbxs_string_map(json_t *v)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return 0;
	json_object_foreach(v, k, x)
	{
		(void)k;
		if (!json_is_string(x))
			return 0;
	}
	return 1;
}

int sbxs_string_array(json_t *v)
{
	size_t k;
	json_t *x;

	if (!json_is_array(v))
		return 0;
	json_array_foreach(v, k, x)
	{
		if (!json_is_string(x))
			return 0;
	}
	return 1;
}

/* ===== Connections ===== */

/*
 * Every connection is tracked from its accept to its close (libmicrohttpd's
 * connection notifications) so that one that has not sent an authenticated
 * request within --auth-timeout of its accept is shut down, however it
 * trickles bytes: libmicrohttpd's own timeout counts idle time only. The
 * record leaves the list (under srv->mu) before libmicrohttpd closes the
 * socket, so the sweep never shuts down a descriptor that was reused.
 */
struct sbxs_conn {
	struct sbxs_conn *prev, *next;
	int fd;
	int authed, shut;
	uint64_t deadline; /* monotonic ms */
};

static void on_connection(void *cls,
			  struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct sbxs_server *srv = cls;
	struct sbxs_conn *k;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		k = calloc(1, sizeof(*k));
		if (!k)
			return; /* untracked: libmicrohttpd's idle timeout still holds */
		k->fd = ci ? ci->connect_fd : -1;
		k->deadline = sbx__mono_ms() + (uint64_t)srv->auth_timeout_s * 1000;
		pthread_mutex_lock(&srv->mu);
		k->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = k;
		srv->conns = k;
		pthread_mutex_unlock(&srv->mu);
		*socket_context = k;
		return;
	}
	k = *socket_context;
	if (!k)
		return;
	pthread_mutex_lock(&srv->mu);
	if (k->prev)
		k->prev->next = k->next;
	else
		srv->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	pthread_mutex_unlock(&srv->mu);
	free(k);
	*socket_context = NULL;
}

void sbxs_conns_sweep(struct sbxs_server *srv)
{
	uint64_t now = sbx__mono_ms();

	pthread_mutex_lock(&srv->mu);
	for (struct sbxs_conn *k = srv->conns; k; k = k->next)
		if (!k->authed && !k->shut && k->fd >= 0 && now >= k->deadline) {
			shutdown(k->fd, SHUT_RDWR);
			k->shut = 1;
		}
	pthread_mutex_unlock(&srv->mu);
}

/* A connection that has sent one authenticated request gets the long idle
 * timeout and leaves the sweep; until then it has the short one
 * (--auth-timeout), from its accept. */
void sbxs_http_authenticated(struct sbxs_server *srv, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct sbxs_conn *k = ci ? ci->socket_context : NULL;

	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, srv->idle_timeout_s);
	if (k) {
		pthread_mutex_lock(&srv->mu);
		k->authed = 1;
		pthread_mutex_unlock(&srv->mu);
	}
}

/* ===== Requests ===== */

/* A request's target as the client sent it (libmicrohttpd hands the
 * routes its path unescaped, without the query): the record of the request
 * starts here, and a proxied port (server/port.c) sends it on as it came. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct sbxs_req *rq = calloc(1, sizeof(*rq));

	(void)cls;
	(void)c;
	if (rq && uri && strlen(uri) <= URI_MAX)
		rq->uri = strdup(uri);
	return rq;
}

static enum MHD_Result on_request(void *cls,
				  struct MHD_Connection *c,
				  const char *url,
				  const char *method,
				  const char *version,
				  const char *upload_data,
				  size_t *upload_size,
				  void **con_cls)
{
	struct sbxs_server *srv = cls;
	struct sbxs_req *rq = *con_cls;

	(void)version;
	if (!rq || !rq->method) {
		if (!rq)
			rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		rq->method = method;
		return srv->handlers->headers(srv, c, rq, url);
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (rq->answered) {
			/* Answered at its headers: libmicrohttpd closes the connection
			 * after the reply; what it reads meanwhile is dropped, within a
			 * small bound. */
			rq->discarded += n;
			return rq->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		if (rq->too_big || n > rq->limit - rq->len) {
			/* A chunked body past its bound: libmicrohttpd answers only
			 * once the body is in, so the rest is read and dropped for
			 * the 413 to reach the client, but only up to DISCARD_MAX;
			 * past that the connection is closed without a reply. */
			rq->too_big = 1;
			rq->discarded += n;
			return rq->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		if (rq->stream) {
			/* A streamed body goes on as it comes (server/port.c). */
			rq->len += n;
			return srv->handlers->body(srv, c, rq, upload_data, n);
		}
		if (rq->len + n > rq->cap) {
			size_t cap = rq->cap ? rq->cap : 4096;
			char *grown;

			while (cap < rq->len + n)
				cap *= 2;
			if (cap > rq->limit)
				cap = rq->limit;
			grown = realloc(rq->body, cap);
			if (!grown)
				return MHD_NO;
			rq->body = grown;
			rq->cap = cap;
		}
		memcpy(rq->body + rq->len, upload_data, n);
		rq->len += n;
		return MHD_YES;
	}
	if (rq->answered)
		return MHD_YES;
	rq->answered = 1;
	return srv->handlers->request(srv, c, rq, method, url);
}

static void on_completed(void *cls,
			 struct MHD_Connection *c,
			 void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct sbxs_server *srv = cls;
	struct sbxs_req *rq = *con_cls;

	(void)c;
	(void)toe;
	if (!rq)
		return;
	srv->handlers->done(rq);
	if (rq->body)
		explicit_bzero(rq->body, rq->len);
	free(rq->body);
	free(rq->uri);
	free(rq);
	*con_cls = NULL;
}

/* ===== The daemon ===== */

int sbxs_http_start(struct sbxs_server *srv,
		    const struct sbxs_handlers *h,
		    int listen_fd,
		    int ipv6,
		    unsigned max_conns,
		    unsigned max_client,
		    unsigned auth_timeout_s)
{
	srv->handlers = h;
	/* A connection starts with the short timeout of the unauthenticated;
	 * one address may hold at most max_client_connections of the
	 * max_connections (one thread each); past either, libmicrohttpd
	 * closes a new connection at once. */
	srv->mhd = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD |
			(ipv6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, srv, MHD_OPTION_LISTEN_SOCKET, listen_fd,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION,
		on_connection, srv, MHD_OPTION_CONNECTION_LIMIT, max_conns,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, max_client, MHD_OPTION_CONNECTION_TIMEOUT,
		auth_timeout_s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_END);
	return srv->mhd ? 0 : -1;
}

void sbxs_http_stop(struct sbxs_server *srv)
{
	MHD_stop_daemon(srv->mhd);
}

/* The first key of obj not in allowed (NULL-terminated), or NULL. */
const char *sbxs_unknown_key(json_t *obj, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v)
	{
		int ok = 0;

		(void)v;
		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(k, *a) == 0;
		if (!ok)
			return k;
	}
	return NULL;
}
