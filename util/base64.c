/*
 * util/base64.c: base64 and hex digits (util/base64.h says the contract and
 * why the project has its own).
 *
 * The decoder checks the shape of the whole input (its length and its
 * padding) before it writes a byte, then decodes character by character
 * and refuses the first one outside the alphabet; a refusal wipes what was
 * written, since the bytes may be a secret's.
 */
#include <stdint.h>
#include <string.h>

#include "util/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t sbx__base64_encoded_len(size_t n)
{
	return n / 3 * 4 + (n % 3 ? 4 : 0);
}

size_t sbx__base64_encode(char *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	size_t o = 0, i = 0;

	for (; n - i >= 3; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		dst[o++] = alphabet[v >> 18];
		dst[o++] = alphabet[v >> 12 & 63];
		dst[o++] = alphabet[v >> 6 & 63];
		dst[o++] = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (n - i > 1 ? (uint32_t)s[i + 1] << 8 : 0);

		dst[o++] = alphabet[v >> 18];
		dst[o++] = alphabet[v >> 12 & 63];
		dst[o++] = n - i > 1 ? alphabet[v >> 6 & 63] : '=';
		dst[o++] = '=';
	}
	dst[o] = '\0';
	return o;
}

size_t sbx__base64_decoded_max(size_t n)
{
	return n / 4 * 3 + n % 4 * 3 / 4;
}

static int value(unsigned char c, unsigned flags)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || (c == '-' && (flags & SBX__BASE64_URL)))
		return 62;
	if (c == '/' || (c == '_' && (flags & SBX__BASE64_URL)))
		return 63;
	return -1;
}

int sbx__base64_decode(void *dst, size_t *out_len, const char *src, size_t n, unsigned flags)
{
	unsigned char *d = dst;
	size_t len = n, pad = 0, o = 0;
	uint32_t acc = 0;
	int bits = 0;

	/* At most two '=' end a padded input, and they complete its last
	 * group of four; any other '=' is refused below as a bad character. */
	while (len && pad < 2 && src[len - 1] == '=') {
		len--;
		pad++;
	}
	if (len % 4 == 1 || (pad && n % 4) || (!pad && len % 4 && !(flags & SBX__BASE64_NOPAD)))
		return -1;
	for (size_t i = 0; i < len; i++) {
		int v = value((unsigned char)src[i], flags);

		if (v < 0) {
			explicit_bzero(d, o);
			return -1;
		}
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			d[o++] = (unsigned char)(acc >> bits);
		}
	}
	*out_len = o;
	return 0;
}

int sbx__hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}
