/*
 * core/secret-int.h: what the run path reads from a secrets object.
 *
 * sbx__secret_expose_env() is the only way to the raw bytes; every call site
 * is a place where a secret leaves locked memory, so grep for it in review.
 */
#ifndef SBX_CORE_SECRET_INT_H
#define SBX_CORE_SECRET_INT_H

#include <sandboxio/secret.h>

struct sbx_redact_set;

/* "NAME=value" of secret i, NUL-terminated, in locked memory; lent until the
 * object is freed. NULL past the end. */
const char *sbx__secret_expose_env(const sbx_secrets *s, size_t i);

/* The object's redaction set (util/redact-int.h): a sandbox given the object
 * adds it to its scope. NULL for NULL. */
struct sbx_redact_set *sbx__secrets_redact_set(const sbx_secrets *s);

#endif
