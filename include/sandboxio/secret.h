/*
 * sandboxio/secret.h: secrets, kept apart from plain configuration.
 *
 * A secrets object is a set of NAME -> value pairs that a run hands to its
 * program as environment variables, at run time only: ^a value never
 * enters the sandbox's configuration, labels, image, the init's command line
 * or any host process's command line (docs/threat-model.md, control 5).
 * ^While the object lives, its values are held in memory that is locked
 * (never swapped), excluded from core dumps and wiped on free, and every
 * record the library closes for a sandbox whose runs were given the object
 * (error messages, run output, audit events, spans) has them, and their
 * base64, hex and percent-encoded forms (also cut into lines), replaced by
 * "<redacted>". ^Records of other sandboxes are not redacted with them, so
 * a sandbox learns nothing about another's secrets from what is redacted.
 * Records of no sandbox (errors about the caller's own arguments) are
 * redacted with every live object's values. No function turns a secrets
 * object back into text.
 *
 *	sbx_secrets *sec = NULL;
 *	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
 *	const char *tok = getenv("API_TOKEN");
 *	if (sbx_secrets_new(&sec) == 0 && tok &&
 *	    sbx_secrets_add(sec, "API_TOKEN", tok, strlen(tok)) == 0) {
 *		ro.secrets = sec;
 *		sbx_sandbox_run(&r, s, argv, &ro);   (the program reads $API_TOKEN)
 *	}
 *	sbx_secrets_free(sec);
 *
 * Part of the public API: include <sandboxio.h>, not this file.
 */
#ifndef SANDBOXIO_SECRET_H
#define SANDBOXIO_SECRET_H

#include "common.h"

SBX_BEGIN_DECL

typedef struct sbx_secrets sbx_secrets;

/*
 * Bounds on one value, in bytes. ^A value shorter than SBX_SECRET_MIN_LEN is
 * refused: redacting every occurrence of two or three bytes would mangle
 * ordinary output and protect nothing. Values of 4 to 7 bytes are accepted,
 * and every occurrence of them in a record is redacted, secret or not.
 */
#define SBX_SECRET_MIN_LEN 4
#define SBX_SECRET_MAX_LEN 16384
/** At most this many secrets in one object. */
#define SBX_SECRETS_MAX 64

/**
 * Creates an empty secrets object.
 * @param[out] out written only on success.
 * Ownership: the caller frees it with sbx_secrets_free(), after every run
 * that was given it has returned.
 * Returns: 0, SBX_EINVALID (out is NULL), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_secrets_new(sbx_secrets **out);

/**
 * Wipes every value, stops redacting them, and frees the object.
 * ^NULL is a harmless no-op.
 */
SBX_EXTERN void sbx_secrets_free(sbx_secrets *s);

/**
 * Adds a secret. The value is copied into locked memory and ^is redacted
 * from the records of every sandbox given the object, from now until
 * sbx_secrets_free().
 *
 * NAME is an environment variable name, [A-Za-z_][A-Za-z0-9_]*, at most 255
 * bytes, not already in the object. ^The value is SBX_SECRET_MIN_LEN to
 * SBX_SECRET_MAX_LEN bytes of UTF-8 without NUL (it becomes an environment
 * variable, passed to the engine as JSON text); encode binary keys (base64)
 * first. The caller may wipe its own copy as soon as this returns.
 * Thread-safety: do not add while a run uses the object.
 * Returns: 0, SBX_EINVALID (bad name or value, duplicate name), SBX_ETOOBIG
 * (a value over SBX_SECRET_MAX_LEN, more than SBX_SECRETS_MAX), SBX_EDENIED (the memory cannot be locked:
 * raise RLIMIT_MEMLOCK), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_secrets_add(sbx_secrets *s, const char *name, const void *value, size_t len);

/**
 * Adds a secret whose value is a file's content, read straight into locked
 * memory. ^One trailing newline ("\n" or "\r\n") is removed: most files end
 * with one, and a value that does is rarely meant to.
 * Returns: as sbx_secrets_add(), and SBX_ENOTFOUND (no such file), SBX_EDENIED
 * (cannot be read), SBX_ETOOBIG (larger than SBX_SECRET_MAX_LEN plus the newline).
 */
SBX_EXTERN int sbx_secrets_add_file(sbx_secrets *s, const char *name, const char *path);

/** How many secrets the object holds (0 for NULL). */
SBX_EXTERN size_t sbx_secrets_count(const sbx_secrets *s);

/** The name of secret i (insertion order), or NULL past the end. Lent for
 *  the object's lifetime. Names are not secret; values have no getter. */
SBX_EXTERN const char *sbx_secrets_name(const sbx_secrets *s, size_t i);

SBX_END_DECL

#endif
