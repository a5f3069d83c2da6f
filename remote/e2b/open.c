/*
 * remote/e2b/open.c: the e2b backend (sbx__e2b_ops): the policy mapped onto
 * an E2B sandbox (a Firecracker microVM per sandbox), runs through envd's
 * process service.
 *
 * Every sandbox is created with allow_internet_access false (E2B's deny of
 * 0.0.0.0/0) and, for an allowlist, allowOut CIDRs on top of that; secure
 * envd (an access token kept only in the box); a lifetime that E2B itself
 * enforces; and the io.sandboxio.* metadata the reaper judges by. What E2B
 * cannot enforce as the policy means it is refused in check() rather than
 * approximated. Create fails closed: the sizes and network mode read back
 * must fit the policy, and any failure after the sandbox exists deletes it.
 *
 * This file opens the backend (the environment read the way E2B's SDKs do,
 * the API key proven at open), checks a policy, and holds the ops table. A
 * sandbox's life is sandbox.c's, a run is run.c's (its Start request
 * start.c's), files are files.c's; the HTTP transport and the control
 * plane are rest.c's, the Connect envelopes connect.c's. Each file uses
 * only those below it: open.c, then files.c, run.c, start.c, sandbox.c,
 * rest.c, connect.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "remote/e2b/e2b-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ===== Configuration ===== */

static int is_loopback_host(const char *h, size_t n)
{
	if ((n == 9 && strncasecmp(h, "localhost", 9) == 0) ||
	    (n == 5 && strncmp(h, "[::1]", 5) == 0))
		return 1;
	if (n >= 4 && strncmp(h, "127.", 4) == 0) {
		for (size_t i = 0; i < n; i++)
			if (!(h[i] == '.' || (h[i] >= '0' && h[i] <= '9')))
				return 0;
		return 1;
	}
	return 0;
}

/*
 * Checks a base URL from the environment: https://HOST[:PORT][/PATH], or
 * http:// to a loopback host only (a local double): the API key and envd's
 * token travel in headers, so plain http anywhere else would expose them.
 */
static int base_url(char **out, const char *var, const char *v)
{
	const char *host;
	size_t n = strlen(v), hl;
	int https = strncmp(v, "https://", 8) == 0;

	if (!https && strncmp(v, "http://", 7) != 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "%s must start with https:// (or http:// to a loopback "
				      "address)",
				      var);
	if (n > 512)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "%s is longer than 512 bytes", var);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("-._~:/[]", c)))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "%s holds a character that is not allowed in a base "
					      "URL (byte %zu); no user, query or fragment",
					      var, i);
	}
	host = v + (https ? 8 : 7);
	hl = strcspn(host, "/");
	if (host[0] == '[') {
		const char *rb = memchr(host, ']', hl);
		hl = rb ? (size_t)(rb - host) + 1 : hl;
	} else {
		const char *colon = memchr(host, ':', hl);
		if (colon)
			hl = (size_t)(colon - host);
	}
	if (hl == 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE, "%s has no host", var);
	if (!https && !is_loopback_host(host, hl))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "%s uses http:// to a host that is not loopback; the API "
				      "key would travel in clear: use https://",
				      var);
	*out = strdup(v);
	if (!*out)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	n = strlen(*out);
	while (n > 0 && (*out)[n - 1] == '/')
		(*out)[--n] = '\0';
	return 0;
}

static int valid_template(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
		      (t[i] >= '0' && t[i] <= '9') || strchr("-._:/@", t[i])))
			return 0;
	return 1;
}

static void share_lock(CURL *c, curl_lock_data data, curl_lock_access access, void *arg)
{
	struct sbx__e2b *e = arg;

	(void)c;
	(void)access;
	pthread_mutex_lock(&e->share_lock[data]);
}

static void share_unlock(CURL *c, curl_lock_data data, void *arg)
{
	struct sbx__e2b *e = arg;

	(void)c;
	pthread_mutex_unlock(&e->share_lock[data]);
}

static void e_free(void *state)
{
	struct sbx__e2b *e = state;

	if (!e)
		return;
	if (e->share)
		curl_share_cleanup(e->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&e->share_lock[i]);
	free(e->api_url);
	free(e->domain);
	free(e->sandbox_url);
	free(e->template_name);
	sbx__e2b_wipe_free(e->api_key);
	free(e);
}

/* Reads the environment the way E2B's SDKs do. */
static int configure(struct sbx__e2b *e)
{
	const char *key = secure_getenv("E2B_API_KEY");
	const char *domain = secure_getenv("E2B_DOMAIN");
	const char *api = secure_getenv("E2B_API_URL");
	const char *sbx = secure_getenv("E2B_SANDBOX_URL");
	const char *tpl = secure_getenv("E2B_TEMPLATE");
	int rc;

	if (!key || !*key)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "e2b: E2B_API_KEY is not set: the e2b backend needs an API "
				      "key from the E2B dashboard");
	for (const char *k = key; *k; k++)
		if ((unsigned char)*k <= 0x20 || (unsigned char)*k >= 0x7f)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "e2b: E2B_API_KEY holds a space or a control or "
					      "non-ASCII byte");
	if (strlen(key) > 512)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: E2B_API_KEY is longer than 512 bytes");
	if (!domain || !*domain)
		domain = SBX_E2B_DEFAULT_DOMAIN;
	if (!sbx__e2b_valid_domain(domain))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: E2B_DOMAIN '%.64s' is not a domain name", domain);
	if (!tpl || !*tpl)
		tpl = SBX_E2B_DEFAULT_TEMPLATE;
	if (!valid_template(tpl))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: E2B_TEMPLATE '%.64s' is not a template name or id",
				      tpl);
	e->api_key = strdup(key);
	e->domain = strdup(domain);
	e->template_name = strdup(tpl);
	if (!e->api_key || !e->domain || !e->template_name)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (api && *api) {
		rc = base_url(&e->api_url, "E2B_API_URL", api);
	} else {
		rc = asprintf(&e->api_url, "https://api.%s", domain) < 0
			     ? sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory")
			     : 0;
		if (rc < 0)
			e->api_url = NULL;
	}
	if (rc == 0 && sbx && *sbx)
		rc = base_url(&e->sandbox_url, "E2B_SANDBOX_URL", sbx);
	return rc;
}

static int e_open(const sbx_backend_options *o, void **state)
{
	struct sbx__e2b *e;
	struct sbx__e2b_resp rs;
	int rc;

	pthread_once(&curl_once, curl_global);
	e = calloc(1, sizeof(*e));
	if (!e)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&e->share_lock[i], NULL);
	e->api_timeout_ms =
		o && o->api_timeout_ms ? (long)o->api_timeout_ms : SBX_E2B_DEFAULT_API_TIMEOUT_MS;
	rc = configure(e);
	if (rc < 0) {
		e_free(e);
		return rc;
	}
	e->share = curl_share_init();
	if (!e->share) {
		e_free(e);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	curl_share_setopt(e->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(e->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(e->share, CURLSHOPT_USERDATA, e);
	curl_share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	curl_share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	sbx__owner_self(&e->self, 1);
	/* The key is checked now, so that a wrong one fails the open. */
	rc = sbx__e2b_api(e, "GET", "/v2/sandboxes?limit=1", NULL, 0, "list sandboxes", NULL, NULL,
			  &rs);
	sbx__e2b_resp_clear(&rs);
	if (rc == SBX_EDENIED)
		rc = sbx__error_wrap("e2b: the API key in E2B_API_KEY was refused by %.200s",
				     e->api_url);
	if (rc < 0) {
		e_free(e);
		return rc;
	}
	/* The reap at open is core's (core/sandbox.c), so that it is audited. */
	*state = e;
	return 0;
}

/* ===== Policy check ===== */

/* E2B denies these to every sandbox whatever allowOut says
 * (DeniedSandboxCIDRs in E2B's infra). */
static const struct {
	uint8_t a, b;
	uint8_t plen;
	const char *text;
} always_denied[] = {
	{10, 0, 8, "10.0.0.0/8"},	  {172, 16, 12, "172.16.0.0/12"},
	{192, 168, 16, "192.168.0.0/16"}, {169, 254, 16, "169.254.0.0/16"},
	{100, 64, 10, "100.64.0.0/10"},	  {127, 0, 8, "127.0.0.0/8"},
};

static int prefix_overlap(const uint8_t *x, unsigned xl, const uint8_t *y, unsigned yl)
{
	unsigned l = xl < yl ? xl : yl;
	uint32_t a = (uint32_t)x[0] << 24 | (uint32_t)x[1] << 16 | (uint32_t)x[2] << 8 | x[3];
	uint32_t b = (uint32_t)y[0] << 24 | (uint32_t)y[1] << 16 | (uint32_t)y[2] << 8 | y[3];
	uint32_t mask = l == 0 ? 0 : 0xffffffffu << (32 - l);

	return (a & mask) == (b & mask);
}

static int e_check(void *state, const sbx_policy *p)
{
	(void)state;
	if ((int)p->min_tier > (int)SBX_TIER_MICROVM)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				      "e2b: the policy demands a tier above microvm, which E2B "
				      "does not have");
	for (size_t i = 0; i < p->allow_n; i++) {
		const struct sbx__allow *a = &p->allow[i];

		if (a->kind == SBX_ALLOW_HOST)
			return sbx__error_set(
				SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				"e2b: allowlist entry '%s': E2B enforces a host name only by TLS "
				"SNI or HTTP Host on ports 80 and 443 and leaves DNS open inside "
				"the sandbox, which is weaker than this policy means; allow the "
				"host's addresses with allow_cidr instead",
				a->name);
		if (a->port)
			return sbx__error_set(
				SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				"e2b: allowlist entry '%s' port %u: E2B's allowOut "
				"has no ports, so a port cannot be enforced; allow the "
				"prefix on every port or use another backend",
				a->name, (unsigned)a->port);
		if (a->family != AF_INET)
			return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
					      "e2b: allowlist entry '%s': E2B's egress controls "
					      "are documented for IPv4 only",
					      a->name);
		for (size_t k = 0; k < SBX_ARRAY_SIZE(always_denied); k++) {
			uint8_t net[4] = {always_denied[k].a, always_denied[k].b, 0, 0};

			if (prefix_overlap(a->addr, a->plen, net, always_denied[k].plen))
				return sbx__error_set(
					SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
					"e2b: allowlist entry '%s' overlaps %s, which E2B "
					"always denies to sandboxes and would drop silently; "
					"allowing it would be accepted and ignored",
					a->name, always_denied[k].text);
		}
	}
	return 0;
}

static int e_image_exists(void *state, const char *ref)
{
	(void)state;
	(void)ref;
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
			      "e2b: templates are checked at create");
}

const struct sbx__backend_ops sbx__e2b_ops = {
	.version = SBX_BACKEND_OPS_VERSION,
	.name = "e2b",
	.open = e_open,
	.free = e_free,
	.check = e_check,
	.create = sbx__e2b_op_create,
	.open_box = sbx__e2b_op_open_box,
	.run = sbx__e2b_op_run,
	.destroy = sbx__e2b_op_destroy,
	.kill = sbx__e2b_op_kill,
	.release = sbx__e2b_op_release,
	.list = sbx__e2b_op_list,
	.reap_list = sbx__e2b_op_reap_list,
	.reap_remove = sbx__e2b_op_reap_remove,
	.image_exists = e_image_exists,
	.import_image = NULL,
	.write_file = sbx__e2b_op_write_file,
	.read_file = sbx__e2b_op_read_file,
};
