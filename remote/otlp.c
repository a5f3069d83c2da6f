/*
 * remote/otlp.c: the OTLP/HTTP JSON span exporter (see otlp-int.h).
 *
 * One thread per exporter, started with the first span, sends batches
 * from a bounded queue; callers only take a mutex to queue. The thread
 * blocks every signal (a library must not take the caller's signals), keeps
 * one connection, never follows redirects, never goes through a proxy for
 * loopback, and speaks only http and https. At close it sends what is left
 * until a bound passes, then aborts the transfer in flight (libcurl's
 * progress callback) and counts the rest as dropped. Header values (they
 * may be credentials) are wiped when the exporter is freed.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sandboxio/common.h>

#include "remote/otlp-int.h"
#include "util/time.h"

#define BATCH_WAIT_MS 50 /* gathers a few spans before a request */

struct sbx_otlp {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	json_t *queue[SBX_OTLP_QUEUE_MAX];
	size_t head, n;
	int started, stop;
	uint64_t deadline_ms; /* monotonic; set at close */
	pthread_t thread;
	uint64_t dropped, sent;
	char *url;
	char *service;
	long timeout_ms;
	struct curl_slist *headers;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void free_headers(struct curl_slist *h)
{
	for (struct curl_slist *i = h; i; i = i->next)
		explicit_bzero(i->data, strlen(i->data));
	curl_slist_free_all(h);
}

int sbx__otlp_open(struct sbx_otlp **out, const struct sbx__span_sink_config *cfg)
{
	struct sbx_otlp *x = calloc(1, sizeof(*x));
	struct curl_slist *h;

	if (!x)
		return -1;
	x->url = strdup(cfg->url);
	x->service = strdup(cfg->service_name ? cfg->service_name : "sandboxio");
	x->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 10000;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	x->headers = h;
	for (size_t i = 0; h && cfg->headers && cfg->headers[i]; i++) {
		h = curl_slist_append(x->headers, cfg->headers[i]);
		if (h)
			x->headers = h;
	}
	if (!x->url || !x->service || !h) {
		free_headers(x->headers);
		free(x->url);
		free(x->service);
		free(x);
		return -1;
	}
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	pthread_once(&curl_once, curl_global);
	*out = x;
	return 0;
}

/* Aborts the transfer in flight once the close bound has passed. */
static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct sbx_otlp *x = arg;
	int abort_now;

	(void)a, (void)b, (void)c, (void)d;
	pthread_mutex_lock(&x->lock);
	abort_now = x->stop && sbx__mono_ms() >= x->deadline_ms;
	pthread_mutex_unlock(&x->lock);
	return abort_now;
}

static size_t discard(char *p, size_t sz, size_t n, void *arg)
{
	(void)p, (void)arg;
	return sz * n;
}

/* One request with spans[0..k). Returns 1 when the collector took them. */
static int export_batch(struct sbx_otlp *x, CURL *c, json_t **spans, size_t k)
{
	json_t *arr = json_array(), *body;
	char *text = NULL;
	long status = 0, tmo = x->timeout_ms;
	int ok = 0;

	for (size_t i = 0; arr && i < k; i++)
		json_array_append(arr, spans[i]);
	body = json_pack("{s:[{s:{s:[{s:s,s:{s:s}}]},s:[{s:{s:s,s:s},s:o}]}]}", "resourceSpans",
			 "resource", "attributes", "key", "service.name", "value", "stringValue",
			 x->service, "scopeSpans", "scope", "name", "sandboxio", "version",
			 SBX_VERSION_STRING, "spans", arr);
	if (body)
		text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return 0;
	pthread_mutex_lock(&x->lock);
	if (x->stop) {
		uint64_t now = sbx__mono_ms();

		tmo = x->deadline_ms > now ? (long)(x->deadline_ms - now) : 1;
		if (tmo > x->timeout_ms)
			tmo = x->timeout_ms;
	}
	pthread_mutex_unlock(&x->lock);
	curl_easy_setopt(c, CURLOPT_URL, x->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, tmo);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, tmo < 2000 ? tmo : 2000L);
	if (curl_easy_perform(c) == CURLE_OK &&
	    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK)
		ok = status >= 200 && status < 300;
	free(text);
	return ok;
}

static CURL *handle(struct sbx_otlp *x)
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	return c;
}

static void *exporter(void *arg)
{
	struct sbx_otlp *x = arg;
	json_t *batch[SBX_OTLP_BATCH_MAX];
	CURL *c = handle(x);

	for (;;) {
		size_t k = 0;
		int ok;

		pthread_mutex_lock(&x->lock);
		while (x->n == 0 && !x->stop)
			pthread_cond_wait(&x->cond, &x->lock);
		if (x->n > 0 && x->n < SBX_OTLP_BATCH_MAX && !x->stop) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += BATCH_WAIT_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&x->cond, &x->lock, &ts);
		}
		if (x->n == 0 || (x->stop && sbx__mono_ms() >= x->deadline_ms)) {
			/* Done, or out of time: what is left is dropped. */
			for (; x->n; x->n--, x->head = (x->head + 1) % SBX_OTLP_QUEUE_MAX) {
				json_decref(x->queue[x->head]);
				x->dropped++;
			}
			if (x->stop) {
				pthread_mutex_unlock(&x->lock);
				break;
			}
			pthread_mutex_unlock(&x->lock);
			continue;
		}
		while (x->n && k < SBX_OTLP_BATCH_MAX) {
			batch[k++] = x->queue[x->head];
			x->head = (x->head + 1) % SBX_OTLP_QUEUE_MAX;
			x->n--;
		}
		pthread_mutex_unlock(&x->lock);
		ok = c && export_batch(x, c, batch, k);
		pthread_mutex_lock(&x->lock);
		if (ok)
			x->sent += k;
		else
			x->dropped += k;
		pthread_mutex_unlock(&x->lock);
		for (size_t i = 0; i < k; i++)
			json_decref(batch[i]);
	}
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* Starts the thread with every signal blocked, so it never takes the caller's. */
static int start(struct sbx_otlp *x)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&x->thread, NULL, exporter, x);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc == 0;
}

void sbx__otlp_submit(struct sbx_otlp *x, json_t *span)
{
	if (!x || !span) {
		json_decref(span);
		return;
	}
	pthread_mutex_lock(&x->lock);
	if (!x->started && !x->stop)
		x->started = start(x) ? 1 : -1;
	if (x->started != 1 || x->stop || x->n >= SBX_OTLP_QUEUE_MAX) {
		x->dropped++;
		pthread_mutex_unlock(&x->lock);
		json_decref(span);
		return;
	}
	x->queue[(x->head + x->n) % SBX_OTLP_QUEUE_MAX] = span;
	x->n++;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

void sbx__otlp_close(struct sbx_otlp *x, long bound_ms)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->stop = 1;
	x->deadline_ms = sbx__mono_ms() + (uint64_t)(bound_ms > 0 ? bound_ms : 0);
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
	if (x->started == 1)
		pthread_join(x->thread, NULL);
	for (; x->n; x->n--, x->head = (x->head + 1) % SBX_OTLP_QUEUE_MAX)
		json_decref(x->queue[x->head]);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
	free_headers(x->headers);
	free(x->url);
	free(x->service);
	free(x);
}

uint64_t sbx__otlp_dropped(const struct sbx_otlp *x)
{
	uint64_t n;

	if (!x)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&x->lock);
	n = x->dropped;
	pthread_mutex_unlock((pthread_mutex_t *)&x->lock);
	return n;
}

uint64_t sbx__otlp_sent(const struct sbx_otlp *x)
{
	uint64_t n;

	if (!x)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&x->lock);
	n = x->sent;
	pthread_mutex_unlock((pthread_mutex_t *)&x->lock);
	return n;
}

static int sink_open(void **out, const struct sbx__span_sink_config *cfg)
{
	struct sbx_otlp *x;

	if (sbx__otlp_open(&x, cfg) < 0)
		return -1;
	*out = x;
	return 0;
}

static void sink_submit(void *x, json_t *span)
{
	sbx__otlp_submit(x, span);
}

static void sink_close(void *x, long bound_ms)
{
	sbx__otlp_close(x, bound_ms);
}

static uint64_t sink_dropped(const void *x)
{
	return sbx__otlp_dropped(x);
}

const struct sbx__span_sink sbx__otlp_sink = {
	.open = sink_open,
	.submit = sink_submit,
	.close = sink_close,
	.dropped = sink_dropped,
};
