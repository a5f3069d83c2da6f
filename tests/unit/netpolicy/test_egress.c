/*
 * tests/unit/netpolicy/test_egress.c: the name checker's decisions
 * (netpolicy/egress-decide.c) on real ClientHellos (the captures of
 * tests/unit/netpolicy/hellos/, server name pkg.canary.test) and on HTTP
 * requests: the name must match an entry, on its port, at an address pinned
 * for it; everything else is refused with a reason the audit names. And the
 * checker's command line entries, NAME/PORT/ADDRESS.
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

#include <cmocka.h>

#include "netpolicy/egress-int.h"

#define HELLOS "tests/unit/netpolicy/hellos/"

static size_t load(const char *name, uint8_t *p, size_t cap)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), HELLOS "%s.bin", name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (run from the repository root)", path);
	n = fread(p, 1, cap, f);
	fclose(f);
	return n;
}

static struct sbx__egress_entry entries[3];

static int setup(void **state)
{
	const char *why = NULL;

	(void)state;
	if (sbx__egress_entry_parse(&entries[0], "pkg.canary.test/443/198.18.0.5", &why) ||
	    sbx__egress_entry_parse(&entries[1], "pkg.canary.test/443/2001:db8::5", &why) ||
	    sbx__egress_entry_parse(&entries[2], "web.canary.test/0/198.18.0.9", &why))
		return -1;
	return 0;
}

static void decide(int mode,
		   const char *addr,
		   uint16_t port,
		   const uint8_t *p,
		   size_t n,
		   struct sbx__egress_verdict *v)
{
	uint8_t a[16] = {0};
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;

	assert_int_equal(inet_pton(fam, addr, a), 1);
	sbx__egress_decide(entries, 3, mode, fam, a, port, p, n, v);
}

static void
expect(const char *addr, uint16_t port, const void *p, size_t n, int verdict, const char *reason)
{
	struct sbx__egress_verdict v;

	decide(SBX_EGRESS_AUTO, addr, port, p, n, &v);
	if (v.verdict != verdict || (reason && (!v.reason || strcmp(v.reason, reason) != 0)))
		fail_msg("%s:%u: verdict %d (%s), want %d (%s)", addr, port, v.verdict,
			 v.reason ? v.reason : "-", verdict, reason ? reason : "-");
}

static void test_egress_decide__tls_name_port_and_address(void **state)
{
	static uint8_t b[65536];
	size_t n = load("curl", b, sizeof(b));

	(void)state;
	expect("198.18.0.5", 443, b, n, SBX_EGRESS_ALLOW, NULL);
	expect("2001:db8::5", 443, b, n, SBX_EGRESS_ALLOW, NULL);
	/* Another address than the name's, even one pinned for another name. */
	expect("198.18.0.6", 443, b, n, SBX_EGRESS_REFUSE, "address");
	expect("198.18.0.9", 443, b, n, SBX_EGRESS_REFUSE, "address");
	/* Another port than the entry's. */
	expect("198.18.0.5", 8443, b, n, SBX_EGRESS_REFUSE, "name");
	/* Every prefix: read more. */
	for (size_t k = 1; k < n; k++)
		expect("198.18.0.5", 443, b, k, SBX_EGRESS_MORE, NULL);
	n = load("python-ssl", b, sizeof(b)); /* files.pythonhosted.canary.test */
	expect("198.18.0.5", 443, b, n, SBX_EGRESS_REFUSE, "name");
	n = load("openssl-nosni", b, sizeof(b));
	expect("198.18.0.5", 443, b, n, SBX_EGRESS_REFUSE, "no-sni");
}

/* Appends an empty extension of type ext to a one-record ClientHello. */
static size_t add_ext(uint8_t *b, size_t n, uint16_t ext)
{
	size_t off = 5 + 4 + 2 + 32, l;

	off += 1 + b[off];			       /* session id */
	off += 2 + ((size_t)b[off] << 8 | b[off + 1]); /* cipher suites */
	off += 1 + b[off];			       /* compression */
	l = ((size_t)b[off] << 8 | b[off + 1]) + 4;
	b[off] = (uint8_t)(l >> 8), b[off + 1] = (uint8_t)l;
	l = ((size_t)b[3] << 8 | b[4]) + 4;
	b[3] = (uint8_t)(l >> 8), b[4] = (uint8_t)l;
	l = ((size_t)b[6] << 16 | (size_t)b[7] << 8 | b[8]) + 4;
	b[6] = (uint8_t)(l >> 16), b[7] = (uint8_t)(l >> 8), b[8] = (uint8_t)l;
	b[n] = (uint8_t)(ext >> 8), b[n + 1] = (uint8_t)ext, b[n + 2] = 0, b[n + 3] = 0;
	return n + 4;
}

static void test_egress_decide__ech_refused_with_an_allowed_outer_name(void **state)
{
	static uint8_t b[65536];
	size_t n = load("openssl-tls13", b, sizeof(b));

	(void)state;
	assert_int_equal(b[0], 22);
	assert_int_equal(5 + ((size_t)b[3] << 8 | b[4]), n); /* one record */
	expect("198.18.0.5", 443, b, n, SBX_EGRESS_ALLOW, NULL);
	n = add_ext(b, n, 0xfe0d);
	expect("198.18.0.5", 443, b, n, SBX_EGRESS_REFUSE, "ech");
}

#define S(x) x, sizeof(x) - 1

static void test_egress_decide__http_host(void **state)
{
	static const char ok[] = "POST / HTTP/1.1\r\nHost: pkg.canary.test:443\r\n"
				 "Content-Length: 5\r\n\r\nhello";
	struct sbx__egress_verdict v;

	(void)state;
	decide(SBX_EGRESS_AUTO, "198.18.0.5", 443, (const uint8_t *)S(ok), &v);
	assert_int_equal(v.verdict, SBX_EGRESS_ALLOW);
	assert_true(v.http);
	assert_string_equal(v.name, "pkg.canary.test");
	assert_int_equal(v.head_len, sizeof(ok) - 1 - 5);
	assert_int_equal(v.body_len, 5);
	expect("198.18.0.9", 80, S("GET / HTTP/1.1\r\nHost: web.canary.test\r\n\r\n"),
	       SBX_EGRESS_ALLOW, NULL);
	expect("198.18.0.9", 80, S("GET / HTTP/1.1\r\nHost: pkg.canary.test\r\n\r\n"),
	       SBX_EGRESS_REFUSE, "name");
	/* The Host's port must be the connection's. */
	expect("198.18.0.9", 80, S("GET / HTTP/1.1\r\nHost: web.canary.test:8080\r\n\r\n"),
	       SBX_EGRESS_REFUSE, "name");
	expect("198.18.0.9", 80, S("GET / HTTP/1.0\r\n\r\n"), SBX_EGRESS_REFUSE, "no-host");
	expect("198.18.0.9", 80, S("GET / HTTP/1.1\r\n\r\n"), SBX_EGRESS_REFUSE, "malformed");
	expect("198.18.0.9", 80,
	       S("POST / HTTP/1.1\r\nHost: web.canary.test\r\nTransfer-Encoding: chunked\r\n\r\n"),
	       SBX_EGRESS_REFUSE, "chunked");
	expect("198.18.0.9", 80, S("SSH-2.0-OpenSSH_9.2\r\n"), SBX_EGRESS_REFUSE, "malformed");
	expect("198.18.0.9", 80, S("GET / HTTP/1.1\r\nHost: web.canary"), SBX_EGRESS_MORE, NULL);
	/* On a plain HTTP connection, a next request that looks like TLS is
	 * read as HTTP, and refused. */
	decide(SBX_EGRESS_HTTP, "198.18.0.5", 443, (const uint8_t *)"\x16\x03\x01\x00\x05", 5, &v);
	assert_int_equal(v.verdict, SBX_EGRESS_REFUSE);
}

static void test_egress_entry__parse(void **state)
{
	static const char *const bad[] = {"",
					  "pkg.canary.test",
					  "pkg.canary.test/443",
					  "pkg.canary.test//1.2.3.4",
					  "pkg.canary.test/65536/1.2.3.4",
					  "pkg.canary.test/-1/1.2.3.4",
					  "pkg.canary.test/443/1.2.3",
					  "pkg.canary.test/443/host",
					  "*.canary.test/443/1.2.3.4",
					  "bad_name/443/1.2.3.4",
					  "/443/1.2.3.4",
					  "pkg.canary.test/4 3/1.2.3.4"};
	struct sbx__egress_entry e;
	const char *why = NULL;

	(void)state;
	assert_int_equal(sbx__egress_entry_parse(&e, "PKG.Canary.Test./0/2001:db8::1", &why), 0);
	assert_string_equal(e.name, "pkg.canary.test");
	assert_int_equal(e.port, 0);
	assert_int_equal(e.family, AF_INET6);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (sbx__egress_entry_parse(&e, bad[i], &why) == 0)
			fail_msg("'%s' was accepted", bad[i]);
		assert_non_null(why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_egress_decide__tls_name_port_and_address),
		cmocka_unit_test(test_egress_decide__ech_refused_with_an_allowed_outer_name),
		cmocka_unit_test(test_egress_decide__http_host),
		cmocka_unit_test(test_egress_entry__parse),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
