/*
 * tests/fuzz/fuzz_egress.c: libFuzzer target for what the name checker
 * (sbx-egress, cli/egress/) reads from outside: its command line entries
 * (netpolicy/egress-decide.c, sbx__egress_entry_parse) and, through
 * sbx__egress_decide, a whole client stream followed as the checker follows
 * it: the first bytes (TLS or HTTP), then on a plain HTTP connection each
 * next request after the head and body the last one allowed.
 *
 * The input's first line is one NAME/PORT/ADDRESS entry; byte 0 of the
 * rest chooses how the stream is cut into reads; the rest is the stream.
 * Invariants besides the sanitizers': an entry that parses has a canonical
 * name and prints back to itself; a final answer (not MORE) never changes
 * with more bytes; an allowed request names an entry's name, on the
 * entry's port, at its address, and an HTTP head lies within what was read;
 * every refusal says why.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netpolicy/egress-int.h"
#include "netpolicy/sni-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PORT 443

static void check_entry(const char *arg)
{
	struct sbx__egress_entry e, back;
	char addr[INET6_ADDRSTRLEN], again[400], canon[SBX_NAME_BUF];
	const char *why = NULL;

	if (sbx__egress_entry_parse(&e, arg, &why) != 0) {
		if (!why)
			abort();
		return;
	}
	if (sbx__names_canon(canon, e.name, strlen(e.name)) != 0 || strcmp(canon, e.name) != 0)
		abort();
	if (!inet_ntop(e.family, e.addr, addr, sizeof(addr)))
		abort();
	snprintf(again, sizeof(again), "%s/%u/%s", e.name, e.port, addr);
	if (sbx__egress_entry_parse(&back, again, &why) != 0 || memcmp(&back, &e, sizeof(e)) != 0)
		abort();
}

static void check_allowed(const struct sbx__egress_entry *v,
			  size_t nv,
			  const struct sbx__egress_verdict *o,
			  size_t n)
{
	int ok = 0;

	for (size_t i = 0; i < nv; i++)
		ok |= sbx__names_match(v[i].name, o->name, strlen(o->name)) &&
		      (!v[i].port || v[i].port == PORT) && v[i].family == AF_INET &&
		      memcmp(v[i].addr, "\xc6\x12\x00\x05", 4) == 0;
	if (!ok || (o->http && (o->head_len == 0 || o->head_len > n)))
		abort();
}

/* Decides on every growing prefix of p[0..n), cut every step bytes; the
 * final answer is the first one that is not MORE. */
static void decide_stream(const struct sbx__egress_entry *v,
			  size_t nv,
			  int mode,
			  const uint8_t *p,
			  size_t n,
			  size_t step,
			  struct sbx__egress_verdict *final)
{
	static const uint8_t addr[16] = {198, 18, 0, 5};
	struct sbx__egress_verdict o;
	int decided = 0;

	memset(final, 0, sizeof(*final));
	for (size_t k = n < step ? n : step;; k = k + step < n ? k + step : n) {
		sbx__egress_decide(v, nv, mode, AF_INET, addr, PORT, p, k, &o);
		if (o.verdict == SBX_EGRESS_REFUSE && !o.reason)
			abort();
		if (o.verdict == SBX_EGRESS_ALLOW)
			check_allowed(v, nv, &o, k);
		if (decided && (o.verdict != final->verdict || strcmp(o.name, final->name) != 0 ||
				o.head_len != final->head_len || o.body_len != final->body_len))
			abort(); /* a final answer changed with more bytes */
		if (!decided && o.verdict != SBX_EGRESS_MORE) {
			*final = o;
			decided = 1;
		}
		if (k == n)
			break;
	}
	if (!decided)
		*final = o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__egress_entry v[3];
	struct sbx__egress_verdict o;
	const uint8_t *nl = memchr(data, '\n', size < 400 ? size : 400);
	const char *why = NULL;
	char arg[400];
	size_t nv = 2, off, step;
	int mode = SBX_EGRESS_AUTO;

	if (sbx__egress_entry_parse(&v[0], "pkg.canary.test/443/198.18.0.5", &why) != 0 ||
	    sbx__egress_entry_parse(&v[1], "web.canary.test/0/198.18.0.5", &why) != 0)
		abort();
	if (!nl)
		return 0;
	memcpy(arg, data, (size_t)(nl - data));
	arg[nl - data] = '\0';
	check_entry(arg);
	if (sbx__egress_entry_parse(&v[2], arg, &why) == 0)
		nv = 3;
	off = (size_t)(nl - data) + 1;
	if (off >= size)
		return 0;
	step = (size_t)data[off++] + 1;
	/* The stream, followed request by request as the checker does. */
	while (off < size) {
		size_t n = size - off < SBX_SNI_MAX ? size - off : SBX_SNI_MAX;

		decide_stream(v, nv, mode, data + off, n, step, &o);
		if (o.verdict != SBX_EGRESS_ALLOW || !o.http)
			break;
		if (o.body_len > size || o.head_len + o.body_len > size - off)
			break;
		off += o.head_len + o.body_len;
		mode = SBX_EGRESS_HTTP;
	}
	return 0;
}
