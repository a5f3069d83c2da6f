/*
 * core/pause.c: the public pause, resume and deadline of a sandbox. Core
 * checks the arguments and records each step (audit events, spans); the
 * backend freezes, thaws and moves the deadline (engine/pause.c).
 */
#include <stdint.h>
#include <stdio.h>

#include <sandboxio.h>

#include "core/audit-int.h"
#include "core/backend-int.h"
#include "core/config-int.h"
#include "core/sandbox-int.h"
#include "core/trace-int.h"
#include "util/error-int.h"

int sbx_sandbox_pause(sbx_sandbox *s, uint64_t max_ms)
{
	struct sbx__span sp;
	uint64_t ceiling;
	int rc;

	sbx__error_clear();
	if (!s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "pause: sandbox is NULL");
	if (max_ms > SBX_PAUSE_MAX_MS)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "pause: a bound of %llu ms is over the most a sandbox may "
				      "stay paused (%llu ms, a day)",
				      (unsigned long long)max_ms, SBX_PAUSE_MAX_MS);
	ceiling = s->policy ? s->policy->pause_max_ms : SBX_PAUSE_MAX_DEFAULT_MS;
	rc = sbx__config_check_pause(s->backend->config, ceiling, max_ms);
	if (rc < 0)
		return rc;
	if (!s->backend->ops->pause)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "pause: the %s backend cannot pause a sandbox",
				      s->backend->ops->name);
	sbx__span_begin(s->backend->tracer, &sp, "sandboxio.pause", &s->span, NULL);
	rc = s->backend->ops->pause(s->backend->state, s->box, max_ms ? max_ms : ceiling);
	sbx__span_str(&sp, "sandboxio.sandbox.id", s->id);
	sbx__span_end(&sp, rc);
	return rc;
}

int sbx_sandbox_resume(sbx_sandbox *s)
{
	struct sbx__span sp;
	int64_t deadline = 0;
	int rc;

	sbx__error_clear();
	if (!s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "resume: sandbox is NULL");
	if (!s->backend->ops->resume)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "resume: the %s backend cannot pause a sandbox",
				      s->backend->ops->name);
	sbx__span_begin(s->backend->tracer, &sp, "sandboxio.resume", &s->span, NULL);
	rc = s->backend->ops->resume(s->backend->state, s->box, &deadline);
	if (rc == 0 && deadline > 0)
		s->deadline_ns = (uint64_t)deadline * 1000000000ULL;
	sbx__span_str(&sp, "sandboxio.sandbox.id", s->id);
	sbx__span_end(&sp, rc);
	return rc;
}

int sbx_sandbox_deadline(sbx_sandbox *s, int64_t *out)
{
	sbx__error_clear();
	if (!s || !out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "deadline: %s is NULL",
				      s ? "out" : "the sandbox");
	if (!s->backend->ops->deadline)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "deadline: the %s backend does not say a sandbox's deadline",
				      s->backend->ops->name);
	return s->backend->ops->deadline(s->backend->state, s->box, out);
}

/* Whether s is paused (core/sandbox.c refuses runs on it): 1 or 0. */
int sbx__sandbox_paused(sbx_sandbox *s)
{
	return s->backend->ops->paused && s->backend->ops->paused(s->backend->state, s->box);
}
