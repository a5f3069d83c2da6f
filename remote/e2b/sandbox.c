/*
 * remote/e2b/sandbox.c: an E2B sandbox's life: create (the request built
 * from the policy, the sizes and network mode read back and checked, envd
 * waited for), open an existing one from its metadata, release, destroy
 * and kill, and the listing and the reaper's judgement of each listed
 * sandbox; and the small helpers the backend's other files share.
 *
 * Create fails closed: the sizes and network mode read back must fit the
 * policy, and any failure after the sandbox exists deletes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "remote/e2b/e2b-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define MiB (1024ll * 1024ll)
#define HEALTH_FIRST_MS 50 /* the first pause between envd health probes */
#define HEALTH_MAX_MS 500

/* ===== Small helpers ===== */

static long left_ms(uint64_t deadline)
{
	uint64_t now = sbx__e2b_now_ms();

	return now >= deadline ? 0 : (long)(deadline - now);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void sbx__e2b_wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* Deletes a sandbox after a failure, keeping the failure's error. */
static int delete_keep(struct sbx__e2b *e, const char *id, int rc)
{
	struct sbx__error_saved s;

	sbx__error_save(&s);
	sbx__e2b_delete(e, id, e->api_timeout_ms);
	sbx__error_restore(&s, s.code);
	sbx__error_http(s.http_status);
	return rc;
}

/* Whether d is a plausible domain name (configured, or answered by E2B). */
int sbx__e2b_valid_domain(const char *d)
{
	size_t n = strlen(d);

	if (n == 0 || n > 253 || d[0] == '.' || d[0] == '-' || d[n - 1] == '.' || strstr(d, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((d[i] >= 'a' && d[i] <= 'z') || (d[i] >= 'A' && d[i] <= 'Z') ||
		      (d[i] >= '0' && d[i] <= '9') || d[i] == '-' || d[i] == '.'))
			return 0;
	return 1;
}

/* ===== Boxes ===== */

static void box_free(struct sbx__e2b_box *b)
{
	if (!b)
		return;
	free(b->id);
	free(b->envd_url);
	sbx__e2b_wipe_free(b->token);
	sbx_policy_free(b->policy);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* A box for sandbox id, reached through domain (NULL: the configured one). */
static int box_new(struct sbx__e2b *e,
		   struct sbx__e2b_box **out,
		   const char *id,
		   const char *domain,
		   const char *token,
		   const sbx_policy *p)
{
	struct sbx__e2b_box *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	pthread_mutex_init(&b->lock, NULL);
	if (!domain || !sbx__e2b_valid_domain(domain))
		domain = e->domain;
	b->id = strdup(id);
	if (e->sandbox_url)
		b->envd_url = strdup(e->sandbox_url);
	else if (asprintf(&b->envd_url, "https://%d-%s.%s", SBX_E2B_ENVD_PORT, id, domain) < 0)
		b->envd_url = NULL;
	if (token && !(b->token = strdup(token))) {
		box_free(b);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	if (!b->id || !b->envd_url) {
		box_free(b);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	rc = sbx_policy_dup(&b->policy, p);
	if (rc < 0) {
		box_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

/* ===== Create ===== */

static const char *template_of(struct sbx__e2b *e, const sbx_policy *p)
{
	return (p->set & SBX__SET_IMAGE) && p->image ? p->image : e->template_name;
}

static char *
create_body(struct sbx__e2b *e, const sbx_policy *p, long long timeout_s, long long deadline)
{
	_cleanup_json_ json_t *body = NULL;
	struct sbx__owner o;
	char dl[32], pid[32], start[32];
	json_t *md, *env, *allow;

	sbx__owner_self(&o, p->detached);
	snprintf(dl, sizeof(dl), "%lld", deadline);
	snprintf(pid, sizeof(pid), "%lld", o.pid);
	snprintf(start, sizeof(start), "%llu", o.start);
	md = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", SBX_OWNER_KEY_MANAGED,
		       SBX_OWNER_MANAGED_VALUE, SBX_OWNER_KEY_PREFIX "tenant", p->tenant,
		       SBX_OWNER_KEY_PREFIX "deadline", dl, SBX_OWNER_KEY_PREFIX "owner-host",
		       o.host, SBX_OWNER_KEY_PREFIX "owner-boot", o.boot,
		       SBX_OWNER_KEY_PREFIX "owner-pid", pid, SBX_OWNER_KEY_PREFIX "owner-start",
		       start);
	env = json_object();
	for (size_t i = 0; env && i < p->env_n; i++) {
		const char *eq = strchr(p->env[i], '=');
		_sbx_cleanup_free_ char *name =
			eq ? strndup(p->env[i], (size_t)(eq - p->env[i])) : NULL;
		json_t *v = eq ? json_string(eq + 1) : NULL;

		/* Later entries win, as in a process environment. */
		if (!name || !v || json_object_set_new(env, name, v) < 0) {
			json_decref(v);
			json_decref(env);
			json_decref(md);
			sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				       "e2b: the policy's env entry %zu is not NAME=VALUE in UTF-8",
				       i);
			return NULL;
		}
	}
	body = json_pack("{s:s, s:I, s:o, s:o, s:b, s:b}", "templateID", template_of(e, p),
			 "timeout", (json_int_t)timeout_s, "metadata", md, "envVars", env, "secure",
			 1, "allow_internet_access", 0);
	if (!body) {
		sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "build create request");
		return NULL;
	}
	if (p->allow_n) {
		allow = json_array();
		for (size_t i = 0; i < p->allow_n; i++)
			json_array_append_new(allow, json_string(p->allow[i].name));
		json_object_set_new(
			body, "network",
			json_pack("{s:o, s:[s]}", "allowOut", allow, "denyOut", "0.0.0.0/0"));
	}
	{
		char *text = json_dumps(body, JSON_COMPACT);

		if (!text)
			sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "build create request");
		return text;
	}
}

/* An integer field of a readback, or -1 when missing or not a positive integer. */
static long long int_field(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (long long)json_integer_value(v)
							       : -1;
}

/* Verifies what E2B made against the policy: no internet, sizes within caps. */
static int check_readback(const char *id, const char *tpl, const sbx_policy *p, json_t *d)
{
	long long cpu = int_field(d, "cpuCount"), mem = int_field(d, "memoryMB");
	long long disk = int_field(d, "diskSizeMB");
	long long pcpu = p->limit[SBX_LIMIT_CPU_MILLI];

	if (!json_is_false(json_object_get(d, "allowInternetAccess")))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s does not report allowInternetAccess false, "
				      "so its network cannot be verified closed",
				      id);
	if (cpu < 0 || mem < 0 || disk < 0)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s does not report its %s, so the cap cannot "
				      "be verified",
				      id,
				      cpu < 0	? "cpuCount"
				      : mem < 0 ? "memoryMB"
						: "diskSizeMB");
	/* cpu * 1000 > pcpu, without overflowing for any count E2B reports. */
	if (cpu > pcpu / 1000)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "e2b: template '%s' gives %lld CPU%s, the policy caps "
				      "%lld.%03lld; raise the policy's cpu or use a template that "
				      "fits",
				      tpl, cpu, cpu == 1 ? "" : "s", pcpu / 1000, pcpu % 1000);
	if (mem > p->limit[SBX_LIMIT_MEMORY] / MiB)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "e2b: template '%s' gives %lld MiB of memory, the policy "
				      "caps %lld MiB; raise the policy's memory or use a template "
				      "that fits",
				      tpl, mem, (long long)(p->limit[SBX_LIMIT_MEMORY] / MiB));
	if (disk > p->limit[SBX_LIMIT_DISK] / MiB)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "e2b: template '%s' gives %lld MiB of disk, the policy caps "
				      "%lld MiB; raise the policy's disk or use a template that "
				      "fits",
				      tpl, disk, (long long)(p->limit[SBX_LIMIT_DISK] / MiB));
	return 0;
}

/* Waits until envd answers its health check, within the create deadline. */
static int
wait_envd(struct sbx__e2b *e, struct sbx__e2b_box *b, uint64_t deadline, uint64_t create_ms)
{
	_sbx_cleanup_free_ char *url = NULL;
	char last[SBX_ERROR_MSG_MAX] = "no answer";
	long pause = HEALTH_FIRST_MS;

	if (asprintf(&url, "%s/health", b->envd_url) < 0)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	for (;;) {
		long left = left_ms(deadline);
		struct sbx__e2b_req rq = {.method = "GET", .url = url, .box = b, .max = 4096};
		struct sbx__e2b_resp rs;
		int rc;

		if (left <= 0)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_REMOTE,
					      "e2b: envd of sandbox %s did not answer %s within "
					      "the %llu ms create deadline (last: %s)",
					      b->id, url, (unsigned long long)create_ms, last);
		rq.timeout_ms = left < e->api_timeout_ms ? left : e->api_timeout_ms;
		rc = sbx__e2b_http(e, &rq, &rs);
		if (rc == 0 && rs.status >= 200 && rs.status <= 299) {
			sbx__e2b_resp_clear(&rs);
			return 0;
		}
		if (rc == 0)
			snprintf(last, sizeof(last), "HTTP %ld", rs.status);
		else
			snprintf(last, sizeof(last), "%s", sbx_error_last()->message);
		sbx__e2b_resp_clear(&rs);
		sbx__error_clear();
		left = left_ms(deadline);
		sleep_ms(pause < left ? pause : left);
		pause = pause * 2 > HEALTH_MAX_MS ? HEALTH_MAX_MS : pause * 2;
	}
}

/* The tier the service announces (a compatible server says what it really
 * gives), else E2B's. */
static int tier_of(const char *announced, sbx_tier *out)
{
	if (!announced[0]) {
		*out = SBX_TIER_MICROVM;
		return 0;
	}
	if (sbx_tier_parse(out, announced) < 0)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: the service announces an unknown tier '%.31s'",
				      announced);
	return 0;
}

int sbx__e2b_op_create(
	void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out)
{
	struct sbx__e2b *e = state;
	uint64_t create_ms = p->timeout_ms[SBX_TIMEOUT_CREATE];
	uint64_t deadline = sbx__e2b_now_ms() + create_ms;
	uint64_t life_ms = p->timeout_ms[SBX_TIMEOUT_SANDBOX];
	long long timeout_s = (long long)((life_ms + 999) / 1000);
	_sbx_cleanup_free_ char *body = NULL, *id = NULL;
	_cleanup_json_ json_t *resp = NULL, *detail = NULL;
	const char *tpl = template_of(e, p), *sid, *token, *domain;
	struct sbx__e2b_box *b = NULL;
	struct sbx__e2b_resp rs;
	sbx_tier tier;
	int rc;

	if (timeout_s < 1)
		timeout_s = 1;
	body = create_body(e, p, timeout_s, (long long)time(NULL) + timeout_s);
	if (!body)
		return sbx__error_code();
	rc = sbx__e2b_api(e, "POST", "/sandboxes", body, left_ms(deadline) ?: 1, "create sandbox",
			  NULL, &resp, &rs);
	if (rc < 0) {
		sbx__e2b_resp_clear(&rs);
		return rc;
	}
	sid = json_string_value(json_object_get(resp, "sandboxID"));
	if (!sbx__e2b_valid_id(sid)) {
		sbx__e2b_resp_clear(&rs);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "e2b: create sandbox: the answer has no valid sandboxID");
	}
	id = strdup(sid);
	if (!id) {
		sbx__e2b_resp_clear(&rs);
		return delete_keep(
			e, sid, sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory"));
	}
	rc = tier_of(rs.tier, &tier);
	sbx__e2b_resp_clear(&rs);
	if (rc < 0)
		goto rollback;
	if (tier < p->min_tier) {
		rc = sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				    "e2b: the service gives tier %s, the policy demands at least "
				    "%s",
				    sbx_tier_name(tier), sbx_tier_name(p->min_tier));
		goto rollback;
	}
	token = json_string_value(json_object_get(resp, "envdAccessToken"));
	domain = json_string_value(json_object_get(resp, "domain"));
	rc = sbx__e2b_get(e, id, left_ms(deadline) ?: 1, &detail, NULL);
	if (rc < 0)
		goto rollback;
	rc = check_readback(id, tpl, p, detail);
	if (rc < 0)
		goto rollback;
	rc = box_new(e, &b, id, domain, token, p);
	if (rc < 0)
		goto rollback;
	rc = wait_envd(e, b, deadline, create_ms);
	if (rc < 0) {
		box_free(b);
		goto rollback;
	}
	*box_out = b;
	*id_out = SBX_STEAL(&id);
	*tier_out = tier;
	return 0;
rollback:
	return delete_keep(e, id, rc);
}

/* ===== Open an existing sandbox ===== */

/* RFC 3339 ("2026-01-02T03:04:05.123Z", "...+02:00") to unix seconds; -1 if not. */
static long long parse_rfc3339(const char *s)
{
	struct tm tm = {0};
	const char *p;
	long long t;

	if (!s)
		return -1;
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	t = (long long)timegm(&tm);
	if (*p == 'Z' || *p == 'z')
		return p[1] ? -1 : t;
	if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int hh = (p[1] - '0') * 10 + (p[2] - '0'), mm = (p[4] - '0') * 10 + (p[5] - '0');
		long long off = (long long)hh * 3600 + mm * 60;

		return *p == '+' ? t - off : t + off;
	}
	return -1;
}

static const char *meta(json_t *md, const char *key)
{
	return json_string_value(json_object_get(md, key));
}

static int is_ours(json_t *md)
{
	const char *v = meta(md, SBX_OWNER_KEY_MANAGED);

	return v && strcmp(v, SBX_OWNER_MANAGED_VALUE) == 0;
}

int sbx__e2b_op_open_box(
	void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out)
{
	struct sbx__e2b *e = state;
	_cleanup_json_ json_t *d = NULL;
	struct sbx__e2b_resp rs;
	json_t *md;
	const char *tenant, *dl;
	long long started, deadline, v;
	struct sbx__e2b_box *b = NULL;
	sbx_tier tier;
	int rc;

	if (!sbx__e2b_valid_id(id))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: '%.64s' is not a sandbox id", id);
	rc = sbx__e2b_get(e, id, 0, &d, &rs);
	if (rc == 0)
		rc = tier_of(rs.tier, &tier);
	sbx__e2b_resp_clear(&rs);
	if (rc < 0)
		return rc;
	md = json_object_get(d, "metadata");
	if (!is_ours(md))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s is not a sandboxio sandbox (no %s=%s "
				      "metadata)",
				      id, SBX_OWNER_KEY_MANAGED, SBX_OWNER_MANAGED_VALUE);
	tenant = meta(md, SBX_OWNER_KEY_PREFIX "tenant");
	if (!tenant || sbx_policy_set_tenant(p, tenant) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s: its tenant metadata is missing or invalid",
				      id);
	/* The rest as it was made, where E2B says: lifetime, sizes, owner. */
	dl = meta(md, SBX_OWNER_KEY_PREFIX "deadline");
	started = parse_rfc3339(json_string_value(json_object_get(d, "startedAt")));
	deadline = dl ? strtoll(dl, NULL, 10) : 0;
	/* What E2B reports is taken without signed overflow, and a product
	 * only where it cannot wrap; anything larger keeps the default. */
	if (started > 0 && deadline > started &&
	    (uint64_t)deadline - (uint64_t)started <= SBX_MAX_TIMEOUT_MS / 1000u)
		sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX,
					  ((uint64_t)deadline - (uint64_t)started) * 1000u);
	if ((v = int_field(d, "cpuCount")) > 0 && v <= INT64_MAX / 1000)
		sbx_policy_set_limit(p, SBX_LIMIT_CPU_MILLI, v * 1000);
	if ((v = int_field(d, "memoryMB")) > 0 && v <= INT64_MAX / MiB)
		sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, v * MiB);
	if ((v = int_field(d, "diskSizeMB")) > 0 && v <= INT64_MAX / MiB)
		sbx_policy_set_limit(p, SBX_LIMIT_DISK, v * MiB);
	{
		const char *pid = meta(md, SBX_OWNER_KEY_PREFIX "owner-pid");
		sbx_policy_set_detached(p, pid && strcmp(pid, "0") == 0);
	}
	sbx__error_clear(); /* a value out of range keeps the default */
	rc = box_new(e, &b, id, json_string_value(json_object_get(d, "domain")),
		     json_string_value(json_object_get(d, "envdAccessToken")), p);
	if (rc < 0)
		return rc;
	*box_out = b;
	*tier_out = tier;
	return 0;
}

void sbx__e2b_op_release(void *state, void *box)
{
	(void)state;
	box_free(box);
}

int sbx__e2b_op_destroy(void *state, void *box)
{
	struct sbx__e2b_box *b = box;
	int rc;

	if (!b)
		return 0;
	rc = sbx__e2b_delete(state, b->id, 0);
	box_free(b);
	return rc;
}

/* Marks the box dead and wakes a run in flight on it. */
void sbx__e2b_mark_dead(struct sbx__e2b_box *b)
{
	__atomic_store_n(&b->dead, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&b->lock);
	if (b->wake)
		curl_multi_wakeup(b->wake);
	pthread_mutex_unlock(&b->lock);
}

int sbx__e2b_op_kill(void *state, void *box)
{
	struct sbx__e2b_box *b = box;

	sbx__e2b_mark_dead(b);
	/* Its own handle: the run's may be busy on another thread. */
	return sbx__e2b_delete(state, b->id, 0);
}

/* ===== Listing and reaping ===== */

struct list_ctx {
	const char *tenant;
	sbx_list_cb cb;
	void *payload;
};

static int list_one(json_t *item, void *arg)
{
	struct list_ctx *c = arg;
	json_t *md = json_object_get(item, "metadata");
	const char *dl = meta(md, SBX_OWNER_KEY_PREFIX "deadline");
	const char *state = json_string_value(json_object_get(item, "state"));
	const char *image = json_string_value(json_object_get(item, "alias"));
	sbx_sandbox_info info = {
		.id = json_string_value(json_object_get(item, "sandboxID")),
		.tenant = meta(md, SBX_OWNER_KEY_PREFIX "tenant"),
		.image = image ? image : json_string_value(json_object_get(item, "templateID")),
		.state = state ? state : "running",
		.created = parse_rfc3339(json_string_value(json_object_get(item, "startedAt"))),
		.deadline = dl ? strtoll(dl, NULL, 10) : 0,
	};

	/* The server filtered by metadata; check again, it costs nothing. */
	if (!sbx__e2b_valid_id(info.id) || !is_ours(md) || !info.tenant ||
	    (c->tenant && strcmp(info.tenant, c->tenant) != 0))
		return 0;
	if (!info.image)
		info.image = "";
	if (info.created < 0)
		info.created = 0;
	return c->cb(&info, c->payload);
}

int sbx__e2b_op_list(void *state, const char *tenant, sbx_list_cb cb, void *payload)
{
	struct list_ctx c = {.tenant = tenant, .cb = cb, .payload = payload};

	return sbx__e2b_list(state, tenant, NULL, list_one, &c);
}

struct reap_ctx {
	struct sbx__e2b *e;
	const char *tenant;
	int only_local;
	sbx__reap_fn fn;
	void *arg;
	int nomem;
};

/* Hands each listed sandbox of ours to the reaper (core/reap.c). */
static int reap_one(json_t *item, void *arg)
{
	struct reap_ctx *c = arg;
	json_t *md = json_object_get(item, "metadata");
	const char *id = json_string_value(json_object_get(item, "sandboxID"));
	const char *tenant = meta(md, SBX_OWNER_KEY_PREFIX "tenant");
	const char *host = meta(md, SBX_OWNER_KEY_PREFIX "owner-host");
	char tenant_buf[64];
	int rc;

	if (!sbx__e2b_valid_id(id) || !is_ours(md) ||
	    (c->tenant && (!tenant || strcmp(tenant, c->tenant) != 0)) ||
	    (c->only_local && (!host || strcmp(host, c->e->self.host) != 0)))
		return 0;
	snprintf(tenant_buf, sizeof(tenant_buf), "%s", tenant ? tenant : "");
	rc = c->fn(c->arg, &(struct sbx__reap_item){
				   .id = id,
				   .tenant = tenant_buf,
				   .self = &c->e->self,
				   .deadline = meta(md, SBX_OWNER_KEY_PREFIX "deadline"),
				   .host = host,
				   .boot = meta(md, SBX_OWNER_KEY_PREFIX "owner-boot"),
				   .pid = meta(md, SBX_OWNER_KEY_PREFIX "owner-pid"),
				   .start = meta(md, SBX_OWNER_KEY_PREFIX "owner-start"),
			   });
	if (rc == SBX_ENOMEM) {
		c->nomem = 1;
		return 1;
	}
	return rc;
}

int sbx__e2b_op_reap_list(
	void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg)
{
	struct sbx__e2b *e = state;
	struct reap_ctx c = {
		.e = e, .tenant = tenant, .only_local = only_local, .fn = fn, .arg = arg};
	int rc;

	rc = sbx__e2b_list(e, tenant, only_local ? e->self.host : NULL, reap_one, &c);
	if (rc == 0 && c.nomem)
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (rc < 0)
		return sbx__error_wrap("reap: list sandboxes");
	return 0;
}

int sbx__e2b_op_reap_remove(void *state, const struct sbx__reap_item *item)
{
	return sbx__e2b_delete(state, item->id, 0);
}
