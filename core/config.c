/*
 * core/config.c: the operator config. Reading it, checking its file, and
 * the one merge of built-in defaults, operator defaults and a call's request.
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
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <sandboxio/config.h>

#include "core/config-int.h"
#include "core/limit-kinds.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define NSLOT SBX__LIMIT_N /* slot 0: timeout; then each sbx_limit_kind */
#define MAX_LIST 1024	   /* entries per list (images, cidrs, hosts) */

struct cidr {
	int family;
	unsigned char addr[16];
	unsigned int prefix;
};

struct sbx_config {
	int refs;
	char *source; /* file or origin; NULL: built-in */
	/* [0] defaults, [1] ceilings; 0: not in the file (the built-in value). */
	int64_t bound[2][NSLOT];
	char *def_image;
	char **images; /* NULL with images_set 0: any image */
	size_t images_n;
	int images_set;
	struct cidr *cidrs;
	char **cidr_text;
	size_t cidrs_n;
	char **hosts; /* lower case */
	size_t hosts_n;
	int egress_set; /* 0: the built-in config permits any; a file without it, none */
	char **backends;
	size_t backends_n;
	int backends_set;
	int secrets, secrets_set;
	int require_tenant, require_tenant_set;
	sbx_tier min_tier;
	int min_tier_set;
	int is_file;	  /* parsed from text: an absent "egress" then permits nothing */
	char *hosts_file; /* egress.hosts_file: resolves allowlist names; NULL: the host's resolver */
	char *audit_path; /* audit.path: a sink no call turns off */
	/*
	 * Layered (sbx_config_load_narrowed() with a narrowing file): source is
	 * the narrowing file, sys_source the system file (NULL: built-in), and
	 * each from_* says which of the two a value came from.
	 */
	int layered;
	int is_system; /* the system config itself, as the CLI loads it */
	char *sys_source;
	unsigned char from_bound[2][NSLOT];
	unsigned char from_image, from_images, from_egress, from_backends;
	unsigned char from_secrets, from_tenant, from_tier;
};

enum { FROM_SYSTEM = 0, FROM_NARROW = 1 };

/* The built-in config: every field zero. */
static const struct sbx_config builtin_config;

/* A slot's name, built-in default, floor and ceiling, in the policy's units. */
static const char *slot_name(int slot)
{
	return slot ? sbx__limit_kinds[slot].key : "timeout";
}

static int64_t slot_def(int slot)
{
	return slot ? sbx__limit_kinds[slot].def : SBX_DEFAULT_TIMEOUT_MS;
}

static int64_t slot_min(int slot)
{
	return slot ? sbx__limit_kinds[slot].min : 1;
}

static int64_t slot_max(int slot)
{
	return slot ? sbx__limit_kinds[slot].max : SBX_MAX_TIMEOUT_MS;
}

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
	/* clang-format off */
	SBX__LIMIT_KINDS(CEILING_KEY)
	{"images", SBX__CFG_IMAGES, 0, 0, "permitted image references or sha256 digests"},
	/* clang-format on */
	{"egress", SBX__CFG_OBJECT, 0, 0, "what any allowlist must stay inside"},
	{"egress.cidrs", SBX__CFG_CIDRS, 0, 0, "permitted prefixes"},
	{"egress.hosts", SBX__CFG_HOSTS, 0, 0, "permitted host names"},
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

/* ===== Formatting ===== */

static const char *fmt_size(char *buf, size_t n, int64_t v)
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
static const char *fmt_slot(char *buf, size_t n, int slot, int64_t v)
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
		return fmt_size(buf, n, v);
	case SBX__LIMIT_UNIT_COUNT:
		break;
	}
	snprintf(buf, n, "%lld", (long long)v);
	return buf;
}

static const char *source_name(const sbx_config *c)
{
	return c->source ? c->source : "(built-in)";
}

/*
 * The file a value that the config sets came from: the config's own source,
 * or for a layered config the system or narrowing file. builtin names the
 * built-in config ("builtin" in descriptions, "(built-in)" in messages).
 */
static const char *from_name(const sbx_config *c, unsigned char from, const char *builtin)
{
	if (c->layered && from == FROM_SYSTEM)
		return c->sys_source ? c->sys_source : builtin;
	return c->source ? c->source : builtin;
}

#define SRC(c, f) from_name((c), (c)->f, "(built-in)")

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
		return perr(ps, k->path, "not a bound");
	}
	if (val < slot_min(slot) || val > slot_max(slot))
		return perr(ps, k->path, "%s is outside the built-in range [%s, %s]",
			    fmt_slot(got, sizeof(got), slot, val),
			    fmt_slot(lo, sizeof(lo), slot, slot_min(slot)),
			    fmt_slot(hi, sizeof(hi), slot, slot_max(slot)));
	ps->c->bound[k->which][slot] = val;
	return 0;
}

static int push(char ***list, size_t *n, const char *s)
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

static int valid_digest(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
		return 0;
	for (s += 7; *s; s++)
		if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
			return 0;
	return 1;
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

/* Parses "a.b.c.d/n" or "x::y/n" (prefix required unless need_prefix is 0). */
static int cidr_parse(struct cidr *out, const char *text, int need_prefix)
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
static int cidr_inside(const sbx_config *c, const struct cidr *want)
{
	for (size_t i = 0; i < c->cidrs_n; i++) {
		const struct cidr *have = &c->cidrs[i];

		if (have->family == want->family && want->prefix >= have->prefix &&
		    prefix_equal(want->addr, have->addr, have->prefix))
			return 1;
	}
	return 0;
}

static int host_bits_zero(const struct cidr *c)
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
			if (!valid_digest(s)) {
				const char *ok = NULL;

				rc = read_image(ps, what, e, &ok);
				if (rc < 0)
					return rc;
			}
			rc = push(&c->images, &c->images_n, s);
			break;
		case SBX__CFG_CIDRS: {
			struct cidr cd;
			struct cidr *g;

			if (cidr_parse(&cd, s, 1) < 0)
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
			rc = push(&c->cidr_text, &c->cidrs_n, s);
			break;
		}
		case SBX__CFG_HOSTS: {
			char low[256];

			if (!valid_host(s))
				return perr(ps, what,
					    "\"%.64s\" is not a host name (labels of letters, "
					    "digits and '-'; no wildcards; addresses go in "
					    "egress.cidrs)",
					    s);
			for (size_t j = 0; s[j]; j++)
				low[j] = (char)tolower((unsigned char)s[j]);
			low[strlen(s)] = '\0';
			rc = push(&c->hosts, &c->hosts_n, low);
			break;
		}
		case SBX__CFG_BACKENDS: {
			int known = 0;

			for (size_t j = 0; j < SBX_ARRAY_SIZE(known_backends); j++)
				known |= strcmp(s, known_backends[j]) == 0;
			if (!known)
				return perr(ps, what,
					    "unknown backend \"%.32s\" (docker, e2b, modal)", s);
			rc = push(&c->backends, &c->backends_n, s);
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
				    fmt_slot(a, sizeof(a), s, def), slot_name(s),
				    fmt_slot(b, sizeof(b), s, ceil));
		return perr(ps, key,
			    "the built-in default %s is above ceilings.%s (%s); set %s at or "
			    "below the ceiling",
			    fmt_slot(a, sizeof(a), s, def), slot_name(s),
			    fmt_slot(b, sizeof(b), s, ceil), key);
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
static int parse_text(sbx_config **out, const char *json, size_t len, const char *origin, int whole)
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
	return parse_text(out, json, len, origin, 1);
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

int64_t sbx_config_limit_ceiling(const sbx_config *c, sbx_limit_kind which)
{
	if (!sbx__limit_desc(which))
		return 0;
	return c && c->bound[1][which] ? c->bound[1][which] : slot_max(which);
}

/* ===== Loading ===== */

/*
 * ssh's rule: owned by root or by me, and writable by nobody else. A
 * directory writable by others is accepted only with the sticky bit (as
 * /tmp): there no one else may rename or remove an entry we own. The
 * system config passes me = 0: root only.
 */
static int
check_owner_mode(const char *cfg, const char *what, const char *path, struct stat *st, uid_t me)
{
	if (st->st_uid != 0 && st->st_uid != me)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
				      "config %s: refused: %s %s is owned by uid %u, %s; its "
				      "owner could widen every sandbox",
				      cfg, what, path, (unsigned)st->st_uid,
				      me ? "neither root nor the caller" : "not root");
	if ((st->st_mode & 022) && !(S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
				      "config %s: refused: %s %s is writable by %s (mode %04o); "
				      "anyone who can write it could widen every sandbox: chmod "
				      "go-w %s",
				      cfg, what, path,
				      (st->st_mode & 020) && (st->st_mode & 002)
					      ? "group and others"
				      : (st->st_mode & 020) ? "its group"
							    : "others",
				      (unsigned)(st->st_mode & 07777), path);
	return 0;
}

/* Checks every directory above real (an absolute path without symlinks). */
static int check_dirs(const char *cfg, const char *real, uid_t me)
{
	_sbx_cleanup_free_ char *dir = strdup(real);
	struct stat st;
	char *slash;
	int rc;

	if (!dir)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	for (;;) {
		slash = strrchr(dir, '/');
		if (!slash)
			return 0;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (lstat(dir, &st) < 0)
			return sbx__error_os(SBX_EDENIED, errno, "config %s: cannot check %s", cfg,
					     dir);
		if (!S_ISDIR(st.st_mode))
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
					      "config %s: refused: %s is not a directory", cfg,
					      dir);
		rc = check_owner_mode(cfg, "directory", dir, &st, me);
		if (rc < 0)
			return rc;
		if (strcmp(dir, "/") == 0)
			return 0;
	}
}

#define NOT_FOUND 1

/*
 * Loads path, which must be owned by root or me. A missing file is
 * SBX_ENOTFOUND when required, else NOT_FOUND. whole: as parse_text().
 */
static int load_file(
	sbx_config **out, const char *path, int required, const char *named_by, uid_t me, int whole)
{
	_sbx_cleanup_free_ char *real = NULL, *buf = NULL;
	_sbx_cleanup_close_ int fd = -1;
	struct stat st;
	size_t n = 0;
	ssize_t r;
	int rc;

	real = realpath(path, NULL);
	if (!real) {
		int e = errno;

		if ((e == ENOENT || e == ENOTDIR) && !required)
			return NOT_FOUND;
		if (e == ENOENT || e == ENOTDIR)
			return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_POLICY,
					      "config %s (%s): no such file", path, named_by);
		if (e == ENOMEM)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					      "config: out of memory");
		return sbx__error_os(SBX_EDENIED, e, "config %s (%s)", path, named_by);
	}
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sbx__error_os(SBX_EDENIED, errno, "config %s (%s): cannot open", path,
				     named_by);
	if (fstat(fd, &st) < 0)
		return sbx__error_os(SBX_EDENIED, errno, "config %s: cannot check", path);
	if (!S_ISREG(st.st_mode))
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
				      "config %s: refused: not a regular file", path);
	rc = check_owner_mode(path, "file", real, &st, me);
	if (rc == 0)
		rc = check_dirs(path, real, me);
	if (rc < 0)
		return rc;
	if (st.st_size > (off_t)SBX_CONFIG_MAX_BYTES)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_POLICY,
				      "config %s: %lld bytes, more than the %u a config may hold",
				      path, (long long)st.st_size, SBX_CONFIG_MAX_BYTES);
	buf = malloc(SBX_CONFIG_MAX_BYTES + 1);
	if (!buf)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	while (n <= SBX_CONFIG_MAX_BYTES) {
		r = read(fd, buf + n, SBX_CONFIG_MAX_BYTES + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sbx__error_os(SBX_EDENIED, errno, "config %s: cannot read", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return parse_text(out, buf, n, path, whole);
}

int sbx__config_load_search(sbx_config **out, const char *path, const char *system_path)
{
	const char *env;
	sbx_config *c;
	int rc;

	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_load: out is NULL");
	if (path)
		return load_file(out, path, 1, "given explicitly", geteuid(), 1);
	env = secure_getenv(SBX_CONFIG_ENV);
	if (env && *env)
		return load_file(out, env, 1, "named by $" SBX_CONFIG_ENV, geteuid(), 1);
	rc = load_file(out, system_path, 0, "the system config", geteuid(), 1);
	if (rc != NOT_FOUND)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	c->refs = 1;
	*out = c;
	return 0;
}

int sbx_config_load(sbx_config **out, const char *path)
{
	sbx__error_clear();
	return sbx__config_load_search(out, path, SBX_CONFIG_SYSTEM_PATH);
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
		    slot_name(kind), fmt_slot(a, sizeof(a), kind, v), slot_name(kind),
		    fmt_slot(b, sizeof(b), kind, c->bound[1][kind]));
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
	struct cidr want;

	if (!c || (!c->is_file && !c->egress_set))
		return 0;
	if (!c->egress_set)
		return deny(SRC(c, from_egress),
			    "egress to %.64s was asked for, and there is no egress key: no call "
			    "may open the network",
			    cidr ? cidr : "(null)");
	if (!cidr || cidr_parse(&want, cidr, 0) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "egress entry \"%.64s\" is not an address or prefix",
				      cidr ? cidr : "(null)");
	if (cidr_inside(c, &want))
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
		const struct sbx_allow *a = &p->allow[i];
		int rc = a->kind == SBX_ALLOW_HOST ? sbx__config_check_egress_host(c, a->name)
						   : sbx__config_check_egress_cidr(c, a->name);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int image_permitted(const sbx_config *c, const char *ref)
{
	const char *at = strrchr(ref, '@');

	if (!c->images_set)
		return 1;
	for (size_t i = 0; i < c->images_n; i++) {
		if (strcmp(c->images[i], ref) == 0)
			return 1;
		/* A bare digest pins content: any name@digest is that content. */
		if (at && valid_digest(c->images[i]) && strcmp(at + 1, c->images[i]) == 0)
			return 1;
	}
	return 0;
}

/* ===== Narrowing ===== */

static int in_list(char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

static int copy_list(char ***dst, size_t *dn, char *const *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = push(dst, dn, src[i]);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
nrefuse(const sbx_config *sys, const sbx_config *nar, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* SBX_EDENIED naming the key, the narrowing file and the system config. */
static int
nrefuse(const sbx_config *sys, const sbx_config *nar, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
			      "config %s: refused: %s: %s; the system config %s is the bound, "
			      "and a config named by --config or $" SBX_CONFIG_ENV
			      " may only narrow it",
			      source_name(nar), key, msg, source_name(sys));
}

static int narrow_bounds(sbx_config *m, const sbx_config *sys, const sbx_config *nar)
{
	char a[32], b[32], key[32];

	for (int s = 0; s < NSLOT; s++) {
		int64_t sc = sys->bound[1][s] ? sys->bound[1][s] : slot_max(s);
		int64_t def, ceil;

		if (nar->bound[1][s] > sc) {
			snprintf(key, sizeof(key), "ceilings.%s", slot_name(s));
			return nrefuse(sys, nar, key, "%s is above the system's ceilings.%s (%s)",
				       fmt_slot(a, sizeof(a), s, nar->bound[1][s]), slot_name(s),
				       fmt_slot(b, sizeof(b), s, sc));
		}
		m->bound[1][s] = nar->bound[1][s] ? nar->bound[1][s] : sys->bound[1][s];
		m->from_bound[1][s] = nar->bound[1][s] ? FROM_NARROW : FROM_SYSTEM;
		snprintf(key, sizeof(key), "defaults.%s", slot_name(s));
		if (nar->bound[0][s] > sc)
			return nrefuse(sys, nar, key, "%s is above the system's ceilings.%s (%s)",
				       fmt_slot(a, sizeof(a), s, nar->bound[0][s]), slot_name(s),
				       fmt_slot(b, sizeof(b), s, sc));
		m->bound[0][s] = nar->bound[0][s] ? nar->bound[0][s] : sys->bound[0][s];
		m->from_bound[0][s] = nar->bound[0][s] ? FROM_NARROW : FROM_SYSTEM;
		def = m->bound[0][s] ? m->bound[0][s] : slot_def(s);
		ceil = m->bound[1][s] ? m->bound[1][s] : slot_max(s);
		if (def > ceil)
			return nrefuse(
				sys, nar, key,
				"the default %s (%s) is above ceilings.%s (%s, %s); set %s at "
				"or below the ceiling",
				fmt_slot(a, sizeof(a), s, def),
				m->bound[0][s] ? from_name(m, m->from_bound[0][s], "built-in")
					       : "built-in",
				slot_name(s), fmt_slot(b, sizeof(b), s, ceil),
				m->bound[1][s] ? from_name(m, m->from_bound[1][s], "built-in")
					       : "built-in",
				key);
	}
	return 0;
}

static int narrow_lists(sbx_config *m, const sbx_config *sys, const sbx_config *nar)
{
	const sbx_config *src;
	const char *def;
	char key[48];
	int rc;

	if (nar->def_image && !image_permitted(sys, nar->def_image))
		return nrefuse(sys, nar, "defaults.image",
			       "\"%.255s\" is not in the system's images", nar->def_image);
	src = nar->def_image ? nar : sys;
	m->from_image = nar->def_image ? FROM_NARROW : FROM_SYSTEM;
	if (src->def_image && !(m->def_image = strdup(src->def_image)))
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");

	for (size_t i = 0; nar->images_set && i < nar->images_n; i++) {
		snprintf(key, sizeof(key), "images[%zu]", i);
		if (!image_permitted(sys, nar->images[i]))
			return nrefuse(sys, nar, key, "\"%.255s\" is not in the system's images",
				       nar->images[i]);
	}
	src = nar->images_set ? nar : sys;
	m->images_set = src->images_set;
	m->from_images = nar->images_set ? FROM_NARROW : FROM_SYSTEM;
	rc = copy_list(&m->images, &m->images_n, src->images, src->images_n);
	if (rc < 0)
		return rc;
	def = m->def_image ? m->def_image : SBX_DEFAULT_IMAGE;
	if (!image_permitted(m, def))
		return nrefuse(sys, nar, "defaults.image",
			       "the default image \"%.255s\" is not in images; a call that sets no "
			       "image would be refused",
			       def);

	/* A file's egress: absent means none, so the narrowing file decides. */
	for (size_t i = 0; nar->egress_set && i < nar->cidrs_n; i++) {
		snprintf(key, sizeof(key), "egress.cidrs[%zu]", i);
		if ((sys->is_file || sys->egress_set) && !cidr_inside(sys, &nar->cidrs[i]))
			return nrefuse(sys, nar, key, "%.64s is not inside the system's %s",
				       nar->cidr_text[i],
				       sys->egress_set ? "egress.cidrs"
						       : "egress (it has none: no network)");
	}
	for (size_t i = 0; nar->egress_set && i < nar->hosts_n; i++) {
		snprintf(key, sizeof(key), "egress.hosts[%zu]", i);
		if ((sys->is_file || sys->egress_set) &&
		    !in_list(sys->hosts, sys->hosts_n, nar->hosts[i]))
			return nrefuse(sys, nar, key, "\"%.253s\" is not in the system's %s",
				       nar->hosts[i],
				       sys->egress_set ? "egress.hosts"
						       : "egress (it has none: no network)");
	}
	m->egress_set = nar->egress_set;
	m->from_egress = FROM_NARROW;
	if (nar->cidrs_n) {
		m->cidrs = malloc(nar->cidrs_n * sizeof(*m->cidrs));
		if (!m->cidrs)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					      "config: out of memory");
		memcpy(m->cidrs, nar->cidrs, nar->cidrs_n * sizeof(*m->cidrs));
	}
	rc = copy_list(&m->cidr_text, &m->cidrs_n, nar->cidr_text, nar->cidrs_n);
	if (rc == 0)
		rc = copy_list(&m->hosts, &m->hosts_n, nar->hosts, nar->hosts_n);
	if (rc < 0)
		return rc;

	for (size_t i = 0; nar->backends_set && i < nar->backends_n; i++) {
		snprintf(key, sizeof(key), "backends[%zu]", i);
		if (sys->backends_set && !in_list(sys->backends, sys->backends_n, nar->backends[i]))
			return nrefuse(sys, nar, key, "\"%.32s\" is not in the system's backends",
				       nar->backends[i]);
	}
	src = nar->backends_set ? nar : sys;
	m->backends_set = src->backends_set;
	m->from_backends = nar->backends_set ? FROM_NARROW : FROM_SYSTEM;
	return copy_list(&m->backends, &m->backends_n, src->backends, src->backends_n);
}

/*
 * The system config sys narrowed by nar: each ceiling the smaller, each
 * default nar's (within sys's ceilings), each permitted set the
 * intersection, secrets only if both allow them, a tenant required if
 * either requires one, the higher min_tier. Whatever nar asks for beyond
 * sys is refused, never dropped.
 */
static int narrow(sbx_config **out, const sbx_config *sys, const sbx_config *nar)
{
	sbx_config *m = calloc(1, sizeof(*m));
	int sys_secrets = sys->secrets_set ? sys->secrets : 1;
	int rc;

	if (!m)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	m->refs = 1;
	m->layered = 1;
	m->is_file = 1;
	if (!(m->source = strdup(source_name(nar))) ||
	    (sys->source && !(m->sys_source = strdup(sys->source)))) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
		goto fail;
	}
	rc = narrow_bounds(m, sys, nar);
	if (rc == 0)
		rc = narrow_lists(m, sys, nar);
	if (rc == 0 && nar->hosts_file)
		rc = nrefuse(sys, nar, "egress.hosts_file",
			     "only the system config says how allowed names resolve");
	if (rc == 0 && nar->audit_path)
		rc = nrefuse(sys, nar, "audit.path",
			     "only the system config requires an audit log; a call adds one "
			     "with --audit-log (sbx_backend_options.audit_path)");
	if (rc == 0 && ((sys->hosts_file && !(m->hosts_file = strdup(sys->hosts_file))) ||
			(sys->audit_path && !(m->audit_path = strdup(sys->audit_path)))))
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	if (rc < 0)
		goto fail;

	m->secrets_set = sys->secrets_set || nar->secrets_set;
	m->secrets = sys_secrets && (nar->secrets_set ? nar->secrets : 1);
	m->from_secrets = !sys_secrets || !nar->secrets_set ? FROM_SYSTEM : FROM_NARROW;
	m->require_tenant_set = sys->require_tenant_set || nar->require_tenant_set;
	m->require_tenant = sys->require_tenant || nar->require_tenant;
	m->from_tenant =
		sys->require_tenant || !nar->require_tenant_set ? FROM_SYSTEM : FROM_NARROW;
	m->min_tier_set = sys->min_tier_set || nar->min_tier_set;
	m->min_tier = sys->min_tier;
	m->from_tier = FROM_SYSTEM;
	if (nar->min_tier_set && (!sys->min_tier_set || nar->min_tier > sys->min_tier)) {
		m->min_tier = nar->min_tier;
		m->from_tier = FROM_NARROW;
	}
	*out = m;
	return 0;
fail:
	sbx_config_free(m);
	return rc;
}

int sbx__config_load_narrowed(sbx_config **out,
			      const char *path,
			      const char *system_path,
			      uid_t system_owner)
{
	const char *named_by = "given explicitly", *env;
	sbx_config *sys = NULL, *nar = NULL;
	int rc;

	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_load_narrowed: out is NULL");
	rc = load_file(&sys, system_path, 0, "the system config", system_owner, 1);
	if (rc < 0)
		return rc;
	if (rc == NOT_FOUND) {
		sys = calloc(1, sizeof(*sys));
		if (!sys)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					      "config: out of memory");
		sys->refs = 1;
	}
	sys->is_system = 1;
	if (!path) {
		env = secure_getenv(SBX_CONFIG_ENV);
		if (env && *env) {
			path = env;
			named_by = "named by $" SBX_CONFIG_ENV;
		}
	}
	if (!path) {
		*out = sys;
		return 0;
	}
	rc = load_file(&nar, path, 1, named_by, geteuid(), 0);
	if (rc == 0)
		rc = narrow(out, sys, nar);
	sbx_config_free(nar);
	sbx_config_free(sys);
	return rc;
}

int sbx_config_load_narrowed(sbx_config **out, const char *path)
{
	sbx__error_clear();
	return sbx__config_load_narrowed(out, path, SBX_CONFIG_SYSTEM_PATH, 0);
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
	}
	if (c->hosts_file) {
		if (caller_hosts && *caller_hosts && strcmp(caller_hosts, c->hosts_file) != 0)
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
					      "hosts file %.200s refused: config %s names "
					      "egress.hosts_file %.200s, the only place allowed "
					      "names resolve",
					      caller_hosts, source_name(c), c->hosts_file);
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
		c = &builtin_config;
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
					  fmt_slot(a, sizeof(a), 0, policy_slot(req, 0, k)),
					  fmt_slot(b, sizeof(b), 0, c->bound[1][0]));
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
	if (!image_permitted(c, eff->image)) {
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

/* ===== Describing ===== */

static const char *origin_name(const sbx_config *c, enum sbx__origin o, unsigned char from)
{
	switch (o) {
	case SBX__ORIGIN_BUILTIN:
		return "builtin";
	case SBX__ORIGIN_FILE:
		return from_name(c, from, "builtin");
	case SBX__ORIGIN_REQUEST:
		return "request";
	}
	return "builtin";
}

static json_t *slot_json(int slot, int64_t v)
{
	char buf[32];

	if (slot != 0 && sbx__limit_kinds[slot].unit == SBX__LIMIT_UNIT_SIZE)
		return json_string(fmt_size(buf, sizeof(buf), v));
	if (slot == 0 || sbx__limit_kinds[slot].unit == SBX__LIMIT_UNIT_MILLI) {
		if (v % 1000 == 0)
			return json_integer(v / 1000);
		return json_real((double)v / 1000.0);
	}
	return json_integer(v);
}

/* {"value": v, "origin": o}; steals v. NULL when out of memory. */
static json_t *entry(json_t *v, const char *origin)
{
	if (!v)
		return NULL;
	return json_pack("{s:o, s:s}", "value", v, "origin", origin);
}

static json_t *list_json(char **list, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(list[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The allowlist as "name" or "name:port" (IPv6 prefixes: "[addr/len]:port"). */
static json_t *allow_json(const sbx_policy *p)
{
	json_t *a = json_array();
	char buf[300];

	for (size_t i = 0; a && i < p->allow_n; i++) {
		const struct sbx_allow *e = &p->allow[i];

		if (!e->port)
			snprintf(buf, sizeof(buf), "%s", e->name);
		else if (strchr(e->name, ':'))
			snprintf(buf, sizeof(buf), "[%s]:%u", e->name, (unsigned)e->port);
		else
			snprintf(buf, sizeof(buf), "%s:%u", e->name, (unsigned)e->port);
		if (json_array_append_new(a, json_string(buf)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static void set_new(json_t *obj, const char *key, json_t *v, int *bad)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		*bad = 1;
}

int sbx_config_describe(char **out,
			const sbx_config *c,
			const sbx_policy *request,
			const char *backend)
{
	struct sbx__config_origins o;
	sbx_policy *req = NULL, *eff = NULL;
	json_t *root = NULL, *e = NULL, *t = NULL, *ceil = NULL, *egress = NULL;
	const char *file;
	char *text = NULL;
	int rc, bad = 0;

	sbx__error_clear();
	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_describe: out is NULL");
	if (!c)
		c = &builtin_config;
	if (!backend)
		backend = "docker";
	if (!request) {
		rc = sbx_policy_new(&req);
		if (rc < 0)
			return rc;
		request = req;
	}
	rc = sbx__config_merge(&eff, c, request, backend, &o);
	sbx_policy_free(req);
	if (rc < 0)
		return rc;
	file = c->source ? c->source : "builtin";

	root = json_object();
	e = json_object();
	t = json_object();
	ceil = json_object();
	if (!root || !e || !t || !ceil) {
		bad = 1;
		goto done;
	}
	set_new(root, "source", json_string(c->source ? c->source : "builtin"), &bad);
	if (c->layered)
		set_new(root, "system", json_string(c->sys_source ? c->sys_source : "builtin"),
			&bad);
	else if (c->is_system)
		set_new(root, "system", json_string(c->source ? c->source : "builtin"), &bad);
	set_new(root, "backend", json_string(backend), &bad);
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++) {
		static const char *const names[] = {
			[SBX_TIMEOUT_CREATE] = "create",
			[SBX_TIMEOUT_RUN] = "run",
			[SBX_TIMEOUT_RUN_CODE] = "run_code",
			[SBX_TIMEOUT_SANDBOX] = "sandbox",
		};
		set_new(t, names[k],
			entry(slot_json(0, (int64_t)eff->timeout_ms[k]),
			      origin_name(c, o.timeout[k], c->from_bound[0][0])),
			&bad);
	}
	set_new(e, "timeout", json_incref(t), &bad);
	for (int s = SBX__LIMIT_FIRST; s <= SBX__LIMIT_LAST; s++)
		set_new(e, slot_name(s),
			entry(slot_json(s, eff->limit[s]),
			      origin_name(c, o.limit[s], c->from_bound[0][s])),
			&bad);
	set_new(e, "image", entry(json_string(eff->image), origin_name(c, o.image, c->from_image)),
		&bad);
	set_new(e, "tenant", entry(json_string(eff->tenant), origin_name(c, o.tenant, 0)), &bad);
	set_new(e, "min_tier",
		entry(json_string(sbx_tier_name(eff->min_tier)),
		      origin_name(c, o.min_tier, c->from_tier)),
		&bad);
	set_new(e, "allow", entry(allow_json(eff), eff->allow_n ? "request" : "builtin"), &bad);
	set_new(root, "effective", json_incref(e), &bad);
	for (int s = 0; s < NSLOT; s++)
		set_new(ceil, slot_name(s),
			entry(slot_json(s, c->bound[1][s] ? c->bound[1][s] : slot_max(s)),
			      c->bound[1][s] ? from_name(c, c->from_bound[1][s], file) : "builtin"),
			&bad);
	set_new(root, "ceilings", json_incref(ceil), &bad);
	set_new(root, "images",
		entry(c->images_set ? list_json(c->images, c->images_n) : json_string("any"),
		      c->images_set ? from_name(c, c->from_images, file) : "builtin"),
		&bad);
	if (c->egress_set)
		egress = json_pack("{s:o, s:o}", "cidrs", list_json(c->cidr_text, c->cidrs_n),
				   "hosts", list_json(c->hosts, c->hosts_n));
	else
		egress = json_string(c->is_file ? "none" : "any");
	set_new(root, "egress",
		entry(egress, c->is_file ? from_name(c, c->from_egress, file) : "builtin"), &bad);
	set_new(root, "backends",
		entry(c->backends_set ? list_json(c->backends, c->backends_n) : json_string("any"),
		      c->backends_set ? from_name(c, c->from_backends, file) : "builtin"),
		&bad);
	set_new(root, "secrets",
		entry(json_boolean(c->secrets_set ? c->secrets : 1),
		      c->secrets_set ? from_name(c, c->from_secrets, file) : "builtin"),
		&bad);
	set_new(root, "require_tenant",
		entry(json_boolean(c->require_tenant_set && c->require_tenant),
		      c->require_tenant_set ? from_name(c, c->from_tenant, file) : "builtin"),
		&bad);
	set_new(root, "min_tier",
		entry(json_string(
			      sbx_tier_name(c->min_tier_set ? c->min_tier : SBX_TIER_CONTAINER)),
		      c->min_tier_set ? from_name(c, c->from_tier, file) : "builtin"),
		&bad);
	if (!bad)
		text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
done:
	json_decref(t);
	json_decref(e);
	json_decref(ceil);
	json_decref(root);
	sbx_policy_free(eff);
	if (bad || !text) {
		free(text);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
				      "config_describe: out of memory");
	}
	*out = text;
	return 0;
}
