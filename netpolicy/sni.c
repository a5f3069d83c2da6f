/*
 * netpolicy/sni.c: the name a client presents at the start of a TCP
 * stream (netpolicy/sni-int.h): a TLS ClientHello's server name, or a plain
 * HTTP/1.x request's Host.
 *
 * Hand-written, because no library reads a ClientHello without being a TLS
 * stack: OpenSSL and GnuTLS parse one only inside a handshake they run
 * themselves (a server context, certificates, their own socket reads),
 * which a checker that must not terminate TLS cannot use, and both would
 * pull a whole TLS implementation into the path of every byte. The HTTP
 * side needs only the request head, and must refuse the ambiguities a
 * lenient parser accepts (a second Host, folding, bare LF) so that the name
 * checked is the name the server acts on; libmicrohttpd and others are
 * servers, not head readers. Both read only the bytes given, at most
 * SBX_SNI_MAX of them, with every length checked against what is left.
 *
 * Every answer other than MORE is final: a longer read of the same stream
 * gives the same answer (tests/fuzz/fuzz_sni.c checks this).
 */
#include <string.h>

#include "netpolicy/sni-int.h"

#define REC_HDR 5
#define HS_HDR 4
#define REC_MAX 16384	/* 2^14: the largest plaintext record */
#define EXT_SNI 0x0000	/* server_name, RFC 6066 */
#define EXT_ECH 0xfe0d	/* encrypted_client_hello */
#define EXT_ESNI 0xffce /* encrypted_server_name, the older draft */
#define HOST_NAME_TYPE 0

/* Every answer but FOUND: no name, and why. */
static int say(struct sbx__sni *out, int rc, const char *why)
{
	out->name[0] = '\0';
	out->why = why;
	return rc;
}

/* MORE, or TOO_LONG once the bound is read and still undecided. */
static int more(struct sbx__sni *out, size_t n)
{
	if (n >= SBX_SNI_MAX)
		return say(out, SBX_SNI_TOO_LONG, "undecided within 16 KiB");
	return say(out, SBX_SNI_MORE, NULL);
}

static void reset(struct sbx__sni *out)
{
	out->name[0] = '\0';
	out->why = NULL;
	out->port = 0;
	out->head_len = 0;
	out->body_len = 0;
}

/* ===== TLS ===== */

struct cur {
	const uint8_t *p;
	size_t n;
};

static int take(struct cur *c, size_t k, const uint8_t **at)
{
	if (c->n < k)
		return -1;
	if (at)
		*at = c->p;
	c->p += k;
	c->n -= k;
	return 0;
}

static int u8(struct cur *c, size_t *v)
{
	const uint8_t *a;

	if (take(c, 1, &a) < 0)
		return -1;
	*v = a[0];
	return 0;
}

static int u16(struct cur *c, size_t *v)
{
	const uint8_t *a;

	if (take(c, 2, &a) < 0)
		return -1;
	*v = (size_t)a[0] << 8 | a[1];
	return 0;
}

/* The server_name extension's body: exactly one host_name. */
static int server_name(struct sbx__sni *out, const uint8_t *p, size_t n, int *found)
{
	struct cur c = {p, n};
	size_t list, type, len;
	const uint8_t *name, *keep = NULL;
	size_t keep_len = 0;

	if (u16(&c, &list) < 0 || list != c.n || list == 0)
		return say(out, SBX_SNI_MALFORMED, "server_name list length");
	while (c.n) {
		if (u8(&c, &type) < 0 || u16(&c, &len) < 0 || len == 0 || take(&c, len, &name) < 0)
			return say(out, SBX_SNI_MALFORMED, "server_name entry length");
		if (type != HOST_NAME_TYPE)
			return say(out, SBX_SNI_MALFORMED, "server_name of an unknown type");
		if (keep)
			return say(out, SBX_SNI_MALFORMED, "two host names in server_name");
		keep = name;
		keep_len = len;
	}
	if (sbx__names_canon(out->name, (const char *)keep, keep_len) < 0)
		return say(out, SBX_SNI_MALFORMED, "the server name is not a host name");
	*found = 1;
	return 0;
}

/* The ClientHello's body (after its 4-byte header). */
static int client_hello(struct sbx__sni *out, const uint8_t *p, size_t n)
{
	uint8_t seen[65536 / 8];
	struct cur c = {p, n};
	const uint8_t *v;
	size_t len, ext_len;
	int ech = 0, found = 0, rc;

	if (take(&c, 2, &v) < 0 || v[0] != 3)
		return say(out, SBX_SNI_MALFORMED, "ClientHello version is not 3.x");
	if (take(&c, 32, NULL) < 0)
		return say(out, SBX_SNI_MALFORMED, "ClientHello random cut short");
	if (u8(&c, &len) < 0 || len > 32 || take(&c, len, NULL) < 0)
		return say(out, SBX_SNI_MALFORMED, "ClientHello session id length");
	if (u16(&c, &len) < 0 || len < 2 || len % 2 || take(&c, len, NULL) < 0)
		return say(out, SBX_SNI_MALFORMED, "ClientHello cipher suites length");
	if (u8(&c, &len) < 0 || len < 1 || take(&c, len, NULL) < 0)
		return say(out, SBX_SNI_MALFORMED, "ClientHello compression methods length");
	if (c.n == 0)
		return say(out, SBX_SNI_NONE, "a ClientHello without extensions names no server");
	if (u16(&c, &ext_len) < 0 || ext_len != c.n)
		return say(out, SBX_SNI_MALFORMED, "ClientHello extensions length");
	memset(seen, 0, sizeof(seen));
	while (c.n) {
		size_t type;

		if (u16(&c, &type) < 0 || u16(&c, &len) < 0 || take(&c, len, &v) < 0)
			return say(out, SBX_SNI_MALFORMED, "extension length");
		if (seen[type / 8] & (1u << (type % 8)))
			return say(out, SBX_SNI_MALFORMED, "an extension appears twice");
		seen[type / 8] |= (uint8_t)(1u << (type % 8));
		if (type == EXT_ECH || type == EXT_ESNI)
			ech = 1;
		else if (type == EXT_SNI && (rc = server_name(out, v, len, &found)) != 0)
			return rc;
	}
	if (ech) {
		out->name[0] = '\0';
		return say(out, SBX_SNI_ECH,
			   "Encrypted ClientHello: the outer server name is not trusted");
	}
	if (!found)
		return say(out, SBX_SNI_NONE, "the ClientHello has no server_name");
	return SBX_SNI_FOUND;
}

int sbx__sni_tls(const uint8_t *p, size_t n, struct sbx__sni *out)
{
	uint8_t hs[SBX_SNI_MAX];
	size_t off = 0, hl = 0, need = 0;

	reset(out);
	if (n > SBX_SNI_MAX)
		n = SBX_SNI_MAX; /* decide on the first 16 KiB, as a reader of 16 KiB would */
	if (n == 0)
		return more(out, n);
	if (p[0] != 22)
		return say(out, SBX_SNI_NOT_TLS, "not a TLS handshake record");
	for (;;) {
		size_t rlen, avail, base;

		if (off >= n)
			return more(out, n);
		if (p[off] != 22)
			return say(out, SBX_SNI_MALFORMED,
				   "a record other than handshake before the ClientHello ends");
		if (n - off >= 2 && p[off + 1] != 3)
			return say(out, SBX_SNI_MALFORMED, "record version is not 3.x");
		if (n - off < REC_HDR)
			return more(out, n);
		rlen = (size_t)p[off + 3] << 8 | p[off + 4];
		if (rlen == 0)
			return say(out, SBX_SNI_MALFORMED, "an empty handshake record");
		if (rlen > REC_MAX)
			return say(out, SBX_SNI_MALFORMED, "a record over 2^14 bytes");
		avail = n - off - REC_HDR < rlen ? n - off - REC_HDR : rlen;
		if (hl + avail > sizeof(hs)) /* not reached: n is at most SBX_SNI_MAX */
			return say(out, SBX_SNI_TOO_LONG, "undecided within 16 KiB");
		base = hl;
		memcpy(hs + hl, p + off + REC_HDR, avail);
		hl += avail;
		if (!need && hl >= HS_HDR) {
			if (hs[0] != 1)
				return say(out, SBX_SNI_MALFORMED,
					   "the first handshake message is not a ClientHello");
			need = HS_HDR + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
			/* The hello ends no sooner than the rest of it in this record. */
			if (need > SBX_SNI_MAX || off + REC_HDR + (need - base) > SBX_SNI_MAX)
				return say(out, SBX_SNI_TOO_LONG,
					   "a ClientHello that cannot end within 16 KiB");
		}
		if (need && hl >= need) {
			/* The hello must end its record: nothing follows it there. */
			if (hl > need || avail < rlen)
				return say(out, SBX_SNI_MALFORMED,
					   "bytes after the ClientHello in its record");
			return client_hello(out, hs + HS_HDR, need - HS_HDR);
		}
		if (avail < rlen)
			return more(out, n);
		off += REC_HDR + rlen;
	}
}

/* ===== HTTP ===== */

static int tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int ieq(const uint8_t *a, size_t n, const char *b)
{
	if (strlen(b) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char x = a[i], y = (unsigned char)b[i];

		if (x >= 'A' && x <= 'Z')
			x = (unsigned char)(x - 'A' + 'a');
		if (x != y)
			return 0;
	}
	return 1;
}

/* "host[:port]" into a canonical name and port (0: none). */
static int authority(struct sbx__sni *out,
		     const uint8_t *a,
		     size_t n,
		     char name[SBX_NAME_BUF],
		     uint16_t *port,
		     const char *what)
{
	const uint8_t *colon = memchr(a, ':', n);
	size_t hn = colon ? (size_t)(colon - a) : n;

	*port = 0;
	if (memchr(a, '@', n))
		return say(out, SBX_SNI_MALFORMED, "userinfo in the request target");
	if (n && a[0] == '[')
		return say(out, SBX_SNI_MALFORMED, "an address, not a host name, in the request");
	if (colon) {
		unsigned long v = 0;
		size_t pl = n - hn - 1;

		if (pl == 0 || pl > 5)
			return say(out, SBX_SNI_MALFORMED, "a port that is not 1..65535");
		for (size_t i = hn + 1; i < n; i++) {
			if (a[i] < '0' || a[i] > '9')
				return say(out, SBX_SNI_MALFORMED, "a port that is not 1..65535");
			v = v * 10 + (a[i] - '0');
		}
		if (v == 0 || v > 65535)
			return say(out, SBX_SNI_MALFORMED, "a port that is not 1..65535");
		*port = (uint16_t)v;
	}
	if (sbx__names_canon(name, (const char *)a, hn) < 0)
		return say(out, SBX_SNI_MALFORMED, what);
	return 0;
}

/* The request line (without CRLF). *abs: an absolute-form target's host. */
static int request_line(struct sbx__sni *out,
			const uint8_t *l,
			size_t n,
			int *v11,
			char abs[SBX_NAME_BUF],
			uint16_t *abs_port,
			int *has_abs)
{
	const uint8_t *sp1 = memchr(l, ' ', n), *sp2, *t;
	size_t mlen, tlen;

	if (!sp1 || sp1 == l)
		return say(out, SBX_SNI_MALFORMED, "not an HTTP request line");
	mlen = (size_t)(sp1 - l);
	for (size_t i = 0; i < mlen; i++)
		if (!tchar(l[i]))
			return say(out, SBX_SNI_MALFORMED, "not an HTTP method");
	t = sp1 + 1;
	sp2 = memchr(t, ' ', n - mlen - 1);
	if (!sp2 || sp2 == t)
		return say(out, SBX_SNI_MALFORMED, "not an HTTP request line");
	tlen = (size_t)(sp2 - t);
	if (n - mlen - tlen - 2 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return say(out, SBX_SNI_MALFORMED, "not HTTP/1.0 or HTTP/1.1");
	*v11 = sp2[8] == '1';
	for (size_t i = 0; i < tlen; i++)
		if (t[i] <= 0x20 || t[i] >= 0x7f)
			return say(out, SBX_SNI_MALFORMED,
				   "a byte not allowed in the request target");
	if (mlen == 7 && !memcmp(l, "CONNECT", 7))
		return say(out, SBX_SNI_MALFORMED, "CONNECT is refused");
	*has_abs = 0;
	if (t[0] == '/')
		return 0;
	if (tlen == 1 && t[0] == '*') {
		if (mlen == 7 && !memcmp(l, "OPTIONS", 7))
			return 0;
		return say(out, SBX_SNI_MALFORMED, "'*' is a target of OPTIONS only");
	}
	if (tlen > 7 && ieq(t, 7, "http://")) {
		const uint8_t *a = t + 7, *end = a;
		int rc;

		while (end < t + tlen && *end != '/' && *end != '?' && *end != '#')
			end++;
		if ((rc = authority(out, a, (size_t)(end - a), abs, abs_port,
				    "the request target's host is not a host name")) != 0)
			return rc;
		*has_abs = 1;
		return 0;
	}
	if (tlen > 8 && ieq(t, 8, "https://"))
		return say(out, SBX_SNI_MALFORMED, "an https:// target in plain HTTP");
	return say(out, SBX_SNI_MALFORMED, "a request target that is not a path or http:// URI");
}

/* One header line (without CRLF); hosts counted, lengths noted. */
static int header(struct sbx__sni *out,
		  const uint8_t *l,
		  size_t n,
		  int *hosts,
		  int *cl,
		  int *te,
		  char host[SBX_NAME_BUF],
		  uint16_t *host_port)
{
	const uint8_t *colon = memchr(l, ':', n), *v;
	size_t nl, vl;

	if (l[0] == ' ' || l[0] == '\t')
		return say(out, SBX_SNI_MALFORMED, "a folded header line");
	if (!colon || colon == l)
		return say(out, SBX_SNI_MALFORMED, "a header line without a name");
	nl = (size_t)(colon - l);
	for (size_t i = 0; i < nl; i++)
		if (!tchar(l[i]))
			return say(out, SBX_SNI_MALFORMED, "a byte not allowed in a header name");
	v = colon + 1;
	vl = n - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	for (size_t i = 0; i < vl; i++)
		if ((v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
			return say(out, SBX_SNI_MALFORMED, "a control byte in a header value");
	if (ieq(l, nl, "host")) {
		if (++*hosts > 1)
			return say(out, SBX_SNI_MALFORMED, "a second Host header");
		if (vl == 0)
			return say(out, SBX_SNI_MALFORMED, "an empty Host header");
		return authority(out, v, vl, host, host_port, "the Host header is not a host name");
	}
	if (ieq(l, nl, "content-length")) {
		long long x = 0;

		if (*cl)
			return say(out, SBX_SNI_MALFORMED, "a second Content-Length");
		if (vl == 0 || vl > 18)
			return say(out, SBX_SNI_MALFORMED, "a Content-Length that is not decimal");
		for (size_t i = 0; i < vl; i++) {
			if (v[i] < '0' || v[i] > '9')
				return say(out, SBX_SNI_MALFORMED,
					   "a Content-Length that is not decimal");
			x = x * 10 + (v[i] - '0');
		}
		*cl = 1;
		out->body_len = x;
		return 0;
	}
	if (ieq(l, nl, "transfer-encoding")) {
		if (*te || vl < 7 || !ieq(v + vl - 7, 7, "chunked") ||
		    (vl > 7 && v[vl - 8] != ' ' && v[vl - 8] != ',' && v[vl - 8] != '\t'))
			return say(out, SBX_SNI_MALFORMED,
				   "a Transfer-Encoding not ending in chunked");
		*te = 1;
		return 0;
	}
	return 0;
}

int sbx__sni_http(const uint8_t *p, size_t n, struct sbx__sni *out)
{
	char abs[SBX_NAME_BUF] = "", host[SBX_NAME_BUF] = "";
	uint16_t abs_port = 0, host_port = 0;
	int v11 = 0, has_abs = 0, hosts = 0, cl = 0, te = 0, rc;
	size_t pos = 0, line = 0;

	reset(out);
	if (n > SBX_SNI_MAX)
		n = SBX_SNI_MAX;
	/* The method, as far as it is read: refuse what is not HTTP at once. */
	for (size_t i = 0; i < n && p[i] != ' '; i++)
		if (!tchar(p[i]))
			return say(out, SBX_SNI_MALFORMED, "not an HTTP request line");
	for (;;) {
		const uint8_t *lf = memchr(p + pos, '\n', n - pos);
		size_t len;

		if (!lf)
			return more(out, n);
		len = (size_t)(lf - (p + pos));
		if (len == 0 || p[pos + len - 1] != '\r')
			return say(out, SBX_SNI_MALFORMED, "a line not ended by CRLF");
		len--;
		if (memchr(p + pos, '\r', len) || memchr(p + pos, '\0', len))
			return say(out, SBX_SNI_MALFORMED,
				   "a bare CR or a NUL in the request head");
		if (line == 0)
			rc = request_line(out, p + pos, len, &v11, abs, &abs_port, &has_abs);
		else if (len == 0)
			break;
		else
			rc = header(out, p + pos, len, &hosts, &cl, &te, host, &host_port);
		if (rc != 0)
			return rc;
		pos += len + 2;
		line++;
	}
	out->head_len = pos + 2;
	if (cl && te)
		return say(out, SBX_SNI_MALFORMED, "both Content-Length and Transfer-Encoding");
	/* A server that takes no body on GET or HEAD would read one as the
	 * next request, with a Host this reader never checked. */
	if ((te || (cl && out->body_len > 0)) &&
	    ((n >= 4 && !memcmp(p, "GET ", 4)) || (n >= 5 && !memcmp(p, "HEAD ", 5))))
		return say(out, SBX_SNI_MALFORMED, "a body on GET or HEAD");
	if (te)
		out->body_len = -1;
	if (has_abs && hosts) {
		if (strcmp(abs, host) != 0 ||
		    (abs_port ? abs_port : 80) != (host_port ? host_port : 80))
			return say(out, SBX_SNI_MALFORMED,
				   "the Host header differs from the request target's host");
	}
	if (has_abs) {
		memcpy(out->name, abs, sizeof(abs));
		out->port = abs_port;
		return SBX_SNI_FOUND;
	}
	if (hosts) {
		memcpy(out->name, host, sizeof(host));
		out->port = host_port;
		return SBX_SNI_FOUND;
	}
	if (v11)
		return say(out, SBX_SNI_MALFORMED, "an HTTP/1.1 request without Host");
	return say(out, SBX_SNI_NONE, "an HTTP/1.0 request naming no host");
}

const char *sbx__sni_result_name(int rc)
{
	switch (rc) {
	case SBX_SNI_FOUND:
		return "found";
	case SBX_SNI_MORE:
		return "more";
	case SBX_SNI_NONE:
		return "no-name";
	case SBX_SNI_ECH:
		return "ech";
	case SBX_SNI_MALFORMED:
		return "malformed";
	case SBX_SNI_TOO_LONG:
		return "too-long";
	case SBX_SNI_NOT_TLS:
		return "not-tls";
	default:
		return "unknown";
	}
}

int sbx__tls_is_hrr(const uint8_t *p, size_t n)
{
	/* SHA-256 of "HelloRetryRequest" (RFC 8446 4.1.3). */
	static const uint8_t retry[32] = {0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11,
					  0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
					  0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e,
					  0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

	/* A handshake record (22) whose first message is a ServerHello (2):
	 * record header 5, message header 4, legacy version 2, random 32. */
	if (n >= 1 && p[0] != 22)
		return 0;
	if (n >= 6 && p[5] != 2)
		return 0;
	if (n < SBX_TLS_HRR_LEN)
		return -1;
	return memcmp(p + 11, retry, sizeof(retry)) == 0;
}
