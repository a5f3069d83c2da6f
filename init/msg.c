/*
 * init/msg.c: the helpers every part of sbx-init uses: its one way of
 * saying something (to fd 2), and the strict reading of a positive number.
 * Below every other file of init/.
 */
#include "init/init.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Longest message the init prints; longer ones are cut. */
#define MSG_MAX 1024

void sbx_init_msg(const char *fmt, ...)
{
	char buf[MSG_MAX];
	va_list ap;
	int n, pre;

	pre = snprintf(buf, sizeof(buf), "sbx-init: ");
	va_start(ap, fmt);
	n = vsnprintf(buf + pre, sizeof(buf) - (size_t)pre - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(buf) - (size_t)pre - 2)
		n = (int)(sizeof(buf) - (size_t)pre - 2);
	n += pre;
	buf[n++] = '\n';
	/* Best effort: there is nobody else to tell if stderr is gone. */
	while (write(STDERR_FILENO, buf, (size_t)n) < 0 && errno == EINTR)
		;
}

int sbx_init_parse_positive(const char *s, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v <= 0 || v > max)
		return -1;
	*out = v;
	return 0;
}
