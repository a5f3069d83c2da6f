/*
 * server/sign.c: what the E2B-compatible server reads of an upload or a
 * download beyond its route: the signature of a signed /files URL, and a
 * gzip request body.
 *
 * A signed URL (the SDKs' uploadUrl and downloadUrl of a secure sandbox)
 * carries "signature" = "v1_" + base64(SHA-256 of
 * "<path>:<read|write>:<user>:<envd access token>[:<expiration>]") with the
 * padding removed, and "signature_expiration" (unix seconds) when it
 * expires, as envd checks it: the key is the sandbox's own access token,
 * never the API key, so a URL signed for one sandbox opens nothing of
 * another. SHA-256 is OpenSSL's (libcrypto); the comparison is in constant
 * time. A URL signed over no path is refused: envd would take the file's
 * path from the upload's form, so such a URL would write any file.
 *
 * A gzip body (Content-Encoding: gzip, the SDKs' gzip uploads) is inflated
 * by zlib into memory up to a bound given by the caller: a body that would
 * inflate past it is refused there, so a small bomb costs no more than the
 * bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "server/server-int.h"
#include "util/base64.h"

int sbxs_signature_check(const char *path,
			 const char *op,
			 const char *user,
			 const char *token,
			 const char *sig,
			 const char *exp,
			 int64_t now_s,
			 char *err,
			 size_t esize)
{
	unsigned char md[32];
	char want[3 + 48], *raw = NULL;
	unsigned int mdlen = 0;
	size_t wl, gl;
	unsigned char d = 0;
	int n;

	if (!sig || strncmp(sig, "v1_", 3) != 0) {
		snprintf(err, esize, "invalid signature: expected a v1_ signature");
		return -1;
	}
	if (!*path) {
		/* Signed over an empty path, an upload's form would name any file. */
		snprintf(err, esize,
			 "a signed URL must name its file in path (uploadUrl(path)): one signed "
			 "without a path is refused");
		return -1;
	}
	if (exp) {
		char *end;
		long long v = strtoll(exp, &end, 10);

		if (!*exp || *end || v <= 0) {
			snprintf(err, esize, "invalid signature_expiration '%.32s'", exp);
			return -1;
		}
		if (v < now_s) {
			snprintf(err, esize, "signature is already expired");
			return -1;
		}
		n = asprintf(&raw, "%s:%s:%s:%s:%s", path, op, user, token, exp);
	} else {
		n = asprintf(&raw, "%s:%s:%s:%s", path, op, user, token);
	}
	if (n < 0) {
		snprintf(err, esize, "out of memory");
		return -1;
	}
	if (!EVP_Digest(raw, (size_t)n, md, &mdlen, EVP_sha256(), NULL) || mdlen != sizeof(md)) {
		explicit_bzero(raw, (size_t)n);
		free(raw);
		snprintf(err, esize, "cannot compute the signature");
		return -1;
	}
	explicit_bzero(raw, (size_t)n);
	free(raw);
	memcpy(want, "v1_", 3);
	wl = 3 + sbx__base64_encode(want + 3, md, sizeof(md));
	while (wl > 3 && want[wl - 1] == '=')
		wl--;
	gl = strlen(sig);
	for (size_t k = 0; k < wl; k++)
		d |= (unsigned char)(want[k] ^ (k < gl ? sig[k] : 0));
	if (gl != wl || d) {
		snprintf(err, esize, "invalid signature");
		return -1;
	}
	return 0;
}

int sbxs_gunzip(const char *in, size_t len, size_t max, char **out, size_t *out_len)
{
	z_stream z;
	char *buf = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*out_len = 0;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) /* gzip wrapping only */
		return -1;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
	for (;;) {
		if (z.total_out == cap) {
			size_t grow = cap ? cap : 64u << 10;
			char *nb;

			if (cap >= max + 1) {
				rc = -2; /* past the bound */
				break;
			}
			if (cap + grow > max + 1)
				grow = max + 1 - cap;
			nb = realloc(buf, cap + grow + 1);
			if (!nb) {
				rc = -3;
				break;
			}
			buf = nb;
			cap += grow;
		}
		z.next_out = (Bytef *)buf + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			/* Anything after the one member is refused, not ignored. */
			rc = z.avail_in == 0 ? 0 : -1;
			break;
		}
		if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_out == 0)) {
			rc = -1;
			break;
		}
		if (z.avail_in == 0 && z.avail_out != 0) {
			rc = -1; /* truncated */
			break;
		}
	}
	if (rc == 0 && z.total_out > max)
		rc = -2;
	*out_len = z.total_out;
	inflateEnd(&z);
	if (rc != 0) {
		free(buf);
		*out_len = 0;
		return rc;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -3;
	}
	buf[*out_len] = '\0';
	*out = buf;
	return 0;
}
