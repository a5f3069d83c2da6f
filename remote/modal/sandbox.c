/*
 * remote/modal/sandbox.c: a Modal sandbox's life: create (the definition
 * and tags built from the policy, the tier the server announces checked),
 * its task and the command router's access, open an existing one from its
 * tags, release, destroy and kill, and the listing and the reaper's
 * judgement of each listed sandbox. Any failure after SandboxCreate
 * terminates the sandbox before returning.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/owner-int.h"
#include "core/policy-int.h"
#include "remote/modal/grpc-int.h"
#include "remote/modal/modal-int.h"
#include "remote/modal/modal.pb-c.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define LIST_PAGES_MAX 1000 /* pages of SandboxList read before giving up */

/* ===== Create ===== */

/* The task of a sandbox, once it is scheduled. */
static int
task_id_of(struct sbx__modal *m, const char *sandbox_id, uint64_t deadline, char *task_id)
{
	for (;;) {
		Modal__Client__SandboxGetTaskIdRequest req =
			MODAL__CLIENT__SANDBOX_GET_TASK_ID_REQUEST__INIT;
		Modal__Client__SandboxGetTaskIdResponse *r;
		struct sbx__grpc_status st;
		uint8_t *resp = NULL;
		size_t len = 0;
		uint64_t now = sbx__grpc_now_ms();
		double left = deadline > now ? (double)(deadline - now) / 1000.0 : 0;
		int rc;

		if (left <= 0.05)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_REMOTE,
					      "modal: sandbox %s was not scheduled by the deadline",
					      sandbox_id);
		req.sandbox_id = (char *)sandbox_id;
		req.timeout = (float)(left > 10.5 ? 10 : left - 0.5 > 0.05 ? left - 0.5 : 0.05);
		rc = sbx__modal_cp_call(m, SBX_MODAL_SANDBOX_GET_TASK_ID, &req.base, deadline, NULL,
					&resp, &len, &st);
		if (rc < 0)
			return sbx__error_wrap("modal: sandbox %s: get its task", sandbox_id);
		r = SBX_MODAL_UNPACK(Modal__Client__SandboxGetTaskIdResponse,
				     modal__client__sandbox_get_task_id_response__unpack, resp, len,
				     "SandboxGetTaskId");
		if (!r)
			return SBX_EENGINE;
		if (r->task_result) {
			rc = sbx__error_set(
				SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				"modal: sandbox %s already ended (%s)%s%.400s", sandbox_id,
				sbx__modal_status_name(r->task_result->status),
				r->task_result->exception && *r->task_result->exception ? ": " : "",
				r->task_result->exception ?: "");
			modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
			return rc;
		}
		if (r->task_id && r->task_id[0]) {
			rc = sbx__modal_valid_id(r->task_id)
				     ? 0
				     : sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
						      "modal: SandboxGetTaskId answered "
						      "an invalid task id");
			if (rc == 0)
				snprintf(task_id, SBX_MODAL_ID_MAX + 1, "%s", r->task_id);
			modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
			return rc;
		}
		modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
		{
			struct timespec ts = {0, 250 * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
}

/*
 * The router's address and JWT. The URL must be https://HOST[:PORT]; when
 * the server URL is on loopback (a local double), the router is dialed
 * without TLS, as the official SDK does, and must be on loopback too.
 */
int sbx__modal_router_access(struct sbx__modal *m,
			     const char *task_id,
			     uint64_t deadline,
			     char **jwt,
			     struct sbx__grpc_chan **chan)
{
	Modal__Client__TaskGetCommandRouterAccessRequest req =
		MODAL__CLIENT__TASK_GET_COMMAND_ROUTER_ACCESS_REQUEST__INIT;
	Modal__Client__TaskGetCommandRouterAccessResponse *r;
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;
	char url[300];
	int rc;

	req.task_id = (char *)task_id;
	rc = sbx__modal_cp_call(m, SBX_MODAL_TASK_GET_ROUTER_ACCESS, &req.base, deadline, NULL,
				&resp, &len, &st);
	if (rc < 0)
		return sbx__error_wrap("modal: task %s: command router access", task_id);
	r = SBX_MODAL_UNPACK(Modal__Client__TaskGetCommandRouterAccessResponse,
			     modal__client__task_get_command_router_access_response__unpack, resp,
			     len, "TaskGetCommandRouterAccess");
	if (!r)
		return SBX_EENGINE;
	if (!r->jwt || !r->jwt[0] || strlen(r->jwt) > SBX_MODAL_TOKEN_MAX || !r->url ||
	    strncmp(r->url, "https://", 8) != 0 || strlen(r->url) > 255) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: task %s: the command router URL must be https:// "
				    "and come with a JWT (got '%.100s')",
				    task_id, r->url ? r->url : "");
		goto out;
	}
	if (m->loopback) {
		snprintf(url, sizeof(url), "http://%s", r->url + 8);
		if (!sbx__modal_url_is_loopback(url)) {
			rc = sbx__error_set(
				SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				"modal: the command router '%.100s' is not on loopback, "
				"so it is not dialed without TLS",
				r->url);
			goto out;
		}
	} else {
		snprintf(url, sizeof(url), "%s", r->url);
	}
	if (chan) {
		rc = sbx__grpc_chan_new(chan, url);
		if (rc < 0) {
			sbx__error_wrap("modal: task %s: command router", task_id);
			goto out;
		}
	}
	*jwt = strdup(r->jwt);
	if (!*jwt) {
		if (chan) {
			sbx__grpc_chan_free(*chan);
			*chan = NULL;
		}
		rc = sbx__modal_nomem();
	}
out:
	if (r->jwt)
		explicit_bzero(r->jwt, strlen(r->jwt));
	modal__client__task_get_command_router_access_response__free_unpacked(r, NULL);
	return rc;
}

static void box_free(struct sbx__modal_box *b)
{
	if (!b)
		return;
	free(b->id);
	free(b->task_id);
	sbx_policy_free(b->policy);
	sbx__modal_wipe_free(b->jwt);
	sbx__grpc_chan_free(b->router);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* Task, router access and a box for a sandbox that exists. */
static int box_attach(struct sbx__modal *m,
		      const char *sandbox_id,
		      const sbx_policy *p,
		      uint64_t deadline,
		      struct sbx__modal_box **out)
{
	char task_id[SBX_MODAL_ID_MAX + 1];
	struct sbx__modal_box *b;
	int rc;

	rc = task_id_of(m, sandbox_id, deadline, task_id);
	if (rc < 0)
		return rc;
	b = calloc(1, sizeof(*b));
	if (!b)
		return sbx__modal_nomem();
	pthread_mutex_init(&b->lock, NULL);
	if (!(b->id = strdup(sandbox_id)) || !(b->task_id = strdup(task_id)) ||
	    sbx_policy_dup(&b->policy, p) < 0) {
		box_free(b);
		return sbx__modal_nomem();
	}
	rc = sbx__modal_router_access(m, task_id, deadline, &b->jwt, &b->router);
	if (rc < 0) {
		box_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

static Modal__Client__SandboxTag *tag(Modal__Client__SandboxTag *t, const char *k, const char *v)
{
	modal__client__sandbox_tag__init(t);
	t->tag_name = (char *)k;
	t->tag_value = (char *)v;
	return t;
}

int sbx__modal_op_create(
	void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out)
{
	struct sbx__modal *m = state;
	Modal__Client__SandboxCreateRequest req = MODAL__CLIENT__SANDBOX_CREATE_REQUEST__INIT;
	Modal__Client__Sandbox def = MODAL__CLIENT__SANDBOX__INIT;
	Modal__Client__Resources res = MODAL__CLIENT__RESOURCES__INIT;
	Modal__Client__NetworkAccess net = MODAL__CLIENT__NETWORK_ACCESS__INIT;
	Modal__Client__SandboxTag tags[7], *tagp[7];
	Modal__Client__SandboxCreateResponse *r;
	_sbx_cleanup_free_ char **cidrs = NULL;
	struct sbx__owner own;
	struct sbx__grpc_status st;
	char image_id[SBX_MODAL_ID_MAX + 1], sandbox_id[SBX_MODAL_ID_MAX + 1];
	char dl[32], pid[32], start[32];
	uint64_t deadline = sbx__modal_deadline_in(p->timeout_ms[SBX_TIMEOUT_CREATE]);
	uint64_t secs = (p->timeout_ms[SBX_TIMEOUT_SANDBOX] + 999u) / 1000u;
	uint64_t mib = ((uint64_t)p->limit[SBX_LIMIT_MEMORY] + (1u << 20) - 1) >> 20;
	sbx_tier tier = SBX_TIER_GVISOR;
	struct sbx__modal_box *b = NULL;
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	rc = sbx__modal_image_build(m, p->image, deadline, image_id);
	if (rc < 0)
		return rc;
	res.milli_cpu = res.milli_cpu_max = (uint32_t)p->limit[SBX_LIMIT_CPU_MILLI];
	res.memory_mb = res.memory_mb_max = (uint32_t)mib;
	if (p->allow_n == 0) {
		net.network_access_type =
			MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__BLOCKED;
	} else {
		cidrs = calloc(p->allow_n, sizeof(*cidrs));
		if (!cidrs)
			return sbx__modal_nomem();
		for (size_t i = 0; i < p->allow_n; i++)
			cidrs[i] = p->allow[i].name;
		net.network_access_type =
			MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__ALLOWLIST;
		net.n_allowed_cidrs = p->allow_n;
		net.allowed_cidrs = cidrs;
	}
	def.image_id = image_id;
	def.resources = &res;
	def.timeout_secs = (uint32_t)secs;
	def.workdir = p->workdir;
	def.network_access = &net;
	/* No entrypoint: the official SDK sends [] for a sandbox made without a command. */
	def.n_entrypoint_args = 0;
	sbx__owner_self(&own, p->detached);
	snprintf(dl, sizeof(dl), "%lld", (long long)time(NULL) + (long long)secs);
	snprintf(pid, sizeof(pid), "%lld", own.pid);
	snprintf(start, sizeof(start), "%llu", own.start);
	tagp[0] = tag(&tags[0], SBX_OWNER_KEY_MANAGED, SBX_OWNER_MANAGED_VALUE);
	tagp[1] = tag(&tags[1], SBX_OWNER_KEY_PREFIX "tenant", p->tenant);
	tagp[2] = tag(&tags[2], SBX_OWNER_KEY_PREFIX "deadline", dl);
	tagp[3] = tag(&tags[3], SBX_OWNER_KEY_PREFIX "owner-host", own.host);
	tagp[4] = tag(&tags[4], SBX_OWNER_KEY_PREFIX "owner-boot", own.boot);
	tagp[5] = tag(&tags[5], SBX_OWNER_KEY_PREFIX "owner-pid", pid);
	tagp[6] = tag(&tags[6], SBX_OWNER_KEY_PREFIX "owner-start", start);
	req.app_id = m->app_id;
	req.definition = &def;
	req.n_tags = 7;
	req.tags = tagp;
	rc = sbx__modal_cp_call(m, SBX_MODAL_SANDBOX_CREATE, &req.base, deadline,
				SBX_MODAL_TIER_HEADER, &resp, &len, &st);
	if (rc < 0)
		return sbx__error_wrap("modal: create sandbox");
	r = SBX_MODAL_UNPACK(Modal__Client__SandboxCreateResponse,
			     modal__client__sandbox_create_response__unpack, resp, len,
			     "SandboxCreate");
	if (!r)
		return SBX_EENGINE;
	if (!sbx__modal_valid_id(r->sandbox_id)) {
		modal__client__sandbox_create_response__free_unpacked(r, NULL);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "modal: SandboxCreate answered without a valid sandbox id");
	}
	snprintf(sandbox_id, sizeof(sandbox_id), "%s", r->sandbox_id);
	modal__client__sandbox_create_response__free_unpacked(r, NULL);
	/* From here on, every failure terminates the sandbox. */
	if (st.captured[0] && sbx_tier_parse(&tier, st.captured) < 0) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: the server announced an unknown tier '%s'",
				    st.captured);
		return sbx__modal_terminate_keep(m, sandbox_id, rc);
	}
	if (p->min_tier > tier) {
		rc = sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				    "modal: the server gives the %s tier, below the %s tier the "
				    "policy demands",
				    sbx_tier_name(tier), sbx_tier_name(p->min_tier));
		return sbx__modal_terminate_keep(m, sandbox_id, rc);
	}
	rc = box_attach(m, sandbox_id, p, deadline, &b);
	if (rc < 0)
		return sbx__modal_terminate_keep(m, sandbox_id, rc);
	*id_out = strdup(sandbox_id);
	if (!*id_out) {
		box_free(b);
		return sbx__modal_terminate_keep(m, sandbox_id, sbx__modal_nomem());
	}
	*box_out = b;
	*tier_out = tier;
	return 0;
}

/* ===== Listing ===== */

static const char *tag_of(const Modal__Client__SandboxInfo *s, const char *key)
{
	for (size_t i = 0; i < s->n_tags; i++)
		if (s->tags[i]->tag_name && strcmp(s->tags[i]->tag_name, key) == 0)
			return s->tags[i]->tag_value;
	return NULL;
}

static int ours(const Modal__Client__SandboxInfo *s)
{
	const char *v = tag_of(s, SBX_OWNER_KEY_MANAGED);

	return sbx__modal_valid_id(s->id) && v && strcmp(v, SBX_OWNER_MANAGED_VALUE) == 0;
}

/* Calls fn for each running sandbox of ours, newest first; fn returns non-zero to stop. */
static int each_sandbox(struct sbx__modal *m,
			const char *tenant,
			const char *host,
			int (*fn)(void *arg, const Modal__Client__SandboxInfo *s),
			void *arg)
{
	Modal__Client__SandboxTag tags[3], *tagp[3];
	double before = 0;
	size_t nt = 0;

	tagp[nt] = tag(&tags[nt], SBX_OWNER_KEY_MANAGED, SBX_OWNER_MANAGED_VALUE);
	nt++;
	if (tenant) {
		tagp[nt] = tag(&tags[nt], SBX_OWNER_KEY_PREFIX "tenant", tenant);
		nt++;
	}
	if (host) {
		tagp[nt] = tag(&tags[nt], SBX_OWNER_KEY_PREFIX "owner-host", host);
		nt++;
	}
	for (int page = 0; page < LIST_PAGES_MAX; page++) {
		Modal__Client__SandboxListRequest req = MODAL__CLIENT__SANDBOX_LIST_REQUEST__INIT;
		Modal__Client__SandboxListResponse *r;
		struct sbx__grpc_status st;
		uint8_t *resp = NULL;
		size_t len = 0;
		double oldest = before;
		int rc, stop = 0;

		req.app_id = m->app_id;
		req.before_timestamp = before;
		req.environment_name = m->env_name;
		req.include_finished = 0;
		req.n_tags = nt;
		req.tags = tagp;
		rc = sbx__modal_cp_call(m, SBX_MODAL_SANDBOX_LIST, &req.base,
					sbx__modal_deadline_in(m->api_timeout_ms), NULL, &resp,
					&len, &st);
		if (rc < 0)
			return sbx__error_wrap("modal: list sandboxes");
		r = SBX_MODAL_UNPACK(Modal__Client__SandboxListResponse,
				     modal__client__sandbox_list_response__unpack, resp, len,
				     "SandboxList");
		if (!r)
			return SBX_EENGINE;
		if (r->n_sandboxes == 0) {
			modal__client__sandbox_list_response__free_unpacked(r, NULL);
			return 0;
		}
		for (size_t i = 0; i < r->n_sandboxes && !stop; i++) {
			const Modal__Client__SandboxInfo *s = r->sandboxes[i];

			if (s->created_at > 0 && (oldest == before || s->created_at < oldest))
				oldest = s->created_at;
			if (ours(s))
				stop = fn(arg, s);
		}
		modal__client__sandbox_list_response__free_unpacked(r, NULL);
		/* Pages go back in time; a server that does not is not followed. */
		if (stop || !(oldest > 0) || (before > 0 && oldest >= before))
			return 0;
		before = oldest;
	}
	return 0;
}

struct list_arg {
	sbx_list_cb cb;
	void *payload;
};

static long long num_or_zero(const char *s)
{
	char *end;
	long long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	return errno || *end ? 0 : v;
}

static int list_one(void *arg, const Modal__Client__SandboxInfo *s)
{
	struct list_arg *la = arg;
	const char *tenant = tag_of(s, SBX_OWNER_KEY_PREFIX "tenant");
	const char *state = "pending";
	sbx_sandbox_info info;

	if (!tenant)
		return 0;
	if (s->task_info && s->task_info->result && s->task_info->result->status)
		state = "finished";
	else if (s->task_info && s->task_info->started_at > 0)
		state = "running";
	info = (sbx_sandbox_info){
		.id = s->id,
		.tenant = tenant,
		.image = s->image_id ? s->image_id : "",
		.state = state,
		.created = (int64_t)s->created_at,
		.deadline = num_or_zero(tag_of(s, SBX_OWNER_KEY_PREFIX "deadline")),
	};
	return la->cb(&info, la->payload);
}

int sbx__modal_op_list(void *state, const char *tenant, sbx_list_cb cb, void *payload)
{
	struct list_arg la = {cb, payload};

	return each_sandbox(state, tenant, NULL, list_one, &la);
}

/* ===== Reaping ===== */

struct reap_arg {
	struct sbx__owner self;
	sbx__reap_fn fn;
	void *arg;
	int oom;
};

/* Hands each listed sandbox of ours to the reaper (core/reap.c). */
static int reap_item(void *arg, const Modal__Client__SandboxInfo *s)
{
	struct reap_arg *ra = arg;
	char tenant[64];
	int rc;

	snprintf(tenant, sizeof(tenant), "%s", tag_of(s, SBX_OWNER_KEY_PREFIX "tenant") ?: "");
	rc = ra->fn(ra->arg, &(struct sbx__reap_item){
				     .id = s->id,
				     .tenant = tenant,
				     .self = &ra->self,
				     .deadline = tag_of(s, SBX_OWNER_KEY_PREFIX "deadline"),
				     .host = tag_of(s, SBX_OWNER_KEY_PREFIX "owner-host"),
				     .boot = tag_of(s, SBX_OWNER_KEY_PREFIX "owner-boot"),
				     .pid = tag_of(s, SBX_OWNER_KEY_PREFIX "owner-pid"),
				     .start = tag_of(s, SBX_OWNER_KEY_PREFIX "owner-start"),
			     });
	if (rc == SBX_ENOMEM) {
		ra->oom = 1;
		return 1;
	}
	return rc;
}

int sbx__modal_op_reap_list(
	void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg)
{
	struct sbx__modal *m = state;
	struct reap_arg ra = {.fn = fn, .arg = arg};
	int rc;

	sbx__owner_self(&ra.self, 0);
	rc = each_sandbox(m, tenant, only_local ? ra.self.host : NULL, reap_item, &ra);
	if (rc == 0 && ra.oom)
		rc = sbx__modal_nomem();
	if (rc < 0)
		return sbx__error_wrap("reap");
	return 0;
}

int sbx__modal_op_reap_remove(void *state, const struct sbx__reap_item *item)
{
	return sbx__modal_terminate(state, item->id);
}

/* ===== Open, destroy, kill ===== */

struct find_arg {
	const char *id;
	long long deadline, created;
	char tenant[64];
	int found, detached;
	uint32_t timeout_secs;
};

static int find_one(void *arg, const Modal__Client__SandboxInfo *s)
{
	struct find_arg *fa = arg;
	const char *t = tag_of(s, SBX_OWNER_KEY_PREFIX "tenant");
	const char *pid = tag_of(s, SBX_OWNER_KEY_PREFIX "owner-pid");

	if (strcmp(s->id, fa->id) != 0)
		return 0;
	fa->found = 1;
	snprintf(fa->tenant, sizeof(fa->tenant), "%s", t ? t : "");
	fa->deadline = num_or_zero(tag_of(s, SBX_OWNER_KEY_PREFIX "deadline"));
	fa->created = (long long)s->created_at;
	fa->detached = pid && strcmp(pid, "0") == 0;
	fa->timeout_secs = s->timeout_secs;
	return 1;
}

int sbx__modal_op_open_box(
	void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out)
{
	struct sbx__modal *m = state;
	struct find_arg fa = {.id = id};
	struct sbx__modal_box *b = NULL;
	uint64_t life_ms = 0;
	int rc;

	if (!sbx__modal_valid_id(id))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "modal: '%.64s' is not a sandbox id", id);
	rc = each_sandbox(m, NULL, NULL, find_one, &fa);
	if (rc < 0)
		return rc;
	if (!fa.found)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "modal: no running sandboxio sandbox '%s' in app '%s'", id,
				      SBX_MODAL_APP_NAME);
	if (sbx_policy_set_tenant(p, fa.tenant) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "modal: sandbox %s has a bad tenant tag", id);
	if (fa.timeout_secs)
		life_ms = (uint64_t)fa.timeout_secs * 1000u;
	else if (fa.deadline > fa.created && fa.created > 0)
		life_ms = (uint64_t)(fa.deadline - fa.created) * 1000u;
	if (life_ms)
		sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, life_ms);
	sbx_policy_set_detached(p, fa.detached);
	sbx__error_clear();
	rc = box_attach(m, id, p, sbx__modal_deadline_in(m->api_timeout_ms), &b);
	if (rc < 0)
		return rc;
	*box_out = b;
	*tier_out = SBX_TIER_GVISOR;
	return 0;
}

void sbx__modal_op_release(void *state, void *box)
{
	(void)state;
	box_free(box);
}

int sbx__modal_op_destroy(void *state, void *box)
{
	struct sbx__modal_box *b = box;
	int rc;

	if (!b)
		return 0;
	rc = sbx__modal_terminate(state, b->id);
	box_free(b);
	return rc;
}

int sbx__modal_op_kill(void *state, void *box)
{
	struct sbx__modal_box *b = box;

	__atomic_store_n(&b->killed, 1, __ATOMIC_SEQ_CST);
	return sbx__modal_terminate(state, b->id);
}
