/*
 * server/pause.c: pause and resume on the E2B-compatible server: POST
 * /sandboxes/{id}/pause, /resume and /connect of a paused sandbox, and the
 * sweep's pause of a sandbox created with autoPause at its timeout.
 *
 * A pause takes the box's busy slot (waiting for a command in flight, at
 * most PAUSE_WAIT_MS) and keeps it while the sandbox is paused, so nothing
 * runs in it; envd calls get E2B's error (server/server.c). While paused,
 * the box's end is its pause bound (--pause-max), which the sweep enforces
 * as any timeout, and the timeout it had left is kept; a resume gives that
 * back (or the connect's timeout), and moves the lifetime fixed at create
 * by the time paused, as the library moves the sandbox's deadline.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "server/server-int.h"

/* How long a pause waits for a command in flight to give the slot back. */
#define PAUSE_WAIT_MS 10000
/* The timeout a resume without one gives a sandbox paused at its timeout. */
#define AUTO_RESUME_MS 300000

int sbxs_box_pause(struct sbxs_box *b, char *err, size_t esize)
{
	struct sbxs_server *srv = b->srv;
	uint64_t now;
	int rc;

	pthread_mutex_lock(&srv->mu);
	rc = b->paused;
	pthread_mutex_unlock(&srv->mu);
	if (rc) {
		snprintf(err, esize, "Sandbox \"%s\" is already paused", b->id);
		return 409;
	}
	rc = sbxs_box_acquire(b, sbx__mono_ms() + PAUSE_WAIT_MS);
	if (rc == -1) {
		snprintf(err, esize, "Sandbox \"%s\" doesn't exist or you don't have access to it",
			 b->id);
		return 404;
	}
	if (rc == -2) {
		snprintf(err, esize,
			 "Sandbox \"%s\" is running a command: this server pauses a sandbox only "
			 "between commands",
			 b->id);
		return 409;
	}
	pthread_mutex_lock(&srv->mu);
	rc = b->paused;
	pthread_mutex_unlock(&srv->mu);
	if (rc) { /* another pause came first, while this one waited */
		sbxs_box_release(b, 0);
		snprintf(err, esize, "Sandbox \"%s\" is already paused", b->id);
		return 409;
	}
	rc = sbx_sandbox_pause(b->s, srv->pause_max_ms);
	if (rc < 0) {
		snprintf(err, esize, "pause of sandbox \"%s\": %s", b->id,
			 sbx_error_last()->message);
		sbxs_box_release(b, rc);
		return rc == SBX_ENOTFOUND ? 404 : rc == SBX_EDENIED ? 409 : 500;
	}
	pthread_mutex_lock(&srv->mu);
	now = sbx__mono_ms();
	b->paused = 1;
	b->paused_mono = now;
	b->left_ms = b->end_mono > now ? b->end_mono - now : 0;
	b->end_mono =
		now + (srv->pause_max_ms > b->paused_ms ? srv->pause_max_ms - b->paused_ms : 0);
	pthread_mutex_unlock(&srv->mu);
	return 0;
}

int sbxs_box_resume(struct sbxs_box *b, char *err, size_t esize)
{
	struct sbxs_server *srv = b->srv;
	uint64_t now, paused_for;
	int rc;

	pthread_mutex_lock(&srv->mu);
	rc = b->paused && !b->retired;
	pthread_mutex_unlock(&srv->mu);
	if (!rc)
		return 0;
	rc = sbx_sandbox_resume(b->s);
	if (rc < 0) {
		snprintf(err, esize, "resume of sandbox \"%s\": %s", b->id,
			 sbx_error_last()->message);
		if (rc == SBX_ENOTFOUND) {
			sbxs_retire(b);
			return 404;
		}
		return 500;
	}
	pthread_mutex_lock(&srv->mu);
	now = sbx__mono_ms();
	paused_for = now - b->paused_mono;
	b->paused_ms += paused_for;
	b->paused = 0;
	b->life_mono += paused_for;
	b->end_mono = now + b->left_ms;
	if (b->end_mono > b->life_mono)
		b->end_mono = b->life_mono;
	b->busy = 0;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&srv->mu);
	return 0;
}

/* The sweep's side: a box with autoPause whose timeout passed, idle, is
 * paused instead of retired. Returns 1 when it was paused. */
int sbxs_box_auto_pause(struct sbxs_box *b)
{
	char err[512];
	int rc;

	pthread_mutex_lock(&b->srv->mu);
	rc = b->auto_pause && !b->paused && !b->busy && !b->retired;
	/* Its timeout passed: give the pause a moment of life to be taken in. */
	if (rc)
		b->end_mono = sbx__mono_ms() + PAUSE_WAIT_MS;
	pthread_mutex_unlock(&b->srv->mu);
	if (!rc)
		return 0;
	if (sbxs_box_pause(b, err, sizeof(err)) != 0) {
		b->srv->warn("serve: autoPause: %s", err);
		return 0;
	}
	/* It timed out: a resume without a timeout gets E2B's default one. */
	pthread_mutex_lock(&b->srv->mu);
	b->left_ms = AUTO_RESUME_MS;
	pthread_mutex_unlock(&b->srv->mu);
	return 1;
}
