/*
 * tests/contract/test_docker_egress.c: egress on the docker backend, shown
 * by canaries (tests/canary/) that record what reaches them.
 *
 * Deny: a default sandbox tries TCP, UDP, ICMP (datagram and raw sockets),
 * DNS and IPv6 toward every canary and toward a listener on the host's
 * loopback; every attempt must fail and every canary must record zero
 * arrivals. A sandbox with any network path (NetworkMode bridge or host)
 * would reach them, and the counts would say so.
 *
 * Allowlists: a sandbox allowed one canary's name on one port reaches it
 * there and nowhere else (other ports, other canaries, IPv6, other names);
 * the host's filter holds even when the sandbox's own routes are widened;
 * two sandboxes at once do not share their allowlists; close and the
 * reaper leave nothing on the host. With IPv6 forwarding switched on for
 * one test (and put back as it was, whatever the test's outcome), an IPv6
 * entry reaches its canary on its port and nothing else.
 *
 * Addresses no allowlist opens: inside an operator range that holds them,
 * an entry naming a metadata or link-local address, or an address of the
 * host, is refused; a wide range that holds the host's own address reaches
 * the canaries and not the host; and a packet the sandbox sends with a
 * source that is not its own address (forged from the test, which enters
 * the sandbox's namespace as root) never reaches the canary.
 *
 * Safety: sandboxes and the test send only to canary addresses (routed to
 * the canaries' own links, checked by canary_start) and to loopback. Names
 * are resolved only from a hosts file this test writes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "canary/canary.h"
#include "canary/probe.h"
#include "support/engine.h"

#define NCANARY 3
#define MAX_ARGS 96

/* How long a test waits for stragglers (a datagram still in flight) before
 * it trusts a count of zero. */
#define SETTLE_MS 400

struct fx {
	struct canary_set *c;
	struct canary_loopback *lo;
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
};

static int ready(void)
{
	return canary_supported() && t_engine_ready();
}

#define NEED_READY()                                                                               \
	do {                                                                                       \
		if (!ready())                                                                      \
			skip();                                                                    \
	} while (0)

/* Runs the probe in s with the given MODE HOST PORT triples; returns its
 * output (free it). */
static char *probe(sbx_sandbox *s, const char *const *triples)
{
	const char *argv[MAX_ARGS + 4] = {"python3", "-c", CANARY_PROBE_PY};
	sbx_result *r = NULL;
	char *out;
	int n = 3;

	for (; triples[n - 3] && n < MAX_ARGS; n++)
		argv[n] = triples[n - 3];
	argv[n] = NULL;
	if (sbx_sandbox_run(&r, s, argv, NULL) != 0)
		fail_msg("probe: %s", sbx_error_last()->message);
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		fail_msg("probe: status %s code %d: %s", sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	out = strdup(r->stdout_data);
	sbx_result_free(r);
	return out;
}

/* The answer for "MODE HOST PORT" in a probe's output. */
static const char *
answer(const char *out, const char *mode, const char *host, const char *port, char *dst, size_t len)
{
	char key[160];
	const char *p;

	snprintf(key, sizeof(key), "%s %s %s ", mode, host, port);
	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, strlen(key)) == 0) {
			size_t n = strcspn(p + strlen(key), "\n");
			snprintf(dst, len, "%.*s", (int)(n < len ? n : len - 1), p + strlen(key));
			return dst;
		}
	fail_msg("no answer for '%s' in:\n%s", key, out);
	return NULL;
}

static int on_gvisor(void)
{
	const char *t = getenv("SBX_TEST_TIER");

	return t && strcmp(t, "gvisor") == 0;
}

/*
 * gVisor's kernel says two refusals in other words: with no route its
 * network stack answers EHOSTUNREACH where Linux answers ENETUNREACH, and
 * its host network mode (the allowlist's runtime) has no ICMP sockets at
 * all (EAFNOSUPPORT). Both fail at once and send nothing; the canaries'
 * arrivals are checked the same way on both tiers.
 */
static int same_refusal_on_gvisor(const char *mode, const char *got, const char *want)
{
	if (!on_gvisor())
		return 0;
	if (strcmp(want, "ENETUNREACH") == 0 && strcmp(got, "EHOSTUNREACH") == 0)
		return 1;
	return strcmp(mode, "icmp") == 0 && strcmp(got, "EAFNOSUPPORT") == 0;
}

/* Asserts that the answer is one of the '|'-separated words in want. */
static void expect_one_of(
	const char *out, const char *mode, const char *host, const char *port, const char *want)
{
	char got[256], w[256], *save = NULL;

	answer(out, mode, host, port, got, sizeof(got));
	snprintf(w, sizeof(w), "%s", want);
	for (char *t = strtok_r(w, "|", &save); t; t = strtok_r(NULL, "|", &save))
		if (strcmp(got, t) == 0 || same_refusal_on_gvisor(mode, got, t))
			return;
	fail_msg("%s %s %s: got '%s', want %s", mode, host, port, got, want);
}

static void settle_and_expect_no_arrivals(struct fx *f)
{
	usleep(SETTLE_MS * 1000);
	for (int i = 0; i < canary_count(f->c); i++)
		for (int k = 0; k < CANARY_PROTO_MAX; k++)
			if (canary_arrivals(f->c, i, (enum canary_proto)k))
				fail_msg("canary %s recorded %u arrivals of kind %d",
					 canary_get(f->c, i)->name,
					 canary_arrivals(f->c, i, (enum canary_proto)k), k);
	assert_int_equal(canary_loopback_arrivals(f->lo, CANARY_ANY), 0);
}

/* ===== Deny (the default policy) ===== */

static int deny_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	*state = f;
	if (!ready())
		return 0;
	if (canary_start(&f->c, NCANARY) != 0 || canary_loopback_start(&f->lo) != 0)
		return -1;
	f->b = t_backend();
	f->p = t_policy();
	if (sbx_sandbox_create(&f->s, f->b, f->p) != 0) {
		fprintf(stderr, "create: %s\n", sbx_error_last()->message);
		return -1;
	}
	return 0;
}

static int deny_teardown(void **state)
{
	struct fx *f = *state;

	sbx_sandbox_close(f->s);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	canary_loopback_stop(f->lo);
	canary_stop(f->c);
	free(f);
	return 0;
}

/* Fills triples with MODE ADDR PORT for every canary, v4 then v6. */
static int all_canaries(struct fx *f, const char **t, int n, const char *mode, const char *port)
{
	for (int i = 0; i < canary_count(f->c); i++) {
		t[n++] = mode, t[n++] = canary_get(f->c, i)->addr4, t[n++] = port;
		t[n++] = mode, t[n++] = canary_get(f->c, i)->addr6, t[n++] = port;
	}
	t[n] = NULL;
	return n;
}

static void
expect_all(struct fx *f, const char *out, const char *mode, const char *port, const char *want)
{
	for (int i = 0; i < canary_count(f->c); i++) {
		expect_one_of(out, mode, canary_get(f->c, i)->addr4, port, want);
		expect_one_of(out, mode, canary_get(f->c, i)->addr6, port, want);
	}
}

static void test_egress_deny__tcp_fails_no_arrivals(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	char *out;
	int n = 0;

	NEED_READY();
	n = all_canaries(f, t, n, "tcp", "80");
	all_canaries(f, t, n, "tcp", "8080");
	out = probe(f->s, t);
	expect_all(f, out, "tcp", "80", "ENETUNREACH");
	expect_all(f, out, "tcp", "8080", "ENETUNREACH");
	free(out);
	settle_and_expect_no_arrivals(f);
}

static void test_egress_deny__udp_fails_no_arrivals(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	char *out;

	NEED_READY();
	all_canaries(f, t, 0, "udp", "7");
	out = probe(f->s, t);
	expect_all(f, out, "udp", "7", "ENETUNREACH");
	free(out);
	settle_and_expect_no_arrivals(f);
}

static void test_egress_deny__icmp_datagram_and_raw_fail(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	char *out;
	int n = 0;

	NEED_READY();
	n = all_canaries(f, t, n, "icmp", "0");
	all_canaries(f, t, n, "raw", "0");
	out = probe(f->s, t);
	/* A datagram ICMP socket may be refused by ping_group_range (EACCES);
	 * if it is allowed, the send finds no route. Raw needs CAP_NET_RAW. */
	expect_all(f, out, "icmp", "0", "ENETUNREACH|EACCES");
	expect_all(f, out, "raw", "0", "EPERM");
	free(out);
	settle_and_expect_no_arrivals(f);
}

static void test_egress_deny__dns_fails_no_query_arrives(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	sbx_result *r;
	char *out;
	int n = 0;

	NEED_READY();
	/* Only resolve if the sandbox names no server: a resolver outside the
	 * canaries must never be sent a query, even by a failing test. */
	r = t_run(f->s, "grep -c '^[[:space:]]*nameserver' /etc/resolv.conf || true", NULL);
	if (strcmp(r->stdout_data, "0\n") != 0)
		fail_msg("the sandbox has a resolver (%s): not resolving anything", r->stdout_data);
	sbx_result_free(r);
	for (int i = 0; i < canary_count(f->c); i++)
		t[n++] = "resolve", t[n++] = canary_get(f->c, i)->name, t[n++] = "80";
	t[n++] = "resolve", t[n++] = "probe.canary.test", t[n++] = "80";
	all_canaries(f, t, n, "dns", "53");
	out = probe(f->s, t);
	for (int i = 0; i < canary_count(f->c); i++) {
		char got[128];
		answer(out, "resolve", canary_get(f->c, i)->name, "80", got, sizeof(got));
		assert_true(strncmp(got, "gaierror", 8) == 0);
	}
	expect_all(f, out, "dns", "53", "ENETUNREACH");
	free(out);
	settle_and_expect_no_arrivals(f);
	for (int i = 0; i < canary_count(f->c); i++)
		assert_null(canary_dns_query(f->c, i, 0));
}

static void test_egress_deny__ipv6_no_route_no_arrivals(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	sbx_result *r;
	char *out;
	int n = 0;

	NEED_READY();
	r = t_run(f->s, "awk '$NF != \"lo\"' /proc/net/ipv6_route | wc -l", NULL);
	assert_string_equal(r->stdout_data, "0\n");
	sbx_result_free(r);
	for (int i = 0; i < canary_count(f->c); i++) {
		const char *a6 = canary_get(f->c, i)->addr6;
		t[n++] = "tcp", t[n++] = a6, t[n++] = "80";
		t[n++] = "udp", t[n++] = a6, t[n++] = "7";
		t[n++] = "dns", t[n++] = a6, t[n++] = "53";
	}
	t[n] = NULL;
	out = probe(f->s, t);
	for (int i = 0; i < canary_count(f->c); i++) {
		const char *a6 = canary_get(f->c, i)->addr6;
		expect_one_of(out, "tcp", a6, "80", "ENETUNREACH");
		expect_one_of(out, "udp", a6, "7", "ENETUNREACH");
		expect_one_of(out, "dns", a6, "53", "ENETUNREACH");
	}
	free(out);
	settle_and_expect_no_arrivals(f);
}

static void test_egress_deny__host_loopback_unreachable(void **state)
{
	struct fx *f = *state;
	/* Every way a program might name the host's loopback: they all name
	 * the sandbox's own. */
	static const char *const hosts[] = {"127.0.0.1", "::1",	    "::ffff:127.0.0.1",
					    "127.0.0.2", "0.0.0.0", "localhost"};
	const char *t[MAX_ARGS];
	char port[8], *out;
	int n = 0;

	NEED_READY();
	snprintf(port, sizeof(port), "%u", canary_loopback_port(f->lo));
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		t[n++] = "tcp", t[n++] = hosts[i], t[n++] = port;
		t[n++] = "udp", t[n++] = hosts[i], t[n++] = port;
	}
	t[n] = NULL;
	out = probe(f->s, t);
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		char got[128];
		answer(out, "tcp", hosts[i], port, got, sizeof(got));
		if (strncmp(got, "ok", 2) == 0)
			fail_msg("tcp %s:%s answered inside the sandbox: %s", hosts[i], port, got);
		answer(out, "udp", hosts[i], port, got, sizeof(got));
		if (strncmp(got, "ok", 2) == 0)
			fail_msg("udp %s:%s answered inside the sandbox: %s", hosts[i], port, got);
	}
	free(out);
	settle_and_expect_no_arrivals(f);
}

/* ===== Allowlists ===== */

static char hosts_path[64];

static sbx_backend *allow_backend(void)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	o.hosts_file = hosts_path;
	if (sbx_backend_open(&b, "docker", &o) != 0)
		fail_msg("backend_open: %s", sbx_error_last()->message);
	return b;
}

/* A sandbox allowed to reach the names/CIDRs given ("h:" host spec, "c:" CIDR spec). */
static sbx_sandbox *allowed_sandbox(struct fx *f, const char *const *specs)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	for (; *specs; specs++) {
		int rc = strncmp(*specs, "h:", 2) == 0 ? sbx_policy_allow_host_spec(p, *specs + 2)
						       : sbx_policy_allow_cidr_spec(p, *specs + 2);
		if (rc != 0)
			fail_msg("allow %s: %s", *specs, sbx_error_last()->message);
	}
	if (sbx_sandbox_create(&s, f->b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	sbx_policy_free(p);
	return s;
}

static int ipv6_forwarding(void)
{
	const char *const argv[] = {"cat", "/proc/sys/net/ipv6/conf/all/forwarding", NULL};
	char out[16] = "";

	return canary_spawn(argv, out, sizeof(out)) == 0 && out[0] == '1';
}

static int allow_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char spec[96];
	int fd;

	*state = f;
	if (!ready())
		return 0;
	if (canary_start(&f->c, NCANARY) != 0 || canary_loopback_start(&f->lo) != 0)
		return -1;
	snprintf(hosts_path, sizeof(hosts_path), "/tmp/sbx-egress-hosts-XXXXXX");
	fd = mkstemp(hosts_path);
	if (fd < 0)
		return -1;
	close(fd);
	/* meta.canary.test and self.canary.test name addresses no name may open. */
	if (canary_write_hosts(f->c, hosts_path,
			       "169.254.169.254 meta.canary.test\n127.0.0.1 self.canary.test\n") !=
	    0)
		return -1;
	f->b = allow_backend();
	/* The first sandbox: canary 0's name, on port 80 only. */
	snprintf(spec, sizeof(spec), "h:%s:80", canary_get(f->c, 0)->name);
	{
		const char *const specs[] = {spec, NULL};
		f->s = allowed_sandbox(f, specs);
	}
	return 0;
}

static int allow_teardown(void **state)
{
	struct fx *f = *state;

	sbx_sandbox_close(f->s);
	sbx_backend_free(f->b);
	canary_loopback_stop(f->lo);
	canary_stop(f->c);
	if (hosts_path[0])
		unlink(hosts_path);
	free(f);
	return 0;
}

static void test_egress_allow__host_reachable_on_its_port_only(void **state)
{
	struct fx *f = *state;
	const struct canary *c0;
	char want[96], got[256], *out;
	unsigned tcp0, any0;

	NEED_READY();
	c0 = canary_get(f->c, 0);
	tcp0 = canary_arrivals(f->c, 0, CANARY_TCP);
	{
		const char *t[] = {"tcp", c0->name, "80", NULL};
		out = probe(f->s, t);
	}
	answer(out, "tcp", c0->name, "80", got, sizeof(got));
	snprintf(want, sizeof(want), "canary %s", c0->name);
	if (strncmp(got, "ok HTTP/1.0 200 OK", 18) != 0 || !strstr(got, want))
		fail_msg("allowed %s:80 did not answer: %s", c0->name, got);
	free(out);
	assert_int_equal(canary_wait(f->c, 0, CANARY_TCP, tcp0 + 1, 2000), tcp0 + 1);

	/* The same address on other ports and protocols: refused by the host. */
	usleep(SETTLE_MS * 1000);
	any0 = canary_arrivals(f->c, 0, CANARY_ANY);
	{
		const char *t[] = {"tcp",     c0->addr4, "8080", "udp",	    c0->addr4, "7", "dns",
				   c0->addr4, "53",	 "icmp", c0->addr4, "0",       NULL};
		out = probe(f->s, t);
	}
	expect_one_of(out, "tcp", c0->addr4, "8080", "EHOSTUNREACH|ECONNREFUSED|timeout");
	expect_one_of(out, "udp", c0->addr4, "7", "sent EHOSTUNREACH|sent timeout|EHOSTUNREACH");
	expect_one_of(out, "dns", c0->addr4, "53", "sent EHOSTUNREACH|sent timeout|EHOSTUNREACH");
	expect_one_of(out, "icmp", c0->addr4, "0",
		      "EACCES|sent EHOSTUNREACH|sent timeout|EHOSTUNREACH");
	free(out);
	usleep(SETTLE_MS * 1000);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_ANY), any0);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_TCP), tcp0 + 1);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_UDP), 0);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_DNS), 0);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_ICMP), 0);
}

static void test_egress_allow__other_canaries_get_nothing(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	char *out;
	int n = 0;

	NEED_READY();
	for (int i = 1; i < canary_count(f->c); i++) {
		const struct canary *c = canary_get(f->c, i);
		t[n++] = "tcp", t[n++] = c->addr4, t[n++] = "80";
		t[n++] = "udp", t[n++] = c->addr4, t[n++] = "7";
		t[n++] = "dns", t[n++] = c->addr4, t[n++] = "53";
		t[n++] = "icmp", t[n++] = c->addr4, t[n++] = "0";
	}
	t[n] = NULL;
	out = probe(f->s, t);
	for (int i = 1; i < canary_count(f->c); i++) {
		const struct canary *c = canary_get(f->c, i);
		expect_one_of(out, "tcp", c->addr4, "80", "ENETUNREACH");
		expect_one_of(out, "udp", c->addr4, "7", "ENETUNREACH");
		expect_one_of(out, "dns", c->addr4, "53", "ENETUNREACH");
		expect_one_of(out, "icmp", c->addr4, "0", "ENETUNREACH|EACCES");
	}
	free(out);
	usleep(SETTLE_MS * 1000);
	for (int i = 1; i < canary_count(f->c); i++)
		assert_int_equal(canary_arrivals(f->c, i, CANARY_ANY), 0);
}

static void test_egress_allow__dns_for_other_names_fails(void **state)
{
	struct fx *f = *state;
	const struct canary *c0, *c1;
	char got[256], *out;
	sbx_result *r;

	NEED_READY();
	c0 = canary_get(f->c, 0);
	c1 = canary_get(f->c, 1);
	r = t_run(f->s, "grep -c '^[[:space:]]*nameserver' /etc/resolv.conf || true", NULL);
	if (strcmp(r->stdout_data, "0\n") != 0)
		fail_msg("the sandbox has a resolver (%s): not resolving anything", r->stdout_data);
	sbx_result_free(r);
	{
		const char *t[] = {"resolve", c0->name, "80",	   "resolve",
				   c1->name,  "80",	"resolve", "probe.canary.test",
				   "80",      NULL};
		out = probe(f->s, t);
	}
	/* The allowed name is pinned (IPv6 too only when the host forwards it). */
	answer(out, "resolve", c0->name, "80", got, sizeof(got));
	assert_true(strncmp(got, "ok ", 3) == 0 && strstr(got, c0->addr4));
	answer(out, "resolve", c1->name, "80", got, sizeof(got));
	assert_true(strncmp(got, "gaierror", 8) == 0);
	answer(out, "resolve", "probe.canary.test", "80", got, sizeof(got));
	assert_true(strncmp(got, "gaierror", 8) == 0);
	free(out);
	usleep(SETTLE_MS * 1000);
	for (int i = 0; i < canary_count(f->c); i++)
		assert_int_equal(canary_arrivals(f->c, i, CANARY_DNS), 0);
}

static void test_egress_allow__ipv6_to_other_canaries_fails(void **state)
{
	struct fx *f = *state;
	const char *t[MAX_ARGS];
	char *out;
	int n = 0;

	NEED_READY();
	for (int i = 0; i < canary_count(f->c); i++) {
		t[n++] = "tcp", t[n++] = canary_get(f->c, i)->addr6, t[n++] = "80";
		t[n++] = "udp", t[n++] = canary_get(f->c, i)->addr6, t[n++] = "7";
	}
	t[n] = NULL;
	out = probe(f->s, t);
	for (int i = 0; i < canary_count(f->c); i++) {
		const char *a6 = canary_get(f->c, i)->addr6;
		/* Canary 0's IPv6 address is pinned only where IPv6 is forwarded;
		 * then it is reachable on port 80 and nothing else. */
		if (i == 0 && ipv6_forwarding())
			continue;
		expect_one_of(out, "tcp", a6, "80", "ENETUNREACH|EADDRNOTAVAIL");
		expect_one_of(out, "udp", a6, "7", "ENETUNREACH|EADDRNOTAVAIL");
	}
	free(out);
	usleep(SETTLE_MS * 1000);
	for (int i = 1; i < canary_count(f->c); i++)
		assert_int_equal(canary_arrivals(f->c, i, CANARY_ANY), 0);
}

/* The host decides, not the sandbox's routes: give the sandbox a route it
 * could never add itself (it has no CAP_NET_ADMIN), and the host still
 * refuses, and the canary still records nothing. */
static void test_egress_allow__host_filter_holds_when_routes_widen(void **state)
{
	struct fx *f = *state;
	const struct canary *c1;
	char path[256], pid[24], *out;
	unsigned any1;
	json_t *info;
	long st = 0;

	NEED_READY();
	c1 = canary_get(f->c, 1);
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(f->s));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	snprintf(pid, sizeof(pid), "%lld",
		 (long long)json_integer_value(
			 json_object_get(json_object_get(info, "State"), "Pid")));
	json_decref(info);
	{
		const char *const add[] = {"nsenter", "-t",   pid,	   "-n",  "ip",
					   "route",   "add",  c1->prefix4, "via", "169.254.1.1",
					   "dev",     "eth0", NULL};
		assert_int_equal(canary_spawn(add, NULL, 0), 0);
	}
	any1 = canary_arrivals(f->c, 1, CANARY_ANY);
	{
		const char *t[] = {"tcp", c1->addr4, "80", "udp", c1->addr4, "7", NULL};
		out = probe(f->s, t);
	}
	expect_one_of(out, "tcp", c1->addr4, "80", "EHOSTUNREACH|timeout");
	expect_one_of(out, "udp", c1->addr4, "7", "sent EHOSTUNREACH|sent timeout|EHOSTUNREACH");
	free(out);
	usleep(SETTLE_MS * 1000);
	assert_int_equal(canary_arrivals(f->c, 1, CANARY_ANY), any1);
}

static void test_egress_allow__pinned_and_still_network_none(void **state)
{
	struct fx *f = *state;
	const struct canary *c0;
	char path[256], pin[128];
	json_t *info, *hc, *eh, *e;
	int found = 0;
	size_t i;
	long st = 0;
	sbx_result *r;

	NEED_READY();
	c0 = canary_get(f->c, 0);
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(f->s));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	hc = json_object_get(info, "HostConfig");
	assert_string_equal(json_string_value(json_object_get(hc, "NetworkMode")), "none");
	eh = json_object_get(hc, "ExtraHosts");
	snprintf(pin, sizeof(pin), "%s:%s", c0->name, c0->addr4);
	json_array_foreach(eh, i, e)
	{
		if (strcmp(json_string_value(e), pin) == 0)
			found = 1;
		else if (!strstr(json_string_value(e), c0->name))
			fail_msg("ExtraHosts pins another name: %s", json_string_value(e));
	}
	assert_true(found);
	json_decref(info);
	r = t_run(f->s,
		  "grep -c canary.test /etc/hosts; tail -n +3 /proc/net/dev | cut -d: -f1 | "
		  "tr -d ' ' | sort | tr '\\n' ' '",
		  NULL);
	assert_true(strncmp(r->stdout_data, "0\n", 2) != 0);
	/* gVisor's /proc/net/dev lists the links of its start, not the
	 * egress link added after it, which its host network mode uses. */
	if (!on_gvisor())
		assert_non_null(strstr(r->stdout_data, "eth0 lo "));
	sbx_result_free(r);
}

/* A name may not open what only an explicit CIDR opens; create fails and
 * leaves nothing behind. */
static void test_egress_allow__name_to_special_address_refused(void **state)
{
	struct fx *f = *state;
	static const char *const names[] = {"meta.canary.test", "self.canary.test"};
	char label[160];

	NEED_READY();
	snprintf(label, sizeof(label), "io.sandboxio.tenant=%s", t_tenant());
	for (size_t i = 0; i < 2; i++) {
		sbx_policy *p = t_policy();
		sbx_sandbox *s = NULL;
		int before = t_engine_count_label(label);

		assert_int_equal(sbx_policy_allow_host(p, names[i], 0), 0);
		assert_int_equal(sbx_sandbox_create(&s, f->b, p), SBX_EDENIED);
		assert_non_null(strstr(sbx_error_last()->message, names[i]));
		assert_null(s);
		assert_int_equal(t_engine_count_label(label), before);
		sbx_policy_free(p);
	}
}

/* The Engine's inspection of a sandbox's container (json_decref it). */
static json_t *inspect(sbx_sandbox *s)
{
	char path[256];
	json_t *info;
	long st = 0;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	return info;
}

/* The sandbox's init pid on the host, as text. */
static void sandbox_pid(sbx_sandbox *s, char *dst, size_t len)
{
	json_t *info = inspect(s);

	snprintf(dst, len, "%lld",
		 (long long)json_integer_value(
			 json_object_get(json_object_get(info, "State"), "Pid")));
	json_decref(info);
}

/* The host's side of canary c's link ("198.18.X.1"): an address of the host. */
static void canary_host_side(const struct canary *c, char *dst, size_t len)
{
	snprintf(dst, len, "%.*s1", (int)(strrchr(c->addr4, '.') - c->addr4 + 1), c->addr4);
}

/*
 * Inside an operator range that holds them (0.0.0.0/1 and 128.0.0.0/1),
 * an entry naming one metadata or link-local address, or an address of this
 * host or of a bridge on it, is refused, with the address and why; nothing
 * is created. Nothing is contacted: the addresses are only parsed.
 */
static void test_egress_allow__special_entries_refused_inside_operator_range(void **state)
{
	static const char cfg_json[] =
		"{\"egress\": {\"cidrs\": [\"0.0.0.0/1\", \"128.0.0.0/1\", \"::/1\", "
		"\"8000::/1\"]}}";
	static const struct {
		const char *spec, *why;
	} at_parse[] = {
		{"169.254.169.254/32:80", "cloud metadata"},
		{"169.254.0.1/32", "link-local"},
		{"100.100.100.200", "Alibaba"},
		{"168.63.129.16/32", "Azure"},
		{"fd00:ec2::254", "fd00:ec2::"},
		{"[fe80::1]:80", "link-local"},
	};
	struct fx *f = *state;
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_config *cfg = NULL;
	sbx_backend *b = NULL;
	char label[160], own[2][64], docker0[64] = "";
	int nown = 0;

	NEED_READY();
	assert_int_equal(sbx_config_parse(&cfg, cfg_json, strlen(cfg_json), "operator"), 0);
	o.config = cfg;
	o.hosts_file = hosts_path;
	assert_int_equal(sbx_backend_open(&b, "docker", &o), 0);
	sbx_config_free(cfg);
	snprintf(label, sizeof(label), "io.sandboxio.tenant=%s", t_tenant());
	for (size_t i = 0; i < sizeof(at_parse) / sizeof(at_parse[0]); i++) {
		sbx_policy *p = t_policy();

		if (sbx_policy_allow_cidr_spec(p, at_parse[i].spec) != SBX_EINVALID)
			fail_msg("%s was accepted", at_parse[i].spec);
		if (!strstr(sbx_error_last()->message, at_parse[i].why) ||
		    !strstr(sbx_error_last()->message, "never"))
			fail_msg("%s: '%s' does not say '%s'", at_parse[i].spec,
				 sbx_error_last()->message, at_parse[i].why);
		assert_int_equal(sbx_policy_allow_count(p), 0);
		sbx_policy_free(p);
	}
	/* The host's own addresses: the canary's link on the host, and docker0's
	 * (e.g. 172.17.0.1; only parsed, never contacted) when there is one. */
	canary_host_side(canary_get(f->c, 0), own[nown], sizeof(own[nown]));
	strcat(own[nown++], "/32");
	{
		const char *const argv[] = {"sh", "-c",
					    "ip -4 -o addr show dev docker0 2>/dev/null | "
					    "awk '{split($4,a,\"/\"); print a[1]; exit}'",
					    NULL};
		if (canary_spawn(argv, docker0, sizeof(docker0)) == 0 && docker0[0]) {
			docker0[strcspn(docker0, "\n")] = '\0';
			snprintf(own[nown++], sizeof(own[0]), "%s/32", docker0);
		}
	}
	for (int i = 0; i < nown; i++) {
		sbx_policy *p = t_policy();
		sbx_sandbox *s = NULL;
		int before = t_engine_count_label(label);
		char addr[64];

		snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(own[i], "/"), own[i]);
		assert_int_equal(sbx_policy_allow_cidr(p, own[i], 80), 0);
		assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EDENIED);
		if (!strstr(sbx_error_last()->message, addr) ||
		    !strstr(sbx_error_last()->message, "this host's own address"))
			fail_msg("%s: '%s'", own[i], sbx_error_last()->message);
		assert_null(s);
		assert_int_equal(t_engine_count_label(label), before);
		sbx_policy_free(p);
	}
	sbx_backend_free(b);
}

/*
 * A wide range (128.0.0.0/1) holds the canaries and the host's side of
 * their links: the canary answers, and a listener of the test on the host's
 * side records nothing, because the host's own addresses are dropped before
 * any accept.
 */
static void test_egress_allow__wide_range_reaches_canary_not_host(void **state)
{
	struct fx *f = *state;
	const struct canary *c1;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	char host[32], port[8], got[256], *out;
	sbx_sandbox *s;
	int l, c;

	NEED_READY();
	c1 = canary_get(f->c, 1);
	canary_host_side(c1, host, sizeof(host));
	l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(inet_pton(AF_INET, host, &sa.sin_addr), 1);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 8), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	snprintf(port, sizeof(port), "%u", ntohs(sa.sin_port));
	{
		const char *const specs[] = {"c:128.0.0.0/1", NULL};
		s = allowed_sandbox(f, specs);
	}
	{
		const char *t[] = {"tcp", c1->addr4, "80", "tcp", host, port, NULL};
		out = probe(s, t);
	}
	answer(out, "tcp", c1->addr4, "80", got, sizeof(got));
	if (strncmp(got, "ok HTTP/1.0 200 OK", 18) != 0)
		fail_msg("canary %s inside 128.0.0.0/1 did not answer: %s", c1->addr4, got);
	expect_one_of(out, "tcp", host, port, "EHOSTUNREACH|ECONNREFUSED|timeout");
	free(out);
	/* The probe has given up on the host: had a SYN arrived, the
	 * connection would be waiting in the queue. */
	c = accept(l, NULL, NULL);
	assert_int_equal(c, -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	close(l);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/*
 * Anti-spoofing: the test enters the sandbox's network namespace (root,
 * nsenter) and sends one UDP datagram to the canary's echo port from a
 * forged source (198.51.100.7, bound with IP_TRANSPARENT), then one from
 * the sandbox's own address. The canary records the genuine one only. The
 * forged one was sent first on the same link, so once the genuine one has
 * arrived, a forged one that got through would have too.
 */
static void test_egress_allow__spoofed_source_dropped(void **state)
{
	static const char py[] = "import socket,sys\n"
				 "d=(sys.argv[1],7)\n"
				 "f=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
				 "f.setsockopt(socket.SOL_IP,19,1)\n" /* IP_TRANSPARENT */
				 "f.bind(('198.51.100.7',0))\n"
				 "f.sendto(b'forged',d)\n"
				 "g=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
				 "g.sendto(b'genuine',d)\n"
				 "print('sent',flush=True)\n";
	struct fx *f = *state;
	const struct canary *c2;
	char pid[24], spec[40], out[64] = "";
	unsigned udp2, any2;
	sbx_sandbox *s;

	NEED_READY();
	c2 = canary_get(f->c, 2);
	snprintf(spec, sizeof(spec), "c:%s", c2->prefix4);
	{
		const char *const specs[] = {spec, NULL};
		s = allowed_sandbox(f, specs);
	}
	sandbox_pid(s, pid, sizeof(pid));
	udp2 = canary_arrivals(f->c, 2, CANARY_UDP);
	any2 = canary_arrivals(f->c, 2, CANARY_ANY);
	{
		const char *const argv[] = {"nsenter", "-t", pid,	"-n", "python3",
					    "-c",      py,   c2->addr4, NULL};
		assert_int_equal(canary_spawn(argv, out, sizeof(out)), 0);
	}
	assert_string_equal(out, "sent\n");
	assert_int_equal(canary_wait(f->c, 2, CANARY_UDP, udp2 + 1, 10000), udp2 + 1);
	assert_int_equal(canary_wait(f->c, 2, CANARY_ANY, any2 + 1, 10000), any2 + 1);
	assert_int_equal(canary_arrivals(f->c, 2, CANARY_UDP), udp2 + 1);
	assert_int_equal(canary_arrivals(f->c, 2, CANARY_ANY), any2 + 1);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

static void test_egress_allow__ipv6_refused_without_forwarding(void **state)
{
	struct fx *f = *state;
	sbx_policy *p;
	sbx_sandbox *s = NULL;

	NEED_READY();
	if (ipv6_forwarding())
		skip(); /* then IPv6 is enforced, and the reachability tests cover it */
	p = t_policy();
	assert_int_equal(sbx_policy_allow_cidr(p, canary_get(f->c, 0)->prefix6, 80), 0);
	assert_int_equal(sbx_sandbox_create(&s, f->b, p), SBX_EUNSUPPORTED);
	assert_non_null(strstr(sbx_error_last()->message, "IPv6 forwarding"));
	sbx_policy_free(p);
}

/* Runs nft and returns its listing (free it). */
static char *nft_list(const char *what1, const char *what2)
{
	const char *const argv[] = {"nft", "list", what1, "ip", "filter", what2, NULL};
	const char *const tables[] = {"nft", "list", "tables", NULL};
	char *out = calloc(1, 65536);

	canary_spawn(what2 ? argv : tables, out, 65536);
	return out;
}

/* Two sandboxes at once, each allowed one canary: neither reaches the
 * other's, and both leave nothing on the host when closed. */
static void test_egress_allow__two_sandboxes_do_not_share(void **state)
{
	struct fx *f = *state;
	const struct canary *c0, *c1;
	char spec[96], got[256], name[32], path[256], *out, *tables, *user;
	sbx_sandbox *s2;
	unsigned t0, t1;
	json_t *info;
	long st = 0;

	NEED_READY();
	c0 = canary_get(f->c, 0);
	c1 = canary_get(f->c, 1);
	snprintf(spec, sizeof(spec), "c:%s:80", c1->prefix4);
	{
		const char *const specs[] = {spec, NULL};
		s2 = allowed_sandbox(f, specs);
	}
	t0 = canary_arrivals(f->c, 0, CANARY_TCP);
	t1 = canary_arrivals(f->c, 1, CANARY_TCP);
	{
		const char *t[] = {"tcp", c1->addr4, "80", "tcp", c0->addr4, "80", NULL};
		out = probe(s2, t);
	}
	answer(out, "tcp", c1->addr4, "80", got, sizeof(got));
	assert_true(strncmp(got, "ok HTTP/1.0 200", 15) == 0);
	expect_one_of(out, "tcp", c0->addr4, "80", "ENETUNREACH");
	free(out);
	{
		/* By its name: f->s's entry is a name, checked by what is presented. */
		const char *t[] = {"tcp", c0->name, "80", NULL};
		out = probe(f->s, t);
	}
	answer(out, "tcp", c0->name, "80", got, sizeof(got));
	assert_true(strncmp(got, "ok HTTP/1.0 200", 15) == 0);
	free(out);
	usleep(SETTLE_MS * 1000);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_TCP), t0 + 1);
	assert_int_equal(canary_arrivals(f->c, 1, CANARY_TCP), t1 + 1);

	/* Closing s2 removes its link, its table and its DOCKER-USER rules. */
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s2));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	snprintf(name, sizeof(name), "sbx%s",
		 json_string_value(
			 json_object_get(json_object_get(json_object_get(info, "Config"), "Labels"),
					 "io.sandboxio.session")) +
			 4);
	json_decref(info);
	tables = nft_list(NULL, NULL);
	assert_non_null(strstr(tables, name));
	free(tables);
	assert_int_equal(sbx_sandbox_close(s2), 0);
	tables = nft_list(NULL, NULL);
	user = nft_list("chain", "DOCKER-USER");
	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	assert_int_equal(access(path, F_OK), -1);
	assert_null(strstr(tables, name));
	assert_null(strstr(user, name));
	free(tables);
	free(user);
}

/* A sandbox that ended without close (killed under the library) leaves its
 * table; the reaper removes it. */
/* The name of a sandbox's link and table (sbx + its session's hex). */
static void np_name(sbx_sandbox *s, char *name, size_t len)
{
	json_t *info = inspect(s);

	snprintf(name, len, "sbx%s",
		 json_string_value(
			 json_object_get(json_object_get(json_object_get(info, "Config"), "Labels"),
					 "io.sandboxio.session")) +
			 4);
	json_decref(info);
}

static void test_egress_allow__reaper_removes_leftovers(void **state)
{
	struct fx *f = *state;
	char spec[96], name[32], path[256], *tables;
	sbx_sandbox *s;
	long st = 0;

	NEED_READY();
	snprintf(spec, sizeof(spec), "c:%s:80", canary_get(f->c, 2)->prefix4);
	{
		const char *const specs[] = {spec, NULL};
		s = allowed_sandbox(f, specs);
	}
	np_name(s, name, sizeof(name));
	snprintf(path, sizeof(path), "/containers/%s?force=1", sbx_sandbox_id(s));
	json_decref(t_engine_request("DELETE", path, NULL, &st));
	assert_true(st == 204 || st == 200);
	sbx_sandbox_detach(s);
	tables = nft_list(NULL, NULL);
	assert_non_null(strstr(tables, name));
	free(tables);
	assert_true(sbx_backend_reap(f->b, NULL, NULL, NULL) >= 0);
	tables = nft_list(NULL, NULL);
	assert_null(strstr(tables, name));
	free(tables);
	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	assert_int_equal(access(path, F_OK), -1);
}

/* The loop of a reaper in another process, until its pipe is closed. */
static _Noreturn void reap_until_closed(int fd)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	char c;

	o.hosts_file = hosts_path;
	if (sbx_backend_open(&b, "docker", &o) != 0)
		_exit(2);
	while (read(fd, &c, 1) < 0 && errno == EAGAIN)
		if (sbx_backend_reap(b, NULL, NULL, NULL) < 0)
			_exit(3);
	_exit(0);
}

/*
 * `sandboxio reap` beside running jobs: another process reaps over and
 * over while this one creates and closes allowlisted sandboxes. Every
 * create and close succeeds, and nothing of theirs is left. A sweep that
 * looked between the steps of a close took its rules for leftovers and
 * removed them under it, and the close failed ("nftables refused"); the
 * steps and the sweep now hold one host-wide lock.
 */
static void test_egress_allow__reaper_beside_creates_and_closes(void **state)
{
	struct fx *f = *state;
	char spec[96], names[12][32], *tables;
	int go[2], wst = 0;
	pid_t child;

	NEED_READY();
	snprintf(spec, sizeof(spec), "c:%s:80", canary_get(f->c, 2)->prefix4);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(fcntl(go[0], F_SETFL, O_NONBLOCK), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(go[1]);
		reap_until_closed(go[0]);
	}
	close(go[0]);
	for (size_t i = 0; i < 12; i++) {
		const char *const specs[] = {spec, NULL};
		sbx_sandbox *s = allowed_sandbox(f, specs);

		np_name(s, names[i], sizeof(names[i]));
		if (sbx_sandbox_close(s) != 0)
			fail_msg("close %zu beside the reaper: %s", i, sbx_error_last()->message);
	}
	close(go[1]);
	assert_int_equal(waitpid(child, &wst, 0), child);
	assert_true(WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 0);
	tables = nft_list(NULL, NULL);
	for (size_t i = 0; i < 12; i++)
		if (strstr(tables, names[i]))
			fail_msg("%s left its rules: %s", names[i], tables);
	free(tables);
}

/* ===== IPv6 allowlists, with IPv6 forwarding on for one test only ===== */

#define V6_FWD_PATH "/proc/sys/net/ipv6/conf/all/forwarding"

/* The value found before the test set it ('\0': nothing changed). */
static char v6_fwd_saved;
/* The test's sandbox, closed by the teardown if the test stops early. */
static sbx_sandbox *v6_sandbox;

static int write_v6_fwd(char v)
{
	FILE *fp = fopen(V6_FWD_PATH, "we");
	int ok;

	if (!fp)
		return -1;
	ok = fputc(v, fp) != EOF && fputc('\n', fp) != EOF;
	return fclose(fp) == 0 && ok ? 0 : -1;
}

/* Puts back the saved value; safe to call more than once. */
static void v6_fwd_restore(void)
{
	if (!v6_fwd_saved)
		return;
	if (write_v6_fwd(v6_fwd_saved) != 0)
		fprintf(stderr, "could not restore %s to %c\n", V6_FWD_PATH, v6_fwd_saved);
	else
		v6_fwd_saved = '\0';
}

static int v6_fwd_setup(void **state)
{
	FILE *fp;
	int c;

	(void)state;
	if (!ready() || geteuid() != 0)
		return 0;
	fp = fopen(V6_FWD_PATH, "re");
	if (!fp)
		return -1;
	c = fgetc(fp);
	fclose(fp);
	if (c != '0' && c != '1')
		return -1;
	v6_fwd_saved = (char)c;
	atexit(v6_fwd_restore); /* also if the run ends before the teardown */
	if (write_v6_fwd('1') != 0) {
		v6_fwd_restore();
		return -1;
	}
	return 0;
}

static int v6_fwd_teardown(void **state)
{
	(void)state;
	sbx_sandbox_close(v6_sandbox);
	v6_sandbox = NULL;
	v6_fwd_restore();
	return 0;
}

/* With IPv6 forwarded, an IPv6 allowlist entry is enforced: canary 2's
 * address on port 80 answers; canary 2 on 8080 and 7, and canary 1 on 80,
 * record nothing. */
static void test_egress_allow__ipv6_allowed_on_its_port_only(void **state)
{
	struct fx *f = *state;
	const struct canary *c1, *c2;
	char spec[96], want[96], got[256], *out;
	unsigned any1, any2, tcp2;
	sbx_sandbox *s;

	NEED_READY();
	if (geteuid() != 0)
		skip();
	assert_true(ipv6_forwarding());
	c1 = canary_get(f->c, 1);
	c2 = canary_get(f->c, 2);
	snprintf(spec, sizeof(spec), "c:[%s]:80", c2->addr6);
	{
		const char *const specs[] = {spec, NULL};
		s = v6_sandbox = allowed_sandbox(f, specs);
	}
	/* Refused first, so that the counts of every packet stay exact. */
	usleep(SETTLE_MS * 1000);
	any1 = canary_arrivals(f->c, 1, CANARY_ANY);
	any2 = canary_arrivals(f->c, 2, CANARY_ANY);
	tcp2 = canary_arrivals(f->c, 2, CANARY_TCP);
	{
		const char *t[] = {"tcp", c2->addr6, "8080", "udp", c2->addr6, "7",
				   "tcp", c1->addr6, "80",   "udp", c1->addr6, "7",
				   "tcp", c2->addr4, "80",   NULL};
		out = probe(s, t);
	}
	expect_one_of(out, "tcp", c2->addr6, "8080", "EHOSTUNREACH|EACCES|timeout");
	expect_one_of(out, "udp", c2->addr6, "7",
		      "sent EHOSTUNREACH|sent EACCES|sent timeout|EHOSTUNREACH|EACCES");
	expect_one_of(out, "tcp", c1->addr6, "80", "ENETUNREACH");
	expect_one_of(out, "udp", c1->addr6, "7", "ENETUNREACH");
	expect_one_of(out, "tcp", c2->addr4, "80", "ENETUNREACH");
	free(out);
	usleep(SETTLE_MS * 1000);
	assert_int_equal(canary_arrivals(f->c, 2, CANARY_ANY), any2);
	assert_int_equal(canary_arrivals(f->c, 1, CANARY_ANY), any1);

	/* The allowed address and port: the canary answers and counts it. */
	{
		const char *t[] = {"tcp", c2->addr6, "80", NULL};
		out = probe(s, t);
	}
	answer(out, "tcp", c2->addr6, "80", got, sizeof(got));
	snprintf(want, sizeof(want), "canary %s", c2->name);
	if (strncmp(got, "ok HTTP/1.0 200 OK", 18) != 0 || !strstr(got, want))
		fail_msg("allowed [%s]:80 did not answer: %s", c2->addr6, got);
	free(out);
	assert_int_equal(canary_wait(f->c, 2, CANARY_TCP, tcp2 + 1, 2000), tcp2 + 1);
	usleep(SETTLE_MS * 1000);
	assert_int_equal(canary_arrivals(f->c, 2, CANARY_TCP), tcp2 + 1);
	assert_int_equal(canary_arrivals(f->c, 1, CANARY_ANY), any1);
	v6_sandbox = NULL;
	assert_int_equal(sbx_sandbox_close(s), 0);
}

int main(void)
{
	const struct CMUnitTest deny[] = {
		cmocka_unit_test(test_egress_deny__tcp_fails_no_arrivals),
		cmocka_unit_test(test_egress_deny__udp_fails_no_arrivals),
		cmocka_unit_test(test_egress_deny__icmp_datagram_and_raw_fail),
		cmocka_unit_test(test_egress_deny__dns_fails_no_query_arrives),
		cmocka_unit_test(test_egress_deny__ipv6_no_route_no_arrivals),
		cmocka_unit_test(test_egress_deny__host_loopback_unreachable),
	};
	const struct CMUnitTest allow[] = {
		cmocka_unit_test(test_egress_allow__host_reachable_on_its_port_only),
		cmocka_unit_test(test_egress_allow__other_canaries_get_nothing),
		cmocka_unit_test(test_egress_allow__dns_for_other_names_fails),
		cmocka_unit_test(test_egress_allow__ipv6_to_other_canaries_fails),
		cmocka_unit_test(test_egress_allow__pinned_and_still_network_none),
		cmocka_unit_test(test_egress_allow__name_to_special_address_refused),
		cmocka_unit_test(test_egress_allow__special_entries_refused_inside_operator_range),
		cmocka_unit_test(test_egress_allow__wide_range_reaches_canary_not_host),
		cmocka_unit_test(test_egress_allow__spoofed_source_dropped),
		cmocka_unit_test(test_egress_allow__ipv6_refused_without_forwarding),
		cmocka_unit_test(test_egress_allow__two_sandboxes_do_not_share),
		cmocka_unit_test(test_egress_allow__reaper_removes_leftovers),
		cmocka_unit_test(test_egress_allow__reaper_beside_creates_and_closes),
		cmocka_unit_test(test_egress_allow__host_filter_holds_when_routes_widen),
		cmocka_unit_test_setup_teardown(test_egress_allow__ipv6_allowed_on_its_port_only,
						v6_fwd_setup, v6_fwd_teardown),
	};
	int rc = 0;

	rc |= cmocka_run_group_tests_name("engine_contract[docker] egress deny", deny, deny_setup,
					  deny_teardown);
	rc |= cmocka_run_group_tests_name("engine_contract[docker] egress allowlists", allow,
					  allow_setup, allow_teardown);
	return rc;
}
