/*
 * tests/unit/init/test_init_connect.c: `sbx-init connect PORT` (the relay
 * of a sandbox's port, init/connect.c) run directly on the host against a
 * listener of the test's own on 127.0.0.1: bytes both ways, a megabyte each
 * way at once, the connection's end, the end of its stdin, a port where
 * nothing listens, and the ports and forms it refuses.
 *
 * The init binary is $SANDBOXIO_INIT, or build/sbx-init relative to the
 * current directory (make runs tests from the top of the tree). Only
 * loopback is contacted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A hang guard only: one step that waits this long has hung. */
#define HANG_MS 60000
#define BIG (1u << 20)

static const char *init_path(void)
{
	const char *p = getenv("SANDBOXIO_INIT");

	return p && *p ? p : "build/sbx-init";
}

struct relay {
	pid_t pid;
	int in;	 /* the relay's stdin, our write end */
	int out; /* its stdout, our read end */
	int err; /* its stderr */
};

static void relay_start(struct relay *r, const char *const *args)
{
	int in[2], out[2], err[2];
	const char *argv[8] = {init_path(), "connect"};
	size_t n = 2;

	for (; args && *args && n < 7; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	r->in = in[1];
	r->out = out[0];
	r->err = err[0];
}

/* Reads fd to its end into buf (at most cap - 1, NUL-terminated). */
static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		assert_int_equal(poll(&p, 1, HANG_MS), 1);
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		if (n == 0 || len + (size_t)n >= cap - 1) {
			len += (size_t)n;
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	return len;
}

/* Waits for the relay; its exit code. */
static int relay_wait(struct relay *r)
{
	int st;

	if (r->in >= 0)
		close(r->in);
	close(r->out);
	close(r->err);
	assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* A listener on 127.0.0.1 (listening or, with listen_too 0, only bound:
 * a connection to it is refused); its port in *port. */
static int listener(unsigned *port, int listen_too)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (listen_too)
		assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int accept_one(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int fd;

	assert_int_equal(poll(&p, 1, HANG_MS), 1);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		assert_true(w > 0);
		c += w;
		n -= (size_t)w;
	}
}

static void relay_for(struct relay *r, unsigned port)
{
	char ps[16];
	const char *args[] = {ps, NULL};

	snprintf(ps, sizeof(ps), "%u", port);
	relay_start(r, args);
}

/* Bytes up, an answer down, the server's close ends the relay (exit 0). */
static void test_init_connect__both_ways(void **state)
{
	struct relay r;
	unsigned port;
	int lfd = listener(&port, 1), c;
	char buf[64];

	(void)state;
	relay_for(&r, port);
	c = accept_one(lfd);
	write_all(r.in, "ping", 4);
	assert_int_equal(read(c, buf, 4), 4);
	assert_memory_equal(buf, "ping", 4);
	write_all(c, "pong", 4);
	close(c);
	assert_int_equal(read_all(r.out, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "pong");
	assert_int_equal(relay_wait(&r), 0);
	close(lfd);
}

struct echo {
	int fd;
	size_t n;
};

/* Sends back n bytes of what it reads, then closes. */
static void *echo_main(void *arg)
{
	struct echo *e = arg;
	static char buf[65536];
	size_t done = 0;

	while (done < e->n) {
		ssize_t k = read(e->fd, buf, sizeof(buf));

		if (k <= 0)
			break;
		write_all(e->fd, buf, (size_t)k);
		done += (size_t)k;
	}
	close(e->fd);
	return NULL;
}

/* A megabyte each way at once: the relay never stops reading one side
 * while it cannot write the other. */
static void test_init_connect__megabyte_each_way(void **state)
{
	struct relay r;
	unsigned port;
	int lfd = listener(&port, 1);
	struct echo e = {.n = BIG};
	pthread_t t;
	char *up = malloc(BIG), *down = malloc(BIG + 1);
	size_t sent = 0, got = 0;

	(void)state;
	assert_non_null(up);
	assert_non_null(down);
	for (size_t k = 0; k < BIG; k++)
		up[k] = (char)(k * 7 + k / 251);
	relay_for(&r, port);
	e.fd = accept_one(lfd);
	assert_int_equal(pthread_create(&t, NULL, echo_main, &e), 0);
	fcntl(r.in, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct pollfd p[2] = {{.fd = sent < BIG ? r.in : -1, .events = POLLOUT},
				      {.fd = r.out, .events = POLLIN}};
		ssize_t n;

		assert_true(poll(p, 2, HANG_MS) > 0);
		if (p[0].revents & POLLOUT) {
			n = write(r.in, up + sent, BIG - sent);
			if (n > 0)
				sent += (size_t)n;
		}
		if (p[1].revents & (POLLIN | POLLHUP)) {
			n = read(r.out, down + got, BIG + 1 - got);
			assert_true(n >= 0);
			if (n == 0)
				break;
			got += (size_t)n;
		}
	}
	assert_int_equal(sent, BIG);
	assert_int_equal(got, BIG);
	assert_memory_equal(up, down, BIG);
	pthread_join(t, NULL);
	assert_int_equal(relay_wait(&r), 0);
	close(lfd);
	free(up);
	free(down);
}

/* The end of the relay's stdin ends the connection at once. */
static void test_init_connect__stdin_end_closes(void **state)
{
	struct relay r;
	unsigned port;
	int lfd = listener(&port, 1), c;
	char buf[8];

	(void)state;
	relay_for(&r, port);
	c = accept_one(lfd);
	close(r.in);
	r.in = -1;
	assert_int_equal(read_all(c, buf, sizeof(buf)), 0);
	assert_int_equal(relay_wait(&r), 0);
	close(c);
	close(lfd);
}

/* A port where nothing listens: exit 122 and a message naming the port. */
static void test_init_connect__closed_port(void **state)
{
	struct relay r;
	unsigned port;
	int bound = listener(&port, 0);
	char msg[512], want[64];

	(void)state;
	relay_for(&r, port);
	assert_int_equal(read_all(r.out, msg, sizeof(msg)), 0);
	read_all(r.err, msg, sizeof(msg));
	snprintf(want, sizeof(want), "nothing listens on port %u ", port);
	assert_non_null(strstr(msg, want));
	assert_int_equal(relay_wait(&r), 122);
	close(bound);
}

/* Ports outside 1..65535, or not in plain digits, and a wrong argument
 * count: a usage error (125) that says what a port is, and no connection. */
static void test_init_connect__bad_ports(void **state)
{
	static const char *const bad[] = {"0",	    "65536", "08", "+1",   "1x",   " 80",
					  "123456", "",	     "-1", "0x50", "99999"};
	char msg[512];

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		const char *args[] = {bad[k], NULL};
		struct relay r;

		relay_start(&r, args);
		read_all(r.err, msg, sizeof(msg));
		assert_non_null(strstr(msg, "a port 1..65535"));
		assert_int_equal(relay_wait(&r), 125);
	}
	{
		const char *none[] = {NULL}, *two[] = {"80", "81", NULL};
		struct relay r;

		relay_start(&r, none);
		assert_int_equal(relay_wait(&r), 125);
		relay_start(&r, two);
		assert_int_equal(relay_wait(&r), 125);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_connect__both_ways),
		cmocka_unit_test(test_init_connect__megabyte_each_way),
		cmocka_unit_test(test_init_connect__stdin_end_closes),
		cmocka_unit_test(test_init_connect__closed_port),
		cmocka_unit_test(test_init_connect__bad_ports),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
