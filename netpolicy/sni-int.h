/*
 * netpolicy/sni-int.h: the name a client presents in the first bytes of a
 * TCP stream: the server name of a TLS ClientHello, or the Host of a plain
 * HTTP/1.x request. Pure functions over the bytes read so far; the caller
 * reads more while the answer is SBX_SNI_MORE, up to SBX_SNI_MAX bytes.
 */
#ifndef SBX_NETPOLICY_SNI_INT_H
#define SBX_NETPOLICY_SNI_INT_H

#include <stddef.h>
#include <stdint.h>

#include "netpolicy/names-int.h"

/* The most a checker reads before deciding: 16 KiB. */
#define SBX_SNI_MAX 16384

enum {
	SBX_SNI_FOUND = 0,     /* out->name holds the canonical name */
	SBX_SNI_MORE = 1,      /* the bytes so far are a valid start: read more */
	SBX_SNI_NONE = 2,      /* complete, but no name (a hello without server_name) */
	SBX_SNI_ECH = 3,       /* Encrypted ClientHello: the outer name is not trusted */
	SBX_SNI_MALFORMED = 4, /* out->why says what */
	SBX_SNI_TOO_LONG = 5,  /* not decided within SBX_SNI_MAX bytes */
	SBX_SNI_NOT_TLS = 6,   /* the first byte is not a TLS handshake record */
};

struct sbx__sni {
	char name[SBX_NAME_BUF]; /* canonical: lower case, no trailing dot */
	const char *why;	 /* a static reason for every answer but FOUND and MORE */
	/* HTTP only: */
	uint16_t port;	    /* the Host's port, 0 when it names none */
	size_t head_len;    /* bytes of the request line and headers with the blank line */
	long long body_len; /* Content-Length, 0 when none, -1 when chunked */
};

/*
 * Reads a TLS ClientHello from the first n bytes of a stream: one or more
 * handshake records (a hello may be split across records, and records
 * across reads). The answer is the server name (a host_name that is a valid
 * host name: sbx__names_canon), NONE, ECH (extension 0xfe0d, or the older
 * encrypted_server_name 0xffce, whatever the outer name says), MORE,
 * TOO_LONG, NOT_TLS, or MALFORMED for anything a conforming client does not
 * send (lengths that disagree, a duplicated extension, two host names, a
 * server name that is not a host name, trailing bytes, a record of another
 * type before the hello ends). Never reads past p[n - 1].
 */
int sbx__sni_tls(const uint8_t *p, size_t n, struct sbx__sni *out);

/*
 * Reads the head of the first HTTP/1.0 or HTTP/1.1 request of a stream:
 * the Host header's name and port, checked against an absolute-form target
 * ("http://host[:port]/..."), which must agree with it. Refused
 * (MALFORMED): a duplicate Host, a Host that differs from the target's
 * host, userinfo, CONNECT and other targets that are not origin-, absolute-
 * or asterisk-form, a scheme other than http, header folding, whitespace
 * before a colon, bare CR or LF, a NUL, a duplicate or non-decimal
 * Content-Length, and Content-Length with Transfer-Encoding; NONE: an
 * HTTP/1.0 request naming no host (HTTP/1.1 without Host is MALFORMED).
 * MORE until the blank line ending the head; TOO_LONG past SBX_SNI_MAX.
 */
int sbx__sni_http(const uint8_t *p, size_t n, struct sbx__sni *out);

/*
 * Whether the first bytes a TLS server sends, p[0..n), open with a
 * HelloRetryRequest (RFC 8446 4.1.3: a ServerHello whose random is the
 * fixed value of a retry): 1 it does, 0 it does not, -1 too few bytes to
 * tell (SBX_TLS_HRR_LEN are enough). After a retry the client sends a
 * second ClientHello, which could present another name: the name checker
 * ends such a connection rather than let a second hello by unchecked.
 */
#define SBX_TLS_HRR_LEN 43
int sbx__tls_is_hrr(const uint8_t *p, size_t n);

/* The name of an answer, for messages and the audit ("found", "ech", ...). */
const char *sbx__sni_result_name(int rc);

#endif
