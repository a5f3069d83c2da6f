/*
 * server/rest-create.c: POST /sandboxes of E2B's REST control plane: a
 * NewSandbox parsed strictly (a wrong type is a 400, and a field this
 * server cannot honour is refused with 400 naming it, never ignored; the
 * network fields are server/rest-net.c's), its templateID checked as an
 * image reference before the Engine sees it, the sandbox's policy, and the
 * sandbox made and registered. Its lifetime is fixed here (the library's
 * deadline); timeout and connect (server/rest.c) move its end within that
 * bound only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

#define DEFAULT_TIMEOUT_S 15 /* E2B's API default */

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
				cr->auto_pause = 1;
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
					if (strcmp(k2, "onTimeout") == 0 && json_is_string(x) &&
					    strcmp(json_string_value(x), "pause") == 0) {
						cr->auto_pause = 1;
						continue;
					}
					if (strcmp(k2, "autoResume") == 0 && json_is_false(x))
						continue;
					ok = 0;
				}
			if (!ok)
				sbxs_add_bad(bad, bsize,
					     "lifecycle (only onTimeout \"kill\" or \"pause\" and "
					     "autoResume "
					     "false)");
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
	/* A sandbox paused at its timeout outlives it: its life is the
	 * server's ceiling, and its timeout the box's end (server/pause.c). */
	if (sbx_policy_new(&p) < 0 || sbx_policy_set_min_tier(p, srv->min_tier) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX,
				      (cr->auto_pause ? srv->max_timeout_s : (uint64_t)t) * 1000) <
		    0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, (uint64_t)t * 1000) < 0) {
		snprintf(err, esize, "%s", sbx_error_last()->message);
		*status = 500;
		goto fail;
	}
	/* "base" is the e2b flavour's image when the server has one (the code
	 * interpreter's default needs the default image's Python libraries);
	 * else it and the code interpreter SDK's default template are the
	 * server's default image. */
	if (srv->e2b_image && (!cr->template_id || strcmp(cr->template_id, "base") == 0)) {
		if (sbx_policy_set_image(p, srv->e2b_image) < 0) {
			snprintf(err, esize, "%s", sbx_error_last()->message);
			*status = 500;
			goto fail;
		}
		b->flavour = 1;
	} else if (cr->template_id && strcmp(cr->template_id, "base") != 0 &&
		   strcmp(cr->template_id, "code-interpreter-v1") != 0) {
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
	b->auto_pause = cr->auto_pause;
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

enum MHD_Result
sbxs_rest_create(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
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
	/* Its ports' own token (server/port.c), needed unless
	 * allowPublicTraffic is true. */
	b->public_traffic = cr.public_traffic == 1;
	if ((b->secure && sbxs_random_hex(b->token, 32) < 0) ||
	    sbxs_random_hex(b->traffic, 32) < 0) {
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
	b->started_mono = sbx__mono_ms();
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
		if (cr.auto_pause)
			b->end_mono =
				b->started_mono +
				(uint64_t)(cr.has_timeout ? cr.timeout : DEFAULT_TIMEOUT_S) * 1000;
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
	r = sbxs_json_response(sbxs_box_sandbox_json(b));
	if (r)
		MHD_add_response_header(r, "Sandboxio-Tier", b->tier ? b->tier : "container");
	sbxs_box_unref(b);
	return sbxs_queue(c, 201, r);
}
