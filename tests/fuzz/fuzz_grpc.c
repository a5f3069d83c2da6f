/*
 * tests/fuzz/fuzz_grpc.c: libFuzzer target for how the gRPC client
 * (remote/modal/grpc.c) reads a response: the status line and headers
 * (on_header()), the length-prefixed framing of the body (on_body()), the
 * trailers (grpc-status, the percent-encoded grpc-message, and
 * grpc-status-details-bin: base64 of an RPCStatus, protobuf, with its
 * RPCRetryPolicy) and the verdict on the whole (outcome()).
 *
 * grpc.c is included so that its static readers are reached without
 * changing it; libcurl delivers what the server sent to the same callbacks,
 * and here they are called directly, with no connection.
 *
 * Input: [flags] (bit 0: unary, bits 1-3: body read size, bit 4: a small
 * max_msg), then header lines up to an empty line, a 4-byte big-endian
 * body length and the body, then trailer lines. Invariants besides the
 * sanitizers': every message handed over has its declared length, within
 * max_msg; a unary call's success carries exactly one; the verdict's
 * message is a NUL-terminated string within its field.
 */
#include "remote/modal/grpc.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct got {
	size_t max;
	unsigned long n;
};

static int on_msg(void *arg, const uint8_t *msg, size_t len)
{
	struct got *g = arg;

	if (len > g->max || (len && !msg))
		abort();
	g->n++;
	return 0;
}

/* Hands each line of p[0..n) to on_header as libcurl does (with its CRLF). */
static void lines(struct sbx__grpc_call *c, const uint8_t *p, size_t n)
{
	while (n) {
		const uint8_t *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) + 1 : n;
		char *line = malloc(len + 1);

		if (!line)
			abort();
		memcpy(line, p, len);
		line[len] = '\0';
		if (on_header(line, 1, len, c) != len)
			abort();
		free(line);
		p += len;
		n -= len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__grpc_set set = {0};
	struct sbx__grpc_call *c;
	struct sbx__grpc_status st;
	struct got g;
	const uint8_t *p, *end = data + size, *eoh;
	size_t chunk, blen;
	int rc;

	if (size < 1)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->set = &set;
	c->unary = data[0] & 1;
	chunk = ((size_t)(data[0] >> 1 & 7) << 4) + 1;
	c->max_msg = data[0] & 0x10 ? 64 : SBX__GRPC_MAX_MSG_DEFAULT;
	snprintf(c->method, sizeof(c->method), "/modal.client.ModalClient/Fuzz");
	g.max = c->max_msg;
	g.n = 0;
	c->cb = on_msg;
	c->arg = &g;
	c->capture = "x-modal-fuzz";
	p = data + 1;
	/* Headers, up to the empty line. */
	eoh = NULL;
	for (const uint8_t *q = p; q < end; q++) {
		if (*q == '\n' && (q + 1 == end || q[1] == '\n' ||
				   (q[1] == '\r' && q + 2 < end && q[2] == '\n'))) {
			eoh = q + 1;
			break;
		}
	}
	lines(c, p, (size_t)((eoh ? eoh : end) - p));
	p = eoh ? eoh + (eoh < end && *eoh == '\r' ? 2 : 1) : end;
	if (p > end)
		p = end;
	/* The body. */
	if (end - p >= 4) {
		blen = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
		p += 4;
		if (blen > (size_t)(end - p))
			blen = (size_t)(end - p);
		for (size_t off = 0; off < blen;) {
			size_t n = blen - off < chunk ? blen - off : chunk;

			if (on_body((char *)(uintptr_t)(p + off), 1, n, c) != n)
				break; /* libcurl stops the transfer */
			off += n;
		}
		p += blen;
	}
	/* Trailers. */
	lines(c, p, (size_t)(end - p));
	c->done = 1;
	c->cc = CURLE_OK;
	rc = sbx__grpc_call_end(c, &st);
	if (memchr(st.message, '\0', sizeof(st.message)) == NULL ||
	    memchr(st.captured, '\0', sizeof(st.captured)) == NULL)
		abort();
	if (rc == 0 && (st.code != SBX__GRPC_OK || (set.calls != NULL)))
		abort();
	(void)g;
	sbx__error_clear();
	return 0;
}
