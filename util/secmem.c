/*
 * util/secmem.c: locked, undumpable, wiped memory for secret bytes (see
 * secmem.h), and JSON escaping into such memory.
 *
 * A failure to lock is a failure: a secret that could be swapped to disk is
 * not held at all, so the caller gets an error naming RLIMIT_MEMLOCK rather
 * than a quieter, weaker copy.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/secmem.h"

static size_t round_pages(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

void *sbx__secmem_alloc(size_t len)
{
	size_t n;
	void *p;
	int e;

	if (len == 0 || len > ((size_t)1 << 30)) {
		errno = EINVAL;
		return NULL;
	}
	n = round_pages(len);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mlock(p, n) < 0 || madvise(p, n, MADV_DONTDUMP) < 0) {
		e = errno;
		munmap(p, n);
		errno = e;
		return NULL;
	}
	return p;
}

void sbx__secmem_free(void *p, size_t len)
{
	size_t n;

	if (!p || len == 0)
		return;
	n = round_pages(len);
	explicit_bzero(p, n);
	munlock(p, n);
	munmap(p, n);
}

size_t sbx__json_escaped_len(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			n += 2;
		else if (c < 0x20)
			n += 6;
		else
			n++;
	}
	return n;
}

size_t sbx__json_escape(char *dst, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else if (c < 0x20) {
			memcpy(dst + o, "\\u00", 4);
			dst[o + 4] = hex[c >> 4];
			dst[o + 5] = hex[c & 15];
			o += 6;
		} else {
			dst[o++] = (char)c;
		}
	}
	return o;
}
