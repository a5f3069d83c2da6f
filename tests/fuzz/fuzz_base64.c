/*
 * tests/fuzz/fuzz_base64.c: libFuzzer target for util/base64.c, the codec of
 * envd's protojson bytes, gRPC's "-bin" headers, JWT claims and the
 * redactor's forms.
 *
 * Properties checked besides the sanitizers':
 *  - round trip: decode(encode(x)) == x under every flag combination, and
 *    the encoding has the advertised length;
 *  - the input taken as base64 text, copied into a buffer of exactly its
 *    length and decoded into exactly sbx__base64_decoded_max() bytes (so
 *    ASan sees any read past the input or write past the room), under the
 *    flags the first byte chooses: a success decodes to no more than the
 *    room, re-encodes to text that decodes to the same bytes, and under
 *    the strict default the text is whole groups of four of the standard
 *    alphabet; a failure leaves *out_len untouched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const uint8_t *data, size_t size)
{
	size_t elen = sbx__base64_encoded_len(size);
	char *enc = malloc(elen + 1);
	unsigned char *dec = malloc(sbx__base64_decoded_max(elen) + 1);

	if (!enc || !dec)
		abort();
	if (elen != (size + 2) / 3 * 4 || sbx__base64_encode(enc, data, size) != elen ||
	    enc[elen] != '\0')
		abort();
	for (unsigned flags = 0; flags < 4; flags++) {
		size_t dlen = (size_t)-1;

		if (sbx__base64_decode(dec, &dlen, enc, elen, flags) != 0 || dlen != size ||
		    (size && memcmp(dec, data, size) != 0))
			abort();
	}
	/* Unpadded, as gRPC and JWTs send it. */
	while (elen && enc[elen - 1] == '=')
		elen--;
	{
		size_t dlen = (size_t)-1;

		if (sbx__base64_decode(dec, &dlen, enc, elen, SBX__BASE64_NOPAD) != 0 ||
		    dlen != size || (size && memcmp(dec, data, size) != 0))
			abort();
		if (elen % 4 && sbx__base64_decode(dec, &dlen, enc, elen, 0) == 0)
			abort(); /* strict: padding is required */
	}
	free(enc);
	free(dec);
}

static void decode_text(const uint8_t *data, size_t size)
{
	unsigned flags = data[0] & 3;
	size_t n = size - 1, max = sbx__base64_decoded_max(n), dlen = (size_t)-7;
	char *src = malloc(n ? n : 1);
	unsigned char *dst = malloc(max ? max : 1);

	if (!src || !dst)
		abort();
	memcpy(src, data + 1, n);
	if (sbx__base64_decode(dst, &dlen, src, n, flags) == 0) {
		size_t elen = sbx__base64_encoded_len(dlen), d2len = 0;
		char *enc = malloc(elen + 1);
		unsigned char *d2 = malloc(dlen + 1);

		if (!enc || !d2 || dlen > max)
			abort();
		if (!flags && n % 4)
			abort();
		for (size_t i = 0; !flags && i < n; i++)
			if (src[i] == '-' || src[i] == '_')
				abort();
		sbx__base64_encode(enc, dst, dlen);
		if (sbx__base64_decode(d2, &d2len, enc, elen, 0) != 0 || d2len != dlen ||
		    (dlen && memcmp(d2, dst, dlen) != 0))
			abort();
		free(enc);
		free(d2);
	} else if (dlen != (size_t)-7) {
		abort();
	}
	free(src);
	free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	round_trip(data, size);
	if (size)
		decode_text(data, size);
	return 0;
}
