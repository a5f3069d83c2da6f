/*
 * server/sweep.c: the server's sweep of its boxes, run by the server's
 * clock thread (server/server.c): boxes whose end passed are retired, and
 * those made with autoPause are paused instead (server/pause.c). Apart from
 * server/box.c, which keeps the registry, so that the registry does not
 * call up into pause and resume.
 */
#include <pthread.h>

#include "server/server-int.h"

/* Retires the boxes whose timeout (or, paused, whose pause bound) has
 * passed; pauses those made with autoPause instead (server/pause.c). */
void sbxs_boxes_sweep(struct sbxs_server *srv)
{
	struct sbxs_box *dead[MAX_BOXES], *pause[MAX_BOXES];
	int kill[MAX_BOXES];
	size_t n = 0, k = 0, np = 0;
	uint64_t now = sbx__mono_ms();

	pthread_mutex_lock(&srv->mu);
	while (k < srv->nboxes) {
		struct sbxs_box *b = srv->boxes[k];

		if (b->end_mono > now) {
			k++;
			continue;
		}
		if (b->auto_pause && !b->paused && !b->busy) {
			b->refs++;
			pause[np++] = b;
			k++;
			continue;
		}
		if (sbxs_retire_locked(b, &kill[n])) /* moves the last box into slot k */
			dead[n++] = b;
	}
	pthread_mutex_unlock(&srv->mu);
	for (k = 0; k < n; k++) {
		if (kill[k])
			sbx_sandbox_kill(dead[k]->s);
		sbxs_box_unref(dead[k]);
	}
	for (k = 0; k < np; k++) {
		if (!sbxs_box_auto_pause(pause[k]))
			sbxs_retire(pause[k]);
		sbxs_box_unref(pause[k]);
	}
}
