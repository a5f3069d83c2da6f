/*
 * tests/canary/test_canary.c: the canary harness checks itself, so that a
 * count of zero in an egress test means "nothing arrived" and not "the
 * recorder is blind". From the host (the test itself) it reaches a canary by
 * every protocol and expects each arrival recorded, a second canary to stay
 * at zero, a SYN to a closed port to count, and teardown to leave nothing.
 * Only canary addresses (routed to their own links, checked at start) and
 * loopback are ever sent to.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "canary/canary.h"

/* Hang guard of a wait for packets that must arrive: far above any plausible delay. */
#define WAIT_MS 120000

static struct canary_set *set;

static int setup(void **state)
{
	(void)state;
	if (!canary_supported())
		return 0;
	return canary_start(&set, 2);
}

static int teardown(void **state)
{
	(void)state;
	canary_stop(set);
	set = NULL;
	return 0;
}

#define NEED_ROOT()                                                                                \
	do {                                                                                       \
		if (!canary_supported())                                                           \
			skip();                                                                    \
	} while (0)

static int sockaddr_of(const char *addr, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		return sizeof(*a4);
	}
	assert_int_equal(inet_pton(AF_INET6, addr, &a6->sin6_addr), 1);
	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(port);
	return sizeof(*a6);
}

/* TCP connect + read; returns bytes read into buf, or -errno. */
static int tcp_get(const char *addr, uint16_t port, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = (socklen_t)sockaddr_of(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), got = 0, e;
	struct timeval tv = {.tv_sec = 3};
	const char req[] = "GET / HTTP/1.0\r\n\r\n";

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	assert_int_equal(write(fd, req, sizeof(req) - 1), (int)sizeof(req) - 1);
	for (;;) {
		ssize_t r = read(fd, buf + got, len - 1 - (size_t)got);
		if (r <= 0)
			break;
		got += (int)r;
	}
	buf[got] = '\0';
	close(fd);
	return got;
}

/* One UDP exchange; returns the answer's length or -1. */
static int udp_ask(const char *addr, uint16_t port, const void *q, size_t ql, void *a, size_t al)
{
	struct sockaddr_storage ss;
	socklen_t sl = (socklen_t)sockaddr_of(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t r = -1;

	if (sendto(fd, q, ql, 0, (struct sockaddr *)&ss, sl) == (ssize_t)ql &&
	    poll(&p, 1, 3000) == 1)
		r = recv(fd, a, al, 0);
	close(fd);
	return (int)r;
}

static void test_canary__records_each_protocol(void **state)
{
	const struct canary *c0, *c1;
	char buf[512], want[96];
	/* A query for probe.canary.test, type A, class IN, id 0x1234, RD. */
	static const unsigned char q[] = {0x12, 0x34, 1,   0,	0,   1,	  0,   0,   0,
					  0,	0,    0,   5,	'p', 'r', 'o', 'b', 'e',
					  6,	'c',  'a', 'n', 'a', 'r', 'y', 4,   't',
					  'e',	's',  't', 0,	0,   1,	  0,   1};
	unsigned char ans[512];
	int n;

	(void)state;
	NEED_ROOT();
	c0 = canary_get(set, 0);
	c1 = canary_get(set, 1);
	assert_non_null(c0);
	assert_non_null(c1);

	/* TCP over IPv4 and IPv6: the HTTP responder names the canary. */
	n = tcp_get(c0->addr4, CANARY_HTTP_PORT, buf, sizeof(buf));
	assert_true(n > 0);
	snprintf(want, sizeof(want), "canary %s", c0->name);
	assert_non_null(strstr(buf, "200 OK"));
	assert_non_null(strstr(buf, want));
	assert_true(tcp_get(c0->addr6, CANARY_HTTP_PORT2, buf, sizeof(buf)) > 0);
	assert_int_equal(canary_wait(set, 0, CANARY_TCP, 2, WAIT_MS), 2);

	/* UDP echo. */
	n = udp_ask(c0->addr4, CANARY_ECHO_PORT, "ping", 4, ans, sizeof(ans));
	assert_int_equal(n, 4);
	assert_memory_equal(ans, "ping", 4);
	assert_int_equal(canary_wait(set, 0, CANARY_UDP, 1, WAIT_MS), 1);

	/* DNS: the fixed answer is the canary's own address, and the name is recorded. */
	n = udp_ask(c0->addr4, CANARY_DNS_PORT, q, sizeof(q), ans, sizeof(ans));
	assert_true(n >= (int)sizeof(q) + 16);
	assert_int_equal(ans[7], 1);
	inet_ntop(AF_INET, ans + n - 4, buf, sizeof(buf));
	assert_string_equal(buf, c0->addr4);
	assert_int_equal(canary_wait(set, 0, CANARY_DNS, 1, WAIT_MS), 1);
	assert_string_equal(canary_dns_query(set, 0, 0), "probe.canary.test");

	/* ICMP echo, from a raw socket (the test runs as root). */
	{
		struct sockaddr_storage ss;
		socklen_t sl = (socklen_t)sockaddr_of(c0->addr4, 0, &ss);
		unsigned char e[8] = {ICMP_ECHO, 0, 0, 0, 0, 1, 0, 1};
		unsigned sum = 0;
		int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);

		for (size_t k = 0; k < sizeof(e); k += 2)
			sum += (unsigned)e[k] << 8 | e[k + 1];
		sum = (sum >> 16) + (sum & 0xffff);
		sum = ~(sum + (sum >> 16)) & 0xffff;
		e[2] = (unsigned char)(sum >> 8);
		e[3] = (unsigned char)sum;
		assert_true(fd >= 0);
		assert_int_equal(sendto(fd, e, sizeof(e), 0, (struct sockaddr *)&ss, sl), 8);
		close(fd);
	}
	assert_int_equal(canary_wait(set, 0, CANARY_ICMP, 1, WAIT_MS), 1);

	/* Every one of those packets counted; the other canary saw nothing. */
	assert_true(canary_arrivals(set, 0, CANARY_ANY) >= 6);
	assert_int_equal(canary_arrivals(set, 1, CANARY_ANY), 0);
	assert_int_equal(canary_arrivals(set, 1, CANARY_TCP), 0);
}

static void test_canary__syn_to_closed_port_counted(void **state)
{
	const struct canary *c1;
	char buf[64];
	unsigned before;

	(void)state;
	NEED_ROOT();
	c1 = canary_get(set, 1);
	before = canary_arrivals(set, 1, CANARY_ANY);
	assert_int_equal(tcp_get(c1->addr4, 81, buf, sizeof(buf)), -ECONNREFUSED);
	assert_true(canary_wait(set, 1, CANARY_ANY, before + 1, WAIT_MS) > before);
	assert_int_equal(canary_arrivals(set, 1, CANARY_TCP), 0);
}

static void test_canary__hosts_file_names_every_canary(void **state)
{
	char path[] = "/tmp/canary-hosts-XXXXXX", text[2048], line[256];
	int fd;
	ssize_t n;

	(void)state;
	NEED_ROOT();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(canary_write_hosts(set, path, "198.51.100.7 extra.canary.test\n"), 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	unlink(path);
	assert_true(n > 0);
	text[n] = '\0';
	for (int i = 0; i < canary_count(set); i++) {
		snprintf(line, sizeof(line), "%s %s\n", canary_get(set, i)->addr4,
			 canary_get(set, i)->name);
		assert_non_null(strstr(text, line));
		snprintf(line, sizeof(line), "%s %s\n", canary_get(set, i)->addr6,
			 canary_get(set, i)->name);
		assert_non_null(strstr(text, line));
	}
	assert_non_null(strstr(text, "extra.canary.test"));
}

static void test_canary__teardown_leaves_nothing(void **state)
{
	struct canary_set *s = NULL;
	struct canary c[3];
	char path[64];

	(void)state;
	NEED_ROOT();
	assert_int_equal(canary_start(&s, 3), 0);
	for (int i = 0; i < 3; i++)
		c[i] = *canary_get(s, i);
	canary_stop(s);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/run/netns/%s", c[i].netns);
		assert_int_equal(access(path, F_OK), -1);
		assert_int_equal(if_nametoindex(c[i].link), 0);
	}
}

static void test_canary__loopback_listener_records(void **state)
{
	struct canary_loopback *l = NULL;
	char buf[16];
	uint16_t port;

	(void)state;
	NEED_ROOT();
	assert_int_equal(canary_loopback_start(&l), 0);
	port = canary_loopback_port(l);
	assert_true(port > 0);
	assert_true(tcp_get("127.0.0.1", port, buf, sizeof(buf)) >= 0);
	assert_true(tcp_get("::1", port, buf, sizeof(buf)) >= 0);
	{
		struct sockaddr_storage ss;
		socklen_t sl = (socklen_t)sockaddr_of("127.0.0.1", port, &ss);
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		assert_int_equal(sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, sl), 1);
		close(fd);
	}
	for (int k = 0; k < WAIT_MS / 10 && canary_loopback_arrivals(l, CANARY_ANY) < 3; k++)
		usleep(10000);
	assert_int_equal(canary_loopback_arrivals(l, CANARY_TCP), 2);
	assert_int_equal(canary_loopback_arrivals(l, CANARY_UDP), 1);
	canary_loopback_stop(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canary__records_each_protocol),
		cmocka_unit_test(test_canary__syn_to_closed_port_counted),
		cmocka_unit_test(test_canary__hosts_file_names_every_canary),
		cmocka_unit_test(test_canary__teardown_leaves_nothing),
		cmocka_unit_test(test_canary__loopback_listener_records),
	};

	return cmocka_run_group_tests_name("canary harness", tests, setup, teardown);
}
