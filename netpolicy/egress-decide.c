/*
 * netpolicy/egress-decide.c: the name checker's decisions
 * (netpolicy/egress-int.h), over the readers of netpolicy/sni.c and the
 * matcher of netpolicy/names.c.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netpolicy/egress-int.h"
#include "netpolicy/sni-int.h"

int sbx__egress_entry_parse(struct sbx__egress_entry *e, const char *arg, const char **why)
{
	const char *s1 = strchr(arg, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	char port[8], addr[INET6_ADDRSTRLEN];
	unsigned long v;
	char *end;

	memset(e, 0, sizeof(*e));
	if (!s1 || !s2) {
		*why = "not NAME/PORT/ADDRESS";
		return -1;
	}
	if (sbx__names_canon(e->name, arg, (size_t)(s1 - arg)) < 0) {
		*why = "the name is not a host name";
		return -1;
	}
	if (s2 - s1 - 1 < 1 || s2 - s1 - 1 >= (long)sizeof(port)) {
		*why = "the port is not 0 to 65535";
		return -1;
	}
	memcpy(port, s1 + 1, (size_t)(s2 - s1 - 1));
	port[s2 - s1 - 1] = '\0';
	v = strtoul(port, &end, 10);
	if (*end || port[0] < '0' || port[0] > '9' || v > 65535) {
		*why = "the port is not 0 to 65535";
		return -1;
	}
	e->port = (uint16_t)v;
	if (strlen(s2 + 1) >= sizeof(addr)) {
		*why = "the address is not an IPv4 or IPv6 address";
		return -1;
	}
	snprintf(addr, sizeof(addr), "%s", s2 + 1);
	if (inet_pton(AF_INET, addr, e->addr) == 1) {
		e->family = AF_INET;
	} else if (inet_pton(AF_INET6, addr, e->addr) == 1) {
		e->family = AF_INET6;
	} else {
		*why = "the address is not an IPv4 or IPv6 address";
		return -1;
	}
	return 0;
}

static void refuse(struct sbx__egress_verdict *out, const char *reason)
{
	out->verdict = SBX_EGRESS_REFUSE;
	out->reason = reason;
}

void sbx__egress_decide(const struct sbx__egress_entry *v,
			size_t nv,
			int mode,
			int family,
			const uint8_t addr[16],
			uint16_t port,
			const uint8_t *p,
			size_t n,
			struct sbx__egress_verdict *out)
{
	struct sbx__sni s;
	int rc, named = 0;
	size_t alen = family == AF_INET ? 4 : 16;

	memset(out, 0, sizeof(*out));
	out->verdict = SBX_EGRESS_MORE;
	if (n == 0)
		return;
	out->http = mode == SBX_EGRESS_HTTP || p[0] != 0x16;
	rc = out->http ? sbx__sni_http(p, n, &s) : sbx__sni_tls(p, n, &s);
	switch (rc) {
	case SBX_SNI_MORE:
		return;
	case SBX_SNI_FOUND:
		break;
	case SBX_SNI_NONE:
		refuse(out, out->http ? "no-host" : "no-sni");
		return;
	case SBX_SNI_ECH:
		refuse(out, "ech");
		return;
	case SBX_SNI_TOO_LONG:
		refuse(out, "too-long");
		return;
	default:
		refuse(out, "malformed");
		return;
	}
	snprintf(out->name, sizeof(out->name), "%s", s.name);
	if (out->http) {
		if (s.body_len < 0) {
			refuse(out, "chunked");
			return;
		}
		if (s.port && s.port != port) {
			refuse(out, "name");
			return;
		}
		out->head_len = s.head_len;
		out->body_len = (unsigned long long)s.body_len;
	}
	for (size_t i = 0; i < nv; i++) {
		if (!sbx__names_match(v[i].name, s.name, strlen(s.name)))
			continue;
		if (v[i].port && v[i].port != port)
			continue;
		named = 1;
		if (v[i].family == family && memcmp(v[i].addr, addr, alen) == 0) {
			out->verdict = SBX_EGRESS_ALLOW;
			return;
		}
	}
	refuse(out, named ? "address" : "name");
}
