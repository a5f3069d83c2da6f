/*
 * util/error-int.h: recording errors inside the library.
 *
 *	return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "create: HTTP %ld", st);
 *
 * records the message in the calling thread's record and returns the code.
 * Messages pass through the redactor before they are stored (the one place
 * where records are closed), so no rendering of an error sees a secret.
 */
#ifndef SBX_UTIL_ERROR_INT_H
#define SBX_UTIL_ERROR_INT_H

#include <stddef.h>

#include <sandboxio/errors.h>

#define SBX_ERROR_MSG_MAX 1024

int sbx__error_set(int code, sbx_error_class klass, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* As sbx__error_set, with errno e recorded and its text appended. */
int sbx__error_os(int code, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets the HTTP status of the current record. */
void sbx__error_http(long status);
/* Prefixes the current record's message with "what: " and returns its code. */
int sbx__error_wrap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Bytes from outside the host (a sandbox's init's stderr) for a message:
 * the n bytes of src up to its first NUL, the secrets of the current
 * redaction scope redacted in them first (so a secret outside ASCII is still
 * found), then every byte outside printable ASCII, and '\\', written as
 * \xNN, so no control sequence or line of the sandbox's reaches a terminal
 * or log that shows the message. Written into dst (cap bytes, NUL-ended,
 * never a cut escape); returns its length.
 */
size_t sbx__error_quote(char *dst, size_t cap, const void *src, size_t n);
/* The current record's code. */
int sbx__error_code(void);
void sbx__error_clear(void);

/*
 * Keeping the first error while cleaning up: save the record, run the
 * cleanup (whose own failures overwrite it), then record the saved one
 * again. Restoring sets the code given, the saved class and message; the
 * HTTP status is the caller's to put back (sbx__error_http()) where it
 * should survive.
 */
struct sbx__error_saved {
	int code;
	sbx_error_class klass;
	long http_status;
	char message[SBX_ERROR_MSG_MAX];
};
void sbx__error_save(struct sbx__error_saved *s);
/* Returns code. */
int sbx__error_restore(const struct sbx__error_saved *s, int code);

#endif
