/*
 * tests/unit/netpolicy/test_sni.c: the readers of the name a client
 * presents (netpolicy/sni.c). TLS: real ClientHellos captured from openssl
 * s_client (TLS 1.3, TLS 1.2, without a server name), curl and python3's
 * ssl against a local openssl s_server (tests/fuzz/capture_hellos.py wrote
 * tests/unit/netpolicy/hellos/), read whole, a byte at a time, re-cut into
 * records of every small size, and altered into every refusal. HTTP: the
 * first request's Host and every refusal. Every answer but MORE is final:
 * each prefix of an input answers MORE or the same as the whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netpolicy/sni-int.h"

#define HELLOS "tests/unit/netpolicy/hellos/"

typedef int (*reader)(const uint8_t *, size_t, struct sbx__sni *);

struct bytes {
	uint8_t *p;
	size_t n;
};

static struct bytes load(const char *name)
{
	char path[256];
	struct bytes b = {malloc(65536), 0};
	FILE *f;

	snprintf(path, sizeof(path), HELLOS "%s.bin", name);
	f = fopen(path, "rb");
	if (!f || !b.p)
		fail_msg("cannot open %s (run from the repository root)", path);
	b.n = fread(b.p, 1, 65536, f);
	fclose(f);
	return b;
}

/* The answer on the whole input, checked against every prefix. */
static int read_all(reader r, const uint8_t *p, size_t n, struct sbx__sni *out)
{
	struct sbx__sni part;
	int rc = r(p, n, out);

	for (size_t k = 0; k < n; k++) {
		int prc = r(p, k, &part);

		if (prc == SBX_SNI_MORE)
			continue;
		if (prc != rc || strcmp(part.name, out->name) != 0)
			fail_msg("prefix of %zu of %zu bytes answers %s, the whole %s", k, n,
				 sbx__sni_result_name(prc), sbx__sni_result_name(rc));
	}
	return rc;
}

static void expect(reader r, const uint8_t *p, size_t n, int want, const char *name_or_why)
{
	struct sbx__sni out;
	int rc = read_all(r, p, n, &out);

	if (rc != want)
		fail_msg("answer %s (%s), wanted %s", sbx__sni_result_name(rc),
			 out.why ? out.why : "", sbx__sni_result_name(want));
	if (want == SBX_SNI_FOUND)
		assert_string_equal(out.name, name_or_why);
	else if (name_or_why && (!out.why || !strstr(out.why, name_or_why)))
		fail_msg("reason '%s' does not say '%s'", out.why ? out.why : "(none)",
			 name_or_why);
	if (want != SBX_SNI_FOUND)
		assert_string_equal(out.name, "");
}

/* The handshake bytes of a capture (one or more records). */
static struct bytes handshake(struct bytes rec)
{
	struct bytes hs = {malloc(65536), 0};

	for (size_t off = 0; off + 5 <= rec.n;) {
		size_t l = (size_t)rec.p[off + 3] << 8 | rec.p[off + 4];

		memcpy(hs.p + hs.n, rec.p + off + 5, l);
		hs.n += l;
		off += 5 + l;
	}
	return hs;
}

/* Handshake bytes cut into records of `size` bytes each (at most). */
static struct bytes records(const uint8_t *hs, size_t n, size_t size)
{
	struct bytes b = {malloc(n + (n / size + 1) * 5 + 16), 0};

	for (size_t off = 0; off < n; off += size) {
		size_t l = n - off < size ? n - off : size;

		b.p[b.n++] = 22;
		b.p[b.n++] = 3;
		b.p[b.n++] = 1;
		b.p[b.n++] = (uint8_t)(l >> 8);
		b.p[b.n++] = (uint8_t)l;
		memcpy(b.p + b.n, hs + off, l);
		b.n += l;
	}
	return b;
}

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

/* The offset of the extensions' length in a ClientHello handshake. */
static size_t ext_at(const uint8_t *hs)
{
	size_t o = 4 + 2 + 32;

	o += 1 + hs[o];
	o += 2 + ((size_t)hs[o] << 8 | hs[o + 1]);
	o += 1 + hs[o];
	return o;
}

/* A copy of a hello's handshake with one extension appended. */
static struct bytes add_ext(struct bytes hs, unsigned type, const uint8_t *data, size_t len)
{
	struct bytes o = {malloc(hs.n + len + 4 + 16), hs.n};
	size_t e;

	memcpy(o.p, hs.p, hs.n);
	e = ext_at(o.p);
	o.p[o.n++] = (uint8_t)(type >> 8);
	o.p[o.n++] = (uint8_t)type;
	put16(o.p + o.n, len);
	o.n += 2;
	if (len)
		memcpy(o.p + o.n, data, len);
	o.n += len;
	put16(o.p + e, o.n - e - 2);
	put24(o.p + 1, o.n - 4);
	return o;
}

/* A minimal hello whose only extension is server_name with this body. */
static struct bytes hello_with_sni_body(const uint8_t *body, size_t len)
{
	static const uint8_t base[] = {
		1, 0, 0,    0, 3, 3, /* type, length, version */
		0, 0, 0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* session id */
		0, 2, 0x13, 1,					   /* cipher suites */
		1, 0,						   /* compression */
		0, 0};						   /* extensions */
	struct bytes hs = {malloc(sizeof(base)), sizeof(base)}, o;

	memcpy(hs.p, base, sizeof(base));
	put24(hs.p + 1, hs.n - 4);
	o = add_ext(hs, 0, body, len);
	free(hs.p);
	return o;
}

static struct bytes sni_body(const char *name, size_t len)
{
	struct bytes b = {malloc(len + 5), len + 5};

	put16(b.p, len + 3);
	b.p[2] = 0;
	put16(b.p + 3, len);
	memcpy(b.p + 5, name, len);
	return b;
}

static void expect_hs(struct bytes hs, int want, const char *name_or_why)
{
	struct bytes r = records(hs.p, hs.n, 16384);

	expect(sbx__sni_tls, r.p, r.n, want, name_or_why);
	free(r.p);
}

static void test_netpolicy_sni__real_hellos(void **state)
{
	static const struct {
		const char *file, *name;
		int rc;
	} cases[] = {
		{"openssl-tls13", "pkg.canary.test", SBX_SNI_FOUND},
		{"openssl-tls12", "pkg.canary.test", SBX_SNI_FOUND},
		{"curl", "pkg.canary.test", SBX_SNI_FOUND},
		{"python-ssl", "files.pythonhosted.canary.test", SBX_SNI_FOUND},
		{"openssl-nosni", "no server_name", SBX_SNI_NONE},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bytes b = load(cases[i].file);

		expect(sbx__sni_tls, b.p, b.n, cases[i].rc, cases[i].name);
		free(b.p);
	}
}

static void test_netpolicy_sni__split_records(void **state)
{
	struct bytes b = load("openssl-tls13"), hs = handshake(b);

	(void)state;
	/* Every record size from 1 byte (one record per byte) up. */
	for (size_t size = 1; size <= hs.n; size += size < 40 ? 1 : 37) {
		struct bytes r = records(hs.p, hs.n, size);

		expect(sbx__sni_tls, r.p, r.n, SBX_SNI_FOUND, "pkg.canary.test");
		free(r.p);
	}
	free(hs.p);
	free(b.p);
}

static void test_netpolicy_sni__ech_refused_whatever_the_outer_name(void **state)
{
	static const uint8_t ech[] = {0, 0, 1, 0, 1, 0x42, 0, 0, 0, 0};
	struct bytes b = load("curl"), hs = handshake(b), x;

	(void)state;
	x = add_ext(hs, 0xfe0d, ech, sizeof(ech));
	expect_hs(x, SBX_SNI_ECH, "outer server name is not trusted");
	free(x.p);
	x = add_ext(hs, 0xffce, ech, sizeof(ech)); /* the older encrypted_server_name */
	expect_hs(x, SBX_SNI_ECH, NULL);
	free(x.p);
	x = add_ext(hs, 0xfe0d, NULL, 0); /* empty: an inner hello's marker */
	expect_hs(x, SBX_SNI_ECH, NULL);
	free(x.p);
	free(hs.p);
	free(b.p);
}

static void test_netpolicy_sni__hello_refusals(void **state)
{
	struct bytes b = load("openssl-tls13"), hs = handshake(b), x, body;
	uint8_t buf[64];

	(void)state;
	/* An extension twice: server_name again. */
	body = sni_body("evil.example", 12);
	x = add_ext(hs, 0, body.p, body.n);
	expect_hs(x, SBX_SNI_MALFORMED, "twice");
	free(x.p);
	free(body.p);
	/* Two host names in one server_name. */
	put16(buf, 2 * (3 + 5));
	buf[2] = 0, put16(buf + 3, 5), memcpy(buf + 5, "a.org", 5);
	buf[10] = 0, put16(buf + 11, 5), memcpy(buf + 13, "b.org", 5);
	x = hello_with_sni_body(buf, 18);
	expect_hs(x, SBX_SNI_MALFORMED, "two host names");
	free(x.p);
	/* A name type other than host_name. */
	buf[10] = 1;
	x = hello_with_sni_body(buf, 18);
	expect_hs(x, SBX_SNI_MALFORMED, "unknown type");
	free(x.p);
	/* Names that are not host names. */
	{
		static const struct {
			const char *s;
			size_t n;
		} bad[] = {
			{"pkg.canary.test\0.evil", 21},
			{"pkg..canary.test", 16},
			{"198.51.100.7", 12},
			{"*.canary.test", 13},
			{"pkg.canary.test:443", 19},
			{"b\xc3\xbc"
			 "cher.example",
			 14},
			{"", 0},
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			body = sni_body(bad[i].s, bad[i].n);
			x = hello_with_sni_body(body.p, body.n);
			expect_hs(x, SBX_SNI_MALFORMED, NULL);
			free(x.p);
			free(body.p);
		}
	}
	/* A good minimal hello, then its lengths broken one by one. */
	body = sni_body("PKG.canary.test.", 16);
	x = hello_with_sni_body(body.p, body.n);
	expect_hs(x, SBX_SNI_FOUND, "pkg.canary.test");
	x.p[38] = 33; /* session id longer than 32 */
	expect_hs(x, SBX_SNI_MALFORMED, "session id");
	x.p[38] = 0;
	x.p[40] = 3; /* odd cipher suites length */
	expect_hs(x, SBX_SNI_MALFORMED, "cipher suites");
	x.p[40] = 2;
	x.p[45]++; /* extensions length one past the end */
	expect_hs(x, SBX_SNI_MALFORMED, "extensions length");
	x.p[45]--;
	x.p[0] = 2; /* a ServerHello */
	expect_hs(x, SBX_SNI_MALFORMED, "not a ClientHello");
	x.p[0] = 1;
	x.p[4] = 2; /* version 2.x */
	expect_hs(x, SBX_SNI_MALFORMED, "version");
	x.p[4] = 3;
	free(body.p);
	/* Bytes after the hello in its record, or a record of another type. */
	{
		struct bytes r = records(x.p, x.n, 16384), r2;

		r2.p = malloc(r.n + 16);
		memcpy(r2.p, r.p, r.n);
		r2.p[r.n] = 0x16; /* one byte more in the record */
		put16(r2.p + 3, x.n + 1);
		expect(sbx__sni_tls, r2.p, r.n + 1, SBX_SNI_MALFORMED, "after the ClientHello");
		free(r.p);
		r = records(x.p, x.n, 10);
		r.p[15] = 23; /* the second record: application data */
		expect(sbx__sni_tls, r.p, r.n, SBX_SNI_MALFORMED, "other than handshake");
		r.p[15] = 22;
		r.p[16] = 2;
		expect(sbx__sni_tls, r.p, r.n, SBX_SNI_MALFORMED, "record version");
		r.p[16] = 3;
		memcpy(r2.p, "\x16\x03\x01\x00\x00", 5);
		expect(sbx__sni_tls, r2.p, 5, SBX_SNI_MALFORMED, "empty handshake record");
		memcpy(r2.p, "\x16\x03\x01\x40\x01", 5);
		expect(sbx__sni_tls, r2.p, 5, SBX_SNI_MALFORMED, "over 2^14");
		expect(sbx__sni_tls, (const uint8_t *)"GET / HTTP/1.1\r\n", 16, SBX_SNI_NOT_TLS,
		       NULL);
		free(r.p);
		free(r2.p);
	}
	free(x.p);
	free(hs.p);
	free(b.p);
}

static void test_netpolicy_sni__bounded_at_16k(void **state)
{
	struct bytes b = load("openssl-tls13"), hs = handshake(b), x, r;
	uint8_t *pad = calloc(1, 20000);
	size_t fit;

	(void)state;
	/* A hello just under the bound, in two records, is read. */
	fit = SBX_SNI_MAX - 2 * 5 - hs.n - 4;
	x = add_ext(hs, 21, pad, fit); /* padding */
	r = records(x.p, x.n, 16000);
	assert_int_equal(r.n, SBX_SNI_MAX);
	expect(sbx__sni_tls, r.p, r.n, SBX_SNI_FOUND, "pkg.canary.test");
	free(r.p);
	/* One byte more does not fit with its record headers. */
	free(x.p);
	x = add_ext(hs, 21, pad, fit + 1);
	r = records(x.p, x.n, 16000);
	expect(sbx__sni_tls, r.p, r.n, SBX_SNI_TOO_LONG, "16 KiB");
	free(r.p);
	/* A hello that says it is larger is refused from its header alone. */
	free(x.p);
	x = add_ext(hs, 21, pad, 17000);
	r = records(x.p, x.n, 16384);
	expect(sbx__sni_tls, r.p, 9, SBX_SNI_TOO_LONG, "cannot end within 16 KiB");
	free(r.p);
	/* Many tiny records: the overhead runs past the bound. */
	r = records(x.p, x.n, 1);
	expect(sbx__sni_tls, r.p, SBX_SNI_MAX + 100, SBX_SNI_TOO_LONG, NULL);
	free(r.p);
	free(x.p);
	free(pad);
	free(hs.p);
	free(b.p);
}

/* ===== HTTP ===== */

static void http(const char *req, int want, const char *name_or_why)
{
	expect(sbx__sni_http, (const uint8_t *)req, strlen(req), want, name_or_why);
}

static void test_netpolicy_sni__http_host(void **state)
{
	struct sbx__sni out;
	const char *r;

	(void)state;
	http("GET /simple/ HTTP/1.1\r\nHost: pkg.canary.test\r\nAccept: */*\r\n\r\n", SBX_SNI_FOUND,
	     "pkg.canary.test");
	http("GET / HTTP/1.1\r\nhOsT:   PKG.Canary.Test.:8080  \r\n\r\n", SBX_SNI_FOUND,
	     "pkg.canary.test");
	http("GET http://pkg.canary.test/simple/ HTTP/1.1\r\nHost: pkg.canary.test\r\n\r\n",
	     SBX_SNI_FOUND, "pkg.canary.test");
	http("GET HTTP://pkg.canary.test:80?x HTTP/1.1\r\nHost: pkg.canary.test\r\n\r\n",
	     SBX_SNI_FOUND, "pkg.canary.test");
	http("GET http://pkg.canary.test/ HTTP/1.0\r\n\r\n", SBX_SNI_FOUND, "pkg.canary.test");
	http("OPTIONS * HTTP/1.1\r\nHost: pkg.canary.test\r\n\r\n", SBX_SNI_FOUND,
	     "pkg.canary.test");
	http("GET / HTTP/1.0\r\n\r\n", SBX_SNI_NONE, "naming no host");

	r = "POST /upload HTTP/1.1\r\nHost: pkg.canary.test:8443\r\nContent-Length: 12\r\n\r\nbody";
	assert_int_equal(sbx__sni_http((const uint8_t *)r, strlen(r), &out), SBX_SNI_FOUND);
	assert_int_equal(out.port, 8443);
	assert_int_equal(out.head_len, strlen(r) - 4);
	assert_int_equal(out.body_len, 12);
	r = "POST / HTTP/1.1\r\nHost: a.canary.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
	assert_int_equal(sbx__sni_http((const uint8_t *)r, strlen(r), &out), SBX_SNI_FOUND);
	assert_int_equal(out.body_len, -1);
	assert_int_equal(out.port, 0);
}

static void test_netpolicy_sni__http_refusals(void **state)
{
	static const struct {
		const char *req, *why;
	} bad[] = {
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nHost: a.canary.test\r\n\r\n",
		 "second Host"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nhost: evil.example\r\n\r\n",
		 "second Host"},
		{"GET http://evil.example/ HTTP/1.1\r\nHost: a.canary.test\r\n\r\n", "differs"},
		{"GET http://a.canary.test:8080/ HTTP/1.1\r\nHost: a.canary.test\r\n\r\n",
		 "differs"},
		{"GET http://a.canary.test@evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		 "userinfo"},
		{"GET https://a.canary.test/ HTTP/1.1\r\nHost: a.canary.test\r\n\r\n", "https://"},
		{"CONNECT a.canary.test:443 HTTP/1.1\r\nHost: a.canary.test\r\n\r\n", "CONNECT"},
		{"GET a.canary.test HTTP/1.1\r\nHost: a.canary.test\r\n\r\n", "not a path"},
		{"GET * HTTP/1.1\r\nHost: a.canary.test\r\n\r\n", "OPTIONS only"},
		{"GET / HTTP/1.1\r\n\r\n", "without Host"},
		{"GET / HTTP/1.1\r\nHost:\r\n\r\n", "empty Host"},
		{"GET / HTTP/1.1\r\nHost : a.canary.test\r\n\r\n", "header name"},
		{"GET / HTTP/1.1\r\nX-A: b\r\n  Host: evil.example\r\nHost: a.canary.test\r\n\r\n",
		 "folded"},
		{"GET / HTTP/1.1\nHost: a.canary.test\n\n", "CRLF"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\rX: y\r\n\r\n", "bare CR"},
		{"GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\n\r\n", "an address"},
		{"GET / HTTP/1.1\r\nHost: 198.51.100.7\r\n\r\n", "not a host name"},
		{"GET / HTTP/1.1\r\nHost: evil.example.:0\r\n\r\n", "port"},
		{"GET / HTTP/1.1\r\nHost: evil.example:65536\r\n\r\n", "port"},
		{"GET / HTTP/1.1\r\nHost: evil.example:\r\n\r\n", "port"},
		{"GET / HTTP/1.1\r\nHost: *.canary.test\r\n\r\n", "not a host name"},
		{"GET / HTTP/1.1\r\nHost: a_b.canary.test\r\n\r\n", "not a host name"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\x01\r\n\r\n", "control byte"},
		{"GET / HTTP/2.0\r\nHost: a.canary.test\r\n\r\n", "HTTP/1.0 or HTTP/1.1"},
		{"GET / http/1.1\r\nHost: a.canary.test\r\n\r\n", "HTTP/1.0 or HTTP/1.1"},
		{"GET  / HTTP/1.1\r\nHost: a.canary.test\r\n\r\n", "request line"},
		{"G(T / HTTP/1.1\r\n", "not an HTTP"},
		/* A second request hidden as a body a server may not read as one. */
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nContent-Length: 37\r\n\r\n"
		 "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		 "a body on GET"},
		{"HEAD / HTTP/1.1\r\nHost: a.canary.test\r\nContent-Length: 5\r\n\r\n",
		 "a body on GET or HEAD"},
		{"\x16\x03\x01", "not an HTTP"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nContent-Length: 1\r\nContent-Length: "
		 "1\r\n\r\n",
		 "second Content-Length"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nContent-Length: +1\r\n\r\n",
		 "not decimal"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nContent-Length: 1\r\nTransfer-Encoding: "
		 "chunked\r\n\r\n",
		 "both"},
		{"GET / HTTP/1.1\r\nHost: a.canary.test\r\nTransfer-Encoding: xchunked\r\n\r\n",
		 "Transfer-Encoding"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		http(bad[i].req, SBX_SNI_MALFORMED, bad[i].why);
	/* A NUL, through the length-counted input. */
	expect(sbx__sni_http, (const uint8_t *)"GET / HTTP/1.1\r\nHost: a\0.b.org\r\n\r\n", 33,
	       SBX_SNI_MALFORMED, "NUL");
}

/* A server's first bytes: a HelloRetryRequest is told from a ServerHello
 * only by its random (RFC 8446 4.1.3); too few bytes say so. */
static void test_netpolicy_sni__hello_retry_told(void **state)
{
	static const uint8_t retry[32] = {0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11,
					  0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
					  0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e,
					  0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};
	uint8_t b[64] = {22, 3, 3, 0, 58, 2, 0, 0, 54, 3, 3};

	(void)state;
	memcpy(b + 11, retry, sizeof(retry));
	assert_int_equal(sbx__tls_is_hrr(b, sizeof(b)), 1);
	assert_int_equal(sbx__tls_is_hrr(b, SBX_TLS_HRR_LEN), 1);
	for (size_t n = 6; n < SBX_TLS_HRR_LEN; n++)
		assert_int_equal(sbx__tls_is_hrr(b, n), -1);
	b[42] ^= 1; /* an ordinary ServerHello's random */
	assert_int_equal(sbx__tls_is_hrr(b, sizeof(b)), 0);
	b[42] ^= 1;
	b[5] = 11; /* not a ServerHello first */
	assert_int_equal(sbx__tls_is_hrr(b, 6), 0);
	b[5] = 2;
	b[0] = 21; /* an alert */
	assert_int_equal(sbx__tls_is_hrr(b, 1), 0);
}

static void test_netpolicy_sni__http_bounded(void **state)
{
	size_t n = SBX_SNI_MAX + 10;
	char *big = malloc(n);

	(void)state;
	/* Headers that never end within 16 KiB. */
	memcpy(big, "GET / HTTP/1.1\r\nHost: a.canary.test\r\n", 37);
	for (size_t i = 37; i < n; i += 10)
		memcpy(big + i, "X-P: abc\r\n", n - i < 10 ? n - i : 10);
	expect(sbx__sni_http, (uint8_t *)big, n, SBX_SNI_TOO_LONG, "16 KiB");
	/* A head that ends exactly at the bound is read. */
	memcpy(big + SBX_SNI_MAX - 4, "\r\n\r\n", 4);
	memset(big + SBX_SNI_MAX - 10, 'a', 6);
	expect(sbx__sni_http, (uint8_t *)big, SBX_SNI_MAX, SBX_SNI_FOUND, "a.canary.test");
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netpolicy_sni__real_hellos),
		cmocka_unit_test(test_netpolicy_sni__split_records),
		cmocka_unit_test(test_netpolicy_sni__ech_refused_whatever_the_outer_name),
		cmocka_unit_test(test_netpolicy_sni__hello_refusals),
		cmocka_unit_test(test_netpolicy_sni__bounded_at_16k),
		cmocka_unit_test(test_netpolicy_sni__http_host),
		cmocka_unit_test(test_netpolicy_sni__http_refusals),
		cmocka_unit_test(test_netpolicy_sni__http_bounded),
		cmocka_unit_test(test_netpolicy_sni__hello_retry_told),
	};

	return cmocka_run_group_tests_name("netpolicy_sni", tests, NULL, NULL);
}
