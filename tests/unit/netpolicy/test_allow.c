/*
 * tests/unit/netpolicy/test_allow.c: the egress allowlist without a
 * daemon: validation of every entry form (each refusal names its problem),
 * the plan (names resolved from a hosts file only, special addresses
 * refused or carved), the one table of never-reachable addresses, and the
 * nftables rules one sandbox gets.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <sandboxio.h>

#include "netpolicy/allow-int.h"
#include "netpolicy/netpolicy-int.h"

static void expect_cidr(const char *in, uint16_t port, const char *canon, int family)
{
	struct sbx__allow a;

	if (sbx__allow_parse_cidr(&a, in, port) != 0)
		fail_msg("'%s' refused: %s", in, sbx_error_last()->message);
	assert_string_equal(a.name, canon);
	assert_int_equal(a.family, family);
	assert_int_equal(a.port, port);
	sbx__allow_clear(&a);
}

static void refuse_cidr(const char *in, const char *why)
{
	struct sbx__allow a = {0};

	assert_int_equal(sbx__allow_parse_cidr(&a, in, 0), SBX_EINVALID);
	assert_null(a.name);
	if (!strstr(sbx_error_last()->message, why))
		fail_msg("'%s': message '%s' does not say '%s'", in, sbx_error_last()->message,
			 why);
}

static void test_netpolicy_allow__cidr_accepted_and_canonical(void **state)
{
	(void)state;
	expect_cidr("198.51.100.0/24", 0, "198.51.100.0/24", AF_INET);
	expect_cidr("198.51.100.7", 443, "198.51.100.7/32", AF_INET);
	expect_cidr("2001:DB8::/32", 0, "2001:db8::/32", AF_INET6);
	expect_cidr("2001:db8:0:0::1", 53, "2001:db8::1/128", AF_INET6);
	expect_cidr("198.18.0.0/15", 0, "198.18.0.0/15", AF_INET);
}

static void test_netpolicy_allow__cidr_refusals_name_the_problem(void **state)
{
	(void)state;
	refuse_cidr("", "empty");
	refuse_cidr("198.51.100.1/24", "did you mean 198.51.100.0/24");
	refuse_cidr("2001:db8::1/32", "did you mean 2001:db8::/32");
	refuse_cidr("198.51.100.0/33", "prefix length");
	refuse_cidr("198.51.100.0/", "prefix length");
	refuse_cidr("198.51.100.0/-1", "prefix length");
	refuse_cidr("198.51.100.0/+8", "prefix length");
	refuse_cidr("198.51.100.0/0x8", "prefix length");
	refuse_cidr("2001:db8::/129", "prefix length");
	refuse_cidr("0.0.0.0/0", "length 0");
	refuse_cidr("::/0", "length 0");
	refuse_cidr("*", "wildcard");
	refuse_cidr("198.51.100.*", "wildcard");
	refuse_cidr("198.51.100.300", "not an IPv4 or IPv6 address");
	refuse_cidr("1.2.3", "not an IPv4 or IPv6 address");
	refuse_cidr("example.com", "not an IPv4 or IPv6 address");
	refuse_cidr("127.0.0.0/8", "loopback");
	refuse_cidr("127.0.0.1", "loopback");
	refuse_cidr("::1", "loopback");
	refuse_cidr("224.0.0.1", "multicast");
	refuse_cidr("ff02::1", "multicast");
	refuse_cidr("::ffff:198.51.100.7", "IPv4-mapped");
	refuse_cidr("169.254.64.5", "sandbox links");
	refuse_cidr("fd73:6278::1", "sandbox links");
	refuse_cidr("255.255.255.255", "broadcast");
	/* Special addresses are refused however narrow the entry. */
	refuse_cidr("169.254.169.254/32", "cloud metadata");
	refuse_cidr("169.254.169.254", "cloud metadata");
	refuse_cidr("169.254.0.1/32", "link-local");
	refuse_cidr("169.254.0.0/16", "link-local");
	refuse_cidr("100.100.100.200", "Alibaba");
	refuse_cidr("168.63.129.16", "Azure");
	refuse_cidr("fd00:ec2::254", "AWS");
	refuse_cidr("fd20:ce::254", "GCP");
	refuse_cidr("fe80::1", "link-local");
	refuse_cidr("0.0.0.0/32", "unspecified");
	refuse_cidr("::", "unspecified");
	refuse_cidr("64:ff9b::a9fe:a9fe", "NAT64");
}

static void spec(const char *in, const char *canon, uint16_t port)
{
	struct sbx__allow a;

	if (sbx__allow_parse_cidr_spec(&a, in) != 0)
		fail_msg("'%s' refused: %s", in, sbx_error_last()->message);
	assert_string_equal(a.name, canon);
	assert_int_equal(a.port, port);
	sbx__allow_clear(&a);
}

static void test_netpolicy_allow__cidr_spec_forms(void **state)
{
	struct sbx__allow a = {0};
	static const char *const bad[] = {"198.51.100.0/24:0",	  "198.51.100.0/24:65536",
					  "198.51.100.0/24:http", "198.51.100.7:",
					  "[2001:db8::1",	  "[2001:db8::1]x443",
					  "2001:db8::/32:",	  ""};

	(void)state;
	spec("198.51.100.0/24", "198.51.100.0/24", 0);
	spec("198.51.100.0/24:443", "198.51.100.0/24", 443);
	spec("198.51.100.7:8080", "198.51.100.7/32", 8080);
	spec("2001:db8::/32:443", "2001:db8::/32", 443);
	spec("[2001:db8::1]:443", "2001:db8::1/128", 443);
	spec("[2001:db8::/48]:53", "2001:db8::/48", 53);
	spec("2001:db8::1", "2001:db8::1/128", 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sbx__allow_parse_cidr_spec(&a, bad[i]) != SBX_EINVALID)
			fail_msg("'%s' was accepted", bad[i]);
	assert_null(a.name);
}

static void test_netpolicy_allow__host_names(void **state)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"", "empty"},
		{"*.example.com", "wildcard"},
		{"exa mple.com", "not allowed"},
		{"under_score.example", "not allowed"},
		{"-a.example", "start with '-'"},
		{"a-.example", "ending in '-'"},
		{"a..example", "empty label"},
		{"198.51.100.7", "is an address"},
		{"2001:db8::1", "is an address"},
		{"localhost", "loopback"},
		{"db.localhost", "loopback"},
		{"host.123", "all digits"},
		{"xn--bcher-kva.example/", "is an address"},
		{"b\xc3\xbc"
		 "cher.example",
		 "A-label"}, /* one validator: netpolicy/names.c */
		{"xn--.example", "nothing after it"},
		{"ab--cd.example", "reserved for A-labels"},
	};
	char longlabel[80], longname[300];
	struct sbx__allow a = {0};

	(void)state;
	assert_int_equal(sbx__allow_parse_host(&a, "API.Example.com.", 443), 0);
	assert_string_equal(a.name, "api.example.com");
	assert_int_equal(a.kind, SBX_ALLOW_HOST);
	assert_int_equal(a.port, 443);
	sbx__allow_clear(&a);
	assert_int_equal(sbx__allow_parse_host(&a, "c0.s1.canary.test", 0), 0);
	assert_string_equal(a.name, "c0.s1.canary.test");
	sbx__allow_clear(&a);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sbx__allow_parse_host(&a, bad[i].in, 0), SBX_EINVALID);
		if (!strstr(sbx_error_last()->message, bad[i].why))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].in,
				 sbx_error_last()->message, bad[i].why);
	}
	memset(longlabel, 'a', 64);
	strcpy(longlabel + 64, ".example");
	assert_int_equal(sbx__allow_parse_host(&a, longlabel, 0), SBX_EINVALID);
	for (int i = 0; i < 254; i += 2)
		longname[i] = 'a', longname[i + 1] = '.';
	strcpy(longname + 254, "example");
	assert_int_equal(sbx__allow_parse_host(&a, longname, 0), SBX_EINVALID);
	assert_int_equal(sbx__allow_parse_host_spec(&a, "api.example.com:443"), 0);
	assert_int_equal(a.port, 443);
	sbx__allow_clear(&a);
	assert_int_equal(sbx__allow_parse_host_spec(&a, "api.example.com:0"), SBX_EINVALID);
	assert_int_equal(sbx__allow_parse_host_spec(&a, "a:b:c"), SBX_EINVALID);
	assert_null(a.name);
}

static void test_netpolicy_allow__policy_api(void **state)
{
	sbx_policy *p = NULL, *d = NULL;
	char cidr[32];

	(void)state;
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_allow_count(p), 0);
	assert_int_equal(sbx_policy_allow_host(p, "api.example.com", 443), 0);
	assert_int_equal(sbx_policy_allow_cidr(p, "198.51.100.0/24", 0), 0);
	assert_int_equal(sbx_policy_allow_host_spec(p, "api.example.com:443"), 0); /* repeat */
	assert_int_equal(sbx_policy_allow_cidr_spec(p, "[2001:db8::1]:53"), 0);
	assert_int_equal(sbx_policy_allow_count(p), 3);
	/* A refusal changes nothing. */
	assert_int_equal(sbx_policy_allow_cidr(p, "198.51.100.1/24", 0), SBX_EINVALID);
	assert_int_equal(sbx_policy_allow_host(p, "", 0), SBX_EINVALID);
	assert_int_equal(sbx_policy_allow_host(NULL, "a.example", 0), SBX_EINVALID);
	assert_int_equal(sbx_policy_allow_count(p), 3);
	assert_int_equal(sbx_policy_dup(&d, p), 0);
	assert_int_equal(sbx_policy_allow_count(d), 3);
	sbx_policy_free(d);
	for (int i = 0; sbx_policy_allow_count(p) < SBX_ALLOW_MAX; i++) {
		snprintf(cidr, sizeof(cidr), "198.18.%d.0/24", i);
		assert_int_equal(sbx_policy_allow_cidr(p, cidr, 0), 0);
	}
	assert_int_equal(sbx_policy_allow_cidr(p, "203.0.113.0/24", 0), SBX_ETOOBIG);
	assert_int_equal(sbx_policy_allow_count(p), SBX_ALLOW_MAX);
	sbx_policy_free(p);
}

/* ===== The plan ===== */

static char hosts[64];

static int write_hosts(void **state)
{
	FILE *f;
	int fd;

	(void)state;
	snprintf(hosts, sizeof(hosts), "/tmp/sbx-unit-hosts-XXXXXX");
	fd = mkstemp(hosts);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	fputs("# test names\n"
	      "198.51.100.7 web.canary.test alias.canary.test\n"
	      "2001:db8::7 web.canary.test\n"
	      "2001:db8::8 six.canary.test\n"
	      "169.254.169.254 meta.canary.test\n"
	      "127.0.0.1 self.canary.test\n"
	      "198.51.100.9 own.canary.test # this host's, below\n",
	      f);
	return fclose(f);
}

static int drop_hosts(void **state)
{
	(void)state;
	unlink(hosts);
	return 0;
}

static int plan_of(struct sbx__np_plan *pl, const char *host, const char *cidr, int v6_ok)
{
	/* 172.17.0.1 and 172.17.0.0/16 are only parsed and compared: never contacted. */
	struct sbx__host_addr own[3] = {{.family = AF_INET},
					{.family = AF_INET, .ifname = "docker0"},
					{.family = AF_INET, .plen = 16, .ifname = "docker0"}};
	struct sbx__allow a[2];
	size_t n = 0;
	int rc;

	inet_pton(AF_INET, "198.51.100.9", own[0].addr);
	inet_pton(AF_INET, "172.17.0.1", own[1].addr);
	inet_pton(AF_INET, "172.17.0.0", own[2].addr);
	if (host)
		assert_int_equal(sbx__allow_parse_host_spec(&a[n++], host), 0);
	if (cidr)
		assert_int_equal(sbx__allow_parse_cidr_spec(&a[n++], cidr), 0);
	rc = sbx__netpolicy_plan(pl, a, n, hosts, v6_ok, own, 3);
	for (size_t i = 0; i < n; i++)
		sbx__allow_clear(&a[i]);
	return rc;
}

static void test_netpolicy_plan__names_from_hosts_file_only(void **state)
{
	struct sbx__np_plan pl = {0};

	(void)state;
	assert_int_equal(plan_of(&pl, "web.canary.test:80", NULL, 1), 0);
	assert_int_equal(pl.n, 2);
	assert_int_equal(pl.pins_n, 2);
	assert_string_equal(pl.pins[0], "web.canary.test:198.51.100.7");
	assert_string_equal(pl.pins[1], "web.canary.test:2001:db8::7");
	assert_int_equal(pl.rules[0].plen, 32);
	assert_int_equal(pl.rules[0].port, 80);
	assert_true(pl.has_v4 && pl.has_v6);
	assert_int_equal(pl.never_n, 3); /* the host's, kept for the drop rules */
	sbx__netpolicy_plan_clear(&pl);
	/* Without IPv6 forwarding only the IPv4 address is pinned and allowed. */
	assert_int_equal(plan_of(&pl, "web.canary.test", NULL, 0), 0);
	assert_int_equal(pl.n, 1);
	assert_string_equal(pl.pins[0], "web.canary.test:198.51.100.7");
	assert_false(pl.has_v6);
	sbx__netpolicy_plan_clear(&pl);
	assert_int_equal(plan_of(&pl, "alias.canary.test", NULL, 0), 0);
	sbx__netpolicy_plan_clear(&pl);
	/* A name the file does not hold is not looked up anywhere else. */
	assert_int_equal(plan_of(&pl, "example.com", NULL, 1), SBX_ENOTFOUND);
	assert_int_equal(plan_of(&pl, "six.canary.test", NULL, 0), SBX_EUNSUPPORTED);
	assert_int_equal(pl.n, 0);
}

static void test_netpolicy_plan__names_cannot_open_special_addresses(void **state)
{
	struct sbx__np_plan pl = {0};

	(void)state;
	assert_int_equal(plan_of(&pl, "meta.canary.test", NULL, 1), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "cloud metadata"));
	assert_int_equal(plan_of(&pl, "self.canary.test", NULL, 1), SBX_EDENIED);
	assert_int_equal(plan_of(&pl, "own.canary.test", NULL, 1), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "this host's own address"));
	assert_int_equal(pl.n, 0);
}

static void test_netpolicy_plan__cidrs_never_open_special_addresses(void **state)
{
	struct sbx__np_plan pl = {0};

	(void)state;
	/* One exact address of the host, or inside a bridge: refused at create. */
	assert_int_equal(plan_of(&pl, NULL, "198.51.100.9:22", 1), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "this host's own address"));
	assert_int_equal(plan_of(&pl, NULL, "172.17.0.1/32", 1), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "172.17.0.1"));
	assert_non_null(strstr(sbx_error_last()->message, "docker0"));
	assert_int_equal(plan_of(&pl, NULL, "172.17.5.0/24", 1), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "a bridge on this host"));
	assert_int_equal(pl.n, 0);
	/* A wide range that holds them is accepted: they are carved by drops. */
	assert_int_equal(plan_of(&pl, NULL, "128.0.0.0/1", 1), 0);
	assert_int_equal(pl.n, 1);
	sbx__netpolicy_plan_clear(&pl);
	assert_int_equal(plan_of(&pl, NULL, "198.18.0.0/15", 1), 0);
	sbx__netpolicy_plan_clear(&pl);
	assert_int_equal(plan_of(&pl, NULL, "2001:db8::/32", 0), SBX_EUNSUPPORTED);
	assert_non_null(strstr(sbx_error_last()->message, "IPv6 forwarding"));
}

static void test_netpolicy_special__overlap(void **state)
{
	/* Parsed and compared only; nothing here is contacted. */
	static const struct {
		const char *prefix;
		unsigned plen;
		int want;
		const char *why;
	} cases[] = {
		{"169.254.169.254", 32, SBX_SPECIAL_INSIDE, "cloud metadata"},
		{"169.254.0.1", 32, SBX_SPECIAL_INSIDE, "link-local"},
		{"169.254.170.2", 32, SBX_SPECIAL_INSIDE, "link-local"},
		{"100.100.100.200", 32, SBX_SPECIAL_INSIDE, "Alibaba"},
		{"168.63.129.16", 32, SBX_SPECIAL_INSIDE, "Azure"},
		{"127.0.0.1", 32, SBX_SPECIAL_INSIDE, "loopback"},
		{"255.255.255.255", 32, SBX_SPECIAL_INSIDE, "broadcast"},
		{"224.0.0.0", 3, SBX_SPECIAL_CONTAINS, "multicast"},
		{"0.0.0.0", 1, SBX_SPECIAL_CONTAINS, "0.0.0.0/8"},
		{"128.0.0.0", 1, SBX_SPECIAL_CONTAINS, ""},
		{"168.0.0.0", 8, SBX_SPECIAL_CONTAINS, "Azure"},
		{"172.17.0.1", 32, SBX_SPECIAL_INSIDE, "own address on docker0"},
		{"172.16.0.0", 12, SBX_SPECIAL_CONTAINS, "docker0"},
		{"198.18.0.0", 15, SBX_SPECIAL_NONE, ""},
		{"203.0.113.0", 24, SBX_SPECIAL_NONE, ""},
		{"fd00:ec2::254", 128, SBX_SPECIAL_INSIDE, "AWS"},
		{"fd00::", 8, SBX_SPECIAL_CONTAINS, "AWS"},
		{"fe80::1", 128, SBX_SPECIAL_INSIDE, "link-local"},
		{"::1", 128, SBX_SPECIAL_INSIDE, "loopback"},
		{"::", 1, SBX_SPECIAL_CONTAINS, "unspecified"},
		{"2001:db8::", 32, SBX_SPECIAL_NONE, ""},
		/* IPv6 forms that embed 169.254.169.254 and reach it through a
		 * translator or a relay. */
		{"::a9fe:a9fe", 128, SBX_SPECIAL_INSIDE, "IPv4-compatible"},
		{"64:ff9b:1::a9fe:a9fe", 128, SBX_SPECIAL_INSIDE, "local-use NAT64"},
		{"2002:a9fe:a9fe::", 48, SBX_SPECIAL_INSIDE, "6to4"},
		{"2001:0:a9fe:a9fe::", 64, SBX_SPECIAL_INSIDE, "Teredo"},
	};
	struct sbx__host_addr own[2] = {{.family = AF_INET, .ifname = "docker0"},
					{.family = AF_INET, .plen = 16, .ifname = "docker0"}};
	char why[256];

	(void)state;
	inet_pton(AF_INET, "172.17.0.1", own[0].addr);
	inet_pton(AF_INET, "172.17.0.0", own[1].addr);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t a[16] = {0};
		int fam = strchr(cases[i].prefix, ':') ? AF_INET6 : AF_INET;
		int got;

		assert_int_equal(inet_pton(fam, cases[i].prefix, a), 1);
		got = sbx__special_overlap(fam, a, cases[i].plen, own, 2, why, sizeof(why));
		if (got != cases[i].want || !strstr(why, cases[i].why))
			fail_msg("%s/%u: got %d '%s', want %d '%s'", cases[i].prefix, cases[i].plen,
				 got, why, cases[i].want, cases[i].why);
	}
}

/* ===== The rules ===== */

static const char *after(const char *text, const char *a, const char *b)
{
	const char *pa = strstr(text, a), *pb = strstr(text, b);

	if (!pa || !pb)
		fail_msg("missing '%s' or '%s' in:\n%s", a, b, text);
	return pb > pa ? pb : NULL;
}

static void test_netpolicy_rules__order_and_content(void **state)
{
	struct sbx__np_plan pl = {0};
	uint8_t a4[4] = {169, 254, 64, 9}, a6[16] = {0xfd, 0x73, 0x62, 0x78};
	char *r = NULL;

	(void)state;
	a6[15] = 9;
	assert_int_equal(plan_of(&pl, "web.canary.test:80", "128.0.0.0/1", 1), 0);
	assert_int_equal(sbx__netpolicy_ruleset(&r, "sbx0123456789ab", a4, a6, &pl, NULL, 1, 1), 0);
	/* Before DNAT and every filter; only the sandbox's link. */
	assert_non_null(strstr(r, "add chain inet sbx0123456789ab sbx_egress { type filter hook "
				  "prerouting priority -150;"));
	/* First the sandbox's own link only, then anti-spoofing, then every
	 * never-reachable address, then the host's, then the allowed, then a
	 * refusal at the end. */
	assert_non_null(after(r, "sbx_egress iifname != \"sbx0123456789ab\" accept",
			      "sbx_egress ip saddr != 169.254.64.9 counter drop"));
	assert_non_null(after(r, "ip saddr != 169.254.64.9 counter drop",
			      "ip6 saddr != fd73:6278::9 counter drop"));
	assert_non_null(
		after(r, "ip6 saddr != fd73:6278::9 counter drop", "ip daddr 127.0.0.0/8 drop"));
	assert_non_null(after(r, "ip daddr 127.0.0.0/8 drop", "ip daddr 169.254.169.254/32 drop"));
	assert_non_null(
		after(r, "ip daddr 169.254.169.254/32 drop", "ip daddr 169.254.0.0/16 drop"));
	assert_non_null(
		after(r, "ip daddr 169.254.0.0/16 drop", "ip daddr 100.100.100.200/32 drop"));
	assert_non_null(
		after(r, "ip daddr 100.100.100.200/32 drop", "ip6 daddr fd00:ec2::/64 drop"));
	assert_non_null(after(r, "ip6 daddr fd00:ec2::/64 drop", "ip daddr 172.17.0.1/32 drop"));
	assert_non_null(after(r, "ip daddr 172.17.0.1/32 drop", "ip daddr 172.17.0.0/16 drop"));
	assert_non_null(after(r, "ip daddr 172.17.0.0/16 drop", "fib daddr type { local"));
	assert_non_null(after(r, "fib daddr type { local", "ip daddr 128.0.0.0/1 accept"));
	/* A name's address: without a checker, its TCP is reset; never an
	 * address-only accept. CIDR entries come first. */
	assert_null(strstr(r, "198.51.100.7/32 meta l4proto { tcp, udp }"));
	assert_non_null(
		after(r, "ip daddr 128.0.0.0/1 accept",
		      "ip daddr 198.51.100.7/32 tcp dport 80 counter reject with tcp reset"));
	assert_non_null(after(r, "tcp dport 80 counter reject with tcp reset",
			      "counter reject with icmpx type "
			      "admin-prohibited"));
	/* Nothing starts a flow toward the sandbox; its address is masqueraded. */
	assert_non_null(strstr(r, "sbx_ingress ct state established,related accept"));
	assert_non_null(strstr(r, "sbx_nat ip saddr 169.254.64.9 masquerade"));
	assert_non_null(strstr(r, "insert rule ip filter DOCKER-USER iifname \"sbx0123456789ab\" "
				  "accept comment \"sandboxio sbx0123456789ab\""));
	free(r);
	assert_int_equal(sbx__netpolicy_ruleset(&r, "sbx0123456789ab", a4, a6, &pl, NULL, 0, 0), 0);
	assert_null(strstr(r, "DOCKER-USER"));
	assert_non_null(strstr(r, "sbx_egress counter drop"));
	free(r);
	/* With its checker: the name's TCP goes there (tproxy, marked), and is
	 * reset when nothing listens. */
	{
		struct sbx__np_checker ck = {.pid = 77, .port4 = 4242, .port6 = 4243};

		assert_int_equal(
			sbx__netpolicy_ruleset(&r, "sbx0123456789ab", a4, a6, &pl, &ck, 1, 0), 0);
		assert_non_null(after(r, "fib daddr type { local",
				      "ip daddr 198.51.100.7/32 tcp dport 80 tproxy ip to "
				      "127.0.0.1:4242 meta mark set 0x73627865 accept"));
		assert_non_null(after(r, "127.0.0.1:4242 meta mark set 0x73627865 accept",
				      "ip daddr 198.51.100.7/32 tcp dport 80 counter reject with "
				      "tcp reset"));
		free(r);
	}
	sbx__netpolicy_plan_clear(&pl);
}

static void test_netpolicy_names(void **state)
{
	char n[SBX_NP_NAME_MAX];

	(void)state;
	assert_int_equal(sbx__netpolicy_name(n, "sbx-0123456789ab"), 0);
	assert_string_equal(n, "sbx0123456789ab");
	assert_int_equal(sbx__netpolicy_name(n, "sbx-0123456789AB"), -1);
	assert_int_equal(sbx__netpolicy_name(n, "sbx-0123"), -1);
	assert_int_equal(sbx__netpolicy_name(n, "cnry0h1"), -1);
	assert_true(sbx__netpolicy_is_name("sbxdeadbeef0001"));
	assert_false(sbx__netpolicy_is_name("cnry0h1"));
	assert_false(sbx__netpolicy_is_name("sbxdeadbeef00011"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netpolicy_allow__cidr_accepted_and_canonical),
		cmocka_unit_test(test_netpolicy_allow__cidr_refusals_name_the_problem),
		cmocka_unit_test(test_netpolicy_allow__cidr_spec_forms),
		cmocka_unit_test(test_netpolicy_allow__host_names),
		cmocka_unit_test(test_netpolicy_allow__policy_api),
		cmocka_unit_test(test_netpolicy_plan__names_from_hosts_file_only),
		cmocka_unit_test(test_netpolicy_plan__names_cannot_open_special_addresses),
		cmocka_unit_test(test_netpolicy_plan__cidrs_never_open_special_addresses),
		cmocka_unit_test(test_netpolicy_special__overlap),
		cmocka_unit_test(test_netpolicy_rules__order_and_content),
		cmocka_unit_test(test_netpolicy_names),
	};

	return cmocka_run_group_tests_name("netpolicy", tests, write_hosts, drop_hosts);
}
