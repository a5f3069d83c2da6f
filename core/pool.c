/*
 * core/pool.c: opt-in warm pools (docs/pools.md), backend-independent.
 *
 * A pool is one policy copy, an array of idle sandboxes made under it, and
 * one top-up thread. The thread is the only one that creates ahead and the
 * only one that removes idle sandboxes for their age; sbx_pool_take() only
 * moves one idle sandbox out of the array, under the lock, so no sandbox is
 * handed out twice. Nothing ever goes back into the array but what the
 * thread created.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "core/sandbox-int.h"
#include "util/error-int.h"

#define BACKOFF_MIN_NS (250ull * 1000000ull)
#define BACKOFF_MAX_NS (30ull * 1000000000ull)

struct idle {
	sbx_sandbox *s;
	uint64_t born_ns; /* taken before the create began: ages are never understated */
};

struct sbx_pool {
	sbx_backend *b;
	sbx_policy *req;    /* the caller's policy, copied: every create merges it again */
	sbx_policy *merged; /* the same, as merged with the operator config */
	char id[40];
	unsigned int size;
	uint64_t max_age_ns;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	struct idle idle[SBX_POOL_MAX_SIZE]; /* oldest first */
	unsigned int n;
	unsigned int creating;
	int stop;
	uint64_t taken, misses, expired, failures;
	int last_error;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sbx_pool_options_init(sbx_pool_options *opts, unsigned int version)
{
	if (!opts)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "options are NULL");
	if (version == 0 || version > SBX_POOL_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "pool options version %u is not known (1..%u)", version,
				      SBX_POOL_OPTIONS_VERSION);
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return 0;
}

/* Removes idle[i] from the array, keeping the order. Called locked. */
static sbx_sandbox *idle_remove(sbx_pool *pool, unsigned int i)
{
	sbx_sandbox *s = pool->idle[i].s;

	memmove(&pool->idle[i], &pool->idle[i + 1], (pool->n - i - 1) * sizeof(pool->idle[0]));
	pool->n--;
	return s;
}

static void *topup_main(void *arg)
{
	sbx_pool *pool = arg;
	uint64_t backoff = 0, retry_at = 0;

	pthread_mutex_lock(&pool->mu);
	while (!pool->stop) {
		uint64_t now = mono_ns(), wake;
		sbx_sandbox *old[SBX_POOL_MAX_SIZE];
		unsigned int nold = 0;
		struct timespec ts;

		/* Age first: an expired sandbox is removed, never handed out. */
		for (unsigned int i = 0; i < pool->n;) {
			if (now - pool->idle[i].born_ns >= pool->max_age_ns) {
				old[nold++] = idle_remove(pool, i);
				pool->expired++;
			} else {
				i++;
			}
		}
		if (nold) {
			pthread_mutex_unlock(&pool->mu);
			for (unsigned int i = 0; i < nold; i++)
				sbx_sandbox_close(old[i]);
			sbx__error_clear();
			pthread_mutex_lock(&pool->mu);
			continue;
		}
		if (pool->n + pool->creating < pool->size && now >= retry_at) {
			sbx_sandbox *s = NULL;
			uint64_t born = now;
			int rc;

			pool->creating++;
			pthread_mutex_unlock(&pool->mu);
			rc = sbx__sandbox_create_pooled(&s, pool->b, pool->req, pool->id);
			sbx__error_clear();
			pthread_mutex_lock(&pool->mu);
			pool->creating--;
			if (rc < 0) {
				pool->failures++;
				pool->last_error = rc;
				backoff = backoff ? backoff * 2 : BACKOFF_MIN_NS;
				if (backoff > BACKOFF_MAX_NS)
					backoff = BACKOFF_MAX_NS;
				retry_at = mono_ns() + backoff;
			} else {
				backoff = 0;
				retry_at = 0;
				/* Even when stopping: sbx_pool_free() removes what is here. */
				pool->idle[pool->n++] = (struct idle){.s = s, .born_ns = born};
			}
			continue;
		}
		/* Sleep until the oldest expires, a retry is due, or a take or free. */
		wake = now + BACKOFF_MAX_NS;
		if (pool->n && pool->idle[0].born_ns + pool->max_age_ns < wake)
			wake = pool->idle[0].born_ns + pool->max_age_ns;
		if (pool->n + pool->creating < pool->size && retry_at && retry_at < wake)
			wake = retry_at;
		ts.tv_sec = (time_t)(wake / 1000000000ull);
		ts.tv_nsec = (long)(wake % 1000000000ull);
		pthread_cond_timedwait(&pool->cv, &pool->mu, &ts);
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

static void pool_destroy(sbx_pool *pool)
{
	sbx_policy_free(pool->req);
	sbx_policy_free(pool->merged);
	pthread_mutex_destroy(&pool->mu);
	pthread_cond_destroy(&pool->cv);
	free(pool);
}

int sbx_pool_new(sbx_pool **out, sbx_backend *b, const sbx_policy *p, const sbx_pool_options *opts)
{
	pthread_condattr_t ca;
	unsigned char rnd[8];
	uint64_t use_ms, life_ms;
	sbx_pool *pool;
	int rc;

	sbx__error_clear();
	if (!out || !b || !p || !opts)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "pool_new: NULL argument");
	if (opts->version == 0 || opts->version > SBX_POOL_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "pool options version %u is not known (1..%u)", opts->version,
				      SBX_POOL_OPTIONS_VERSION);
	if (opts->size < 1 || opts->size > SBX_POOL_MAX_SIZE)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "pool size %u is out of bounds (1..%d)", opts->size,
				      SBX_POOL_MAX_SIZE);
	if (opts->max_age_ms < SBX_POOL_MIN_AGE_MS || opts->max_age_ms > SBX_MAX_TIMEOUT_MS)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "pool max_age_ms %llu is out of bounds (%u..%u)",
				      (unsigned long long)opts->max_age_ms, SBX_POOL_MIN_AGE_MS,
				      SBX_MAX_TIMEOUT_MS);
	if (opts->use_ms > SBX_MAX_TIMEOUT_MS)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "pool use_ms %llu is above %u",
				      (unsigned long long)opts->use_ms, SBX_MAX_TIMEOUT_MS);
	if (p->detached)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "pool_new: a detached policy cannot be pooled; a pooled "
				      "sandbox is owned by the pool's process");
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	pthread_mutex_init(&pool->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pool->cv, &ca);
	pthread_condattr_destroy(&ca);
	pool->b = b;
	pool->size = opts->size;
	pool->max_age_ns = opts->max_age_ms * 1000000ull;
	rc = sbx_policy_dup(&pool->req, p);
	if (rc == 0)
		rc = sbx__sandbox_prepare(&pool->merged, b, pool->req);
	if (rc < 0) {
		pool_destroy(pool);
		return rc;
	}
	use_ms = opts->use_ms ? opts->use_ms : pool->merged->timeout_ms[SBX_TIMEOUT_RUN];
	life_ms = pool->merged->timeout_ms[SBX_TIMEOUT_SANDBOX];
	if (life_ms < opts->max_age_ms + use_ms) {
		pool_destroy(pool);
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "pool: the sandbox timeout (%llu ms) must be at least "
				      "max_age_ms (%llu) + use_ms (%llu), so that a taken sandbox "
				      "has use_ms left",
				      (unsigned long long)life_ms,
				      (unsigned long long)opts->max_age_ms,
				      (unsigned long long)use_ms);
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		pool_destroy(pool);
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_OS, "pool: getrandom failed");
	}
	snprintf(pool->id, sizeof(pool->id), "%ld-%02x%02x%02x%02x%02x%02x%02x%02x", (long)getpid(),
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	snprintf(pool->merged->pool, sizeof(pool->merged->pool), "%s", pool->id);
	rc = pthread_create(&pool->thread, NULL, topup_main, pool);
	if (rc != 0) {
		pool_destroy(pool);
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_OS,
				      "pool: cannot start the top-up thread: %s", strerror(rc));
	}
	*out = pool;
	return 0;
}

int sbx_pool_take(sbx_sandbox **out, sbx_pool *pool)
{
	sbx_sandbox *s = NULL;
	uint64_t now;
	int rc;

	sbx__error_clear();
	if (!out || !pool)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "pool_take: NULL argument");
	pthread_mutex_lock(&pool->mu);
	now = mono_ns();
	for (unsigned int i = 0; i < pool->n; i++) {
		if (now - pool->idle[i].born_ns < pool->max_age_ns) {
			s = idle_remove(pool, i);
			break;
		}
	}
	if (s)
		pool->taken++;
	else
		pool->misses++;
	pthread_cond_signal(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	if (s) {
		*out = s;
		return 0;
	}
	rc = sbx__sandbox_create_pooled(out, pool->b, pool->req, pool->id);
	return rc < 0 ? rc : 1;
}

int sbx_pool_get_stats(const sbx_pool *pool, sbx_pool_stats *st)
{
	sbx_pool *m = (sbx_pool *)pool;
	uint64_t now;

	if (!pool || !st)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "pool_stats: NULL argument");
	if (st->version == 0 || st->version > SBX_POOL_STATS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "pool stats version %u is not known (1..%u)", st->version,
				      SBX_POOL_STATS_VERSION);
	memset(st, 0, sizeof(*st));
	st->version = SBX_POOL_STATS_VERSION;
	pthread_mutex_lock(&m->mu);
	now = mono_ns();
	for (unsigned int i = 0; i < m->n; i++)
		if (now - m->idle[i].born_ns < m->max_age_ns)
			st->idle++;
	st->creating = m->creating;
	st->taken = m->taken;
	st->misses = m->misses;
	st->expired = m->expired;
	st->create_failures = m->failures;
	st->last_error = m->last_error;
	pthread_mutex_unlock(&m->mu);
	return 0;
}

const char *sbx_pool_id(const sbx_pool *pool)
{
	return pool ? pool->id : NULL;
}

const sbx_policy *sbx_pool_policy(const sbx_pool *pool)
{
	return pool ? pool->merged : NULL;
}

int sbx_pool_free(sbx_pool *pool)
{
	int rc = 0;

	if (!pool)
		return 0;
	pthread_mutex_lock(&pool->mu);
	pool->stop = 1;
	pthread_cond_signal(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	pthread_join(pool->thread, NULL);
	/* The thread is gone: nothing else touches the array now. */
	for (unsigned int i = 0; i < pool->n; i++) {
		int c = sbx_sandbox_close(pool->idle[i].s);

		if (c < 0 && rc == 0)
			rc = c;
	}
	pool->n = 0;
	pool_destroy(pool);
	return rc;
}
