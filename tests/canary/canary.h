/*
 * tests/canary/canary.h: canary hosts for egress contract tests, usable from
 * the tests of any backend.
 *
 * canary_start() brings up N canary hosts, each in a network namespace of
 * its own, joined to the host's root namespace by a veth, with an IPv4
 * address in 198.18.0.0/15 and an IPv6 address in 2001:db8::/32. Each
 * serves TCP (a minimal HTTP 200 responder on 80 and 8080), UDP echo (7),
 * DNS (UDP 53, a fixed A/AAAA answer: the canary's own address) and ICMP
 * (the kernel answers echo), and records every arrival in memory shared with
 * the test: connections, datagrams, echo requests, DNS queries, and every
 * unicast IP packet at all (CANARY_ANY), so "denied" is the canary's own
 * record of zero arrivals, not only the client's error.
 *
 * Safety: nothing here sends a packet anywhere; the canaries only answer,
 * and only on their own link (they have no default route). canary_start()
 * checks that the host routes each canary address to the canary's own veth
 * before it returns. Everything is removed by canary_stop(), at exit, and
 * by the next canary_start() after a crash (slots are held by flock).
 */
#ifndef SBX_TESTS_CANARY_H
#define SBX_TESTS_CANARY_H

#include <stdint.h>

#define CANARY_MAX 8
#define CANARY_DNS_KEEP 16

enum canary_proto {
	CANARY_TCP = 0,	 /* TCP connections accepted (ports 80, 8080) */
	CANARY_UDP = 1,	 /* UDP datagrams received on the echo port (7) */
	CANARY_ICMP = 2, /* ICMP and ICMPv6 echo requests */
	CANARY_DNS = 3,	 /* DNS queries received (UDP 53) */
	CANARY_ANY = 4,	 /* every unicast IPv4/IPv6 packet of TCP, UDP or ICMP echo */
	CANARY_PROTO_MAX = 5
};

#define CANARY_HTTPS_PORT 443
/* HTTPS that accepts only the P-256 group: a client whose first hello
 * offers another key share gets a HelloRetryRequest. */
#define CANARY_HTTPS_RETRY_PORT 8443
#define CANARY_HTTP_PORT 80
#define CANARY_HTTP_PORT2 8080
#define CANARY_ECHO_PORT 7
#define CANARY_DNS_PORT 53

struct canary {
	char name[64];	  /* "c0.<slot>.canary.test": its DNS name in canary_write_hosts() */
	char addr4[16];	  /* the canary's IPv4 address */
	char addr6[48];	  /* the canary's IPv6 address */
	char prefix4[20]; /* its IPv4 link prefix, "198.18.X.0/24" */
	char prefix6[48]; /* its IPv6 link prefix, ".../64" */
	char netns[32];	  /* the network namespace's name (ip netns) */
	char link[16];	  /* the host side of its veth */
};

struct canary_set;

/* 1 when the harness can run (root); tests skip otherwise. */
int canary_supported(void);

/* Starts n (1..CANARY_MAX) canaries. Returns 0, or -1 with a message on stderr
 * (everything created is removed again). */
int canary_start(struct canary_set **out, int n);

/* Removes every namespace, link and process of the set. NULL is a no-op. */
void canary_stop(struct canary_set *s);

int canary_count(const struct canary_set *s);
const struct canary *canary_get(const struct canary_set *s, int i);

/* What canary i recorded so far. */
unsigned canary_arrivals(const struct canary_set *s, int i, enum canary_proto proto);
/* CANARY_ANY summed over every canary of the set. */
unsigned canary_arrivals_all(const struct canary_set *s);
/* The k-th DNS query name canary i received (k < CANARY_DNS_KEEP), or NULL. */
const char *canary_dns_query(const struct canary_set *s, int i, unsigned k);

/* Writes a hosts-format file naming every canary (IPv4 and IPv6 lines), plus
 * the extra lines given (NULL: none). Returns 0 or -1. */
int canary_write_hosts(const struct canary_set *s, const char *path, const char *extra);

/*
 * HTTPS: canaries started after this call also serve TLS on
 * CANARY_HTTPS_PORT with this certificate chain and key (PEM files the test
 * made; NULL: no HTTPS), answering "canary-tls NAME SNI". Every canary
 * records the names it is asked for: "sni:NAME" for a TLS server name,
 * "host:NAME" for an HTTP Host (on 80, 8080 and inside TLS).
 */
void canary_tls_files(const char *cert, const char *key);
/* HTTPS answers a GET of a file under dir with that file ("/a/" is
 * a/index.html; text/html for .html), and anything else as before. Set
 * before canary_start(); NULL: none. */
void canary_tls_docroot(const char *dir);
/* How many times canary i recorded `what` ("sni:NAME", "host:NAME"). */
unsigned canary_name_arrivals(const struct canary_set *s, int i, const char *what);

/* Waits up to ms for canary i's count of proto to reach at least want. */
unsigned
canary_wait(const struct canary_set *s, int i, enum canary_proto proto, unsigned want, int ms);

/* ===== A listener on the host's loopback ===== */

struct canary_loopback;

/* Listens on 127.0.0.1:PORT and [::1]:PORT (TCP and UDP, one port chosen by
 * the kernel) in the host's root namespace and records every arrival. */
int canary_loopback_start(struct canary_loopback **out);
uint16_t canary_loopback_port(const struct canary_loopback *l);
/* CANARY_TCP, CANARY_UDP or CANARY_ANY (both). */
unsigned canary_loopback_arrivals(const struct canary_loopback *l, enum canary_proto proto);
void canary_loopback_stop(struct canary_loopback *l);

/* Runs a program (no shell) and returns its exit status, or -1. Output is
 * discarded unless out is given (then stdout goes there, NUL-terminated). */
int canary_spawn(const char *const argv[], char *out, size_t out_len);

#endif
