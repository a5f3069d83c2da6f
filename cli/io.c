/*
 * cli/io.c: small file-descriptor helpers of the command.
 *
 * Writes and reads go through write(2)/read(2) loops so that the program's
 * output reaches our stdout as it arrives (no stdio buffering in between)
 * and so that a signal that interrupts a read is noticed: the signal
 * handlers are installed without SA_RESTART.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* Upper bound of what --stdin and run-code read into memory. */
#define CLI_READ_MAX (1ull << 30)

int cli_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR && !cli_signal_pending())
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Reads a whole file ("-": standard input) into a NUL-terminated buffer.
 * Returns 0, or -1 with errno set (EINTR when a signal arrived, EFBIG past
 * the bound).
 */
int cli_read_all(const char *path, char **out, size_t *len_out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int fd, saved;

	fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t r;

		if (cap - len < 65536) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *grown;

			if (ncap > CLI_READ_MAX + 1) {
				errno = EFBIG;
				goto fail;
			}
			grown = realloc(buf, ncap);
			if (!grown)
				goto fail;
			buf = grown;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR && !cli_signal_pending())
				continue;
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	if (fd != STDIN_FILENO)
		close(fd);
	*out = buf;
	*len_out = len;
	return 0;
fail:
	saved = errno;
	free(buf);
	if (fd != STDIN_FILENO)
		close(fd);
	errno = saved;
	return -1;
}

/* The directory holding this executable, from /proc/self/exe. */
int cli_exe_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n <= 0 || (size_t)n >= size - 1)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*(slash == buf ? slash + 1 : slash) = '\0';
	return 0;
}
