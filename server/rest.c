/*
 * server/rest.c: E2B's REST control plane, as the E2B-compatible server
 * of `sandboxio serve --api e2b` gives it: create (POST /sandboxes), get,
 * delete, timeout, refreshes and connect (/sandboxes/{id}[/...]) and list
 * (GET /sandboxes and /v2/sandboxes, with E2B's metadata filter and
 * pagination). The server around it is described in server/server-int.h.
 *
 * NewSandbox is parsed strictly: a wrong type is a 400, and a field this
 * server cannot honour is refused with 400 naming it, never ignored. A
 * sandbox's lifetime is fixed at create (the library's deadline); timeout
 * and connect move its end within that bound only. The network fields are
 * server/rest-net.c's. The metadata filter's percent-decoding reads hex
 * digits with util/base64.h's sbx__hexval (the library's util/ helpers are
 * shared with the server and the command; its other internals are not).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"
#include "util/base64.h"

#define ENVD_VERSION "0.5.7" /* >= 0.5.7: octet-stream uploads; < 0.6.2: no file metadata */
#define CLIENT_ID "6532622b"
#define DEFAULT_TIMEOUT_S 15 /* E2B's API default */

/* ===== Times and representations ===== */

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static int64_t end_wall(const struct sbxs_box *b)
{
	return b->started_wall + (int64_t)(b->end_mono - b->started_mono);
}

/* Sandbox (create, connect). */
static json_t *box_sandbox_json(const struct sbxs_box *b)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:n}", "templateID", b->template_id,
			      "alias", b->template_id, "sandboxID", b->id, "clientID", CLIENT_ID,
			      "envdVersion", ENVD_VERSION, "domain", "trafficAccessToken");

	if (j && b->secure)
		json_object_set_new(j, "envdAccessToken", json_string(b->token));
	return j;
}

/* ListedSandbox, or SandboxDetail with detail (mu held). */
static json_t *box_listed_json(const struct sbxs_box *b, int detail)
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

static int is_lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static int is_alnum(char ch)
{
	return is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

/* A path component: [a-z0-9]+ joined by ".", "_", "__" or runs of "-". */
static int path_component_ok(const char *p, size_t n)
{
	size_t k = 0;

	for (;;) {
		size_t run = 0, sep;

		while (k < n && is_lower_alnum(p[k]))
			k++, run++;
		if (run == 0)
			return 0;
		if (k == n)
			return 1;
		sep = k;
		if (p[k] == '.') {
			k++;
		} else if (p[k] == '_') {
			k += k + 1 < n && p[k + 1] == '_' ? 2 : 1;
		} else {
			while (k < n && p[k] == '-')
				k++;
		}
		if (k == sep)
			return 0;
	}
}

/* A domain component: [A-Za-z0-9] or [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]. */
static int domain_ok(const char *p, size_t n)
{
	size_t k = 0, start = 0;
	const char *colon = memchr(p, ':', n);
	size_t host = colon ? (size_t)(colon - p) : n;

	if (colon) {
		if (colon + 1 == p + n || (size_t)(p + n - colon - 1) > 5)
			return 0;
		for (const char *q = colon + 1; q < p + n; q++)
			if (*q < '0' || *q > '9')
				return 0;
	}
	for (; k <= host; k++) {
		if (k == host || p[k] == '.') {
			if (k == start || !is_alnum(p[start]) || !is_alnum(p[k - 1]))
				return 0;
			start = k + 1;
		} else if (!is_alnum(p[k]) && p[k] != '-') {
			return 0;
		}
	}
	return 1;
}

/*
 * Whether ref is an image reference as the Engine's grammar (the
 * distribution reference) writes one: [domain[:port]/]path[/path...]
 * [:tag][@algorithm:hex], the name at most 255 characters. It is checked
 * here, before the Engine API sees it in a URL path, so that "../x" or a
 * query never reaches it. A hand-written check: the grammar is small and
 * no Debian library offers it in C. Returns 0, or -1 with why.
 */
int sbxs_image_ref_ok(const char *ref, char *why, size_t wsize)
{
	const char *at = strchr(ref, '@'), *name_end, *tag = NULL, *p, *slash, *last_slash;
	size_t name_len;
	int first = 1;

	name_end = at ? at : ref + strlen(ref);
	last_slash = NULL;
	for (p = ref; p < name_end; p++)
		if (*p == '/')
			last_slash = p;
	for (p = last_slash ? last_slash : ref; p < name_end; p++)
		if (*p == ':')
			tag = p;
	name_len = (size_t)((tag ? tag : name_end) - ref);
	if (name_len == 0 || name_len > 255) {
		snprintf(why, wsize, "the name must be 1 to 255 characters");
		return -1;
	}
	if (tag) {
		size_t tl = (size_t)(name_end - tag - 1);

		if (tl == 0 || tl > 128 || !(is_alnum(tag[1]) || tag[1] == '_')) {
			snprintf(why, wsize,
				 "a tag is 1 to 128 of [A-Za-z0-9_.-], not starting "
				 "with . or -");
			return -1;
		}
		for (p = tag + 1; p < name_end; p++)
			if (!is_alnum(*p) && *p != '_' && *p != '.' && *p != '-') {
				snprintf(why, wsize, "a tag is 1 to 128 of [A-Za-z0-9_.-]");
				return -1;
			}
	}
	if (at) {
		const char *colon = strchr(at + 1, ':');
		size_t hex = colon ? strlen(colon + 1) : 0;

		if (!colon || colon == at + 1 || hex < 32 || hex > 128) {
			snprintf(why, wsize, "a digest is algorithm:hex (32 to 128 digits)");
			return -1;
		}
		for (p = at + 1; p < colon; p++)
			if (!is_alnum(*p) && *p != '-' && *p != '_' && *p != '+' && *p != '.') {
				snprintf(why, wsize, "a digest's algorithm is [A-Za-z0-9+._-]");
				return -1;
			}
		for (p = colon + 1; *p; p++)
			if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
			      (*p >= 'A' && *p <= 'F'))) {
				snprintf(why, wsize, "a digest's value is hexadecimal");
				return -1;
			}
	}
	for (p = ref; p < ref + name_len; p = slash + 1, first = 0) {
		size_t n;

		slash = memchr(p, '/', (size_t)(ref + name_len - p));
		if (!slash)
			slash = ref + name_len;
		n = (size_t)(slash - p);
		/* The first of several components is a registry when it looks like
		 * a host (a dot, a port, or localhost). */
		if (first && slash < ref + name_len &&
		    (memchr(p, '.', n) || memchr(p, ':', n) ||
		     (n == 9 && memcmp(p, "localhost", 9) == 0))) {
			if (!domain_ok(p, n)) {
				snprintf(why, wsize, "'%.*s' is not a registry host[:port]",
					 (int)(n > 64 ? 64 : n), p);
				return -1;
			}
		} else if (!path_component_ok(p, n)) {
			snprintf(why, wsize,
				 "each path component is lower-case letters and digits joined by "
				 "'.', '_', '__' or '-'");
			return -1;
		}
		if (slash == ref + name_len)
			break;
	}
	return 0;
}

/*
 * NewSandbox, strictly: a wrong type is a parse error; a field that this
 * server cannot honour (or does not know) is collected in bad. JSON null
 * stands for an absent optional field, as E2B's API reads it.
 */
static int parse_create(
	json_t *body, struct sbxs_create_req *cr, char *bad, size_t bsize, char *err, size_t esize)
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
			if (!sbxs_string_map(v)) {
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
			if (key[0] == 's' && json_is_false(v))
				sbxs_add_bad(bad, bsize,
					     "secure false (every sandbox's envd here needs its "
					     "access token)");
			else if (key[0] != 's')
				cr->internet = json_is_true(v);
		} else if (strcmp(key, "network") == 0) {
			if (json_is_null(v))
				continue;
			if (sbxs_parse_network(v, cr, bad, bsize, err, esize) < 0)
				return -1;
		} else if (strcmp(key, "autoPause") == 0) {
			if (json_is_true(v))
				sbxs_add_bad(
					bad, bsize,
					"autoPause true (a sandbox is killed at its timeout here, "
					"never paused)");
			else if (!json_is_false(v) && !json_is_null(v))
				sbxs_add_bad(bad, bsize, "autoPause (not a boolean)");
		} else if (strcmp(key, "autoResume") == 0) {
			json_t *en = json_object_get(v, "enabled");

			if (json_is_null(v) ||
			    (json_is_object(v) && json_object_size(v) == 1 && json_is_false(en)))
				continue;
			sbxs_add_bad(bad, bsize, "autoResume (nothing is ever paused here)");
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
				sbxs_add_bad(
					bad, bsize,
					"lifecycle (only onTimeout \"kill\" and autoResume false)");
		} else {
			snprintf(what, sizeof(what), "%.64s", key);
			sbxs_add_bad(bad, bsize, what);
		}
	}
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
static int build_policy(struct sbxs_server *srv,
			const struct sbxs_create_req *cr,
			struct sbxs_box *b,
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
		char why[160];

		if (sbxs_image_ref_ok(cr->template_id, why, sizeof(why)) < 0) {
			snprintf(err, esize, "templateID is not a valid image reference: %s", why);
			goto fail;
		}
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
	if (sbxs_apply_network(cr, p, &b->network, err, esize) < 0)
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

static enum MHD_Result
rest_create(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	char err[1024] = "", bad[1024] = "";
	struct sbxs_create_req cr;
	struct MHD_Response *r;
	json_error_t je;
	json_t *body;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	struct sbxs_box *b;
	unsigned status;
	int rc;

	body = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
	if (!body)
		return sbxs_rest_error(c, 400, "Error when parsing request: %s", je.text);
	if (parse_create(body, &cr, bad, sizeof(bad), err, sizeof(err)) < 0) {
		json_decref(body);
		return sbxs_rest_error(c, 400, "Error when parsing request: %s", err);
	}
	if (bad[0]) {
		json_decref(body);
		return sbxs_rest_error(
			c, 400,
			"NewSandbox has fields this server cannot honour, refused rather "
			"than ignored: %s",
			bad);
	}
	b = sbxs_box_new(srv);
	if (!b) {
		json_decref(body);
		return sbxs_rest_error(c, 500, "out of memory");
	}
	if (build_policy(srv, &cr, b, &p, &status, err, sizeof(err)) < 0) {
		json_decref(body);
		sbxs_box_free(b);
		return sbxs_rest_error(c, status, "%s", err);
	}
	json_decref(body);
	if (b->secure && sbxs_random_hex(b->token, 32) < 0) {
		sbxs_box_free(b);
		sbx_policy_free(p);
		return sbxs_rest_error(c, 500, "getrandom failed");
	}
	pthread_mutex_lock(&srv->mu);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->mu);
		sbxs_box_free(b);
		sbx_policy_free(p);
		return sbxs_rest_error(c, 503, "the server is shutting down");
	}
	if (srv->nboxes + (size_t)srv->creating >= MAX_BOXES) {
		pthread_mutex_unlock(&srv->mu);
		sbxs_box_free(b);
		sbx_policy_free(p);
		return sbxs_rest_error(
			c, 429,
			"You have reached the maximum number of concurrent sandboxes on "
			"this server (%d)",
			MAX_BOXES);
	}
	srv->creating++;
	pthread_mutex_unlock(&srv->mu);

	/* The lifetime counts from before the create, as the library's does. */
	b->started_wall = wall_ms();
	b->started_mono = sbxs_mono_ms();
	rc = sbx_sandbox_create(&s, srv->b, p);
	sbx_policy_free(p);
	if (rc < 0) {
		snprintf(err, sizeof(err), "%s", sbx_error_last()->message);
		pthread_mutex_lock(&srv->mu);
		srv->creating--;
		pthread_mutex_unlock(&srv->mu);
		sbxs_box_free(b);
		return sbxs_rest_error(c, create_status(rc), "%s", err);
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
	if (srv->stopping || sbxs_register_locked(srv, b) < 0) {
		int stopping = srv->stopping;

		pthread_mutex_unlock(&srv->mu);
		b->s = s;
		sbxs_box_free(b);
		return sbxs_rest_error(c, stopping ? 503 : 500,
				       stopping ? "the server is shutting down"
						: "no free sandbox id");
	}
	b->s = s;
	b->refs = 2; /* the registry's and this request's */
	pthread_mutex_unlock(&srv->mu);
	r = sbxs_json_response(box_sandbox_json(b));
	if (r)
		MHD_add_response_header(r, "Sandboxio-Tier", b->tier ? b->tier : "container");
	sbxs_box_unref(b);
	return sbxs_queue(c, 201, r);
}

/* ===== REST: one sandbox ===== */

static enum MHD_Result not_found(struct MHD_Connection *c, const char *id)
{
	return sbxs_rest_error(
		c, 404, "Sandbox \"%.64s\" doesn't exist or you don't have access to it", id);
}

/* A body of exactly one optional integer field: {"timeout": N}. */
static int parse_seconds(struct sbxs_req *rq,
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
static enum MHD_Result change_end(struct sbxs_server *srv,
				  struct MHD_Connection *c,
				  const char *id,
				  json_int_t seconds,
				  enum end_change how,
				  json_t *ok_body)
{
	struct sbxs_box *b = sbxs_box_get(srv, id);
	uint64_t now = sbxs_mono_ms(), want;
	int64_t life_wall;

	if (!b) {
		json_decref(ok_body);
		return not_found(c, id);
	}
	if ((uint64_t)seconds > srv->max_timeout_s) {
		json_decref(ok_body);
		sbxs_box_unref(b);
		return sbxs_rest_error(c, 400, "Timeout cannot be greater than %llu seconds",
				       (unsigned long long)srv->max_timeout_s);
	}
	want = now + (uint64_t)seconds * 1000;
	pthread_mutex_lock(&srv->mu);
	if (want > b->life_mono + 1000) {
		life_wall = b->started_wall + (int64_t)(b->life_mono - b->started_mono);
		pthread_mutex_unlock(&srv->mu);
		json_decref(ok_body);
		sbxs_box_unref(b);
		{
			json_t *t = rfc3339(life_wall);
			char when[48];

			snprintf(when, sizeof(when), "%s", json_string_value(t));
			json_decref(t);
			return sbxs_rest_error(
				c, 400,
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

		sbxs_box_unref(b);
		return sbxs_reply_json(c, 200, j);
	}
	sbxs_box_unref(b);
	return sbxs_reply_empty(c, 204);
}

static enum MHD_Result rest_sandbox(struct sbxs_server *srv,
				    struct MHD_Connection *c,
				    struct sbxs_req *rq,
				    const char *method,
				    const char *id,
				    const char *sub)
{
	static const char *const unsupported[] = {"pause",   "resume", "fork",	 "snapshots",
						  "network", "logs",   "metrics"};
	char err[512];
	json_int_t secs = 0;
	int given;
	struct sbxs_box *b;

	if (!*sub) {
		if (strcmp(method, "GET") == 0) {
			json_t *j;

			b = sbxs_box_get(srv, id);
			if (!b)
				return not_found(c, id);
			pthread_mutex_lock(&srv->mu);
			j = box_listed_json(b, 1);
			pthread_mutex_unlock(&srv->mu);
			sbxs_box_unref(b);
			return sbxs_reply_json(c, 200, j);
		}
		if (strcmp(method, "DELETE") == 0) {
			b = sbxs_box_get(srv, id);
			if (!b)
				return not_found(c, id);
			sbxs_retire(b);
			sbxs_box_unref(b); /* the last reference closes it now, unless in use */
			return sbxs_reply_empty(c, 204);
		}
		return sbxs_rest_error(c, 405, "Method %.16s is not allowed on /sandboxes/{id}",
				       method);
	}
	if (strcmp(sub, "timeout") == 0 || strcmp(sub, "refreshes") == 0 ||
	    strcmp(sub, "connect") == 0) {
		int is_timeout = sub[0] == 't', is_connect = sub[0] == 'c';

		if (strcmp(method, "POST") != 0)
			return sbxs_rest_error(c, 405,
					       "Method %.16s is not allowed on /sandboxes/{id}/%s",
					       method, sub);
		if (parse_seconds(rq, is_timeout || is_connect ? "timeout" : "duration", is_timeout,
				  &secs, &given, err, sizeof(err)) < 0)
			return sbxs_rest_error(c, 400, "%s", err);
		if (is_connect) {
			json_t *j;

			b = sbxs_box_get(srv, id);
			if (!b)
				return not_found(c, id);
			j = box_sandbox_json(b);
			sbxs_box_unref(b);
			if (!given)
				return sbxs_reply_json(c, 200, j);
			return change_end(srv, c, id, secs, END_EXTEND, j);
		}
		if (!is_timeout && (!given || secs > 3600))
			return sbxs_rest_error(c, 400, "duration must be 0 to 3600 seconds");
		return change_end(srv, c, id, secs, is_timeout ? END_SET : END_EXTEND, NULL);
	}
	for (size_t k = 0; k < sizeof(unsupported) / sizeof(unsupported[0]); k++)
		if (strcmp(sub, unsupported[k]) == 0) {
			b = sbxs_box_get(srv, id);
			if (!b)
				return not_found(c, id);
			sbxs_box_unref(b);
			return sbxs_rest_error(
				c, 501, "/sandboxes/{id}/%s is not supported by this server", sub);
		}
	return sbxs_rest_error(c, 404, "Not found: %.16s /sandboxes/%.64s/%.64s", method, id, sub);
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
			hi = sbx__hexval(s[k + 1]);
			lo = sbx__hexval(s[k + 2]);
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
		/* A key holding NUL is refused before the value is made: the
		 * value is only handed over (and freed) by json_object_set_new. */
		if (strlen(pair) != (size_t)kl) {
			rc = -1;
			break;
		}
		v = json_stringn(eq + 1, (size_t)vl);
		if (!v || json_object_set_new(f, pair, v) < 0) {
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

static enum MHD_Result rest_list(struct sbxs_server *srv, struct MHD_Connection *c, int v2)
{
	const char *meta_q = sbxs_query(c, "metadata"), *state = v2 ? sbxs_query(c, "state") : NULL;
	const char *limit_q = v2 ? sbxs_query(c, "limit") : NULL,
		   *token = v2 ? sbxs_query(c, "nextToken") : NULL;
	const char *order = v2 ? sbxs_query(c, "order") : NULL,
		   *after_q = v2 ? sbxs_query(c, "startedAfter") : NULL;
	const char *tmpl = v2 ? sbxs_query(c, "template") : NULL;
	struct listed items[MAX_BOXES];
	json_t *filter = NULL, *arr;
	char tok_id[21] = "", next[64] = "", total[24];
	int64_t tok_started = 0, after = 0;
	size_t n = 0, limit = 100, running;
	int running_wanted = 1, desc = 0;
	struct MHD_Response *r;

	if (meta_q && *meta_q && parse_metadata_filter(meta_q, &filter) < 0)
		return sbxs_rest_error(c, 400, "Invalid metadata query: expected key=value pairs");
	if (state && *state) {
		char buf[128], *save = NULL, *w;

		snprintf(buf, sizeof(buf), "%s", state);
		running_wanted = 0;
		for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
			if (strcmp(w, "running") == 0) {
				running_wanted = 1;
			} else if (strcmp(w, "paused") != 0) {
				json_decref(filter);
				return sbxs_rest_error(
					c, 400, "Invalid state '%.32s' (running, paused)", w);
			}
		}
	}
	if (limit_q) {
		char *end;
		long v = strtol(limit_q, &end, 10);

		if (end == limit_q || *end || v < 1 || v > 100) {
			json_decref(filter);
			return sbxs_rest_error(c, 400, "limit must be between 1 and 100");
		}
		limit = (size_t)v;
	}
	if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
		json_decref(filter);
		return sbxs_rest_error(c, 400, "order must be asc or desc");
	}
	desc = order && strcmp(order, "desc") == 0;
	if (token && *token && parse_token(token, &tok_started, tok_id) < 0) {
		json_decref(filter);
		return sbxs_rest_error(c, 400, "Invalid next token");
	}
	if (after_q && parse_rfc3339(after_q, &after) < 0) {
		json_decref(filter);
		return sbxs_rest_error(c, 400, "startedAfter must be an RFC 3339 time");
	}
	pthread_mutex_lock(&srv->mu);
	running = srv->nboxes;
	for (size_t k = 0; running_wanted && k < srv->nboxes; k++) {
		struct sbxs_box *b = srv->boxes[k];

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
	r = sbxs_json_response(arr);
	if (r && next[0])
		MHD_add_response_header(r, "X-Next-Token", next);
	snprintf(total, sizeof(total), "%zu", running);
	if (r)
		MHD_add_response_header(r, "X-Total-Running", total);
	return sbxs_queue(c, 200, r);
}

enum MHD_Result sbxs_rest(struct sbxs_server *srv,
			  struct MHD_Connection *c,
			  struct sbxs_req *rq,
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
		return sbxs_rest_error(c, 405, "Method %.16s is not allowed on /sandboxes", method);
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
	return sbxs_rest_error(c, 404, "Not found: %.16s %.128s", method, url);
}
