/*
 * util/secmem.h: memory for secret bytes.
 *
 * Each allocation is its own anonymous mapping, locked in RAM (never
 * swapped), left out of core dumps (MADV_DONTDUMP) and wiped before it is
 * unmapped. A mapping of its own per allocation, because mlock and madvise
 * work on whole pages: a secret sharing a page with other heap data could be
 * unlocked by a neighbour's munlock and would be dumped with it.
 */
#ifndef SBX_UTIL_SECMEM_H
#define SBX_UTIL_SECMEM_H

#include <stddef.h>

/*
 * Allocates len bytes (len > 0) of zeroed, locked, undumpable memory.
 * Returns NULL with errno set: ENOMEM, or EPERM/EAGAIN when the pages cannot
 * be locked (RLIMIT_MEMLOCK); memory that cannot be locked is not handed out.
 */
void *sbx__secmem_alloc(size_t len);
/* Wipes and releases what sbx__secmem_alloc(len) returned. NULL is a no-op. */
void sbx__secmem_free(void *p, size_t len);

/*
 * JSON string escaping that leaves no unlocked copy: the escaped length of
 * s[0..len) without quotes, and the escaping itself into dst (which holds at
 * least that many bytes). Escapes '"', '\\' and bytes below 0x20; other
 * bytes are copied as they are (the caller has checked they are UTF-8).
 */
size_t sbx__json_escaped_len(const char *s, size_t len);
size_t sbx__json_escape(char *dst, const char *s, size_t len);

#endif
