/*
 * remote/modal/open.c: the modal backend (sbx__modal_ops): a policy mapped
 * onto a Modal Sandbox, over Modal's gRPC API (remote/modal/grpc.c).
 *
 * The sandbox definition is built from the policy alone: network BLOCKED,
 * or ALLOWLIST with the policy's CIDRs; timeout_secs from the lifetime;
 * CPU and memory as both request and limit; the policy's working
 * directory; no entrypoint (as the official SDK sends for a sandbox made
 * without a command); tags that are exactly the io.sandboxio.* owner keys.
 * What Modal cannot enforce is refused in check(): names in the allowlist,
 * a CIDR with a port, an explicit disk cap, a tier above gVisor. The
 * per-process caps Modal has no control for (open files, processes, core
 * dumps, file size) wrap each run's argv in prlimit (remote/wrap.c).
 *
 * Every control-plane call carries x-modal-client-type 8 (the libmodal JS
 * client): Modal's enum has no C client, and this backend keeps the
 * libmodal contract (remote/modal/modal-int.h says why that one).
 *
 * This file opens the backend (the token pair, the server, the app that
 * proves them), checks a policy, and holds the ops table. A sandbox's life
 * is sandbox.c's, its image image.c's, a run run.c's; the control plane's
 * calls are client.c's, gRPC itself grpc-sync.c's and grpc.c's. Each file
 * uses only those below it: open.c, then run.c, sandbox.c, image.c,
 * client.c, grpc-sync.c, grpc.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/policy-int.h"
#include "remote/modal/grpc-int.h"
#include "remote/modal/modal-int.h"
#include "remote/modal/modal.pb-c.h"
#include "util/error-int.h"

#define DEFAULT_API_TIMEOUT_MS 30000u

/* ===== open / free / check ===== */

static void m_free(void *state)
{
	struct sbx__modal *m = state;

	if (!m)
		return;
	sbx__grpc_chan_free(m->cp);
	free(m->server_url);
	sbx__modal_wipe_free(m->token_id);
	sbx__modal_wipe_free(m->token_secret);
	sbx__modal_wipe_free(m->auth_token);
	free(m->env_name);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static int m_open(const sbx_backend_options *opts, void **state)
{
	Modal__Client__AppGetOrCreateRequest req = MODAL__CLIENT__APP_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__AppGetOrCreateResponse *r;
	const char *id = secure_getenv("MODAL_TOKEN_ID");
	const char *secret = secure_getenv("MODAL_TOKEN_SECRET");
	const char *url = secure_getenv("MODAL_SERVER_URL");
	const char *env = secure_getenv("MODAL_ENVIRONMENT");
	const char *thr = secure_getenv("MODAL_MAX_THROTTLE_WAIT");
	struct sbx__grpc_status st;
	struct sbx__modal *m;
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	if (!id || !*id || !secret || !*secret)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "modal: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET must both be "
				      "set (a token pair from the Modal dashboard)");
	if (!url || !*url)
		url = SBX_MODAL_DEFAULT_SERVER;
	m = calloc(1, sizeof(*m));
	if (!m)
		return sbx__modal_nomem();
	pthread_mutex_init(&m->lock, NULL);
	m->api_timeout_ms =
		opts && opts->api_timeout_ms ? opts->api_timeout_ms : DEFAULT_API_TIMEOUT_MS;
	m->loopback = sbx__modal_url_is_loopback(url);
	m->token_id = strdup(id);
	m->token_secret = strdup(secret);
	m->server_url = strdup(url);
	m->env_name = strdup(env ? env : "");
	if (!m->token_id || !m->token_secret || !m->server_url || !m->env_name) {
		m_free(m);
		return sbx__modal_nomem();
	}
	if (thr && *thr) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(thr, &end, 10);
		/* 0 turns throttle waits off, as in the SDKs; junk is ignored, as there. */
		if (!errno && !*end && thr[0] != '-')
			m->max_throttle_ms = v == 0	 ? UINT64_MAX
					     : v > 86400 ? 86400000u
							 : (uint64_t)v * 1000u;
	}
	if (strncmp(url, "http://", 7) == 0 && !m->loopback) {
		m_free(m);
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "modal: MODAL_SERVER_URL '%.200s' has no TLS; http:// is "
				      "only allowed to a loopback host (the token pair would cross "
				      "the network in clear)",
				      url);
	}
	rc = sbx__grpc_chan_new(&m->cp, url);
	if (rc < 0) {
		m_free(m);
		return sbx__error_wrap("modal: MODAL_SERVER_URL");
	}
	/* AuthTokenGet, then the app: both prove the credentials. */
	req.app_name = (char *)SBX_MODAL_APP_NAME;
	req.environment_name = m->env_name;
	req.object_creation_type =
		MODAL__CLIENT__OBJECT_CREATION_TYPE__OBJECT_CREATION_TYPE_CREATE_IF_MISSING;
	rc = sbx__modal_cp_call(m, SBX_MODAL_APP_GET_OR_CREATE, &req.base,
				sbx__modal_deadline_in(m->api_timeout_ms), NULL, &resp, &len, &st);
	if (rc < 0) {
		m_free(m);
		return sbx__error_code() == SBX_EDENIED
			       ? rc
			       : sbx__error_wrap("modal: open app '%s'", SBX_MODAL_APP_NAME);
	}
	r = SBX_MODAL_UNPACK(Modal__Client__AppGetOrCreateResponse,
			     modal__client__app_get_or_create_response__unpack, resp, len,
			     "AppGetOrCreate");
	if (!r) {
		m_free(m);
		return SBX_EENGINE;
	}
	if (!sbx__modal_valid_id(r->app_id)) {
		modal__client__app_get_or_create_response__free_unpacked(r, NULL);
		m_free(m);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "modal: AppGetOrCreate answered without a valid app id");
	}
	snprintf(m->app_id, sizeof(m->app_id), "%s", r->app_id);
	modal__client__app_get_or_create_response__free_unpacked(r, NULL);
	*state = m;
	return 0;
}

static int m_check(void *state, const sbx_policy *p)
{
	(void)state;
	if (p->min_tier > SBX_TIER_GVISOR)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				      "modal: sandboxes run on gVisor; the policy asks for the %s "
				      "tier",
				      sbx_tier_name(p->min_tier) ?: "unknown");
	for (size_t i = 0; i < p->allow_n; i++) {
		const struct sbx__allow *a = &p->allow[i];

		if (a->kind != SBX_ALLOW_CIDR)
			return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
					      "modal: cannot allow host '%s': Modal's domain "
					      "allowlist admits only "
					      "TLS on port 443 by name and leaves DNS open, which "
					      "is weaker than the "
					      "policy's meaning; allow addresses with allow_cidr",
					      a->name);
		if (a->port)
			return sbx__error_set(
				SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				"modal: cannot allow %s port %u only: Modal's CIDR allowlist is "
				"per "
				"destination address for every port and protocol; allow the "
				"address without a port",
				a->name, (unsigned)a->port);
	}
	if (p->set & SBX__SET_LIMIT(SBX_LIMIT_DISK))
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				      "modal: Modal sandboxes have no ephemeral-disk control, so "
				      "a disk cap cannot be enforced; leave it unset (each run's "
				      "file size is still capped)");
	return 0;
}

const struct sbx__backend_ops sbx__modal_ops = {
	.version = SBX_BACKEND_OPS_VERSION,
	.name = "modal",
	.open = m_open,
	.free = m_free,
	.check = m_check,
	.create = sbx__modal_op_create,
	.open_box = sbx__modal_op_open_box,
	.run = sbx__modal_op_run,
	.destroy = sbx__modal_op_destroy,
	.kill = sbx__modal_op_kill,
	.release = sbx__modal_op_release,
	.list = sbx__modal_op_list,
	.reap_list = sbx__modal_op_reap_list,
	.reap_remove = sbx__modal_op_reap_remove,
	.reap_max = 10000, /* sandboxes one reap condemns at most */
	.image_exists = sbx__modal_op_image_exists,
	.import_image = NULL,
	.write_file = NULL,
	.read_file = NULL,
};
