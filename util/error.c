/*
 * util/error.c: the per-thread error record (libgit2's shape: a code for
 * programs and a message for people, read with sbx_error_last()).
 *
 * Each thread has one fixed-size record, so recording an error never
 * allocates and cannot fail.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio/errors.h>

#include "util/error-int.h"
#include "util/redact-int.h"

struct error_rec {
	sbx_error pub;
	char msg[SBX_ERROR_MSG_MAX];
};

static __thread struct error_rec tl_err;

static void finish(void)
{
	sbx__redact_inplace(tl_err.msg, sizeof(tl_err.msg));
	tl_err.pub.message = tl_err.msg;
}

static void vset(int code, sbx_error_class klass, const char *fmt, va_list ap)
{
	/* Format wide, redact, then cut: a cut must not split a secret first. */
	char wide[4 * SBX_ERROR_MSG_MAX];

	tl_err.pub.code = code;
	tl_err.pub.klass = klass;
	tl_err.pub.os_errno = 0;
	tl_err.pub.http_status = 0;
	vsnprintf(wide, sizeof(wide), fmt, ap);
	sbx__redact_inplace(wide, sizeof(wide));
	snprintf(tl_err.msg, sizeof(tl_err.msg), "%s", wide);
	explicit_bzero(wide, sizeof(wide));
	finish();
}

int sbx__error_set(int code, sbx_error_class klass, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(code, klass, fmt, ap);
	va_end(ap);
	return code;
}

int sbx__error_os(int code, int e, const char *fmt, ...)
{
	va_list ap;
	char ebuf[128];
	size_t n;

	va_start(ap, fmt);
	vset(code, SBX_ERRCLASS_OS, fmt, ap);
	va_end(ap);
	tl_err.pub.os_errno = e;
	n = strlen(tl_err.msg);
	snprintf(tl_err.msg + n, sizeof(tl_err.msg) - n, ": %s", strerror_r(e, ebuf, sizeof(ebuf)));
	finish();
	return code;
}

size_t sbx__error_quote(char *dst, size_t cap, const void *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = src ? strnlen(src, n) : 0, tcap, o = 0;
	char *t;

	if (cap == 0)
		return 0;
	dst[0] = '\0';
	if (len == 0)
		return 0;
	/* Room for every byte to become the marker. */
	tcap = len * (sizeof(SBX_REDACTED) + 1) + 1;
	t = malloc(tcap);
	if (!t) {
		snprintf(dst, cap, "%s", SBX_REDACTED);
		return strlen(dst);
	}
	memcpy(t, src, len);
	t[len] = '\0';
	sbx__redact_inplace(t, tcap);
	for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
			if (o + 1 >= cap)
				break;
			dst[o++] = (char)*p;
		} else {
			if (o + 4 >= cap)
				break;
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[*p >> 4];
			dst[o++] = hex[*p & 15];
		}
	}
	dst[o] = '\0';
	explicit_bzero(t, tcap);
	free(t);
	return o;
}

void sbx__error_http(long status)
{
	tl_err.pub.http_status = status;
}

int sbx__error_wrap(const char *fmt, ...)
{
	char prefix[256], old[SBX_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, tl_err.msg, sizeof(old));
	snprintf(tl_err.msg, sizeof(tl_err.msg), "%s: %s", prefix, old);
	finish();
	return tl_err.pub.code;
}

int sbx__error_code(void)
{
	return tl_err.pub.code;
}

void sbx__error_clear(void)
{
	tl_err.pub.code = SBX_OK;
	tl_err.pub.klass = SBX_ERRCLASS_NONE;
	tl_err.pub.os_errno = 0;
	tl_err.pub.http_status = 0;
	tl_err.msg[0] = '\0';
	tl_err.pub.message = tl_err.msg;
}

const sbx_error *sbx_error_last(void)
{
	tl_err.pub.message = tl_err.msg;
	return &tl_err.pub;
}

void sbx_error_clear(void)
{
	sbx__error_clear();
}

const char *sbx_strerror(int code)
{
	switch (code) {
	case SBX_OK:
		return "success";
	case SBX_ERROR:
		return "error";
	case SBX_EINVALID:
		return "invalid argument";
	case SBX_ENOTFOUND:
		return "not found";
	case SBX_EDENIED:
		return "denied";
	case SBX_EENGINE:
		return "engine error";
	case SBX_ETIMEOUT:
		return "timed out";
	case SBX_EUNSUPPORTED:
		return "not supported by this backend";
	case SBX_EVERSION:
		return "unknown options version";
	case SBX_ENOMEM:
		return "out of memory";
	case SBX_EUNAVAILABLE:
		return "engine unavailable";
	case SBX_ECANCELED:
		return "canceled";
	case SBX_ETOOBIG:
		return "too big";
	case SBX_EPAUSED:
		return "sandbox paused";
	default:
		return "unknown error";
	}
}

void sbx__error_save(struct sbx__error_saved *s)
{
	const sbx_error *e = sbx_error_last();

	s->code = e->code;
	s->klass = e->klass;
	s->http_status = e->http_status;
	snprintf(s->message, sizeof(s->message), "%s", e->message);
}

int sbx__error_restore(const struct sbx__error_saved *s, int code)
{
	return sbx__error_set(code, s->klass, "%s", s->message);
}
