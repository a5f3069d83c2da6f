/*
 * sandboxio/errors.h: error codes and the per-thread error record.
 *
 * Every function that can fail returns 0 or a negative sbx_error_code, and
 * records a human-readable message in a per-thread record. The codes are
 * append-only ABI: a retired code keeps its number as a placeholder.
 */
#ifndef SANDBOXIO_ERRORS_H
#define SANDBOXIO_ERRORS_H

#include "common.h"

SBX_BEGIN_DECL

typedef enum {
	SBX_OK = 0,
	SBX_ERROR = -1,	       /* anything not listed below */
	SBX_EINVALID = -2,     /* bad argument, malformed option, refused policy value */
	SBX_ENOTFOUND = -3,    /* no such sandbox, image or file */
	SBX_EDENIED = -4,      /* refused by policy or by the operating system */
	SBX_EENGINE = -5,      /* the engine (dockerd, a remote API) failed or answered non-2xx */
	SBX_ETIMEOUT = -6,     /* a deadline passed */
	SBX_EUNSUPPORTED = -7, /* the backend cannot enforce what was asked: refused, not ignored */
	SBX_EVERSION = -8,     /* an options struct's version is 0 or newer than this library */
	SBX_ENOMEM = -9,       /* out of memory */
	SBX_EUNAVAILABLE = -10, /* the engine cannot be reached (daemon down, wrong socket) */
	SBX_ECANCELED = -11,	/* canceled by the caller or a signal */
	SBX_ETOOBIG = -12,	/* an input or output passed its size bound */
	SBX_EPAUSED = -13,	/* the sandbox is paused (sbx_sandbox_pause()) */
	SBX_ERROR_LAST = -14	/* never use! */
} sbx_error_code;

typedef enum {
	SBX_ERRCLASS_NONE = 0,
	SBX_ERRCLASS_CORE,
	SBX_ERRCLASS_ENGINE,
	SBX_ERRCLASS_NETPOLICY,
	SBX_ERRCLASS_CGROUPS,
	SBX_ERRCLASS_REMOTE,
	SBX_ERRCLASS_OS,
	SBX_ERRCLASS_POLICY,
	SBX_ERRCLASS_INIT
} sbx_error_class;

/** The detail of the last error on this thread. */
typedef struct {
	int code; /* an sbx_error_code */
	sbx_error_class klass;
	int os_errno;	     /* errno when klass is SBX_ERRCLASS_OS, else 0 */
	long http_status;    /* the engine's HTTP status, else 0 */
	const char *message; /* never NULL; already redacted */
} sbx_error;

/**
 * Returns the last error recorded on the calling thread.
 *
 * Ownership: lent; valid until the next library call on this thread.
 * ^Never returns NULL: with no error recorded, code is SBX_OK and message is "".
 * Thread-safety: each thread has its own record.
 */
SBX_EXTERN const sbx_error *sbx_error_last(void);

/** Clears this thread's error record. */
SBX_EXTERN void sbx_error_clear(void);

/** A static, short description of an error code ("invalid argument"). Never NULL. */
SBX_EXTERN const char *sbx_strerror(int code);

SBX_END_DECL

#endif
