/*
 * server/pty.c: a command's terminal on envd's process service (what the
 * SDK's `sandbox.pty` uses): Process.Start with "pty": {"size": {"cols",
 * "rows"}}, SendInput's pty variant, and Update with a new size.
 *
 * A terminal is a run of the library with sbx_run_options.pty, the run
 * `sandboxio exec -it` makes: over the init's channel it is a pty inside
 * the sandbox (docs/protocol.md, "A run with a terminal"). Its input is the
 * run's streamed stdin (stream_stdin) read from one end of a socket pair
 * made at Start; each SendInput writes its bytes to the other end, so they
 * reach the terminal as they are sent, in order, through its line
 * discipline (byte 3, ^C, interrupts the foreground program). Bytes sent
 * before the run starts wait in the socket's buffer. A write waits at most
 * the transfer's deadline (--transfer-timeout) for a terminal that does not
 * read. A new size goes to the run in flight with sbx_sandbox_resize(); one
 * asked before the run starts is the size it starts with, and one asked
 * while the library is opening the run (not yet in flight: SBX_ENOTFOUND)
 * is kept and set at the run's first output.
 *
 * The output is the run's, redacted by the library as a command's stdout
 * is (every secret given to the sandbox's runs, held back across writes).
 * Errors follow envd's words for a process without a terminal.
 *
 * The parsers are jansson's reading of the JSON (protojson's rules: unknown
 * fields and wrong types are invalid_argument, null is an unset field,
 * uint32 a number or its decimal string, bytes base64 in either alphabet);
 * fuzzed by tests/fuzz/fuzz_serve.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/server-int.h"
#include "util/base64.h"

#define PTY_SIZE_MAX 4096 /* rows or columns: the init's bound */
/* protojson's readers take base64 in either alphabet, padded or not. */
#define B64_PROTOJSON (SBX__BASE64_URL | SBX__BASE64_NOPAD)

/* A uint32 field as protojson reads it: a number or its decimal string. */
static int u32_field(json_t *v, unsigned *out)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) <= 0xffffffffLL) {
		*out = (unsigned)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		unsigned long long x = 0;

		if (!*s || strlen(s) > 10)
			return -1;
		for (; *s; s++) {
			if (*s < '0' || *s > '9')
				return -1;
			x = x * 10 + (unsigned)(*s - '0');
		}
		if (x > 0xffffffffULL)
			return -1;
		*out = (unsigned)x;
		return 0;
	}
	return -1;
}

int sbxs_pty_parse(json_t *v, unsigned *rows, unsigned *cols, char *err, size_t esize)
{
	static const char *const pty_keys[] = {"size", NULL};
	static const char *const size_keys[] = {"cols", "rows", NULL};
	const char *bad;
	json_t *size, *f;

	*rows = *cols = 0;
	if (!json_is_object(v)) {
		snprintf(err, esize, "pty must be a PTY object");
		return -1;
	}
	if ((bad = sbxs_unknown_key(v, pty_keys)) != NULL) {
		snprintf(err, esize, "unmarshal into process.PTY: unknown field \"%.64s\"", bad);
		return -1;
	}
	size = json_object_get(v, "size");
	if (!size || json_is_null(size))
		return 0;
	if (!json_is_object(size)) {
		snprintf(err, esize, "pty.size must be a PTY.Size object");
		return -1;
	}
	if ((bad = sbxs_unknown_key(size, size_keys)) != NULL) {
		snprintf(err, esize, "unmarshal into process.PTY.Size: unknown field \"%.64s\"",
			 bad);
		return -1;
	}
	f = json_object_get(size, "cols");
	if (f && !json_is_null(f) && u32_field(f, cols) < 0) {
		snprintf(err, esize, "pty.size.cols must be a uint32");
		return -1;
	}
	f = json_object_get(size, "rows");
	if (f && !json_is_null(f) && u32_field(f, rows) < 0) {
		snprintf(err, esize, "pty.size.rows must be a uint32");
		return -1;
	}
	if (*rows > PTY_SIZE_MAX || *cols > PTY_SIZE_MAX) {
		snprintf(err, esize, "pty.size of %u rows and %u columns: each is at most %d here",
			 *rows, *cols, PTY_SIZE_MAX);
		return -1;
	}
	return 0;
}

int sbxs_pty_parse_update(json_t *j, unsigned *rows, unsigned *cols, char *err, size_t esize)
{
	static const char *const keys[] = {"process", "pty", NULL};
	const char *bad;
	json_t *p;

	if (!json_is_object(j)) {
		snprintf(err, esize, "unmarshal into process.UpdateRequest: not an object");
		return -1;
	}
	if ((bad = sbxs_unknown_key(j, keys)) != NULL) {
		snprintf(err, esize,
			 "unmarshal into process.UpdateRequest: unknown field \"%.64s\"", bad);
		return -1;
	}
	p = json_object_get(j, "pty");
	if (!p || json_is_null(p))
		return 0;
	if (sbxs_pty_parse(p, rows, cols, err, esize) < 0)
		return -1;
	if (*rows == 0 || *cols == 0) {
		snprintf(err, esize, "pty.size of %u rows and %u columns: each is 1 to %d", *rows,
			 *cols, PTY_SIZE_MAX);
		return -1;
	}
	return 1;
}

int sbxs_pty_parse_input(json_t *in,
			 size_t max,
			 unsigned char **out,
			 size_t *n,
			 int *is_pty,
			 char *err,
			 size_t esize)
{
	static const char *const keys[] = {"stdin", "pty", NULL};
	json_t *s, *p, *data;
	const char *bad;
	size_t dl;

	*out = NULL;
	*n = 0;
	*is_pty = 0;
	if (!json_is_object(in)) {
		snprintf(err, esize, "input must be a ProcessInput holding stdin or pty");
		return -1;
	}
	if ((bad = sbxs_unknown_key(in, keys)) != NULL) {
		snprintf(err, esize, "unmarshal into process.ProcessInput: unknown field \"%.64s\"",
			 bad);
		return -1;
	}
	s = json_object_get(in, "stdin");
	p = json_object_get(in, "pty");
	if (s && json_is_null(s))
		s = NULL;
	if (p && json_is_null(p))
		p = NULL;
	if ((s != NULL) == (p != NULL)) {
		snprintf(err, esize, "input holds exactly one of stdin and pty");
		return -1;
	}
	*is_pty = p != NULL;
	data = p ? p : s;
	if (!json_is_string(data)) {
		snprintf(err, esize, "input.%s must be base64 bytes", p ? "pty" : "stdin");
		return -1;
	}
	dl = json_string_length(data);
	if (p && dl / 4 * 3 > max + 3) {
		snprintf(err, esize, "input.pty is larger than %zu bytes (one SendInput's bound)",
			 max);
		return -1;
	}
	*out = malloc(sbx__base64_decoded_max(dl) + 1);
	if (!*out) {
		snprintf(err, esize, "out of memory");
		return -1;
	}
	if (sbx__base64_decode(*out, n, json_string_value(data), dl, B64_PROTOJSON) < 0) {
		snprintf(err, esize, "input.%s must be base64 bytes", p ? "pty" : "stdin");
	} else if (p && *n > max) {
		explicit_bzero(*out, *n);
		snprintf(err, esize, "input.pty is larger than %zu bytes (one SendInput's bound)",
			 max);
	} else {
		return 0;
	}
	free(*out);
	*out = NULL;
	*n = 0;
	return -1;
}

int sbxs_pty_open(struct sbxs_proc *pr)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pr->pty_fd) < 0)
		return -1;
	pr->pty_open = 1;
	/* The library reads [0] when poll says so; [1] is written here, with
	 * MSG_DONTWAIT and a deadline. */
	shutdown(pr->pty_fd[0], SHUT_WR);
	shutdown(pr->pty_fd[1], SHUT_RD);
	return 0;
}

int sbxs_pty_write(struct sbxs_proc *pr,
		   const void *data,
		   size_t n,
		   const char **code,
		   char *err,
		   size_t esize)
{
	struct sbxs_server *srv = pr->box->srv;
	uint64_t deadline = sbx__mono_ms() + srv->transfer_ms, now;
	const char *p = data;
	size_t total = n;
	int rc = 0;

	*code = "unavailable";
	pthread_mutex_lock(&srv->mu);
	while (pr->in_busy && !pr->run_done && sbx__mono_ms() < deadline)
		sbxs_wait_until(&pr->cv, &srv->mu, deadline);
	if (pr->run_done) {
		pthread_mutex_unlock(&srv->mu);
		*code = "failed_precondition";
		snprintf(err, esize, "error writing to tty: the process ended");
		return -1;
	}
	if (pr->in_busy) {
		pthread_mutex_unlock(&srv->mu);
		snprintf(err, esize,
			 "an earlier input of the terminal was still being written at the "
			 "transfer's deadline (%llu s)",
			 (unsigned long long)(srv->transfer_ms / 1000));
		return -1;
	}
	pr->in_busy = 1;
	pthread_mutex_unlock(&srv->mu);
	while (n > 0) {
		ssize_t w = send(pr->pty_fd[1], p, n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    (now = sbx__mono_ms()) < deadline) {
			struct pollfd pf = {.fd = pr->pty_fd[1], .events = POLLOUT};
			uint64_t left = deadline - now;

			(void)poll(&pf, 1, left > 1000 ? 1000 : (int)left);
			continue;
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			*code = "failed_precondition";
			snprintf(err, esize, "error writing to tty: the process ended");
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Bytes already written cannot be taken back: the
			 * message says how many, so a client does not send
			 * them twice. */
			snprintf(err, esize,
				 "the terminal did not take its input within the transfer's "
				 "deadline (%llu s): %zu of its %zu bytes were written",
				 (unsigned long long)(srv->transfer_ms / 1000),
				 (size_t)(p - (const char *)data), total);
		} else {
			*code = "internal";
			snprintf(err, esize, "error writing to tty: %s", strerror(errno));
		}
		rc = -1;
		break;
	}
	pthread_mutex_lock(&srv->mu);
	pr->in_busy = 0;
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	return rc;
}

int sbxs_pty_resize(struct sbxs_proc *pr, unsigned rows, unsigned cols, char *err, size_t esize)
{
	struct sbxs_box *b = pr->box;
	struct sbxs_server *srv = b->srv;
	int in_flight, rc;

	pthread_mutex_lock(&srv->mu);
	pr->rows = rows;
	pr->cols = cols;
	/* Not started: the worker reads the size as it starts the run. In
	 * flight: the run's end waits for this resize before it frees the
	 * busy slot, so the resize cannot reach the sandbox's next run. */
	in_flight = pr->started && !pr->run_done;
	if (in_flight)
		pr->resizing++;
	pthread_mutex_unlock(&srv->mu);
	if (!in_flight)
		return 0;
	rc = sbx_sandbox_resize(b->s, rows, cols);
	pthread_mutex_lock(&srv->mu);
	pr->resizing--;
	/* The library is still opening the run: its first output sets it. */
	if (rc == SBX_ENOTFOUND && !pr->run_done)
		pr->resize_pending = 1;
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	if (rc == SBX_ENOTFOUND)
		return 0;
	if (rc < 0) {
		snprintf(err, esize, "error resizing tty: %s", sbx_error_last()->message);
		return -1;
	}
	return 0;
}

void sbxs_pty_resize_pending(struct sbxs_proc *pr)
{
	struct sbxs_server *srv = pr->box->srv;
	unsigned rows, cols;
	int due;

	pthread_mutex_lock(&srv->mu);
	due = pr->resize_pending;
	pr->resize_pending = 0;
	rows = pr->rows;
	cols = pr->cols;
	pthread_mutex_unlock(&srv->mu);
	if (due)
		(void)sbx_sandbox_resize(pr->box->s, rows, cols);
}
