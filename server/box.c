/*
 * server/box.c: the sandboxes of the E2B-compatible server ("boxes"):
 * the registry, their references, retirement, the busy slot, the sweep
 * of those whose timeout has passed and the retirement of all at stop; also
 * the random ids and access tokens they get.
 *
 * Boxes are reference counted: the registry holds one reference, and so
 * does each request and run that uses one. DELETE, the timeout sweep and a
 * killed run retire a box (it leaves the registry, so REST says 404 and
 * envd 502 at once) and the last reference closes the sandbox. A library
 * call in progress on a retired box is ended with sbx_sandbox_kill(), the
 * one call that may come from another thread. The library lets one thread
 * use a sandbox at a time, so a box has one busy slot that runs and file
 * calls take in turn.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "server/server-int.h"

/* ===== Ids ===== */

static int random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* 20 characters of [a-z0-9], as E2B's sandbox ids (uniformly: bytes past
 * the last whole multiple of 36 are drawn again). */
static int random_id(char out[21])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[32];
	size_t n = 0;

	while (n < 20) {
		if (random_bytes(r, sizeof(r)) < 0)
			return -1;
		for (size_t k = 0; k < sizeof(r) && n < 20; k++)
			if (r[k] < 252)
				out[n++] = alphabet[r[k] % 36];
	}
	out[20] = '\0';
	return 0;
}

/* bytes random bytes as 2 * bytes hex digits and a NUL (an access token). */
int sbxs_random_hex(char *out, size_t bytes)
{
	unsigned char r[64];

	if (bytes > sizeof(r) || random_bytes(r, bytes) < 0)
		return -1;
	for (size_t k = 0; k < bytes; k++)
		snprintf(out + 2 * k, 3, "%02x", r[k]);
	explicit_bzero(r, sizeof(r));
	return 0;
}

/* ===== Sandboxes ===== */

struct sbxs_box *sbxs_box_new(struct sbxs_server *srv)
{
	struct sbxs_box *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->srv = srv;
	b->refs = 1;
	sbxs_cond_init(&b->cv);
	return b;
}

/* Registers b (mu held) under a fresh id. */
int sbxs_register_locked(struct sbxs_server *srv, struct sbxs_box *b)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		int taken = 0;

		if (random_id(b->id) < 0)
			return -1;
		for (size_t k = 0; k < srv->nboxes; k++)
			taken |= strcmp(srv->boxes[k]->id, b->id) == 0;
		if (!taken) {
			srv->boxes[srv->nboxes++] = b;
			srv->live++;
			return 0;
		}
	}
	return -1;
}

void sbxs_box_free(struct sbxs_box *b)
{
	/* The code interpreter's handles go before the sandbox (its contexts
	 * end with it), the cells' secrets after its last run. */
	for (struct sbxs_ictx *x = b->ictxs, *next; x; x = next) {
		next = x->next;
		sbx_context_free(x->h);
		free(x->cwd);
		free(x);
	}
	if (b->s && sbx_sandbox_close(b->s) < 0)
		b->srv->warn("serve: sandbox %s: %s", b->id, sbx_error_last()->message);
	for (size_t k = 0; k < b->n_isecrets; k++)
		sbx_secrets_free(b->isecrets[k]);
	for (size_t k = 0; k < b->n_ivals; k++) {
		explicit_bzero(b->ivals[k], b->ival_len[k]);
		free(b->ivals[k]);
	}
	json_decref(b->metadata);
	json_decref(b->network);
	free(b->template_id);
	explicit_bzero(b->token, sizeof(b->token));
	pthread_cond_destroy(&b->cv);
	free(b);
}

/* Drops a reference; the last one closes the sandbox (mu not held). */
void sbxs_box_unref(struct sbxs_box *b)
{
	struct sbxs_server *srv = b->srv;
	int counted = b->s != NULL;

	pthread_mutex_lock(&srv->mu);
	if (--b->refs > 0) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	pthread_mutex_unlock(&srv->mu);
	sbxs_box_free(b);
	if (!counted)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->live--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
}

/* The box with this id, with a reference for the caller; NULL: none. */
struct sbxs_box *sbxs_box_get(struct sbxs_server *srv, const char *id)
{
	struct sbxs_box *b = NULL;

	pthread_mutex_lock(&srv->mu);
	for (size_t k = 0; k < srv->nboxes; k++)
		if (strcmp(srv->boxes[k]->id, id) == 0) {
			b = srv->boxes[k];
			b->refs++;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	return b;
}

/*
 * Takes a box out of the registry (mu held): from now on it is not found.
 * Wakes whatever waits on it. Returns 1 when the caller must drop the
 * registry's reference (sbxs_box_unref, after unlocking); *kill tells that a
 * library call is in progress on it and must be ended with
 * sbx_sandbox_kill() (after unlocking, before the unref).
 */
int sbxs_retire_locked(struct sbxs_box *b, int *kill)
{
	struct sbxs_server *srv = b->srv;

	*kill = 0;
	if (b->retired)
		return 0;
	b->retired = 1;
	*kill = b->busy;
	for (size_t k = 0; k < srv->nboxes; k++)
		if (srv->boxes[k] == b) {
			srv->boxes[k] = srv->boxes[--srv->nboxes];
			break;
		}
	pthread_cond_broadcast(&b->cv);
	for (struct sbxs_proc *pr = b->procs; pr; pr = pr->next)
		pthread_cond_broadcast(&pr->cv);
	return 1;
}

void sbxs_retire(struct sbxs_box *b)
{
	int kill, drop;

	pthread_mutex_lock(&b->srv->mu);
	drop = sbxs_retire_locked(b, &kill);
	pthread_mutex_unlock(&b->srv->mu);
	if (kill)
		sbx_sandbox_kill(b->s);
	if (drop)
		sbxs_box_unref(b);
}

/* Waits for the box's busy slot, at most until its end and until (a
 * monotonic ms; 0: no bound of the caller's). Returns 0 with the slot
 * taken, -1 when the box ended first, -2 when until passed first. */
int sbxs_box_acquire(struct sbxs_box *b, uint64_t until)
{
	struct sbxs_server *srv = b->srv;
	int rc = 0;

	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t now = sbx__mono_ms(), wake = now + 1000;

		if (b->retired || srv->stopping || now >= b->end_mono) {
			rc = -1;
			break;
		}
		if (!b->busy)
			break;
		if (until && now >= until) {
			rc = -2;
			break;
		}
		if (b->end_mono < wake)
			wake = b->end_mono;
		if (until && until < wake)
			wake = until;
		sbxs_wait_until(&b->cv, &srv->mu, wake);
	}
	if (rc == 0)
		b->busy = 1;
	pthread_mutex_unlock(&srv->mu);
	return rc;
}

/* Gives the slot back; a library error that killed the sandbox retires it. */
void sbxs_box_release(struct sbxs_box *b, int rc)
{
	pthread_mutex_lock(&b->srv->mu);
	b->busy = 0;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->srv->mu);
	if (rc == SBX_ECANCELED || rc == SBX_ETIMEOUT)
		sbxs_retire(b);
}

/*
 * Marks the server stopping and retires every box, in one hold of mu so
 * that no create registers a box after it; the library calls in progress
 * on them are ended.
 */
void sbxs_boxes_stop(struct sbxs_server *srv)
{
	struct sbxs_box *all[MAX_BOXES];
	int kill[MAX_BOXES];
	size_t n = 0;

	pthread_mutex_lock(&srv->mu);
	srv->stopping = 1;
	while (srv->nboxes) {
		struct sbxs_box *b = srv->boxes[0];

		if (sbxs_retire_locked(b, &kill[n]))
			all[n++] = b;
	}
	pthread_mutex_unlock(&srv->mu);
	for (size_t k = 0; k < n; k++) {
		if (kill[k])
			sbx_sandbox_kill(all[k]->s);
		sbxs_box_unref(all[k]);
	}
}
