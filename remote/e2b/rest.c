/*
 * remote/e2b/rest.c: HTTP to E2B (libcurl) and its control plane: create,
 * inspect, delete and list sandboxes (E2B's spec/openapi.yml).
 *
 * One libcurl share object keeps connections, TLS sessions and DNS answers
 * across calls and threads, so that a run does not pay a TLS handshake
 * per call. Every handle speaks only http and https, verifies TLS peers and
 * host names, follows no redirect (a redirect could carry the API key
 * elsewhere), and never takes signals. Answers are read into capped
 * buffers; a longer answer stops the transfer. Header values that are
 * credentials (the API key, envd's access token) are wiped before the
 * header list is freed, and any echo of them in a provider's message is
 * replaced before the message is recorded.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sandboxio.h>

#include "remote/e2b/e2b-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/time.h"

#define LIST_PAGE_LIMIT 100
#define LIST_PAGES_MAX 1000 /* 100000 sandboxes: a server that pages forever is cut off */

uint64_t sbx__e2b_now_ms(void)
{
	return sbx__mono_ms();
}

int sbx__e2b_valid_id(const char *id)
{
	size_t n = 0;

	if (!id)
		return 0;
	for (; id[n]; n++)
		if (!isalnum((unsigned char)id[n]) && id[n] != '-' && id[n] != '_')
			return 0;
	return n >= 1 && n <= 64;
}

/* ===== Transport ===== */

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct sbx__e2b_resp *rs = arg;
	size_t len = sz * n;
	size_t cap = rs->body.cap;

	if (len > cap - rs->body.len) {
		rs->too_big = 1;
		return 0; /* stops the transfer */
	}
	if (sbx__buf_append(&rs->body, p, len) < 0)
		return 0;
	return len;
}

/* Copies a header's value (trimmed) when the line is "name: value". */
static int header_value(const char *line, size_t len, const char *name, char *dst, size_t n)
{
	size_t nl = strlen(name), v, e;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return 0;
	for (v = nl + 1; v < len && (line[v] == ' ' || line[v] == '\t'); v++)
		;
	for (e = len; e > v && isspace((unsigned char)line[e - 1]); e--)
		;
	if (e - v >= n)
		return -1; /* too long: not taken */
	for (size_t i = v; i < e; i++)
		if (!isprint((unsigned char)line[i]))
			return -1;
	memcpy(dst, line + v, e - v);
	dst[e - v] = '\0';
	return 1;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct sbx__e2b_resp *rs = arg;
	size_t len = sz * n;

	/* A new response (after a 100 Continue): forget the earlier one's. */
	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
		rs->next_token[0] = '\0';
		rs->tier[0] = '\0';
	}
	if (header_value(p, len, "X-Next-Token", rs->next_token, sizeof(rs->next_token)) < 0)
		rs->next_token[0] = '\0';
	if (header_value(p, len, "Sandboxio-Tier", rs->tier, sizeof(rs->tier)) < 0)
		snprintf(rs->tier, sizeof(rs->tier), "?"); /* present but unreadable */
	return len;
}

CURL *sbx__e2b_easy(struct sbx__e2b *e, const char *url, long timeout_ms)
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_SHARE, e->share);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sandboxio/" SBX_VERSION_STRING);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms > 0 && timeout_ms < e->api_timeout_ms ? timeout_ms
									  : e->api_timeout_ms);
	if (timeout_ms > 0)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	return c;
}

/* Appends "name: value" to h; frees h and returns NULL when out of memory. */
static struct curl_slist *add(struct curl_slist *h, const char *name, const char *value)
{
	struct curl_slist *n;
	char *line = NULL;
	size_t len;

	if (asprintf(&line, "%s: %s", name, value) < 0) {
		sbx__e2b_headers_free(h);
		return NULL;
	}
	len = strlen(line);
	n = curl_slist_append(h, line);
	explicit_bzero(line, len);
	free(line);
	if (!n) {
		sbx__e2b_headers_free(h);
		return NULL;
	}
	return n;
}

struct curl_slist *sbx__e2b_headers(struct sbx__e2b *e,
				    const struct sbx__e2b_box *box,
				    int api,
				    const char *content_type)
{
	struct curl_slist *h = NULL;

	/* "Expect:" off: no round trip waiting for 100 Continue before a body. */
	h = curl_slist_append(NULL, "Expect:");
	if (h && content_type)
		h = add(h, "Content-Type", content_type);
	if (h && api)
		h = add(h, "X-API-Key", e->api_key);
	if (h && box && box->token)
		h = add(h, "X-Access-Token", box->token);
	if (h && box && e->sandbox_url) {
		char port[16];

		snprintf(port, sizeof(port), "%d", SBX_E2B_ENVD_PORT);
		h = add(h, "E2b-Sandbox-Id", box->id);
		if (h)
			h = add(h, "E2b-Sandbox-Port", port);
	}
	return h;
}

void sbx__e2b_headers_free(struct curl_slist *h)
{
	for (struct curl_slist *i = h; i; i = i->next)
		if (i->data)
			explicit_bzero(i->data, strlen(i->data));
	curl_slist_free_all(h);
}

void sbx__e2b_resp_clear(struct sbx__e2b_resp *rs)
{
	sbx__buf_clear(&rs->body);
}

/* The error of a failed transfer, naming the URL (never a header). */
static int transport_error(
	CURLcode cc, const char *method, const char *url, long timeout_ms, const char *detail)
{
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_REMOTE,
				      "e2b: %s %.300s: no answer within %ld ms", method, url,
				      timeout_ms);
	if (cc == CURLE_OUT_OF_MEMORY)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	return sbx__error_set(SBX_EUNAVAILABLE, SBX_ERRCLASS_REMOTE,
			      "e2b: %s %.300s: cannot reach it: %s", method, url,
			      detail && *detail ? detail : curl_easy_strerror(cc));
}

CURL *sbx__e2b_prepare(struct sbx__e2b *e,
		       const struct sbx__e2b_req *rq,
		       struct sbx__e2b_resp *rs,
		       struct curl_slist **h_out)
{
	struct curl_slist *h;
	CURL *c;

	memset(rs, 0, sizeof(*rs));
	*h_out = NULL;
	rs->body.cap = rq->max ? rq->max : SBX_E2B_JSON_MAX;
	c = sbx__e2b_easy(e, rq->url, rq->timeout_ms);
	h = sbx__e2b_headers(e, rq->box, rq->api, rq->content_type);
	for (size_t i = 0; h && rq->extra && rq->extra[i]; i++) {
		struct curl_slist *n = curl_slist_append(h, rq->extra[i]);

		if (!n) {
			sbx__e2b_headers_free(h);
			h = NULL;
		} else {
			h = n;
		}
	}
	if (!c || !h) {
		curl_easy_cleanup(c);
		sbx__e2b_headers_free(h);
		sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
		return NULL;
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
	if (strcmp(rq->method, "GET") == 0)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	if (rq->content_type) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, rs);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, rs);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, rs->errbuf);
	*h_out = h;
	return c;
}

int sbx__e2b_finish(CURL *c, CURLcode cc, const struct sbx__e2b_req *rq, struct sbx__e2b_resp *rs)
{
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rs->status);
	if (rs->too_big)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_REMOTE,
				      "e2b: %s %.300s: the answer is longer than %zu bytes",
				      rq->method, rq->url, rs->body.cap);
	if (cc != CURLE_OK)
		return transport_error(cc, rq->method, rq->url, rq->timeout_ms, rs->errbuf);
	return 0;
}

int sbx__e2b_http(struct sbx__e2b *e, const struct sbx__e2b_req *rq, struct sbx__e2b_resp *rs)
{
	struct curl_slist *h = NULL;
	CURLcode cc;
	CURL *c;
	int rc;

	c = sbx__e2b_prepare(e, rq, rs, &h);
	if (!c)
		return SBX_ENOMEM;
	cc = curl_easy_perform(c);
	rc = sbx__e2b_finish(c, cc, rq, rs);
	curl_easy_cleanup(c);
	sbx__e2b_headers_free(h);
	return rc;
}

/* ===== Errors ===== */

/* Replaces every occurrence of secret in s (NUL-terminated) with "<redacted>". */
static void scrub(char *s, size_t n, const char *secret)
{
	size_t sl = secret ? strlen(secret) : 0;
	char *hit;

	if (sl < 4)
		return;
	while ((hit = strstr(s, secret))) {
		static const char r[] = "<redacted>";
		size_t tail = strlen(hit + sl);

		if (sizeof(r) - 1 <= sl) {
			memcpy(hit, r, sizeof(r) - 1);
			memmove(hit + sizeof(r) - 1, hit + sl, tail + 1);
		} else {
			size_t keep = (size_t)(hit - s) + sizeof(r) - 1;

			if (keep >= n) {
				*hit = '\0';
				return;
			}
			if (keep + tail >= n)
				tail = n - 1 - keep;
			memmove(hit + sizeof(r) - 1, hit + sl, tail);
			hit[sizeof(r) - 1 + tail] = '\0';
			memcpy(hit, r, sizeof(r) - 1);
		}
	}
}

void sbx__e2b_sanitize(
	struct sbx__e2b *e, char *dst, size_t n, const char *src, size_t len, const char *token)
{
	size_t o = 0, lim = n - 1;

	if (lim > SBX_E2B_MSG_MAX)
		lim = SBX_E2B_MSG_MAX;
	for (size_t i = 0; src && i < len && o < lim; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[o++] = ch >= 0x20 && ch < 0x7f    ? (char)ch
			   : ch == '\n' || ch == '\t' ? ' '
						      : '?';
	}
	dst[o] = '\0';
	scrub(dst, n, e->api_key);
	scrub(dst, n, token);
}

int sbx__e2b_status_error(struct sbx__e2b *e,
			  const char *what,
			  const char *sandbox_id,
			  const struct sbx__e2b_resp *rs)
{
	json_t *j = NULL;
	const char *msg = NULL;
	char clean[SBX_E2B_MSG_MAX + 1] = "";
	int code;

	if (rs->body.len)
		j = json_loadb(rs->body.data, rs->body.len, 0, NULL);
	if (json_is_object(j))
		msg = json_string_value(json_object_get(j, "message"));
	if (msg)
		sbx__e2b_sanitize(e, clean, sizeof(clean), msg, strlen(msg), NULL);
	else if (rs->body.len)
		sbx__e2b_sanitize(e, clean, sizeof(clean), rs->body.data, rs->body.len, NULL);
	/* The edge proxy's answer for a sandbox that no longer exists. */
	if (rs->status == 502 && json_is_object(j) && json_object_get(j, "sandboxId") && msg &&
	    strstr(msg, "sandbox was not found")) {
		json_decref(j);
		code = sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %.64s is gone (%s: %s)",
				      sandbox_id ? sandbox_id : "?", what, clean);
		sbx__error_http(rs->status);
		return code;
	}
	json_decref(j);
	switch (rs->status) {
	case 400:
	case 422:
		code = SBX_EINVALID;
		break;
	case 401:
	case 403:
		code = SBX_EDENIED;
		break;
	case 404:
		code = SBX_ENOTFOUND;
		break;
	case 429:
	case 502:
	case 503:
	case 504:
		code = SBX_EUNAVAILABLE;
		break;
	case 507:
		code = SBX_ETOOBIG;
		break;
	default:
		code = SBX_EENGINE;
		break;
	}
	code = sbx__error_set(code, SBX_ERRCLASS_REMOTE, "e2b: %s: HTTP %ld%s%s", what, rs->status,
			      clean[0] ? ": " : "", clean);
	sbx__error_http(rs->status);
	return code;
}

/* ===== Control plane ===== */

int sbx__e2b_api(struct sbx__e2b *e,
		 const char *method,
		 const char *path,
		 const char *body,
		 long timeout_ms,
		 const char *what,
		 const char *sandbox_id,
		 json_t **out,
		 struct sbx__e2b_resp *rs_out)
{
	_sbx_cleanup_free_ char *url = NULL;
	struct sbx__e2b_resp rs;
	struct sbx__e2b_req rq = {
		.method = method,
		.api = 1,
		.content_type = body ? "application/json" : NULL,
		.body = body,
		.body_len = body ? strlen(body) : 0,
		.timeout_ms = timeout_ms > 0 ? timeout_ms : e->api_timeout_ms,
	};
	json_error_t jerr;
	int rc;

	if (asprintf(&url, "%s%s", e->api_url, path) < 0)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	rq.url = url;
	rc = sbx__e2b_http(e, &rq, &rs);
	if (rc == 0 && (rs.status < 200 || rs.status > 299))
		rc = sbx__e2b_status_error(e, what, sandbox_id, &rs);
	if (rc == 0 && out) {
		*out = NULL;
		if (rs.body.len) {
			*out = json_loadb(rs.body.data, rs.body.len, JSON_REJECT_DUPLICATES, &jerr);
			if (!*out)
				rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
						    "e2b: %s: the answer is not JSON (%.100s at "
						    "byte %d)",
						    what, jerr.text, jerr.position);
		}
	}
	if (rs_out)
		*rs_out = rs;
	else
		sbx__e2b_resp_clear(&rs);
	return rc;
}

int sbx__e2b_delete(struct sbx__e2b *e, const char *id, long timeout_ms)
{
	char path[128], what[128];
	int rc;

	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	snprintf(what, sizeof(what), "delete sandbox %s", id);
	rc = sbx__e2b_api(e, "DELETE", path, NULL, timeout_ms, what, id, NULL, NULL);
	if (rc == SBX_ENOTFOUND) {
		/* Gone already (its timeout passed, or someone else deleted it). */
		sbx__error_clear();
		return 0;
	}
	return rc;
}

int sbx__e2b_get(
	struct sbx__e2b *e, const char *id, long timeout_ms, json_t **out, struct sbx__e2b_resp *rs)
{
	char path[128], what[128];
	int rc;

	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	snprintf(what, sizeof(what), "get sandbox %s", id);
	rc = sbx__e2b_api(e, "GET", path, NULL, timeout_ms, what, id, out, rs);
	if (rc == 0 && !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: get sandbox %s: the answer is not a JSON object", id);
	}
	return rc;
}

/* "k=v" with both URL-escaped, appended to the filter (the SDKs' encoding). */
static int filter_add(struct sbx__buf *f, const char *k, const char *v)
{
	char *ek = curl_easy_escape(NULL, k, 0), *ev = curl_easy_escape(NULL, v, 0);
	int rc = -1;

	if (ek && ev)
		rc = sbx__buf_printf(f, "%s%s=%s", f->len ? "&" : "", ek, ev);
	curl_free(ek);
	curl_free(ev);
	return rc;
}

int sbx__e2b_list(struct sbx__e2b *e,
		  const char *tenant,
		  const char *owner_host,
		  int (*cb)(json_t *item, void *arg),
		  void *arg)
{
	struct sbx__buf f = {0};
	char *filter = NULL, token[sizeof(((struct sbx__e2b_resp *)0)->next_token)] = "";
	int rc = 0, stop = 0;

	if (filter_add(&f, SBX_OWNER_KEY_MANAGED, SBX_OWNER_MANAGED_VALUE) < 0 ||
	    (tenant && filter_add(&f, SBX_OWNER_KEY_PREFIX "tenant", tenant) < 0) ||
	    (owner_host && filter_add(&f, SBX_OWNER_KEY_PREFIX "owner-host", owner_host) < 0) ||
	    !(filter = curl_easy_escape(NULL, f.data, 0))) {
		sbx__buf_clear(&f);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	sbx__buf_clear(&f);
	for (int page = 0; !stop; page++) {
		_sbx_cleanup_free_ char *path = NULL;
		char *etok = NULL;
		json_t *list = NULL, *item;
		struct sbx__e2b_resp rs;
		size_t i;

		if (page >= LIST_PAGES_MAX) {
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					    "e2b: list sandboxes: still more after %d pages",
					    LIST_PAGES_MAX);
			break;
		}
		if (token[0] && !(etok = curl_easy_escape(NULL, token, 0))) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
			break;
		}
		if (asprintf(&path, "/v2/sandboxes?metadata=%s&state=running&limit=%d%s%s", filter,
			     LIST_PAGE_LIMIT, etok ? "&nextToken=" : "", etok ? etok : "") < 0)
			path = NULL;
		curl_free(etok);
		if (!path) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
			break;
		}
		rc = sbx__e2b_api(e, "GET", path, NULL, 0, "list sandboxes", NULL, &list, &rs);
		if (rc == 0 && !json_is_array(list))
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					    "e2b: list sandboxes: the answer is not a JSON array");
		if (rc < 0) {
			json_decref(list);
			sbx__e2b_resp_clear(&rs);
			break;
		}
		json_array_foreach(list, i, item)
		{
			if (!json_is_object(item))
				continue;
			if (cb(item, arg) != 0) {
				stop = 1;
				break;
			}
		}
		json_decref(list);
		if (!rs.next_token[0] || strcmp(rs.next_token, token) == 0)
			stop = 1; /* the last page, or a server repeating itself */
		snprintf(token, sizeof(token), "%s", rs.next_token);
		sbx__e2b_resp_clear(&rs);
	}
	curl_free(filter);
	return rc;
}
