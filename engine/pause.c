/*
 * engine/pause.c: pause and resume of a docker sandbox.
 *
 * A pause freezes every process of the sandbox through the Engine
 * (POST /containers/{id}/pause: the cgroup freezer, or runsc's own pause on
 * the gvisor tier); memory, files and processes stay as they are. A frozen
 * init cannot act on its own deadline, so before freezing, the host asks
 * the init for its deadline over the run channel and writes the record the
 * reaper reads (engine/paused.c): the sandbox is reaped once its pause
 * bound passes, never earlier. A resume sends the init its deadline moved
 * by the time it was paused (a DEADLINE frame, written while the sandbox is
 * still frozen, so that it is waiting when the init wakes), thaws it, and
 * writes the moved deadline into the record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

#include "engine/chan-int.h"
#include "engine/docker-int.h"
#include "util/error-int.h"

/* The DEADLINE exchange waits at most this long for the init. */
#define DEADLINE_WAIT_MS 10000

/* POST /containers/{id}/<what> (pause, unpause); the Engine's status in *status. */
static int engine_post(struct sbx__docker *d, const char *id, const char *what, long *status)
{
	char path[256];

	snprintf(path, sizeof(path), "/containers/%s/%s", id, what);
	return sbx__docker_call(d, "POST", path, NULL, 0, status, NULL);
}

int sbx__docker_paused(void *state, void *box)
{
	struct sbx__docker_box *b = box;
	struct sbx__paused r;

	(void)state;
	if (b->paused)
		return 1;
	return sbx__paused_read(b->id, &r) == 1 && r.at != 0;
}

int sbx__docker_deadline(void *state, void *box, int64_t *deadline)
{
	struct sbx__docker_box *b = box;
	uint64_t at = 0;
	int rc;

	(void)state;
	if (sbx__docker_paused(state, box))
		return sbx__error_set(SBX_EPAUSED, SBX_ERRCLASS_ENGINE,
				      "sandbox %.12s is paused: its init cannot answer", b->id);
	rc = sbx__chan_deadline(b->chan, 0, NULL, NULL, &at, sbx__mono_ms() + DEADLINE_WAIT_MS);
	if (rc == 0)
		*deadline = (int64_t)at;
	return rc;
}

int sbx__docker_pause(void *state, void *box, uint64_t max_ms)
{
	struct sbx__docker *d = state;
	struct sbx__docker_box *b = box;
	struct sbx__paused r = {0};
	uint64_t at = 0, spent;
	long status = 0;
	int rc;

	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE, "pause: sandbox %.12s %s",
				      b->id, sbx__dead_why(b->dead));
	if (sbx__docker_paused(state, box))
		return sbx__error_set(SBX_EPAUSED, SBX_ERRCLASS_ENGINE,
				      "pause: sandbox %.12s is already paused", b->id);
	/* The init's deadline, asked before it is frozen: only a handle that
	 * holds the run channel can ask it, and move it at the resume. */
	rc = sbx__chan_deadline(b->chan, 0, NULL, NULL, &at, sbx__mono_ms() + DEADLINE_WAIT_MS);
	if (rc < 0)
		return sbx__error_wrap("pause: sandbox %.12s", b->id);
	r.at = (uint64_t)time(NULL);
	r.deadline = at;
	if (r.deadline <= r.at)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "pause: sandbox %.12s has reached its deadline", b->id);
	/* The bound is on the time paused in all, over the sandbox's life:
	 * each resume moved the init's deadline by the time it was paused,
	 * so the deadline past the one it was made with is what was spent.
	 * Pauses one after another never add up past it. */
	spent = b->made_deadline && at > b->made_deadline ? at - b->made_deadline : 0;
	if (spent >= (max_ms + 999) / 1000)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_ENGINE,
				      "pause: sandbox %.12s has been paused for %llu s in all, its "
				      "bound of %llu s",
				      b->id, (unsigned long long)spent,
				      (unsigned long long)((max_ms + 999) / 1000));
	r.bound = r.at + (max_ms + 999) / 1000 - spent;
	/* The record comes first: the reaper never sees a frozen sandbox
	 * without its bound. */
	rc = sbx__paused_write(b->id, &r);
	if (rc < 0)
		return rc;
	rc = engine_post(d, b->id, "pause", &status);
	if (rc < 0) {
		sbx__paused_remove(b->id);
		if (status == 409 && strstr(sbx_error_last()->message, "already paused"))
			return sbx__error_set(SBX_EPAUSED, SBX_ERRCLASS_ENGINE,
					      "pause: sandbox %.12s is already paused", b->id);
		return sbx__error_wrap("pause: sandbox %.12s", b->id);
	}
	b->paused = 1;
	return 0;
}

static int thaw_between(void *arg)
{
	void **a = arg;
	long status = 0;

	return engine_post(a[0], a[1], "unpause", &status);
}

int sbx__docker_resume(void *state, void *box, int64_t *deadline)
{
	struct sbx__docker *d = state;
	struct sbx__docker_box *b = box;
	struct sbx__paused r;
	uint64_t now = (uint64_t)time(NULL), moved, at = 0;
	void *arg[2] = {d, b->id};
	int rc = sbx__paused_read(b->id, &r);

	if (rc < 0)
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_ENGINE,
				      "resume: the record %s/%s cannot be read", SBX_PAUSED_DIR,
				      b->id);
	/* Paused by this handle and its record gone: the reaper removed it
	 * once its bound passed. */
	if (rc == 0 && b->paused)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "resume: sandbox %.12s was paused past its bound and removed "
				      "by the reaper",
				      b->id);
	if (rc == 0 || r.at == 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "resume: sandbox %.12s is not paused", b->id);
	if (now >= r.bound)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "resume: sandbox %.12s was paused past its bound (%llu s) "
				      "and is removed by the reaper",
				      b->id, (unsigned long long)(r.bound - r.at));
	moved = r.deadline + (now - r.at);
	rc = sbx__chan_deadline(b->chan, moved, thaw_between, arg, &at,
				sbx__mono_ms() + DEADLINE_WAIT_MS);
	if (rc < 0)
		return sbx__error_wrap("resume: sandbox %.12s", b->id);
	b->paused = 0;
	r = (struct sbx__paused){.deadline = at};
	if (sbx__paused_write(b->id, &r) < 0) {
		/* Running again with no record of its moved deadline, the reaper
		 * would judge it by its label: end it rather. */
		(void)sbx__docker_kill(d, b);
		return sbx__error_wrap("resume: sandbox %.12s was killed", b->id);
	}
	*deadline = (int64_t)at;
	return 0;
}
