/*
 * engine/tiers.c: what the docker backend needs, before it asks the Engine
 * for anything, to give a policy's tier: the runtimes registered with
 * dockerd, and the caps that mean something there.
 *
 * On the gvisor tier the container's cgroup holds the Sentry and its gofer,
 * not the sandbox's tasks: those are the Sentry's, so that cgroup's pids
 * cap does not count the program's threads (a run held 1,000 threads under
 * a host cap of 96). The policy's cap is given to the Sentry's kernel
 * instead, as RLIMIT_NPROC (soft and hard), which it enforces on the
 * sandbox's uid: a program that reaches the cap gets EAGAIN, as it does on
 * the container tier.
 *
 * The host cgroup's own cap bounds what the sandbox costs the host. Each of
 * the sandbox's processes costs host tasks there too (runsc 20221219's
 * ptrace platform keeps a stub process with its threads per address space:
 * 62 sleeping processes took 394 host tasks, 63 threads of one process
 * none beyond the Sentry's), and the Sentry's own threads are about 50 idle,
 * more while many calls block. A host cap equal to the policy's let a
 * thread or process bomb take the Sentry's room, which ends the whole
 * sandbox instead of refusing the program. So the host cap is
 * SBX_GVISOR_SENTRY_PIDS + SBX_GVISOR_HOST_PIDS_PER_TASK per task the policy
 * allows: still a bound set by the policy alone (no caller picks it), with
 * room for the Sentry to refuse the program by RLIMIT_NPROC itself. A cap
 * below SBX_GVISOR_PIDS_MIN is still refused, naming the floor.
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
				      "pids %lld is below %d, the least the gvisor tier takes",
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
	if (json_object_set_new(hc, "PidsLimit", json_integer(sbx__docker_tier_host_pids(p))) < 0)
		return SBX_ENOMEM;
	nproc = json_pack("{s:s, s:I, s:I}", "Name", "nproc", "Soft",
			  (json_int_t)p->limit[SBX_LIMIT_PIDS], "Hard",
			  (json_int_t)p->limit[SBX_LIMIT_PIDS]);
	if (!nproc || json_array_append_new(json_object_get(hc, "Ulimits"), nproc) < 0)
		return SBX_ENOMEM;
	return 0;
}

int64_t sbx__docker_tier_host_pids(const sbx_policy *p)
{
	if (p->min_tier != SBX_TIER_GVISOR)
		return p->limit[SBX_LIMIT_PIDS];
	return SBX_GVISOR_SENTRY_PIDS + SBX_GVISOR_HOST_PIDS_PER_TASK * p->limit[SBX_LIMIT_PIDS];
}
