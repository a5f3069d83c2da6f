/*
 * util/redact-int.h: the one redactor.
 *
 * Secret values are registered while a secret object lives; every record
 * the library closes (error messages, run results, descriptions) passes
 * through sbx__redact_* before any rendering can see it.
 */
#ifndef SBX_UTIL_REDACT_INT_H
#define SBX_UTIL_REDACT_INT_H

#include <stddef.h>

#define SBX_REDACTED "<redacted>"
/* Longest value the redactor holds (its forms are up to three times longer). */
#define SBX_REDACT_VALUE_MAX (16u * 1024u)
/* A prefix of a form that ends a record is redacted from this many bytes on. */
#define SBX_REDACT_TAIL_MIN 4
/* Derived (encoded) forms shorter than this are not searched for. */
#define SBX_REDACT_FORM_MIN 4
#define SBX_REDACT_MAX_FORMS 16

/*
 * Registers a value and its encoded forms (util/redact-forms.c), copied into
 * locked memory. Returns a handle id > 0, or negative (empty, longer than
 * SBX_REDACT_VALUE_MAX, table full, or memory that cannot be locked).
 */
int sbx__redact_register(const void *value, size_t len);
void sbx__redact_unregister(int id);
/* Replaces every registered value in a NUL-terminated string, truncating to cap. */
void sbx__redact_inplace(char *s, size_t cap);
/* Number of registered values (for fast paths). */
int sbx__redact_count(void);
/*
 * Sets m[i] = 1 for every byte of s[0..n) inside an occurrence of a
 * registered form and, with tail, inside a prefix of one (at least
 * SBX_REDACT_TAIL_MIN bytes) that ends s. Returns the longest registered
 * form's length, 0 when none is registered.
 */
size_t sbx__redact_mark(const void *s, size_t n, unsigned char *m, int tail);

/* ===== Encoded forms (util/redact-forms.c) ===== */

struct sbx_redact_form {
	size_t off, len;
};

/* Bytes that every form of a len-byte value needs at most. */
size_t sbx__redact_forms_size(size_t len);
/* Writes the distinct forms of v into dst (sized by sbx__redact_forms_size),
 * the value itself first; returns how many, at most max. */
size_t sbx__redact_forms(unsigned char *dst,
			 const unsigned char *v,
			 size_t len,
			 struct sbx_redact_form *forms,
			 size_t max);

/* ===== Streaming (util/redact-stream.c) ===== */

/*
 * Redacts a stream cut into arbitrary chunks: a value split across chunks is
 * still caught. It holds back at most (longest form - 1) bytes between
 * chunks, and gives them out at flush. Zero-initialize; finish with
 * sbx__redact_stream_done(), which wipes what it held.
 */
struct sbx_redact_stream {
	unsigned char *pend; /* bytes not given out yet */
	size_t len, alloc;
	size_t carry; /* leading bytes of pend known to lie inside a value */
	int in_value; /* the last byte given out lay inside a value */
	unsigned char *m;
	size_t m_alloc;
	char *out;
	size_t out_alloc;
};

/* Receives redacted bytes; a non-zero return is handed back by feed and flush. */
typedef int (*sbx_redact_emit)(void *arg, const char *data, size_t len);

/* Returns 0, the first non-zero emit return, or -2 when memory ran out. */
int sbx__redact_stream_feed(struct sbx_redact_stream *st,
			    const void *data,
			    size_t len,
			    sbx_redact_emit emit,
			    void *arg);
/* Gives out what is held (a trailing prefix of a value counts, as in records). */
int sbx__redact_stream_flush(struct sbx_redact_stream *st, sbx_redact_emit emit, void *arg);
void sbx__redact_stream_done(struct sbx_redact_stream *st);

#endif
