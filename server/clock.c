/*
 * server/clock.c: the waits of the server's threads: condition variables
 * that wait on the monotonic clock (util/time.c) until a deadline, so that
 * a change of the wall clock moves no timeout of a sandbox, a transfer or
 * a stream.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "server/server-int.h"

void sbxs_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

void sbxs_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t until_ms)
{
	struct timespec ts = {.tv_sec = (time_t)(until_ms / 1000),
			      .tv_nsec = (long)(until_ms % 1000) * 1000000L};

	pthread_cond_timedwait(cv, mu, &ts);
}
