/*
 * remote/modal/grpc.c: gRPC over HTTP/2 with libcurl (remote/modal/grpc-int.h).
 *
 * Hand-written rather than linking grpc-core: that library brings its own
 * HTTP/2 stack, event engine, threads and DNS resolver into a C library
 * whose every other network call already goes through libcurl, and the
 * subset needed here (unary and server-streaming calls, length-prefixed
 * messages, status in trailers) is small. libcurl does the HTTP/2 (nghttp2)
 * and TLS; this file does gRPC's framing and status, and grpc-sync.c the
 * synchronous calls and their retries on top of it.
 *
 * Everything the peer sends is untrusted: a message's declared length is
 * checked against the limit before a byte of it is stored, messages are
 * reassembled across any DATA boundaries, and a response is complete only
 * with a grpc-status (from the trailers, or from the headers of a
 * Trailers-Only response). A stream that ends in the middle of a message,
 * without a status, with a status that is not a number, or with a
 * content-type that is not gRPC is a protocol break: reported as such,
 * never retried.
 *
 * libcurl hands HTTP/2 trailers to the header callback, after the body, so
 * one parser reads the headers and the trailers of a response.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <sandboxio.h>

#include "remote/modal/grpc-int.h"
#include "remote/modal/modal.pb-c.h"
#include "util/base64.h"
#include "util/error-int.h"
#include "util/time.h"

#define IDLE_SETS 4		   /* idle multi handles (warm connections) kept per channel */
#define DETAILS_B64_MAX (16 << 10) /* grpc-status-details-bin beyond this is ignored */
#define CONNECT_MAX_MS 10000L

struct sbx__grpc_chan {
	char *base; /* scheme://host[:port], no trailing '/' */
	int h2c;
	int fresh_h2c; /* libcurl < 8.0 cannot reuse an h2c connection: see add_call() */
	pthread_mutex_t lock;
	CURLM *idle[IDLE_SETS];
	size_t idle_n;
};

struct sbx__grpc_set {
	struct sbx__grpc_chan *ch;
	CURLM *multi;
	struct sbx__grpc_call *calls;
	struct sbx__grpc_call *leader; /* fresh_h2c: the call opening the set's connection */
	int conn_up;		       /* fresh_h2c: that connection is up and speaks h2 */
};

struct sbx__grpc_call {
	struct sbx__grpc_set *set;
	struct sbx__grpc_call *next;
	CURL *easy;
	struct curl_slist *hdrs;
	char method[160];
	sbx__grpc_msg_cb cb;
	void *arg;
	size_t max_msg;
	int unary;
	const int *kill;
	uint64_t deadline;
	int added; /* in the multi handle (fresh_h2c: calls wait for the connection) */
	/* framing of the response */
	uint8_t pfx[SBX__GRPC_PREFIX];
	size_t pfx_got;
	int in_msg;
	uint32_t need;
	uint8_t *msg;
	size_t msg_got, msg_alloc;
	unsigned long nmsgs;
	int body_seen;
	/* headers and trailers */
	long http;
	int have_status;
	int code;
	char gmsg[512];
	int have_ctype, ctype_ok;
	char *details; /* grpc-status-details-bin, base64 */
	const char *capture;
	char captured[64];
	/* outcome */
	int done, reported, killed, broken, cb_rc;
	CURLcode cc;
	char why[256];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

uint64_t sbx__grpc_now_ms(void)
{
	return sbx__mono_ms();
}

void sbx__grpc_uuid4(char out[37])
{
	uint8_t b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);
		if (r > 0)
			got += (size_t)r;
		else if (r < 0 && errno != EINTR)
			break;
	}
	if (got < sizeof(b)) {
		/* getrandom cannot fail on Linux >= 3.17 once seeded; never hand out zeros. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		for (size_t i = got; i < sizeof(b); i++)
			b[i] = (uint8_t)((uint64_t)ts.tv_nsec >> ((i % 4) * 8)) ^
			       (uint8_t)(i * 151);
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

const char *sbx__grpc_code_name(int code)
{
	static const char *const names[] = {"OK",
					    "CANCELLED",
					    "UNKNOWN",
					    "INVALID_ARGUMENT",
					    "DEADLINE_EXCEEDED",
					    "NOT_FOUND",
					    "ALREADY_EXISTS",
					    "PERMISSION_DENIED",
					    "RESOURCE_EXHAUSTED",
					    "FAILED_PRECONDITION",
					    "ABORTED",
					    "OUT_OF_RANGE",
					    "UNIMPLEMENTED",
					    "INTERNAL",
					    "UNAVAILABLE",
					    "DATA_LOSS",
					    "UNAUTHENTICATED"};

	if (code >= 0 && (size_t)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "UNKNOWN_CODE";
}

int sbx__grpc_sbx_code(int code)
{
	switch (code) {
	case SBX__GRPC_OK:
		return 0;
	case SBX__GRPC_UNAUTHENTICATED:
	case SBX__GRPC_PERMISSION_DENIED:
		return SBX_EDENIED;
	case SBX__GRPC_NOT_FOUND:
		return SBX_ENOTFOUND;
	case SBX__GRPC_INVALID_ARGUMENT:
	case SBX__GRPC_FAILED_PRECONDITION:
		return SBX_EINVALID;
	case SBX__GRPC_DEADLINE_EXCEEDED:
		return SBX_ETIMEOUT;
	case SBX__GRPC_UNAVAILABLE:
	case SBX__GRPC_RESOURCE_EXHAUSTED:
		return SBX_EUNAVAILABLE;
	default:
		return SBX_EENGINE;
	}
}

int sbx__grpc_retryable(int code)
{
	return code == SBX__GRPC_DEADLINE_EXCEEDED || code == SBX__GRPC_UNAVAILABLE ||
	       code == SBX__GRPC_CANCELLED || code == SBX__GRPC_INTERNAL ||
	       code == SBX__GRPC_UNKNOWN;
}

/* ===== Channels ===== */

/* Accepts scheme://host[:port] with an optional trailing '/', nothing else. */
static int parse_base(const char *url, int *h2c, size_t *len)
{
	const char *p;
	size_t n;

	if (strncmp(url, "https://", 8) == 0) {
		*h2c = 0;
		p = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		*h2c = 1;
		p = url + 7;
	} else {
		return -1;
	}
	n = strlen(p);
	if (n && p[n - 1] == '/')
		n--;
	if (n == 0 || n > 255)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (!isalnum(c) && !strchr(".-:[]_", c))
			return -1;
	}
	*len = (size_t)(p - url) + n;
	return 0;
}

int sbx__grpc_chan_new(struct sbx__grpc_chan **out, const char *base_url)
{
	struct sbx__grpc_chan *ch;
	size_t len = 0;
	int h2c = 0;

	if (!base_url || parse_base(base_url, &h2c, &len) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "grpc: '%.200s' is not an http:// or https:// URL of a host "
				      "and port",
				      base_url ? base_url : "(null)");
	pthread_once(&curl_once, curl_global);
	ch = calloc(1, sizeof(*ch));
	if (!ch || !(ch->base = strndup(base_url, len))) {
		free(ch);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	ch->h2c = h2c;
	ch->fresh_h2c = h2c && curl_version_info(CURLVERSION_NOW)->version_num < 0x080000;
	pthread_mutex_init(&ch->lock, NULL);
	*out = ch;
	return 0;
}

void sbx__grpc_chan_free(struct sbx__grpc_chan *ch)
{
	if (!ch)
		return;
	for (size_t i = 0; i < ch->idle_n; i++)
		curl_multi_cleanup(ch->idle[i]);
	pthread_mutex_destroy(&ch->lock);
	free(ch->base);
	free(ch);
}

const char *sbx__grpc_chan_url(const struct sbx__grpc_chan *ch)
{
	return ch->base;
}

int sbx__grpc_set_new(struct sbx__grpc_set **out, struct sbx__grpc_chan *ch)
{
	struct sbx__grpc_set *s = calloc(1, sizeof(*s));

	if (!s)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	pthread_mutex_lock(&ch->lock);
	if (ch->idle_n)
		s->multi = ch->idle[--ch->idle_n];
	pthread_mutex_unlock(&ch->lock);
	if (!s->multi) {
		s->multi = curl_multi_init();
		if (!s->multi) {
			free(s);
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE,
					      "grpc: cannot make a libcurl multi handle");
		}
		curl_multi_setopt(s->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	}
	s->ch = ch;
	*out = s;
	return 0;
}

static void call_destroy(struct sbx__grpc_call *c, int conn_lost);

void sbx__grpc_set_free(struct sbx__grpc_set *s)
{
	struct sbx__grpc_chan *ch;

	if (!s)
		return;
	/* Aborted, not ended: the caller's error record is left as it is. */
	while (s->calls)
		call_destroy(s->calls, 0);
	ch = s->ch;
	pthread_mutex_lock(&ch->lock);
	if (ch->idle_n < IDLE_SETS && !ch->fresh_h2c) {
		ch->idle[ch->idle_n++] = s->multi;
		s->multi = NULL;
	}
	pthread_mutex_unlock(&ch->lock);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	free(s);
}

/* ===== Response parsing ===== */

static void set_broken(struct sbx__grpc_call *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_broken(struct sbx__grpc_call *c, const char *fmt, ...)
{
	va_list ap;

	if (c->broken)
		return;
	c->broken = 1;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static int deliver(struct sbx__grpc_call *c)
{
	int rc;

	c->nmsgs++;
	c->in_msg = 0;
	if (c->unary && c->nmsgs > 1) {
		set_broken(c, "a unary response carried more than one message");
		return -1;
	}
	rc = c->cb ? c->cb(c->arg, c->msg, c->need) : 0;
	if (rc) {
		c->cb_rc = rc;
		return -1;
	}
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sbx__grpc_call *c = ud;
	const uint8_t *p = (const uint8_t *)data;
	size_t len = size * nmemb, off = 0;

	if (c->http != 200)
		return len; /* an error page: the HTTP status is the answer */
	c->body_seen = 1;
	while (off < len) {
		size_t take;

		if (!c->in_msg) {
			take = SBX__GRPC_PREFIX - c->pfx_got;
			if (take > len - off)
				take = len - off;
			memcpy(c->pfx + c->pfx_got, p + off, take);
			c->pfx_got += take;
			off += take;
			if (c->pfx_got < SBX__GRPC_PREFIX)
				break;
			c->pfx_got = 0;
			if (c->pfx[0] != 0) {
				set_broken(c,
					   "a message has compressed flag %u, but no compression "
					   "was negotiated",
					   c->pfx[0]);
				return 0;
			}
			c->need = (uint32_t)c->pfx[1] << 24 | (uint32_t)c->pfx[2] << 16 |
				  (uint32_t)c->pfx[3] << 8 | c->pfx[4];
			if (c->need > c->max_msg) {
				set_broken(c,
					   "a message declares %u bytes, over the limit of %zu "
					   "bytes",
					   c->need, c->max_msg);
				return 0;
			}
			c->in_msg = 1;
			c->msg_got = 0;
			if (c->need == 0) {
				if (deliver(c) < 0)
					return 0;
				continue;
			}
		}
		take = c->need - c->msg_got;
		if (take > len - off)
			take = len - off;
		if (take == 0)
			break; /* the read ended with the prefix: no buffer yet */
		if (c->msg_got + take > c->msg_alloc) {
			/* Grow with what arrives, never to the declared size up front. */
			size_t want = c->msg_alloc ? c->msg_alloc * 2 : 4096;
			uint8_t *m;

			while (want < c->msg_got + take)
				want *= 2;
			if (want > c->need)
				want = c->need;
			m = realloc(c->msg, want);
			if (!m) {
				set_broken(c, "out of memory for a %u-byte message", c->need);
				return 0;
			}
			c->msg = m;
			c->msg_alloc = want;
		}
		memcpy(c->msg + c->msg_got, p + off, take);
		c->msg_got += take;
		off += take;
		if (c->msg_got == c->need && deliver(c) < 0)
			return 0;
	}
	return len;
}

/* grpc-message is percent-encoded UTF-8; control bytes become '?'. */
static void percent_decode(char *dst, size_t cap, const char *src, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		int ch = (unsigned char)src[i];
		if (ch == '%' && i + 2 < n && sbx__hexval(src[i + 1]) >= 0 &&
		    sbx__hexval(src[i + 2]) >= 0) {
			ch = sbx__hexval(src[i + 1]) << 4 | sbx__hexval(src[i + 2]);
			i += 2;
		}
		dst[o++] = (char)(ch < 0x20 || ch == 0x7f ? '?' : ch);
	}
	dst[o] = '\0';
}

static int header_is(const char *line, size_t n, const char *name, const char **val, size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
		return 0;
	*val = line + k + 1;
	*vlen = n - k - 1;
	while (*vlen && (**val == ' ' || **val == '\t')) {
		(*val)++;
		(*vlen)--;
	}
	while (*vlen && ((*val)[*vlen - 1] == ' ' || (*val)[*vlen - 1] == '\t'))
		(*vlen)--;
	return 1;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sbx__grpc_call *c = ud;
	size_t n = size * nmemb, len = n, vlen;
	const char *v;

	while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		len--;
	if (len == 0)
		return n;
	if (len > 5 && strncmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', len);
		long st = 0;

		if (sp && (size_t)(sp - data) + 4 <= len && isdigit((unsigned char)sp[1]) &&
		    isdigit((unsigned char)sp[2]) && isdigit((unsigned char)sp[3]))
			st = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
		c->http = st;
		return n;
	}
	if (header_is(data, len, "grpc-status", &v, &vlen)) {
		int code = 0;

		if (vlen == 0 || vlen > 3) {
			set_broken(c, "grpc-status '%.*s' is not a status code",
				   (int)(vlen > 16 ? 16 : vlen), v);
			return n;
		}
		for (size_t i = 0; i < vlen; i++) {
			if (!isdigit((unsigned char)v[i])) {
				set_broken(c, "grpc-status '%.*s' is not a status code", (int)vlen,
					   v);
				return n;
			}
			code = code * 10 + (v[i] - '0');
		}
		c->have_status = 1;
		c->code = code > SBX__GRPC_UNAUTHENTICATED ? SBX__GRPC_UNKNOWN : code;
	} else if (header_is(data, len, "grpc-message", &v, &vlen)) {
		percent_decode(c->gmsg, sizeof(c->gmsg), v, vlen);
	} else if (header_is(data, len, "grpc-status-details-bin", &v, &vlen)) {
		free(c->details);
		c->details = vlen <= DETAILS_B64_MAX ? strndup(v, vlen) : NULL;
	} else if (header_is(data, len, "content-type", &v, &vlen)) {
		c->have_ctype = 1;
		c->ctype_ok = vlen >= 16 && strncasecmp(v, "application/grpc", 16) == 0 &&
			      (vlen == 16 || v[16] == '+' || v[16] == ';');
	} else if (c->capture && header_is(data, len, c->capture, &v, &vlen)) {
		size_t k = vlen < sizeof(c->captured) - 1 ? vlen : sizeof(c->captured) - 1;
		for (size_t i = 0; i < k; i++)
			c->captured[i] = (char)(isprint((unsigned char)v[i]) ? v[i] : '?');
		c->captured[k] = '\0';
	}
	return n;
}

/* RPCStatus from grpc-status-details-bin: its message, and a retry policy. */
static void read_details(const struct sbx__grpc_call *c, struct sbx__grpc_status *st)
{
	static const char suffix[] = "/modal.client.RPCRetryPolicy";
	uint8_t *bin;
	size_t dl, n;
	Modal__Client__RPCStatus *rs;

	if (!c->details)
		return;
	dl = strlen(c->details);
	bin = malloc(sbx__base64_decoded_max(dl) + 1);
	if (!bin)
		return;
	/* gRPC sends "-bin" values unpadded, and receivers take padded ones too. */
	rs = sbx__base64_decode(bin, &n, c->details, dl, SBX__BASE64_URL | SBX__BASE64_NOPAD) == 0
		     ? modal__client__rpcstatus__unpack(NULL, n, bin)
		     : NULL;
	free(bin);
	if (!rs)
		return; /* details are advisory: unreadable ones are ignored */
	if (!st->message[0] && rs->message && rs->message[0])
		percent_decode(st->message, sizeof(st->message), rs->message, strlen(rs->message));
	for (size_t i = 0; i < rs->n_details; i++) {
		const char *t = rs->details[i]->type_url;
		size_t tl = t ? strlen(t) : 0;
		Modal__Client__RPCRetryPolicy *rp;

		if (tl < sizeof(suffix) - 1 || strcmp(t + tl - (sizeof(suffix) - 1), suffix) != 0)
			continue;
		rp = modal__client__rpcretry_policy__unpack(NULL, rs->details[i]->value.len,
							    rs->details[i]->value.data);
		if (rp && isfinite(rp->retry_after_secs) && rp->retry_after_secs >= 0 &&
		    rp->retry_after_secs <= 86400)
			st->retry_after = rp->retry_after_secs;
		if (rp)
			modal__client__rpcretry_policy__free_unpacked(rp, NULL);
		break;
	}
	modal__client__rpcstatus__free_unpacked(rs, NULL);
}

/* gRPC's mapping of HTTP statuses that are not 200. */
static int http_to_grpc(long http)
{
	switch (http) {
	case 400:
		return SBX__GRPC_INTERNAL;
	case 401:
		return SBX__GRPC_UNAUTHENTICATED;
	case 403:
		return SBX__GRPC_PERMISSION_DENIED;
	case 404:
		return SBX__GRPC_UNIMPLEMENTED;
	case 429:
	case 502:
	case 503:
	case 504:
		return SBX__GRPC_UNAVAILABLE;
	default:
		return SBX__GRPC_UNKNOWN;
	}
}

/* ===== Calls ===== */

static void grpc_timeout(char *dst, size_t n, uint64_t ms)
{
	if (ms < 1)
		ms = 1;
	if (ms <= 99999999u)
		snprintf(dst, n, "grpc-timeout: %llum", (unsigned long long)ms);
	else
		snprintf(dst, n, "grpc-timeout: %lluS", (unsigned long long)(ms / 1000u));
}

static int md_ok(const char *s, int name)
{
	if (!s || (name && !*s))
		return 0;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch >= 0x7f || (name && (ch == ':' || isupper(ch) || ch == ' ')))
			return 0;
	}
	return 1;
}

/* Headers carry credentials (token secret, JWT): wiped before they are freed. */
static void free_hdrs(struct curl_slist *hdrs)
{
	for (struct curl_slist *l = hdrs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(hdrs);
}

static int add_header(struct curl_slist **l, const char *line)
{
	struct curl_slist *n = curl_slist_append(*l, line);

	if (!n)
		return -1;
	*l = n;
	return 0;
}

static int add_call(struct sbx__grpc_set *s, struct sbx__grpc_call *c);

int sbx__grpc_start(struct sbx__grpc_set *s,
		    struct sbx__grpc_call **out,
		    const char *method,
		    void *framed,
		    size_t len,
		    const struct sbx__grpc_opts *o,
		    sbx__grpc_msg_cb cb,
		    void *arg)
{
	struct sbx__grpc_chan *ch = s->ch;
	struct sbx__grpc_call *c;
	uint8_t *f = framed;
	uint64_t now = sbx__grpc_now_ms(), left;
	size_t msg_len;
	char line[1024], *url = NULL;
	int bad = 0;

	if (!method || method[0] != '/' ||
	    strlen(method) >= sizeof(((struct sbx__grpc_call *)0)->method) ||
	    len < SBX__GRPC_PREFIX || len - SBX__GRPC_PREFIX > UINT32_MAX)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "grpc: bad call to '%.64s'", method ? method : "(null)");
	for (size_t i = 0; i < o->md_n; i++)
		if (!md_ok(o->md[i].name, 1) || !md_ok(o->md[i].value, 0))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "grpc: %s: metadata '%.64s' has a name or value that "
					      "cannot be sent as a header",
					      method,
					      md_ok(o->md[i].name, 1) ? o->md[i].name : "?");
	c = calloc(1, sizeof(*c));
	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	snprintf(c->method, sizeof(c->method), "%s", method);
	c->cb = cb;
	c->arg = arg;
	c->max_msg = o->max_msg ? o->max_msg : SBX__GRPC_MAX_MSG_DEFAULT;
	c->unary = o->unary;
	c->kill = o->kill;
	c->capture = o->capture;
	c->set = s;
	msg_len = len - SBX__GRPC_PREFIX;
	f[0] = 0;
	f[1] = (uint8_t)(msg_len >> 24);
	f[2] = (uint8_t)(msg_len >> 16);
	f[3] = (uint8_t)(msg_len >> 8);
	f[4] = (uint8_t)msg_len;
	left = o->deadline_ms > now ? o->deadline_ms - now : 0;
	if (left == 0) {
		/* Nothing is sent once the deadline has passed. */
		c->done = 1;
		c->cc = CURLE_OPERATION_TIMEDOUT;
		goto link;
	}
	c->easy = curl_easy_init();
	if (!c->easy || asprintf(&url, "%s%s", ch->base, method) < 0) {
		url = NULL;
		bad = 1;
	}
	bad |= add_header(&c->hdrs, "Content-Type: application/grpc") < 0;
	bad |= add_header(&c->hdrs, "TE: trailers") < 0;
	bad |= add_header(&c->hdrs, "Expect:") < 0;
	bad |= add_header(&c->hdrs, "Accept:") < 0;
	bad |= add_header(&c->hdrs, "User-Agent: grpc-c-sandboxio/" SBX_VERSION_STRING) < 0;
	grpc_timeout(line, sizeof(line), left);
	bad |= add_header(&c->hdrs, line) < 0;
	for (size_t i = 0; i < o->md_n; i++) {
		char *h = NULL;
		if (asprintf(&h, "%s: %s", o->md[i].name, o->md[i].value) < 0) {
			bad = 1;
			continue;
		}
		bad |= add_header(&c->hdrs, h) < 0;
		/* Metadata may be a credential: no copy outlives its use. */
		explicit_bzero(h, strlen(h));
		free(h);
	}
	if (bad) {
		free(url);
		free_hdrs(c->hdrs);
		if (c->easy)
			curl_easy_cleanup(c->easy);
		free(c);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	curl_easy_setopt(c->easy, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, ch->h2c ? "http" : "https");
	if (ch->h2c)
		curl_easy_setopt(c->easy, CURLOPT_NOPROXY, "*"); /* h2c cannot cross a proxy */
	curl_easy_setopt(c->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, framed);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->easy, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(c->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->easy, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(c->easy, CURLOPT_TCP_KEEPINTVL, 10L);
	c->deadline = o->deadline_ms;
link:
	c->next = s->calls;
	s->calls = c;
	if (c->easy && add_call(s, c) < 0) {
		s->calls = c->next;
		free_hdrs(c->hdrs);
		curl_easy_cleanup(c->easy);
		free(c);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "grpc: %s: libcurl would not take the call", method);
	}
	*out = c;
	return 0;
}

/* Hands a call to libcurl, with the time left and its way to the connection. */
static int join_multi(struct sbx__grpc_set *s, struct sbx__grpc_call *c, long version, int fresh)
{
	uint64_t now = sbx__grpc_now_ms();
	uint64_t left = c->deadline > now ? c->deadline - now : 1;

	curl_easy_setopt(c->easy, CURLOPT_HTTP_VERSION, version);
	curl_easy_setopt(c->easy, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, (long)(left > LONG_MAX ? LONG_MAX : left));
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(left < (uint64_t)CONNECT_MAX_MS ? (long)left : CONNECT_MAX_MS));
	if (curl_multi_add_handle(s->multi, c->easy) != CURLM_OK)
		return -1;
	c->added = 1;
	return 0;
}

/*
 * libcurl before 8.0 (Debian 12 ships 7.88) breaks a reused h2c connection
 * that was opened with prior knowledge: it layers HTTP/2 onto it a second
 * time and the call fails with "Error in the HTTP2 framing layer" (curl
 * issue 10634, fixed in 8.0). So on such a libcurl, a set opens its h2c
 * connection with one call (prior knowledge, a fresh connection), and the
 * calls that join it ask for plain HTTP/2, which reuses a multiplexed
 * connection without switching protocols; they wait until the connection
 * is up. Sets are not pooled then: each opens its own connection. TLS
 * connections (ALPN) have no such problem.
 */
static int add_call(struct sbx__grpc_set *s, struct sbx__grpc_call *c)
{
	struct sbx__grpc_chan *ch = s->ch;

	if (!ch->fresh_h2c)
		return join_multi(
			s, c,
			ch->h2c ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS, 0);
	if (s->conn_up)
		return join_multi(s, c, CURL_HTTP_VERSION_2_0, 0);
	if (!s->leader) {
		s->leader = c;
		return join_multi(s, c, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 1);
	}
	return 0; /* waits for the leader's connection */
}

/* fresh_h2c: notices the set's connection coming up, and lets waiting calls join. */
static void promote(struct sbx__grpc_set *s)
{
	if (!s->ch->fresh_h2c)
		return;
	if (!s->conn_up && s->leader) {
		curl_off_t pt = 0;

		curl_easy_getinfo(s->leader->easy, CURLINFO_PRETRANSFER_TIME_T, &pt);
		if (pt > 0)
			s->conn_up = 1;
		else if (s->leader->done)
			s->leader = NULL; /* it never got a connection: the next call tries */
	}
	for (struct sbx__grpc_call *c = s->calls; c; c = c->next) {
		if (c->added || !c->easy || c->done)
			continue;
		if (add_call(s, c) < 0) {
			c->done = 1;
			c->cc = CURLE_FAILED_INIT;
		}
	}
}

static struct sbx__grpc_call *next_done(struct sbx__grpc_set *s)
{
	CURLMsg *m;
	int q;

	while ((m = curl_multi_info_read(s->multi, &q))) {
		struct sbx__grpc_call *c = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
		if (c) {
			c->done = 1;
			c->cc = m->data.result;
		}
	}
	for (struct sbx__grpc_call *c = s->calls; c; c = c->next) {
		if (!c->done && c->kill && __atomic_load_n(c->kill, __ATOMIC_SEQ_CST)) {
			c->done = 1;
			c->killed = 1;
		}
		if (c->done && !c->reported) {
			c->reported = 1;
			return c;
		}
	}
	return NULL;
}

int sbx__grpc_set_step(struct sbx__grpc_set *s, int timeout_ms, struct sbx__grpc_call **done)
{
	int running = 0;
	CURLMcode mc;

	*done = next_done(s);
	if (*done)
		return 0;
	mc = curl_multi_perform(s->multi, &running);
	promote(s);
	if (mc == CURLM_OK && !(*done = next_done(s)))
		mc = curl_multi_poll(s->multi, NULL, 0, timeout_ms > 0 ? timeout_ms : 0, NULL);
	if (mc == CURLM_OK && !*done) {
		mc = curl_multi_perform(s->multi, &running);
		promote(s);
		*done = next_done(s);
	}
	if (mc != CURLM_OK)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE, "grpc: libcurl: %s",
				      curl_multi_strerror(mc));
	return 0;
}

/* How a finished call ended: fills st, returns 0 or records the error. */
static int outcome(struct sbx__grpc_call *c, struct sbx__grpc_status *st)
{
	long ver = 0;

	if (c->easy && c->cc == CURLE_OK && c->http)
		curl_easy_getinfo(c->easy, CURLINFO_HTTP_VERSION, &ver);
	if (c->killed || (!c->done && !c->broken)) {
		st->code = SBX__GRPC_CANCELLED;
		st->canceled = 1;
		snprintf(st->message, sizeof(st->message), "canceled");
		return sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE, "%s: canceled",
				      c->method);
	}
	if (c->cb_rc) {
		st->code = SBX__GRPC_CANCELLED;
		st->canceled = 1;
		st->cb_rc = c->cb_rc;
		snprintf(st->message, sizeof(st->message), "stopped by its receiver");
		return sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE,
				      "%s: stopped by its receiver", c->method);
	}
	if (!c->broken && c->cc != CURLE_OK && c->cc != CURLE_OPERATION_TIMEDOUT &&
	    (c->in_msg || c->pfx_got))
		set_broken(c, "stream cut in the middle of a message: got %zu of %u bytes (%s)",
			   c->in_msg ? c->msg_got : c->pfx_got,
			   c->in_msg ? c->need : SBX__GRPC_PREFIX, curl_easy_strerror(c->cc));
	if (!c->broken && c->cc == CURLE_OK) {
		if (c->http == 200 && ver && ver != CURL_HTTP_VERSION_2_0)
			set_broken(c, "the server did not answer in HTTP/2");
		else if (c->http != 200)
			; /* mapped below */
		else if (c->in_msg || c->pfx_got)
			set_broken(c,
				   "stream ended in the middle of a message: got %zu of %u bytes",
				   c->in_msg ? c->msg_got : c->pfx_got,
				   c->in_msg ? c->need : SBX__GRPC_PREFIX);
		else if (!c->have_status)
			set_broken(c, "response ended without grpc-status");
		else if ((c->body_seen || c->have_ctype) && !c->ctype_ok)
			set_broken(c, "the response's content-type is not application/grpc");
		else if (c->code == SBX__GRPC_OK && c->unary && c->nmsgs != 1)
			set_broken(c, "a unary response carried no message");
	}
	snprintf(st->captured, sizeof(st->captured), "%s", c->captured);
	if (c->broken) {
		st->code = SBX__GRPC_INTERNAL;
		st->broken = 1;
		snprintf(st->message, sizeof(st->message), "%s", c->why);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE, "grpc: %s (%s)", c->why,
				      c->method);
	}
	if (c->cc == CURLE_OPERATION_TIMEDOUT) {
		st->code = SBX__GRPC_DEADLINE_EXCEEDED;
		snprintf(st->message, sizeof(st->message), "the call's deadline passed");
	} else if (c->cc != CURLE_OK) {
		st->code = SBX__GRPC_UNAVAILABLE;
		snprintf(st->message, sizeof(st->message), "%s", curl_easy_strerror(c->cc));
	} else if (c->http != 200) {
		st->code = http_to_grpc(c->http);
		snprintf(st->message, sizeof(st->message), "HTTP status %ld", c->http);
	} else {
		st->code = c->code;
		snprintf(st->message, sizeof(st->message), "%s", c->gmsg);
		read_details(c, st);
	}
	if (st->code == SBX__GRPC_OK)
		return 0;
	return sbx__error_set(sbx__grpc_sbx_code(st->code), SBX_ERRCLASS_REMOTE, "%s: %s: %s",
			      c->method, sbx__grpc_code_name(st->code),
			      st->message[0] ? st->message : "(no message)");
}

/* Unlinks and frees a call, finished or not (an unfinished one is aborted). */
static void call_destroy(struct sbx__grpc_call *c, int conn_lost)
{
	struct sbx__grpc_call **pp;

	for (pp = &c->set->calls; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->set->leader == c)
		c->set->leader = NULL;
	if (conn_lost) {
		/* The connection may be gone: the next call of the set opens one. */
		c->set->conn_up = 0;
	}
	if (c->easy) {
		if (c->added)
			curl_multi_remove_handle(c->set->multi, c->easy);
		curl_easy_cleanup(c->easy);
	}
	free_hdrs(c->hdrs);
	if (c->msg) {
		explicit_bzero(c->msg, c->msg_alloc);
		free(c->msg);
	}
	free(c->details);
	free(c);
}

int sbx__grpc_call_end(struct sbx__grpc_call *c, struct sbx__grpc_status *st)
{
	struct sbx__grpc_status local;
	int rc;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	st->retry_after = -1;
	rc = outcome(c, st);
	call_destroy(c, st->code == SBX__GRPC_UNAVAILABLE && !st->broken);
	return rc;
}
