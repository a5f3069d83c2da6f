/*
 * cli/serve-e2b.c: the E2B-compatible server of `sandboxio serve --api e2b`:
 * E2B's REST control plane and envd's process and file endpoints on one
 * libmicrohttpd listener, backed by the Docker engine through the public
 * API alone (sbx_sandbox_create/run/close, write_file/read_file).
 *
 * Wire facts follow E2B's spec, its infra and the JS SDK (e2b 2.51.0); each
 * route says where it differs. The design choices:
 *
 * - Threads. libmicrohttpd runs a thread per connection, so a handler may
 *   block (a create takes a second or two; a stream waits for output). The
 *   state of the server (the sandboxes, their processes, every queue) is
 *   guarded by one mutex, never held across a library call.
 * - Sandboxes ("boxes") are reference counted: the registry holds one
 *   reference, and so does each request and run that uses one. DELETE, the
 *   timeout sweep and a killed run retire a box (it leaves the registry, so
 *   REST says 404 and envd 502 at once) and the last reference closes the
 *   sandbox. A library call in progress on a retired box is ended with
 *   sbx_sandbox_kill(), the one call that may come from another thread.
 * - Runs. The library lets one thread use a sandbox at a time, so a box has
 *   one busy slot that runs and file calls take in turn; a second Start
 *   waits its turn within its deadline. Process.Start answers at once with
 *   the start frame, then a worker thread runs the command and its output
 *   callback frames each chunk (at most 32 KiB, base64, as envd does) into
 *   a bounded queue that the response's content reader (libmicrohttpd's
 *   chunked encoding) drains; a full queue blocks the run, so a slow client
 *   holds the command back rather than the server's memory growing. The
 *   reader sends envd's keepalive after Keepalive-Ping-Interval idle seconds
 *   and notices a client that went away even while the command is silent.
 * - What the library takes whole: stdin. With "stdin": true the command
 *   starts once CloseStdin arrives, its input the bytes of every SendInput
 *   before it (at most 16 MiB). Stopping a running command (SendSignal, or a
 *   client that goes away before its deadline) cancels the run, and on this
 *   backend that kills the whole sandbox (Docker cannot kill one exec).
 * - Strictness: request bodies are bounded (64 KiB REST, 1 MiB Start, 64 MiB
 *   files) and parsed strictly; a NewSandbox field this server cannot honour
 *   is refused with 400 naming it, never ignored, and envd's protojson
 *   rejects unknown fields as connect-go does.
 *
 * Base64 and the multipart parser are written here: jansson has no base64,
 * and libmicrohttpd's post processor hands file parts over in pieces and
 * says nothing of a part with no bytes, while a whole, bounded body in
 * memory is simple to split exactly.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "cli/cli.h"
#include "cli/serve-int.h"

#define ENVD_VERSION "0.5.7" /* >= 0.5.7: octet-stream uploads; < 0.6.2: no file metadata */
#define ENVD_PORT 49983
#define CLIENT_ID "6532622b"
#define DEFAULT_TIMEOUT_S 15 /* E2B's API default */
#define MAX_BOXES 128
#define MAX_PROCS 16 /* commands of one sandbox running or waiting their turn */
#define REST_BODY_MAX (64u << 10)
#define START_BODY_MAX ((1u << 20) + 5)
#define UNARY_BODY_MAX (23u << 20) /* one SendInput of the whole stdin, base64 */
#define FILE_MAX (64u << 20)
#define FILE_BODY_MAX (FILE_MAX + (64u << 10))
#define STDIN_MAX (16u << 20)
#define CHUNK_MAX (32u << 10)
#define QUEUE_MAX (1u << 20)
#define KEEPALIVE_DEFAULT_S 90
#define DEADLINE_GRACE_MS 1000
#define PATH_MAX_LEN 4096

/* ===== State ===== */

struct frame {
	struct frame *next;
	size_t len;
	char data[];
};

enum cancel_why { CANCEL_NONE = 0, CANCEL_GONE, CANCEL_SIGNAL };

struct box;

/* One Process.Start: its request, its run, and the frames for its client. */
struct proc {
	struct proc *next; /* in box->procs while it waits or runs */
	struct box *box;   /* a reference */
	int refs;	   /* the worker's and the response's */
	unsigned pid;
	char *tag;
	json_t *config; /* ProcessConfig as given, for List */
	char **argv, **env;
	char *cwd;
	int want_stdin, stdin_closed;
	char *in;
	size_t in_len;
	uint64_t deadline; /* monotonic ms; 0: none given */
	uint64_t keepalive_ms;
	int fd; /* the client's socket, to notice it going away */
	pthread_cond_t cv;
	struct frame *qh, *qt, *cur;
	size_t qbytes, cur_off;
	uint64_t last_sent;
	int started, run_done, eos, reader_done;
	enum cancel_why cancel;
};

struct box {
	struct cli_e2b *srv;
	int refs, retired, busy;
	pthread_cond_t cv; /* busy, stdin and retire changes */
	sbx_sandbox *s;
	char id[21];
	char token[65];
	int secure;
	char *template_id;
	json_t *metadata, *network;
	int internet; /* allow_internet_access: -1 not given */
	int64_t started_wall;
	uint64_t started_mono, end_mono, life_mono; /* ms */
	uint64_t run_timeout_ms;
	int64_t cpu_milli, memory, disk;
	const char *tier;
	unsigned next_pid;
	struct proc *procs;
};

struct cli_e2b {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* workers and live counts */
	sbx_backend *b;
	char *default_image;
	char *key;
	size_t key_len;
	uint64_t max_timeout_s;
	struct MHD_Daemon *mhd;
	struct box *boxes[MAX_BOXES];
	size_t nboxes;
	int creating, stopping, workers, live;
};

enum route { R_REST = 1, R_ENVD };

/* One HTTP request, from its headers to its completion. */
struct req {
	enum route route;
	struct box *box; /* envd: a reference */
	char *body;
	size_t len, cap, limit, discarded;
	int too_big, answered;
};

/* ===== Small helpers ===== */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t until_ms)
{
	struct timespec ts = {.tv_sec = (time_t)(until_ms / 1000),
			      .tv_nsec = (long)(until_ms % 1000) * 1000000L};

	pthread_cond_timedwait(cv, mu, &ts);
}

static int random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* 20 characters of [a-z0-9], as E2B's sandbox ids (uniformly: bytes past
 * the last whole multiple of 36 are drawn again). */
static int random_id(char out[21])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[32];
	size_t n = 0;

	while (n < 20) {
		if (random_bytes(r, sizeof(r)) < 0)
			return -1;
		for (size_t k = 0; k < sizeof(r) && n < 20; k++)
			if (r[k] < 252)
				out[n++] = alphabet[r[k] % 36];
	}
	out[20] = '\0';
	return 0;
}

static int random_hex(char *out, size_t bytes)
{
	unsigned char r[64];

	if (bytes > sizeof(r) || random_bytes(r, bytes) < 0)
		return -1;
	for (size_t k = 0; k < bytes; k++)
		snprintf(out + 2 * k, 3, "%02x", r[k]);
	explicit_bzero(r, sizeof(r));
	return 0;
}

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

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with padding, into out (4 * ceil(n / 3) bytes). */
static size_t b64_encode(char *out, const unsigned char *in, size_t n)
{
	size_t o = 0, k;

	for (k = 0; k + 2 < n; k += 3) {
		unsigned v = (unsigned)in[k] << 16 | (unsigned)in[k + 1] << 8 | in[k + 2];

		out[o++] = b64_chars[v >> 18 & 63];
		out[o++] = b64_chars[v >> 12 & 63];
		out[o++] = b64_chars[v >> 6 & 63];
		out[o++] = b64_chars[v & 63];
	}
	if (k < n) {
		unsigned v = (unsigned)in[k] << 16 | (k + 1 < n ? (unsigned)in[k + 1] << 8 : 0);

		out[o++] = b64_chars[v >> 18 & 63];
		out[o++] = b64_chars[v >> 12 & 63];
		out[o++] = k + 1 < n ? b64_chars[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	return o;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/*
 * Decodes base64 as protojson accepts it (standard or URL alphabet, padded
 * or not) into a malloc'ed buffer. Returns 0, or -1 for malformed input or
 * no memory.
 */
static int b64_decode(const char *in, size_t n, unsigned char **out, size_t *out_len)
{
	unsigned char *buf;
	unsigned acc = 0;
	size_t o = 0;
	int bits = 0;

	while (n && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return -1;
	buf = malloc(n / 4 * 3 + 3);
	if (!buf)
		return -1;
	for (size_t k = 0; k < n; k++) {
		int v = b64_value((unsigned char)in[k]);

		if (v < 0) {
			free(buf);
			return -1;
		}
		acc = (acc << 6 | (unsigned)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits);
		}
	}
	*out = buf;
	*out_len = o;
	return 0;
}

/* A JSON string of any bytes (the messages quote untrusted input). */
static json_t *jtext(const char *s)
{
	json_t *j = cli_json_text(s, strlen(s), NULL);

	return j ? j : json_string("");
}

static json_t *rfc3339(int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[48];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03dZ", (int)(ms % 1000));
	return json_string(buf);
}

/* RFC 3339 (2024-05-01T12:00:00.000Z, or with +02:00) into unix ms. */
static int parse_rfc3339(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, sec, n = 0, oh, om;
	int64_t ms = 0, scale = 100, off = 0;
	struct tm tm = {0};
	const char *p;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
		return -1;
	p = s + n;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -1;
		for (p++; *p >= '0' && *p <= '9'; p++) {
			ms += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		off = 0;
	} else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) == 2 &&
		   n == 5 && p[6] == '\0') {
		off = (int64_t)(oh * 60 + om) * 60000 * (*p == '-' ? -1 : 1);
	} else {
		return -1;
	}
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*out = (int64_t)timegm(&tm) * 1000 + ms - off;
	return 0;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static const char *query(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* ===== Responses ===== */

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A response holding j (which it takes), as application/json. */
static struct MHD_Response *json_response(json_t *j)
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

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
	return queue(c, status, json_response(j));
}

static enum MHD_Result reply_empty(struct MHD_Connection *c, unsigned status)
{
	return queue(c, status,
		     MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

/* E2B's API error: {"code": status, "message": "..."}. */
static enum MHD_Result __attribute__((format(printf, 3, 4)))
rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply_json(c, status,
			  json_pack("{s:i, s:o}", "code", (int)status, "message", jtext(msg)));
}

/* envd's own error: {"message": "...", "code": status}. */
static enum MHD_Result __attribute__((format(printf, 3, 4)))
envd_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply_json(c, status,
			  json_pack("{s:o, s:i}", "message", jtext(msg), "code", (int)status));
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
static enum MHD_Result __attribute__((format(printf, 3, 4)))
connect_error(struct MHD_Connection *c, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply_json(c, connect_status(code),
			  json_pack("{s:s, s:o}", "code", code, "message", jtext(msg)));
}

/* ===== Frames of a Connect stream: flags, uint32 BE length, JSON ===== */

static struct frame *frame_raw(int flags, const char *json, size_t n)
{
	struct frame *f = malloc(sizeof(*f) + 5 + n);

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
static struct frame *frame_json(int flags, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct frame *f;

	json_decref(j);
	if (!text)
		return NULL;
	f = frame_raw(flags, text, strlen(text));
	free(text);
	return f;
}

/* The end-of-stream frame: {} or {"error": {"code", "message"}}. */
static struct frame *frame_eos(const char *code, const char *msg)
{
	if (!code)
		return frame_raw(2, "{}", 2);
	return frame_json(
		2, json_pack("{s:{s:s, s:o}}", "error", "code", code, "message", jtext(msg)));
}

/* {"event":{"data":{"stdout":"<base64>"}}}, built directly: base64 needs
 * no escaping, and this is the hot path of a chatty command. */
static struct frame *frame_data(const char *stream, const char *data, size_t n)
{
	static const char pre[] = "{\"event\":{\"data\":{\"";
	static const char mid[] = "\":\"";
	static const char post[] = "\"}}}";
	size_t json_len =
		strlen(pre) + strlen(stream) + strlen(mid) + 4 * ((n + 2) / 3) + strlen(post);
	struct frame *f = malloc(sizeof(*f) + 5 + json_len);
	char *p;

	if (!f)
		return NULL;
	f->next = NULL;
	f->len = 5 + json_len;
	f->data[0] = 0;
	f->data[1] = (char)(json_len >> 24 & 0xff);
	f->data[2] = (char)(json_len >> 16 & 0xff);
	f->data[3] = (char)(json_len >> 8 & 0xff);
	f->data[4] = (char)(json_len & 0xff);
	p = f->data + 5;
	p = stpcpy(p, pre);
	p = stpcpy(p, stream);
	p = stpcpy(p, mid);
	p += b64_encode(p, (const unsigned char *)data, n);
	memcpy(p, post, strlen(post));
	return f;
}

/* A response that is only the end-of-stream frame: how a streaming call
 * fails (HTTP 200, the error in the frame). */
static enum MHD_Result stream_error(struct MHD_Connection *c, const char *code, const char *msg)
{
	struct frame *f = frame_eos(code, msg);
	struct MHD_Response *r;

	if (!f)
		return MHD_NO;
	r = MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_MUST_COPY);
	free(f);
	if (r)
		MHD_add_response_header(r, "Content-Type", "application/connect+json");
	return queue(c, 200, r);
}

/* ===== Sandboxes ===== */

static void proc_free(struct proc *pr);

static void box_free(struct box *b)
{
	if (b->s && sbx_sandbox_close(b->s) < 0)
		cli_warn("serve: sandbox %s: %s", b->id, sbx_error_last()->message);
	json_decref(b->metadata);
	json_decref(b->network);
	free(b->template_id);
	explicit_bzero(b->token, sizeof(b->token));
	pthread_cond_destroy(&b->cv);
	free(b);
}

/* Drops a reference; the last one closes the sandbox (mu not held). */
static void box_unref(struct box *b)
{
	struct cli_e2b *srv = b->srv;
	int counted = b->s != NULL;

	pthread_mutex_lock(&srv->mu);
	if (--b->refs > 0) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	pthread_mutex_unlock(&srv->mu);
	box_free(b);
	if (!counted)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->live--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
}

/* The box with this id, with a reference for the caller; NULL: none. */
static struct box *box_get(struct cli_e2b *srv, const char *id)
{
	struct box *b = NULL;

	pthread_mutex_lock(&srv->mu);
	for (size_t k = 0; k < srv->nboxes; k++)
		if (strcmp(srv->boxes[k]->id, id) == 0) {
			b = srv->boxes[k];
			b->refs++;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	return b;
}

/*
 * Takes a box out of the registry (mu held): from now on it is not found.
 * Wakes whatever waits on it. Returns 1 when the caller must drop the
 * registry's reference (box_unref, after unlocking); *kill tells that a
 * library call is in progress on it and must be ended with
 * sbx_sandbox_kill() (after unlocking, before the unref).
 */
static int retire_locked(struct box *b, int *kill)
{
	struct cli_e2b *srv = b->srv;

	*kill = 0;
	if (b->retired)
		return 0;
	b->retired = 1;
	*kill = b->busy;
	for (size_t k = 0; k < srv->nboxes; k++)
		if (srv->boxes[k] == b) {
			srv->boxes[k] = srv->boxes[--srv->nboxes];
			break;
		}
	pthread_cond_broadcast(&b->cv);
	for (struct proc *pr = b->procs; pr; pr = pr->next)
		pthread_cond_broadcast(&pr->cv);
	return 1;
}

static void retire(struct box *b)
{
	int kill, drop;

	pthread_mutex_lock(&b->srv->mu);
	drop = retire_locked(b, &kill);
	pthread_mutex_unlock(&b->srv->mu);
	if (kill)
		sbx_sandbox_kill(b->s);
	if (drop)
		box_unref(b);
}

/* Waits for the box's busy slot, at most until its end. Returns 0 with the
 * slot taken, or -1 when the box ended first. */
static int box_acquire(struct box *b)
{
	struct cli_e2b *srv = b->srv;
	int rc = 0;

	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t now = mono_ms();

		if (b->retired || srv->stopping || now >= b->end_mono) {
			rc = -1;
			break;
		}
		if (!b->busy)
			break;
		wait_until(&b->cv, &srv->mu, now + 1000 < b->end_mono ? now + 1000 : b->end_mono);
	}
	if (rc == 0)
		b->busy = 1;
	pthread_mutex_unlock(&srv->mu);
	return rc;
}

/* Gives the slot back; a library error that killed the sandbox retires it. */
static void box_release(struct box *b, int rc)
{
	pthread_mutex_lock(&b->srv->mu);
	b->busy = 0;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->srv->mu);
	if (rc == SBX_ECANCELED || rc == SBX_ETIMEOUT)
		retire(b);
}

static int64_t end_wall(const struct box *b)
{
	return b->started_wall + (int64_t)(b->end_mono - b->started_mono);
}

/* Sandbox (create, connect). */
static json_t *box_sandbox_json(const struct box *b)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:n}", "templateID", b->template_id,
			      "alias", b->template_id, "sandboxID", b->id, "clientID", CLIENT_ID,
			      "envdVersion", ENVD_VERSION, "domain", "trafficAccessToken");

	if (j && b->secure)
		json_object_set_new(j, "envdAccessToken", json_string(b->token));
	return j;
}

/* ListedSandbox, or SandboxDetail with detail (mu held). */
static json_t *box_listed_json(const struct box *b, int detail)
{
	json_t *j = json_pack(
		"{s:s, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:O, s:s, s:s}", "templateID",
		b->template_id, "alias", b->template_id, "sandboxID", b->id, "clientID", CLIENT_ID,
		"startedAt", rfc3339(b->started_wall), "endAt", rfc3339(end_wall(b)), "cpuCount",
		(json_int_t)((b->cpu_milli + 999) / 1000), "memoryMB",
		(json_int_t)(b->memory >> 20), "diskSizeMB", (json_int_t)(b->disk >> 20),
		"metadata", b->metadata, "state", "running", "envdVersion", ENVD_VERSION);

	if (!j || !detail)
		return j;
	if (b->secure)
		json_object_set_new(j, "envdAccessToken", json_string(b->token));
	json_object_set_new(j, "allowInternetAccess",
			    b->internet < 0 ? json_null() : json_boolean(b->internet));
	json_object_set_new(j, "domain", json_null());
	json_object_set_new(j, "network", json_deep_copy(b->network));
	json_object_set_new(j, "lifecycle",
			    json_pack("{s:b, s:s}", "autoResume", 0, "onTimeout", "kill"));
	return j;
}

/* ===== REST: creating a sandbox ===== */

struct create_req {
	const char *template_id;
	json_int_t timeout;
	int has_timeout;
	json_t *metadata, *env;
	int secure, internet, public_traffic;
	json_t *allow_out, *deny_out;
};

/* Appends a name to the list of fields this server cannot honour. */
static void add_bad(char *bad, size_t size, const char *what)
{
	size_t n = strlen(bad);

	snprintf(bad + n, size - n, "%s%s", n ? "; " : "", what);
}

static int string_map(json_t *v)
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

static int string_array(json_t *v)
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

static int
parse_network(json_t *net, struct create_req *cr, char *bad, size_t bsize, char *err, size_t esize)
{
	const char *key;
	json_t *v;
	char what[160];

	if (!json_is_object(net)) {
		snprintf(err, esize, "network must be an object");
		return -1;
	}
	json_object_foreach(net, key, v)
	{
		if (strcmp(key, "allowOut") == 0 || strcmp(key, "denyOut") == 0) {
			if (json_is_null(v))
				continue;
			if (!string_array(v)) {
				snprintf(err, esize, "network.%s must be an array of strings", key);
				return -1;
			}
			if (key[0] == 'a')
				cr->allow_out = v;
			else
				cr->deny_out = v;
		} else if (strcmp(key, "allowPublicTraffic") == 0) {
			if (json_is_null(v))
				continue;
			if (!json_is_boolean(v)) {
				snprintf(err, esize,
					 "network.allowPublicTraffic must be a boolean");
				return -1;
			}
			cr->public_traffic = json_is_true(v);
			if (!cr->public_traffic)
				add_bad(bad, bsize,
					"network.allowPublicTraffic false (this server proxies no "
					"sandbox port, so there is no traffic token to require)");
		} else if (!json_is_null(v)) {
			snprintf(what, sizeof(what), "network.%.64s", key);
			add_bad(bad, bsize, what);
		}
	}
	return 0;
}

/*
 * NewSandbox, strictly: a wrong type is a parse error; a field that this
 * server cannot honour (or does not know) is collected in bad. JSON null
 * stands for an absent optional field, as E2B's API reads it.
 */
static int
parse_create(json_t *body, struct create_req *cr, char *bad, size_t bsize, char *err, size_t esize)
{
	static const char *const unsupported[] = {"mcp", "volumeMounts", "iam", "autoPauseMemory",
						  "secrets"};
	const char *key;
	json_t *v;
	char what[160];

	memset(cr, 0, sizeof(*cr));
	cr->secure = 1;
	cr->internet = -1;
	cr->public_traffic = -1;
	if (!json_is_object(body)) {
		snprintf(err, esize, "the body must be a JSON object (NewSandbox)");
		return -1;
	}
	json_object_foreach(body, key, v)
	{
		int known = 0;

		if (json_is_null(v))
			for (size_t k = 0; k < sizeof(unsupported) / sizeof(unsupported[0]); k++)
				known |= strcmp(key, unsupported[k]) == 0;
		if (known)
			continue;
		if (strcmp(key, "templateID") == 0) {
			if (json_is_null(v))
				continue;
			if (!json_is_string(v)) {
				snprintf(err, esize, "templateID must be a string");
				return -1;
			}
			cr->template_id = json_string_value(v);
		} else if (strcmp(key, "timeout") == 0) {
			if (json_is_null(v))
				continue;
			if (!json_is_integer(v)) {
				snprintf(err, esize, "timeout must be a whole number of seconds");
				return -1;
			}
			cr->timeout = json_integer_value(v);
			cr->has_timeout = 1;
		} else if (strcmp(key, "metadata") == 0 || strcmp(key, "envVars") == 0) {
			if (json_is_null(v))
				continue;
			if (!string_map(v)) {
				snprintf(err, esize, "%s must be an object of strings", key);
				return -1;
			}
			if (key[0] == 'm')
				cr->metadata = v;
			else
				cr->env = v;
		} else if (strcmp(key, "secure") == 0 ||
			   strcmp(key, "allow_internet_access") == 0) {
			if (json_is_null(v))
				continue;
			if (!json_is_boolean(v)) {
				snprintf(err, esize, "%s must be a boolean", key);
				return -1;
			}
			if (key[0] == 's')
				cr->secure = json_is_true(v);
			else
				cr->internet = json_is_true(v);
		} else if (strcmp(key, "network") == 0) {
			if (json_is_null(v))
				continue;
			if (parse_network(v, cr, bad, bsize, err, esize) < 0)
				return -1;
		} else if (strcmp(key, "autoPause") == 0) {
			if (json_is_true(v))
				add_bad(bad, bsize,
					"autoPause true (a sandbox is killed at its timeout here, "
					"never paused)");
			else if (!json_is_false(v) && !json_is_null(v))
				add_bad(bad, bsize, "autoPause (not a boolean)");
		} else if (strcmp(key, "autoResume") == 0) {
			json_t *en = json_object_get(v, "enabled");

			if (json_is_null(v) ||
			    (json_is_object(v) && json_object_size(v) == 1 && json_is_false(en)))
				continue;
			add_bad(bad, bsize, "autoResume (nothing is ever paused here)");
		} else if (strcmp(key, "lifecycle") == 0) {
			const char *k2;
			json_t *x;
			int ok = json_is_object(v) || json_is_null(v);

			if (json_is_object(v))
				json_object_foreach(v, k2, x)
				{
					if (json_is_null(x))
						continue;
					if (strcmp(k2, "onTimeout") == 0 && json_is_string(x) &&
					    strcmp(json_string_value(x), "kill") == 0)
						continue;
					if (strcmp(k2, "autoResume") == 0 && json_is_false(x))
						continue;
					ok = 0;
				}
			if (!ok)
				add_bad(bad, bsize,
					"lifecycle (only onTimeout \"kill\" and autoResume false)");
		} else {
			snprintf(what, sizeof(what), "%.64s", key);
			add_bad(bad, bsize, what);
		}
	}
	return 0;
}

static int is_address(const char *s)
{
	unsigned char a[16];
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET, buf, a) == 1 || inet_pton(AF_INET6, buf, a) == 1;
}

/*
 * E2B always denies sandboxes these IPv4 ranges, whatever allowOut says;
 * its open network is everything else. An allowOut entry that overlaps
 * them is refused here rather than dropped.
 */
static const struct {
	uint8_t a, b, plen;
} e2b_private[] = {
	{10, 0, 8}, {100, 64, 10}, {127, 0, 8}, {169, 254, 16}, {172, 16, 12}, {192, 168, 16},
};

/* E2B's open network as prefixes an allowlist takes: 0.0.0.0/0 without
 * e2b_private, 0.0.0.0/8 and 224.0.0.0/3 (which no allowlist reaches). */
static const char *const e2b_open[] = {
	"1.0.0.0/8",	  "2.0.0.0/7",	    "4.0.0.0/6",      "8.0.0.0/7",	"11.0.0.0/8",
	"12.0.0.0/6",	  "16.0.0.0/4",	    "32.0.0.0/3",     "64.0.0.0/3",	"96.0.0.0/6",
	"100.0.0.0/10",	  "100.128.0.0/9",  "101.0.0.0/8",    "102.0.0.0/7",	"104.0.0.0/5",
	"112.0.0.0/5",	  "120.0.0.0/6",    "124.0.0.0/7",    "126.0.0.0/8",	"128.0.0.0/3",
	"160.0.0.0/5",	  "168.0.0.0/8",    "169.0.0.0/9",    "169.128.0.0/10", "169.192.0.0/11",
	"169.224.0.0/12", "169.240.0.0/13", "169.248.0.0/14", "169.252.0.0/15", "169.255.0.0/16",
	"170.0.0.0/7",	  "172.0.0.0/12",   "172.32.0.0/11",  "172.64.0.0/10",	"172.128.0.0/9",
	"173.0.0.0/8",	  "174.0.0.0/7",    "176.0.0.0/4",    "192.0.0.0/9",	"192.128.0.0/11",
	"192.160.0.0/13", "192.169.0.0/16", "192.170.0.0/15", "192.172.0.0/14", "192.176.0.0/12",
	"192.192.0.0/10", "193.0.0.0/8",    "194.0.0.0/7",    "196.0.0.0/6",	"200.0.0.0/5",
	"208.0.0.0/4",
};

/* The always-denied range an IPv4 entry overlaps, or NULL. */
static const char *overlaps_private(const char *entry, char *buf, size_t size)
{
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(entry, '/');
	size_t n = slash ? (size_t)(slash - entry) : strlen(entry);
	unsigned plen = slash ? (unsigned)atoi(slash + 1) : 32;
	uint8_t a[4];

	if (n >= sizeof(addr))
		return NULL;
	memcpy(addr, entry, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, a) != 1 || plen > 32)
		return NULL;
	for (size_t i = 0; i < sizeof(e2b_private) / sizeof(e2b_private[0]); i++) {
		unsigned m = plen < e2b_private[i].plen ? plen : e2b_private[i].plen;
		uint32_t x = ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) |
			     ((uint32_t)a[2] << 8) | a[3];
		uint32_t y =
			((uint32_t)e2b_private[i].a << 24) | ((uint32_t)e2b_private[i].b << 16);
		uint32_t mask = m ? 0xffffffffu << (32 - m) : 0;

		if ((x & mask) == (y & mask)) {
			snprintf(buf, size, "%u.%u.0.0/%u", e2b_private[i].a, e2b_private[i].b,
				 e2b_private[i].plen);
			return buf;
		}
	}
	return NULL;
}

static int all_traffic(const char *s)
{
	return strcmp(s, "0.0.0.0/0") == 0 || strcmp(s, "ALL_TRAFFIC") == 0;
}

/*
 * E2B's egress, on an allowlist-only backend. Deny everything but allowOut
 * when allow_internet_access is false or denyOut holds 0.0.0.0/0; with no
 * deny control at all, E2B's network is open, so every IPv4 address is
 * allowed (two /1 prefixes: the library refuses a /0). A partial denyOut on
 * an open network cannot be expressed as an allowlist: refused.
 */
static int
apply_network(const struct create_req *cr, sbx_policy *p, json_t **echo, char *err, size_t esize)
{
	int deny_all = cr->internet == 0, partial = 0;
	char priv[32];
	size_t k;
	json_t *v;

	json_array_foreach(cr->deny_out, k, v)
	{
		const char *e = json_string_value(v);

		if (all_traffic(e)) {
			deny_all = 1;
			continue;
		}
		if (!is_address(e)) {
			snprintf(err, esize, "invalid denied CIDR %.128s", e);
			return -1;
		}
		partial = 1;
	}
	if (partial && !deny_all) {
		snprintf(
			err, esize,
			"network.denyOut without 0.0.0.0/0 cannot be honoured here: this server "
			"allows only what an allowlist names, so it cannot deny part of an open "
			"network; deny all traffic (0.0.0.0/0) and list what to reach in allowOut");
		return -1;
	}
	json_array_foreach(cr->allow_out, k, v)
	{
		const char *e = json_string_value(v);
		int rc;

		if (is_address(e) && overlaps_private(e, priv, sizeof(priv))) {
			snprintf(err, esize,
				 "allow out entry \"%.128s\" overlaps %s, which E2B always "
				 "denies to sandboxes; this server refuses it rather than drop it",
				 e, priv);
			return -1;
		} else if (is_address(e)) {
			/* The open network already holds every public IPv4 prefix. */
			rc = deny_all || strchr(e, ':') ? sbx_policy_allow_cidr(p, e, 0) : 0;
		} else if (strchr(e, ':') && !strchr(e, '/')) {
			snprintf(err, esize,
				 "invalid allow out entry \"%.128s\": port-specific rules are not "
				 "supported for egress",
				 e);
			return -1;
		} else if (!deny_all) {
			snprintf(err, esize,
				 "When specifying allowed domains in allow out, you must include "
				 "'ALL_TRAFFIC' in deny out to block all other traffic.");
			return -1;
		} else if (strchr(e, '*')) {
			snprintf(
				err, esize,
				"allow out entry \"%.128s\": wildcard domains are not supported by "
				"this server; list each name",
				e);
			return -1;
		} else {
			rc = sbx_policy_allow_host(p, e, 0);
		}
		if (rc < 0) {
			snprintf(err, esize, "network.allowOut: %s", sbx_error_last()->message);
			return -1;
		}
	}
	for (size_t i = 0; !deny_all && i < sizeof(e2b_open) / sizeof(e2b_open[0]); i++) {
		if (sbx_policy_allow_cidr(p, e2b_open[i], 0) < 0) {
			snprintf(err, esize, "open network: %s", sbx_error_last()->message);
			return -1;
		}
	}
	*echo = json_object();
	if (cr->allow_out)
		json_object_set(*echo, "allowOut", cr->allow_out);
	if (cr->deny_out)
		json_object_set(*echo, "denyOut", cr->deny_out);
	else if (cr->internet == 0)
		json_object_set_new(*echo, "denyOut", json_pack("[s]", "0.0.0.0/0"));
	json_object_set_new(*echo, "allowPublicTraffic", json_true());
	return 0;
}

static unsigned create_status(int code)
{
	switch (code) {
	case SBX_EINVALID:
	case SBX_EDENIED:
	case SBX_EUNSUPPORTED:
	case SBX_ENOTFOUND:
	case SBX_ETOOBIG:
		return 400;
	case SBX_EUNAVAILABLE:
		return 503;
	case SBX_ETIMEOUT:
		return 504;
	default:
		return 500;
	}
}

/* The policy of a NewSandbox; on failure *status and err say why. */
static int build_policy(struct cli_e2b *srv,
			const struct create_req *cr,
			struct box *b,
			sbx_policy **out,
			unsigned *status,
			char *err,
			size_t esize)
{
	json_int_t t = cr->has_timeout ? cr->timeout : DEFAULT_TIMEOUT_S;
	sbx_policy *p = NULL;
	const char *name, *tenant;
	json_t *v;
	int rc;

	*status = 400;
	if (t <= 0) {
		snprintf(err, esize, "Timeout must be greater than 0 seconds");
		return -1;
	}
	if ((uint64_t)t > srv->max_timeout_s) {
		if (srv->max_timeout_s % 3600 == 0)
			snprintf(err, esize, "Timeout cannot be greater than %llu hours",
				 (unsigned long long)(srv->max_timeout_s / 3600));
		else
			snprintf(err, esize, "Timeout cannot be greater than %llu seconds",
				 (unsigned long long)srv->max_timeout_s);
		return -1;
	}
	if (sbx_policy_new(&p) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, (uint64_t)t * 1000) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, (uint64_t)t * 1000) < 0) {
		snprintf(err, esize, "%s", sbx_error_last()->message);
		*status = 500;
		goto fail;
	}
	if (cr->template_id && strcmp(cr->template_id, "base") != 0) {
		if (sbx_policy_set_image(p, cr->template_id) < 0) {
			snprintf(err, esize, "template '%.128s' is not a valid image reference: %s",
				 cr->template_id, sbx_error_last()->message);
			goto fail;
		}
		rc = sbx_backend_image_exists(srv->b, cr->template_id);
		if (rc < 0) {
			snprintf(err, esize, "%s", sbx_error_last()->message);
			*status = create_status(rc) == 400 ? 500 : create_status(rc);
			goto fail;
		}
		if (rc == 0) {
			snprintf(err, esize,
				 "template '%.128s' is not an image of this host's Docker engine: "
				 "this server runs local images only ('base' is %s)",
				 cr->template_id, srv->default_image);
			goto fail;
		}
	}
	tenant = json_string_value(json_object_get(cr->metadata, "io.sandboxio.tenant"));
	if (tenant && sbx_policy_set_tenant(p, tenant) < 0) {
		snprintf(err, esize, "metadata io.sandboxio.tenant: %s", sbx_error_last()->message);
		goto fail;
	}
	json_object_foreach(cr->env, name, v)
	{
		if (sbx_policy_set_env(p, name, json_string_value(v)) < 0) {
			snprintf(err, esize, "envVars: %s", sbx_error_last()->message);
			goto fail;
		}
	}
	if (apply_network(cr, p, &b->network, err, esize) < 0)
		goto fail;
	b->internet = cr->internet;
	b->secure = cr->secure;
	b->metadata = cr->metadata ? json_deep_copy(cr->metadata) : json_object();
	b->template_id = strdup(cr->template_id ? cr->template_id : "base");
	if (!b->metadata || !b->template_id || !b->network) {
		snprintf(err, esize, "out of memory");
		*status = 500;
		goto fail;
	}
	*out = p;
	return 0;
fail:
	sbx_policy_free(p);
	return -1;
}

static struct box *box_new(struct cli_e2b *srv)
{
	struct box *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->srv = srv;
	b->refs = 1;
	cond_init(&b->cv);
	return b;
}

/* Registers b (mu held) under a fresh id. */
static int register_locked(struct cli_e2b *srv, struct box *b)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		int taken = 0;

		if (random_id(b->id) < 0)
			return -1;
		for (size_t k = 0; k < srv->nboxes; k++)
			taken |= strcmp(srv->boxes[k]->id, b->id) == 0;
		if (!taken) {
			srv->boxes[srv->nboxes++] = b;
			srv->live++;
			return 0;
		}
	}
	return -1;
}

static enum MHD_Result rest_create(struct cli_e2b *srv, struct MHD_Connection *c, struct req *rq)
{
	char err[1024] = "", bad[1024] = "";
	struct create_req cr;
	struct MHD_Response *r;
	json_error_t je;
	json_t *body;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	struct box *b;
	unsigned status;
	int rc;

	body = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
	if (!body)
		return rest_error(c, 400, "Error when parsing request: %s", je.text);
	if (parse_create(body, &cr, bad, sizeof(bad), err, sizeof(err)) < 0) {
		json_decref(body);
		return rest_error(c, 400, "Error when parsing request: %s", err);
	}
	if (bad[0]) {
		json_decref(body);
		return rest_error(c, 400,
				  "NewSandbox has fields this server cannot honour, refused rather "
				  "than ignored: %s",
				  bad);
	}
	b = box_new(srv);
	if (!b) {
		json_decref(body);
		return rest_error(c, 500, "out of memory");
	}
	if (build_policy(srv, &cr, b, &p, &status, err, sizeof(err)) < 0) {
		json_decref(body);
		box_free(b);
		return rest_error(c, status, "%s", err);
	}
	json_decref(body);
	if (b->secure && random_hex(b->token, 32) < 0) {
		box_free(b);
		sbx_policy_free(p);
		return rest_error(c, 500, "getrandom failed");
	}
	pthread_mutex_lock(&srv->mu);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->mu);
		box_free(b);
		sbx_policy_free(p);
		return rest_error(c, 503, "the server is shutting down");
	}
	if (srv->nboxes + (size_t)srv->creating >= MAX_BOXES) {
		pthread_mutex_unlock(&srv->mu);
		box_free(b);
		sbx_policy_free(p);
		return rest_error(c, 429,
				  "You have reached the maximum number of concurrent sandboxes on "
				  "this server (%d)",
				  MAX_BOXES);
	}
	srv->creating++;
	pthread_mutex_unlock(&srv->mu);

	/* The lifetime counts from before the create, as the library's does. */
	b->started_wall = wall_ms();
	b->started_mono = mono_ms();
	rc = sbx_sandbox_create(&s, srv->b, p);
	sbx_policy_free(p);
	if (rc < 0) {
		snprintf(err, sizeof(err), "%s", sbx_error_last()->message);
		pthread_mutex_lock(&srv->mu);
		srv->creating--;
		pthread_mutex_unlock(&srv->mu);
		box_free(b);
		return rest_error(c, create_status(rc), "%s", err);
	}
	{
		const sbx_policy *ep = sbx_sandbox_policy(s);

		b->life_mono = b->started_mono + sbx_policy_timeout_ms(ep, SBX_TIMEOUT_SANDBOX);
		b->end_mono = b->life_mono;
		b->run_timeout_ms = sbx_policy_timeout_ms(ep, SBX_TIMEOUT_RUN);
		b->cpu_milli = sbx_policy_limit(ep, SBX_LIMIT_CPU_MILLI);
		b->memory = sbx_policy_limit(ep, SBX_LIMIT_MEMORY);
		b->disk = sbx_policy_limit(ep, SBX_LIMIT_DISK);
		b->tier = sbx_tier_name(sbx_sandbox_tier(s));
	}
	pthread_mutex_lock(&srv->mu);
	srv->creating--;
	if (srv->stopping || register_locked(srv, b) < 0) {
		int stopping = srv->stopping;

		pthread_mutex_unlock(&srv->mu);
		b->s = s;
		box_free(b);
		return rest_error(c, stopping ? 503 : 500,
				  stopping ? "the server is shutting down" : "no free sandbox id");
	}
	b->s = s;
	b->refs = 2; /* the registry's and this request's */
	pthread_mutex_unlock(&srv->mu);
	r = json_response(box_sandbox_json(b));
	if (r)
		MHD_add_response_header(r, "Sandboxio-Tier", b->tier ? b->tier : "container");
	box_unref(b);
	return queue(c, 201, r);
}

/* ===== REST: one sandbox ===== */

static enum MHD_Result not_found(struct MHD_Connection *c, const char *id)
{
	return rest_error(c, 404, "Sandbox \"%.64s\" doesn't exist or you don't have access to it",
			  id);
}

/* A body of exactly one optional integer field: {"timeout": N}. */
static int parse_seconds(struct req *rq,
			 const char *field,
			 int required,
			 json_int_t *out,
			 int *given,
			 char *err,
			 size_t esize)
{
	json_error_t je;
	json_t *j, *v;
	const char *key;

	*given = 0;
	if (rq->len == 0 && !required)
		return 0;
	j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, esize, "Error when parsing request: %s", je.text);
		return -1;
	}
	if (!json_is_object(j)) {
		snprintf(err, esize, "Error when parsing request: the body must be an object");
		json_decref(j);
		return -1;
	}
	json_object_foreach(j, key, v)
	{
		if (strcmp(key, field) != 0) {
			snprintf(err, esize, "field '%.64s' is not supported here", key);
			json_decref(j);
			return -1;
		}
		if (json_is_null(v))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(err, esize, "%s must be a whole number of seconds, 0 or more",
				 field);
			json_decref(j);
			return -1;
		}
		*out = json_integer_value(v);
		*given = 1;
	}
	json_decref(j);
	if (required && !*given) {
		snprintf(err, esize, "Error when parsing request: %s is required", field);
		return -1;
	}
	return 0;
}

enum end_change { END_SET, END_EXTEND };

/*
 * Moves the end of a sandbox to now + seconds (END_SET may shorten it;
 * END_EXTEND only lengthens). The lifetime fixed at create is the bound:
 * the library's own deadline kills the sandbox then, whatever is asked. A
 * second of grace absorbs the SDKs' rounding of milliseconds up to seconds.
 */
static enum MHD_Result change_end(struct cli_e2b *srv,
				  struct MHD_Connection *c,
				  const char *id,
				  json_int_t seconds,
				  enum end_change how,
				  json_t *ok_body)
{
	struct box *b = box_get(srv, id);
	uint64_t now = mono_ms(), want;
	int64_t life_wall;

	if (!b) {
		json_decref(ok_body);
		return not_found(c, id);
	}
	if ((uint64_t)seconds > srv->max_timeout_s) {
		json_decref(ok_body);
		box_unref(b);
		return rest_error(c, 400, "Timeout cannot be greater than %llu seconds",
				  (unsigned long long)srv->max_timeout_s);
	}
	want = now + (uint64_t)seconds * 1000;
	pthread_mutex_lock(&srv->mu);
	if (want > b->life_mono + 1000) {
		life_wall = b->started_wall + (int64_t)(b->life_mono - b->started_mono);
		pthread_mutex_unlock(&srv->mu);
		json_decref(ok_body);
		box_unref(b);
		{
			json_t *t = rfc3339(life_wall);
			char when[48];

			snprintf(when, sizeof(when), "%s", json_string_value(t));
			json_decref(t);
			return rest_error(c, 400,
					  "Timeout cannot extend sandbox \"%s\" past %s: its "
					  "lifetime was fixed at create on this server (create it "
					  "with a longer timeout)",
					  id, when);
		}
	}
	if (want > b->life_mono)
		want = b->life_mono;
	if (how == END_SET || want > b->end_mono)
		b->end_mono = want;
	pthread_mutex_unlock(&srv->mu);
	if (ok_body) {
		json_t *j = ok_body;

		box_unref(b);
		return reply_json(c, 200, j);
	}
	box_unref(b);
	return reply_empty(c, 204);
}

static enum MHD_Result rest_sandbox(struct cli_e2b *srv,
				    struct MHD_Connection *c,
				    struct req *rq,
				    const char *method,
				    const char *id,
				    const char *sub)
{
	static const char *const unsupported[] = {"pause",   "resume", "fork",	 "snapshots",
						  "network", "logs",   "metrics"};
	char err[512];
	json_int_t secs = 0;
	int given;
	struct box *b;

	if (!*sub) {
		if (strcmp(method, "GET") == 0) {
			json_t *j;

			b = box_get(srv, id);
			if (!b)
				return not_found(c, id);
			pthread_mutex_lock(&srv->mu);
			j = box_listed_json(b, 1);
			pthread_mutex_unlock(&srv->mu);
			box_unref(b);
			return reply_json(c, 200, j);
		}
		if (strcmp(method, "DELETE") == 0) {
			b = box_get(srv, id);
			if (!b)
				return not_found(c, id);
			retire(b);
			box_unref(b); /* the last reference closes it now, unless in use */
			return reply_empty(c, 204);
		}
		return rest_error(c, 405, "Method %.16s is not allowed on /sandboxes/{id}", method);
	}
	if (strcmp(sub, "timeout") == 0 || strcmp(sub, "refreshes") == 0 ||
	    strcmp(sub, "connect") == 0) {
		int is_timeout = sub[0] == 't', is_connect = sub[0] == 'c';

		if (strcmp(method, "POST") != 0)
			return rest_error(c, 405,
					  "Method %.16s is not allowed on /sandboxes/{id}/%s",
					  method, sub);
		if (parse_seconds(rq, is_timeout || is_connect ? "timeout" : "duration", is_timeout,
				  &secs, &given, err, sizeof(err)) < 0)
			return rest_error(c, 400, "%s", err);
		if (is_connect) {
			json_t *j;

			b = box_get(srv, id);
			if (!b)
				return not_found(c, id);
			j = box_sandbox_json(b);
			box_unref(b);
			if (!given)
				return reply_json(c, 200, j);
			return change_end(srv, c, id, secs, END_EXTEND, j);
		}
		if (!is_timeout && (!given || secs > 3600))
			return rest_error(c, 400, "duration must be 0 to 3600 seconds");
		return change_end(srv, c, id, secs, is_timeout ? END_SET : END_EXTEND, NULL);
	}
	for (size_t k = 0; k < sizeof(unsupported) / sizeof(unsupported[0]); k++)
		if (strcmp(sub, unsupported[k]) == 0) {
			b = box_get(srv, id);
			if (!b)
				return not_found(c, id);
			box_unref(b);
			return rest_error(
				c, 501, "/sandboxes/{id}/%s is not supported by this server", sub);
		}
	return rest_error(c, 404, "Not found: %.16s /sandboxes/%.64s/%.64s", method, id, sub);
}

/* ===== REST: listing ===== */

struct listed {
	int64_t started;
	char id[21];
	json_t *j;
};

static int listed_cmp(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;

	if (x->started != y->started)
		return x->started < y->started ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..n) in place (with form, '+' is a space too);
 * returns the new length or -1 for a broken escape. */
static ssize_t pct_decode(char *s, size_t n, int form)
{
	size_t o = 0;

	for (size_t k = 0; k < n; k++) {
		if (s[k] == '%') {
			int hi, lo;

			if (k + 2 >= n)
				return -1;
			hi = hexval(s[k + 1]);
			lo = hexval(s[k + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			s[o++] = (char)(hi << 4 | lo);
			k += 2;
		} else {
			s[o++] = form && s[k] == '+' ? ' ' : s[k];
		}
	}
	s[o] = '\0';
	return (ssize_t)o;
}

/*
 * The metadata filter: one query parameter holding "k=v&k2=v2", whose keys
 * and values the SDKs quote once more before encoding the pairs (E2B's
 * paginator). Each part is decoded twice, which leaves a plainly encoded
 * "k=v" unchanged. At most 64 pairs; the result is an object of strings.
 */
static int parse_metadata_filter(const char *q, json_t **out)
{
	char *buf, *save = NULL, *pair;
	json_t *f = json_object();
	int n = 0, rc = 0;

	*out = NULL;
	if (!f)
		return -1;
	buf = strdup(q);
	if (!buf) {
		json_decref(f);
		return -1;
	}
	for (pair = strtok_r(buf, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		ssize_t kl, vl;
		json_t *v;

		if (!eq || eq == pair || ++n > 64) {
			rc = -1;
			break;
		}
		*eq = '\0';
		kl = pct_decode(pair, strlen(pair), 1);
		vl = pct_decode(eq + 1, strlen(eq + 1), 1);
		if (kl < 0 || vl < 0 || (kl = pct_decode(pair, (size_t)kl, 0)) < 0 ||
		    (vl = pct_decode(eq + 1, (size_t)vl, 0)) < 0) {
			rc = -1;
			break;
		}
		v = json_stringn(eq + 1, (size_t)vl);
		if (!v || strlen(pair) != (size_t)kl || json_object_set_new(f, pair, v) < 0) {
			rc = -1;
			break;
		}
	}
	free(buf);
	if (rc < 0) {
		json_decref(f);
		return -1;
	}
	*out = f;
	return 0;
}

static int metadata_matches(json_t *meta, json_t *filter)
{
	const char *k;
	json_t *v;

	json_object_foreach(filter, k, v)
	{
		json_t *have = json_object_get(meta, k);

		if (!json_is_string(have) || !json_equal(have, v))
			return 0;
	}
	return 1;
}

/* A page token: the sort key of the last sandbox given, "<started ms>.<id>". */
static int parse_token(const char *t, int64_t *started, char id[21])
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(t, &end, 10);
	if (errno || end == t || *end != '.' || strlen(end + 1) != 20)
		return -1;
	for (const char *p = end + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			return -1;
	*started = v;
	memcpy(id, end + 1, 21);
	return 0;
}

static enum MHD_Result rest_list(struct cli_e2b *srv, struct MHD_Connection *c, int v2)
{
	const char *meta_q = query(c, "metadata"), *state = v2 ? query(c, "state") : NULL;
	const char *limit_q = v2 ? query(c, "limit") : NULL,
		   *token = v2 ? query(c, "nextToken") : NULL;
	const char *order = v2 ? query(c, "order") : NULL,
		   *after_q = v2 ? query(c, "startedAfter") : NULL;
	const char *tmpl = v2 ? query(c, "template") : NULL;
	struct listed items[MAX_BOXES];
	json_t *filter = NULL, *arr;
	char tok_id[21] = "", next[64] = "", total[24];
	int64_t tok_started = 0, after = 0;
	size_t n = 0, limit = 100, running;
	int running_wanted = 1, desc = 0;
	struct MHD_Response *r;

	if (meta_q && *meta_q && parse_metadata_filter(meta_q, &filter) < 0)
		return rest_error(c, 400, "Invalid metadata query: expected key=value pairs");
	if (state && *state) {
		char buf[128], *save = NULL, *w;

		snprintf(buf, sizeof(buf), "%s", state);
		running_wanted = 0;
		for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
			if (strcmp(w, "running") == 0) {
				running_wanted = 1;
			} else if (strcmp(w, "paused") != 0) {
				json_decref(filter);
				return rest_error(c, 400, "Invalid state '%.32s' (running, paused)",
						  w);
			}
		}
	}
	if (limit_q) {
		char *end;
		long v = strtol(limit_q, &end, 10);

		if (end == limit_q || *end || v < 1 || v > 100) {
			json_decref(filter);
			return rest_error(c, 400, "limit must be between 1 and 100");
		}
		limit = (size_t)v;
	}
	if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
		json_decref(filter);
		return rest_error(c, 400, "order must be asc or desc");
	}
	desc = order && strcmp(order, "desc") == 0;
	if (token && *token && parse_token(token, &tok_started, tok_id) < 0) {
		json_decref(filter);
		return rest_error(c, 400, "Invalid next token");
	}
	if (after_q && parse_rfc3339(after_q, &after) < 0) {
		json_decref(filter);
		return rest_error(c, 400, "startedAfter must be an RFC 3339 time");
	}
	pthread_mutex_lock(&srv->mu);
	running = srv->nboxes;
	for (size_t k = 0; running_wanted && k < srv->nboxes; k++) {
		struct box *b = srv->boxes[k];

		if (filter && !metadata_matches(b->metadata, filter))
			continue;
		if (tmpl && *tmpl && strcmp(tmpl, b->template_id) != 0)
			continue;
		if (after_q && b->started_wall <= after)
			continue;
		items[n].started = b->started_wall;
		memcpy(items[n].id, b->id, 21);
		items[n].j = box_listed_json(b, 0);
		n++;
	}
	pthread_mutex_unlock(&srv->mu);
	json_decref(filter);
	qsort(items, n, sizeof(items[0]), listed_cmp);
	arr = json_array();
	for (size_t k = 0, given = 0; k < n; k++) {
		size_t at = desc ? n - 1 - k : k;
		struct listed key = {.started = tok_started};

		memcpy(key.id, tok_id, 21);
		if (tok_id[0] && (desc ? listed_cmp(&items[at], &key) >= 0
				       : listed_cmp(&items[at], &key) <= 0)) {
			json_decref(items[at].j);
			continue;
		}
		if (given == limit) {
			json_decref(items[at].j);
			continue;
		}
		if (++given == limit && k + 1 < n)
			snprintf(next, sizeof(next), "%lld.%s", (long long)items[at].started,
				 items[at].id);
		json_array_append_new(arr, items[at].j);
	}
	r = json_response(arr);
	if (r && next[0])
		MHD_add_response_header(r, "X-Next-Token", next);
	snprintf(total, sizeof(total), "%zu", running);
	if (r)
		MHD_add_response_header(r, "X-Total-Running", total);
	return queue(c, 200, r);
}

static enum MHD_Result rest(struct cli_e2b *srv,
			    struct MHD_Connection *c,
			    struct req *rq,
			    const char *method,
			    const char *url)
{
	int v2 = strncmp(url, "/v2/", 4) == 0;
	const char *p = v2 ? url + 3 : url, *slash;
	char id[72];
	size_t n;

	if (strcmp(p, "/sandboxes") == 0) {
		if (strcmp(method, "POST") == 0)
			return rest_create(srv, c, rq);
		if (strcmp(method, "GET") == 0)
			return rest_list(srv, c, v2);
		return rest_error(c, 405, "Method %.16s is not allowed on /sandboxes", method);
	}
	if (strncmp(p, "/sandboxes/", 11) == 0) {
		p += 11;
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n > 64)
			n = 64;
		memcpy(id, p, n);
		id[n] = '\0';
		return rest_sandbox(srv, c, rq, method, id, slash ? slash + 1 : "");
	}
	return rest_error(c, 404, "Not found: %.16s %.128s", method, url);
}

/* ===== envd: paths and users ===== */

/*
 * A path in the sandbox: the E2B user's home (/home/user, ~) and relative
 * paths are /workspace here, the sandbox user's home and working
 * directory. The result is cleaned as Go's filepath.Clean does ("." and
 * repeated slashes go, ".." removes a segment and stops at /), so the
 * library, which refuses "..", gets a plain absolute path.
 */
static int map_path(const char *in, char *out, size_t size)
{
	char tmp[PATH_MAX_LEN + 16];
	const char *rest;
	char *save = NULL, *seg;
	size_t o = 0;

	if (!in || !*in || strlen(in) > PATH_MAX_LEN)
		return -1;
	if (in[0] == '~' && (in[1] == '\0' || in[1] == '/'))
		rest = in + 1;
	else if (strncmp(in, "/home/user", 10) == 0 && (in[10] == '\0' || in[10] == '/'))
		rest = in + 10;
	else if (in[0] != '/')
		rest = in;
	else
		rest = NULL;
	snprintf(tmp, sizeof(tmp), "%s%s", rest ? "/workspace/" : "", rest ? rest : in);
	for (seg = strtok_r(tmp, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		size_t l = strlen(seg);

		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			while (o > 0 && out[--o] != '/')
				;
			continue;
		}
		if (o + l + 2 > size)
			return -1;
		out[o++] = '/';
		memcpy(out + o, seg, l);
		o += l;
	}
	if (o == 0) {
		if (size < 2)
			return -1;
		out[o++] = '/';
	}
	out[o] = '\0';
	return 0;
}

/* Only E2B's default user exists here (commands run as the sandbox user). */
static int user_ok(const char *name)
{
	return !name || !*name || strcmp(name, "user") == 0;
}

/* The user of an "Authorization: Basic base64(user:)" header into out
 * (empty when none). Returns -1 for a malformed header. */
static int basic_user(struct MHD_Connection *c, char *out, size_t size)
{
	const char *h = header(c, "Authorization");
	unsigned char *dec = NULL;
	size_t len = 0, k;

	out[0] = '\0';
	if (!h)
		return 0;
	if (strncasecmp(h, "Basic ", 6) != 0 || strlen(h + 6) > 1024 ||
	    b64_decode(h + 6, strlen(h + 6), &dec, &len) < 0)
		return -1;
	for (k = 0; k < len && dec[k] != ':' && k + 1 < size; k++)
		out[k] = dec[k] >= 0x20 && dec[k] < 0x7f ? (char)dec[k] : '?';
	out[k] = '\0';
	free(dec);
	return 0;
}

/* ===== envd: Process.Start ===== */

static void proc_free(struct proc *pr)
{
	struct frame *f, *next;

	for (f = pr->qh; f; f = next) {
		next = f->next;
		free(f);
	}
	free(pr->cur);
	for (char **a = pr->argv; a && *a; a++)
		free(*a);
	free(pr->argv);
	for (char **e = pr->env; e && *e; e++) {
		explicit_bzero(*e, strlen(*e));
		free(*e);
	}
	free(pr->env);
	free(pr->cwd);
	free(pr->tag);
	json_decref(pr->config);
	if (pr->in)
		explicit_bzero(pr->in, pr->in_len);
	free(pr->in);
	pthread_cond_destroy(&pr->cv);
	if (pr->box)
		box_unref(pr->box);
	free(pr);
}

static void proc_unref(struct proc *pr)
{
	struct cli_e2b *srv = pr->box->srv;
	int last;

	pthread_mutex_lock(&srv->mu);
	last = --pr->refs == 0;
	pthread_mutex_unlock(&srv->mu);
	if (last)
		proc_free(pr);
}

/* Queues a frame (mu held); a frame nobody will read is dropped. */
static void push_locked(struct proc *pr, struct frame *f)
{
	if (!f)
		return;
	if (pr->reader_done) {
		free(f);
		return;
	}
	if (pr->qt)
		pr->qt->next = f;
	else
		pr->qh = f;
	pr->qt = f;
	pr->qbytes += f->len;
	pthread_cond_broadcast(&pr->cv);
}

/*
 * Stops a process: one that waits is dropped before it runs; a running one
 * is ended with sbx_sandbox_kill(), which ends its sandbox too (Docker
 * cannot kill one exec), so the box is retired. A client that goes away at
 * its own deadline (the one the run has too) cancels nothing: the run ends
 * by that deadline, and the sandbox lives on.
 */
static void cancel_proc(struct proc *pr, enum cancel_why why)
{
	struct box *b = pr->box;
	struct cli_e2b *srv = b->srv;
	int kill = 0, drop = 0, busy_kill = 0;

	pthread_mutex_lock(&srv->mu);
	if (pr->cancel == CANCEL_NONE && !pr->run_done &&
	    !(why == CANCEL_GONE && pr->deadline &&
	      mono_ms() + DEADLINE_GRACE_MS >= pr->deadline)) {
		pr->cancel = why;
		if (pr->started) {
			kill = 1;
			drop = retire_locked(b, &busy_kill);
		}
	}
	pthread_cond_broadcast(&pr->cv);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&srv->mu);
	if (kill)
		sbx_sandbox_kill(b->s);
	if (drop)
		box_unref(b);
}

static int on_output(int stream, const char *data, size_t len, void *payload)
{
	struct proc *pr = payload;
	struct cli_e2b *srv = pr->box->srv;
	const char *name = stream == SBX_STREAM_STDERR ? "stderr" : "stdout";
	int stop = 0;

	while (len && !stop) {
		size_t n = len < CHUNK_MAX ? len : CHUNK_MAX;
		struct frame *f = frame_data(name, data, n);

		pthread_mutex_lock(&srv->mu);
		if (!f)
			pr->cancel = CANCEL_GONE; /* no memory: fail closed */
		push_locked(pr, f);
		while (pr->qbytes > QUEUE_MAX && !pr->cancel && !pr->reader_done &&
		       !pr->box->retired)
			pthread_cond_wait(&pr->cv, &srv->mu);
		stop = pr->cancel != CANCEL_NONE;
		pthread_mutex_unlock(&srv->mu);
		data += n;
		len -= n;
	}
	return stop;
}

/* Go's names of the signals (os.ProcessState says "signal: killed"). */
static const char *signal_word(int sig)
{
	static const char *const names[] = {[1] = "hangup",
					    [2] = "interrupt",
					    [3] = "quit",
					    [4] = "illegal instruction",
					    [5] = "trace/breakpoint trap",
					    [6] = "aborted",
					    [7] = "bus error",
					    [8] = "floating point exception",
					    [9] = "killed",
					    [10] = "user defined signal 1",
					    [11] = "segmentation fault",
					    [12] = "user defined signal 2",
					    [13] = "broken pipe",
					    [14] = "alarm clock",
					    [15] = "terminated",
					    [24] = "CPU time limit exceeded",
					    [25] = "file size limit exceeded",
					    [31] = "bad system call"};

	if (sig > 0 && (size_t)sig < sizeof(names) / sizeof(names[0]) && names[sig])
		return names[sig];
	return NULL;
}

/* {"event":{"end":{...}}} with protojson's zero values omitted. */
static struct frame *frame_end(int exit_code, int exited, const char *status, int with_error)
{
	json_t *end = json_object();

	if (exit_code)
		json_object_set_new(end, "exitCode", json_integer(exit_code));
	if (exited)
		json_object_set_new(end, "exited", json_true());
	json_object_set_new(end, "status", json_string(status));
	if (with_error)
		json_object_set_new(end, "error", json_string(status));
	return frame_json(0, json_pack("{s:{s:o}}", "event", "end", end));
}

static struct frame *frame_killed(void)
{
	return frame_end(-1, 0, "signal: killed", 1);
}

/* The end event of a run that returned a result. */
static struct frame *frame_result(const sbx_result *r)
{
	char status[64];
	const char *w;
	int sig;

	switch (r->status) {
	case SBX_RUN_EXITED:
	case SBX_RUN_ERROR:
		snprintf(status, sizeof(status), "exit status %d", r->exit_code);
		return frame_end(r->exit_code, 1, status, r->exit_code != 0);
	case SBX_RUN_KILLED:
	case SBX_RUN_OOM:
		sig = r->status == SBX_RUN_OOM || !r->term_signal ? 9 : r->term_signal;
		w = signal_word(sig);
		if (w)
			snprintf(status, sizeof(status), "signal: %s", w);
		else
			snprintf(status, sizeof(status), "signal: signal %d", sig);
		return frame_end(-1, 0, status, 1);
	case SBX_RUN_TIMEOUT:
		return frame_killed();
	}
	return frame_killed();
}

static const char *connect_code(int rc)
{
	switch (rc) {
	case SBX_EINVALID:
		return "invalid_argument";
	case SBX_ETIMEOUT:
		return "deadline_exceeded";
	case SBX_EUNAVAILABLE:
		return "unavailable";
	case SBX_ECANCELED:
		return "canceled";
	case SBX_ETOOBIG:
		return "resource_exhausted";
	default:
		return "internal";
	}
}

enum fate { F_RUN, F_CANCELED, F_GONE, F_DEADLINE };
enum limit_by { BY_POLICY, BY_LIFE, BY_CLIENT };

static void *worker_main(void *arg)
{
	struct proc *pr = arg;
	struct box *b = pr->box;
	struct cli_e2b *srv = b->srv;
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	enum limit_by by = BY_POLICY;
	sbx_result *r = NULL;
	enum fate fate;
	char msg[1024] = "";
	uint64_t now, t = 0;
	int rc = 0, drop = 0, kill = 0;

	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t until;

		now = mono_ms();
		if (pr->cancel) {
			fate = F_CANCELED;
			break;
		}
		if (b->retired || srv->stopping) {
			fate = F_GONE;
			break;
		}
		if (pr->deadline && now >= pr->deadline) {
			fate = F_DEADLINE;
			break;
		}
		if ((!pr->want_stdin || pr->stdin_closed) && !b->busy) {
			fate = F_RUN;
			break;
		}
		until = now + 1000;
		if (pr->deadline && pr->deadline < until)
			until = pr->deadline;
		wait_until(&b->cv, &srv->mu, until);
	}
	if (fate == F_RUN) {
		b->busy = 1;
		pr->started = 1;
		t = b->run_timeout_ms;
		if (b->end_mono <= now) {
			t = 0;
			by = BY_LIFE;
		} else if (b->end_mono - now < t) {
			t = b->end_mono - now;
			by = BY_LIFE;
		}
		if (pr->deadline && pr->deadline - now <= t) {
			t = pr->deadline - now;
			by = BY_CLIENT;
		}
	}
	pthread_mutex_unlock(&srv->mu);

	if (fate == F_RUN && t > 0) {
		ro.env = (const char *const *)pr->env;
		ro.workdir = pr->cwd;
		ro.stdin_data = pr->in;
		ro.stdin_len = pr->in_len;
		ro.timeout_ms = t;
		ro.on_output = on_output;
		ro.payload = pr;
		rc = sbx_sandbox_run(&r, b->s, (const char *const *)pr->argv, &ro);
		if (rc < 0)
			snprintf(msg, sizeof(msg), "%s", sbx_error_last()->message);
	}

	pthread_mutex_lock(&srv->mu);
	if (fate == F_RUN) {
		b->busy = 0;
		pr->run_done = 1;
		pthread_cond_broadcast(&b->cv);
	}
	for (struct proc **pp = &b->procs; *pp; pp = &(*pp)->next)
		if (*pp == pr) {
			*pp = pr->next;
			break;
		}
	switch (fate) {
	case F_CANCELED:
		if (pr->cancel == CANCEL_SIGNAL) {
			push_locked(pr, frame_killed());
			push_locked(pr, frame_eos(NULL, NULL));
		}
		break;
	case F_GONE:
		push_locked(pr,
			    frame_eos("unavailable", srv->stopping ? "the server is shutting down"
								   : "The sandbox was not found"));
		break;
	case F_DEADLINE:
		push_locked(pr,
			    frame_eos("deadline_exceeded",
				      pr->want_stdin && !pr->stdin_closed
					      ? "the deadline passed before stdin was closed"
					      : "the deadline passed while an earlier command of "
						"the sandbox was running"));
		break;
	case F_RUN:
		if (t == 0) {
			push_locked(pr,
				    frame_eos(by == BY_CLIENT ? "deadline_exceeded" : "unavailable",
					      by == BY_CLIENT ? "the deadline has passed"
							      : "The sandbox was not found"));
		} else if (rc < 0) {
			if (pr->cancel == CANCEL_SIGNAL) {
				push_locked(pr, frame_killed());
				push_locked(pr, frame_eos(NULL, NULL));
			} else if (b->retired) {
				push_locked(pr, frame_killed());
				push_locked(pr, frame_eos("unavailable",
							  "The sandbox was killed or reached its "
							  "end of life while the command ran"));
			} else {
				push_locked(pr, frame_eos(connect_code(rc), msg));
			}
			/* The library killed the sandbox to end the run. */
			if (rc == SBX_ECANCELED || rc == SBX_ETIMEOUT)
				drop = retire_locked(b, &kill);
		} else {
			push_locked(pr, frame_result(r));
			if (r->status != SBX_RUN_TIMEOUT)
				push_locked(pr, frame_eos(NULL, NULL));
			else if (by == BY_LIFE)
				push_locked(pr, frame_eos("unavailable",
							  "the sandbox reached its end of life "
							  "(timeout) while the command ran"));
			else
				push_locked(pr, frame_eos("deadline_exceeded",
							  "the command's deadline passed; its "
							  "processes were killed"));
		}
		break;
	}
	pr->eos = 1;
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	sbx_result_free(r);
	if (drop)
		box_unref(b);
	proc_unref(pr);
	pthread_mutex_lock(&srv->mu);
	srv->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/*
 * Whether the client's side of the socket looks closed: 2 when it surely
 * is (an error or hang-up), 1 when it stopped sending (FIN), which is also
 * what a client that half-closes after its request looks like.
 */
static int client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	if (fd < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
		return 2;
	return (p.revents & POLLRDHUP) ? 1 : 0;
}

/*
 * libmicrohttpd's content reader of a Start response (its connection's
 * thread): hands out the queued frames, waits for more, and sends envd's
 * keepalive after the idle interval. While nothing is queued it looks at
 * the socket each second: a client that hung up ends the response; one
 * that only stopped sending gets a keepalive, whose write fails (and ends
 * the response) if nobody is there any more.
 */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	static const char keepalive[] = "{\"event\":{\"keepalive\":{}}}";
	struct proc *pr = cls;
	struct cli_e2b *srv = pr->box->srv;

	(void)pos;
	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t now, until;
		int gone;

		if (!pr->cur && pr->qh) {
			pr->cur = pr->qh;
			pr->qh = pr->qh->next;
			if (!pr->qh)
				pr->qt = NULL;
			pr->cur_off = 0;
		}
		if (pr->cur) {
			size_t left = pr->cur->len - pr->cur_off, k = left < max ? left : max;

			memcpy(buf, pr->cur->data + pr->cur_off, k);
			pr->cur_off += k;
			if (pr->cur_off == pr->cur->len) {
				pr->qbytes -= pr->cur->len;
				free(pr->cur);
				pr->cur = NULL;
				pthread_cond_broadcast(&pr->cv);
			}
			pr->last_sent = mono_ms();
			pthread_mutex_unlock(&srv->mu);
			return (ssize_t)k;
		}
		if (pr->eos) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		now = mono_ms();
		if (now >= pr->last_sent + pr->keepalive_ms) {
			push_locked(pr, frame_raw(0, keepalive, sizeof(keepalive) - 1));
			pr->last_sent = now;
			continue;
		}
		until = now + 1000;
		if (pr->last_sent + pr->keepalive_ms < until)
			until = pr->last_sent + pr->keepalive_ms;
		wait_until(&pr->cv, &srv->mu, until);
		if (pr->qh || pr->eos)
			continue;
		gone = client_gone(pr->fd);
		if (gone == 2) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (gone == 1)
			push_locked(pr, frame_raw(0, keepalive, sizeof(keepalive) - 1));
	}
}

/* The response is done with (sent, failed or the client gone). */
static void stream_done(void *cls)
{
	struct proc *pr = cls;
	struct cli_e2b *srv = pr->box->srv;
	int gone;

	pthread_mutex_lock(&srv->mu);
	pr->reader_done = 1;
	gone = !pr->eos;
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	if (gone)
		cancel_proc(pr, CANCEL_GONE);
	proc_unref(pr);
}

/* The first key of obj not in allowed (NULL-terminated), or NULL. */
static const char *unknown_key(json_t *obj, const char *const *allowed)
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

static char *xstrdup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* [A-Za-z_][A-Za-z0-9_]*, as the library takes environment names. */
static int env_name_ok(const char *k)
{
	if (!(*k == '_' || (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z')))
		return 0;
	for (; *k; k++)
		if (!(*k == '_' || (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= '0' && *k <= '9')))
			return 0;
	return 1;
}

/*
 * StartRequest as connect-go's protojson reads it: unknown fields and wrong
 * types are invalid_argument; null is an unset field. Fills pr; on failure
 * *code and err say why.
 */
static int parse_start(json_t *j, struct proc *pr, const char **code, char *err, size_t esize)
{
	static const char *const top[] = {"process", "pty", "tag", "stdin", NULL};
	static const char *const cfg[] = {"cmd", "args", "envs", "cwd", NULL};
	json_t *proc, *cmd, *args, *envs, *cwd, *v;
	const char *bad, *k;
	char mapped[PATH_MAX_LEN + 16];
	size_t n = 0, i;

	*code = "invalid_argument";
	if (!json_is_object(j)) {
		snprintf(err, esize, "unmarshal into process.StartRequest: not an object");
		return -1;
	}
	bad = unknown_key(j, top);
	if (bad) {
		snprintf(err, esize, "unmarshal into process.StartRequest: unknown field \"%.64s\"",
			 bad);
		return -1;
	}
	proc = json_object_get(j, "process");
	if (!json_is_object(proc)) {
		snprintf(err, esize, "process is required");
		return -1;
	}
	bad = unknown_key(proc, cfg);
	if (bad) {
		snprintf(err, esize,
			 "unmarshal into process.ProcessConfig: unknown field \"%.64s\"", bad);
		return -1;
	}
	v = json_object_get(j, "pty");
	if (v && !json_is_null(v)) {
		*code = "unimplemented";
		snprintf(err, esize, "pty is not supported by this server");
		return -1;
	}
	v = json_object_get(j, "stdin");
	if (v && !json_is_null(v) && !json_is_boolean(v)) {
		snprintf(err, esize, "stdin must be a boolean");
		return -1;
	}
	pr->want_stdin = json_is_true(v);
	v = json_object_get(j, "tag");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			snprintf(err, esize, "tag must be a string");
			return -1;
		}
		pr->tag = strdup(json_string_value(v));
	}
	cmd = json_object_get(proc, "cmd");
	args = json_object_get(proc, "args");
	envs = json_object_get(proc, "envs");
	cwd = json_object_get(proc, "cwd");
	if (!json_is_string(cmd) || !*json_string_value(cmd)) {
		snprintf(err, esize, "process.cmd is required");
		return -1;
	}
	if (args && !json_is_null(args) && !string_array(args)) {
		snprintf(err, esize, "process.args must be an array of strings");
		return -1;
	}
	if (envs && !json_is_null(envs) && !string_map(envs)) {
		snprintf(err, esize, "process.envs must be an object of strings");
		return -1;
	}
	if (cwd && !json_is_null(cwd)) {
		if (!json_is_string(cwd)) {
			snprintf(err, esize, "process.cwd must be a string");
			return -1;
		}
		if (map_path(json_string_value(cwd), mapped, sizeof(mapped)) < 0) {
			snprintf(err, esize, "cwd '%.256s' is not a usable path here",
				 json_string_value(cwd));
			return -1;
		}
		pr->cwd = strdup(mapped);
	}
	pr->argv = calloc(json_array_size(args) + 2, sizeof(char *));
	pr->env = calloc(json_object_size(envs) + 1, sizeof(char *));
	if (!pr->argv || !pr->env)
		goto nomem;
	if (!(pr->argv[0] = strdup(json_string_value(cmd))))
		goto nomem;
	json_array_foreach(args, i, v)
	{
		if (!(pr->argv[i + 1] = xstrdup_n(json_string_value(v), json_string_length(v))))
			goto nomem;
	}
	json_object_foreach(envs, k, v)
	{
		if (!env_name_ok(k)) {
			snprintf(err, esize, "process.envs: '%.64s' is not a variable name", k);
			return -1;
		}
		if (asprintf(&pr->env[n], "%s=%s", k, json_string_value(v)) < 0) {
			pr->env[n] = NULL;
			goto nomem;
		}
		n++;
	}
	pr->config = json_deep_copy(proc);
	if (!pr->config)
		goto nomem;
	return 0;
nomem:
	*code = "resource_exhausted";
	snprintf(err, esize, "out of memory");
	return -1;
}

/* Connect-Timeout-Ms: 1 to 10 digits, as the Connect protocol writes it. */
static int parse_timeout_header(const char *h, uint64_t *ms)
{
	uint64_t v = 0;
	size_t n = strlen(h);

	if (n == 0 || n > 10)
		return -1;
	for (; *h; h++) {
		if (*h < '0' || *h > '9')
			return -1;
		v = v * 10 + (uint64_t)(*h - '0');
	}
	*ms = v;
	return 0;
}

static enum MHD_Result envd_start(struct cli_e2b *srv, struct MHD_Connection *c, struct req *rq)
{
	const char *ct = header(c, "Content-Type"), *tmo = header(c, "Connect-Timeout-Ms");
	const char *ka = header(c, "Keepalive-Ping-Interval"), *enc;
	const union MHD_ConnectionInfo *ci;
	struct box *b = rq->box;
	char err[1024], user[128];
	const char *code;
	struct MHD_Response *r;
	struct proc *pr;
	pthread_attr_t attr;
	pthread_t th;
	json_error_t je;
	uint64_t timeout = 0, ka_s = KEEPALIVE_DEFAULT_S;
	uint32_t len;
	json_t *j;
	int started;

	if (!ct || strncasecmp(ct, "application/connect+json", 24) != 0)
		return connect_error(c, "invalid_argument",
				     "Content-Type must be application/connect+json (got '%.64s')",
				     ct ? ct : "");
	enc = header(c, "Connect-Content-Encoding");
	if (enc && strcmp(enc, "identity") != 0)
		return stream_error(c, "unimplemented", "compression is not supported");
	if (tmo && parse_timeout_header(tmo, &timeout) < 0)
		return stream_error(c, "invalid_argument", "malformed Connect-Timeout-Ms");
	if (ka) {
		char *end;
		unsigned long v = strtoul(ka, &end, 10);

		if (end == ka || *end || v < 1 || v > 3600)
			return stream_error(c, "invalid_argument",
					    "Keepalive-Ping-Interval must be 1 to 3600 seconds");
		ka_s = v;
	}
	if (basic_user(c, user, sizeof(user)) < 0 || !user_ok(user)) {
		snprintf(err, sizeof(err),
			 "user '%s' is not available on this server: commands run as the sandbox "
			 "user",
			 user);
		return stream_error(c, "permission_denied", err);
	}
	if (rq->len < 5 || (rq->body[0] & 0xff) != 0)
		return stream_error(c, "invalid_argument",
				    rq->len >= 5 && (rq->body[0] & 1)
					    ? "compressed messages are not supported"
					    : "malformed request envelope");
	len = (uint32_t)(unsigned char)rq->body[1] << 24 |
	      (uint32_t)(unsigned char)rq->body[2] << 16 |
	      (uint32_t)(unsigned char)rq->body[3] << 8 | (uint32_t)(unsigned char)rq->body[4];
	if ((size_t)len != rq->len - 5)
		return stream_error(c, "invalid_argument",
				    "a server-streaming request is exactly one message");
	j = json_loadb(rq->body + 5, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, sizeof(err), "unmarshal into process.StartRequest: %s", je.text);
		return stream_error(c, "invalid_argument", err);
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr) {
		json_decref(j);
		return stream_error(c, "resource_exhausted", "out of memory");
	}
	cond_init(&pr->cv);
	pr->fd = -1;
	if (parse_start(j, pr, &code, err, sizeof(err)) < 0) {
		json_decref(j);
		proc_free(pr);
		return stream_error(c, code, err);
	}
	json_decref(j);
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	pr->fd = ci ? ci->connect_fd : -1;
	pr->keepalive_ms = ka_s * 1000;
	pr->last_sent = mono_ms();
	if (timeout)
		pr->deadline = pr->last_sent + timeout;
	pr->refs = 2; /* the worker's and the response's */

	pthread_mutex_lock(&srv->mu);
	if (b->retired || srv->stopping) {
		pthread_mutex_unlock(&srv->mu);
		proc_free(pr);
		return stream_error(c, "unavailable", "The sandbox was not found");
	}
	{
		int waiting = 0;

		for (struct proc *q = b->procs; q; q = q->next)
			waiting++;
		if (waiting >= MAX_PROCS) {
			pthread_mutex_unlock(&srv->mu);
			proc_free(pr);
			snprintf(err, sizeof(err),
				 "the sandbox already has %d commands running or waiting (the "
				 "bound of this server)",
				 MAX_PROCS);
			return stream_error(c, "resource_exhausted", err);
		}
	}
	b->refs++;
	pr->box = b;
	pr->pid = ++b->next_pid;
	pr->next = b->procs;
	b->procs = pr;
	push_locked(pr, frame_json(0, json_pack("{s:{s:{s:I}}}", "event", "start", "pid",
						(json_int_t)pr->pid)));
	srv->workers++;
	pthread_mutex_unlock(&srv->mu);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&th, &attr, worker_main, pr) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		pthread_mutex_lock(&srv->mu);
		srv->workers--;
		for (struct proc **pp = &b->procs; *pp; pp = &(*pp)->next)
			if (*pp == pr) {
				*pp = pr->next;
				break;
			}
		push_locked(pr, frame_eos("resource_exhausted", "cannot start a thread"));
		pr->eos = 1;
		pr->refs--;
		pthread_mutex_unlock(&srv->mu);
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK_MAX, stream_read, pr,
					      stream_done);
	if (!r) {
		cancel_proc(pr, CANCEL_GONE);
		proc_unref(pr);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/connect+json");
	return queue(c, 200, r);
}

/* ===== envd: the unary process calls ===== */

/* ProcessSelector: exactly one of pid (a number, or protojson's string
 * form of one) and tag. */
static int parse_selector(json_t *sel, unsigned *pid, const char **tag, char *err, size_t esize)
{
	static const char *const keys[] = {"pid", "tag", NULL};
	json_t *p, *t;
	const char *bad;

	*tag = NULL;
	if (!json_is_object(sel)) {
		snprintf(err, esize, "process (a ProcessSelector) is required");
		return -1;
	}
	bad = unknown_key(sel, keys);
	if (bad) {
		snprintf(err, esize,
			 "unmarshal into process.ProcessSelector: unknown field \"%.64s\"", bad);
		return -1;
	}
	p = json_object_get(sel, "pid");
	t = json_object_get(sel, "tag");
	if (p && !json_is_null(p)) {
		if (json_is_integer(p) && json_integer_value(p) >= 0 &&
		    json_integer_value(p) <= 0xffffffffLL) {
			*pid = (unsigned)json_integer_value(p);
		} else if (json_is_string(p)) {
			char *end;
			unsigned long v = strtoul(json_string_value(p), &end, 10);

			if (end == json_string_value(p) || *end || v > 0xffffffffUL) {
				snprintf(err, esize, "pid must be a uint32");
				return -1;
			}
			*pid = (unsigned)v;
		} else {
			snprintf(err, esize, "pid must be a uint32");
			return -1;
		}
		if (t && !json_is_null(t)) {
			snprintf(err, esize, "a ProcessSelector holds one of pid and tag");
			return -1;
		}
		return 0;
	}
	if (json_is_string(t)) {
		*tag = json_string_value(t);
		return 0;
	}
	snprintf(err, esize, "the ProcessSelector names no process");
	return -1;
}

/* The process of the box that sel names, with a reference; NULL: none. */
static struct proc *find_proc(struct box *b, unsigned pid, const char *tag)
{
	struct cli_e2b *srv = b->srv;
	struct proc *pr;

	pthread_mutex_lock(&srv->mu);
	for (pr = b->procs; pr; pr = pr->next)
		if (!pr->run_done &&
		    (tag ? pr->tag && strcmp(pr->tag, tag) == 0 : pr->pid == pid)) {
			pr->refs++;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	return pr;
}

static enum MHD_Result proc_not_found(struct MHD_Connection *c, unsigned pid, const char *tag)
{
	if (tag)
		return connect_error(c, "not_found", "process with tag %.64s not found", tag);
	return connect_error(c, "not_found", "process with pid %u not found", pid);
}

static enum MHD_Result envd_list(struct cli_e2b *srv, struct MHD_Connection *c, struct box *b)
{
	json_t *arr = json_array(), *out;

	pthread_mutex_lock(&srv->mu);
	for (struct proc *pr = b->procs; pr; pr = pr->next) {
		json_t *info =
			json_pack("{s:O, s:I}", "config", pr->config, "pid", (json_int_t)pr->pid);

		if (info && pr->tag)
			json_object_set_new(info, "tag", json_string(pr->tag));
		json_array_append_new(arr, info);
	}
	pthread_mutex_unlock(&srv->mu);
	out = json_object();
	if (json_array_size(arr))
		json_object_set(out, "processes", arr);
	json_decref(arr);
	return reply_json(c, 200, out);
}

static enum MHD_Result
envd_unary(struct cli_e2b *srv, struct MHD_Connection *c, struct req *rq, const char *method)
{
	static const char *const in_keys[] = {"process", "input", NULL};
	static const char *const close_keys[] = {"process", NULL};
	static const char *const sig_keys[] = {"process", "signal", NULL};
	const char *ct = header(c, "Content-Type"), *tag = NULL, *bad;
	struct box *b = rq->box;
	struct proc *pr;
	json_error_t je;
	char err[512];
	unsigned pid = 0;
	json_t *j, *sel;
	enum MHD_Result ret;

	if (!ct || strncasecmp(ct, "application/json", 16) != 0)
		return connect_error(c, "invalid_argument",
				     "Content-Type must be application/json (got '%.64s')",
				     ct ? ct : "");
	j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return connect_error(c, "invalid_argument", "unmarshal into process.%sRequest: %s",
				     method, j ? "not an object" : je.text);
	}
	if (strcmp(method, "List") == 0) {
		if (json_object_size(j)) {
			json_decref(j);
			return connect_error(c, "invalid_argument",
					     "unmarshal into process.ListRequest: unknown field");
		}
		json_decref(j);
		return envd_list(srv, c, b);
	}
	bad = unknown_key(j, strcmp(method, "SendInput") == 0	 ? in_keys
			     : strcmp(method, "CloseStdin") == 0 ? close_keys
								 : sig_keys);
	if (bad) {
		ret = connect_error(c, "invalid_argument",
				    "unmarshal into process.%sRequest: unknown field \"%.64s\"",
				    method, bad);
		json_decref(j);
		return ret;
	}
	sel = json_object_get(j, "process");
	if (parse_selector(sel, &pid, &tag, err, sizeof(err)) < 0) {
		json_decref(j);
		return connect_error(c, "invalid_argument", "%s", err);
	}
	pr = find_proc(b, pid, tag);
	if (!pr) {
		ret = proc_not_found(c, pid, tag);
		json_decref(j);
		return ret;
	}
	pid = pr->pid;
	if (strcmp(method, "SendSignal") == 0) {
		json_t *s = json_object_get(j, "signal");
		int ok = (json_is_string(s) &&
			  (strcmp(json_string_value(s), "SIGNAL_SIGKILL") == 0 ||
			   strcmp(json_string_value(s), "SIGNAL_SIGTERM") == 0)) ||
			 (json_is_integer(s) &&
			  (json_integer_value(s) == 9 || json_integer_value(s) == 15));

		json_decref(j);
		if (!ok) {
			proc_unref(pr);
			return connect_error(c, "invalid_argument",
					     "signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
		}
		cancel_proc(pr, CANCEL_SIGNAL);
		proc_unref(pr);
		return reply_json(c, 200, json_object());
	}
	if (strcmp(method, "CloseStdin") == 0) {
		json_decref(j);
		pthread_mutex_lock(&srv->mu);
		if (!pr->want_stdin) {
			pthread_mutex_unlock(&srv->mu);
			proc_unref(pr);
			return connect_error(c, "failed_precondition",
					     "process %u was started without stdin", pid);
		}
		pr->stdin_closed = 1;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&srv->mu);
		proc_unref(pr);
		return reply_json(c, 200, json_object());
	}
	/* SendInput */
	{
		static const char *const input_keys[] = {"stdin", "pty", NULL};
		json_t *in = json_object_get(j, "input"), *data;
		unsigned char *bytes = NULL;
		size_t n = 0;
		const char *why = NULL;

		if (!json_is_object(in) || (bad = unknown_key(in, input_keys)) != NULL)
			why = "input must be a ProcessInput holding stdin";
		else if (json_object_get(in, "pty") && !json_is_null(json_object_get(in, "pty")))
			why = "the process has no pty";
		data = json_object_get(in, "stdin");
		if (!why &&
		    (!json_is_string(data) ||
		     b64_decode(json_string_value(data), json_string_length(data), &bytes, &n) < 0))
			why = "input.stdin must be base64 bytes";
		json_decref(j);
		if (why) {
			proc_unref(pr);
			return connect_error(c, "invalid_argument", "%s", why);
		}
		pthread_mutex_lock(&srv->mu);
		if (!pr->want_stdin || pr->stdin_closed) {
			pthread_mutex_unlock(&srv->mu);
			explicit_bzero(bytes, n);
			free(bytes);
			proc_unref(pr);
			return connect_error(c, "failed_precondition", "stdin of process %u is %s",
					     pid, pr->want_stdin ? "closed" : "not open");
		}
		if (pr->in_len + n > STDIN_MAX) {
			pthread_mutex_unlock(&srv->mu);
			explicit_bzero(bytes, n);
			free(bytes);
			proc_unref(pr);
			return connect_error(c, "resource_exhausted",
					     "stdin of process %u would pass 16 MiB: this server "
					     "gives a command its whole stdin at once",
					     pid);
		}
		if (n) {
			char *grown = realloc(pr->in, pr->in_len + n);

			if (!grown) {
				pthread_mutex_unlock(&srv->mu);
				explicit_bzero(bytes, n);
				free(bytes);
				proc_unref(pr);
				return connect_error(c, "resource_exhausted", "out of memory");
			}
			memcpy(grown + pr->in_len, bytes, n);
			pr->in = grown;
			pr->in_len += n;
		}
		pthread_mutex_unlock(&srv->mu);
		explicit_bzero(bytes, n);
		free(bytes);
		proc_unref(pr);
		return reply_json(c, 200, json_object());
	}
}

/* ===== envd: files ===== */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static enum MHD_Result
file_error(struct MHD_Connection *c, int rc, const char *path, const char *msg)
{
	switch (rc) {
	case SBX_ENOTFOUND:
		return envd_error(c, 404, "path '%.512s' does not exist", path);
	case SBX_EINVALID:
		return envd_error(c, 400, "path '%.512s': %s", path, msg);
	case SBX_EDENIED:
		return envd_error(c, 403, "path '%.512s': %s", path, msg);
	case SBX_ETOOBIG:
		return envd_error(c, 413, "path '%.512s': %s", path, msg);
	default:
		return envd_error(c, 500, "%s", msg);
	}
}

static enum MHD_Result envd_download(struct MHD_Connection *c, struct req *rq)
{
	const char *given = query(c, "path");
	char path[PATH_MAX_LEN + 16];
	struct MHD_Response *r;
	void *data = NULL;
	size_t len = 0;
	int rc;

	if (!user_ok(query(c, "username")))
		return envd_error(c, 401, "user '%.64s' is not available on this server",
				  query(c, "username"));
	if (!given || map_path(given, path, sizeof(path)) < 0)
		return envd_error(c, 400, "invalid path '%.512s'", given ? given : "");
	if (box_acquire(rq->box) < 0)
		return envd_error(c, 502, "The sandbox was not found");
	rc = sbx_sandbox_read_file(&data, &len, rq->box->s, path, 0);
	if (rc < 0) {
		enum MHD_Result ret = file_error(c, rc, path, sbx_error_last()->message);

		box_release(rq->box, rc);
		return ret;
	}
	box_release(rq->box, 0);
	r = MHD_create_response_from_buffer_with_free_callback(len, data, sbx_free);
	if (!r) {
		sbx_free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	return queue(c, 200, r);
}

struct upload {
	const char *name; /* the form's filename, or NULL */
	size_t name_len;
	const char *data;
	size_t len;
};

/* The value of a Content-Disposition parameter (name="..."), unquoted. */
static int
disposition_param(const char *h, size_t hlen, const char *param, const char **out, size_t *out_len)
{
	size_t pl = strlen(param);

	for (size_t k = 0; k + pl + 2 <= hlen; k++) {
		if ((k == 0 || h[k - 1] == ' ' || h[k - 1] == ';') &&
		    strncasecmp(h + k, param, pl) == 0 && h[k + pl] == '=') {
			const char *v = h + k + pl + 1, *end;

			if (v < h + hlen && *v == '"') {
				v++;
				end = memchr(v, '"', (size_t)(h + hlen - v));
				if (!end)
					return -1;
			} else {
				for (end = v; end < h + hlen && *end != ';'; end++)
					;
			}
			*out = v;
			*out_len = (size_t)(end - v);
			return 0;
		}
	}
	return 1;
}

/*
 * multipart/form-data with "file" parts (RFC 7578), from a whole body in
 * memory. Returns the number of parts in ups (at most max), or -1 with err.
 */
static int parse_multipart(const char *ct,
			   const char *body,
			   size_t len,
			   struct upload *ups,
			   int max,
			   char *err,
			   size_t esize)
{
	char delim[80];
	const char *bnd, *p, *end = body + len;
	size_t blen, dlen;
	int n = 0;

	if (disposition_param(ct, strlen(ct), "boundary", &bnd, &blen) != 0 || blen == 0 ||
	    blen > 70) {
		snprintf(err, esize, "multipart/form-data without a boundary");
		return -1;
	}
	dlen = (size_t)snprintf(delim, sizeof(delim), "--%.*s", (int)blen, bnd);
	p = memmem(body, len, delim, dlen);
	if (!p) {
		snprintf(err, esize, "malformed multipart body");
		return -1;
	}
	for (;;) {
		const char *hdr, *hend, *next, *line;
		const char *name = NULL, *fname = NULL;
		size_t nlen = 0, flen = 0;

		p += dlen;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return n;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			break;
		hdr = p + 2;
		hend = memmem(hdr, (size_t)(end - hdr), "\r\n\r\n", 4);
		if (!hend)
			break;
		for (line = hdr; line < hend;) {
			const char *eol = memmem(line, (size_t)(hend + 2 - line), "\r\n", 2);

			if (!eol)
				eol = hend;
			if ((size_t)(eol - line) > 20 &&
			    strncasecmp(line, "Content-Disposition:", 20) == 0) {
				disposition_param(line + 20, (size_t)(eol - line - 20), "name",
						  &name, &nlen);
				disposition_param(line + 20, (size_t)(eol - line - 20), "filename",
						  &fname, &flen);
			}
			line = eol + 2;
		}
		p = hend + 4;
		next = memmem(p, (size_t)(end - p), delim, dlen);
		if (!next || next - p < 2 || next[-2] != '\r' || next[-1] != '\n')
			break;
		if (!name || nlen != 4 || memcmp(name, "file", 4) != 0) {
			snprintf(err, esize, "unexpected form field '%.*s' (only file)",
				 name ? (int)(nlen > 64 ? 64 : nlen) : 0, name ? name : "");
			return -1;
		}
		if (n == max) {
			snprintf(err, esize, "more than %d files in one upload", max);
			return -1;
		}
		ups[n].name = fname;
		ups[n].name_len = fname ? flen : 0;
		ups[n].data = p;
		ups[n].len = (size_t)(next - 2 - p);
		n++;
		p = next;
	}
	snprintf(err, esize, "malformed multipart body");
	return -1;
}

/*
 * Writes one file, making its directory first when it is missing (envd
 * creates parents). Returns 0, or the library's error code with the
 * message in err.
 */
static int
write_one(sbx_sandbox *s, const char *path, const char *data, size_t len, char *err, size_t esize)
{
	char dir[PATH_MAX_LEN + 16];
	const char *argv[] = {"mkdir", "-p", "--", dir, NULL};
	const char *msg;
	sbx_result *r = NULL;
	char *slash;
	int rc;

	rc = sbx_sandbox_write_file(s, path, data, len, 0644);
	msg = sbx_error_last()->message;
	snprintf(err, esize, "%s", msg);
	if (rc == 0 || (rc != SBX_ENOTFOUND && !(rc == SBX_EENGINE && strstr(msg, "nonexistent"))))
		return rc;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return rc;
	*slash = '\0';
	rc = sbx_sandbox_run(&r, s, argv, NULL);
	if (rc < 0) {
		snprintf(err, esize, "%s", sbx_error_last()->message);
		return rc;
	}
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		snprintf(err, esize, "cannot create directory %.512s: %.400s", dir,
			 r->stderr_data ? r->stderr_data : "");
		sbx_result_free(r);
		return SBX_EDENIED;
	}
	sbx_result_free(r);
	rc = sbx_sandbox_write_file(s, path, data, len, 0644);
	snprintf(err, esize, "%s", sbx_error_last()->message);
	return rc;
}

#define MAX_UPLOADS 64

static enum MHD_Result envd_upload(struct MHD_Connection *c, struct req *rq)
{
	const char *ct = header(c, "Content-Type"), *given = query(c, "path");
	const char *ce = header(c, "Content-Encoding");
	struct upload ups[MAX_UPLOADS];
	char path[PATH_MAX_LEN + 16], name[PATH_MAX_LEN + 16], err[512];
	json_t *out;
	int n, rc = 0;

	if (!user_ok(query(c, "username")))
		return envd_error(c, 401, "user '%.64s' is not available on this server",
				  query(c, "username"));
	if (ce && strcasecmp(ce, "identity") != 0)
		return envd_error(c, 415,
				  "Content-Encoding '%.32s' is not supported by this server", ce);
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		n = parse_multipart(ct, rq->body ? rq->body : "", rq->len, ups, MAX_UPLOADS, err,
				    sizeof(err));
		if (n < 0)
			return envd_error(c, 400, "%s", err);
		if (n == 0)
			return envd_error(c, 400, "no file part in the upload");
		if (given && n > 1)
			return envd_error(c, 400, "path names one file, and the upload has %d", n);
	} else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
		if (!given)
			return envd_error(c, 400, "an application/octet-stream upload needs path");
		ups[0] = (struct upload){.data = rq->body ? rq->body : "", .len = rq->len};
		n = 1;
	} else {
		return envd_error(c, 400,
				  "Content-Type must be multipart/form-data or "
				  "application/octet-stream");
	}
	for (int k = 0; k < n; k++) {
		if (ups[k].len > FILE_MAX)
			return envd_error(c, 413, "a file is larger than 64 MiB");
		if (!given &&
		    (!ups[k].name || ups[k].name_len == 0 || ups[k].name_len >= sizeof(name)))
			return envd_error(c, 400, "a file part names no path");
	}
	out = json_array();
	if (box_acquire(rq->box) < 0) {
		json_decref(out);
		return envd_error(c, 502, "The sandbox was not found");
	}
	for (int k = 0; k < n && rc == 0; k++) {
		const char *want = given;

		if (!want) {
			memcpy(name, ups[k].name, ups[k].name_len);
			name[ups[k].name_len] = '\0';
			want = name;
		}
		if (map_path(want, path, sizeof(path)) < 0 || strcmp(path, "/") == 0) {
			box_release(rq->box, 0);
			json_decref(out);
			return envd_error(c, 400, "invalid path '%.512s'", want);
		}
		rc = write_one(rq->box->s, path, ups[k].data, ups[k].len, err, sizeof(err));
		if (rc == 0)
			json_array_append_new(out,
					      json_pack("{s:s, s:s, s:s}", "path", path, "name",
							base_name(path), "type", "file"));
	}
	if (rc < 0) {
		enum MHD_Result ret = file_error(c, rc, path, err);

		box_release(rq->box, rc);
		json_decref(out);
		return ret;
	}
	box_release(rq->box, 0);
	return reply_json(c, 200, out);
}

static enum MHD_Result envd(struct cli_e2b *srv,
			    struct MHD_Connection *c,
			    struct req *rq,
			    const char *method,
			    const char *url)
{
	if (strcmp(url, "/health") == 0)
		return strcmp(method, "GET") == 0 ? reply_empty(c, 204)
						  : envd_error(c, 405, "method not allowed");
	if (strcmp(url, "/files") == 0) {
		if (strcmp(method, "GET") == 0)
			return envd_download(c, rq);
		if (strcmp(method, "POST") == 0)
			return envd_upload(c, rq);
		return envd_error(c, 405, "method not allowed");
	}
	if (strncmp(url, "/process.Process/", 17) == 0 && strcmp(method, "POST") == 0) {
		const char *m = url + 17;

		if (strcmp(m, "Start") == 0)
			return envd_start(srv, c, rq);
		if (strcmp(m, "List") == 0 || strcmp(m, "SendInput") == 0 ||
		    strcmp(m, "CloseStdin") == 0 || strcmp(m, "SendSignal") == 0)
			return envd_unary(srv, c, rq, m);
	}
	if ((strncmp(url, "/process.Process/", 17) == 0 ||
	     strncmp(url, "/filesystem.Filesystem/", 23) == 0) &&
	    strcmp(method, "POST") == 0) {
		const char *ct = header(c, "Content-Type");

		if (ct && strncasecmp(ct, "application/connect+", 20) == 0)
			return stream_error(c, "unimplemented",
					    "this method is not supported by this server");
		return connect_error(c, "unimplemented", "%.128s is not supported by this server",
				     url);
	}
	return envd_error(c, 404, "%.16s %.128s: not found", method, url);
}

/* ===== Requests ===== */

/* The sandbox an envd request is for: the E2b-Sandbox-Id header, or a
 * Host of the form <port>-<id>.<domain>. Returns 1 for envd. */
static int envd_target(struct MHD_Connection *c, char *id, size_t size, unsigned *port)
{
	const char *h = header(c, "E2b-Sandbox-Id"), *ph = header(c, "E2b-Sandbox-Port");
	const char *dash, *dot;

	*port = ENVD_PORT;
	if (h) {
		snprintf(id, size, "%s", h);
		if (ph)
			*port = (unsigned)strtoul(ph, NULL, 10);
		return 1;
	}
	h = header(c, "Host");
	if (!h)
		return 0;
	dash = strchr(h, '-');
	dot = strchr(h, '.');
	if (!dash || !dot || dash > dot || dash == h)
		return 0;
	for (const char *p = h; p < dash; p++)
		if (*p < '0' || *p > '9')
			return 0;
	*port = (unsigned)strtoul(h, NULL, 10);
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
	return reply_json(c, 502,
			  json_pack("{s:s, s:s, s:i}", "sandboxId", safe, "message",
				    "The sandbox was not found", "code", 502));
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

static enum MHD_Result too_big(struct MHD_Connection *c, struct req *rq, const char *url)
{
	if (rq->route == R_REST)
		return rest_error(c, 413, "Request body larger than %zu bytes", rq->limit);
	if (strcmp(url, "/process.Process/Start") == 0)
		return stream_error(c, "resource_exhausted", "the request is larger than 1 MiB");
	if (strcmp(url, "/files") == 0)
		return envd_error(c, 413, "the upload is larger than 64 MiB");
	return connect_error(c, "resource_exhausted", "the request is larger than %zu bytes",
			     rq->limit);
}

/* The headers are in: route, authenticate, bound the body. */
static enum MHD_Result
first_call(struct cli_e2b *srv, struct MHD_Connection *c, struct req *rq, const char *url)
{
	const char *cl = header(c, "Content-Length");
	char id[72];
	unsigned port;

	if (envd_target(c, id, sizeof(id), &port)) {
		const char *tok;

		rq->route = R_ENVD;
		rq->box = box_get(srv, id);
		rq->answered = 1;
		if (!rq->box)
			return sandbox_not_found(c, id);
		if (port != ENVD_PORT)
			return reply_json(c, 502,
					  json_pack("{s:s, s:s, s:i, s:i}", "sandboxId",
						    rq->box->id, "message",
						    "The sandbox is running but port is not open",
						    "port", (int)port, "code", 502));
		tok = header(c, "X-Access-Token");
		if (strcmp(url, "/health") != 0 && rq->box->secure &&
		    !(tok && ct_equal(tok, strlen(tok), rq->box->token, strlen(rq->box->token))))
			return envd_error(c, 401,
					  "unauthorized access, please provide a valid access "
					  "token or method signing if supported");
		rq->answered = 0;
		rq->limit = envd_limit(url);
	} else {
		const char *key = header(c, "X-API-Key");

		rq->route = R_REST;
		rq->limit = REST_BODY_MAX;
		if (!key) {
			rq->answered = 1;
			return rest_error(c, 401,
					  "Invalid API key: send it in the X-API-Key header");
		}
		if (!ct_equal(key, strlen(key), srv->key, srv->key_len)) {
			rq->answered = 1;
			return rest_error(c, 401, "Invalid API key");
		}
	}
	if (cl && strtoull(cl, NULL, 10) > rq->limit) {
		rq->answered = 1;
		return too_big(c, rq, url);
	}
	return MHD_YES;
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
	struct cli_e2b *srv = cls;
	struct req *rq = *con_cls;

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		return first_call(srv, c, rq, url);
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (rq->answered)
			return MHD_YES;
		if (rq->too_big || n > rq->limit - rq->len) {
			/* Keep reading (so the 413 reaches the client) up to a bound. */
			rq->too_big = 1;
			rq->discarded += n;
			return rq->discarded > 4 * rq->limit + (1u << 20) ? MHD_NO : MHD_YES;
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
	if (rq->too_big)
		return too_big(c, rq, url);
	if (rq->route == R_ENVD)
		return envd(srv, c, rq, method, url);
	return rest(srv, c, rq, method, url);
}

static void on_completed(void *cls,
			 struct MHD_Connection *c,
			 void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (!rq)
		return;
	if (rq->box)
		box_unref(rq->box);
	if (rq->body)
		explicit_bzero(rq->body, rq->len);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

/* ===== The server ===== */

int cli_e2b_start(struct cli_e2b **out, const struct cli_e2b_config *c, char *err, size_t errlen)
{
	struct cli_e2b *srv = calloc(1, sizeof(*srv));

	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&srv->mu, NULL);
	cond_init(&srv->cv);
	srv->b = c->backend;
	srv->max_timeout_s = c->max_timeout_s;
	srv->default_image = strdup(c->default_image);
	srv->key = strdup(c->api_key);
	if (!srv->default_image || !srv->key) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	srv->key_len = strlen(srv->key);
	srv->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD |
					    (c->ipv6 ? MHD_USE_IPv6 : 0),
				    0, NULL, NULL, on_request, srv, MHD_OPTION_LISTEN_SOCKET,
				    c->listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)640, MHD_OPTION_END);
	if (!srv->mhd) {
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
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
	return -1;
}

void cli_e2b_sweep(struct cli_e2b *srv)
{
	struct box *dead[MAX_BOXES];
	int kill[MAX_BOXES];
	size_t n = 0, k = 0;
	uint64_t now = mono_ms();

	pthread_mutex_lock(&srv->mu);
	while (k < srv->nboxes) {
		struct box *b = srv->boxes[k];

		if (b->end_mono > now) {
			k++;
			continue;
		}
		if (retire_locked(b, &kill[n])) /* moves the last box into slot k */
			dead[n++] = b;
	}
	pthread_mutex_unlock(&srv->mu);
	for (k = 0; k < n; k++) {
		if (kill[k])
			sbx_sandbox_kill(dead[k]->s);
		box_unref(dead[k]);
	}
}

void cli_e2b_stop(struct cli_e2b *srv)
{
	struct box *all[MAX_BOXES];
	int kill[MAX_BOXES];
	size_t n = 0;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->stopping = 1;
	while (srv->nboxes) {
		struct box *b = srv->boxes[0];

		if (retire_locked(b, &kill[n]))
			all[n++] = b;
	}
	pthread_mutex_unlock(&srv->mu);
	for (size_t k = 0; k < n; k++) {
		if (kill[k])
			sbx_sandbox_kill(all[k]->s);
		box_unref(all[k]);
	}
	/* Joins every connection thread: their streams end as their runs do. */
	MHD_stop_daemon(srv->mhd);
	pthread_mutex_lock(&srv->mu);
	while (srv->workers > 0 || srv->live > 0)
		pthread_cond_wait(&srv->cv, &srv->mu);
	pthread_mutex_unlock(&srv->mu);
	explicit_bzero(srv->key, srv->key_len);
	free(srv->key);
	free(srv->default_image);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
}
