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

struct sbx_allow {
	int kind;	  /* SBX_ALLOW_HOST or SBX_ALLOW_CIDR */
	char *name;	  /* host: the name, lower case; cidr: canonical "ADDR/LEN" */
	int family;	  /* cidr: AF_INET or AF_INET6; host: 0 */
	uint8_t addr[16]; /* cidr: the prefix */
	uint8_t plen;
	uint16_t port; /* 0: every protocol and port; else TCP and UDP to this port */
};

/* Each parser validates fully and fills *out (out->name is malloc'ed) or
 * records SBX_EINVALID naming the problem and leaves *out untouched. */
int sbx__allow_parse_cidr(struct sbx_allow *out, const char *cidr, uint16_t port);
int sbx__allow_parse_host(struct sbx_allow *out, const char *name, uint16_t port);
/* "CIDR[:PORT]": 198.51.100.0/24, 198.51.100.7:443, 2001:db8::/32:443,
 * [2001:db8::1]:443, 2001:db8::1. */
int sbx__allow_parse_cidr_spec(struct sbx_allow *out, const char *spec);
/* "NAME[:PORT]". */
int sbx__allow_parse_host_spec(struct sbx_allow *out, const char *spec);
void sbx__allow_clear(struct sbx_allow *a);
int sbx__allow_same(const struct sbx_allow *a, const struct sbx_allow *b);

/* Where an address stands for egress. */
enum sbx_addr_class {
	SBX_ADDR_ROUTABLE = 0, /* an allowlist may open it */
	SBX_ADDR_SPECIAL = 1,  /* link-local, cloud metadata: only an explicit CIDR opens it */
	SBX_ADDR_NEVER = 2     /* loopback, unspecified, multicast, broadcast, sandbox links */
};
enum sbx_addr_class sbx__addr_class(int family, const uint8_t *addr, const char **what);

/* One destination rule of a sandbox. */
struct sbx_np_rule {
	int family;
	uint8_t addr[16];
	uint8_t plen;
	uint16_t port;
	int explicit_cidr; /* a CIDR that names a special range or one exact address */
};

/* What a backend enforces for one sandbox: rules, and the pinned names. */
struct sbx_np_plan {
	struct sbx_np_rule *rules;
	size_t n;
	char **pins; /* "name:address", Docker's ExtraHosts form */
	size_t pins_n;
	int has_v4, has_v6;
};

/*
 * Resolves an allowlist into a plan. Host names are looked up in hosts_file
 * (hosts(5) format) when given, and then nowhere else; otherwise with
 * getaddrinfo() on the host. v6_ok: IPv6 can be enforced (forwarding on);
 * when it is not, a name's IPv6 addresses are left out (and a name with no
 * other is refused), and a v6 CIDR is refused. host_addrs: this host's own
 * addresses (family, 16 bytes each), which a name may never resolve to.
 * Returns 0, SBX_EINVALID, SBX_ENOTFOUND (a name with no address),
 * SBX_EDENIED (a name resolving to a special or own address),
 * SBX_EUNSUPPORTED, SBX_ENOMEM.
 */
struct sbx_host_addr {
	int family;
	uint8_t addr[16];
};
int sbx__netpolicy_plan(struct sbx_np_plan *out,
			const struct sbx_allow *allow,
			size_t n,
			const char *hosts_file,
			int v6_ok,
			const struct sbx_host_addr *host_addrs,
			size_t host_n);
void sbx__netpolicy_plan_clear(struct sbx_np_plan *p);

/* Formats an address ("198.51.100.7", "2001:db8::1"). */
void sbx__addr_format(int family, const uint8_t *addr, char *dst, size_t len);

#endif
