/*
 * server/rest.c: E2B's REST control plane, as the E2B-compatible server
 * of `sandboxio serve --api e2b` gives it: its routes, and those of one
 * sandbox: get, delete, timeout, refreshes and connect
 * (/sandboxes/{id}[/...]), and whether a template exists
 * (/templates/aliases/{alias}). Create is server/rest-create.c's, list
 * (GET /sandboxes and /v2/sandboxes) server/rest-list.c's, and how a
 * sandbox is shown server/rest-json.c's. The server around it is described
 * in server/server-int.h.
 *
 * A sandbox's lifetime is fixed at create (the library's deadline);
 * timeout and connect move its end within that bound only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

/* ===== One sandbox ===== */

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
	uint64_t now = sbx__mono_ms(), want;
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
			json_t *t = sbxs_rfc3339(life_wall);
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
	if (b->paused) {
		/* The timeout it will have once resumed: the pause keeps its
		 * bound (server/pause.c), which no timeout moves. */
		uint64_t left = want > now ? want - now : 0;

		if (how == END_SET || left > b->left_ms)
			b->left_ms = left;
	} else if (how == END_SET || want > b->end_mono) {
		b->end_mono = want;
	}
	pthread_mutex_unlock(&srv->mu);
	if (ok_body) {
		json_t *j = ok_body;

		sbxs_box_unref(b);
		return sbxs_reply_json(c, 200, j);
	}
	sbxs_box_unref(b);
	return sbxs_reply_empty(c, 204);
}

/* POST /sandboxes/{id}/pause: 204, 409 when already paused, 404 unknown. */
static enum MHD_Result rest_pause(struct sbxs_server *srv,
				  struct MHD_Connection *c,
				  struct sbxs_req *rq,
				  const char *method,
				  const char *id)
{
	char err[512];
	json_t *body = NULL, *v;
	struct sbxs_box *b;
	const char *key;
	int st;

	if (strcmp(method, "POST") != 0)
		return sbxs_rest_error(
			c, 405, "Method %.16s is not allowed on /sandboxes/{id}/pause", method);
	if (rq->len) {
		json_error_t je;

		body = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(body)) {
			json_decref(body);
			return sbxs_rest_error(c, 400, "Error when parsing request: %s",
					       body ? "the body must be an object" : je.text);
		}
		json_object_foreach(body, key, v)
		{
			/* memory false asks for a pause that drops the memory: not kept
			 * here is refused, never taken for a full one. */
			if (strcmp(key, "memory") == 0 && (json_is_null(v) || json_is_true(v)))
				continue;
			snprintf(err, sizeof(err), "%s",
				 strcmp(key, "memory") == 0
					 ? "memory false (a pause without memory) is not supported "
					   "by this server: its pause keeps the memory"
					 : "a field of the pause is not supported here");
			json_decref(body);
			return sbxs_rest_error(c, 400, "%s", err);
		}
		json_decref(body);
	}
	b = sbxs_box_get(srv, id);
	if (!b)
		return not_found(c, id);
	st = sbxs_box_pause(b, err, sizeof(err));
	sbxs_box_unref(b);
	if (st == 404)
		return not_found(c, id);
	if (st)
		return sbxs_rest_error(c, st, "%s", err);
	return sbxs_reply_empty(c, 204);
}

static enum MHD_Result rest_sandbox(struct sbxs_server *srv,
				    struct MHD_Connection *c,
				    struct sbxs_req *rq,
				    const char *method,
				    const char *id,
				    const char *sub)
{
	static const char *const unsupported[] = {"fork", "snapshots", "network", "logs"};
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
			j = sbxs_box_listed_json(b, 1);
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
	if (strcmp(sub, "pause") == 0)
		return rest_pause(srv, c, rq, method, id);
	if (strcmp(sub, "timeout") == 0 || strcmp(sub, "refreshes") == 0 ||
	    strcmp(sub, "connect") == 0 || strcmp(sub, "resume") == 0) {
		int is_timeout = sub[0] == 't', is_connect = sub[0] == 'c' || sub[0] == 'r';

		if (strcmp(method, "POST") != 0)
			return sbxs_rest_error(c, 405,
					       "Method %.16s is not allowed on /sandboxes/{id}/%s",
					       method, sub);
		if (parse_seconds(rq, is_timeout || is_connect ? "timeout" : "duration", is_timeout,
				  &secs, &given, err, sizeof(err)) < 0)
			return sbxs_rest_error(c, 400, "%s", err);
		if (is_connect) {
			json_t *j;
			int st, was_paused;

			b = sbxs_box_get(srv, id);
			if (!b)
				return not_found(c, id);
			pthread_mutex_lock(&srv->mu);
			was_paused = b->paused;
			pthread_mutex_unlock(&srv->mu);
			/* resume is for a paused sandbox only (409 otherwise, as E2B). */
			if (sub[0] == 'r' && !was_paused) {
				sbxs_box_unref(b);
				return sbxs_rest_error(c, 409, "Sandbox \"%s\" is already running",
						       id);
			}
			st = sbxs_box_resume(b, err, sizeof(err));
			j = sbxs_box_sandbox_json(b);
			sbxs_box_unref(b);
			if (st) {
				json_decref(j);
				return st == 404 ? not_found(c, id)
						 : sbxs_rest_error(c, st, "%s", err);
			}
			if (!given)
				return sbxs_reply_json(c, was_paused ? 201 : 200, j);
			return change_end(srv, c, id, secs, was_paused ? END_SET : END_EXTEND, j);
		}
		if (!is_timeout && (!given || secs > 3600))
			return sbxs_rest_error(c, 400, "duration must be 0 to 3600 seconds");
		return change_end(srv, c, id, secs, is_timeout ? END_SET : END_EXTEND, NULL);
	}
	if (strcmp(sub, "metrics") == 0) {
		if (strcmp(method, "GET") != 0)
			return sbxs_rest_error(
				c, 405, "Method %.16s is not allowed on /sandboxes/{id}/metrics",
				method);
		return sbxs_rest_metrics(srv, c, id);
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

/* ===== Templates ===== */

/*
 * GET /templates/aliases/{alias}: whether this server serves a template of
 * that name (Template.exists): "base" (the default image) and any image
 * present in the host's engine, as a create takes them.
 */
static enum MHD_Result
rest_alias(struct sbxs_server *srv, struct MHD_Connection *c, const char *method, const char *alias)
{
	char why[256];
	int rc;

	if (strcmp(method, "GET") != 0)
		return sbxs_rest_error(c, 405, "Method %.16s is not allowed on /templates/aliases",
				       method);
	if (strcmp(alias, "base") == 0)
		return sbxs_reply_json(c, 200,
				       json_pack("{s:s, s:b}", "templateID", "base", "public", 1));
	if (sbxs_image_ref_ok(alias, why, sizeof(why)) < 0)
		return sbxs_rest_error(c, 404, "Template alias '%.128s' not found: %s", alias, why);
	rc = sbx_backend_image_exists(srv->b, alias);
	if (rc < 0)
		return sbxs_rest_error(c, 503,
				       "the engine could not say whether '%.128s' exists: %s",
				       alias, sbx_error_last()->message);
	if (rc == 0)
		return sbxs_rest_error(c, 404, "Template alias '%.128s' not found", alias);
	return sbxs_reply_json(c, 200, json_pack("{s:s, s:b}", "templateID", alias, "public", 0));
}

/* ===== Routes ===== */

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
			return sbxs_rest_create(srv, c, rq);
		if (strcmp(method, "GET") == 0)
			return sbxs_rest_list(srv, c, v2);
		return sbxs_rest_error(c, 405, "Method %.16s is not allowed on /sandboxes", method);
	}
	if (!v2 && strncmp(url, "/templates/aliases/", 19) == 0 && url[19])
		return rest_alias(srv, c, method, url + 19);
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
