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
 *
 * That cgroup does not count the sandbox's own tasks: they are the
 * Sentry's, not the host's, and a run held 1,000 threads under a cap of 96.
 * So the cap is given to the Sentry's kernel as well, as RLIMIT_NPROC
 * (soft and hard), which it enforces on the sandbox's uid: a program that
 * reaches the cap gets EAGAIN, as it does on the container tier.
 */
#include <jansson.h>

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

int sbx__docker_tier_hostconfig(const sbx_policy *p, json_t *hc)
{
	json_t *nproc;

	if (p->min_tier != SBX_TIER_GVISOR)
		return 0;
	if (json_object_set_new(
		    hc, "Runtime",
		    json_string(p->allow_n ? SBX_RUNTIME_GVISOR_HOSTINET : SBX_RUNTIME_GVISOR)) < 0)
		return SBX_ENOMEM;
	nproc = json_pack("{s:s, s:I, s:I}", "Name", "nproc", "Soft",
			  (json_int_t)p->limit[SBX_LIMIT_PIDS], "Hard",
			  (json_int_t)p->limit[SBX_LIMIT_PIDS]);
	if (!nproc || json_array_append_new(json_object_get(hc, "Ulimits"), nproc) < 0)
		return SBX_ENOMEM;
	return 0;
}
