/*
 * util/redact-int.h: the one redactor, scoped to the record it closes.
 *
 * Secret values live in sets: one per secrets object (core/secret.c), and
 * the process's own (values the library holds for itself, such as a
 * tracer's headers), reached through sbx__redact_register(). A scope lists
 * the sets whose values a sandbox was given; every record of that sandbox
 * (run output, errors, audit events, spans) is redacted with the process's
 * values and its scope's, never with another sandbox's. So a program can
 * learn nothing from the redaction of its output about a value it was not
 * given, and one tenant's secrets cannot fill a table another's need.
 *
 * Records closed on a thread while an operation on a sandbox runs there
 * (errors through util/error.c, audit events and spans through
 * core/record.c) use the scope that operation entered with
 * sbx__redact_scope_enter(); run output names its scope in its stream.
 * Records closed outside any such operation hold only what the caller
 * gave, and are redacted with every live value.
 */
#ifndef SBX_UTIL_REDACT_INT_H
#define SBX_UTIL_REDACT_INT_H

#include <pthread.h>
#include <stddef.h>

#define SBX_REDACTED "<redacted>"
/* Longest value the redactor holds (its forms are up to three times longer). */
#define SBX_REDACT_VALUE_MAX (16u * 1024u)
/* Derived (encoded) forms shorter than this are not searched for. */
#define SBX_REDACT_FORM_MIN 4
#define SBX_REDACT_MAX_FORMS 20
/* Values the process's own set holds. */
#define SBX_REDACT_PROCESS_MAX 256
/*
 * Inside an encoded form (base64, hex) a match skips line breaks: at most
 * this many CR and LF bytes in a row between two encoded characters, so
 * text wrapped at any width is caught and a stream holds back a bounded
 * number of bytes.
 */
#define SBX_REDACT_BREAK_MAX 2

/* ===== Sets of values ===== */

struct sbx_redact_set;

/* A set of at most max values, with one reference (the owner's); NULL when
 * out of memory. */
struct sbx_redact_set *sbx__redact_set_new(size_t max);
/*
 * Adds a value and its encoded forms (util/redact-forms.c), copied into
 * locked memory. Returns an id > 0, or -1 with errno: EINVAL (empty, longer
 * than SBX_REDACT_VALUE_MAX, or the set was cleared), ENOSPC (this set is
 * full), ENOMEM, or EPERM/EAGAIN (memory that cannot be locked).
 */
int sbx__redact_set_add(struct sbx_redact_set *s, const void *value, size_t len);
void sbx__redact_set_remove(struct sbx_redact_set *s, int id);
/* Wipes every value for good: the set redacts nothing from now on, though
 * scopes may still hold references to it. */
void sbx__redact_set_clear(struct sbx_redact_set *s);
void sbx__redact_set_unref(struct sbx_redact_set *s);

/* The process's own set: registers a value for every record. Returns an id
 * > 0, or negative as sbx__redact_set_add (errno ENOSPC: full). */
int sbx__redact_register(const void *value, size_t len);
void sbx__redact_unregister(int id);
/* Live values in the process, in every set (for tests and leak checks). */
int sbx__redact_count(void);

/* ===== Scopes ===== */

/* The sets a sandbox was given. Zero-initialize or sbx__redact_scope_init(). */
struct sbx__redact_scope {
	pthread_mutex_t lock;
	struct sbx_redact_set **set;
	size_t n, alloc;
};

void sbx__redact_scope_init(struct sbx__redact_scope *sc);
/* Adds a reference to s (once); drops sets cleared since. 0, or -1 (memory). */
int sbx__redact_scope_add(struct sbx__redact_scope *sc, struct sbx_redact_set *s);
void sbx__redact_scope_done(struct sbx__redact_scope *sc);
/* Makes sc the calling thread's scope (NULL: the process's values alone);
 * returns the previous one, for sbx__redact_scope_leave(). */
struct sbx__redact_scope *sbx__redact_scope_enter(struct sbx__redact_scope *sc);
void sbx__redact_scope_leave(struct sbx__redact_scope *prev);
struct sbx__redact_scope *sbx__redact_scope_current(void);
/* Whether any value is to be looked for: the process's, or sc's. */
int sbx__redact_any(struct sbx__redact_scope *sc);

/* ===== Marking and records ===== */

/* The longest form searched for as it is, and the longest that skips line
 * breaks (encoded forms): what a stream must hold back. */
struct sbx__redact_longest {
	size_t plain, wrapped;
};

/*
 * Sets m[i] = 1 for every byte of s[0..n) inside a complete occurrence of a
 * form of a value of the process or of sc (NULL: the process's alone);
 * an encoded form's occurrence may have line breaks between its characters
 * (they are marked with it). A partial occurrence is never marked, whatever
 * it matches. Fills *longest (may be NULL). Returns 0, or -1 when memory ran
 * out (nothing is known then: the caller fails closed).
 */
int sbx__redact_mark(struct sbx__redact_scope *sc,
		     const void *s,
		     size_t n,
		     unsigned char *m,
		     struct sbx__redact_longest *longest);
/*
 * Replaces every value of the process and of the calling thread's scope in a
 * NUL-terminated string, truncating to cap. With no scope entered, the
 * record belongs to no sandbox (an error about the caller's own arguments)
 * and every live value in the process is replaced; text a sandbox wrote
 * must only be recorded inside its sandbox's scope.
 */
void sbx__redact_inplace(char *s, size_t cap);
/* Whether sbx__redact_inplace() has any value to look for on this thread. */
int sbx__redact_current_any(void);
/* As sbx__redact_inplace, with scope sc. */
void sbx__redact_inplace_scope(struct sbx__redact_scope *sc, char *s, size_t cap);

/* ===== Encoded forms (util/redact-forms.c) ===== */

struct sbx__redact_form {
	size_t off, len;
	int wrapped; /* an encoded form: may be cut by line breaks */
};

/* Bytes that every form of a len-byte value needs at most. */
size_t sbx__redact_forms_size(size_t len);
/* Writes the distinct forms of v into dst (sized by sbx__redact_forms_size),
 * the value itself first; returns how many, at most max. */
size_t sbx__redact_forms(unsigned char *dst,
			 const unsigned char *v,
			 size_t len,
			 struct sbx__redact_form *forms,
			 size_t max);

/* ===== Streaming (util/redact-stream.c) ===== */

/*
 * Redacts a stream cut into arbitrary chunks: a value split across chunks is
 * still caught. It holds back only what may still be the start of an
 * occurrence: the last (longest plain form - 1) bytes, or the bytes from
 * the last (longest encoded form - 1) encoded characters on with the line
 * breaks among them, whichever reaches further back. At the end of the
 * stream the held bytes are given out as they are unless they hold a
 * complete occurrence: a partial one is never treated differently from
 * any other text. Zero-initialize, set scope (NULL: the process's values
 * alone); finish with sbx__redact_stream_done(), which wipes what it held.
 */
struct sbx__redact_stream {
	struct sbx__redact_scope *scope;
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
int sbx__redact_stream_feed(struct sbx__redact_stream *st,
			    const void *data,
			    size_t len,
			    sbx_redact_emit emit,
			    void *arg);
/* Gives out what is held: complete occurrences redacted, the rest as it is. */
int sbx__redact_stream_flush(struct sbx__redact_stream *st, sbx_redact_emit emit, void *arg);
/* How many of the last n bytes of p a stream holds back, for these lengths. */
size_t
sbx__redact_stream_hold(const unsigned char *p, size_t n, const struct sbx__redact_longest *l);
void sbx__redact_stream_done(struct sbx__redact_stream *st);

#endif
