/*
 * netpolicy/allow.c: egress allowlist entries, their validation, and the
 * plan a backend enforces.
 *
 * Validation is strict because an allowlist is the one way out of a
 * sandbox: a malformed prefix, host bits set, a prefix of length 0, a
 * wildcard, a name that is not a hostname, and ranges a sandbox can never
 * reach (netpolicy/special.c: loopback, link-local, metadata, multicast,
 * the sandbox links, and at create time the host's own addresses and
 * bridges) are refused with a message naming the problem. Names are
 * resolved here, on the host, at create time, and pinned; a name that
 * resolves to one of those addresses is refused too.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sandboxio/errors.h>

#include "netpolicy/allow-int.h"
#include "netpolicy/names-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define HOSTS_FILE_MAX (1 << 20)

static int err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Records SBX_EINVALID with the message; returns the code. */
static int err(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY, "%s", msg);
}

static int parse_plen(const char *s, unsigned max, unsigned *out)
{
	unsigned v = 0;

	if (!*s || strlen(s) > 3)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int sbx__allow_parse_cidr(struct sbx__allow *out, const char *cidr, uint16_t port)
{
	char buf[64], canon[80], addrtxt[INET6_ADDRSTRLEN], why[256];
	uint8_t a[16] = {0};
	unsigned plen, max;
	char *slash, *name;
	int family;

	if (!out || !cidr)
		return err("allow_cidr: NULL argument");
	if (!*cidr)
		return err("allow_cidr: empty: name a prefix such as 198.51.100.0/24");
	if (strlen(cidr) >= sizeof(buf))
		return err("allow_cidr '%.48s...': too long for an address/prefix", cidr);
	if (strchr(cidr, '*'))
		return err("allow_cidr '%s': wildcards are not supported; give a prefix such "
			   "as 198.51.100.0/24",
			   cidr);
	snprintf(buf, sizeof(buf), "%s", cidr);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	if (inet_pton(AF_INET, buf, a) == 1) {
		family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, a) == 1) {
		family = AF_INET6;
		max = 128;
	} else {
		return err("allow_cidr '%s': '%s' is not an IPv4 or IPv6 address", cidr, buf);
	}
	plen = max;
	if (slash && parse_plen(slash, max, &plen) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY,
				      "allow_cidr '%s': prefix length '%s' is not a number in "
				      "0..%u",
				      cidr, slash, max);
	if (plen == 0)
		return err("allow_cidr '%s': a prefix of length 0 would allow every address; "
			   "name the prefixes to allow",
			   cidr);
	for (unsigned bit = plen; bit < max; bit++)
		if (a[bit / 8] & (0x80 >> (bit % 8))) {
			uint8_t m[16];
			memcpy(m, a, 16);
			for (unsigned b2 = plen; b2 < max; b2++)
				m[b2 / 8] &= (uint8_t) ~(0x80 >> (b2 % 8));
			sbx__addr_format(family, m, addrtxt, sizeof(addrtxt));
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY,
					      "allow_cidr '%s': host bits are set beyond /%u "
					      "(did you mean %s/%u?)",
					      cidr, plen, addrtxt, plen);
		}
	if (sbx__special_overlap(family, a, plen, NULL, 0, why, sizeof(why)) == SBX_SPECIAL_INSIDE)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY,
				      "allow_cidr '%s': lies inside %s, which a sandbox never "
				      "reaches, whatever its allowlist says",
				      cidr, why);
	sbx__addr_format(family, a, addrtxt, sizeof(addrtxt));
	snprintf(canon, sizeof(canon), "%s/%u", addrtxt, plen);
	name = strdup(canon);
	if (!name)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	*out = (struct sbx__allow){.kind = SBX_ALLOW_CIDR,
				   .name = name,
				   .family = family,
				   .plen = (uint8_t)plen,
				   .port = port};
	memcpy(out->addr, a, 16);
	return 0;
}

int sbx__allow_parse_host(struct sbx__allow *out, const char *name, uint16_t port)
{
	char buf[SBX_NAME_BUF];
	uint8_t a[16];
	size_t n;
	int rc;
	char *dup;

	if (!out || !name)
		return err("allow_host: NULL argument");
	n = strlen(name);
	if (n == 0)
		return err("allow_host: empty: name a host such as api.example.com");
	/* Until the name check runs per connection (docs/egress-names.md), a
	 * name entry is enforced by its pinned addresses, and a wildcard has
	 * none to pin. */
	if (strchr(name, '*'))
		return err("allow_host '%.253s': wildcards are not supported; list each name",
			   name);
	if (inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1 ||
	    strchr(name, '/'))
		return err("allow_host '%.253s': is an address; use allow_cidr for addresses",
			   name);
	if ((rc = sbx__names_parse_entry(buf, NULL, "allow_host", name, n)) < 0)
		return rc;
	n = strlen(buf);
	if (strcmp(buf, "localhost") == 0 || (n > 10 && strcmp(buf + n - 10, ".localhost") == 0))
		return err("allow_host '%.253s': names the sandbox's own loopback", name);
	dup = strdup(buf);
	if (!dup)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	*out = (struct sbx__allow){.kind = SBX_ALLOW_HOST, .name = dup, .port = port};
	return 0;
}

static int parse_port(const char *spec, const char *p, uint16_t *out)
{
	unsigned long v = 0;

	if (!*p || strlen(p) > 5)
		goto bad;
	for (const char *c = p; *c; c++) {
		if (!isdigit((unsigned char)*c))
			goto bad;
		v = v * 10 + (unsigned long)(*c - '0');
	}
	if (v == 0)
		return err("'%s': port 0: leave the port out to allow every port", spec);
	if (v > 65535)
		goto bad;
	*out = (uint16_t)v;
	return 0;
bad:
	return err("'%s': port '%s' is not a number in 1..65535", spec, p);
}

int sbx__allow_parse_cidr_spec(struct sbx__allow *out, const char *spec)
{
	char buf[96], *port = NULL, *colon;
	uint16_t pv = 0;
	int rc;

	if (!out || !spec)
		return err("allow_cidr: NULL argument");
	if (strlen(spec) >= sizeof(buf))
		return err("'%.48s...': too long for CIDR[:PORT]", spec);
	snprintf(buf, sizeof(buf), "%s", spec);
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');
		if (!close || (close[1] && close[1] != ':'))
			return err("'%s': expected [IPV6[/LEN]] or [IPV6[/LEN]]:PORT", spec);
		if (close[1] == ':')
			port = close + 2;
		*close = '\0';
		memmove(buf, buf + 1, strlen(buf));
	} else if ((colon = strchr(buf, '/'))) {
		/* ADDR/LEN or ADDR/LEN:PORT: the length has no colon. */
		port = strchr(colon, ':');
		if (port)
			*port++ = '\0';
	} else if ((colon = strchr(buf, ':')) && !strchr(colon + 1, ':')) {
		/* One colon: IPv4 ADDR:PORT (an IPv6 address has at least two). */
		*colon = '\0';
		port = colon + 1;
	}
	if (port && (rc = parse_port(spec, port, &pv)) < 0)
		return rc;
	return sbx__allow_parse_cidr(out, buf, pv);
}

int sbx__allow_parse_host_spec(struct sbx__allow *out, const char *spec)
{
	char buf[300], *colon;
	uint16_t pv = 0;
	int rc;

	if (!out || !spec)
		return err("allow_host: NULL argument");
	if (strlen(spec) >= sizeof(buf))
		return err("'%.48s...': too long for NAME[:PORT]", spec);
	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (colon && strchr(colon + 1, ':'))
		return err("allow_host '%s': is an address; use allow_cidr for addresses", spec);
	if (colon) {
		*colon = '\0';
		if ((rc = parse_port(spec, colon + 1, &pv)) < 0)
			return rc;
	}
	return sbx__allow_parse_host(out, buf, pv);
}

void sbx__allow_clear(struct sbx__allow *a)
{
	if (!a)
		return;
	free(a->name);
	memset(a, 0, sizeof(*a));
}

int sbx__allow_same(const struct sbx__allow *a, const struct sbx__allow *b)
{
	return a->kind == b->kind && a->port == b->port && strcmp(a->name, b->name) == 0;
}

/* ===== The plan ===== */

void sbx__netpolicy_plan_clear(struct sbx__np_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->pins_n; i++)
		free(p->pins[i]);
	free(p->pins);
	for (size_t i = 0; i < p->hosts_n; i++)
		free(p->hosts[i]);
	free(p->hosts);
	free(p->rules);
	free(p->never);
	memset(p, 0, sizeof(*p));
}

static int add_rule(struct sbx__np_plan *p, const struct sbx__np_rule *r)
{
	struct sbx__np_rule *g = realloc(p->rules, (p->n + 1) * sizeof(*g));

	if (!g)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	p->rules = g;
	p->rules[p->n++] = *r;
	if (r->family == AF_INET)
		p->has_v4 = 1;
	else
		p->has_v6 = 1;
	return 0;
}

static int add_pin(struct sbx__np_plan *p, const char *name, const char *addr)
{
	char **g;
	char *pin = NULL;

	for (size_t i = 0; i < p->pins_n; i++) {
		size_t nl = strlen(name);
		if (strncmp(p->pins[i], name, nl) == 0 && p->pins[i][nl] == ':' &&
		    strcmp(p->pins[i] + nl + 1, addr) == 0)
			return 0;
	}
	g = realloc(p->pins, (p->pins_n + 1) * sizeof(*g));
	if (!g || asprintf(&pin, "%s:%s", name, addr) < 0) {
		if (g)
			p->pins = g;
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	}
	p->pins = g;
	p->pins[p->pins_n++] = pin;
	return 0;
}

/* The index + 1 of name in p->hosts, added if new. */
static int add_host(struct sbx__np_plan *p, const char *name, unsigned *host)
{
	char **g;

	for (size_t i = 0; i < p->hosts_n; i++)
		if (strcmp(p->hosts[i], name) == 0) {
			*host = (unsigned)i + 1;
			return 0;
		}
	g = realloc(p->hosts, (p->hosts_n + 1) * sizeof(*g));
	if (!g || !(g[p->hosts_n] = strdup(name))) {
		if (g)
			p->hosts = g;
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	}
	p->hosts = g;
	*host = (unsigned)++p->hosts_n;
	return 0;
}

struct found {
	int family;
	uint8_t addr[16];
};

/* Looks name up in a hosts(5) file: "ADDRESS NAME [ALIAS...]", '#' comments. */
static int lookup_file(const char *file, const char *name, struct found *out, size_t *n)
{
	_sbx_cleanup_free_ char *line = NULL;
	size_t cap = 0, total = 0;
	ssize_t len;
	FILE *f = fopen(file, "re");

	if (!f)
		return sbx__error_os(SBX_ENOTFOUND, errno, "hosts file %.200s", file);
	*n = 0;
	while ((len = getline(&line, &cap, f)) > 0 && *n < SBX_ALLOW_ADDRS_MAX) {
		char *save = NULL, *tok, *hash = strchr(line, '#');
		uint8_t a[16] = {0};
		int fam;

		total += (size_t)len;
		if (total > HOSTS_FILE_MAX)
			break;
		if (hash)
			*hash = '\0';
		tok = strtok_r(line, " \t\r\n", &save);
		if (!tok)
			continue;
		if (inet_pton(AF_INET, tok, a) == 1)
			fam = AF_INET;
		else if (inet_pton(AF_INET6, tok, a) == 1)
			fam = AF_INET6;
		else
			continue;
		while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
			size_t tl = strlen(tok);
			if (tl && tok[tl - 1] == '.')
				tok[--tl] = '\0';
			if (strcasecmp(tok, name) == 0) {
				out[*n].family = fam;
				memcpy(out[*n].addr, a, 16);
				(*n)++;
				break;
			}
		}
	}
	fclose(f);
	return 0;
}

static int lookup_system(const char *name, struct found *out, size_t *n)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(name, NULL, &hints, &res);

	*n = 0;
	if (rc == EAI_NONAME || rc == EAI_NODATA)
		return 0;
	if (rc != 0)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_NETPOLICY,
				      "resolve %.253s on the host: %s", name, gai_strerror(rc));
	for (struct addrinfo *ai = res; ai && *n < SBX_ALLOW_ADDRS_MAX; ai = ai->ai_next) {
		memset(out[*n].addr, 0, 16);
		if (ai->ai_family == AF_INET)
			memcpy(out[*n].addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		else if (ai->ai_family == AF_INET6)
			memcpy(out[*n].addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		else
			continue;
		out[*n].family = ai->ai_family;
		(*n)++;
	}
	freeaddrinfo(res);
	return 0;
}

static int plan_host(struct sbx__np_plan *p,
		     const struct sbx__allow *a,
		     const char *hosts_file,
		     int v6_ok,
		     const struct sbx__host_addr *host_addrs,
		     size_t host_n)
{
	struct found f[SBX_ALLOW_ADDRS_MAX];
	size_t n = 0, kept = 0;
	char txt[INET6_ADDRSTRLEN];
	unsigned host = 0;
	int rc;

	rc = hosts_file ? lookup_file(hosts_file, a->name, f, &n) : lookup_system(a->name, f, &n);
	if (rc < 0)
		return rc;
	if (n == 0)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_NETPOLICY,
				      "allow_host %s: the name has no address%s%s", a->name,
				      hosts_file ? " in the hosts file " : " on this host",
				      hosts_file ? hosts_file : "");
	for (size_t i = 0; i < n; i++) {
		char why[256];

		sbx__addr_format(f[i].family, f[i].addr, txt, sizeof(txt));
		if (sbx__special_overlap(f[i].family, f[i].addr, f[i].family == AF_INET ? 32 : 128,
					 host_addrs, host_n, why, sizeof(why)) != SBX_SPECIAL_NONE)
			return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_NETPOLICY,
					      "allow_host %s resolves to %s, inside %s, which a "
					      "sandbox never reaches",
					      a->name, txt, why);
	}
	if ((rc = add_host(p, a->name, &host)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct sbx__np_rule r = {.family = f[i].family,
					 .plen = f[i].family == AF_INET ? 32 : 128,
					 .port = a->port,
					 .host = host};

		if (f[i].family == AF_INET6 && !v6_ok)
			continue; /* left out and not pinned: the sandbox only knows IPv4 */
		memcpy(r.addr, f[i].addr, 16);
		sbx__addr_format(f[i].family, f[i].addr, txt, sizeof(txt));
		if ((rc = add_rule(p, &r)) < 0 || (rc = add_pin(p, a->name, txt)) < 0)
			return rc;
		kept++;
	}
	if (!kept)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "allow_host %s has only IPv6 addresses, and IPv6 forwarding "
				      "is off on this host (net.ipv6.conf.all.forwarding), so IPv6 "
				      "egress cannot be enforced",
				      a->name);
	return 0;
}

int sbx__netpolicy_plan(struct sbx__np_plan *out,
			const struct sbx__allow *allow,
			size_t n,
			const char *hosts_file,
			int v6_ok,
			const struct sbx__host_addr *host_addrs,
			size_t host_n)
{
	struct sbx__np_plan p = {0};
	char why[256];
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct sbx__allow *a = &allow[i];

		if (a->kind == SBX_ALLOW_HOST) {
			rc = plan_host(&p, a, hosts_file, v6_ok, host_addrs, host_n);
		} else if (a->family == AF_INET6 && !v6_ok) {
			rc = sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
					    "allow_cidr %s: IPv6 forwarding is off on this host "
					    "(net.ipv6.conf.all.forwarding), so IPv6 egress cannot "
					    "be enforced",
					    a->name);
		} else if (sbx__special_overlap(a->family, a->addr, a->plen, host_addrs, host_n,
						why, sizeof(why)) == SBX_SPECIAL_INSIDE) {
			rc = sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_NETPOLICY,
					    "allow_cidr %s: lies inside %s, which a sandbox never "
					    "reaches, whatever its allowlist says",
					    a->name, why);
		} else {
			struct sbx__np_rule r = {
				.family = a->family, .plen = a->plen, .port = a->port};

			memcpy(r.addr, a->addr, 16);
			rc = add_rule(&p, &r);
		}
	}
	if (rc == 0 && host_n) {
		p.never = malloc(host_n * sizeof(*p.never));
		if (!p.never)
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
		else
			memcpy(p.never, host_addrs, host_n * sizeof(*p.never));
		p.never_n = p.never ? host_n : 0;
	}
	if (rc < 0) {
		sbx__netpolicy_plan_clear(&p);
		return rc;
	}
	*out = p;
	return 0;
}
