/*
 * server/interp.c: the code interpreter's API on the E2B-compatible server,
 * port 49999 of a sandbox, as the official npm @e2b/code-interpreter
 * (2.8.0) calls it: POST /execute (a cell, server/interp-cell.c), POST and
 * GET /contexts, POST /contexts/{id}/restart, DELETE /contexts/{id}, and
 * GET /health. It stands on the library's code contexts
 * (sandboxio/interp.h): a context the SDK creates is named by the library
 * ("ctx-" and hex), the id the SDK is given; the box keeps the handles it
 * made or opened (at most ICTX_MAX; sbxs_box_free() frees them before its
 * sandbox is closed, which ends every context with the sandbox).
 *
 * Authentication is server/server.c's: the sandbox's access token, sent by
 * the SDK as X-Access-Token with /execute and as E2B-Traffic-Access-Token
 * with every call (it is the Sandbox's trafficAccessToken here). Errors are
 * plain text, as the SDK's own server sends them. The bodies (at most 64
 * KiB here) and the paths are parsed by parse_new_context() and
 * parse_context_path(), pure and fuzzed by tests/fuzz/fuzz_e2bci.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

/* ===== Requests (pure: bytes in, fields out) ===== */

/* The body of POST /contexts: language and cwd, both optional. *lang and
 * *cwd point into *root (cwd NULL: the policy's). 0, or -1 with err. */
static int parse_new_context(const char *body,
			     size_t len,
			     json_t **root,
			     const char **lang,
			     const char **cwd,
			     char *err,
			     size_t esize)
{
	static const char *const keys[] = {"language", "cwd", NULL};
	json_error_t je;
	json_t *j, *v;
	const char *bad;

	*root = NULL;
	*lang = "python";
	*cwd = NULL;
	if (len == 0)
		return 0;
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, esize, "the body is not JSON: %s", je.text);
		return -1;
	}
	if (!json_is_object(j)) {
		snprintf(err, esize, "the body must be a JSON object");
		goto fail;
	}
	if ((bad = sbxs_unknown_key(j, keys))) {
		snprintf(err, esize, "unknown field '%.64s' (language, cwd)", bad);
		goto fail;
	}
	v = json_object_get(j, "language");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			snprintf(err, esize, "language must be a string");
			goto fail;
		}
		*lang = sbxs_interp_language(json_string_value(v));
		if (!*lang) {
			snprintf(err, esize,
				 "language '%.64s' is not served by this server (python, bash)",
				 json_string_value(v));
			goto fail;
		}
	}
	v = json_object_get(j, "cwd");
	if (v && !json_is_null(v)) {
		const char *s = json_string_value(v);

		if (!s || s[0] != '/' || json_string_length(v) >= PATH_MAX_LEN ||
		    strlen(s) != json_string_length(v)) {
			snprintf(err, esize, "cwd must be an absolute path");
			goto fail;
		}
		*cwd = s;
	}
	*root = j;
	return 0;
fail:
	json_decref(j);
	return -1;
}

enum ictx_op { IOP_NONE = 0, IOP_LIST, IOP_CREATE, IOP_RESTART, IOP_DELETE };

/* /contexts, /contexts/{id}, /contexts/{id}/restart with the method: the
 * operation and the id (into id, of size idsize). */
static enum ictx_op parse_context_path(const char *method, const char *url, char *id, size_t idsize)
{
	const char *p, *slash;
	size_t n;

	id[0] = '\0';
	if (strncmp(url, "/contexts", 9) != 0)
		return IOP_NONE;
	p = url + 9;
	if (*p == '\0' || strcmp(p, "/") == 0) {
		if (strcmp(method, "GET") == 0)
			return IOP_LIST;
		if (strcmp(method, "POST") == 0)
			return IOP_CREATE;
		return IOP_NONE;
	}
	if (*p != '/')
		return IOP_NONE;
	p++;
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (!sbxs_interp_id_ok(p, n) || n >= idsize)
		return IOP_NONE;
	memcpy(id, p, n);
	id[n] = '\0';
	if (!slash)
		return strcmp(method, "DELETE") == 0 ? IOP_DELETE : IOP_NONE;
	if (strcmp(slash, "/restart") == 0 && strcmp(method, "POST") == 0)
		return IOP_RESTART;
	return IOP_NONE;
}

/* ===== Contexts ===== */

static json_t *context_json(const char *id, const char *lang, const char *cwd)
{
	return json_pack("{s:s, s:s, s:o}", "id", id, "language", lang, "cwd",
			 cwd ? json_string(cwd) : json_null());
}

/* Takes the handle of name out of the box's list (mu not held). */
static struct sbxs_ictx *ictx_take(struct sbxs_box *b, const char *name)
{
	struct sbxs_server *srv = b->srv;
	struct sbxs_ictx *x = NULL;

	pthread_mutex_lock(&srv->mu);
	for (struct sbxs_ictx **pp = &b->ictxs; *pp; pp = &(*pp)->next)
		if (strcmp(sbx_context_name((*pp)->h), name) == 0) {
			x = *pp;
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	return x;
}

struct list_acc {
	json_t *arr;
	struct sbxs_box *b;
};

static int list_one(const char *name, const char *language, void *payload)
{
	struct list_acc *a = payload;
	struct sbxs_server *srv = a->b->srv;
	struct sbxs_ictx *x;
	const char *cwd = NULL;

	pthread_mutex_lock(&srv->mu);
	x = sbxs_ictx_find_locked(a->b, name);
	if (x)
		cwd = x->cwd;
	json_array_append_new(a->arr, context_json(name, language, cwd));
	pthread_mutex_unlock(&srv->mu);
	return 0;
}

static enum MHD_Result
contexts(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq, const char *url)
{
	struct sbxs_box *b = rq->box;
	char id[72], err[1024];
	enum ictx_op op = parse_context_path(rq->method, url, id, sizeof(id));
	sbx_context *h = NULL;
	struct sbxs_ictx *x;
	int rc;

	(void)srv;
	if (op == IOP_NONE)
		return sbxs_interp_error(c, 404, "%.16s %.128s: not found", rq->method, url);
	if (op == IOP_CREATE) {
		sbx_context_options o = SBX_CONTEXT_OPTIONS_INIT;
		const char *lang, *cwd;
		json_t *root;

		if (parse_new_context(rq->body, rq->len, &root, &lang, &cwd, err, sizeof(err)) < 0)
			return sbxs_interp_error(c, 400, "%s", err);
		o.language = lang;
		o.cwd = cwd;
		x = calloc(1, sizeof(*x));
		if (!x || (cwd && !(x->cwd = strdup(cwd)))) {
			free(x);
			json_decref(root);
			return sbxs_interp_error(c, 500, "out of memory");
		}
		if (sbxs_box_acquire(b, 0) < 0) {
			json_decref(root);
			free(x->cwd);
			free(x);
			return sbxs_interp_slot_refused(c, b);
		}
		rc = sbx_context_create(&x->h, b->s, &o);
		if (rc < 0)
			snprintf(err, sizeof(err), "%s", sbx_error_last()->message);
		sbxs_box_release(b, rc);
		json_decref(root);
		if (rc < 0) {
			free(x->cwd);
			free(x);
			return sbxs_interp_error(c, sbxs_interp_status(rc),
						 "cannot create the context: %s", err);
		}
		{
			json_t *j = context_json(sbx_context_name(x->h), sbx_context_language(x->h),
						 x->cwd);

			pthread_mutex_lock(&b->srv->mu);
			if (sbxs_ictx_count_locked(b) < ICTX_MAX) {
				x->next = b->ictxs;
				b->ictxs = x;
				x = NULL;
			}
			pthread_mutex_unlock(&b->srv->mu);
			if (x)
				sbxs_ictx_free(x);
			return sbxs_reply_json(c, 200, j);
		}
	}
	if (op == IOP_LIST) {
		struct list_acc a = {json_array(), b};

		if (!a.arr)
			return sbxs_interp_error(c, 500, "out of memory");
		if (sbxs_box_acquire(b, 0) < 0) {
			json_decref(a.arr);
			return sbxs_interp_slot_refused(c, b);
		}
		rc = sbx_context_list(b->s, list_one, &a);
		if (rc < 0)
			snprintf(err, sizeof(err), "%s", sbx_error_last()->message);
		sbxs_box_release(b, rc);
		if (rc < 0) {
			json_decref(a.arr);
			return sbxs_interp_error(c, sbxs_interp_status(rc),
						 "cannot list the contexts: %s", err);
		}
		return sbxs_reply_json(c, 200, a.arr);
	}
	/* restart, delete */
	if (sbxs_box_acquire(b, 0) < 0)
		return sbxs_interp_slot_refused(c, b);
	if (op == IOP_DELETE) {
		x = ictx_take(b, id);
		if (x) {
			rc = sbx_context_close(x->h);
			x->h = NULL;
			free(x->cwd);
			free(x);
		} else {
			rc = sbx_context_open(&h, b->s, id);
			if (rc == 0)
				rc = sbx_context_close(h);
		}
	} else {
		rc = sbxs_ictx_get(b, id, NULL, &h);
		if (rc >= 0) {
			int kept = rc == 0;

			rc = sbx_context_restart(h);
			if (!kept)
				sbx_context_free(h);
		}
	}
	if (rc < 0)
		snprintf(err, sizeof(err), "%s", sbx_error_last()->message);
	sbxs_box_release(b, rc);
	if (rc == SBX_ENOTFOUND)
		return sbxs_interp_error(c, 404, "Context %s not found", id);
	if (rc < 0)
		return sbxs_interp_error(c, sbxs_interp_status(rc), "Failed to %s context %s: %s",
					 op == IOP_DELETE ? "remove" : "restart", id, err);
	return sbxs_reply_empty(c, 204);
}

/* ===== Routes ===== */

size_t sbxs_interp_limit(const char *url)
{
	return strcmp(url, "/execute") == 0 ? EXEC_BODY_MAX : REST_BODY_MAX;
}

enum MHD_Result sbxs_interp(struct sbxs_server *srv,
			    struct MHD_Connection *c,
			    struct sbxs_req *rq,
			    const char *method,
			    const char *url)
{
	if (rq->too_big)
		return sbxs_interp_error(c, 413, "the request is larger than %zu bytes", rq->limit);
	if (strcmp(url, "/health") == 0) {
		/* The JSON string "OK", as the code interpreter's server says. */
		static const char ok[] = "\"OK\"";
		struct MHD_Response *r;

		if (strcmp(method, "GET") != 0)
			return sbxs_interp_error(c, 405, "method not allowed");
		r = MHD_create_response_from_buffer(sizeof(ok) - 1, (void *)ok,
						    MHD_RESPMEM_PERSISTENT);
		if (r)
			MHD_add_response_header(r, "Content-Type", "application/json");
		return sbxs_queue(c, 200, r);
	}
	if (strcmp(url, "/execute") == 0)
		return strcmp(method, "POST") == 0
			       ? sbxs_interp_execute(srv, c, rq)
			       : sbxs_interp_error(c, 405, "method not allowed");
	return contexts(srv, c, rq, url);
}
