/*
 * tests/support/otlp_receiver.c: see otlp_receiver.h. One thread per
 * connection, so a held answer to one request does not hold others; a
 * listening socket bound to 127.0.0.1 by the test itself, so nothing but
 * loopback is ever involved.
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
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/otlp_receiver.h"

#define MAX_BODIES 512

struct otlp_receiver {
	struct MHD_Daemon *mhd;
	char url[64];
	unsigned int status;
	int hold;	   /* answers wait for a release */
	int held;	   /* requests waiting right now */
	int held_too_long; /* the hang guard answered one */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* held, hold changed */
	char *bodies[MAX_BODIES];
	int n;
	char *last_headers; /* "Name: value\n" lines of the last request */
};

struct conn {
	char *body;
	size_t len;
	char *headers;
	size_t hlen;
};

static enum MHD_Result
collect_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct conn *c = cls;
	size_t need = strlen(k) + strlen(v) + 3;
	char *g = realloc(c->headers, c->hlen + need + 1);

	(void)kind;
	if (!g)
		return MHD_NO;
	c->headers = g;
	c->hlen += (size_t)sprintf(c->headers + c->hlen, "%s: %s\n", k, v);
	return MHD_YES;
}

/* Holds the answer until a release, or until the hang guard passes. */
static void hold_answer(struct otlp_receiver *r)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OTLP_HOLD_GUARD_S;
	pthread_mutex_lock(&r->lock);
	r->held++;
	pthread_cond_broadcast(&r->cond);
	while (r->hold && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&r->cond, &r->lock, &until);
	if (r->hold)
		r->held_too_long = 1;
	r->held--;
	pthread_mutex_unlock(&r->lock);
}

static enum MHD_Result answer(void *cls,
			      struct MHD_Connection *mc,
			      const char *url,
			      const char *method,
			      const char *version,
			      const char *upload,
			      size_t *upload_size,
			      void **con_cls)
{
	static const char ok[] = "{}";
	struct otlp_receiver *r = cls;
	struct conn *c = *con_cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	(void)version;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		MHD_get_connection_values(mc, MHD_HEADER_KIND, collect_header, c);
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_size) {
		char *g = realloc(c->body, c->len + *upload_size + 1);

		if (!g)
			return MHD_NO;
		c->body = g;
		memcpy(c->body + c->len, upload, *upload_size);
		c->len += *upload_size;
		c->body[c->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "POST") == 0 && strcmp(url, "/v1/traces") == 0) {
		pthread_mutex_lock(&r->lock);
		if (r->n < MAX_BODIES) {
			r->bodies[r->n++] = c->body ? c->body : strdup("");
			c->body = NULL;
		}
		free(r->last_headers);
		r->last_headers = c->headers;
		c->headers = NULL;
		pthread_mutex_unlock(&r->lock);
	}
	hold_answer(r);
	resp = MHD_create_response_from_buffer(strlen(ok), (void *)ok, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(mc, r->status ? r->status : 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void
done(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode t)
{
	struct conn *c = *con_cls;

	(void)cls, (void)mc, (void)t;
	if (c) {
		free(c->body);
		free(c->headers);
		free(c);
	}
	*con_cls = NULL;
}

struct otlp_receiver *otlp_receiver_start(int hold, unsigned int status)
{
	struct otlp_receiver *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int fd;

	if (!r)
		return NULL;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		free(r);
		return NULL;
	}
	snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
	r->hold = hold;
	r->status = status;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
				  0, NULL, NULL, answer, r, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_NOTIFY_COMPLETED, done, r, MHD_OPTION_END);
	if (!r->mhd) {
		close(fd);
		free(r);
		return NULL;
	}
	return r;
}

void otlp_receiver_release(struct otlp_receiver *r)
{
	pthread_mutex_lock(&r->lock);
	r->hold = 0;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

int otlp_receiver_held(struct otlp_receiver *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->held;
	pthread_mutex_unlock(&r->lock);
	return n;
}

int otlp_receiver_wait_held(struct otlp_receiver *r, int n)
{
	struct timespec until;
	int got, rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OTLP_HOLD_GUARD_S;
	pthread_mutex_lock(&r->lock);
	while (r->held < n && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&r->cond, &r->lock, &until);
	got = r->held;
	pthread_mutex_unlock(&r->lock);
	return got;
}

int otlp_receiver_held_too_long(struct otlp_receiver *r)
{
	int v;

	pthread_mutex_lock(&r->lock);
	v = r->held_too_long;
	pthread_mutex_unlock(&r->lock);
	return v;
}

const char *otlp_receiver_url(const struct otlp_receiver *r)
{
	return r->url;
}

int otlp_receiver_requests(struct otlp_receiver *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

static int is_hex(const char *s, size_t n)
{
	int zero = 1;

	if (!s || strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
		zero &= s[i] == '0';
	}
	return !zero;
}

static int is_decimal(const char *s, int sign)
{
	if (!s || !*s)
		return 0;
	if (sign && *s == '-')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static const char *check_value(json_t *v)
{
	json_t *x;

	if (!json_is_object(v) || json_object_size(v) != 1)
		return "an attribute value is not an object with one field";
	if ((x = json_object_get(v, "stringValue")))
		return json_is_string(x) ? NULL : "stringValue is not a string";
	if ((x = json_object_get(v, "intValue")))
		return json_is_string(x) && is_decimal(json_string_value(x), 1)
			       ? NULL
			       : "intValue is not a decimal string";
	if ((x = json_object_get(v, "boolValue")))
		return json_is_boolean(x) ? NULL : "boolValue is not a boolean";
	if ((x = json_object_get(v, "doubleValue")))
		return json_is_number(x) ? NULL : "doubleValue is not a number";
	if ((x = json_object_get(v, "arrayValue"))) {
		json_t *vals = json_object_get(x, "values"), *e;
		size_t i;

		if (!json_is_array(vals))
			return "arrayValue has no values array";
		json_array_foreach(vals, i, e)
		{
			const char *why = check_value(e);

			if (why)
				return why;
		}
		return NULL;
	}
	return "unknown attribute value type";
}

static const char *check_attributes(json_t *attrs)
{
	json_t *a;
	size_t i;

	if (!attrs)
		return NULL;
	if (!json_is_array(attrs))
		return "attributes is not an array";
	json_array_foreach(attrs, i, a)
	{
		const char *why;

		if (!json_is_string(json_object_get(a, "key")) ||
		    !*json_string_value(json_object_get(a, "key")))
			return "an attribute has no key";
		why = check_value(json_object_get(a, "value"));
		if (why)
			return why;
	}
	return NULL;
}

static const char *check_span(json_t *s)
{
	const char *start = json_string_value(json_object_get(s, "startTimeUnixNano"));
	const char *end = json_string_value(json_object_get(s, "endTimeUnixNano"));
	json_t *parent = json_object_get(s, "parentSpanId"), *kind = json_object_get(s, "kind");
	json_t *status = json_object_get(s, "status");

	if (!is_hex(json_string_value(json_object_get(s, "traceId")), 32))
		return "traceId is not 32 lowercase hex digits";
	if (!is_hex(json_string_value(json_object_get(s, "spanId")), 16))
		return "spanId is not 16 lowercase hex digits";
	if (parent && !is_hex(json_string_value(parent), 16))
		return "parentSpanId is not 16 lowercase hex digits";
	if (!json_is_string(json_object_get(s, "name")) ||
	    !*json_string_value(json_object_get(s, "name")))
		return "a span has no name";
	if (!is_decimal(start, 0) || !is_decimal(end, 0))
		return "span times are not unix nanoseconds as decimal strings";
	if (strlen(start) != 19 || strlen(end) != 19 || strcmp(start, end) > 0)
		return "span times are not nanoseconds of this century, or end before start";
	if (kind && (!json_is_integer(kind) || json_integer_value(kind) < 0 ||
		     json_integer_value(kind) > 5))
		return "kind is not an integer 0..5";
	if (status && (!json_is_integer(json_object_get(status, "code")) ||
		       json_integer_value(json_object_get(status, "code")) < 0 ||
		       json_integer_value(json_object_get(status, "code")) > 2))
		return "status.code is not an integer 0..2";
	return check_attributes(json_object_get(s, "attributes"));
}

const char *otlp_check(json_t *payload)
{
	json_t *rs = json_object_get(payload, "resourceSpans"), *r;
	size_t i;

	if (!json_is_array(rs) || json_array_size(rs) == 0)
		return "no resourceSpans";
	json_array_foreach(rs, i, r)
	{
		json_t *attrs = json_object_get(json_object_get(r, "resource"), "attributes");
		json_t *ss = json_object_get(r, "scopeSpans"), *a, *scope;
		size_t j;
		int has_service = 0;
		const char *why = check_attributes(attrs);

		if (why)
			return why;
		json_array_foreach(attrs, j, a)
		{
			json_t *sv = json_object_get(json_object_get(a, "value"), "stringValue");

			if (strcmp(json_string_value(json_object_get(a, "key")), "service.name") ==
				    0 &&
			    json_is_string(sv) && *json_string_value(sv))
				has_service = 1;
		}
		if (!has_service)
			return "the resource has no service.name";
		if (!json_is_array(ss))
			return "no scopeSpans";
		json_array_foreach(ss, j, scope)
		{
			json_t *spans = json_object_get(scope, "spans"), *s;
			size_t k;

			if (!json_is_array(spans))
				return "scopeSpans without spans";
			json_array_foreach(spans, k, s)
			{
				why = check_span(s);
				if (why)
					return why;
			}
		}
	}
	return NULL;
}

json_t *otlp_receiver_spans(struct otlp_receiver *r)
{
	json_t *all = json_array();
	char *bodies[MAX_BODIES];
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->n;
	for (int i = 0; i < n; i++)
		bodies[i] = strdup(r->bodies[i]);
	pthread_mutex_unlock(&r->lock);
	for (int i = 0; i < n; i++) {
		json_error_t err;
		json_t *p = json_loads(bodies[i], 0, &err), *rs, *ss, *s;
		const char *why = p ? otlp_check(p) : err.text;
		size_t a, b, c;

		if (why)
			fail_msg("OTLP body %d breaks the JSON mapping: %s\n%s", i, why, bodies[i]);
		json_array_foreach(json_object_get(p, "resourceSpans"), a, rs)
			json_array_foreach(json_object_get(rs, "scopeSpans"), b, ss)
				json_array_foreach(json_object_get(ss, "spans"), c, s)
					json_array_append(all, s);
		json_decref(p);
		free(bodies[i]);
	}
	return all;
}

int otlp_receiver_wait(struct otlp_receiver *r, int n, int timeout_ms)
{
	int got = 0;

	for (int waited = 0;; waited += 20) {
		json_t *s = otlp_receiver_spans(r);

		got = (int)json_array_size(s);
		json_decref(s);
		if (got >= n || waited >= timeout_ms)
			return got;
		usleep(20000);
	}
}

char *otlp_receiver_bodies(struct otlp_receiver *r)
{
	size_t len = 0;
	char *all;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->n; i++)
		len += strlen(r->bodies[i]) + 1;
	all = calloc(1, len + 1);
	for (int i = 0; all && i < r->n; i++) {
		strcat(all, r->bodies[i]);
		strcat(all, "\n");
	}
	pthread_mutex_unlock(&r->lock);
	return all;
}

char *otlp_receiver_header(struct otlp_receiver *r, const char *name)
{
	char *found = NULL, *line, *save = NULL, *copy;

	pthread_mutex_lock(&r->lock);
	copy = r->last_headers ? strdup(r->last_headers) : NULL;
	pthread_mutex_unlock(&r->lock);
	for (line = copy ? strtok_r(copy, "\n", &save) : NULL; line && !found;
	     line = strtok_r(NULL, "\n", &save))
		if (strncasecmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ':')
			found = strdup(line + strlen(name) + 2);
	free(copy);
	return found;
}

char *otlp_receiver_service(struct otlp_receiver *r)
{
	char *svc = NULL;
	json_t *p = NULL, *a;
	size_t i;

	pthread_mutex_lock(&r->lock);
	if (r->n)
		p = json_loads(r->bodies[r->n - 1], 0, NULL);
	pthread_mutex_unlock(&r->lock);
	json_array_foreach(
		json_object_get(
			json_object_get(json_array_get(json_object_get(p, "resourceSpans"), 0),
					"resource"),
			"attributes"),
		i, a) if (strcmp(json_string_value(json_object_get(a, "key")), "service.name") == 0)
		svc = strdup(json_string_value(
			json_object_get(json_object_get(a, "value"), "stringValue")));
	json_decref(p);
	return svc;
}

void otlp_receiver_stop(struct otlp_receiver *r)
{
	if (!r)
		return;
	otlp_receiver_release(r);
	MHD_stop_daemon(r->mhd);
	for (int i = 0; i < r->n; i++)
		free(r->bodies[i]);
	free(r->last_headers);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
