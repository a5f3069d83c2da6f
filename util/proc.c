/*
 * util/proc.c: the start time and name of a process from /proc/PID/stat
 * (util/proc.h), the one reader of it for the owner record (core/owner.c),
 * the name checker's own record (cli/egress/) and the checker's stop
 * (netpolicy/egress.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/proc.h"

int sbx__proc_stat(pid_t pid, unsigned long long *start, char *comm, size_t comm_len)
{
	char path[64], buf[1024], *open_paren, *p;
	unsigned long long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: it runs from the first '('
	 * to the last ')', and the fields resume after that. */
	open_paren = strchr(buf, '(');
	p = strrchr(buf, ')');
	if (!open_paren || !p || p < open_paren)
		return -EINVAL;
	if (comm && comm_len)
		snprintf(comm, comm_len, "%.*s", (int)(p - open_paren - 1), open_paren + 1);
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p, " %llu", &v) != 1)
		return -EINVAL;
	*start = v;
	return 0;
}

int sbx__proc_start_time(pid_t pid, unsigned long long *start)
{
	return sbx__proc_stat(pid, start, NULL, 0);
}
