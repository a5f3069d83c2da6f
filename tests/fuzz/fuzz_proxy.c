/*
 * tests/fuzz/fuzz_proxy.c: libFuzzer target for what the proxy of a
 * sandbox's ports (server/port.c) parses of outside bytes: the head of a
 * response from a server inside the sandbox (sbxs_http_head_parse()), the
 * chunked framing of its body (sbxs_chunks_feed(), server/port-http.c),
 * and the port of a Host name or an E2b-Sandbox-Port header
 * (sbxs_port_parse()).
 *
 * The first byte chooses: 0 a head (bit 4: the answer to a HEAD); 1 a
 * chunked body fed whole, then in pieces of the sizes the next byte
 * gives, into an output of a few bytes, and both must decode alike; 2 a
 * port. Invariants besides the sanitizers': a refusal says why; a head's
 * length lies within the input and ends in CRLF CRLF; every field lies
 * inside the head, its name of token characters and its value without CR,
 * LF or NUL; a status is 100..599; the decoder writes no more than it
 * consumed and never past its output; a port is 0 or 1..65535 and is the
 * number its digits say.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/port-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
unsigned sbxs_port_parse(const char *s);

static void check_head(const char *in, size_t len, int head_req)
{
	static struct sbxs_http_head hd;
	char err[256] = "";
	long n = sbxs_http_head_parse(in, len, head_req, &hd, err, sizeof(err));

	if (n < 0) {
		if (!err[0])
			abort();
		return;
	}
	if (n == 0)
		return;
	if ((size_t)n > len || n < 4 || memcmp(in + n - 4, "\r\n\r\n", 4) != 0)
		abort();
	if (hd.status < 100 || hd.status > 599 || hd.n > SBXS_HEADERS_MAX)
		abort();
	for (size_t k = 0; k < hd.n; k++) {
		const struct sbxs_http_field *f = &hd.h[k];

		if (f->name < in || f->name + f->name_len > in + n || f->value < in ||
		    f->value + f->value_len > in + n || f->name_len == 0)
			abort();
		for (size_t j = 0; j < f->name_len; j++)
			if (f->name[j] == ':' || f->name[j] <= ' ' || f->name[j] == 0x7f)
				abort();
		for (size_t j = 0; j < f->value_len; j++)
			if (f->value[j] == '\r' || f->value[j] == '\n' || f->value[j] == 0)
				abort();
	}
	if (hd.framing == SBXS_BODY_NONE &&
	    !(head_req || hd.status < 200 || hd.status == 204 || hd.status == 304))
		abort();
}

/* Decodes in whole (step 0) or in pieces of step bytes, into out pieces of
 * outcap; returns the output length, or -1 refused; *done: the end came. */
static long decode(const char *in, size_t len, size_t step, size_t outcap, char *out, int *done)
{
	struct sbxs_chunks d;
	char err[256] = "", piece[64];
	size_t off = 0, total = 0;

	memset(&d, 0, sizeof(d));
	while (off < len && !sbxs_chunks_done(&d)) {
		size_t n = step && len - off > step ? step : len - off, got = 0;
		long used =
			sbxs_chunks_feed(&d, in + off, n, piece, outcap, &got, err, sizeof(err));

		if (used < 0) {
			if (!err[0])
				abort();
			return -1;
		}
		if ((size_t)used > n || got > outcap || got > (size_t)used)
			abort();
		if (used == 0 && got == 0 && !sbxs_chunks_done(&d))
			abort(); /* no progress */
		memcpy(out + total, piece, got);
		total += got;
		off += (size_t)used;
	}
	*done = sbxs_chunks_done(&d);
	return (long)total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data + 1;
	size_t len = size ? size - 1 : 0;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		check_head(in, len, (data[0] & 16) != 0);
		break;
	case 1: {
		char *a = malloc(len + 1), *b = malloc(len + 1);
		size_t step = len ? (unsigned char)in[0] % 7 + 1 : 1;
		int da = 0, db = 0;
		long na, nb;

		if (!a || !b)
			abort();
		na = decode(in, len, 0, 64, a, &da);
		nb = decode(in, len, step, (unsigned char)data[0] % 5 + 1, b, &db);
		/* A refusal may come later in pieces only if the whole refused too. */
		if ((na < 0) != (nb < 0) ||
		    (na >= 0 && (na != nb || da != db || memcmp(a, b, (size_t)na))))
			abort();
		free(a);
		free(b);
		break;
	}
	default: {
		char s[16];
		size_t n = len < sizeof(s) - 1 ? len : sizeof(s) - 1;
		unsigned p;

		memcpy(s, in, n);
		s[n] = '\0';
		p = sbxs_port_parse(s);
		if (p > 65535)
			abort();
		if (p) {
			char back[16];

			snprintf(back, sizeof(back), "%u", p);
			if (strcmp(back, s) != 0)
				abort();
		}
		break;
	}
	}
	return 0;
}
