/*
 * server/rest-list.c: GET /sandboxes and /v2/sandboxes of E2B's REST
 * control plane: the sandboxes (v1: the running ones; v2: running and
 * paused, or the states asked for), filtered by E2B's metadata query,
 * state, template and start time (startedAfter includes its instant),
 * newest first unless order=asc, a page at a time (a token names the last
 * one given). The metadata filter's
 * percent-decoding reads hex digits with util/base64.h's sbx__hexval (the
 * library's util/ helpers are shared with the server and the command; its
 * other internals are not).
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

enum MHD_Result sbxs_rest_list(struct sbxs_server *srv, struct MHD_Connection *c, int v2)
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
	int running_wanted = 1, paused_wanted = v2, desc = 0;
	struct MHD_Response *r;

	if (meta_q && *meta_q && parse_metadata_filter(meta_q, &filter) < 0)
		return sbxs_rest_error(c, 400, "Invalid metadata query: expected key=value pairs");
	if (state && *state) {
		char buf[128], *save = NULL, *w;

		snprintf(buf, sizeof(buf), "%s", state);
		running_wanted = paused_wanted = 0;
		for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
			if (strcmp(w, "running") == 0) {
				running_wanted = 1;
			} else if (strcmp(w, "paused") == 0) {
				paused_wanted = 1;
			} else {
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
	/* Newest first unless asked otherwise, as E2B lists. */
	desc = !order || strcmp(order, "desc") == 0;
	if (token && *token && parse_token(token, &tok_started, tok_id) < 0) {
		json_decref(filter);
		return sbxs_rest_error(c, 400, "Invalid next token");
	}
	if (after_q && parse_rfc3339(after_q, &after) < 0) {
		json_decref(filter);
		return sbxs_rest_error(c, 400, "startedAfter must be an RFC 3339 time");
	}
	pthread_mutex_lock(&srv->mu);
	running = 0;
	for (size_t k = 0; k < srv->nboxes; k++) {
		struct sbxs_box *b = srv->boxes[k];

		running += !b->paused;
		if (b->paused ? !paused_wanted : !running_wanted)
			continue;
		if (filter && !metadata_matches(b->metadata, filter))
			continue;
		if (tmpl && *tmpl && strcmp(tmpl, b->template_id) != 0)
			continue;
		if (after_q && b->started_wall < after) /* inclusive of the instant */
			continue;
		items[n].started = b->started_wall;
		memcpy(items[n].id, b->id, 21);
		items[n].j = sbxs_box_listed_json(b, 0);
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
