/*
 * util/cleanup.h: scope-bound cleanup for the library's own code.
 *
 * Every resource variable is initialized (NULL or -1) where it is declared
 * and released when it leaves scope; SBX_STEAL hands it out on success.
 */
#ifndef SBX_UTIL_CLEANUP_H
#define SBX_UTIL_CLEANUP_H

#include <stdlib.h>
#include <unistd.h>

#define _sbx_cleanup_(fn) __attribute__((cleanup(fn)))

static inline void sbx__freep(void *p)
{
	free(*(void **)p);
}

static inline void sbx__closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

#define _sbx_cleanup_free_ _sbx_cleanup_(sbx__freep)
#define _sbx_cleanup_close_ _sbx_cleanup_(sbx__closep)
/* A jansson value (jansson provides json_decrefp()), where jansson is used. */
#define _cleanup_json_ _sbx_cleanup_(json_decrefp)

#define SBX_DEFINE_CLEANUP(type, fn)                                                               \
	static inline void fn##p(type *p)                                                          \
	{                                                                                          \
		if (*p) {                                                                          \
			fn(*p);                                                                    \
			*p = NULL;                                                                 \
		}                                                                                  \
	}

#define SBX_STEAL(pp)                                                                              \
	({                                                                                         \
		__typeof__(*(pp)) _p = *(pp);                                                      \
		*(pp) = NULL;                                                                      \
		_p;                                                                                \
	})

#define SBX_STEAL_FD(pfd)                                                                          \
	({                                                                                         \
		int _fd = *(pfd);                                                                  \
		*(pfd) = -1;                                                                       \
		_fd;                                                                               \
	})

#define SBX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
