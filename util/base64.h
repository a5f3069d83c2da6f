/*
 * util/base64.h: base64 (RFC 4648 section 4, and the URL-safe alphabet of
 * section 5 when asked) and the value of a hex digit (section 8's base16).
 *
 * Written here because none of the project's libraries exposes it: jansson
 * has no base64, and libcurl keeps its own encoder private. One copy serves
 * envd's protojson bytes (remote/e2b, server/), gRPC's "-bin" headers
 * and JWT claims (remote/modal) and the redactor's encoded forms; the hex
 * digit reader serves percent-decoding and traceparent (core/trace.c).
 *
 * The encoder writes the standard alphabet, padded. The decoder is strict
 * by default (standard alphabet, padding required) and is loosened only as
 * far as a caller's peer needs, by flags: SBX__BASE64_URL also takes the
 * URL-safe '-' and '_' (protojson readers take either alphabet), and
 * SBX__BASE64_NOPAD lets the padding be left off (gRPC sends "-bin" values
 * unpadded; JWTs are never padded). Whatever the flags, it refuses any
 * other byte (whitespace and NUL included), padding anywhere but at the
 * end, padding that does not complete the last group of four, and a length
 * that leaves one character in the last group. Like Go's default decoder
 * (which protojson uses), it does not require the unused low bits of the
 * last character to be zero.
 */
#ifndef SBX_UTIL_BASE64_H
#define SBX_UTIL_BASE64_H

#include <stddef.h>

enum {
	SBX__BASE64_URL = 1u << 0,   /* also accept '-' for '+' and '_' for '/' */
	SBX__BASE64_NOPAD = 1u << 1, /* padding optional (when present, it must be right) */
};

/* The length of the padded encoding of n bytes, without the NUL:
 * 4 * ceil(n / 3). */
size_t sbx__base64_encoded_len(size_t n);
/* Encodes src[0..n) into dst, which holds sbx__base64_encoded_len(n) + 1
 * bytes: standard alphabet, padded, NUL-terminated. Returns the length
 * written without the NUL. */
size_t sbx__base64_encode(char *dst, const void *src, size_t n);
/* The most bytes that n characters of base64 decode to: floor(3 * n / 4).
 * Room enough for sbx__base64_decode() whatever src holds. */
size_t sbx__base64_decoded_max(size_t n);
/*
 * Decodes src[0..n) into dst (sbx__base64_decoded_max(n) bytes of room),
 * with the contract above and flags from SBX__BASE64_*. Returns 0 with the
 * decoded length in *out_len, or -1 for malformed input, in which case dst
 * has been wiped of anything decoded and *out_len is untouched.
 */
int sbx__base64_decode(void *dst, size_t *out_len, const char *src, size_t n, unsigned flags);

/* The value of a hex digit (0-9, a-f, A-F), or -1 for any other byte. */
int sbx__hexval(int ch);

#endif
