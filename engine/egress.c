/*
 * engine/egress.c: a sandbox's egress allowlist as create and close see it:
 * resolved into a plan on the host (netpolicy/), written into the create
 * request, and removed again. The plan carries what the sandbox's name
 * checker needs (netpolicy/egress.c): its path and what its audit events
 * carry.
 */
#include <stdlib.h>

#include <jansson.h>

#include <sandboxio/errors.h>

#include "core/policy-int.h"
#include "engine/docker-int.h"
#include "netpolicy/netpolicy-int.h"
#include "util/error-int.h"

/*
 * Resolves the policy's allowlist on the host (netpolicy/), pins the names
 * into the sandbox's /etc/hosts (ExtraHosts works with network none) and
 * labels the sandbox, so that close and the reaper know it has a link and
 * rules on the host.
 */
int sbx__docker_egress_plan(struct sbx__docker *d, const sbx_policy *p, struct sbx__np_plan *plan)
{
	struct sbx__host_addr *own = NULL;
	size_t own_n = 0;
	int v6_ok = 0, rc;

	rc = sbx__netpolicy_check(p->allow, p->allow_n, &v6_ok);
	if (rc == 0)
		rc = sbx__netpolicy_host_addrs(&own, &own_n);
	if (rc == 0)
		rc = sbx__netpolicy_plan(plan, p->allow, p->allow_n, d->hosts_file, v6_ok, own,
					 own_n);
	plan->checker = d->egress_path;
	plan->audit_file[0] = p->audit_file[0];
	plan->audit_file[1] = p->audit_file[1];
	plan->tenant = p->tenant;
	plan->trace_id = p->trace_id[0] ? p->trace_id : NULL;
	plan->span_id = p->span_id[0] ? p->span_id : NULL;
	plan->otlp = p->trace_id[0] ? p->otlp : NULL;
	free(own);
	return rc;
}

/* Writes a resolved plan's pins and label into the create request. */
void sbx__docker_egress_apply(const struct sbx__np_plan *plan, json_t *body)
{
	json_t *pins = json_array();

	for (size_t i = 0; i < plan->pins_n; i++)
		json_array_append_new(pins, json_string(plan->pins[i]));
	json_object_set_new(json_object_get(body, "HostConfig"), "ExtraHosts", pins);
	json_object_set_new(json_object_get(body, "Labels"), SBX_LABEL_PREFIX "netpolicy",
			    json_string("veth"));
	/* NetworkMode stays none; with NetworkDisabled the engine writes no
	 * /etc/hosts, and the pins would be lost. */
	json_object_set_new(body, "NetworkDisabled", json_false());
}

/* Removes a sandbox's host-side egress state, keeping an earlier error. */
int sbx__docker_egress_detach(const char *session, int rc)
{
	struct sbx__error_saved saved;

	if (rc == 0)
		return sbx__netpolicy_detach(session);
	sbx__error_save(&saved);
	sbx__netpolicy_detach(session);
	sbx__error_restore(&saved, rc);
	sbx__error_http(saved.http_status);
	return rc;
}
