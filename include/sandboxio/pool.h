/*
 * sandboxio/pool.h: opt-in warm pools (docs/pools.md).
 *
 * A pool holds up to size sandboxes created ahead, all under one copy of
 * one policy: one tenant, one image, every limit. ^Each is handed out once
 * by sbx_pool_take() and belongs to the caller from then on: it is closed
 * with sbx_sandbox_close() as usual and ^never returns to the pool. A
 * background thread tops the pool up and ^replaces every idle sandbox
 * older than max_age_ms. ^sbx_pool_free() removes every idle sandbox.
 *
 * Pooled sandboxes are owned by the pool's process like any other and
 * carry the label io.sandboxio.pool=<sbx_pool_id()>: ^when that process
 * dies, the reaper removes them as owner-gone.
 *
 * Part of the public API: include <sandboxio.h>, not this file.
 */
#ifndef SANDBOXIO_POOL_H
#define SANDBOXIO_POOL_H

#include "common.h"
#include "policy.h"
#include "sandbox.h"

SBX_BEGIN_DECL

typedef struct sbx_pool sbx_pool;

#define SBX_POOL_MAX_SIZE 64
#define SBX_POOL_MIN_AGE_MS 1000u

typedef struct {
	unsigned int version;
	/** Idle sandboxes kept ready, 1..SBX_POOL_MAX_SIZE. */
	unsigned int size;
	/** An idle sandbox older than this is removed and replaced, and never
	 *  handed out; SBX_POOL_MIN_AGE_MS..SBX_MAX_TIMEOUT_MS. */
	uint64_t max_age_ms;
	/** The least lifetime a taken sandbox has left before its deadline;
	 *  0: the policy's run timeout. ^The policy's sandbox timeout (after
	 *  the operator config) must be at least max_age_ms + use_ms, else
	 *  SBX_EINVALID. */
	uint64_t use_ms;
} sbx_pool_options;

#define SBX_POOL_OPTIONS_VERSION 1
#define SBX_POOL_OPTIONS_INIT                                                                      \
	{                                                                                          \
		.version = SBX_POOL_OPTIONS_VERSION                                                \
	}

/** Fills opts with defaults (size and max_age_ms 0: to be set). Returns: 0,
 *  SBX_EINVALID, SBX_EVERSION. */
SBX_EXTERN int sbx_pool_options_init(sbx_pool_options *opts, unsigned int version);

/**
 * Makes a pool of sandboxes under policy p on backend b and starts filling
 * it in the background; it returns without waiting for the first one.
 *
 * ^The policy is copied, merged with the backend's operator config and
 * checked by the backend now: what sbx_sandbox_create() would refuse is
 * refused here, and nothing is created. ^A detached policy is refused
 * (SBX_EINVALID): a pooled sandbox always has an owner.
 * @param[out] out written only on success.
 * Ownership: free with sbx_pool_free() before the backend.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_ENOTFOUND (the docker
 * backend's init binary), SBX_EDENIED, SBX_EUNSUPPORTED, SBX_ENOMEM,
 * SBX_ERROR (the thread could not be started).
 */
SBX_EXTERN int
sbx_pool_new(sbx_pool **out, sbx_backend *b, const sbx_policy *p, const sbx_pool_options *opts);

/**
 * Hands out one sandbox of the pool, from any thread. ^An idle sandbox
 * younger than max_age_ms is removed from the pool and given to the caller,
 * exactly once; ^when none is, one is created now, under the same policy,
 * and the call returns 1 instead of 0 (and the pool's misses counter
 * grows). The pool is topped up behind the call.
 * @param[out] out written only on success.
 * Ownership: close with sbx_sandbox_close(); it is never returned to the pool.
 * Returns: 0 (from the pool), 1 (created now), or sbx_sandbox_create()'s errors.
 */
SBX_EXTERN int sbx_pool_take(sbx_sandbox **out, sbx_pool *pool);

/** Counters of a pool, read at one instant. */
typedef struct {
	unsigned int version;
	unsigned int idle;	  /* ready now, younger than max_age_ms */
	unsigned int creating;	  /* being created by the top-up thread */
	uint64_t taken;		  /* handed out from the pool */
	uint64_t misses;	  /* takes that found the pool empty and created one */
	uint64_t expired;	  /* idle sandboxes removed for their age */
	uint64_t create_failures; /* failed creates of the top-up thread */
	int last_error;		  /* the top-up thread's last error code, or 0 */
} sbx_pool_stats;

#define SBX_POOL_STATS_VERSION 1

/** Fills st (st->version must be set). Returns: 0, SBX_EINVALID, SBX_EVERSION. */
SBX_EXTERN int sbx_pool_get_stats(const sbx_pool *pool, sbx_pool_stats *st);

/** The pool's id, the value of its sandboxes' io.sandboxio.pool label. Lent. */
SBX_EXTERN const char *sbx_pool_id(const sbx_pool *pool);

/** The pool's policy, as merged with the operator config. Lent. */
SBX_EXTERN const sbx_policy *sbx_pool_policy(const sbx_pool *pool);

/**
 * Stops the top-up thread and removes every idle sandbox; sandboxes already
 * taken are the caller's and are left alone. ^NULL is a harmless no-op.
 * Returns: 0, or the first removal's error, as sbx_sandbox_close() (the
 * reaper finds what is left).
 */
SBX_EXTERN int sbx_pool_free(sbx_pool *pool);

SBX_END_DECL

#endif
