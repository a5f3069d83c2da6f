/*
 * core/config-file.c: the config's text. The one table of keys, and the
 * parser that accepts exactly those paths: unknown keys, duplicate keys and
 * wrong types refused, and no value that unsets a control. Each refusal
 * names the origin and the key.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <jansson.h>

#include <sandboxio/config.h>
#include <sandboxio/sandbox.h>

#include "core/config-impl.h"
#include "core/config-int.h"
#include "core/limit-kinds.h"
#include "netpolicy/preset-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

static const char *const known_backends[] = {"docker", "e2b", "modal"};

/* The keys of each limit kind, from core/limit-kinds.h. */
#define CFG_TYPE_MILLI SBX__CFG_CPUS
#define CFG_TYPE_SIZE SBX__CFG_SIZE
#define CFG_TYPE_COUNT SBX__CFG_COUNT
#define DEFAULT_KEY(ID, name, key, label, audit, span, option, unit, ddoc, cdoc)                   \
	{"defaults." key, CFG_TYPE_##unit, 0, SBX_LIMIT_##ID, ddoc},
#define CEILING_KEY(ID, name, key, label, audit, span, option, unit, ddoc, cdoc)                   \
	{"ceilings." key, CFG_TYPE_##unit, 1, SBX_LIMIT_##ID, cdoc},

const struct sbx__config_key sbx__config_keys[] = {
	{"defaults", SBX__CFG_OBJECT, 0, 0, "values for what a call does not set"},
	{"defaults.timeout", SBX__CFG_SECONDS, 0, 0,
	 "seconds; every deadline: create, each run, the sandbox's life"},
	/* clang-format off */
	SBX__LIMIT_KINDS(DEFAULT_KEY)
	{"defaults.image", SBX__CFG_IMAGE, 0, 0, "image reference"},
	/* clang-format on */
	{"ceilings", SBX__CFG_OBJECT, 1, 0, "the most a call may ask for"},
	{"ceilings.timeout", SBX__CFG_SECONDS, 1, 0, "seconds; bounds every deadline"},
	{"ceilings.pause", SBX__CFG_PAUSE, 1, 0,
	 "seconds; how long a sandbox may stay paused (at most 86400, a day)"},
	/* clang-format off */
	SBX__LIMIT_KINDS(CEILING_KEY)
	{"images", SBX__CFG_IMAGES, 0, 0, "permitted image references or sha256 digests"},
	/* clang-format on */
	{"egress", SBX__CFG_OBJECT, 0, 0, "what any allowlist must stay inside"},
	{"egress.cidrs", SBX__CFG_CIDRS, 0, 0, "permitted prefixes"},
	{"egress.hosts", SBX__CFG_HOSTS, 0, 0, "permitted host names"},
	{"egress.presets", SBX__CFG_HOSTS, 0, 0,
	 "permitted egress presets: each permits the names it holds"},
	{"egress.hosts_file", SBX__CFG_PATH, 0, 0,
	 "absolute path of a hosts(5) file: the only place allowlist names resolve"},
	{"audit", SBX__CFG_OBJECT, 0, 0, "the audit the operator requires"},
	{"audit.path", SBX__CFG_PATH, 0, 0,
	 "absolute path of an audit log (JSON Lines) every sandbox writes to"},
	{"backends", SBX__CFG_BACKENDS, 0, 0, "permitted backends"},
	{"secrets", SBX__CFG_BOOL, 0, 0, "whether secrets may be passed"},
	{"require_tenant", SBX__CFG_BOOL, 0, 0, "whether a call must set a tenant id"},
	{"min_tier", SBX__CFG_TIER, 0, 0, "the weakest isolation tier a sandbox may have"},
	{NULL, SBX__CFG_OBJECT, 0, 0, NULL},
};

/* ===== Parsing ===== */

struct parse {
	sbx_config *c;
	const char *origin;
	sbx_policy *scratch; /* validates image references with the policy's own rule */
};

static int perr(const struct parse *ps, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* SBX_EINVALID naming the origin and the key path. */
static int perr(const struct parse *ps, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY, "config %s: %s: %s", ps->origin,
			      key, msg);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "an unknown type";
}

static const struct sbx__config_key *find_key(const char *path)
{
	for (const struct sbx__config_key *k = sbx__config_keys; k->path; k++)
		if (strcmp(k->path, path) == 0)
			return k;
	return NULL;
}

/* The keys one level below prefix ("" for the top), for error messages. */
static void known_keys(char *buf, size_t n, const char *prefix)
{
	size_t plen = strlen(prefix), used = 0;

	buf[0] = '\0';
	for (const struct sbx__config_key *k = sbx__config_keys; k->path; k++) {
		const char *rest;

		if (plen && (strncmp(k->path, prefix, plen) != 0 || k->path[plen] != '.'))
			continue;
		rest = plen ? k->path + plen + 1 : k->path;
		if (strchr(rest, '.'))
			continue;
		used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s",
					 used ? ", " : "", rest);
		if (used >= n)
			return;
	}
}

/* Reads a number of seconds or cores into thousandths. */
static int read_milli(const struct parse *ps, const char *key, json_t *v, int64_t *out)
{
	double d, m;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i <= 0)
			return perr(ps, key,
				    "%lld would unset the control; 0 and negative values are "
				    "refused, there is no unlimited",
				    (long long)i);
		if (i > INT64_MAX / 1000)
			return perr(ps, key, "%lld is too large", (long long)i);
		*out = (int64_t)i * 1000;
		return 0;
	}
	if (!json_is_real(v))
		return perr(ps, key, "expected a number, got %s", type_name(v));
	d = json_real_value(v);
	if (!isfinite(d) || d <= 0)
		return perr(ps, key,
			    "%g would unset the control; 0 and negative values are refused, "
			    "there is no unlimited",
			    d);
	if (d > 1e12)
		return perr(ps, key, "%g is too large", d);
	m = (double)(int64_t)(d * 1000.0 + 0.5); /* d > 0; no libm */
	if (fabs(d * 1000.0 - m) > 1e-6)
		return perr(ps, key, "%g is more precise than 0.001", d);
	if (m < 1)
		return perr(ps, key, "%g would unset the control", d);
	*out = (int64_t)m;
	return 0;
}

static int read_bound(const struct parse *ps, const struct sbx__config_key *k, json_t *v)
{
	char got[32], lo[32], hi[32];
	int64_t val = 0;
	int slot = k->slot, rc;

	switch (k->type) {
	case SBX__CFG_SECONDS:
	case SBX__CFG_CPUS:
		rc = read_milli(ps, k->path, v, &val);
		if (rc < 0)
			return rc;
		break;
	case SBX__CFG_SIZE:
		if (!json_is_string(v))
			return perr(ps, k->path, "expected a size string such as \"512m\", got %s",
				    type_name(v));
		if (sbx_parse_size(&val, json_string_value(v)) < 0)
			return perr(ps, k->path, "%s", sbx_error_last()->message);
		if (val == 0)
			return perr(ps, k->path,
				    "\"%.32s\" would unset the control; 0 is refused, there is no "
				    "unlimited",
				    json_string_value(v));
		break;
	case SBX__CFG_COUNT:
		if (!json_is_integer(v))
			return perr(ps, k->path, "expected an integer, got %s", type_name(v));
		if (json_integer_value(v) <= 0)
			return perr(ps, k->path,
				    "%lld would unset the control; 0 and negative values are "
				    "refused, there is no unlimited",
				    (long long)json_integer_value(v));
		val = json_integer_value(v);
		break;
	case SBX__CFG_OBJECT:
	case SBX__CFG_IMAGE:
	case SBX__CFG_IMAGES:
	case SBX__CFG_CIDRS:
	case SBX__CFG_HOSTS:
	case SBX__CFG_BACKENDS:
	case SBX__CFG_BOOL:
	case SBX__CFG_TIER:
	case SBX__CFG_PATH:
	case SBX__CFG_PAUSE:
		return perr(ps, k->path, "not a bound");
	}
	if (val < slot_min(slot) || val > slot_max(slot))
		return perr(ps, k->path, "%s is outside the built-in range [%s, %s]",
			    sbx__config_fmt_slot(got, sizeof(got), slot, val),
			    sbx__config_fmt_slot(lo, sizeof(lo), slot, slot_min(slot)),
			    sbx__config_fmt_slot(hi, sizeof(hi), slot, slot_max(slot)));
	ps->c->bound[k->which][slot] = val;
	return 0;
}

/* ceilings.pause: seconds, above 0 and at most SBX_PAUSE_MAX_MS. */
static int read_pause(const struct parse *ps, const char *key, json_t *v)
{
	char got[32], hi[32];
	int64_t val = 0;
	int rc = read_milli(ps, key, v, &val);

	if (rc < 0)
		return rc;
	if ((uint64_t)val > SBX_PAUSE_MAX_MS)
		return perr(ps, key, "%s is above the most a sandbox may stay paused (%s, a day)",
			    sbx__config_fmt_slot(got, sizeof(got), 0, val),
			    sbx__config_fmt_slot(hi, sizeof(hi), 0, (int64_t)SBX_PAUSE_MAX_MS));
	ps->c->pause_ceil = val;
	return 0;
}

static int read_image(const struct parse *ps, const char *key, json_t *v, const char **out)
{
	if (!json_is_string(v))
		return perr(ps, key, "expected an image reference string, got %s", type_name(v));
	if (sbx_policy_set_image(ps->scratch, json_string_value(v)) < 0)
		return perr(ps, key, "%s", sbx_error_last()->message);
	if (strchr(json_string_value(v), '*'))
		return perr(ps, key, "patterns are not accepted; list exact references");
	*out = json_string_value(v);
	return 0;
}

static int host_bits_zero(const struct sbx__cidr *c)
{
	unsigned char masked[16];
	unsigned int len = c->family == AF_INET ? 4 : 16;

	memcpy(masked, c->addr, len);
	for (unsigned int bit = c->prefix; bit < len * 8; bit++)
		masked[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	return memcmp(masked, c->addr, len) == 0;
}

/* A DNS name: labels of [a-z0-9-] (any case), no leading or trailing '-'. */
static int valid_host(const char *h)
{
	size_t n = strlen(h), label = 0;
	int alpha = 0;

	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		char c = h[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || h[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-')
			return 0;
		if (c == '-' && label == 0)
			return 0;
		alpha |= isalpha((unsigned char)c) || c == '-';
		if (++label > 63)
			return 0;
	}
	return alpha; /* all digits and dots is an address: those go in cidrs */
}

static int read_strings(const struct parse *ps, const char *key, json_t *v)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		return perr(ps, key, "expected an array of strings, got %s", type_name(v));
	if (json_array_size(v) > MAX_LIST)
		return perr(ps, key, "more than %d entries", MAX_LIST);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return perr(ps, key, "entry %zu: expected a string, got %s", i,
				    type_name(e));
	}
	return 0;
}

/* egress.presets[i]: permits every name the preset holds, as egress.hosts. */
static int push_preset(const struct parse *ps, const char *what, const char *name)
{
	const struct sbx__presets *all;
	const struct sbx__preset *p;
	char known[256];
	int rc;

	if ((rc = sbx__presets_builtin(&all)) < 0)
		return rc;
	if (!(p = sbx__presets_find(all, name))) {
		sbx__presets_names(all, known, sizeof(known));
		return perr(ps, what, "unknown preset \"%.32s\" (there are: %s)", name, known);
	}
	for (size_t i = 0; i < p->n && rc == 0; i++) {
		const struct sbx__preset_entry *e = &p->e[i];

		if (!e->wildcard)
			rc = sbx__config_push(&ps->c->hosts, &ps->c->hosts_n, e->name);
		for (size_t j = 0; e->wildcard && j < e->pins_n && rc == 0; j++)
			rc = sbx__config_push(&ps->c->hosts, &ps->c->hosts_n, e->pins[j]);
	}
	return rc;
}

static int read_list(const struct parse *ps, const struct sbx__config_key *k, json_t *v)
{
	sbx_config *c = ps->c;
	char what[80];
	size_t i;
	json_t *e;
	int rc;

	rc = read_strings(ps, k->path, v);
	if (rc < 0)
		return rc;
	json_array_foreach(v, i, e)
	{
		const char *s = json_string_value(e);

		snprintf(what, sizeof(what), "%s[%zu]", k->path, i);
		switch (k->type) {
		case SBX__CFG_IMAGES:
			if (!sbx__config_valid_digest(s)) {
				const char *ok = NULL;

				rc = read_image(ps, what, e, &ok);
				if (rc < 0)
					return rc;
			}
			rc = sbx__config_push(&c->images, &c->images_n, s);
			break;
		case SBX__CFG_CIDRS: {
			struct sbx__cidr cd;
			struct sbx__cidr *g;

			if (sbx__config_cidr_parse(&cd, s, 1) < 0)
				return perr(ps, what,
					    "\"%.64s\" is not an address with a prefix length such "
					    "as 198.51.100.0/24 or 2001:db8::/32",
					    s);
			if (!host_bits_zero(&cd))
				return perr(ps, what,
					    "\"%.64s\" has bits set past its prefix length; write "
					    "the network address",
					    s);
			g = realloc(c->cidrs, (c->cidrs_n + 1) * sizeof(*g));
			if (!g)
				return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
						      "config: out of memory");
			c->cidrs = g;
			c->cidrs[c->cidrs_n] = cd;
			rc = sbx__config_push(&c->cidr_text, &c->cidrs_n, s);
			break;
		}
		case SBX__CFG_HOSTS: {
			char low[256];

			if (strcmp(k->path, "egress.presets") == 0) {
				rc = push_preset(ps, what, s);
				break;
			}
			if (!valid_host(s))
				return perr(ps, what,
					    "\"%.64s\" is not a host name (labels of letters, "
					    "digits and '-'; no wildcards; addresses go in "
					    "egress.cidrs)",
					    s);
			for (size_t j = 0; s[j]; j++)
				low[j] = (char)tolower((unsigned char)s[j]);
			low[strlen(s)] = '\0';
			rc = sbx__config_push(&c->hosts, &c->hosts_n, low);
			break;
		}
		case SBX__CFG_BACKENDS: {
			int known = 0;

			for (size_t j = 0; j < SBX_ARRAY_SIZE(known_backends); j++)
				known |= strcmp(s, known_backends[j]) == 0;
			if (!known)
				return perr(ps, what,
					    "unknown backend \"%.32s\" (docker, e2b, modal)", s);
			rc = sbx__config_push(&c->backends, &c->backends_n, s);
			break;
		}
		case SBX__CFG_OBJECT:
		case SBX__CFG_SECONDS:
		case SBX__CFG_CPUS:
		case SBX__CFG_SIZE:
		case SBX__CFG_COUNT:
		case SBX__CFG_IMAGE:
		case SBX__CFG_BOOL:
		case SBX__CFG_TIER:
		case SBX__CFG_PATH:
		case SBX__CFG_PAUSE:
			return perr(ps, what, "not a list");
		}
		if (rc < 0)
			return rc;
	}
	if (k->type == SBX__CFG_IMAGES && c->images_n == 0)
		return perr(ps, k->path,
			    "an empty list would permit no image; leave the key out to permit "
			    "any image");
	if (k->type == SBX__CFG_BACKENDS && c->backends_n == 0)
		return perr(ps, k->path,
			    "an empty list would permit no backend; leave the key out to "
			    "permit any");
	return 0;
}

static int parse_object(struct parse *ps, const char *prefix, json_t *obj);

static int parse_value(struct parse *ps, const struct sbx__config_key *k, json_t *v)
{
	sbx_config *c = ps->c;
	const char *s = NULL;
	int rc;

	switch (k->type) {
	case SBX__CFG_OBJECT:
		if (!json_is_object(v))
			return perr(ps, k->path, "expected an object, got %s", type_name(v));
		if (strcmp(k->path, "egress") == 0)
			c->egress_set = 1;
		return parse_object(ps, k->path, v);
	case SBX__CFG_SECONDS:
	case SBX__CFG_CPUS:
	case SBX__CFG_SIZE:
	case SBX__CFG_COUNT:
		return read_bound(ps, k, v);
	case SBX__CFG_PAUSE:
		return read_pause(ps, k->path, v);
	case SBX__CFG_IMAGE:
		rc = read_image(ps, k->path, v, &s);
		if (rc < 0)
			return rc;
		c->def_image = strdup(s);
		return c->def_image ? 0
				    : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
						     "config: out of memory");
	case SBX__CFG_IMAGES:
		c->images_set = 1;
		return read_list(ps, k, v);
	case SBX__CFG_CIDRS:
	case SBX__CFG_HOSTS:
		return read_list(ps, k, v);
	case SBX__CFG_BACKENDS:
		c->backends_set = 1;
		return read_list(ps, k, v);
	case SBX__CFG_BOOL:
		if (!json_is_boolean(v))
			return perr(ps, k->path, "expected true or false, got %s", type_name(v));
		if (strcmp(k->path, "secrets") == 0) {
			c->secrets = json_is_true(v);
			c->secrets_set = 1;
		} else {
			c->require_tenant = json_is_true(v);
			c->require_tenant_set = 1;
		}
		return 0;
	case SBX__CFG_TIER:
		if (!json_is_string(v))
			return perr(ps, k->path, "expected a tier name, got %s", type_name(v));
		if (sbx_tier_parse(&c->min_tier, json_string_value(v)) < 0)
			return perr(ps, k->path, "%s", sbx_error_last()->message);
		c->min_tier_set = 1;
		return 0;
	case SBX__CFG_PATH: {
		char **dst = strcmp(k->path, "audit.path") == 0 ? &c->audit_path : &c->hosts_file;

		if (!json_is_string(v))
			return perr(ps, k->path, "expected an absolute path, got %s", type_name(v));
		s = json_string_value(v);
		if (s[0] != '/' || strlen(s) >= PATH_MAX || strlen(s) != json_string_length(v))
			return perr(ps, k->path, "\"%.64s\" is not an absolute path", s);
		*dst = strdup(s);
		return *dst ? 0
			    : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					     "config: out of memory");
	}
	}
	return perr(ps, k->path, "unknown type");
}

static int parse_object(struct parse *ps, const char *prefix, json_t *obj)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		const struct sbx__config_key *k = NULL;
		char path[96], known[256];
		int rc;

		if (strlen(key) < 48) {
			snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", key);
			k = find_key(path);
		}
		if (!k) {
			known_keys(known, sizeof(known), prefix);
			snprintf(path, sizeof(path), "%s%s%.48s", prefix, *prefix ? "." : "", key);
			return perr(ps, path, "unknown key (known here: %s)", known);
		}
		rc = parse_value(ps, k, v);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The rules that need the whole file: each effective default at or below its ceiling. */
static int check_whole(const struct parse *ps)
{
	const sbx_config *c = ps->c;
	char a[32], b[32], key[32];

	for (int s = 0; s < NSLOT; s++) {
		int64_t def = c->bound[0][s] ? c->bound[0][s] : slot_def(s);
		int64_t ceil = c->bound[1][s] ? c->bound[1][s] : slot_max(s);

		if (def <= ceil)
			continue;
		snprintf(key, sizeof(key), "defaults.%s", slot_name(s));
		if (c->bound[0][s])
			return perr(ps, key, "%s is above ceilings.%s (%s)",
				    sbx__config_fmt_slot(a, sizeof(a), s, def), slot_name(s),
				    sbx__config_fmt_slot(b, sizeof(b), s, ceil));
		return perr(ps, key,
			    "the built-in default %s is above ceilings.%s (%s); set %s at or "
			    "below the ceiling",
			    sbx__config_fmt_slot(a, sizeof(a), s, def), slot_name(s),
			    sbx__config_fmt_slot(b, sizeof(b), s, ceil), key);
	}
	if (c->images_set) {
		const char *def = c->def_image ? c->def_image : SBX_DEFAULT_IMAGE;
		int ok = 0;

		for (size_t i = 0; i < c->images_n; i++)
			ok |= strcmp(c->images[i], def) == 0;
		if (!ok)
			return perr(ps, "defaults.image",
				    "%s\"%.255s\" is not in images; a call that sets no image "
				    "would be refused",
				    c->def_image ? "" : "the built-in default ", def);
	}
	return 0;
}

/*
 * Parses a config; whole 0 skips check_whole(), for a narrowing config,
 * whose defaults and ceilings are checked once merged with the system's.
 */
int sbx__config_parse_text(
	sbx_config **out, const char *json, size_t len, const char *origin, int whole)
{
	json_t *root = NULL;
	json_error_t jerr;
	struct parse ps = {0};
	sbx_config *c = NULL;
	int rc;

	if (!out || (!json && len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_parse: NULL argument");
	if (!origin)
		origin = "(inline)";
	if (len > SBX_CONFIG_MAX_BYTES)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_POLICY,
				      "config %s: %zu bytes, more than the %u a config may hold",
				      origin, len, SBX_CONFIG_MAX_BYTES);
	root = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config %s: line %d column %d: %s", origin, jerr.line,
				      jerr.column, jerr.text);
	c = calloc(1, sizeof(*c));
	if (c)
		c->refs = 1;
	if (!c || !(c->source = strdup(origin))) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
		goto done;
	}
	c->is_file = 1;
	ps.c = c;
	ps.origin = origin;
	rc = sbx_policy_new(&ps.scratch);
	if (rc < 0)
		goto done;
	if (!json_is_object(root)) {
		rc = sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				    "config %s: the top level must be an object, got %s", origin,
				    type_name(root));
		goto done;
	}
	rc = parse_object(&ps, "", root);
	if (rc == 0 && whole)
		rc = check_whole(&ps);
	if (rc == 0) {
		*out = SBX_STEAL(&c);
		sbx__error_clear();
	}
done:
	sbx_policy_free(ps.scratch);
	sbx_config_free(c);
	json_decref(root);
	return rc;
}

int sbx_config_parse(sbx_config **out, const char *json, size_t len, const char *origin)
{
	return sbx__config_parse_text(out, json, len, origin, 1);
}
