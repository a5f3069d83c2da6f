/*
 * init/connect.c: `sbx-init connect PORT`, the relay that carries one TCP
 * connection to a server listening on the sandbox's own loopback
 * (sbx_sandbox_connect_port(), docs/protocol.md "A port of the sandbox").
 *
 * It runs as an ordinary program of a run (so under the run's supervisor,
 * as the sandbox user, with the sandbox's lockdown), inside the sandbox's
 * network namespace, which has its loopback even with network "none". It
 * connects to 127.0.0.1:PORT (then [::1]:PORT when nothing listens there)
 * and relays bytes both ways: its stdin to the connection, the connection
 * to its stdout. The address is fixed: the request names a port and
 * nothing else, so no caller can make it reach another address.
 *
 * Why a program whose stdin and stdout the host already carries, not a new
 * kind of stream of the init's channel: the channel belongs to the handle
 * that created the sandbox and serves one thread at a time, while a port's
 * connections come while commands run; a run of this relay goes through
 * any handle (docker exec for an opened one), beside every other run, with
 * the run's own bounds (deadline, output cap, stdin flow control), at the
 * cost of one process per connection.
 *
 * Ends: the connection's end of file is the relay's end (what came is
 * written out first, exit 0); the end of its stdin ends the connection at
 * once (exit 0): the host has let go, there is no half-close. Nothing
 * listening is exit SBX_INIT_EXIT_REFUSED with a message naming the port;
 * a port that is not 1..65535 written in plain digits is a usage error.
 */
#include "init/init.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_BUF 65536

/* Digits only, no leading zero, 1..65535. Returns the port or 0. */
unsigned sbx_init_port_parse(const char *s)
{
	unsigned v = 0;
	size_t n;

	if (!s || s[0] < '1' || s[0] > '9')
		return 0;
	for (n = 0; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= 5)
			return 0;
		v = v * 10 + (unsigned)(s[n] - '0');
	}
	return v <= 65535 ? v : 0;
}

/* A connected socket to loopback:port, or -1 with errno. */
static int connect_loopback(unsigned port)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
	int fd, err;

	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a6.sin6_addr = in6addr_loopback;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0)
		return fd;
	err = errno;
	if (fd >= 0)
		close(fd);
	/* A server bound to [::1] alone; any other failure stands. */
	if (err == ECONNREFUSED || err == EAFNOSUPPORT) {
		fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	errno = err;
	return -1;
}

struct pipe_buf {
	unsigned char b[RELAY_BUF];
	size_t off, len;
	int eof;
};

/* Reads what fits from fd into p; 0, or -1 on an error. */
static int fill(int fd, struct pipe_buf *p)
{
	ssize_t n;

	if (p->len == 0)
		p->off = 0;
	n = read(fd, p->b + p->off + p->len, sizeof(p->b) - p->off - p->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (n == 0)
		p->eof = 1;
	p->len += (size_t)n;
	return 0;
}

/* Writes what it can of p to fd; 0, or -1 on an error. */
static int drain(int fd, struct pipe_buf *p, int is_sock)
{
	ssize_t n = is_sock ? send(fd, p->b + p->off, p->len, MSG_NOSIGNAL)
			    : write(fd, p->b + p->off, p->len);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	p->off += (size_t)n;
	p->len -= (size_t)n;
	return 0;
}

static struct pipe_buf up, down; /* stdin to the socket; the socket to stdout */

int sbx_init_connect(int argc, char **argv)
{
	unsigned port;
	int sock;

	if (argc != 2 || !(port = sbx_init_port_parse(argv[1]))) {
		sbx_init_msg("usage: sbx-init connect PORT (a port 1..65535 on the sandbox's "
			     "loopback, in plain digits), not '%.16s'",
			     argc == 2 ? argv[1] : "");
		return SBX_INIT_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	sock = connect_loopback(port);
	if (sock < 0) {
		sbx_init_msg("nothing listens on port %u of the sandbox's loopback (%s)", port,
			     strerror(errno));
		return SBX_INIT_EXIT_REFUSED;
	}
	fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
	fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd p[3] = {{.fd = -1}, {.fd = -1}, {.fd = -1}};

		/* The connection ended and all it said is out: done. */
		if (down.eof && down.len == 0)
			return 0;
		/* The host let go: the connection ends with it. */
		if (up.eof)
			return 0;
		p[0].fd = STDIN_FILENO;
		p[0].events = up.len == 0 ? POLLIN : 0;
		p[1].fd = sock;
		p[1].events =
			(short)((down.len == 0 && !down.eof ? POLLIN : 0) | (up.len ? POLLOUT : 0));
		p[2].fd = STDOUT_FILENO;
		p[2].events = down.len ? POLLOUT : 0;
		/* Nothing asked of an fd: not polled (a hang-up would spin). */
		for (int k = 0; k < 3; k++)
			if (!p[k].events)
				p[k].fd = -1;
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return SBX_INIT_EXIT_USAGE;
		}
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && fill(STDIN_FILENO, &up) < 0)
			return 0;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (down.len == 0 && !down.eof && fill(sock, &down) < 0)
				down.eof = 1; /* reset: what came is written out */
		}
		if (up.len && drain(sock, &up, 1) < 0)
			down.eof = 1, up.len = 0;
		if (down.len && drain(STDOUT_FILENO, &down, 0) < 0)
			return 0;
	}
}
