/*
 * init/spare.c: a supervisor forked by PID 1 ahead of its run (init/chan.c),
 * on its side of the pipes: it takes its run's spec from PID 1 on a pipe,
 * with the program's environment merged into the init's own, and becomes
 * that run's supervisor (init/run.c). Nothing of another run reaches it.
 */
#include "init/init.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int same_name(const char *a, const char *b)
{
	while (*a && *a != '=' && *a == *b) {
		a++;
		b++;
	}
	return *a == '=' && *b == '=';
}

/*
 * The program's environment: PID 1's own (the container's), with the
 * request's entries replacing those of the same name; among the request's,
 * the last of a name wins, as with docker exec.
 */
static char **merge_env(char **over)
{
	size_t n = 0, m = 0, i, j, k = 0;
	char **e;

	while (environ && environ[n])
		n++;
	while (over[m])
		m++;
	e = calloc(n + m + 1, sizeof(char *));
	if (!e)
		return NULL;
	for (i = 0; i < n; i++) {
		for (j = 0; j < m && !same_name(environ[i], over[j]); j++)
			;
		if (j == m)
			e[k++] = environ[i];
	}
	for (i = 0; i < m; i++) {
		for (j = i + 1; j < m && !same_name(over[i], over[j]); j++)
			;
		if (j == m)
			e[k++] = over[i];
	}
	return e;
}

/* Reads exactly len bytes from fd; -1 at a short read or an error. */
static int read_full(int fd, unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * In a spare: waits for its spec on ctl (the header of struct ctl_head,
 * then the blob, then end of file), then becomes the run's supervisor.
 * End of file before any byte means "not needed": it exits quietly.
 */
void sbx_init_spare_main(int in_r, int frames_w, int ctl)
{
	unsigned char head[CTL_HEAD], *blob, one;
	struct sbx_init_spec *s;
	const char *why = "";
	uint32_t argc, envc, len, flags;
	struct sbx_init_tty tty;
	long long deadline_ms;
	sigset_t none;
	char **env;
	ssize_t n;

	if (dup2(in_r, STDIN_FILENO) < 0 || dup2(frames_w, STDOUT_FILENO) < 0)
		_exit(SBX_INIT_EXIT_USAGE);
	/* The channel, the signalfd and other runs' pipes stay with PID 1. */
	sbx_init_fds_past_stdio(ctl, 0);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	/* What needs no request is done before it comes. */
	if (sbx_init_supervise_prepare(0) != 0)
		_exit(SBX_INIT_EXIT_USAGE);

	do
		n = read(ctl, head, 1);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		_exit(0);
	if (n < 0 || read_full(ctl, head + 1, sizeof(head) - 1) != 0)
		_exit(SBX_INIT_EXIT_USAGE);
	deadline_ms = (long long)((uint64_t)head[0] << 56 | (uint64_t)head[1] << 48 |
				  (uint64_t)head[2] << 40 | (uint64_t)head[3] << 32 |
				  (uint64_t)head[4] << 24 | (uint64_t)head[5] << 16 |
				  (uint64_t)head[6] << 8 | head[7]);
	argc = (uint32_t)head[8] << 24 | (uint32_t)head[9] << 16 | (uint32_t)head[10] << 8 |
	       head[11];
	envc = (uint32_t)head[12] << 24 | (uint32_t)head[13] << 16 | (uint32_t)head[14] << 8 |
	       head[15];
	len = (uint32_t)head[16] << 24 | (uint32_t)head[17] << 16 | (uint32_t)head[18] << 8 |
	      head[19];
	flags = (uint32_t)head[20] << 24 | (uint32_t)head[21] << 16 | (uint32_t)head[22] << 8 |
		head[23];
	tty = (struct sbx_init_tty){.rows = (uint16_t)(head[24] << 8 | head[25]),
				    .cols = (uint16_t)(head[26] << 8 | head[27]),
				    .resize_fd = ctl};
	if (len < 1 || len > SBX_CHAN_SPEC_MAX || deadline_ms < 1 ||
	    (uint64_t)deadline_ms > SBX_CHAN_DEADLINE_MS_MAX || (flags & ~CTL_PTY))
		_exit(SBX_INIT_EXIT_USAGE);
	blob = malloc(len);
	if (!blob || read_full(ctl, blob, len) != 0)
		_exit(SBX_INIT_EXIT_USAGE);
	/* Exactly the spec, then end of file; with a terminal, window sizes. */
	if (!(flags & CTL_PTY)) {
		if (read(ctl, &one, 1) != 0)
			_exit(SBX_INIT_EXIT_USAGE);
		close(ctl);
	}
	s = sbx_init_spec_split(blob, len, argc, envc, &why);
	if (!s) {
		sbx_init_msg("run: %s", why);
		_exit(SBX_INIT_EXIT_USAGE);
	}
	env = merge_env(s->env);
	if (!env) {
		sbx_init_msg("run: out of memory for the environment");
		_exit(SBX_INIT_EXIT_USAGE);
	}
	environ = env;
	if (flags & CTL_PTY)
		_exit(sbx_init_supervise_start_tty(deadline_ms, s->cwd, s->argv, &tty));
	_exit(sbx_init_supervise_start(deadline_ms, s->cwd, s->argv));
}
