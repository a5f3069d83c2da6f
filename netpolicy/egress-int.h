/*
 * netpolicy/egress-int.h: the decisions of the name checker (sbx-egress,
 * cli/egress/): what it is given for each name entry, and whether the first
 * bytes of a connection (or of the next request on a plain HTTP one) may go
 * to the address the sandbox named. Pure functions, no I/O.
 */
#ifndef SBX_NETPOLICY_EGRESS_INT_H
#define SBX_NETPOLICY_EGRESS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "netpolicy/names-int.h"

/* One address pinned for a name entry: "NAME/PORT/ADDRESS" on the
 * checker's command line (PORT 0: every port). */
struct sbx__egress_entry {
	char name[SBX_NAME_BUF];
	uint16_t port;
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

/* Parses one "NAME/PORT/ADDRESS"; 0, or -1 with *why set. */
int sbx__egress_entry_parse(struct sbx__egress_entry *e, const char *arg, const char **why);

enum {
	SBX_EGRESS_MORE = 0,   /* read more bytes, then ask again */
	SBX_EGRESS_ALLOW = 1,  /* relay; for HTTP, head_len + body_len bytes of this request */
	SBX_EGRESS_REFUSE = 2, /* reset the connection; reason says why */
};

#define SBX_EGRESS_AUTO 0 /* the first bytes of a stream: TLS or HTTP */
#define SBX_EGRESS_HTTP 1 /* the next request on a plain HTTP connection */

struct sbx__egress_verdict {
	int verdict;
	const char *reason;	     /* REFUSE: no-sni, no-host, ech, name, address, malformed,
			       too-long, chunked */
	int http;		     /* the bytes are plain HTTP */
	char name[SBX_NAME_BUF];     /* the name presented (canonical), "" when none */
	size_t head_len;	     /* HTTP ALLOW: the request head's bytes */
	unsigned long long body_len; /* HTTP ALLOW: its body's (Content-Length) */
};

/*
 * Decides on the first n bytes of a stream (mode AUTO) or of the next
 * request on a plain HTTP connection already allowed (mode HTTP), sent to
 * family/addr/port, against the entries v[0..nv): the name presented (TLS
 * server name, HTTP Host) must match an entry's name (sbx__names_match),
 * with the entry's port 0 or port, and addr must be one of the addresses
 * pinned for it. Refused: no name, Encrypted ClientHello, anything
 * malformed, nothing decided within SBX_SNI_MAX bytes, an HTTP Host whose
 * port is not the connection's, and a chunked request body (its end is not
 * followed, so the next request could not be checked).
 */
void sbx__egress_decide(const struct sbx__egress_entry *v,
			size_t nv,
			int mode,
			int family,
			const uint8_t addr[16],
			uint16_t port,
			const uint8_t *p,
			size_t n,
			struct sbx__egress_verdict *out);

#endif
