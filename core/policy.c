/*
 * core/policy.c: the policy object and its validation.
 *
 * A policy is born holding the secure defaults. Every setter validates and
 * either changes exactly one field or changes nothing: there is no value
 * that means "unlimited", and no way to clear a limit.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio/policy.h>
#include <sandboxio/sandbox.h>

#include "core/limit-kinds.h"
#include "core/policy-int.h"
#include "netpolicy/preset-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

static const char *const timeout_names[] = {
	[SBX_TIMEOUT_CREATE] = "create",
	[SBX_TIMEOUT_RUN] = "run",
	[SBX_TIMEOUT_RUN_CODE] = "run_code",
	[SBX_TIMEOUT_SANDBOX] = "sandbox",
};

static void env_free(char **env, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(env[i]);
	free(env);
}

int sbx_policy_new(sbx_policy **out)
{
	_sbx_cleanup_free_ sbx_policy *p = NULL;

	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY, "policy_new: out is NULL");
	p = calloc(1, sizeof(*p));
	if (!p)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "policy_new: out of memory");
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++)
		p->timeout_ms[k] = SBX_DEFAULT_TIMEOUT_MS;
	for (int k = SBX__LIMIT_FIRST; k <= SBX__LIMIT_LAST; k++)
		p->limit[k] = sbx__limit_kinds[k].def;
	p->image = strdup(SBX_DEFAULT_IMAGE);
	p->tenant = strdup(SBX_DEFAULT_TENANT);
	p->workdir = strdup(SBX_DEFAULT_WORKDIR);
	p->min_tier = SBX_TIER_CONTAINER;
	p->pause_max_ms = SBX_PAUSE_MAX_DEFAULT_MS;
	if (!p->image || !p->tenant || !p->workdir) {
		sbx_policy_free(SBX_STEAL(&p));
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "policy_new: out of memory");
	}
	*out = SBX_STEAL(&p);
	return 0;
}

void sbx_policy_free(sbx_policy *p)
{
	if (!p)
		return;
	free(p->image);
	free(p->tenant);
	free(p->workdir);
	for (size_t i = 0; i < p->allow_n; i++)
		sbx__allow_clear(&p->allow[i]);
	free(p->allow);
	env_free(p->env, p->env_n);
	free(p);
}

int sbx_policy_dup(sbx_policy **out, const sbx_policy *p)
{
	sbx_policy *n = NULL;

	if (!out || !p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "policy_dup: NULL argument");
	n = calloc(1, sizeof(*n));
	if (!n)
		goto nomem;
	memcpy(n->timeout_ms, p->timeout_ms, sizeof(n->timeout_ms));
	memcpy(n->limit, p->limit, sizeof(n->limit));
	n->min_tier = p->min_tier;
	n->pause_max_ms = p->pause_max_ms;
	n->detached = p->detached;
	n->set = p->set;
	n->image = strdup(p->image);
	n->tenant = strdup(p->tenant);
	n->workdir = strdup(p->workdir);
	if (!n->image || !n->tenant || !n->workdir)
		goto nomem;
	if (p->env_n) {
		n->env = calloc(p->env_n, sizeof(char *));
		if (!n->env)
			goto nomem;
		for (size_t i = 0; i < p->env_n; i++) {
			n->env[i] = strdup(p->env[i]);
			if (!n->env[i])
				goto nomem;
			n->env_n = i + 1;
		}
	}
	if (p->allow_n) {
		n->allow = calloc(p->allow_n, sizeof(*n->allow));
		if (!n->allow)
			goto nomem;
		for (size_t i = 0; i < p->allow_n; i++) {
			n->allow[i] = p->allow[i];
			n->allow[i].name = strdup(p->allow[i].name);
			if (!n->allow[i].name)
				goto nomem;
			n->allow_n = i + 1;
		}
	}
	*out = n;
	return 0;
nomem:
	sbx_policy_free(n);
	return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "policy_dup: out of memory");
}

int sbx_policy_set_timeout_ms(sbx_policy *p, sbx_timeout_kind which, uint64_t ms)
{
	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_timeout: policy is NULL");
	if (which < SBX_TIMEOUT_CREATE || which > SBX_TIMEOUT_SANDBOX)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_timeout: unknown timeout kind %d", (int)which);
	if (ms == 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "%s timeout: 0 would be unbounded, and unbounded "
				      "execution is refused; give a deadline of at least 1 ms",
				      timeout_names[which]);
	if (ms > SBX_MAX_TIMEOUT_MS)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "%s timeout: %llu ms is above the ceiling of %u ms (24 h)",
				      timeout_names[which], (unsigned long long)ms,
				      SBX_MAX_TIMEOUT_MS);
	p->timeout_ms[which] = ms;
	p->set |= SBX__SET_TIMEOUT(which);
	return 0;
}

uint64_t sbx_policy_timeout_ms(const sbx_policy *p, sbx_timeout_kind which)
{
	if (!p || which < SBX_TIMEOUT_CREATE || which > SBX_TIMEOUT_SANDBOX)
		return 0;
	return p->timeout_ms[which];
}

int sbx_policy_set_limit(sbx_policy *p, sbx_limit_kind which, int64_t value)
{
	const struct sbx__limit_desc *d = sbx__limit_desc(which);

	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_limit: policy is NULL");
	if (!d)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_limit: unknown limit kind %d", (int)which);
	if (value <= 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "%s limit: %lld would unset the cap; limits can be raised "
				      "or lowered, never removed",
				      d->name, (long long)value);
	if (value < d->min || value > d->max)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "%s limit: %lld is outside [%lld, %lld]", d->name,
				      (long long)value, (long long)d->min, (long long)d->max);
	p->limit[which] = value;
	p->set |= SBX__SET_LIMIT(which);
	return 0;
}

int64_t sbx_policy_limit(const sbx_policy *p, sbx_limit_kind which)
{
	if (!p || which < SBX_LIMIT_CPU_MILLI || which > SBX_LIMIT_OUTPUT)
		return 0;
	return p->limit[which];
}

static int set_string(char **field, const char *value)
{
	char *n = strdup(value);

	if (!n)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "policy: out of memory");
	free(*field);
	*field = n;
	return 0;
}

int sbx_policy_set_image(sbx_policy *p, const char *ref)
{
	size_t n;

	if (!p || !ref)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_image: NULL argument");
	n = strlen(ref);
	if (n == 0 || n > 255)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "image reference must be 1 to 255 bytes, got %zu", n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)ref[i];
		if (!isalnum(c) && !strchr("._:/@-", c))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
					      "image reference has an invalid character 0x%02x "
					      "at offset %zu (allowed: A-Z a-z 0-9 . _ : / @ -)",
					      c, i);
	}
	if (ref[0] == '-' || ref[0] == '/' || ref[0] == ':' || ref[0] == '.')
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "image reference must start with a letter or digit");
	if (set_string(&p->image, ref) < 0)
		return SBX_ENOMEM;
	p->set |= SBX__SET_IMAGE;
	return 0;
}

const char *sbx_policy_image(const sbx_policy *p)
{
	return p ? p->image : NULL;
}

int sbx_policy_set_tenant(sbx_policy *p, const char *tenant)
{
	size_t n;

	if (!p || !tenant)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_tenant: NULL argument");
	n = strlen(tenant);
	if (n == 0 || n > 63)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "tenant id must be 1 to 63 bytes, got %zu", n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tenant[i];
		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
					      "tenant id has an invalid character 0x%02x "
					      "(allowed: A-Z a-z 0-9 . _ -)",
					      c);
	}
	if (set_string(&p->tenant, tenant) < 0)
		return SBX_ENOMEM;
	p->set |= SBX__SET_TENANT;
	return 0;
}

const char *sbx_policy_tenant(const sbx_policy *p)
{
	return p ? p->tenant : NULL;
}

int sbx__valid_env_name(const char *name, size_t len)
{
	if (len == 0 || len > 255)
		return 0;
	if (!(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return 0;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
			return 0;
	return 1;
}

int sbx__valid_abs_path(const char *path)
{
	size_t n = strlen(path);

	if (n == 0 || n > 4095 || path[0] != '/')
		return 0;
	for (const char *c = path; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return 0;
		if (c[0] == '/' && c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))
			return 0;
	}
	return 1;
}

int sbx_policy_set_env(sbx_policy *p, const char *name, const char *value)
{
	_sbx_cleanup_free_ char *kv = NULL;
	size_t nlen, total = 0;
	char **grown;

	if (!p || !name || !value)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY, "set_env: NULL argument");
	nlen = strlen(name);
	if (!sbx__valid_env_name(name, nlen))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "environment name '%.64s' is not [A-Za-z_][A-Za-z0-9_]*",
				      name);
	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "set_env: out of memory");
	size_t replace = SIZE_MAX;

	for (size_t i = 0; i < p->env_n; i++) {
		if (strncmp(p->env[i], kv, nlen + 1) == 0)
			replace = i;
		else
			total += strlen(p->env[i]);
	}
	if ((replace == SIZE_MAX && p->env_n >= SBX_MAX_ENV) ||
	    total + strlen(kv) > SBX_MAX_ENV_BYTES)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_POLICY,
				      "environment: at most %d variables and %u bytes", SBX_MAX_ENV,
				      SBX_MAX_ENV_BYTES);
	if (replace != SIZE_MAX) {
		free(p->env[replace]);
		p->env[replace] = SBX_STEAL(&kv);
		return 0;
	}
	grown = realloc(p->env, (p->env_n + 1) * sizeof(char *));
	if (!grown)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "set_env: out of memory");
	p->env = grown;
	p->env[p->env_n++] = SBX_STEAL(&kv);
	return 0;
}

int sbx_policy_set_workdir(sbx_policy *p, const char *dir)
{
	if (!p || !dir)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_workdir: NULL argument");
	if (!sbx__valid_abs_path(dir))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "working directory must be an absolute path without '..' "
				      "or control characters");
	if (set_string(&p->workdir, dir) < 0)
		return SBX_ENOMEM;
	p->set |= SBX__SET_WORKDIR;
	return 0;
}

const char *sbx_policy_workdir(const sbx_policy *p)
{
	return p ? p->workdir : NULL;
}

static const char *const tier_names[] = {
	[SBX_TIER_CONTAINER] = "container",
	[SBX_TIER_GVISOR] = "gvisor",
	[SBX_TIER_MICROVM] = "microvm",
};

int sbx_policy_set_min_tier(sbx_policy *p, sbx_tier tier)
{
	if (!p || (int)tier < SBX_TIER_CONTAINER || tier > SBX_TIER_MICROVM)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_min_tier: unknown tier %d", (int)tier);
	p->min_tier = tier;
	p->set |= SBX__SET_MIN_TIER;
	return 0;
}

sbx_tier sbx_policy_min_tier(const sbx_policy *p)
{
	return p ? p->min_tier : SBX_TIER_CONTAINER;
}

int sbx_policy_set_detached(sbx_policy *p, int detached)
{
	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "set_detached: policy is NULL");
	p->detached = detached != 0;
	return 0;
}

int sbx_policy_detached(const sbx_policy *p)
{
	return p ? p->detached : 0;
}

/* ===== Egress allowlist (the model and its validation: netpolicy/allow.c) ===== */

/* Adds a parsed entry (rc: the parser's result); a repeat is a no-op. */
static int allow_add(sbx_policy *p, struct sbx__allow *a, int rc)
{
	struct sbx__allow *g;

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < p->allow_n; i++)
		if (sbx__allow_same(&p->allow[i], a)) {
			sbx__allow_clear(a);
			return 0;
		}
	if (p->allow_n >= SBX_ALLOW_MAX) {
		sbx__allow_clear(a);
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_POLICY,
				      "egress allowlist: at most %d entries", SBX_ALLOW_MAX);
	}
	g = realloc(p->allow, (p->allow_n + 1) * sizeof(*g));
	if (!g) {
		sbx__allow_clear(a);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "allowlist: out of memory");
	}
	p->allow = g;
	p->allow[p->allow_n++] = *a;
	return 0;
}

int sbx_policy_allow_host(sbx_policy *p, const char *name, uint16_t port)
{
	struct sbx__allow a;

	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "allow_host: policy is NULL");
	return allow_add(p, &a, sbx__allow_parse_host(&a, name, port));
}

int sbx_policy_allow_cidr(sbx_policy *p, const char *cidr, uint16_t port)
{
	struct sbx__allow a;

	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "allow_cidr: policy is NULL");
	return allow_add(p, &a, sbx__allow_parse_cidr(&a, cidr, port));
}

int sbx_policy_allow_host_spec(sbx_policy *p, const char *spec)
{
	struct sbx__allow a;

	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "allow_host: policy is NULL");
	return allow_add(p, &a, sbx__allow_parse_host_spec(&a, spec));
}

int sbx_policy_allow_cidr_spec(sbx_policy *p, const char *spec)
{
	struct sbx__allow a;

	if (!p)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "allow_cidr: policy is NULL");
	return allow_add(p, &a, sbx__allow_parse_cidr_spec(&a, spec));
}

/* One name of a preset into the policy. */
static int preset_add(sbx_policy *p, const char *name, uint16_t port)
{
	struct sbx__allow a;

	return allow_add(p, &a, sbx__allow_parse_host(&a, name, port));
}

int sbx_policy_allow_preset(sbx_policy *p, const char *name)
{
	const struct sbx__presets *ps;
	const struct sbx__preset *pr;
	char known[256];
	size_t before;
	int rc;

	if (!p || !name)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "allow_preset: NULL argument");
	if ((rc = sbx__presets_builtin(&ps)) < 0)
		return rc;
	if (!(pr = sbx__presets_find(ps, name))) {
		sbx__presets_names(ps, known, sizeof(known));
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "allow_preset '%.64s': no such preset (there are: %s)", name,
				      known);
	}
	before = p->allow_n;
	for (size_t i = 0; i < pr->n && rc == 0; i++) {
		const struct sbx__preset_entry *e = &pr->e[i];

		if (!e->wildcard)
			rc = preset_add(p, e->name, e->port);
		for (size_t j = 0; e->wildcard && j < e->pins_n && rc == 0; j++)
			rc = preset_add(p, e->pins[j], e->port);
	}
	if (rc < 0) {
		while (p->allow_n > before)
			sbx__allow_clear(&p->allow[--p->allow_n]);
		return rc;
	}
	return 0;
}

size_t sbx_policy_allow_count(const sbx_policy *p)
{
	return p ? p->allow_n : 0;
}

const char *sbx_tier_name(sbx_tier tier)
{
	if ((int)tier < SBX_TIER_CONTAINER || tier > SBX_TIER_MICROVM)
		return NULL;
	return tier_names[tier];
}

int sbx_tier_parse(sbx_tier *out, const char *name)
{
	for (int t = SBX_TIER_CONTAINER; t <= SBX_TIER_MICROVM; t++)
		if (name && out && strcmp(name, tier_names[t]) == 0) {
			*out = (sbx_tier)t;
			return 0;
		}
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
			      "unknown isolation tier '%.32s' (container, gvisor, microvm)",
			      name ? name : "(null)");
}

int sbx_parse_size(int64_t *out, const char *text)
{
	const char *s = text;
	uint64_t v = 0, mult = 1;

	if (!out || !text || !*text)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY, "size: empty");
	if (!isdigit((unsigned char)*s))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "size '%.32s': must start with a digit", text);
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (UINT64_MAX - 9) / 10)
			goto overflow;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	switch (tolower((unsigned char)*s)) {
	case '\0':
		break;
	case 'k':
		mult = 1ull << 10;
		s++;
		break;
	case 'm':
		mult = 1ull << 20;
		s++;
		break;
	case 'g':
		mult = 1ull << 30;
		s++;
		break;
	case 't':
		mult = 1ull << 40;
		s++;
		break;
	case 'b':
		break;
	default:
		goto bad;
	}
	if (mult > 1 && tolower((unsigned char)*s) == 'i')
		s++;
	if (tolower((unsigned char)*s) == 'b')
		s++;
	if (*s)
		goto bad;
	if (v > (uint64_t)INT64_MAX / mult)
		goto overflow;
	*out = (int64_t)(v * mult);
	return 0;
bad:
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
			      "size '%.32s': expected digits with an optional k, m, g or t suffix",
			      text);
overflow:
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY, "size '%.32s' is too large", text);
}

int sbx_parse_duration_ms(uint64_t *out, const char *text)
{
	const char *s = text;
	uint64_t whole = 0, frac = 0, fdiv = 1, mult = 1000;

	if (!out || !text || !*text)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY, "duration: empty");
	if (!isdigit((unsigned char)*s))
		goto bad;
	for (; isdigit((unsigned char)*s); s++) {
		if (whole > 100000000000ull)
			goto bad;
		whole = whole * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			goto bad;
		for (; isdigit((unsigned char)*s); s++)
			if (fdiv < 1000) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				fdiv *= 10;
			}
	}
	if (*s == 's')
		s++;
	else if (*s == 'm' && s[1] == 's') {
		mult = 1;
		s += 2;
	} else if (*s == 'm') {
		mult = 60000;
		s++;
	} else if (*s == 'h') {
		mult = 3600000;
		s++;
	}
	if (*s)
		goto bad;
	{
		uint64_t ms = whole * mult + frac * mult / fdiv;
		if (ms == 0)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
					      "duration '%.32s' is zero: unbounded execution is "
					      "refused",
					      text);
		*out = ms;
	}
	return 0;
bad:
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
			      "duration '%.32s': expected seconds such as 300, 1.5, 90s, 5m, 2h",
			      text);
}
