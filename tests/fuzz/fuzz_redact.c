/*
 * tests/fuzz/fuzz_redact.c: differential libFuzzer target for the streaming
 * redactor (util/redact-stream.c over util/redact.c and its encoded forms,
 * util/redact-forms.c), which every run's output passes through.
 *
 * The input registers one to three secret values, then chooses where the
 * stream is cut; the rest is the output of a run. The same output fed
 * whole and fed cut at those points must be redacted to identical bytes
 * (a secret split across reads is caught the same as a whole one). And a
 * value with none of the marker's characters never survives whole in what
 * is given out (with its characters excluded, a surviving copy cannot be
 * made of a marker and kept bytes).
 *
 * Input: [k] then k times [len][len bytes] (k % 3 + 1 values, len % 24 + 1
 * bytes each), [c] then c % 16 cut lengths (one byte each, 0 meaning 1),
 * then the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/redact-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int emit(void *arg, const char *p, size_t n)
{
	if (sbx__buf_append(arg, p, n) < 0)
		abort();
	return 0;
}

static int free_of_marker(const uint8_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] && strchr(SBX_REDACTED, v[i]))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__redact_stream whole = {0}, cut = {0};
	struct sbx__buf a = {0}, b = {0};
	const uint8_t *val[3];
	size_t vlen[3], nv, off = 0, ncut, cuts[16];
	int id[3];

	if (size < 1)
		return 0;
	nv = data[off++] % 3 + 1;
	for (size_t i = 0; i < nv; i++) {
		if (off >= size)
			return 0;
		vlen[i] = data[off++] % 24 + 1;
		if (size - off < vlen[i])
			return 0;
		val[i] = data + off;
		off += vlen[i];
	}
	if (off >= size)
		return 0;
	ncut = data[off++] % 16;
	if (size - off < ncut)
		return 0;
	for (size_t i = 0; i < ncut; i++)
		cuts[i] = data[off++];
	for (size_t i = 0; i < nv; i++)
		if ((id[i] = sbx__redact_register(val[i], vlen[i])) <= 0)
			abort();

	if (sbx__redact_stream_feed(&whole, data + off, size - off, emit, &a) != 0 ||
	    sbx__redact_stream_flush(&whole, emit, &a) != 0)
		abort();
	for (size_t p = off, i = 0; p < size; i++) {
		size_t n = ncut ? cuts[i % ncut] : size - p;

		if (n == 0)
			n = 1;
		if (n > size - p)
			n = size - p;
		if (sbx__redact_stream_feed(&cut, data + p, n, emit, &b) != 0)
			abort();
		p += n;
	}
	if (sbx__redact_stream_flush(&cut, emit, &b) != 0)
		abort();
	if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0))
		abort(); /* whole and cut differ */
	for (size_t i = 0; i < nv; i++)
		if (free_of_marker(val[i], vlen[i]) && a.len >= vlen[i] &&
		    memmem(a.data, a.len, val[i], vlen[i]))
			abort(); /* a value given out */

	sbx__redact_stream_done(&whole);
	sbx__redact_stream_done(&cut);
	sbx__buf_clear(&a);
	sbx__buf_clear(&b);
	for (size_t i = 0; i < nv; i++)
		sbx__redact_unregister(id[i]);
	return 0;
}
