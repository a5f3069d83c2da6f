/*
 * remote/e2b/e2b.c: the e2b backend: the policy mapped onto an E2B sandbox
 * (a Firecracker microVM per sandbox), runs through envd's process service.
 *
 * Every sandbox is created with allow_internet_access false (E2B's deny of
 * 0.0.0.0/0) and, for an allowlist, allowOut CIDRs on top of that; secure
 * envd (an access token kept only in the box); a lifetime that E2B itself
 * enforces; and the io.sandboxio.* metadata the reaper judges by. What E2B
 * cannot enforce as the policy means it is refused in check() rather than
 * approximated. Create fails closed: the sizes and network mode read back
 * must fit the policy, and any failure after the sandbox exists deletes it.
 *
 * A run is one Connect server stream (process.Process/Start, JSON codec)
 * decoded by connect.c, driven by a libcurl multi handle so that stdin can
 * be fed (SendInput) while output streams back, and so that a kill from
 * another thread wakes the run at once. envd kills the process at the
 * Connect deadline; the host keeps a deadline of its own past that and
 * deletes the sandbox when the stream outlives it. Any break of the
 * protocol deletes the sandbox: nothing more from it is trusted.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "remote/e2b/e2b-int.h"
#include "remote/remote-int.h"
#include "util/base64.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/secmem.h"

#define MiB (1024ll * 1024ll)
#define ERRBODY_MAX 65536  /* a non-200 answer to Start */
#define POLL_MS 250	   /* a run's loop wakes at least this often */
#define HEALTH_FIRST_MS 50 /* the first pause between envd health probes */
#define HEALTH_MAX_MS 500

/* jansson provides json_decrefp(). */
#define _cleanup_json_ _sbx_cleanup_(json_decrefp)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

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

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* Runs fn after an error, keeping the first error's record. */
struct saved_error {
	int code;
	sbx_error_class klass;
	long http;
	char msg[SBX_ERROR_MSG_MAX];
};

static void save_error(struct saved_error *s)
{
	const sbx_error *e = sbx_error_last();

	s->code = e->code;
	s->klass = e->klass;
	s->http = e->http_status;
	snprintf(s->msg, sizeof(s->msg), "%s", e->message);
}

static int restore_error(const struct saved_error *s)
{
	sbx__error_set(s->code, s->klass, "%s", s->msg);
	sbx__error_http(s->http);
	return s->code;
}

/* Deletes a sandbox after a failure, keeping the failure's error. */
static int delete_keep(struct e2b *e, const char *id, int rc)
{
	struct saved_error s;

	save_error(&s);
	sbx__e2b_delete(e, id, e->api_timeout_ms);
	restore_error(&s);
	return rc;
}

/* Whether s[0..len) is valid UTF-8 (envd takes JSON strings). By hand, not
 * jansson's check: the strings may be secrets, which must not be copied
 * into memory that is not wiped. */
static int utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (size_t k = 1; k <= n; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
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

static int valid_domain(const char *d)
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
	struct e2b *e = arg;

	(void)c;
	(void)access;
	pthread_mutex_lock(&e->share_lock[data]);
}

static void share_unlock(CURL *c, curl_lock_data data, void *arg)
{
	struct e2b *e = arg;

	(void)c;
	pthread_mutex_unlock(&e->share_lock[data]);
}

static void e_free(void *state)
{
	struct e2b *e = state;

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
	wipe_free(e->api_key);
	free(e);
}

/* Reads the environment the way E2B's SDKs do. */
static int configure(struct e2b *e)
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
	if (!valid_domain(domain))
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

static int e_open(void **state, const sbx_backend_options *o)
{
	struct e2b *e;
	struct e2b_resp rs;
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
		const struct sbx_allow *a = &p->allow[i];

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

/* ===== Boxes ===== */

static void box_free(struct e2b_box *b)
{
	if (!b)
		return;
	free(b->id);
	free(b->envd_url);
	wipe_free(b->token);
	sbx_policy_free(b->policy);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* A box for sandbox id, reached through domain (NULL: the configured one). */
static int box_new(struct e2b *e,
		   struct e2b_box **out,
		   const char *id,
		   const char *domain,
		   const char *token,
		   const sbx_policy *p)
{
	struct e2b_box *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	pthread_mutex_init(&b->lock, NULL);
	if (!domain || !valid_domain(domain))
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

static const char *template_of(struct e2b *e, const sbx_policy *p)
{
	return (p->set & SBX__SET_IMAGE) && p->image ? p->image : e->template_name;
}

static char *
create_body(struct e2b *e, const sbx_policy *p, long long timeout_s, long long deadline)
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
static int wait_envd(struct e2b *e, struct e2b_box *b, uint64_t deadline, uint64_t create_ms)
{
	_sbx_cleanup_free_ char *url = NULL;
	char last[SBX_ERROR_MSG_MAX] = "no answer";
	long pause = HEALTH_FIRST_MS;

	if (asprintf(&url, "%s/health", b->envd_url) < 0)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	for (;;) {
		long left = left_ms(deadline);
		struct e2b_req rq = {.method = "GET", .url = url, .box = b, .max = 4096};
		struct e2b_resp rs;
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

static int
e_create(void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out)
{
	struct e2b *e = state;
	uint64_t create_ms = p->timeout_ms[SBX_TIMEOUT_CREATE];
	uint64_t deadline = sbx__e2b_now_ms() + create_ms;
	uint64_t life_ms = p->timeout_ms[SBX_TIMEOUT_SANDBOX];
	long long timeout_s = (long long)((life_ms + 999) / 1000);
	_sbx_cleanup_free_ char *body = NULL, *id = NULL;
	_cleanup_json_ json_t *resp = NULL, *detail = NULL;
	const char *tpl = template_of(e, p), *sid, *token, *domain;
	struct e2b_box *b = NULL;
	struct e2b_resp rs;
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

static int
e_open_box(void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out)
{
	struct e2b *e = state;
	_cleanup_json_ json_t *d = NULL;
	struct e2b_resp rs;
	json_t *md;
	const char *tenant, *dl;
	long long started, deadline, v;
	struct e2b_box *b = NULL;
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

static void e_release(void *state, void *box)
{
	(void)state;
	box_free(box);
}

static int e_destroy(void *state, void *box)
{
	struct e2b_box *b = box;
	int rc;

	if (!b)
		return 0;
	rc = sbx__e2b_delete(state, b->id, 0);
	box_free(b);
	return rc;
}

/* Marks the box dead and wakes a run in flight on it. */
static void mark_dead(struct e2b_box *b)
{
	__atomic_store_n(&b->dead, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&b->lock);
	if (b->wake)
		curl_multi_wakeup(b->wake);
	pthread_mutex_unlock(&b->lock);
}

static int e_kill(void *state, void *box)
{
	struct e2b_box *b = box;

	mark_dead(b);
	/* Its own handle: the run's may be busy on another thread. */
	return sbx__e2b_delete(state, b->id, 0);
}

/* ===== Runs ===== */

/* A JSON writer that counts first (p NULL) and writes second. */
struct jw {
	char *p;
	size_t o;
};

static void jw_raw(struct jw *w, const char *s)
{
	size_t n = strlen(s);

	if (w->p)
		memcpy(w->p + w->o, s, n);
	w->o += n;
}

static void jw_str(struct jw *w, const char *s, size_t n)
{
	if (w->p) {
		w->p[w->o] = '"';
		w->o += 1 + sbx__json_escape(w->p + w->o + 1, s, n);
		w->p[w->o++] = '"';
	} else {
		w->o += 2 + sbx__json_escaped_len(s, n);
	}
}

/* Whether env entry i's name appears again later (the later one wins). */
static int env_overridden(const char *const *env, size_t i)
{
	size_t nl = strcspn(env[i], "=");

	for (size_t k = i + 1; env[k]; k++)
		if (strncmp(env[k], env[i], nl) == 0 && env[k][nl] == '=')
			return 1;
	return 0;
}

static void start_json(struct jw *w, const struct sbx_run_req *req, char *const *argv)
{
	int first = 1;

	jw_raw(w, "{\"process\":{\"cmd\":");
	jw_str(w, argv[0], strlen(argv[0]));
	jw_raw(w, ",\"args\":[");
	for (size_t i = 1; argv[i]; i++) {
		if (i > 1)
			jw_raw(w, ",");
		jw_str(w, argv[i], strlen(argv[i]));
	}
	jw_raw(w, "],\"envs\":{");
	for (size_t i = 0; req->env && req->env[i]; i++) {
		size_t nl = strcspn(req->env[i], "=");

		if (!req->env[i][nl] || env_overridden(req->env, i))
			continue;
		if (!first)
			jw_raw(w, ",");
		first = 0;
		jw_str(w, req->env[i], nl);
		jw_raw(w, ":");
		jw_str(w, req->env[i] + nl + 1, strlen(req->env[i] + nl + 1));
	}
	jw_raw(w, "}");
	if (req->workdir) {
		jw_raw(w, ",\"cwd\":");
		jw_str(w, req->workdir, strlen(req->workdir));
	}
	jw_raw(w, req->stdin_len ? "},\"stdin\":true}" : "},\"stdin\":false}");
}

/*
 * The Start request: one envelope. Its envs may hold secrets, so the JSON
 * is escaped straight into a buffer that is wiped when freed (locked memory
 * when the run has secrets) and never passes through jansson's copies.
 */
struct body {
	char *p;
	size_t len, size;
	int locked;
};

static void body_free(struct body *b)
{
	if (!b->p)
		return;
	if (b->locked) {
		sbx__secmem_free(b->p, b->size);
	} else {
		explicit_bzero(b->p, b->size);
		free(b->p);
	}
	b->p = NULL;
}

static int start_body(struct body *out, const struct sbx_run_req *req, char *const *argv)
{
	struct jw w = {0};
	size_t json_len;

	for (size_t i = 0; argv[i]; i++)
		if (!utf8_ok(argv[i], strlen(argv[i])))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "e2b: argument %zu is not valid UTF-8; envd takes "
					      "JSON strings",
					      i);
	for (size_t i = 0; req->env && req->env[i]; i++)
		if (!utf8_ok(req->env[i], strlen(req->env[i])))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "e2b: environment entry %zu is not valid UTF-8; "
					      "envd takes JSON strings",
					      i);
	if (req->workdir && !utf8_ok(req->workdir, strlen(req->workdir)))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: the working directory is not valid UTF-8");
	start_json(&w, req, argv);
	json_len = w.o;
	if (json_len > SBX_E2B_FRAME_MAX)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_REMOTE,
				      "e2b: the run's request is %zu bytes, over the %u-byte "
				      "limit",
				      json_len, SBX_E2B_FRAME_MAX);
	out->size = SBX_CONNECT_HDR + json_len + 1;
	out->locked = req->has_secrets;
	out->p = out->locked ? sbx__secmem_alloc(out->size) : calloc(1, out->size);
	if (!out->p)
		return out->locked
			       ? sbx__error_os(SBX_EDENIED, errno,
					       "cannot lock memory for the run's environment "
					       "(RLIMIT_MEMLOCK)")
			       : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	sbx__connect_prefix((unsigned char *)out->p, 0, (uint32_t)json_len);
	w = (struct jw){.p = out->p + SBX_CONNECT_HDR};
	start_json(&w, req, argv);
	out->len = SBX_CONNECT_HDR + w.o;
	return 0;
}

/* What Go's os.ProcessState says for each signal ("signal: killed"). */
static const char *const signal_names[] = {
	[SIGHUP] = "hangup",
	[SIGINT] = "interrupt",
	[SIGQUIT] = "quit",
	[SIGILL] = "illegal instruction",
	[SIGTRAP] = "trace/breakpoint trap",
	[SIGABRT] = "aborted",
	[SIGBUS] = "bus error",
	[SIGFPE] = "floating point exception",
	[SIGKILL] = "killed",
	[SIGUSR1] = "user defined signal 1",
	[SIGSEGV] = "segmentation fault",
	[SIGUSR2] = "user defined signal 2",
	[SIGPIPE] = "broken pipe",
	[SIGALRM] = "alarm clock",
	[SIGTERM] = "terminated",
	[SIGSTKFLT] = "stack fault",
	[SIGCHLD] = "child exited",
	[SIGCONT] = "continued",
	[SIGSTOP] = "stopped (signal)",
	[SIGTSTP] = "stopped",
	[SIGTTIN] = "stopped (tty input)",
	[SIGTTOU] = "stopped (tty output)",
	[SIGURG] = "urgent I/O condition",
	[SIGXCPU] = "CPU time limit exceeded",
	[SIGXFSZ] = "file size limit exceeded",
	[SIGVTALRM] = "virtual timer expired",
	[SIGPROF] = "profiling timer expired",
	[SIGWINCH] = "window changed",
	[SIGIO] = "I/O possible",
	[SIGPWR] = "power failure",
	[SIGSYS] = "bad system call",
};

/* "signal: NAME[ (core dumped)]" to a signal number; 0 if not. */
static int parse_signal(const char *status)
{
	char name[64];
	const char *s;
	size_t n;

	if (strncmp(status, "signal: ", 8) != 0)
		return 0;
	s = status + 8;
	n = strlen(s);
	if (n > 14 && strcmp(s + n - 14, " (core dumped)") == 0)
		n -= 14;
	if (n == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, s, n);
	name[n] = '\0';
	for (size_t i = 1; i < SBX_ARRAY_SIZE(signal_names); i++)
		if (signal_names[i] && strcmp(signal_names[i], name) == 0)
			return (int)i;
	if (strncmp(name, "signal ", 7) == 0) {
		char *end;
		long v = strtol(name + 7, &end, 10);

		if (!*end && v > 0 && v < 128)
			return (int)v;
	}
	return 0;
}

/* One process in the sandbox, from its Start stream. */
struct proc {
	struct e2b *e;
	struct e2b_box *b;
	const struct sbx_run_req *req;
	CURL *stream;
	long status; /* of the Start answer; 0 until its first body byte */
	struct sbx__connect_dec dec;
	struct sbx_buf errbody; /* a non-200 answer */
	/* Why the stream was stopped from a callback. */
	int proto; /* it broke the protocol: the error is in err */
	int canceled, nomem;
	struct saved_error err;
	/* What it said. */
	int have_start, have_end, have_eos;
	uint32_t pid;
	long long exit_code;
	int exited;
	char end_status[128];
	char eos_code[48];
	char eos_msg[SBX_E2B_MSG_MAX + 1];
	/* stdin, fed in SendInput calls once the pid is known */
	const unsigned char *in;
	size_t in_left;
	int in_closing, in_done;
	CURL *in_easy;
	struct curl_slist *in_h;
	char *in_url, *in_body;
	struct e2b_req in_rq;
	struct e2b_resp in_rs;
};

static int proto_error(struct proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Untrusted text, made fit for a message. */
static const char *clean(struct proc *p, char *dst, size_t n, const char *s)
{
	sbx__e2b_sanitize(p->e, dst, n, s ? s : "", s ? strlen(s) : 0, p->b->token);
	return dst;
}

static int proto_error(struct proc *p, const char *fmt, ...)
{
	char msg[SBX_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE, "e2b: sandbox %s: %s", p->b->id, msg);
	save_error(&p->err);
	p->proto = 1;
	return SBX_EENGINE;
}

static int on_event_data(struct proc *p, json_t *data)
{
	const char *key;
	json_t *v;
	int stream;

	if (json_object_size(data) == 0)
		return 0;
	if (json_object_size(data) != 1)
		return proto_error(p, "a data event with %zu outputs", json_object_size(data));
	json_object_foreach(data, key, v)
	{
		const char *text = json_string_value(v);
		size_t tl = json_string_length(v);
		unsigned char *bytes;
		size_t n;
		int rc;

		if (strcmp(key, "stdout") == 0)
			stream = SBX_STREAM_STDOUT;
		else if (strcmp(key, "stderr") == 0)
			stream = SBX_STREAM_STDERR;
		else
			return proto_error(p, "a data event of kind '%s'",
					   clean(p, (char[40]){0}, 40, key));
		if (!text)
			return proto_error(p, "a data event whose %s is not a string", key);
		bytes = malloc(sbx__base64_decoded_max(tl) + 1);
		if (!bytes) {
			p->nomem = 1;
			return -2;
		}
		if (sbx__base64_decode(bytes, &n, text, tl, 0) < 0) {
			free(bytes);
			return proto_error(p, "a data event whose %s is not base64", key);
		}
		rc = n ? p->req->sink(p->req->sink_arg, stream, bytes, n) : 0;
		explicit_bzero(bytes, n);
		free(bytes);
		if (rc == 1) {
			p->canceled = 1;
			return 1;
		}
		if (rc < 0) {
			p->nomem = 1;
			return -2;
		}
	}
	return 0;
}

static int on_event_end(struct proc *p, json_t *end)
{
	json_t *code = json_object_get(end, "exitCode"), *exited = json_object_get(end, "exited");
	json_t *status = json_object_get(end, "status");

	if (!json_is_object(end) || (code && !json_is_integer(code)) ||
	    (exited && !json_is_boolean(exited)) || (status && !json_is_string(status)))
		return proto_error(p, "a malformed end event");
	p->have_end = 1;
	p->exit_code = code ? (long long)json_integer_value(code) : 0;
	p->exited = json_is_true(exited);
	snprintf(p->end_status, sizeof(p->end_status), "%s",
		 status ? json_string_value(status) : "");
	return 0;
}

static int on_frame(int kind, const char *json, size_t len, void *arg)
{
	struct proc *p = arg;
	_cleanup_json_ json_t *j = NULL;
	json_error_t jerr;
	const char *key;
	json_t *ev, *v;

	j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(j))
		return proto_error(p, "malformed JSON in the process stream (%.80s at byte %d)",
				   j ? "not an object" : jerr.text, j ? 0 : jerr.position);
	if (kind == SBX_CONNECT_END) {
		json_t *err = json_object_get(j, "error");

		p->have_eos = 1;
		if (!err)
			return 0;
		if (!json_is_object(err) || !json_is_string(json_object_get(err, "code")))
			return proto_error(p, "a malformed error in the end-of-stream frame");
		sbx__e2b_sanitize(p->e, p->eos_code, sizeof(p->eos_code),
				  json_string_value(json_object_get(err, "code")),
				  json_string_length(json_object_get(err, "code")), p->b->token);
		if (json_is_string(json_object_get(err, "message")))
			sbx__e2b_sanitize(p->e, p->eos_msg, sizeof(p->eos_msg),
					  json_string_value(json_object_get(err, "message")),
					  json_string_length(json_object_get(err, "message")),
					  p->b->token);
		return 0;
	}
	ev = json_object_get(j, "event");
	if (json_object_size(j) != 1 || !json_is_object(ev) || json_object_size(ev) != 1)
		return proto_error(p, "a message that is not one process event");
	if (p->have_end)
		return proto_error(p, "an event after the end event");
	json_object_foreach(ev, key, v)
	{
		if (strcmp(key, "start") == 0) {
			json_t *pid = json_object_get(v, "pid");

			if (p->have_start || !json_is_integer(pid) ||
			    json_integer_value(pid) <= 0 ||
			    json_integer_value(pid) > (json_int_t)UINT32_MAX)
				return proto_error(p, "a start event that is repeated or has no "
						      "valid pid");
			p->pid = (uint32_t)json_integer_value(pid);
			p->have_start = 1;
		} else if (strcmp(key, "keepalive") == 0) {
			continue;
		} else if (!p->have_start) {
			return proto_error(p, "a %s event before the start event",
					   clean(p, (char[40]){0}, 40, key));
		} else if (strcmp(key, "data") == 0) {
			if (!json_is_object(v))
				return proto_error(p, "a data event that is not an object");
			return on_event_data(p, v);
		} else if (strcmp(key, "end") == 0) {
			return on_event_end(p, v);
		} else {
			return proto_error(p, "an unknown event '%s'",
					   clean(p, (char[40]){0}, 40, key));
		}
	}
	return 0;
}

static size_t on_stream(char *data, size_t sz, size_t n, void *arg)
{
	struct proc *p = arg;
	size_t len = sz * n;
	int rc;

	if (!p->status) {
		const char *ct = NULL;

		curl_easy_getinfo(p->stream, CURLINFO_RESPONSE_CODE, &p->status);
		curl_easy_getinfo(p->stream, CURLINFO_CONTENT_TYPE, &ct);
		if (p->status == 200 &&
		    (!ct || strncasecmp(ct, "application/connect+json", 24) != 0)) {
			proto_error(p,
				    "the process stream has Content-Type '%s', not "
				    "application/connect+json",
				    clean(p, (char[72]){0}, 72, ct));
			return 0;
		}
	}
	if (p->status != 200) {
		sbx__buf_append(&p->errbody, data, len); /* capped */
		return len;
	}
	rc = sbx__connect_feed(&p->dec, data, len, on_frame, p);
	if (rc == 0)
		return len;
	if (rc < 0 && !p->proto && !p->canceled && !p->nomem) {
		/* The decoder's own finding (flags, size, bytes after the end). */
		if (rc == SBX_ENOMEM) {
			p->nomem = 1;
		} else {
			save_error(&p->err);
			p->proto = 1;
		}
	}
	return 0; /* stops the transfer */
}

/* Starts the next stdin call: a SendInput chunk, then CloseStdin. */
static int stdin_next(struct proc *p, CURLM *m)
{
	const char *what = p->in_left ? "SendInput" : "CloseStdin";
	size_t chunk = p->in_left > SBX_E2B_STDIN_CHUNK ? SBX_E2B_STDIN_CHUNK : p->in_left;
	static const char *const extra[] = {"Connect-Protocol-Version: 1", NULL};
	size_t need;

	free(p->in_url);
	free(p->in_body);
	p->in_url = p->in_body = NULL;
	if (asprintf(&p->in_url, "%s/process.Process/%s", p->b->envd_url, what) < 0) {
		p->in_url = NULL;
		return -1;
	}
	need = 64 + sbx__base64_encoded_len(chunk);
	p->in_body = malloc(need);
	if (!p->in_body)
		return -1;
	if (p->in_left) {
		size_t o = (size_t)snprintf(p->in_body, need,
					    "{\"process\":{\"pid\":%lu},\"input\":{\"stdin\":\"",
					    (unsigned long)p->pid);
		o += sbx__base64_encode(p->in_body + o, p->in, chunk);
		memcpy(p->in_body + o, "\"}}", 4);
		p->in += chunk;
		p->in_left -= chunk;
	} else {
		snprintf(p->in_body, need, "{\"process\":{\"pid\":%lu}}", (unsigned long)p->pid);
		p->in_closing = 1;
	}
	p->in_rq = (struct e2b_req){
		.method = "POST",
		.url = p->in_url,
		.box = p->b,
		.content_type = "application/json",
		.body = p->in_body,
		.body_len = strlen(p->in_body),
		.timeout_ms = p->e->api_timeout_ms,
		.max = 65536,
		.extra = extra,
	};
	p->in_easy = sbx__e2b_prepare(p->e, &p->in_rq, &p->in_rs, &p->in_h);
	if (!p->in_easy)
		return -1;
	curl_multi_add_handle(m, p->in_easy);
	return 0;
}

/* One stdin call ended. A failure (the program exited and stopped reading,
 * say) drops the rest of the input, as a closed pipe would. */
static void stdin_done(struct proc *p, CURLM *m, CURLcode cc)
{
	long status = 0;

	curl_easy_getinfo(p->in_easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(m, p->in_easy);
	curl_easy_cleanup(p->in_easy);
	p->in_easy = NULL;
	sbx__e2b_headers_free(p->in_h);
	p->in_h = NULL;
	sbx__e2b_resp_clear(&p->in_rs);
	if (p->in_closing)
		p->in_done = 1;
	else if (cc != CURLE_OK || status != 200)
		p->in_left = 0; /* straight to CloseStdin */
}

static void stdin_clear(struct proc *p, CURLM *m)
{
	if (p->in_easy) {
		curl_multi_remove_handle(m, p->in_easy);
		curl_easy_cleanup(p->in_easy);
		p->in_easy = NULL;
	}
	sbx__e2b_headers_free(p->in_h);
	p->in_h = NULL;
	sbx__e2b_resp_clear(&p->in_rs);
	free(p->in_url);
	free(p->in_body);
	p->in_url = p->in_body = NULL;
}

/* Kills the process (best effort), then deletes the sandbox. */
static void end_sandbox(struct proc *p, int signal_first)
{
	struct saved_error s;

	save_error(&s);
	if (signal_first && p->have_start && !p->have_end) {
		static const char *const extra[] = {"Connect-Protocol-Version: 1", NULL};
		_sbx_cleanup_free_ char *url = NULL;
		char body[96];
		struct e2b_resp rs;

		snprintf(body, sizeof(body),
			 "{\"process\":{\"pid\":%lu},\"signal\":\"SIGNAL_SIGKILL\"}",
			 (unsigned long)p->pid);
		if (asprintf(&url, "%s/process.Process/SendSignal", p->b->envd_url) >= 0) {
			struct e2b_req rq = {.method = "POST",
					     .url = url,
					     .box = p->b,
					     .content_type = "application/json",
					     .body = body,
					     .body_len = strlen(body),
					     .timeout_ms = p->e->api_timeout_ms,
					     .max = 65536,
					     .extra = extra};
			sbx__e2b_http(p->e, &rq, &rs);
			sbx__e2b_resp_clear(&rs);
		} else {
			url = NULL;
		}
	}
	mark_dead(p->b);
	sbx__e2b_delete(p->e, p->b->id, 0);
	restore_error(&s);
}

static void set_ended(const struct sbx_run_req *req, int how)
{
	if (req->ended)
		*req->ended = how;
}

/* The error of an end-of-stream frame that carries one. */
static int eos_error(struct proc *p)
{
	static const struct {
		const char *code;
		int err;
	} map[] = {
		{"invalid_argument", SBX_EINVALID}, {"not_found", SBX_ENOTFOUND},
		{"permission_denied", SBX_EDENIED}, {"unauthenticated", SBX_EDENIED},
		{"unavailable", SBX_EUNAVAILABLE},  {"resource_exhausted", SBX_EUNAVAILABLE},
		{"canceled", SBX_ECANCELED},	    {"failed_precondition", SBX_EINVALID},
	};
	int code = SBX_EENGINE;

	for (size_t i = 0; i < SBX_ARRAY_SIZE(map); i++)
		if (strcmp(map[i].code, p->eos_code) == 0)
			code = map[i].err;
	return sbx__error_set(code, SBX_ERRCLASS_REMOTE,
			      "e2b: sandbox %s: the process failed: %s%s%s", p->b->id, p->eos_code,
			      p->eos_msg[0] ? ": " : "", p->eos_msg);
}

/* The result of an end event. */
static int map_end(struct proc *p, uint64_t elapsed, sbx_result *res)
{
	int sig;

	if (p->exited || strncmp(p->end_status, "exit status ", 12) == 0) {
		long long code = p->exited ? p->exit_code : strtoll(p->end_status + 12, NULL, 10);

		if (code < 0 || code > 255)
			return proto_error(p, "an exit code of %lld", code);
		res->status = SBX_RUN_EXITED;
		res->exit_code = (int)code;
		return 0;
	}
	sig = parse_signal(p->end_status);
	if (!sig)
		return proto_error(p, "an end event with status '%s'",
				   clean(p, (char[72]){0}, 72, p->end_status));
	if (sig == SIGKILL && elapsed >= p->req->timeout_ms) {
		/* envd kills the process at the Connect deadline. */
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		return 0;
	}
	res->status = SBX_RUN_KILLED;
	res->term_signal = sig;
	res->exit_code = 128 + sig;
	return 0;
}

/*
 * Starts argv (final: already wrapped) in the sandbox and streams it to its
 * end. Fills res's status fields; output goes to req->sink.
 */
static int proc_run(struct e2b *e,
		    struct e2b_box *b,
		    const struct sbx_run_req *req,
		    char *const *argv,
		    sbx_result *res)
{
	char tmo[64];
	const char *const extra[] = {"Connect-Protocol-Version: 1", tmo,
				     "Keepalive-Ping-Interval: 50", NULL};
	_sbx_cleanup_free_ char *url = NULL;
	struct body body = {0};
	struct proc p = {
		.e = e, .b = b, .req = req, .in = req->stdin_data, .in_left = req->stdin_len};
	struct e2b_req rq;
	struct e2b_resp rs;
	struct curl_slist *h = NULL;
	uint64_t t0 = sbx__e2b_now_ms(), host_deadline = t0 + req->timeout_ms + SBX_E2B_GRACE_MS;
	CURLcode stream_cc = CURLE_OK;
	int stream_done = 0, killed = 0, backstop = 0, rc;
	CURLM *m = NULL;

	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s was deleted (killed, canceled or broken); "
				      "runs are refused",
				      b->id);
	rc = start_body(&body, req, argv);
	if (rc < 0)
		return rc;
	snprintf(tmo, sizeof(tmo), "Connect-Timeout-Ms: %llu", (unsigned long long)req->timeout_ms);
	if (asprintf(&url, "%s/process.Process/Start", b->envd_url) < 0) {
		url = NULL;
		body_free(&body);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	}
	rq = (struct e2b_req){.method = "POST",
			      .url = url,
			      .box = b,
			      .content_type = "application/connect+json",
			      .body = body.p,
			      .body_len = body.len,
			      .timeout_ms = 0, /* the host deadline below bounds it */
			      .extra = extra};
	sbx__connect_init(&p.dec, SBX_E2B_FRAME_MAX);
	p.errbody.cap = ERRBODY_MAX;
	p.stream = sbx__e2b_prepare(e, &rq, &rs, &h);
	m = curl_multi_init();
	if (!p.stream || !m) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
		goto out;
	}
	curl_easy_setopt(p.stream, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(p.stream, CURLOPT_WRITEDATA, &p);
	curl_multi_add_handle(m, p.stream);
	pthread_mutex_lock(&b->lock);
	b->wake = m;
	pthread_mutex_unlock(&b->lock);
	for (;;) {
		CURLMsg *msg;
		int running = 0, q;
		uint64_t now;
		long wait;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &q))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			if (msg->easy_handle == p.stream) {
				stream_done = 1;
				stream_cc = msg->data.result;
			} else if (msg->easy_handle == p.in_easy) {
				stdin_done(&p, m, msg->data.result);
			}
		}
		if (stream_done)
			break;
		if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST)) {
			killed = 1;
			break;
		}
		now = sbx__e2b_now_ms();
		if (now >= host_deadline) {
			backstop = 1;
			break;
		}
		if (p.have_start && !p.have_end && req->stdin_len && !p.in_done && !p.in_easy &&
		    stdin_next(&p, m) < 0) {
			p.nomem = 1;
			break;
		}
		wait = (long)(host_deadline - now);
		curl_multi_poll(m, NULL, 0, wait < POLL_MS ? (int)wait : POLL_MS, NULL);
	}
	pthread_mutex_lock(&b->lock);
	b->wake = NULL;
	pthread_mutex_unlock(&b->lock);
	stdin_clear(&p, m);
	curl_multi_remove_handle(m, p.stream);
	res->duration_ms = sbx__e2b_now_ms() - t0;
	res->path = SBX_RUN_PATH_UNKNOWN;

	if (p.canceled) {
		end_sandbox(&p, 1);
		set_ended(req, SBX__ENDED_KILLED);
		rc = sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE,
				    "e2b: run canceled by the output callback; sandbox %s was "
				    "deleted",
				    b->id);
		goto out;
	}
	if (p.nomem) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory for output");
		goto out;
	}
	if (killed) {
		/* sbx_sandbox_kill() from another thread, while the run was in flight. */
		if (p.have_end && map_end(&p, res->duration_ms, res) == 0) {
			rc = 0;
			goto out;
		}
		sbx__error_clear();
		res->status = SBX_RUN_KILLED;
		res->term_signal = SIGKILL;
		res->exit_code = 128 + SIGKILL;
		rc = 0;
		goto out;
	}
	if (backstop) {
		/* The stream outlived its deadline by the grace: end the sandbox. */
		end_sandbox(&p, 1);
		set_ended(req, SBX__ENDED_TIMEOUT);
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		rc = 0;
		goto out;
	}
	if (p.proto) {
		restore_error(&p.err);
		rc = SBX_EENGINE;
		goto broken;
	}
	if (stream_done) {
		curl_easy_getinfo(p.stream, CURLINFO_RESPONSE_CODE, &rs.status);
		if (!p.status)
			p.status = rs.status;
	}
	if (p.status == 0) {
		/* No answer at all: nothing started, nothing to end. */
		rc = sbx__e2b_finish(
			p.stream, stream_cc == CURLE_OK ? CURLE_GOT_NOTHING : stream_cc, &rq, &rs);
		goto out;
	}
	if (p.status != 200) {
		struct e2b_resp er = {.status = p.status, .body = p.errbody};

		rc = sbx__e2b_status_error(e, "start process", b->id, &er);
		if (rc == SBX_ENOTFOUND && p.status == 502)
			__atomic_store_n(&b->dead, 1, __ATOMIC_SEQ_CST);
		goto out;
	}
	rc = sbx__connect_finish(&p.dec);
	if (rc < 0)
		goto broken;
	if (p.eos_code[0] && strcmp(p.eos_code, "deadline_exceeded") == 0) {
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		rc = 0;
		goto out;
	}
	if (!p.have_end && p.eos_code[0]) {
		rc = eos_error(&p);
		goto out;
	}
	if (!p.have_end) {
		rc = proto_error(&p, "the process stream ended without an end event");
		goto broken;
	}
	rc = map_end(&p, res->duration_ms, res);
	if (rc < 0)
		goto broken;
	goto out;
broken:
	/* A protocol break: nothing more from this sandbox is trusted. */
	rc = sbx__error_code() ? sbx__error_code() : rc;
	end_sandbox(&p, 0);
	set_ended(req, SBX__ENDED_ERROR);
out:
	if (p.stream) {
		curl_multi_remove_handle(m, p.stream);
		curl_easy_cleanup(p.stream);
	}
	if (m)
		curl_multi_cleanup(m);
	sbx__e2b_headers_free(h);
	sbx__e2b_resp_clear(&rs);
	sbx__buf_clear(&p.errbody);
	sbx__connect_done(&p.dec);
	body_free(&body);
	return rc;
}

static int e_run(void *state, void *box, const struct sbx_run_req *req, sbx_result *res)
{
	struct e2b_box *b = box;
	char **argv = NULL;
	int rc;

	struct sbx_run_req r = *req;

	/* The built-in default working directory is left to the template
	 * (E2B's templates have no /workspace; a cwd that does not exist fails
	 * the run); one set by the policy or the run is sent as it is. */
	if (r.workdir && !(b->policy->set & SBX__SET_WORKDIR) &&
	    strcmp(r.workdir, SBX_DEFAULT_WORKDIR) == 0)
		r.workdir = NULL;
	rc = sbx__remote_argv(&argv, b->policy, req->argv);
	if (rc < 0)
		return rc;
	rc = proc_run(state, b, &r, argv, res);
	sbx__remote_argv_free(argv);
	return rc;
}

/* ===== Files ===== */

static char *files_url(struct e2b_box *b, const char *path)
{
	char *esc = curl_easy_escape(NULL, path, 0), *url = NULL;

	if (esc &&
	    asprintf(&url, "%s/files?path=%s&username=%s", b->envd_url, esc, SBX_E2B_USER) < 0)
		url = NULL;
	curl_free(esc);
	return url;
}

/* Collects a helper run's stderr. */
static int collect_sink(void *arg, int stream, const void *data, size_t len)
{
	if (stream == SBX_STREAM_STDERR && sbx__buf_append(arg, data, len) < 0)
		return -2;
	return 0;
}

static int e_write_file(
	void *state, void *box, const char *path, const void *data, size_t len, unsigned int mode)
{
	struct e2b *e = state;
	struct e2b_box *b = box;
	_sbx_cleanup_free_ char *url = files_url(b, path);
	char what[320];
	struct e2b_req rq = {.method = "POST",
			     .url = url,
			     .box = b,
			     .content_type = "application/octet-stream",
			     .body = data,
			     .body_len = len,
			     .timeout_ms = e->api_timeout_ms,
			     .max = 65536};
	struct e2b_resp rs;
	int rc;

	if (!url)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s was deleted; files are refused", b->id);
	snprintf(what, sizeof(what), "write file %.256s", path);
	rc = sbx__e2b_http(e, &rq, &rs);
	if (rc == 0 && rs.status != 200)
		rc = sbx__e2b_status_error(e, what, b->id, &rs);
	sbx__e2b_resp_clear(&rs);
	if (rc < 0 || mode == 0644)
		return rc;
	{
		/* envd writes 0644 (umask 022); other bits are set by a run of chmod. */
		char m[16];
		char *const argv[] = {"chmod", m, "--", (char *)path, NULL};
		struct sbx_buf err = {.cap = 4096};
		int ended = SBX__ENDED_NO;
		const struct sbx_run_req req = {
			.argv = (const char *const *)argv,
			.workdir = "/",
			.timeout_ms = (uint64_t)e->api_timeout_ms,
			.sink = collect_sink,
			.sink_arg = &err,
			.ended = &ended,
		};
		sbx_result res = {0};

		snprintf(m, sizeof(m), "%o", mode);
		rc = proc_run(e, b, &req, argv, &res);
		if (rc == 0 && (res.status != SBX_RUN_EXITED || res.exit_code != 0))
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					    "e2b: chmod %o %.256s: %s %d: %.300s", mode, path,
					    sbx_run_status_name(res.status), res.exit_code,
					    err.data ? err.data : "");
		sbx__buf_clear(&err);
	}
	return rc;
}

static int
e_read_file(void *state, void *box, const char *path, size_t max, char **out, size_t *len)
{
	struct e2b *e = state;
	struct e2b_box *b = box;
	_sbx_cleanup_free_ char *url = files_url(b, path);
	char what[320];
	struct e2b_req rq = {.method = "GET",
			     .url = url,
			     .box = b,
			     .timeout_ms = e->api_timeout_ms,
			     .max = max ? max : 1};
	struct e2b_resp rs;
	int rc;

	if (!url)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s was deleted; files are refused", b->id);
	snprintf(what, sizeof(what), "read file %.256s", path);
	rc = sbx__e2b_http(e, &rq, &rs);
	if (rc == SBX_ETOOBIG && rs.status == 200) {
		sbx__e2b_resp_clear(&rs);
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_REMOTE,
				      "e2b: read file %.256s: larger than %zu bytes", path, max);
	}
	if (rc == SBX_ETOOBIG)
		rc = 0; /* an error answer longer than max: its status says enough */
	if (rc == 0 && rs.status != 200)
		rc = sbx__e2b_status_error(e, what, b->id, &rs);
	if (rc == 0) {
		size_t n = rs.body.len;
		char *data = sbx__buf_steal(&rs.body);

		if (!data) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
		} else {
			*len = n;
			*out = data;
		}
	}
	sbx__e2b_resp_clear(&rs);
	return rc;
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

static int e_list(void *state, const char *tenant, sbx_list_cb cb, void *payload)
{
	struct list_ctx c = {.tenant = tenant, .cb = cb, .payload = payload};

	return sbx__e2b_list(state, tenant, NULL, list_one, &c);
}

struct condemned {
	char id[65];
	char tenant[64];
	sbx_reap_reason reason;
	const char *why;
};

struct reap_ctx {
	struct e2b *e;
	const char *tenant;
	int only_local;
	struct condemned *v;
	size_t n, alloc;
	int nomem;
};

/* Judges each listed sandbox; the condemned are removed after the listing. */
static int reap_one(json_t *item, void *arg)
{
	struct reap_ctx *c = arg;
	json_t *md = json_object_get(item, "metadata");
	const char *id = json_string_value(json_object_get(item, "sandboxID"));
	const char *tenant = meta(md, SBX_OWNER_KEY_PREFIX "tenant");
	const char *host = meta(md, SBX_OWNER_KEY_PREFIX "owner-host");
	const char *why = "";
	int reason;

	if (!sbx__e2b_valid_id(id) || !is_ours(md) ||
	    (c->tenant && (!tenant || strcmp(tenant, c->tenant) != 0)) ||
	    (c->only_local && (!host || strcmp(host, c->e->self.host) != 0)))
		return 0;
	reason = sbx__owner_judge(&c->e->self, meta(md, SBX_OWNER_KEY_PREFIX "deadline"), host,
				  meta(md, SBX_OWNER_KEY_PREFIX "owner-boot"),
				  meta(md, SBX_OWNER_KEY_PREFIX "owner-pid"),
				  meta(md, SBX_OWNER_KEY_PREFIX "owner-start"), &why);
	if (!reason)
		return 0;
	if (c->n == c->alloc) {
		size_t na = c->alloc ? c->alloc * 2 : 16;
		struct condemned *nv = realloc(c->v, na * sizeof(*nv));

		if (!nv) {
			c->nomem = 1;
			return 1;
		}
		c->v = nv;
		c->alloc = na;
	}
	snprintf(c->v[c->n].id, sizeof(c->v[c->n].id), "%s", id);
	snprintf(c->v[c->n].tenant, sizeof(c->v[c->n].tenant), "%s", tenant ? tenant : "");
	c->v[c->n].reason = (sbx_reap_reason)reason;
	c->v[c->n].why = why;
	c->n++;
	return 0;
}

static int
e_reap(void *state, const char *tenant, int dry_run, int only_local, sbx_reap_cb cb, void *payload)
{
	struct e2b *e = state;
	struct reap_ctx c = {.e = e, .tenant = tenant, .only_local = only_local};
	int rc, count = 0;

	rc = sbx__e2b_list(e, tenant, only_local ? e->self.host : NULL, reap_one, &c);
	if (rc == 0 && c.nomem)
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (rc < 0) {
		free(c.v);
		return sbx__error_wrap("reap: list sandboxes");
	}
	for (size_t i = 0; i < c.n; i++) {
		char detail[SBX_ERROR_MSG_MAX] = "";
		sbx_reap_info info = {
			.id = c.v[i].id,
			.tenant = c.v[i].tenant,
			.reason = c.v[i].reason,
			.detail = c.v[i].why,
		};

		if (info.reason != SBX_REAP_SKIPPED && !dry_run) {
			if (sbx__e2b_delete(e, info.id, 0) == 0) {
				info.removed = 1;
				count++;
			} else {
				snprintf(detail, sizeof(detail), "%s", sbx_error_last()->message);
				info.detail = detail;
				sbx__error_clear();
			}
		} else if (info.reason != SBX_REAP_SKIPPED) {
			count++;
		}
		if (cb && cb(&info, payload) != 0)
			break;
	}
	free(c.v);
	return count;
}

static int e_image_exists(void *state, const char *ref)
{
	(void)state;
	(void)ref;
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
			      "e2b: templates are checked at create");
}

const struct sbx_backend_ops sbx__e2b_ops = {
	.version = SBX_BACKEND_OPS_VERSION,
	.name = "e2b",
	.open = e_open,
	.free = e_free,
	.check = e_check,
	.create = e_create,
	.open_box = e_open_box,
	.run = e_run,
	.destroy = e_destroy,
	.kill = e_kill,
	.release = e_release,
	.list = e_list,
	.reap = e_reap,
	.image_exists = e_image_exists,
	.import_image = NULL,
	.write_file = e_write_file,
	.read_file = e_read_file,
};
