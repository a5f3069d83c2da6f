/*
 * tests/unit/remote/test_e2b.c: the e2b backend (remote/e2b/) against a
 * scripted E2B on loopback.
 *
 * The peer is one libmicrohttpd server (a thread per connection, so that a
 * stream can block while other calls go on) that plays both E2B's control
 * plane and envd: E2B_API_URL and E2B_SANDBOX_URL both point at it, and
 * envd calls are routed by their E2b-Sandbox-Id header, as E2B's proxy does
 * on a shared host. It records every request whole (method, path, query,
 * headers, body), so a test can check exactly what the backend sent: the
 * create body, that a secret travels only in one Start request's envs,
 * that a broken stream is followed by a DELETE. The process stream is a
 * scripted byte sequence (which may stop mid-frame), or a stream that
 * blocks until released, or one that echoes its stdin.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/owner-int.h"
#include "remote/e2b/e2b-int.h"
#include "remote/remote-int.h"

#define KEY "e2b_test_key_0123456789"
#define SECRET "s3cr3t-value-of-the-run-42"
#define LOG_MAX 512
#define SBX_MAX 64
/* Only a fail-safe, so that a broken backend fails the test instead of
 * hanging it: a blocked stream gives up after this long. */
#define SAFETY_S 60

/* ===== Bytes and encodings ===== */

struct bytes {
	unsigned char *b;
	size_t len;
};

static void put(struct bytes *s, const void *p, size_t n)
{
	s->b = realloc(s->b, s->len + n + 1);
	assert_non_null(s->b);
	memcpy(s->b + s->len, p, n);
	s->len += n;
	s->b[s->len] = 0;
}

static void put_frame(struct bytes *s, unsigned int flags, const char *json)
{
	unsigned char h[5];
	size_t n = strlen(json);

	h[0] = (unsigned char)flags;
	h[1] = (unsigned char)(n >> 24);
	h[2] = (unsigned char)(n >> 16);
	h[3] = (unsigned char)(n >> 8);
	h[4] = (unsigned char)n;
	put(s, h, 5);
	put(s, json, n);
}

static char *b64(const void *data, size_t len)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	char *o = malloc(len / 3 * 4 + 8), *q = o;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*q++ = a[v >> 18];
		*q++ = a[(v >> 12) & 63];
		*q++ = i + 1 < len ? a[(v >> 6) & 63] : '=';
		*q++ = i + 2 < len ? a[v & 63] : '=';
	}
	*q = 0;
	return o;
}

static size_t unb64(unsigned char *dst, const char *s)
{
	size_t o = 0, n = strlen(s);
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n && s[i] != '='; i++) {
		const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *c = strchr(a, s[i]);
		assert_non_null(c);
		acc = acc << 6 | (uint32_t)(c - a);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dst[o++] = (unsigned char)(acc >> bits);
		}
	}
	return o;
}

/* ===== The scripted peer ===== */

enum mode { ST_SCRIPT, ST_HANG, ST_ECHO };

struct rec {
	char method[8];
	char path[256];
	char *query;   /* "k=v&..." as decoded by the server */
	char *headers; /* "name: value\n" ... */
	char *body;
	size_t body_len;
};

struct psbx {
	char id[32];
	json_t *metadata;
	int deleted;
};

struct peer {
	struct MHD_Daemon *mhd;
	int port;
	char url[64];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* script */
	int cpu, mem_mb, disk_mb;
	const char *allow_internet; /* JSON literal of allowInternetAccess */
	const char *tier;	    /* Sandboxio-Tier of the create answer; NULL: none */
	int health_fail;	    /* this many /health probes answer 502 first */
	unsigned start_status;	    /* non-zero: Start answers this, with start_body */
	const char *start_body;
	struct bytes stream; /* ST_SCRIPT: the Start answer */
	size_t cut;	     /* non-zero: the stream stops after this many bytes */
	enum mode mode;
	unsigned files_status; /* non-zero: /files answers this with files_body */
	const char *files_body;
	struct bytes file; /* what GET /files returns; POST stores here */
	int page_size;
	int start_delay_ms; /* Start answers after this long (a process that ran) */
	/* state */
	struct psbx sbx[SBX_MAX];
	int nsbx;
	struct rec log[LOG_MAX];
	int nlog;
	int start_seen, released, stdin_closed;
	struct bytes stdin_got;
	size_t stdin_chunks[64];
	int nchunks;
};

struct reqctx {
	struct bytes body;
};

struct streamctx {
	struct peer *p;
	char id[32];
	struct bytes out; /* what to send next */
	size_t off;
	int phase;
};

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct bytes *b = cls;

	(void)kind;
	put(b, k, strlen(k));
	put(b, ": ", 2);
	put(b, v ? v : "", v ? strlen(v) : 0);
	put(b, "\n", 1);
	return MHD_YES;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct bytes *b = cls;

	(void)kind;
	if (b->len)
		put(b, "&", 1);
	put(b, k, strlen(k));
	put(b, "=", 1);
	put(b, v ? v : "", v ? strlen(v) : 0);
	return MHD_YES;
}

static struct psbx *find(struct peer *p, const char *id)
{
	for (int i = 0; id && i < p->nsbx; i++)
		if (strcmp(p->sbx[i].id, id) == 0 && !p->sbx[i].deleted)
			return &p->sbx[i];
	return NULL;
}

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned status, const char *ctype, const void *body, size_t n)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, const char *json)
{
	return reply(c, status, "application/json", json, strlen(json));
}

static void iso_time(char *dst, size_t n, time_t t)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(dst, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *listed(struct peer *p, struct psbx *s)
{
	char started[32];

	iso_time(started, sizeof(started), time(NULL) - 10);
	return json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:i, s:i, s:i}", "sandboxID", s->id,
			 "templateID", "rki5dems9wqfm4r03t7g", "alias", "base", "startedAt",
			 started, "metadata", s->metadata, "state", "running", "cpuCount", p->cpu,
			 "memoryMB", p->mem_mb, "diskSizeMB", p->disk_mb);
}

/* The SDKs' metadata filter: "k=v&k2=v2", each part URL-escaped once more. */
static void pct_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '%' && s[1] && s[2]) {
			char hex[3] = {s[1], s[2], 0};
			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

static int matches(json_t *md, const char *filter)
{
	char *f = strdup(filter ? filter : ""), *save = NULL;
	int ok = 1;

	for (char *kv = strtok_r(f, "&", &save); kv && ok; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		const char *have;

		if (!eq) {
			ok = 0;
			break;
		}
		*eq = 0;
		pct_decode(kv);
		pct_decode(eq + 1);
		have = json_string_value(json_object_get(md, kv));
		ok = have && strcmp(have, eq + 1) == 0;
	}
	free(f);
	return ok;
}

static enum MHD_Result api(struct peer *p,
			   struct MHD_Connection *c,
			   const char *method,
			   const char *url,
			   struct bytes *body)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
	char buf[2048];

	if (!key || strcmp(key, KEY) != 0)
		return reply_json(c, 401,
				  "{\"code\":401,\"message\":\"Invalid API key, it must "
				  "start with e2b_ (test peer)\"}");
	if (strcmp(method, "GET") == 0 && strcmp(url, "/v2/sandboxes") == 0) {
		const char *md = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metadata");
		const char *tok =
			MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nextToken");
		int start = tok ? atoi(tok) : 0, n = 0, i;
		int size = p->page_size ? p->page_size : 100;
		json_t *arr = json_array();
		struct MHD_Response *r;
		enum MHD_Result ret;
		char *text;

		for (i = 0; i < p->nsbx; i++) {
			if (p->sbx[i].deleted || !matches(p->sbx[i].metadata, md))
				continue;
			if (n++ < start)
				continue;
			if ((int)json_array_size(arr) == size)
				break;
			json_array_append_new(arr, listed(p, &p->sbx[i]));
		}
		text = json_dumps(arr, JSON_COMPACT);
		json_decref(arr);
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(r, "Content-Type", "application/json");
		if (i < p->nsbx) {
			snprintf(buf, sizeof(buf), "%d", start + size);
			MHD_add_response_header(r, "X-Next-Token", buf);
		}
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strcmp(method, "POST") == 0 && strcmp(url, "/sandboxes") == 0) {
		json_t *j = json_loadb((char *)body->b, body->len, 0, NULL);
		struct psbx *s;
		struct MHD_Response *r;
		enum MHD_Result ret;

		assert_non_null(j);
		s = &p->sbx[p->nsbx++];
		snprintf(s->id, sizeof(s->id), "isbx%016d", p->nsbx);
		s->metadata = json_incref(json_object_get(j, "metadata"));
		snprintf(buf, sizeof(buf),
			 "{\"templateID\":\"rki5dems9wqfm4r03t7g\",\"sandboxID\":\"%s\","
			 "\"clientID\":\"6532622b\",\"envdVersion\":\"0.5.7\","
			 "\"envdAccessToken\":\"tok-%s\",\"domain\":null}",
			 s->id, s->id);
		json_decref(j);
		r = MHD_create_response_from_buffer(strlen(buf), buf, MHD_RESPMEM_MUST_COPY);
		MHD_add_response_header(r, "Content-Type", "application/json");
		if (p->tier)
			MHD_add_response_header(r, "Sandboxio-Tier", p->tier);
		ret = MHD_queue_response(c, 201, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strncmp(url, "/sandboxes/", 11) == 0) {
		struct psbx *s = find(p, url + 11);

		if (!s) {
			snprintf(buf, sizeof(buf),
				 "{\"code\":404,\"message\":\"Sandbox \\\"%.64s\\\" doesn't exist "
				 "or you don't have access to it\"}",
				 url + 11);
			return reply_json(c, 404, buf);
		}
		if (strcmp(method, "DELETE") == 0) {
			s->deleted = 1;
			pthread_cond_broadcast(&p->cond);
			return reply(c, 204, NULL, "", 0);
		}
		if (strcmp(method, "GET") == 0) {
			json_t *d = listed(p, s);
			char *text;
			enum MHD_Result ret;

			json_object_set_new(d, "envdAccessToken", json_sprintf("tok-%s", s->id));
			json_object_set_new(d, "allowInternetAccess",
					    json_loads(p->allow_internet, JSON_DECODE_ANY, NULL));
			text = json_dumps(d, JSON_COMPACT);
			json_decref(d);
			ret = reply_json(c, 200, text);
			free(text);
			return ret;
		}
	}
	return reply_json(c, 404, "{\"code\":404,\"message\":\"no such route\"}");
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct streamctx *sc = cls;
	struct peer *p = sc->p;
	size_t n;

	(void)pos;
	pthread_mutex_lock(&p->lock);
	if (sc->off == sc->out.len && sc->phase == 0) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += SAFETY_S;
		sc->phase = 1;
		if (p->mode == ST_HANG) {
			while (!p->released &&
			       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
				;
			pthread_mutex_unlock(&p->lock);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (p->mode == ST_ECHO) {
			char *enc, *json;

			while (!p->stdin_closed &&
			       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
				;
			enc = b64(p->stdin_got.b, p->stdin_got.len);
			json = malloc(strlen(enc) + 64);
			sprintf(json, "{\"event\":{\"data\":{\"stdout\":\"%s\"}}}", enc);
			put_frame(&sc->out, 0, json);
			put_frame(&sc->out, 0,
				  "{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status "
				  "0\"}}}");
			put_frame(&sc->out, 2, "{}");
			free(enc);
			free(json);
		}
	}
	if (sc->off == sc->out.len) {
		pthread_mutex_unlock(&p->lock);
		return p->mode == ST_SCRIPT && p->cut ? MHD_CONTENT_READER_END_WITH_ERROR
						      : MHD_CONTENT_READER_END_OF_STREAM;
	}
	n = sc->out.len - sc->off;
	if (n > max)
		n = max;
	memcpy(buf, sc->out.b + sc->off, n);
	sc->off += n;
	pthread_mutex_unlock(&p->lock);
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct streamctx *sc = cls;

	free(sc->out.b);
	free(sc);
}

static enum MHD_Result envd(struct peer *p,
			    struct MHD_Connection *c,
			    const char *method,
			    const char *url,
			    struct bytes *body)
{
	const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	const char *port = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
	const char *tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
	struct psbx *s = find(p, id);
	char buf[512];

	if (!s || !port || strcmp(port, "49983") != 0) {
		snprintf(buf, sizeof(buf),
			 "{\"sandboxId\":\"%.64s\",\"message\":\"The sandbox was not found\","
			 "\"code\":502}",
			 id ? id : "");
		return reply_json(c, 502, buf);
	}
	if (strcmp(url, "/health") == 0) {
		if (p->health_fail > 0) {
			p->health_fail--;
			return reply_json(c, 502, "{\"message\":\"booting\",\"code\":502}");
		}
		return reply(c, 204, NULL, "", 0);
	}
	snprintf(buf, sizeof(buf), "tok-%s", s->id);
	if (!tok || strcmp(tok, buf) != 0)
		return reply_json(c, 401, "{\"message\":\"unauthorized access\",\"code\":401}");
	if (strcmp(url, "/files") == 0) {
		if (p->files_status)
			return reply_json(c, p->files_status, p->files_body);
		if (strcmp(method, "POST") == 0) {
			free(p->file.b);
			p->file = (struct bytes){0};
			put(&p->file, body->b ? body->b : (unsigned char *)"", body->len);
			return reply_json(c, 200,
					  "[{\"path\":\"/x\",\"name\":\"x\",\"type\":\"file\"}]");
		}
		return reply(c, 200, "application/octet-stream", p->file.b ? p->file.b : (void *)"",
			     p->file.len);
	}
	if (strcmp(url, "/process.Process/Start") == 0) {
		struct streamctx *sc = calloc(1, sizeof(*sc));
		struct MHD_Response *r;
		enum MHD_Result ret;

		p->start_seen++;
		pthread_cond_broadcast(&p->cond);
		if (p->start_delay_ms) {
			pthread_mutex_unlock(&p->lock);
			usleep((useconds_t)p->start_delay_ms * 1000u);
			pthread_mutex_lock(&p->lock);
		}
		if (p->start_status) {
			free(sc);
			return reply_json(c, p->start_status, p->start_body);
		}
		sc->p = p;
		if (p->mode == ST_SCRIPT)
			put(&sc->out, p->stream.b, p->cut ? p->cut : p->stream.len);
		else
			put_frame(&sc->out, 0, "{\"event\":{\"start\":{\"pid\":77}}}");
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, sc,
						      stream_free);
		MHD_add_response_header(r, "Content-Type", "application/connect+json");
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strcmp(url, "/process.Process/SendInput") == 0) {
		json_t *j = json_loadb((char *)body->b, body->len, 0, NULL);
		const char *in =
			json_string_value(json_object_get(json_object_get(j, "input"), "stdin"));
		unsigned char *dec;
		size_t n;

		assert_non_null(in);
		assert_int_equal(
			json_integer_value(json_object_get(json_object_get(j, "process"), "pid")),
			77);
		dec = malloc(strlen(in) + 1);
		n = unb64(dec, in);
		put(&p->stdin_got, dec, n);
		if (p->nchunks < 64)
			p->stdin_chunks[p->nchunks++] = n;
		free(dec);
		json_decref(j);
		return reply_json(c, 200, "{}");
	}
	if (strcmp(url, "/process.Process/CloseStdin") == 0) {
		p->stdin_closed = 1;
		pthread_cond_broadcast(&p->cond);
		return reply_json(c, 200, "{}");
	}
	if (strcmp(url, "/process.Process/SendSignal") == 0)
		return reply_json(c, 200, "{}");
	return reply_json(c, 404, "{\"code\":\"not_found\",\"message\":\"no such route\"}");
}

static enum MHD_Result handler(void *cls,
			       struct MHD_Connection *c,
			       const char *url,
			       const char *method,
			       const char *version,
			       const char *upload,
			       size_t *upload_size,
			       void **con_cls)
{
	struct peer *p = cls;
	struct reqctx *rc = *con_cls;
	struct bytes hdrs = {0}, args = {0};
	enum MHD_Result ret;

	(void)version;
	if (!rc) {
		*con_cls = calloc(1, sizeof(struct reqctx));
		return MHD_YES;
	}
	if (*upload_size) {
		put(&rc->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, &hdrs);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &args);
	pthread_mutex_lock(&p->lock);
	if (p->nlog < LOG_MAX) {
		struct rec *r = &p->log[p->nlog++];

		snprintf(r->method, sizeof(r->method), "%s", method);
		snprintf(r->path, sizeof(r->path), "%s", url);
		r->query = strdup(args.b ? (char *)args.b : "");
		r->headers = strdup(hdrs.b ? (char *)hdrs.b : "");
		r->body = malloc(rc->body.len + 1);
		memcpy(r->body, rc->body.b ? rc->body.b : (unsigned char *)"", rc->body.len);
		r->body[rc->body.len] = 0;
		r->body_len = rc->body.len;
	}
	if (strcmp(url, "/health") == 0 || strcmp(url, "/files") == 0 ||
	    strncmp(url, "/process.", 9) == 0)
		ret = envd(p, c, method, url, &rc->body);
	else
		ret = api(p, c, method, url, &rc->body);
	pthread_mutex_unlock(&p->lock);
	free(hdrs.b);
	free(args.b);
	return ret;
}

static void
completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct reqctx *rc = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (rc) {
		free(rc->body.b);
		free(rc);
		*con_cls = NULL;
	}
}

static struct peer *peer_start(void)
{
	struct peer *p = calloc(1, sizeof(*p));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	p->port = ntohs(sa.sin_port);
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->cpu = 1;
	p->mem_mb = 512;
	p->disk_mb = 1024;
	p->allow_internet = "false";
	p->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
				  0, NULL, NULL, handler, p, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_NOTIFY_COMPLETED, completed, p, MHD_OPTION_END);
	assert_non_null(p->mhd);
	setenv("E2B_API_KEY", KEY, 1);
	setenv("E2B_API_URL", p->url, 1);
	setenv("E2B_SANDBOX_URL", p->url, 1);
	unsetenv("E2B_DOMAIN");
	unsetenv("E2B_TEMPLATE");
	return p;
}

static void peer_release(struct peer *p)
{
	pthread_mutex_lock(&p->lock);
	p->released = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void peer_stop(struct peer *p)
{
	peer_release(p);
	MHD_stop_daemon(p->mhd);
	for (int i = 0; i < p->nlog; i++) {
		free(p->log[i].query);
		free(p->log[i].headers);
		free(p->log[i].body);
	}
	for (int i = 0; i < p->nsbx; i++)
		json_decref(p->sbx[i].metadata);
	free(p->stream.b);
	free(p->file.b);
	free(p->stdin_got.b);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

/* How many requests were "METHOD path" (path: a prefix). */
static int count(struct peer *p, const char *method, const char *path)
{
	int n = 0;

	pthread_mutex_lock(&p->lock);
	for (int i = 0; i < p->nlog; i++)
		if (strcmp(p->log[i].method, method) == 0 &&
		    strncmp(p->log[i].path, path, strlen(path)) == 0)
			n++;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* The last request to path. */
static struct rec *last(struct peer *p, const char *method, const char *path)
{
	for (int i = p->nlog - 1; i >= 0; i--)
		if (strcmp(p->log[i].method, method) == 0 && strcmp(p->log[i].path, path) == 0)
			return &p->log[i];
	return NULL;
}

/* The value of header name in a recorded request (case-insensitive name). */
static const char *hdr(struct rec *r, const char *name, char *dst, size_t n)
{
	size_t nl = strlen(name);

	for (const char *l = r->headers; l && *l;) {
		const char *nl_end = strchr(l, '\n');
		if (strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
			size_t vl = (size_t)(nl_end - (l + nl + 2));
			snprintf(dst, n, "%.*s", (int)vl, l + nl + 2);
			return dst;
		}
		l = nl_end ? nl_end + 1 : NULL;
	}
	return NULL;
}

/* ===== Helpers over the public API ===== */

static sbx_backend *open_backend(void)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	o.no_reap_at_open = 1;
	assert_int_equal(sbx_backend_open(&b, "e2b", &o), 0);
	return b;
}

static sbx_sandbox *create_default(sbx_backend *b)
{
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;
	int rc;

	assert_int_equal(sbx_policy_new(&pol), 0);
	rc = sbx_sandbox_create(&s, b, pol);
	if (rc != 0)
		fail_msg("create: %d %s", rc, sbx_error_last()->message);
	sbx_policy_free(pol);
	return s;
}

static void script(struct peer *p, const char *const *frames, int eos)
{
	free(p->stream.b);
	p->stream = (struct bytes){0};
	for (size_t i = 0; frames[i]; i++)
		put_frame(&p->stream, 0, frames[i]);
	if (eos)
		put_frame(&p->stream, 2, "{}");
}

static int run(sbx_sandbox *s, sbx_result **r, const char *cmd)
{
	const char *argv[] = {"sh", "-c", cmd, NULL};

	return sbx_sandbox_run(r, s, argv, NULL);
}

/* ===== Open ===== */

static void test_e2b__open_needs_key(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = NULL;

	(void)state;
	unsetenv("E2B_API_KEY");
	assert_int_equal(sbx_backend_open(&b, "e2b", NULL), SBX_EDENIED);
	assert_null(b);
	assert_non_null(strstr(sbx_error_last()->message, "E2B_API_KEY"));
	assert_int_equal(p->nlog, 0);
	peer_stop(p);
}

static void test_e2b__open_wrong_key(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = NULL;

	(void)state;
	setenv("E2B_API_KEY", "e2b_wrong", 1);
	assert_int_equal(sbx_backend_open(&b, "e2b", NULL), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "Invalid API key, it must start with "
							  "e2b_ (test peer)"));
	assert_int_equal(sbx_error_last()->http_status, 401);
	assert_null(strstr(sbx_error_last()->message, "e2b_wrong"));
	assert_int_equal(count(p, "GET", "/v2/sandboxes"), 1);
	assert_non_null(strstr(p->log[0].query, "limit=1"));
	peer_stop(p);
}

static void test_e2b__open_unreachable(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	struct peer *p = peer_start();
	sbx_backend *b = NULL;
	char url[64];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	/* A loopback port that was just free, and is closed again. */
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	close(fd);
	setenv("E2B_API_URL", url, 1);
	assert_int_equal(sbx_backend_open(&b, "e2b", NULL), SBX_EUNAVAILABLE);
	assert_non_null(strstr(sbx_error_last()->message, url));
	peer_stop(p);
}

static void test_e2b__open_refuses_plain_http_off_loopback(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = NULL;

	(void)state;
	/* Refused by validation: nothing is sent there. */
	setenv("E2B_API_URL", "http://198.51.100.7", 1);
	assert_int_equal(sbx_backend_open(&b, "e2b", NULL), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "E2B_API_URL"));
	setenv("E2B_API_URL", p->url, 1);
	setenv("E2B_SANDBOX_URL", "https://u:p@198.51.100.7", 1);
	assert_int_equal(sbx_backend_open(&b, "e2b", NULL), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "E2B_SANDBOX_URL"));
	peer_stop(p);
}

static void test_e2b__unknown_backend_lists_names(void **state)
{
	sbx_backend *b = NULL;

	(void)state;
	assert_int_equal(sbx_backend_open(&b, "nope", NULL), SBX_EUNSUPPORTED);
	assert_non_null(strstr(sbx_error_last()->message, "docker"));
	assert_non_null(strstr(sbx_error_last()->message, "e2b"));
}

/* ===== Create ===== */

static void check_key_set(json_t *o, const char *const *keys)
{
	size_t n = 0;

	for (; keys[n]; n++)
		if (!json_object_get(o, keys[n]))
			fail_msg("missing key %s", keys[n]);
	assert_int_equal(json_object_size(o), n);
}

static void test_e2b__create_request_and_secret_only_in_start(void **state)
{
	static const char *const top[] = {"templateID", "timeout", "metadata",
					  "envVars",	"secure",  "allow_internet_access",
					  "network",	NULL};
	static const char *const mdkeys[] = {"io.sandboxio.managed-by",	 "io.sandboxio.tenant",
					     "io.sandboxio.deadline",	 "io.sandboxio.owner-host",
					     "io.sandboxio.owner-boot",	 "io.sandboxio.owner-pid",
					     "io.sandboxio.owner-start", NULL};
	static const char *const frames[] = {
		"{\"event\":{\"start\":{\"pid\":412}}}",
		"{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}",
		"{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}", NULL};
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;
	sbx_secrets *sec = NULL;
	sbx_result *r = NULL;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"python3", "-c", "print(1)", NULL};
	json_t *body, *md, *start, *proc;
	struct rec *rq;
	char v[128];
	time_t before = time(NULL);

	(void)state;
	script(p, frames, 1);
	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(sbx_policy_set_tenant(pol, "acme"), 0);
	assert_int_equal(sbx_policy_set_env(pol, "PLAIN", "1"), 0);
	assert_int_equal(sbx_policy_set_timeout_ms(pol, SBX_TIMEOUT_SANDBOX, 90500), 0);
	assert_int_equal(sbx_policy_allow_cidr(pol, "198.51.100.0/24", 0), 0);
	assert_int_equal(sbx_policy_allow_cidr(pol, "203.0.113.7", 0), 0);
	assert_int_equal(sbx_policy_set_workdir(pol, "/home/user/work"), 0);
	if (sbx_sandbox_create(&s, b, pol) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	assert_int_equal(sbx_sandbox_tier(s), SBX_TIER_MICROVM);

	rq = last(p, "POST", "/sandboxes");
	assert_non_null(rq);
	assert_non_null(hdr(rq, "X-API-Key", v, sizeof(v)));
	assert_string_equal(v, KEY);
	body = json_loads(rq->body, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(body);
	check_key_set(body, top);
	assert_string_equal(json_string_value(json_object_get(body, "templateID")), "base");
	assert_int_equal(json_integer_value(json_object_get(body, "timeout")), 91);
	assert_true(json_is_true(json_object_get(body, "secure")));
	assert_true(json_is_false(json_object_get(body, "allow_internet_access")));
	{
		char *ev = json_dumps(json_object_get(body, "envVars"), JSON_COMPACT);
		assert_string_equal(ev, "{\"PLAIN\":\"1\"}");
		free(ev);
	}
	{
		char *net =
			json_dumps(json_object_get(body, "network"), JSON_COMPACT | JSON_SORT_KEYS);
		assert_string_equal(net, "{\"allowOut\":[\"198.51.100.0/24\",\"203.0.113.7/32\"],"
					 "\"denyOut\":[\"0.0.0.0/0\"]}");
		free(net);
	}
	md = json_object_get(body, "metadata");
	check_key_set(md, mdkeys);
	assert_string_equal(json_string_value(json_object_get(md, "io.sandboxio.managed-by")),
			    "sandboxio");
	assert_string_equal(json_string_value(json_object_get(md, "io.sandboxio.tenant")), "acme");
	{
		long long dl = strtoll(
			json_string_value(json_object_get(md, "io.sandboxio.deadline")), NULL, 10);
		char pid[32];

		assert_true(dl >= before + 91 && dl <= time(NULL) + 91);
		snprintf(pid, sizeof(pid), "%ld", (long)getpid());
		assert_string_equal(
			json_string_value(json_object_get(md, "io.sandboxio.owner-pid")), pid);
	}
	json_decref(body);
	/* Readback, then envd's health, both after the create. */
	assert_int_equal(count(p, "GET", "/sandboxes/"), 1);
	assert_int_equal(count(p, "GET", "/health"), 1);

	/* A run with a secret: only its Start request's envs carry it. */
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "TOKEN", SECRET, strlen(SECRET)), 0);
	ro.secrets = sec;
	ro.timeout_ms = 7000;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), 0);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(r->stdout_data, "hi\n");
	sbx_result_free(r);

	rq = last(p, "POST", "/process.Process/Start");
	assert_non_null(rq);
	assert_string_equal(hdr(rq, "Content-Type", v, sizeof(v)), "application/connect+json");
	assert_string_equal(hdr(rq, "Connect-Protocol-Version", v, sizeof(v)), "1");
	assert_string_equal(hdr(rq, "Connect-Timeout-Ms", v, sizeof(v)), "7000");
	assert_string_equal(hdr(rq, "Keepalive-Ping-Interval", v, sizeof(v)), "50");
	assert_string_equal(hdr(rq, "E2b-Sandbox-Port", v, sizeof(v)), "49983");
	assert_string_equal(hdr(rq, "E2b-Sandbox-Id", v, sizeof(v)), sbx_sandbox_id(s));
	assert_string_equal(hdr(rq, "X-Access-Token", v, sizeof(v)) ?: "",
			    "tok-isbx0000000000000001");
	assert_null(hdr(rq, "X-API-Key", v, sizeof(v)));
	/* One envelope: flags 0, length, JSON. */
	assert_true(rq->body_len > 5);
	assert_int_equal(rq->body[0], 0);
	assert_int_equal(((size_t)(unsigned char)rq->body[1] << 24 |
			  (size_t)(unsigned char)rq->body[2] << 16 |
			  (size_t)(unsigned char)rq->body[3] << 8 | (unsigned char)rq->body[4]) +
				 5,
			 rq->body_len);
	start = json_loadb(rq->body + 5, rq->body_len - 5, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(start);
	{
		static const char *const skeys[] = {"process", "stdin", NULL};
		static const char *const pkeys[] = {"cmd", "args", "envs", "cwd", NULL};
		json_t *args, *envs;
		size_t n;

		check_key_set(start, skeys);
		assert_true(json_is_false(json_object_get(start, "stdin")));
		proc = json_object_get(start, "process");
		check_key_set(proc, pkeys);
		assert_string_equal(json_string_value(json_object_get(proc, "cmd")), "prlimit");
		args = json_object_get(proc, "args");
		n = json_array_size(args);
		assert_true(n >= 4);
		assert_string_equal(json_string_value(json_array_get(args, n - 4)), "--");
		assert_string_equal(json_string_value(json_array_get(args, n - 3)), "python3");
		assert_string_equal(json_string_value(json_array_get(args, n - 1)), "print(1)");
		assert_string_equal(json_string_value(json_object_get(proc, "cwd")),
				    "/home/user/work");
		envs = json_object_get(proc, "envs");
		assert_string_equal(json_string_value(json_object_get(envs, "TOKEN")), SECRET);
		assert_string_equal(json_string_value(json_object_get(envs, "PLAIN")), "1");
		json_object_del(envs, "TOKEN");
		{
			char *rest = json_dumps(start, JSON_COMPACT);
			assert_null(strstr(rest, SECRET));
			free(rest);
		}
	}
	json_decref(start);
	/* Nowhere else: no other request's path, query, headers or body. */
	for (int i = 0; i < p->nlog; i++) {
		struct rec *x = &p->log[i];

		assert_null(strstr(x->path, SECRET));
		assert_null(strstr(x->query, SECRET));
		assert_null(strstr(x->headers, SECRET));
		if (x != rq)
			assert_null(memmem(x->body, x->body_len, SECRET, strlen(SECRET)));
	}
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 1);
	sbx_secrets_free(sec);
	sbx_policy_free(pol);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__create_template_choice(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b;
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;
	json_t *body;

	(void)state;
	setenv("E2B_TEMPLATE", "my-template", 1);
	b = open_backend();
	s = create_default(b);
	body = json_loads(last(p, "POST", "/sandboxes")->body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(body, "templateID")), "my-template");
	/* No allowlist: no network block, and still no internet. */
	assert_null(json_object_get(body, "network"));
	assert_true(json_is_false(json_object_get(body, "allow_internet_access")));
	/* Default lifetime 300 s. */
	assert_int_equal(json_integer_value(json_object_get(body, "timeout")), 300);
	json_decref(body);
	sbx_sandbox_close(s);

	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(sbx_policy_set_image(pol, "code-interpreter-v1"), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, pol), 0);
	body = json_loads(last(p, "POST", "/sandboxes")->body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(body, "templateID")),
			    "code-interpreter-v1");
	json_decref(body);
	sbx_sandbox_close(s);
	sbx_policy_free(pol);
	sbx_backend_free(b);
	peer_stop(p);
}

static void refused(sbx_backend *b,
		    int (*add)(sbx_policy *, const char *, uint16_t),
		    const char *entry,
		    uint16_t port,
		    const char *want)
{
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;

	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(add(pol, entry, port), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EUNSUPPORTED);
	if (!strstr(sbx_error_last()->message, want) || !strstr(sbx_error_last()->message, entry))
		fail_msg("'%s': %s", entry, sbx_error_last()->message);
	sbx_policy_free(pol);
}

static void test_e2b__check_refusals(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;

	(void)state;
	refused(b, sbx_policy_allow_host, "api.example.com", 0, "allow_cidr");
	refused(b, sbx_policy_allow_host, "api.example.com", 443, "DNS open");
	refused(b, sbx_policy_allow_cidr, "198.51.100.0/24", 443, "no ports");
	refused(b, sbx_policy_allow_cidr, "2001:db8::/32", 0, "IPv4 only");
	refused(b, sbx_policy_allow_cidr, "10.1.0.0/16", 0, "10.0.0.0/8");
	refused(b, sbx_policy_allow_cidr, "172.0.0.0/8", 0, "172.16.0.0/12");
	refused(b, sbx_policy_allow_cidr, "192.168.7.7", 0, "192.168.0.0/16");
	refused(b, sbx_policy_allow_cidr, "100.64.0.0/10", 0, "100.64.0.0/10");
	/* A never-reachable address is refused by the policy itself, on every
	 * backend, before this adapter's own ranges are looked at. */
	{
		sbx_policy *special = NULL;

		assert_int_equal(sbx_policy_new(&special), 0);
		assert_int_equal(sbx_policy_allow_cidr(special, "169.254.169.254", 0),
				 SBX_EINVALID);
		assert_non_null(strstr(sbx_error_last()->message, "never reaches"));
		sbx_policy_free(special);
	}
	refused(b, sbx_policy_allow_cidr, "64.0.0.0/2", 0, "100.64.0.0/10");
	assert_int_equal(count(p, "POST", "/sandboxes"), 0);
	/* The tier: nothing above microvm exists, and microvm itself is given. */
	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(sbx_policy_set_min_tier(pol, SBX_TIER_MICROVM), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, pol), 0);
	assert_int_equal(sbx_sandbox_tier(s), SBX_TIER_MICROVM);
	sbx_sandbox_close(s);
	sbx_policy_free(pol);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__readback_mismatch_deletes(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;

	(void)state;
	assert_int_equal(sbx_policy_new(&pol), 0);
	p->cpu = 2;
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message,
			       "e2b: template 'base' gives 2 CPUs, the policy caps 1.000; raise "
			       "the policy's cpu or use a template that fits"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000001"), 1);
	assert_int_equal(count(p, "GET", "/health"), 0);

	p->cpu = 1;
	p->mem_mb = 1024;
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "gives 1024 MiB of memory, the policy "
							  "caps 512 MiB"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000002"), 1);

	p->mem_mb = 512;
	p->disk_mb = 4096;
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "4096 MiB of disk"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000003"), 1);

	p->disk_mb = 1024;
	p->allow_internet = "true";
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "allowInternetAccess"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000004"), 1);
	p->allow_internet = "null";
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EDENIED);
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000005"), 1);

	/* A policy that fits what the template gives is accepted. */
	p->allow_internet = "false";
	p->cpu = 2;
	assert_int_equal(sbx_policy_set_limit(pol, SBX_LIMIT_CPU_MILLI, 2000), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, pol), 0);
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000006"), 0);
	sbx_sandbox_close(s);
	sbx_policy_free(pol);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__tier_header(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_policy *pol = NULL;
	sbx_sandbox *s = NULL;

	(void)state;
	p->tier = "container";
	s = create_default(b);
	assert_int_equal(sbx_sandbox_tier(s), SBX_TIER_CONTAINER);
	sbx_sandbox_close(s);
	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(sbx_policy_set_min_tier(pol, SBX_TIER_MICROVM), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EUNSUPPORTED);
	assert_non_null(strstr(sbx_error_last()->message, "container"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000002"), 1);
	p->tier = "warp-drive";
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_EENGINE);
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000003"), 1);
	sbx_policy_free(pol);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__create_waits_for_envd(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_policy *pol = NULL;
	sbx_sandbox *s;

	(void)state;
	p->health_fail = 3;
	s = create_default(b);
	assert_int_equal(count(p, "GET", "/health"), 4);
	sbx_sandbox_close(s);
	/* envd never answers: the create deadline ends it, and the sandbox goes. */
	p->health_fail = 1000000;
	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(sbx_policy_set_timeout_ms(pol, SBX_TIMEOUT_CREATE, 300), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, pol), SBX_ETIMEOUT);
	assert_non_null(strstr(sbx_error_last()->message, "/health"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/isbx0000000000000002"), 1);
	sbx_policy_free(pol);
	sbx_backend_free(b);
	peer_stop(p);
}

/* ===== Open by id ===== */

static void test_e2b__open_box(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = NULL, *o = NULL;
	const sbx_policy *op;

	(void)state;
	/* Unknown: E2B's own 404 message surfaces. */
	assert_int_equal(sbx_sandbox_open(&o, b, "nosuchsandbox0000001"), SBX_ENOTFOUND);
	assert_non_null(strstr(sbx_error_last()->message,
			       "Sandbox \"nosuchsandbox0000001\" doesn't exist or you don't have "
			       "access to it"));
	assert_int_equal(sbx_error_last()->http_status, 404);
	/* Not ours. */
	pthread_mutex_lock(&p->lock);
	snprintf(p->sbx[p->nsbx].id, sizeof(p->sbx[0].id), "foreign0000000000001");
	p->sbx[p->nsbx++].metadata = json_pack("{s:s}", "owner", "someone");
	pthread_mutex_unlock(&p->lock);
	assert_int_equal(sbx_sandbox_open(&o, b, "foreign0000000000001"), SBX_ENOTFOUND);
	assert_non_null(strstr(sbx_error_last()->message, "not a sandboxio sandbox"));
	/* Ours: tenant and lifetime from its metadata. */
	{
		sbx_policy *pol = NULL;

		assert_int_equal(sbx_policy_new(&pol), 0);
		assert_int_equal(sbx_policy_set_tenant(pol, "t-open"), 0);
		assert_int_equal(sbx_sandbox_create(&s, b, pol), 0);
		sbx_policy_free(pol);
	}
	assert_int_equal(sbx_sandbox_open(&o, b, sbx_sandbox_id(s)), 0);
	op = sbx_sandbox_policy(o);
	assert_string_equal(sbx_policy_tenant(op), "t-open");
	/* startedAt is 10 s before now, the deadline 300 s after the create. */
	assert_true(sbx_policy_timeout_ms(op, SBX_TIMEOUT_SANDBOX) >= 305000 &&
		    sbx_policy_timeout_ms(op, SBX_TIMEOUT_SANDBOX) <= 315000);
	assert_int_equal(sbx_sandbox_tier(o), SBX_TIER_MICROVM);
	sbx_sandbox_detach(o);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

/* ===== Runs ===== */

static void test_e2b__run_exit_code_and_stderr(void **state)
{
	static const char *const frames[] = {
		"{\"event\":{\"start\":{\"pid\":412}}}",
		"{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}",
		"{\"event\":{\"keepalive\":{}}}",
		"{\"event\":{\"data\":{\"stderr\":\"b29wcw==\"}}}",
		"{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,\"status\":\"exit status 3\","
		"\"error\":\"exit status 3\"}}}",
		NULL};
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;

	(void)state;
	script(p, frames, 1);
	assert_int_equal(run(s, &r, "echo hi; echo oops >&2; exit 3"), 0);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 3);
	assert_string_equal(r->stdout_data, "hi\n");
	assert_string_equal(r->stderr_data, "oops");
	assert_int_equal(r->limits_hit & SBX_HIT_TIMEOUT, 0);
	sbx_result_free(r);
	{
		/* The default working directory is the template's: no cwd sent. */
		struct rec *rq = last(p, "POST", "/process.Process/Start");
		json_t *start = json_loadb(rq->body + 5, rq->body_len - 5, 0, NULL);

		assert_non_null(json_object_get(start, "process"));
		assert_null(json_object_get(json_object_get(start, "process"), "cwd"));
		json_decref(start);
	}
	/* One the run names is sent. */
	{
		sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
		const char *argv[] = {"true", NULL};
		struct rec *rq;
		json_t *start;

		ro.workdir = "/tmp";
		assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), 0);
		sbx_result_free(r);
		rq = last(p, "POST", "/process.Process/Start");
		start = json_loadb(rq->body + 5, rq->body_len - 5, 0, NULL);
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(start, "process"), "cwd")),
				    "/tmp");
		json_decref(start);
	}
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 0);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__run_deadline_and_signals(void **state)
{
	static const char *const deadline[] = {"{\"event\":{\"start\":{\"pid\":9}}}", NULL};
	static const char *const term[] = {
		"{\"event\":{\"start\":{\"pid\":9}}}",
		"{\"event\":{\"end\":{\"exitCode\":-1,\"status\":\"signal: terminated\"}}}", NULL};
	static const char *const killed[] = {
		"{\"event\":{\"start\":{\"pid\":9}}}",
		"{\"event\":{\"end\":{\"exitCode\":-1,\"status\":\"signal: killed\","
		"\"error\":\"signal: killed\"}}}",
		NULL};
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"sleep", "100", NULL};

	(void)state;
	/* envd's deadline, told in the end-of-stream frame. */
	script(p, deadline, 0);
	put_frame(&p->stream, 2,
		  "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"context deadline "
		  "exceeded\"}}");
	assert_int_equal(run(s, &r, "sleep 100"), 0);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	sbx_result_free(r);
	/* Another signal. */
	script(p, term, 1);
	assert_int_equal(run(s, &r, "kill $$"), 0);
	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->term_signal, 15);
	assert_int_equal(r->exit_code, 143);
	sbx_result_free(r);
	/* SIGKILL before the run's deadline is a kill... */
	script(p, killed, 1);
	assert_int_equal(run(s, &r, "kill -9 $$"), 0);
	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->term_signal, 9);
	assert_int_equal(r->exit_code, 137);
	sbx_result_free(r);
	/* ...and at (or after) it, the deadline. */
	p->start_delay_ms = 20;
	ro.timeout_ms = 1;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), 0);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	assert_string_equal(hdr(last(p, "POST", "/process.Process/Start"), "Connect-Timeout-Ms",
				(char[32]){0}, 32),
			    "1");
	sbx_result_free(r);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 0);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__run_vanished_sandbox(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;
	char want[128];

	(void)state;
	p->start_status = 502;
	snprintf(want, sizeof(want),
		 "{\"sandboxId\":\"%s\",\"message\":\"The sandbox was not found\",\"code\":502}",
		 sbx_sandbox_id(s));
	p->start_body = want;
	assert_int_equal(run(s, &r, "true"), SBX_ENOTFOUND);
	assert_null(r);
	assert_non_null(strstr(sbx_error_last()->message, "is gone"));
	assert_non_null(strstr(sbx_error_last()->message, sbx_sandbox_id(s)));
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

/* A run whose stream breaks the protocol: an error naming what broke, and
 * the sandbox deleted. */
static void broken_run(struct peer *p, const char *want)
{
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;
	int rc;

	rc = run(s, &r, "true");
	assert_int_equal(rc, SBX_EENGINE);
	assert_null(r);
	if (!strstr(sbx_error_last()->message, want))
		fail_msg("wanted '%s' in: %s", want, sbx_error_last()->message);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 1);
	/* Later runs are refused; close still succeeds (already gone). */
	assert_int_equal(run(s, &r, "true"), SBX_ENOTFOUND);
	assert_int_equal(count(p, "POST", "/process.Process/Start"), 1);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_backend_free(b);
}

static void test_e2b__run_cut_mid_frame(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}",
					     "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}", NULL};
	struct peer *p = peer_start();
	char want[96];

	(void)state;
	script(p, frames, 1);
	/* Stops 10 bytes into the second frame (5 + 37 + 5 bytes). */
	p->cut = 5 + strlen(frames[0]) + 10;
	snprintf(want, sizeof(want), "ended mid-frame (got 10 of %zu bytes)",
		 5 + strlen(frames[1]));
	broken_run(p, want);
	peer_stop(p);
}

static void test_e2b__run_oversize_frame(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}", NULL};
	static const unsigned char big[5] = {0, 0x00, 0x50, 0x00, 0x00}; /* 5 MiB */
	struct peer *p = peer_start();

	(void)state;
	script(p, frames, 0);
	put(&p->stream, big, sizeof(big));
	put(&p->stream, "{\"event\":", 9);
	p->cut = p->stream.len;
	broken_run(p, "envelope of 5242880 bytes in the process stream is over the 4194304-byte "
		      "limit");
	peer_stop(p);
}

static void test_e2b__run_malformed_json(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}",
					     "{\"event\":{\"data\":", NULL};
	struct peer *p = peer_start();

	(void)state;
	script(p, frames, 1);
	broken_run(p, "malformed JSON");
	peer_stop(p);
}

static void test_e2b__run_without_end_event(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}", NULL};
	struct peer *p = peer_start();

	(void)state;
	script(p, frames, 1);
	broken_run(p, "without an end event");
	peer_stop(p);
}

static void test_e2b__run_compressed_frame(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}", NULL};
	struct peer *p = peer_start();

	(void)state;
	script(p, frames, 0);
	put_frame(&p->stream, 1, "{\"event\":{\"keepalive\":{}}}");
	put_frame(&p->stream, 2, "{}");
	broken_run(p, "compressed envelope");
	peer_stop(p);
}

static void test_e2b__run_bad_base64(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}",
					     "{\"event\":{\"data\":{\"stdout\":\"a!b=\"}}}", NULL};
	struct peer *p = peer_start();

	(void)state;
	script(p, frames, 1);
	broken_run(p, "not base64");
	peer_stop(p);
}

static void test_e2b__run_stdin(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"cat", NULL};
	size_t n = 150 * 1024;
	unsigned char *in = malloc(n);
	json_t *start;
	struct rec *rq;

	(void)state;
	for (size_t i = 0; i < n; i++)
		in[i] = (unsigned char)(i * 7 + i / 251);
	p->mode = ST_ECHO;
	ro.stdin_data = in;
	ro.stdin_len = n;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), 0);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->stdout_len, n);
	assert_memory_equal(r->stdout_data, in, n);
	sbx_result_free(r);
	/* Three SendInput calls of at most 64 KiB, in order, then CloseStdin. */
	assert_int_equal(p->nchunks, 3);
	assert_int_equal(p->stdin_chunks[0], 65536);
	assert_int_equal(p->stdin_chunks[1], 65536);
	assert_int_equal(p->stdin_chunks[2], n - 131072);
	assert_int_equal(count(p, "POST", "/process.Process/SendInput"), 3);
	assert_int_equal(count(p, "POST", "/process.Process/CloseStdin"), 1);
	{
		int last_input = -1, close_at = -1;
		char v[64];

		for (int i = 0; i < p->nlog; i++) {
			if (strcmp(p->log[i].path, "/process.Process/SendInput") == 0)
				last_input = i;
			if (strcmp(p->log[i].path, "/process.Process/CloseStdin") == 0)
				close_at = i;
		}
		assert_true(close_at > last_input);
		assert_string_equal(p->log[close_at].body, "{\"process\":{\"pid\":77}}");
		assert_string_equal(hdr(&p->log[close_at], "Content-Type", v, sizeof(v)),
				    "application/json");
	}
	rq = last(p, "POST", "/process.Process/Start");
	start = json_loadb(rq->body + 5, rq->body_len - 5, 0, NULL);
	assert_true(json_is_true(json_object_get(start, "stdin")));
	json_decref(start);
	free(in);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

struct killer {
	struct peer *p;
	sbx_sandbox *s;
	int rc;
};

static void *kill_when_started(void *arg)
{
	struct killer *k = arg;

	pthread_mutex_lock(&k->p->lock);
	while (!k->p->start_seen)
		pthread_cond_wait(&k->p->cond, &k->p->lock);
	pthread_mutex_unlock(&k->p->lock);
	k->rc = sbx_sandbox_kill(k->s);
	return NULL;
}

static void test_e2b__kill_from_another_thread(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	struct killer k = {.p = p, .s = s};
	sbx_result *r = NULL;
	pthread_t t;
	int rc;

	(void)state;
	/* The stream blocks until the test releases it: only the kill can end the run. */
	p->mode = ST_HANG;
	assert_int_equal(pthread_create(&t, NULL, kill_when_started, &k), 0);
	rc = run(s, &r, "sleep 1000");
	peer_release(p);
	pthread_join(t, NULL);
	assert_int_equal(k.rc, 0);
	assert_int_equal(rc, 0);
	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->term_signal, 9);
	sbx_result_free(r);
	assert_true(count(p, "DELETE", "/sandboxes/") >= 1);
	assert_int_equal(run(s, &r, "true"), SBX_ENOTFOUND);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

static int cancel_cb(int stream, const char *data, size_t len, void *payload)
{
	(void)stream;
	(void)data;
	(void)len;
	++*(int *)payload;
	return 1;
}

static void test_e2b__sink_cancel(void **state)
{
	static const char *const frames[] = {"{\"event\":{\"start\":{\"pid\":412}}}",
					     "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}", NULL};
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"yes", NULL};
	int calls = 0;

	(void)state;
	/* Output, and no end: only the cancel ends the run well. */
	script(p, frames, 0);
	ro.on_output = cancel_cb;
	ro.payload = &calls;
	ro.raw_output = 1;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), SBX_ECANCELED);
	assert_true(calls >= 1);
	assert_int_equal(count(p, "POST", "/process.Process/SendSignal"), 1);
	assert_non_null(strstr(last(p, "POST", "/process.Process/SendSignal")->body,
			       "\"signal\":\"SIGNAL_SIGKILL\""));
	assert_non_null(
		strstr(last(p, "POST", "/process.Process/SendSignal")->body, "\"pid\":412"));
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 1);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__host_backstop(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	sbx_result *r = NULL;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"sleep", "1000", NULL};

	(void)state;
	/* envd does not end the process at its deadline: the host does, 5 s later. */
	p->mode = ST_HANG;
	ro.timeout_ms = 10;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), 0);
	peer_release(p);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	assert_true(r->duration_ms >= 10 + 5000);
	sbx_result_free(r);
	assert_int_equal(count(p, "POST", "/process.Process/SendSignal"), 1);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 1);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

/* ===== Files (the backend's optional file operations) ===== */

static void test_e2b__files(void **state)
{
	static const char *const chmod_ok[] = {
		"{\"event\":{\"start\":{\"pid\":5}}}",
		"{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}", NULL};
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	sbx_sandbox *s = create_default(b);
	const struct sbx__backend_ops *ops = &sbx__e2b_ops;
	void *st = NULL, *box = NULL;
	sbx_policy *pol = NULL;
	sbx_tier tier;
	char *out = NULL;
	size_t len = 0;
	struct rec *rq;
	json_t *start;

	(void)state;
	assert_int_equal(ops->open(NULL, &st), 0);
	assert_int_equal(sbx_policy_new(&pol), 0);
	assert_int_equal(ops->open_box(st, sbx_sandbox_id(s), &box, pol, &tier), 0);

	assert_int_equal(ops->write_file(st, box, "/home/user/a b.txt", "hello\0x", 7, 0644), 0);
	rq = last(p, "POST", "/files");
	assert_non_null(strstr(rq->query, "path=/home/user/a b.txt"));
	assert_non_null(strstr(rq->query, "username=user"));
	assert_int_equal(rq->body_len, 7);
	assert_memory_equal(rq->body, "hello\0x", 7);
	assert_int_equal(count(p, "POST", "/process.Process/Start"), 0);

	script(p, chmod_ok, 1);
	assert_int_equal(ops->write_file(st, box, "/tmp/run.sh", "#!/bin/sh\n", 10, 0755), 0);
	rq = last(p, "POST", "/process.Process/Start");
	assert_non_null(rq);
	start = json_loadb(rq->body + 5, rq->body_len - 5, 0, NULL);
	{
		char *proc = json_dumps(json_object_get(start, "process"), JSON_COMPACT);
		assert_non_null(strstr(proc, "\"cmd\":\"chmod\",\"args\":[\"755\",\"--\","
					     "\"/tmp/run.sh\"]"));
		free(proc);
	}
	json_decref(start);

	assert_int_equal(ops->read_file(st, box, "/tmp/run.sh", 100, &out, &len), 0);
	assert_int_equal(len, 10);
	assert_string_equal(out, "#!/bin/sh\n");
	free(out);
	out = NULL;
	assert_int_equal(ops->read_file(st, box, "/tmp/run.sh", 9, &out, &len), SBX_ETOOBIG);
	assert_null(out);

	p->files_status = 404;
	p->files_body = "{\"message\":\"path '/nope' does not exist\",\"code\":404}";
	assert_int_equal(ops->read_file(st, box, "/nope", 100, &out, &len), SBX_ENOTFOUND);
	assert_non_null(strstr(sbx_error_last()->message, "path '/nope' does not exist"));
	p->files_status = 507;
	p->files_body = "{\"message\":\"not enough disk space\",\"code\":507}";
	assert_int_equal(ops->write_file(st, box, "/tmp/x", "x", 1, 0644), SBX_ETOOBIG);
	assert_non_null(strstr(sbx_error_last()->message, "not enough disk space"));

	ops->release(st, box);
	ops->free(st);
	sbx_policy_free(pol);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	peer_stop(p);
}

/* ===== Listing and reaping ===== */

static void add_sbx(struct peer *p, const char *id, json_t *md)
{
	pthread_mutex_lock(&p->lock);
	snprintf(p->sbx[p->nsbx].id, sizeof(p->sbx[0].id), "%s", id);
	p->sbx[p->nsbx++].metadata = md;
	pthread_mutex_unlock(&p->lock);
}

static json_t *ours(const char *tenant,
		    long long deadline,
		    const char *host,
		    long long pid,
		    unsigned long long start)
{
	struct sbx__owner self;
	char dl[32], ps[32], ss[32];

	sbx__owner_self(&self, 0);
	snprintf(dl, sizeof(dl), "%lld", deadline);
	snprintf(ps, sizeof(ps), "%lld", pid);
	snprintf(ss, sizeof(ss), "%llu", start);
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "io.sandboxio.managed-by", "sandboxio",
			 "io.sandboxio.tenant", tenant, "io.sandboxio.deadline", dl,
			 "io.sandboxio.owner-host", host ? host : self.host,
			 "io.sandboxio.owner-boot", self.boot, "io.sandboxio.owner-pid", ps,
			 "io.sandboxio.owner-start", ss);
}

struct listed {
	char ids[16][32];
	int n;
};

static int list_cb(const sbx_sandbox_info *info, void *payload)
{
	struct listed *l = payload;

	assert_string_equal(info->state, "running");
	assert_true(info->created > 0);
	assert_true(info->deadline > 0);
	if (l->n < 16)
		snprintf(l->ids[l->n++], 32, "%s", info->id);
	return 0;
}

struct reaped {
	char ids[16][32];
	int reasons[16];
	int removed[16];
	int n;
};

static int reap_cb(const sbx_reap_info *info, void *payload)
{
	struct reaped *r = payload;

	if (r->n < 16) {
		snprintf(r->ids[r->n], 32, "%s", info->id);
		r->reasons[r->n] = info->reason;
		r->removed[r->n++] = info->removed;
	}
	return 0;
}

static void test_e2b__list_and_reap(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();
	struct sbx__owner self;
	struct listed l = {0};
	struct reaped rp = {0};
	sbx_reap_options ro = SBX_REAP_OPTIONS_INIT;
	long long now = (long long)time(NULL);
	pid_t dead;
	unsigned long long dead_start = 0;
	int n;

	(void)state;
	sbx__owner_self(&self, 0);
	/* A process that is gone: its pid and start time, after it exited. */
	dead = fork();
	if (dead == 0)
		_exit(0);
	assert_int_equal(sbx__proc_start_time(dead, &dead_start), 0);
	waitpid(dead, NULL, 0);
	p->page_size = 2; /* the listing must follow X-Next-Token */
	add_sbx(p, "expired0000000000001",
		ours("t1", now - 5, NULL, (long long)getpid(), self.start));
	add_sbx(p, "orphan00000000000001", ours("t1", now + 600, NULL, dead, dead_start));
	add_sbx(p, "alive000000000000001",
		ours("t1", now + 600, NULL, (long long)getpid(), self.start));
	add_sbx(p, "foreign0000000000001", json_pack("{s:s}", "io.sandboxio.tenant", "t1"));
	add_sbx(p, "otherhost00000000001", ours("t1", now + 600, "elsewhere", 1, 1));
	add_sbx(p, "othertenant000000001", ours("t2", now - 5, NULL, 1, 1));
	add_sbx(p, "detached000000000001", ours("t1", now + 600, NULL, 0, 0));

	assert_int_equal(sbx_backend_list(b, "t1", list_cb, &l), 0);
	assert_int_equal(l.n, 5);
	for (int i = 0; i < l.n; i++)
		assert_null(strstr(l.ids[i], "foreign"));
	{
		struct rec *rq = last(p, "GET", "/v2/sandboxes");
		assert_non_null(strstr(rq->query, "io.sandboxio.managed-by=sandboxio"));
		assert_non_null(strstr(rq->query, "io.sandboxio.tenant=t1"));
		assert_non_null(strstr(rq->query, "state=running"));
	}
	assert_true(count(p, "GET", "/v2/sandboxes") >= 3);

	/* A dry run removes nothing. */
	ro.tenant = "t1";
	ro.dry_run = 1;
	assert_int_equal(sbx_backend_reap(b, &ro, reap_cb, &rp), 2);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 0);
	rp.n = 0;
	ro.dry_run = 0;
	n = sbx_backend_reap(b, &ro, reap_cb, &rp);
	assert_int_equal(n, 2);
	assert_int_equal(rp.n, 2);
	assert_int_equal(count(p, "DELETE", "/sandboxes/expired0000000000001"), 1);
	assert_int_equal(count(p, "DELETE", "/sandboxes/orphan00000000000001"), 1);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 2);
	for (int i = 0; i < rp.n; i++) {
		assert_int_equal(rp.removed[i], 1);
		if (strcmp(rp.ids[i], "expired0000000000001") == 0)
			assert_int_equal(rp.reasons[i], SBX_REAP_DEADLINE_PASSED);
		else
			assert_int_equal(rp.reasons[i], SBX_REAP_OWNER_GONE);
	}
	/* Every tenant: the other tenant's expired one goes too, nothing else. */
	n = sbx_backend_reap(b, NULL, NULL, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(count(p, "DELETE", "/sandboxes/othertenant000000001"), 1);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 3);
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__reap_at_open_is_local(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = NULL;
	long long now = (long long)time(NULL);

	(void)state;
	add_sbx(p, "mine0000000000000001", ours("t1", now - 5, NULL, 1, 1));
	add_sbx(p, "otherhost00000000001", ours("t1", now - 5, "elsewhere", 1, 1));
	assert_int_equal(sbx_backend_open(&b, "e2b", NULL), 0);
	assert_int_equal(count(p, "DELETE", "/sandboxes/mine0000000000000001"), 1);
	assert_int_equal(count(p, "DELETE", "/sandboxes/"), 1);
	assert_non_null(strstr(last(p, "GET", "/v2/sandboxes")->query, "io.sandboxio.owner-host="));
	sbx_backend_free(b);
	peer_stop(p);
}

static void test_e2b__image_exists_unsupported(void **state)
{
	struct peer *p = peer_start();
	sbx_backend *b = open_backend();

	(void)state;
	assert_int_equal(sbx_backend_image_exists(b, "base"), SBX_EUNSUPPORTED);
	assert_non_null(strstr(sbx_error_last()->message, "templates are checked at create"));
	sbx_backend_free(b);
	peer_stop(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e2b__open_needs_key),
		cmocka_unit_test(test_e2b__open_wrong_key),
		cmocka_unit_test(test_e2b__open_unreachable),
		cmocka_unit_test(test_e2b__open_refuses_plain_http_off_loopback),
		cmocka_unit_test(test_e2b__unknown_backend_lists_names),
		cmocka_unit_test(test_e2b__create_request_and_secret_only_in_start),
		cmocka_unit_test(test_e2b__create_template_choice),
		cmocka_unit_test(test_e2b__check_refusals),
		cmocka_unit_test(test_e2b__readback_mismatch_deletes),
		cmocka_unit_test(test_e2b__tier_header),
		cmocka_unit_test(test_e2b__create_waits_for_envd),
		cmocka_unit_test(test_e2b__open_box),
		cmocka_unit_test(test_e2b__run_exit_code_and_stderr),
		cmocka_unit_test(test_e2b__run_deadline_and_signals),
		cmocka_unit_test(test_e2b__run_vanished_sandbox),
		cmocka_unit_test(test_e2b__run_cut_mid_frame),
		cmocka_unit_test(test_e2b__run_oversize_frame),
		cmocka_unit_test(test_e2b__run_malformed_json),
		cmocka_unit_test(test_e2b__run_without_end_event),
		cmocka_unit_test(test_e2b__run_compressed_frame),
		cmocka_unit_test(test_e2b__run_bad_base64),
		cmocka_unit_test(test_e2b__run_stdin),
		cmocka_unit_test(test_e2b__kill_from_another_thread),
		cmocka_unit_test(test_e2b__sink_cancel),
		cmocka_unit_test(test_e2b__host_backstop),
		cmocka_unit_test(test_e2b__files),
		cmocka_unit_test(test_e2b__list_and_reap),
		cmocka_unit_test(test_e2b__reap_at_open_is_local),
		cmocka_unit_test(test_e2b__image_exists_unsupported),
	};

	return cmocka_run_group_tests_name("e2b", tests, NULL, NULL);
}
