/*
 * server/clock.c: the clock and the waits of the server's threads:
 * monotonic milliseconds, and condition variables that wait on that clock
 * until a monotonic deadline (so that a change of the wall clock moves no
 * timeout of a sandbox, a transfer or a stream).
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "server/server-int.h"

uint64_t sbxs_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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
