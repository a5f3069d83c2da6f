/*
 * server/rest-net.c: E2B's network fields of a NewSandbox (network.
 * allowOut, denyOut and allowPublicTraffic, allow_internet_access) read
 * strictly and expressed as a sandboxio policy, whose network is an
 * allowlist.
 *
 * E2B's network is open unless denied; the library's is closed unless
 * allowed. So an open network is allowed as every public IPv4 prefix, a
 * full deny is the library's default, and what cannot be written as an
 * allowlist (a partial denyOut on an open network, an entry overlapping
 * the ranges E2B always denies, an IPv4 or IPv6 entry inside an address
 * no sandbox ever reaches (netpolicy/special.c), a wildcard domain) is
 * refused with a message that says why, never approximated.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "netpolicy/allow-int.h"
#include "server/server-int.h"

/* Appends a name to the list of fields this server cannot honour. */
void sbxs_add_bad(char *bad, size_t size, const char *what)
{
	size_t n = strlen(bad);

	snprintf(bad + n, size - n, "%s%s", n ? "; " : "", what);
}

int sbxs_parse_network(
	json_t *net, struct sbxs_create_req *cr, char *bad, size_t bsize, char *err, size_t esize)
{
	const char *key;
	json_t *v;
	char what[160];

	if (!json_is_object(net)) {
		snprintf(err, esize, "network must be an object");
		return -1;
	}
	json_object_foreach(net, key, v)
	{
		if (strcmp(key, "allowOut") == 0 || strcmp(key, "denyOut") == 0) {
			if (json_is_null(v))
				continue;
			if (!sbxs_string_array(v)) {
				snprintf(err, esize, "network.%s must be an array of strings", key);
				return -1;
			}
			if (key[0] == 'a')
				cr->allow_out = v;
			else
				cr->deny_out = v;
		} else if (strcmp(key, "allowPublicTraffic") == 0) {
			if (json_is_null(v))
				continue;
			if (!json_is_boolean(v)) {
				snprintf(err, esize,
					 "network.allowPublicTraffic must be a boolean");
				return -1;
			}
			/* true: the sandbox's ports need no traffic token (server/port.c) */
			cr->public_traffic = json_is_true(v);
		} else if (!json_is_null(v)) {
			snprintf(what, sizeof(what), "network.%.64s", key);
			sbxs_add_bad(bad, bsize, what);
		}
	}
	return 0;
}

static int is_address(const char *s)
{
	unsigned char a[16];
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET, buf, a) == 1 || inet_pton(AF_INET6, buf, a) == 1;
}

/*
 * E2B always denies sandboxes these IPv4 ranges, whatever allowOut says;
 * its open network is everything else. An allowOut entry that overlaps
 * them is refused here rather than dropped.
 */
static const struct {
	uint8_t a, b, plen;
} e2b_private[] = {
	{10, 0, 8}, {100, 64, 10}, {127, 0, 8}, {169, 254, 16}, {172, 16, 12}, {192, 168, 16},
};

/* E2B's open network as prefixes an allowlist takes: 0.0.0.0/0 without
 * e2b_private, 0.0.0.0/8 and 224.0.0.0/3 (which no allowlist reaches). */
static const char *const e2b_open[] = {
	"1.0.0.0/8",	  "2.0.0.0/7",	    "4.0.0.0/6",      "8.0.0.0/7",	"11.0.0.0/8",
	"12.0.0.0/6",	  "16.0.0.0/4",	    "32.0.0.0/3",     "64.0.0.0/3",	"96.0.0.0/6",
	"100.0.0.0/10",	  "100.128.0.0/9",  "101.0.0.0/8",    "102.0.0.0/7",	"104.0.0.0/5",
	"112.0.0.0/5",	  "120.0.0.0/6",    "124.0.0.0/7",    "126.0.0.0/8",	"128.0.0.0/3",
	"160.0.0.0/5",	  "168.0.0.0/8",    "169.0.0.0/9",    "169.128.0.0/10", "169.192.0.0/11",
	"169.224.0.0/12", "169.240.0.0/13", "169.248.0.0/14", "169.252.0.0/15", "169.255.0.0/16",
	"170.0.0.0/7",	  "172.0.0.0/12",   "172.32.0.0/11",  "172.64.0.0/10",	"172.128.0.0/9",
	"173.0.0.0/8",	  "174.0.0.0/7",    "176.0.0.0/4",    "192.0.0.0/9",	"192.128.0.0/11",
	"192.160.0.0/13", "192.169.0.0/16", "192.170.0.0/15", "192.172.0.0/14", "192.176.0.0/12",
	"192.192.0.0/10", "193.0.0.0/8",    "194.0.0.0/7",    "196.0.0.0/6",	"200.0.0.0/5",
	"208.0.0.0/4",
};

/* The always-denied range an IPv4 entry overlaps, or NULL. */
static const char *overlaps_private(const char *entry, char *buf, size_t size)
{
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(entry, '/');
	size_t n = slash ? (size_t)(slash - entry) : strlen(entry);
	unsigned plen = slash ? (unsigned)atoi(slash + 1) : 32;
	uint8_t a[4];

	if (n >= sizeof(addr))
		return NULL;
	memcpy(addr, entry, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, a) != 1 || plen > 32)
		return NULL;
	for (size_t i = 0; i < sizeof(e2b_private) / sizeof(e2b_private[0]); i++) {
		unsigned m = plen < e2b_private[i].plen ? plen : e2b_private[i].plen;
		uint32_t x = ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) |
			     ((uint32_t)a[2] << 8) | a[3];
		uint32_t y =
			((uint32_t)e2b_private[i].a << 24) | ((uint32_t)e2b_private[i].b << 16);
		uint32_t mask = m ? 0xffffffffu << (32 - m) : 0;

		if ((x & mask) == (y & mask)) {
			snprintf(buf, size, "%u.%u.0.0/%u", e2b_private[i].a, e2b_private[i].b,
				 e2b_private[i].plen);
			return buf;
		}
	}
	return NULL;
}

/*
 * The never-reachable range (netpolicy/special.c, the same table the
 * docker backend enforces) that an IPv4 or IPv6 entry lies inside, in why;
 * 0 when it lies inside none. An entry that only holds one is accepted:
 * the sandbox's rules carve it out.
 */
static int inside_special(const char *entry, char *why, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(entry, '/');
	size_t n = slash ? (size_t)(slash - entry) : strlen(entry);
	uint8_t a[16] = {0};
	int fam;
	long plen;
	char *end;

	if (n >= sizeof(addr))
		return 0;
	memcpy(addr, entry, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, a) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, addr, a) == 1)
		fam = AF_INET6;
	else
		return 0;
	plen = fam == AF_INET ? 32 : 128;
	if (slash) {
		plen = strtol(slash + 1, &end, 10);
		if (*end || end == slash + 1 || plen < 0 || plen > (fam == AF_INET ? 32 : 128))
			return 0; /* malformed: the library's parser names the problem */
	}
	return sbx__special_overlap(fam, a, (unsigned)plen, NULL, 0, why, size) ==
	       SBX_SPECIAL_INSIDE;
}

static int all_traffic(const char *s)
{
	return strcmp(s, "0.0.0.0/0") == 0 || strcmp(s, "ALL_TRAFFIC") == 0;
}

/*
 * E2B's egress, on an allowlist-only backend. Deny everything but allowOut
 * when allow_internet_access is false or denyOut holds 0.0.0.0/0; with no
 * deny control at all, E2B's network is open, so every IPv4 address is
 * allowed (two /1 prefixes: the library refuses a /0). A partial denyOut on
 * an open network cannot be expressed as an allowlist: refused.
 */
int sbxs_apply_network(
	const struct sbxs_create_req *cr, sbx_policy *p, json_t **echo, char *err, size_t esize)
{
	int deny_all = cr->internet == 0, partial = 0;
	char priv[32], why[256];
	size_t k;
	json_t *v;

	json_array_foreach(cr->deny_out, k, v)
	{
		const char *e = json_string_value(v);

		if (all_traffic(e)) {
			deny_all = 1;
			continue;
		}
		if (!is_address(e)) {
			snprintf(err, esize, "invalid denied CIDR %.128s", e);
			return -1;
		}
		partial = 1;
	}
	if (partial && !deny_all) {
		snprintf(
			err, esize,
			"network.denyOut without 0.0.0.0/0 cannot be honoured here: this server "
			"allows only what an allowlist names, so it cannot deny part of an open "
			"network; deny all traffic (0.0.0.0/0) and list what to reach in allowOut");
		return -1;
	}
	json_array_foreach(cr->allow_out, k, v)
	{
		const char *e = json_string_value(v);
		int rc;

		if (is_address(e) && inside_special(e, why, sizeof(why))) {
			snprintf(err, esize,
				 "allow out entry \"%.128s\" lies inside %s, which no sandbox ever "
				 "reaches; this server refuses it rather than drop it",
				 e, why);
			return -1;
		} else if (is_address(e) && overlaps_private(e, priv, sizeof(priv))) {
			snprintf(err, esize,
				 "allow out entry \"%.128s\" overlaps %s, which E2B always "
				 "denies to sandboxes; this server refuses it rather than drop it",
				 e, priv);
			return -1;
		} else if (is_address(e)) {
			/* The open network already holds every public IPv4 prefix. */
			rc = deny_all || strchr(e, ':') ? sbx_policy_allow_cidr(p, e, 0) : 0;
		} else if (strchr(e, ':') && !strchr(e, '/')) {
			snprintf(err, esize,
				 "invalid allow out entry \"%.128s\": port-specific rules are not "
				 "supported for egress",
				 e);
			return -1;
		} else if (!deny_all) {
			snprintf(err, esize,
				 "When specifying allowed domains in allow out, you must include "
				 "'ALL_TRAFFIC' in deny out to block all other traffic.");
			return -1;
		} else if (strchr(e, '*')) {
			snprintf(
				err, esize,
				"allow out entry \"%.128s\": wildcard domains are not supported by "
				"this server; list each name",
				e);
			return -1;
		} else {
			rc = sbx_policy_allow_host(p, e, 0);
		}
		if (rc < 0) {
			snprintf(err, esize, "network.allowOut: %s", sbx_error_last()->message);
			return -1;
		}
	}
	for (size_t i = 0; !deny_all && i < sizeof(e2b_open) / sizeof(e2b_open[0]); i++) {
		if (sbx_policy_allow_cidr(p, e2b_open[i], 0) < 0) {
			snprintf(err, esize, "open network: %s", sbx_error_last()->message);
			return -1;
		}
	}
	*echo = json_object();
	if (cr->allow_out)
		json_object_set(*echo, "allowOut", cr->allow_out);
	if (cr->deny_out)
		json_object_set(*echo, "denyOut", cr->deny_out);
	else if (cr->internet == 0)
		json_object_set_new(*echo, "denyOut", json_pack("[s]", "0.0.0.0/0"));
	json_object_set_new(*echo, "allowPublicTraffic", json_boolean(cr->public_traffic == 1));
	return 0;
}
