/*
 * sandboxio/common.h: declaration macros and the version of the API.
 *
 * Part of the public API: include <sandboxio.h>, not this file.
 */
#ifndef SANDBOXIO_COMMON_H
#define SANDBOXIO_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define SBX_BEGIN_DECL extern "C" {
#define SBX_END_DECL }
#else
#define SBX_BEGIN_DECL
#define SBX_END_DECL
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define SBX_EXTERN __attribute__((visibility("default")))
#else
#define SBX_EXTERN
#endif

#define SBX_VERSION_MAJOR 0
#define SBX_VERSION_MINOR 1
#define SBX_VERSION_PATCH 0
#define SBX_VERSION_STRING "0.1.0"

SBX_BEGIN_DECL

/** Returns the library's version string ("0.1.0"). Never fails; the string is static. */
SBX_EXTERN const char *sbx_version(void);

/**
 * Releases a buffer that the library allocated and handed to the caller
 * (sbx_sandbox_read_file() output, for one). ^Passing NULL is a harmless no-op.
 */
SBX_EXTERN void sbx_free(void *p);

SBX_END_DECL

#endif
