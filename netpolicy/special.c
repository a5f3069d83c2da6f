/*
 * netpolicy/special.c: the addresses a sandbox never reaches, whatever an
 * allowlist, the operator config or an E2B request says, in one table.
 *
 * They are loopback, unspecified, "this network", multicast, broadcast and
 * reserved space, link-local (where every major cloud's metadata service
 * lives), the other metadata and platform addresses the clouds document,
 * the sandbox links, and (given at create time by the caller of the pure
 * functions here) the host's own addresses and every bridge subnet on it,
 * Docker's among them. An allowlist entry that lies inside one of them is
 * refused, naming the address and why; an entry that contains one (a wide
 * range) is accepted, and every one of them is dropped by the first rules
 * of the sandbox's chain (netpolicy/nft.c), before any accept.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "netpolicy/allow-int.h"
#include "util/cleanup.h"

struct special_text {
	int family;
	const char *text;
	unsigned plen;
	const char *what;
};

/* Keep docs/threat-model.md's list ("Addresses never reachable") in step. */
static const struct special_text table[] = {
	{AF_INET, "0.0.0.0", 8, "'this network' and unspecified (0.0.0.0/8)"},
	{AF_INET, "127.0.0.0", 8, "loopback"},
	{AF_INET, "169.254.64.0", 18, "reserved for sandbox links"},
	{AF_INET, "169.254.169.254", 32,
	 "cloud metadata (AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack and others)"},
	{AF_INET, "169.254.0.0", 16,
	 "link-local, where cloud metadata and platform services live (169.254.169.254, "
	 "169.254.170.2 on AWS ECS, 169.254.0.23 on Tencent Cloud)"},
	{AF_INET, "100.100.100.200", 32, "cloud metadata (Alibaba Cloud)"},
	{AF_INET, "168.63.129.16", 32, "cloud platform service (Azure WireServer)"},
	{AF_INET, "192.0.0.192", 32, "cloud metadata (Oracle Cloud Classic)"},
	{AF_INET, "224.0.0.0", 4, "multicast"},
	{AF_INET, "240.0.0.0", 4, "reserved and broadcast (240.0.0.0/4, 255.255.255.255)"},
	{AF_INET6, "::", 128, "unspecified"},
	{AF_INET6, "::1", 128, "loopback"},
	{AF_INET6, "::", 96, "IPv4-compatible (name the IPv4 address instead)"},
	{AF_INET6, "::ffff:0:0", 96, "IPv4-mapped (name the IPv4 address instead)"},
	{AF_INET6, "64:ff9b::", 96,
	 "NAT64 (it reaches IPv4 addresses, metadata among them, through a translator)"},
	{AF_INET6, "64:ff9b:1::", 48,
	 "local-use NAT64 (it reaches IPv4 addresses through a translator)"},
	{AF_INET6, "2002::", 16, "6to4 (it embeds an IPv4 address and reaches it through a relay)"},
	{AF_INET6, "2001::", 32,
	 "Teredo (it embeds an IPv4 address and reaches it through a relay)"},
	{AF_INET6, "fe80::", 10, "link-local"},
	{AF_INET6, "fd00:ec2::", 64, "cloud metadata, DNS and time (AWS, fd00:ec2::254)"},
	{AF_INET6, "fd20:ce::254", 128, "cloud metadata (GCP)"},
	{AF_INET6, "ff00::", 8, "multicast"},
	{AF_INET6, "fd73:6278::", 32, "reserved for sandbox links"},
};

static int built;
static struct sbx__special specials[SBX_ARRAY_SIZE(table)];

static void build(void)
{
	/* Idempotent: concurrent first calls write the same bytes. */
	if (__atomic_load_n(&built, __ATOMIC_ACQUIRE))
		return;
	for (size_t i = 0; i < SBX_ARRAY_SIZE(table); i++) {
		struct sbx__special *s = &specials[i];

		memset(s, 0, sizeof(*s));
		s->family = table[i].family;
		inet_pton(table[i].family, table[i].text, s->addr);
		s->plen = (uint8_t)table[i].plen;
		s->what = table[i].what;
	}
	__atomic_store_n(&built, 1, __ATOMIC_RELEASE);
}

size_t sbx__special_table(const struct sbx__special **out)
{
	build();
	*out = specials;
	return SBX_ARRAY_SIZE(specials);
}

/* Whether addr lies in prefix/plen (both of the same family, 16 bytes). */
static int in_prefix(const uint8_t *addr, const uint8_t *prefix, unsigned plen)
{
	unsigned full = plen / 8, rest = plen % 8;

	if (memcmp(addr, prefix, full) != 0)
		return 0;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));
		return (addr[full] & mask) == (prefix[full] & mask);
	}
	return 1;
}

static void describe(char *dst,
		     size_t len,
		     int family,
		     const uint8_t *addr,
		     unsigned plen,
		     const char *what,
		     const char *ifname)
{
	char a[INET6_ADDRSTRLEN];
	unsigned full = family == AF_INET ? 32 : 128;

	if (!dst || !len)
		return;
	sbx__addr_format(family, addr, a, sizeof(a));
	if (plen == full)
		snprintf(dst, len, "%s (%s%s%s)", a, what, ifname && *ifname ? " on " : "",
			 ifname ? ifname : "");
	else
		snprintf(dst, len, "%s/%u (%s%s%s)", a, plen, what, ifname && *ifname ? " on " : "",
			 ifname ? ifname : "");
}

/* One range against the entry: INSIDE, CONTAINS or NONE. */
static int
relate(int family, const uint8_t *a, unsigned plen, int sfam, const uint8_t *s, unsigned splen)
{
	if (family != sfam)
		return SBX_SPECIAL_NONE;
	if (plen >= splen && in_prefix(a, s, splen))
		return SBX_SPECIAL_INSIDE;
	if (plen < splen && in_prefix(s, a, plen))
		return SBX_SPECIAL_CONTAINS;
	return SBX_SPECIAL_NONE;
}

int sbx__special_overlap(int family,
			 const uint8_t *addr,
			 unsigned plen,
			 const struct sbx__host_addr *host,
			 size_t host_n,
			 char *desc,
			 size_t desc_len)
{
	const struct sbx__special *t;
	size_t tn = sbx__special_table(&t);
	if (desc && desc_len)
		desc[0] = '\0';
	/* Inside anything wins over containing something: it is refused. */
	static const int passes[] = {SBX_SPECIAL_INSIDE, SBX_SPECIAL_CONTAINS};

	for (size_t k = 0; k < SBX_ARRAY_SIZE(passes); k++) {
		int pass = passes[k];

		for (size_t i = 0; i < tn; i++)
			if (relate(family, addr, plen, t[i].family, t[i].addr, t[i].plen) == pass) {
				describe(desc, desc_len, t[i].family, t[i].addr, t[i].plen,
					 t[i].what, NULL);
				return pass;
			}
		for (size_t i = 0; i < host_n; i++) {
			unsigned full = host[i].family == AF_INET ? 32 : 128;
			unsigned hp = host[i].plen ? host[i].plen : full;

			if (relate(family, addr, plen, host[i].family, host[i].addr, hp) == pass) {
				describe(desc, desc_len, host[i].family, host[i].addr, hp,
					 hp == full ? "this host's own address"
						    : "a bridge on this host, where other "
						      "containers live",
					 host[i].ifname);
				return pass;
			}
		}
	}
	return SBX_SPECIAL_NONE;
}
