/*
 * remote/modal/grpc-sync.c: the synchronous gRPC calls
 * (remote/modal/grpc-int.h): a unary call with Modal's retry and throttle
 * rules, and a server-streaming call, each one call in a set of its own,
 * stepped until it ends. Built on grpc.c's calls alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sandboxio.h>

#include "remote/modal/grpc-int.h"
#include "util/error-int.h"

#define STEP_MS 50 /* longest a loop waits before looking at the kill flag */
#define RETRY_BASE_MS 100
#define RETRY_CAP_MS 1000

/* ===== Synchronous calls ===== */

/* Sleeps ms, waking for the kill flag. Returns -1 when killed. */
static int nap(uint64_t ms, const int *kill)
{
	uint64_t end = sbx__grpc_now_ms() + ms;

	for (;;) {
		uint64_t now = sbx__grpc_now_ms(), step;
		struct timespec ts;

		if (kill && __atomic_load_n(kill, __ATOMIC_SEQ_CST))
			return -1;
		if (now >= end)
			return 0;
		step = end - now < STEP_MS ? end - now : STEP_MS;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)step * 1000000L;
		nanosleep(&ts, NULL);
	}
}

static int call_once(struct sbx__grpc_chan *ch,
		     const char *method,
		     void *framed,
		     size_t len,
		     const struct sbx__grpc_opts *o,
		     sbx__grpc_msg_cb cb,
		     void *arg,
		     struct sbx__grpc_status *st)
{
	struct sbx__grpc_set *s = NULL;
	struct sbx__grpc_call *c = NULL, *done = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	st->retry_after = -1;
	rc = sbx__grpc_set_new(&s, ch);
	if (rc < 0)
		return rc;
	rc = sbx__grpc_start(s, &c, method, framed, len, o, cb, arg);
	while (rc == 0 && done != c)
		rc = sbx__grpc_set_step(s, STEP_MS, &done);
	if (rc < 0) {
		sbx__grpc_set_free(s);
		st->code = SBX__GRPC_INTERNAL;
		st->broken = 1;
		return rc;
	}
	rc = sbx__grpc_call_end(c, st);
	sbx__grpc_set_free(s);
	return rc;
}

struct collect {
	uint8_t *data;
	size_t len;
};

static int collect_cb(void *arg, const uint8_t *msg, size_t len)
{
	struct collect *col = arg;

	col->data = malloc(len ? len : 1);
	if (!col->data)
		return -2;
	if (len)
		memcpy(col->data, msg, len);
	col->len = len;
	return 0;
}

int sbx__grpc_unary(struct sbx__grpc_chan *ch,
		    const char *method,
		    void *framed,
		    size_t len,
		    const struct sbx__grpc_opts *o,
		    uint8_t **resp,
		    size_t *resp_len,
		    struct sbx__grpc_status *st)
{
	struct sbx__grpc_status local;
	struct sbx__grpc_md *md;
	struct sbx__grpc_opts oo = *o;
	char key[37], attempt_s[24], throttle_s[24];
	uint64_t start = sbx__grpc_now_ms(), delay = RETRY_BASE_MS;
	uint64_t max_throttle =
		o->max_throttle_ms ? o->max_throttle_ms : SBX__GRPC_THROTTLE_MAX_DEFAULT_MS;
	int attempt = 0, throttles = 0, retries = o->retries < 0 ? 3 : o->retries, rc;

	if (!st)
		st = &local;
	md = calloc(o->md_n + 3, sizeof(*md));
	if (!md)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (o->md_n)
		memcpy(md, o->md, o->md_n * sizeof(*md));
	sbx__grpc_uuid4(key);
	md[o->md_n] = (struct sbx__grpc_md){"x-idempotency-key", key};
	md[o->md_n + 1] = (struct sbx__grpc_md){"x-retry-attempt", attempt_s};
	md[o->md_n + 2] = (struct sbx__grpc_md){"x-throttle-retry-attempt", throttle_s};
	oo.md = md;
	oo.md_n = o->md_n + 3;
	oo.unary = 1;
	for (;;) {
		struct collect col = {0};
		uint64_t now;

		snprintf(attempt_s, sizeof(attempt_s), "%d", attempt);
		snprintf(throttle_s, sizeof(throttle_s), "%d", throttles);
		rc = call_once(ch, method, framed, len, &oo, collect_cb, &col, st);
		if (rc == 0) {
			free(md);
			*resp = col.data;
			*resp_len = col.len;
			return 0;
		}
		free(col.data);
		if (st->canceled || st->broken)
			break;
		now = sbx__grpc_now_ms();
		if (st->retry_after >= 0) {
			/* The server's throttle: wait as asked; it is not a failed attempt. */
			uint64_t wait = (uint64_t)(st->retry_after * 1000.0);

			if (wait < RETRY_BASE_MS)
				wait = RETRY_BASE_MS;
			if (o->max_throttle_ms == UINT64_MAX || now - start + wait > max_throttle ||
			    now + wait >= o->deadline_ms)
				break;
			if (nap(wait, o->kill) < 0)
				goto killed;
			throttles++;
			continue;
		}
		if (!sbx__grpc_retryable(st->code) || attempt >= retries ||
		    now + delay >= o->deadline_ms)
			break;
		if (nap(delay, o->kill) < 0)
			goto killed;
		delay = delay * 2 > RETRY_CAP_MS ? RETRY_CAP_MS : delay * 2;
		attempt++;
	}
	free(md);
	return rc;
killed:
	free(md);
	st->code = SBX__GRPC_CANCELLED;
	st->canceled = 1;
	return sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE, "%s: canceled", method);
}

int sbx__grpc_stream(struct sbx__grpc_chan *ch,
		     const char *method,
		     void *framed,
		     size_t len,
		     const struct sbx__grpc_opts *o,
		     sbx__grpc_msg_cb cb,
		     void *arg,
		     struct sbx__grpc_status *st)
{
	struct sbx__grpc_status local;
	struct sbx__grpc_opts oo = *o;

	oo.unary = 0;
	return call_once(ch, method, framed, len, &oo, cb, arg, st ? st : &local);
}
