/*
 * engine/tiers.c: what the docker backend needs, before it asks the Engine
 * for anything, to give a policy's tier: the runtimes registered with
 * dockerd, and the caps that mean something there.
 *
 * On the gvisor tier the container's cgroup holds the Sentry and its gofer
 * as well as the sandbox's tasks, so its pids cap counts the Sentry's own
 * threads (about 50 with runsc 20221219 on two CPUs). The cap is kept as
 * the bound of the whole sandbox, never raised to make room: a cap below
 * SBX_GVISOR_PIDS_MIN would leave the sandbox's programs nothing, or the
 * Sentry too little to start, so it is refused, naming the floor.
 */
#include <sandboxio.h>

#include "core/limit-kinds.h"
#include "engine/docker-int.h"
#include "netpolicy/netpolicy-int.h"
#include "util/error-int.h"

int sbx__docker_tier_check(const struct sbx__docker *d, const sbx_policy *p)
{
	if (p->min_tier == SBX_TIER_MICROVM)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "the docker backend cannot provide the microvm tier; use a "
				      "backend that runs a VM per sandbox");
	if (p->min_tier != SBX_TIER_GVISOR)
		return 0;
	if (!d->has_runsc)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "the gvisor tier needs a 'runsc' runtime registered with "
				      "dockerd, and this daemon has none");
	if (p->limit[SBX_LIMIT_PIDS] < SBX_GVISOR_PIDS_MIN)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "pids %lld is below %d, the least the gvisor tier takes: its "
				      "cap counts the Sentry's own threads (about 50) as well as "
				      "the sandbox's programs",
				      (long long)p->limit[SBX_LIMIT_PIDS], SBX_GVISOR_PIDS_MIN);
	if (p->allow_n && !d->has_runsc_hostinet)
		return sbx__error_set(
			SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
			"an egress allowlist on the gvisor tier needs the runtime '%s' "
			"(runsc --network=host) registered with dockerd, and this "
			"daemon has none (scripts/setup.sh registers it)",
			SBX_RUNTIME_GVISOR_HOSTINET);
	return 0;
}
