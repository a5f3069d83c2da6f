/*
 * netpolicy/allow-int.h: the egress allowlist model: entries, their strict
 * validation, and the plan a backend enforces (names resolved on the host,
 * addresses classified). No libnl or libnftables here: core includes it.
 */
#ifndef SBX_NETPOLICY_ALLOW_INT_H
#define SBX_NETPOLICY_ALLOW_INT_H

#include <stddef.h>
#include <stdint.h>

#define SBX_ALLOW_MAX 64       /* entries per policy */
#define SBX_ALLOW_ADDRS_MAX 16 /* addresses kept per host name */

#define SBX_ALLOW_HOST 1
#define SBX_ALLOW_CIDR 2

/*
 * The sandbox side of every allowlist link. Addresses of sandboxes are
 * carved from these (one per sandbox); a sandbox never reaches them, and no
 * allowlist entry may name them.
 */
#define SBX_NP_SANDBOX_NET4 "169.254.64.0/18"
#define SBX_NP_SANDBOX_NET6 "fd73:6278::/32"
#define SBX_NP_GATEWAY4 "169.254.1.1"
#define SBX_NP_GATEWAY6 "fe80::1"

struct sbx__allow {
	int kind;	  /* SBX_ALLOW_HOST or SBX_ALLOW_CIDR */
	char *name;	  /* host: the name, lower case; cidr: canonical "ADDR/LEN" */
	int family;	  /* cidr: AF_INET or AF_INET6; host: 0 */
	uint8_t addr[16]; /* cidr: the prefix */
	uint8_t plen;
	uint16_t port; /* 0: every protocol and port; else TCP and UDP to this port */
};

/* Each parser validates fully and fills *out (out->name is malloc'ed) or
 * records SBX_EINVALID naming the problem and leaves *out untouched. */
int sbx__allow_parse_cidr(struct sbx__allow *out, const char *cidr, uint16_t port);
int sbx__allow_parse_host(struct sbx__allow *out, const char *name, uint16_t port);
/* "CIDR[:PORT]": 198.51.100.0/24, 198.51.100.7:443, 2001:db8::/32:443,
 * [2001:db8::1]:443, 2001:db8::1. */
int sbx__allow_parse_cidr_spec(struct sbx__allow *out, const char *spec);
/* "NAME[:PORT]". */
int sbx__allow_parse_host_spec(struct sbx__allow *out, const char *spec);
void sbx__allow_clear(struct sbx__allow *a);
int sbx__allow_same(const struct sbx__allow *a, const struct sbx__allow *b);

/*
 * An address of this host for egress purposes: one of its own (plen 0: the
 * exact address), or the subnet of a bridge on it (Docker's among them),
 * where other containers live. ifname names the interface in messages.
 */
struct sbx__host_addr {
	int family;
	uint8_t addr[16];
	uint8_t plen;
	char ifname[16];
};

/* A range no sandbox ever reaches (netpolicy/special.c). */
struct sbx__special {
	int family;
	uint8_t addr[16];
	uint8_t plen;
	const char *what;
};

/* The fixed table of never-reachable ranges (both families). */
size_t sbx__special_table(const struct sbx__special **out);

#define SBX_SPECIAL_NONE 0
#define SBX_SPECIAL_INSIDE 1   /* the prefix lies inside (or is) a special range: refuse */
#define SBX_SPECIAL_CONTAINS 2 /* the prefix holds a special range: carve it out */

/*
 * Pure: how prefix addr/plen (family AF_INET or AF_INET6, 16 bytes) stands
 * to the never-reachable ranges: the fixed table, then host (this host's own
 * addresses and bridge subnets; may be NULL). INSIDE wins over CONTAINS.
 * desc (may be NULL) receives the range and why, e.g. "169.254.0.0/16
 * (link-local, ...)" or "172.17.0.1 (this host's own address on docker0)".
 */
int sbx__special_overlap(int family,
			 const uint8_t *addr,
			 unsigned plen,
			 const struct sbx__host_addr *host,
			 size_t host_n,
			 char *desc,
			 size_t desc_len);

/* One destination rule of a sandbox. */
struct sbx__np_rule {
	int family;
	uint8_t addr[16];
	uint8_t plen;
	uint16_t port;
	unsigned host; /* 0: a CIDR entry's; else 1 + the index of its name in hosts */
};

/* What a backend enforces for one sandbox: rules, and the pinned names. */
struct sbx__np_plan {
	struct sbx__np_rule *rules;
	size_t n;
	char **pins; /* "name:address", Docker's ExtraHosts form */
	size_t pins_n;
	struct sbx__host_addr *never; /* this host's addresses and bridges, dropped first */
	size_t never_n;
	int has_v4, has_v6;
	/* The names of allow_host entries: their TCP goes through the name
	 * checker (sbx-egress), which rules with host != 0 point to. */
	char **hosts;
	size_t hosts_n;
	const char *checker; /* the checker's path (not owned); set by the backend */
	/* What the checker's audit events carry (not owned; NULL: none). */
	const char *audit_file[2];
	const char *tenant, *sandbox_id, *trace_id, *span_id;
	/* The exporter settings of the creator's tracer (core/trace.c's text;
	 * not owned; NULL: the checker exports no spans). Header values may be
	 * credentials: they reach the checker on a descriptor only. */
	const char *otlp;
};

/*
 * Resolves an allowlist into a plan. Host names are looked up in hosts_file
 * (hosts(5) format) when given, and then nowhere else; otherwise with
 * getaddrinfo() on the host. v6_ok: IPv6 can be enforced (forwarding on);
 * when it is not, a name's IPv6 addresses are left out (and a name with no
 * other is refused), and a v6 CIDR is refused. host_addrs: this host's own
 * addresses and bridge subnets, which no entry may name and no name may
 * resolve to; they are kept in the plan (never) for the drop rules.
 * Returns 0, SBX_EINVALID, SBX_ENOTFOUND (a name with no address),
 * SBX_EDENIED (a CIDR inside, or a name resolving to, a never-reachable
 * address), SBX_EUNSUPPORTED, SBX_ENOMEM.
 */
int sbx__netpolicy_plan(struct sbx__np_plan *out,
			const struct sbx__allow *allow,
			size_t n,
			const char *hosts_file,
			int v6_ok,
			const struct sbx__host_addr *host_addrs,
			size_t host_n);
void sbx__netpolicy_plan_clear(struct sbx__np_plan *p);

/* Formats an address ("198.51.100.7", "2001:db8::1"); netpolicy/addr.c. */
void sbx__addr_format(int family, const uint8_t *addr, char *dst, size_t len);

#endif
