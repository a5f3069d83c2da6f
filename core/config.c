/*
 * core/config.c: the operator config object, the checks that other modules
 * call where their input enters, and the one merge of built-in defaults,
 * operator defaults and a call's request. Parsing, the file's trust,
 * narrowing and describing are in core/config-*.c (core/config-impl.h).
 *
 * An agent that chooses a call's arguments must not be able to widen a
 * sandbox beyond what the operator allows, so the merge checks every value
 * the call set explicitly against the operator's ceilings and refuses, never
 * clamps: a silent clamp would hide an attack and surprise an honest caller
 * alike. The config itself is read as if an attacker wrote it: one table of
 * keys, unknown keys, duplicate keys and wrong types refused, no value that
 * unsets a control, and a file that someone else could write refused, as
 * ssh refuses such key files. sbx_sandbox_create() and sbx_config_describe()
 * both go through sbx__config_merge(), so what `config --effective` shows is
 * what a create does.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sandboxio/config.h>
#include <sandboxio/sandbox.h>

#include "core/config-impl.h"
#include "core/config-int.h"
#include "core/limit-kinds.h"
#include "util/cleanup.h"
#include "util/error-int.h"

/* The built-in config: every field zero. */
const struct sbx_config sbx__config_builtin = {0};

/* ===== Formatting ===== */

const char *sbx__config_fmt_size(char *buf, size_t n, int64_t v)
{
	static const struct {
		int shift;
		char c;
	} u[] = {{40, 't'}, {30, 'g'}, {20, 'm'}, {10, 'k'}};

	for (size_t i = 0; i < SBX_ARRAY_SIZE(u); i++)
		if (v > 0 && v % (1ll << u[i].shift) == 0) {
			snprintf(buf, n, "%lld%c", (long long)(v >> u[i].shift), u[i].c);
			return buf;
		}
	snprintf(buf, n, "%lld", (long long)v);
	return buf;
}

/* "1.5" from 1500: thousandths without trailing zeros. */
static const char *fmt_milli(char *buf, size_t n, int64_t v)
{
	size_t len;

	if (v % 1000 == 0) {
		snprintf(buf, n, "%lld", (long long)(v / 1000));
		return buf;
	}
	snprintf(buf, n, "%lld.%03lld", (long long)(v / 1000), (long long)(v % 1000));
	len = strlen(buf);
	while (len && buf[len - 1] == '0')
		buf[--len] = '\0';
	return buf;
}

/* A slot's value as the config spells it: "300 s", "2", "512m", "256". */
const char *sbx__config_fmt_slot(char *buf, size_t n, int slot, int64_t v)
{
	char t[32];

	if (slot == 0) {
		snprintf(buf, n, "%s s", fmt_milli(t, sizeof(t), v));
		return buf;
	}
	switch (sbx__limit_kinds[slot].unit) {
	case SBX__LIMIT_UNIT_MILLI:
		return fmt_milli(buf, n, v);
	case SBX__LIMIT_UNIT_SIZE:
		return sbx__config_fmt_size(buf, n, v);
	case SBX__LIMIT_UNIT_COUNT:
		break;
	}
	snprintf(buf, n, "%lld", (long long)v);
	return buf;
}

const char *sbx__config_source_name(const sbx_config *c)
{
	return c->source ? c->source : "(built-in)";
}

/*
 * The file a value that the config sets came from: the config's own source,
 * or for a layered config the system or narrowing file. builtin names the
 * built-in config ("builtin" in descriptions, "(built-in)" in messages).
 */
const char *sbx__config_from_name(const sbx_config *c, unsigned char from, const char *builtin)
{
	if (c->layered && from == FROM_SYSTEM)
		return c->sys_source ? c->sys_source : builtin;
	return c->source ? c->source : builtin;
}

#define SRC(c, f) sbx__config_from_name((c), (c)->f, "(built-in)")

int sbx__config_push(char ***list, size_t *n, const char *s)
{
	char **g;
	char *d = strdup(s);

	if (!d)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	g = realloc(*list, (*n + 1) * sizeof(char *));
	if (!g) {
		free(d);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	}
	*list = g;
	(*list)[(*n)++] = d;
	return 0;
}

static void list_free(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

int sbx__config_valid_digest(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
		return 0;
	for (s += 7; *s; s++)
		if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
			return 0;
	return 1;
}

/* Parses "a.b.c.d/n" or "x::y/n" (prefix required unless need_prefix is 0). */
int sbx__config_cidr_parse(struct sbx__cidr *out, const char *text, int need_prefix)
{
	char addr[64];
	const char *slash = strchr(text, '/');
	size_t alen = slash ? (size_t)(slash - text) : strlen(text);
	unsigned long pfx;
	char *end;

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(addr))
		return -1;
	memcpy(addr, text, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, out->addr) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, addr, out->addr) == 1)
		out->family = AF_INET6;
	else
		return -1;
	if (!slash) {
		if (need_prefix)
			return -1;
		out->prefix = out->family == AF_INET ? 32 : 128;
		return 0;
	}
	if (!isdigit((unsigned char)slash[1]) || (slash[1] == '0' && slash[2]))
		return -1;
	errno = 0;
	pfx = strtoul(slash + 1, &end, 10);
	if (errno || *end || pfx > (out->family == AF_INET ? 32u : 128u))
		return -1;
	out->prefix = (unsigned int)pfx;
	return 0;
}

/* Whether the first bits bits of a and b are equal. */
static int prefix_equal(const unsigned char *a, const unsigned char *b, unsigned int bits)
{
	unsigned int full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (!rest)
		return 1;
	return ((a[full] ^ b[full]) & (0xff << (8 - rest)) & 0xff) == 0;
}

/* Whether want lies inside one of c's egress.cidrs. */
int sbx__config_cidr_inside(const sbx_config *c, const struct sbx__cidr *want)
{
	for (size_t i = 0; i < c->cidrs_n; i++) {
		const struct sbx__cidr *have = &c->cidrs[i];

		if (have->family == want->family && want->prefix >= have->prefix &&
		    prefix_equal(want->addr, have->addr, have->prefix))
			return 1;
	}
	return 0;
}

void sbx_config_free(sbx_config *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	free(c->source);
	free(c->sys_source);
	free(c->def_image);
	free(c->hosts_file);
	free(c->audit_path);
	list_free(c->images, c->images_n);
	free(c->cidrs);
	list_free(c->cidr_text, c->cidrs_n);
	list_free(c->hosts, c->hosts_n);
	list_free(c->backends, c->backends_n);
	free(c);
}

sbx_config *sbx__config_ref(const sbx_config *c)
{
	sbx_config *m = (sbx_config *)c;

	if (m)
		__atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
	return m;
}

const char *sbx_config_source(const sbx_config *c)
{
	return c ? c->source : NULL;
}

uint64_t sbx_config_timeout_ceiling_ms(const sbx_config *c)
{
	return c && c->bound[1][0] ? (uint64_t)c->bound[1][0] : SBX_MAX_TIMEOUT_MS;
}

uint64_t sbx_config_pause_ceiling_ms(const sbx_config *c)
{
	return c && c->pause_ceil ? (uint64_t)c->pause_ceil : SBX_PAUSE_MAX_DEFAULT_MS;
}

int64_t sbx_config_limit_ceiling(const sbx_config *c, sbx_limit_kind which)
{
	if (!sbx__limit_desc(which))
		return 0;
	return c && c->bound[1][which] ? c->bound[1][which] : slot_max(which);
}

/* ===== Checks ===== */

static int deny(const char *src, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* SBX_EDENIED, with the config file src named at the end. */
static int deny(const char *src, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
			      "%s in config %s; a call may narrow what the operator allows, never "
			      "widen it",
			      msg, src);
}

int sbx__config_check_backend(const sbx_config *c, const char *backend)
{
	if (!c || !c->backends_set)
		return 0;
	for (size_t i = 0; i < c->backends_n; i++)
		if (backend && strcmp(c->backends[i], backend) == 0)
			return 0;
	return deny(SRC(c, from_backends), "backend \"%.32s\" is not in backends",
		    backend ? backend : "(null)");
}

int sbx__config_check_limit(const sbx_config *c, sbx_limit_kind kind, int64_t v)
{
	char a[32], b[32];

	if (!c || !sbx__limit_desc(kind) || !c->bound[1][kind] || v <= c->bound[1][kind])
		return 0;
	return deny(SRC(c, from_bound[1][kind]), "%s: the request, %s, is above ceilings.%s (%s)",
		    slot_name(kind), sbx__config_fmt_slot(a, sizeof(a), kind, v), slot_name(kind),
		    sbx__config_fmt_slot(b, sizeof(b), kind, c->bound[1][kind]));
}

int sbx__config_check_pause(const sbx_config *c, uint64_t ceiling_ms, uint64_t max_ms)
{
	char a[32], b[32];

	if (max_ms <= ceiling_ms)
		return 0;
	if (!c)
		c = &sbx__config_builtin;
	return deny(c->pause_ceil ? SRC(c, from_pause) : "(built-in)",
		    "pause: the bound asked for, %s, is above ceilings.pause (%s)",
		    sbx__config_fmt_slot(a, sizeof(a), 0, (int64_t)max_ms),
		    sbx__config_fmt_slot(b, sizeof(b), 0, (int64_t)ceiling_ms));
}

int sbx__config_check_secrets(const sbx_config *c, size_t n)
{
	if (!c || !c->secrets_set || c->secrets || n == 0)
		return 0;
	return deny(SRC(c, from_secrets), "%zu secret(s) were passed, and secrets is false", n);
}

int sbx__config_check_egress_host(const sbx_config *c, const char *host)
{
	if (!c || (!c->is_file && !c->egress_set))
		return 0;
	if (!c->egress_set)
		return deny(SRC(c, from_egress),
			    "egress to host \"%.253s\" was asked for, and there is no egress key: "
			    "no call may open the network",
			    host ? host : "(null)");
	for (size_t i = 0; host && i < c->hosts_n; i++)
		if (strcasecmp(c->hosts[i], host) == 0)
			return 0;
	return deny(SRC(c, from_egress), "host \"%.253s\" is not in egress.hosts",
		    host ? host : "(null)");
}

int sbx__config_check_egress_cidr(const sbx_config *c, const char *cidr)
{
	struct sbx__cidr want;

	if (!c || (!c->is_file && !c->egress_set))
		return 0;
	if (!c->egress_set)
		return deny(SRC(c, from_egress),
			    "egress to %.64s was asked for, and there is no egress key: no call "
			    "may open the network",
			    cidr ? cidr : "(null)");
	if (!cidr || sbx__config_cidr_parse(&want, cidr, 0) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "egress entry \"%.64s\" is not an address or prefix",
				      cidr ? cidr : "(null)");
	if (sbx__config_cidr_inside(c, &want))
		return 0;
	return deny(SRC(c, from_egress), "%.64s is not inside egress.cidrs", cidr);
}

/*
 * Egress allowlists (issue #4): each entry of the policy's allowlist goes
 * through sbx__config_check_egress_host()/_cidr().
 */
static int check_egress(const sbx_config *c, const sbx_policy *p)
{
	for (size_t i = 0; i < p->allow_n; i++) {
		const struct sbx__allow *a = &p->allow[i];
		int rc = a->kind == SBX_ALLOW_HOST ? sbx__config_check_egress_host(c, a->name)
						   : sbx__config_check_egress_cidr(c, a->name);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sbx__config_image_permitted(const sbx_config *c, const char *ref)
{
	const char *at = strrchr(ref, '@');

	if (!c->images_set)
		return 1;
	for (size_t i = 0; i < c->images_n; i++) {
		if (strcmp(c->images[i], ref) == 0)
			return 1;
		/* A bare digest pins content: any name@digest is that content. */
		if (at && sbx__config_valid_digest(c->images[i]) &&
		    strcmp(at + 1, c->images[i]) == 0)
			return 1;
	}
	return 0;
}

/* ===== What the operator's bound takes from the caller ===== */

int sbx__config_operator_bound(const sbx_config *c)
{
	return c && ((c->is_system && c->source) || (c->layered && c->sys_source));
}

const char *sbx__config_hosts_file(const sbx_config *c)
{
	return c ? c->hosts_file : NULL;
}

const char *sbx__config_audit_path(const sbx_config *c)
{
	return c ? c->audit_path : NULL;
}

/* The system config's file, for messages. */
static const char *system_source(const sbx_config *c)
{
	return c->layered ? c->sys_source : c->source;
}

int sbx__config_check_backend_choices(const sbx_config *c,
				      const char *caller_hosts,
				      const char **hosts_file)
{
	const char *env_hosts = secure_getenv("SANDBOXIO_HOSTS_FILE");
	const char *env_init = secure_getenv("SANDBOXIO_INIT");
	const char *env_egress = secure_getenv("SANDBOXIO_EGRESS");

	*hosts_file = caller_hosts;
	if (!c)
		return 0;
	if (sbx__config_operator_bound(c)) {
		const char *how = c->hosts_file ? "the system config's egress.hosts_file"
						: "the host's resolver";

		if (caller_hosts && *caller_hosts)
			return sbx__error_set(
				SBX_EDENIED, SBX_ERRCLASS_POLICY,
				"hosts file %.200s (--hosts-file) refused: the system config %s "
				"bounds this call, and allowed names resolve with %s, never with "
				"a file the caller names",
				caller_hosts, system_source(c), how);
		if (env_hosts && *env_hosts)
			return sbx__error_set(
				SBX_EDENIED, SBX_ERRCLASS_POLICY,
				"$SANDBOXIO_HOSTS_FILE (%.200s) refused: the system config %s "
				"bounds "
				"this call, and allowed names resolve with %s; unset it",
				env_hosts, system_source(c), how);
		if (env_init && *env_init)
			return sbx__error_set(
				SBX_EDENIED, SBX_ERRCLASS_POLICY,
				"$SANDBOXIO_INIT (%.200s) refused: the system config %s bounds "
				"this "
				"call, and the init that becomes every sandbox's PID 1 is the "
				"installed one (" SBX_LIBEXECDIR "/sbx-init); unset it",
				env_init, system_source(c));
		if (env_egress && *env_egress)
			return sbx__error_set(
				SBX_EDENIED, SBX_ERRCLASS_POLICY,
				"$SANDBOXIO_EGRESS (%.200s) refused: the system config %s bounds "
				"this call, and the name checker of allow_host entries is the "
				"installed one (" SBX_LIBEXECDIR "/sbx-egress); unset it",
				env_egress, system_source(c));
	}
	if (c->hosts_file) {
		if (caller_hosts && *caller_hosts && strcmp(caller_hosts, c->hosts_file) != 0)
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
					      "hosts file %.200s refused: config %s names "
					      "egress.hosts_file %.200s, the only place allowed "
					      "names resolve",
					      caller_hosts, sbx__config_source_name(c),
					      c->hosts_file);
		*hosts_file = c->hosts_file;
	}
	return 0;
}

/* ===== The merge ===== */

static int64_t policy_slot(const sbx_policy *p, int slot, sbx_timeout_kind k)
{
	return slot == 0 ? (int64_t)p->timeout_ms[k] : p->limit[slot];
}

int sbx__config_merge(sbx_policy **out,
		      const sbx_config *c,
		      const sbx_policy *req,
		      const char *backend,
		      struct sbx__config_origins *origins)
{
	struct sbx__config_origins o;
	sbx_policy *eff = NULL;
	char a[32], b[32];
	int rc;

	if (!out || !req)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_apply: NULL argument");
	if (!c)
		c = &sbx__config_builtin;
	if (!backend)
		backend = "docker";
	memset(&o, 0, sizeof(o));
	rc = sbx__config_check_backend(c, backend);
	if (rc < 0)
		return rc;
	rc = sbx_policy_dup(&eff, req);
	if (rc < 0)
		return rc;

	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++) {
		if (req->set & SBX__SET_TIMEOUT(k)) {
			o.timeout[k] = SBX__ORIGIN_REQUEST;
			if (c->bound[1][0] && (int64_t)req->timeout_ms[k] > c->bound[1][0]) {
				static const char *const words[] = {
					[SBX_TIMEOUT_CREATE] = "create",
					[SBX_TIMEOUT_RUN] = "run",
					[SBX_TIMEOUT_RUN_CODE] = "run_code",
					[SBX_TIMEOUT_SANDBOX] = "sandbox",
				};
				rc = deny(SRC(c, from_bound[1][0]),
					  "timeout: the %s deadline asked for, %s, is above "
					  "ceilings.timeout (%s)",
					  words[k],
					  sbx__config_fmt_slot(a, sizeof(a), 0,
							       policy_slot(req, 0, k)),
					  sbx__config_fmt_slot(b, sizeof(b), 0, c->bound[1][0]));
				goto fail;
			}
		} else if (c->bound[0][0]) {
			eff->timeout_ms[k] = (uint64_t)c->bound[0][0];
			o.timeout[k] = SBX__ORIGIN_FILE;
		}
	}
	for (int s = SBX__LIMIT_FIRST; s <= SBX__LIMIT_LAST; s++) {
		if (req->set & SBX__SET_LIMIT(s)) {
			o.limit[s] = SBX__ORIGIN_REQUEST;
			rc = sbx__config_check_limit(c, (sbx_limit_kind)s, req->limit[s]);
			if (rc < 0)
				goto fail;
		} else if (c->bound[0][s]) {
			eff->limit[s] = c->bound[0][s];
			o.limit[s] = SBX__ORIGIN_FILE;
		}
	}
	eff->pause_max_ms = sbx_config_pause_ceiling_ms(c);
	if (req->set & SBX__SET_IMAGE) {
		o.image = SBX__ORIGIN_REQUEST;
	} else if (c->def_image) {
		char *img = strdup(c->def_image);

		if (!img) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					    "config: out of memory");
			goto fail;
		}
		free(eff->image);
		eff->image = img;
		o.image = SBX__ORIGIN_FILE;
	}
	if (!sbx__config_image_permitted(c, eff->image)) {
		rc = deny(SRC(c, from_images), "image \"%.255s\" is not in images", eff->image);
		goto fail;
	}
	if (req->set & SBX__SET_TENANT)
		o.tenant = SBX__ORIGIN_REQUEST;
	else if (c->require_tenant) {
		rc = deny(SRC(c, from_tenant), "no tenant id was set, and require_tenant is true");
		goto fail;
	}
	if (req->set & SBX__SET_MIN_TIER)
		o.min_tier = SBX__ORIGIN_REQUEST;
	if (c->min_tier_set && eff->min_tier < c->min_tier) {
		/* A floor, not a ceiling: raising the tier only narrows. */
		eff->min_tier = c->min_tier;
		o.min_tier = SBX__ORIGIN_FILE;
	}
	rc = check_egress(c, eff);
	if (rc < 0)
		goto fail;
	if (origins)
		*origins = o;
	*out = eff;
	return 0;
fail:
	sbx_policy_free(eff);
	return rc;
}

int sbx_config_apply(sbx_policy **out,
		     const sbx_config *c,
		     const sbx_policy *request,
		     const char *backend)
{
	sbx__error_clear();
	return sbx__config_merge(out, c, request, backend, NULL);
}
