/*
 * tests/fuzz/fuzz_sni.c: libFuzzer target for the readers of the name a
 * client presents at the start of a TCP stream (netpolicy/sni.c): the TLS
 * ClientHello's server name and the HTTP/1.x request's Host, and through
 * them the name matcher (netpolicy/names.c).
 *
 * Byte 0 chooses the reader (bit 0: TLS or HTTP); byte 1 how the stream is
 * cut into reads (a reader is called on each growing prefix, as a checker
 * reading a socket would); the rest is the stream. Invariants checked
 * besides the sanitizers': once an answer is not MORE it stays the same,
 * with the same name, on every longer prefix; a found name is canonical
 * (sbx__names_canon gives it back unchanged) and matches itself and no
 * wildcard over itself; every refusal says why; an HTTP head length is
 * within what was read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy/names-int.h"
#include "netpolicy/sni-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct sbx__sni *o, int rc, size_t n, int http)
{
	char canon[SBX_NAME_BUF], wild[SBX_NAME_BUF + 2];

	if (rc < SBX_SNI_FOUND || rc > SBX_SNI_NOT_TLS || (http && rc == SBX_SNI_NOT_TLS))
		abort();
	if (rc == SBX_SNI_FOUND) {
		size_t l = strlen(o->name);

		if (l == 0 || sbx__names_canon(canon, o->name, l) != 0 ||
		    strcmp(canon, o->name) != 0 || !sbx__names_match(o->name, o->name, l))
			abort();
		memcpy(wild, "*.", 2);
		memcpy(wild + 2, o->name, l + 1);
		if (sbx__names_match(wild, o->name, l))
			abort(); /* a wildcard never matches its own apex */
		if (http && (o->head_len == 0 || o->head_len > n))
			abort();
	} else {
		if (o->name[0])
			abort();
		if (rc != SBX_SNI_MORE && !o->why)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__sni *o, *last;
	int http, rc = SBX_SNI_MORE, final = -1;
	size_t step, n;

	if (size < 2)
		return 0;
	http = data[0] & 1;
	step = (size_t)data[1] + 1;
	data += 2;
	size -= 2;
	o = malloc(sizeof(*o));
	last = malloc(sizeof(*last));
	if (!o || !last)
		abort();
	/* The server's side: once told, more bytes never change the answer. */
	{
		int told = -1;

		for (n = 0; n <= size && n <= SBX_TLS_HRR_LEN; n++) {
			int h = sbx__tls_is_hrr(data, n);

			if (h < -1 || h > 1 || (told >= 0 && h != told))
				abort();
			if (h >= 0)
				told = h;
		}
	}
	for (n = size < step ? size : step;; n = n + step < size ? n + step : size) {
		rc = http ? sbx__sni_http(data, n, o) : sbx__sni_tls(data, n, o);
		check(o, rc, n, http);
		if (final >= 0 && (rc != final || strcmp(o->name, last->name) != 0))
			abort(); /* a final answer changed with more bytes */
		if (final < 0 && rc != SBX_SNI_MORE) {
			final = rc;
			*last = *o;
		}
		if (n == size)
			break;
	}
	free(o);
	free(last);
	return 0;
}
