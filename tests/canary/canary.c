/*
 * tests/canary/canary.c: canary hosts in network namespaces, and a listener
 * on the host's loopback, for egress contract tests (see canary.h).
 *
 * Each canary is one forked process that entered the canary's namespace and
 * serves and records there; the records live in a MAP_SHARED page the test
 * reads with atomic loads. Namespaces and links are made with iproute2 (test
 * code: no shell, argv only). A set holds a slot (flock on a file under
 * /run) that fixes its names and addresses, so concurrent test processes
 * never collide, and whatever a crashed holder left is removed by the next
 * holder. The recorder that backs CANARY_ANY is a packet socket on the
 * canary's link: it sees a SYN to a closed port as surely as a connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "canary/canary-int.h"
#include "canary/canary.h"

extern char **environ;

#define SLOTS 64
#define LOCK_DIR "/run/sandboxio-canary"
/* A canary process never outlives this, whatever happens to the test. */
#define CHILD_MAX_LIFE_MS (30 * 60 * 1000)

#define NAMES_KEEP 16

struct shm {
	unsigned count[CANARY_MAX][CANARY_PROTO_MAX];
	/* Names asked for ("sni:NAME", "host:NAME") and how often; written by
	 * the canary under name_lock (one writer per canary). */
	char names[CANARY_MAX][NAMES_KEEP][300];
	unsigned name_count[CANARY_MAX][NAMES_KEEP];
	unsigned dns_n[CANARY_MAX];
	char dns_name[CANARY_MAX][CANARY_DNS_KEEP][256];
};

struct canary_set {
	int n, slot, lock_fd;
	struct canary host[CANARY_MAX];
	pid_t pid[CANARY_MAX];
	int stop_fd[CANARY_MAX];
	struct shm *shm;
	struct canary_set *next;
};

struct canary_loopback {
	pid_t pid;
	int stop_fd;
	uint16_t port;
	struct shm *shm;
	struct canary_loopback *next;
};

static struct canary_set *live_sets;
static struct canary_loopback *live_loops;
static int atexit_done;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int canary_supported(void)
{
	return geteuid() == 0;
}

int canary_spawn(const char *const argv[], char *out, size_t out_len)
{
	posix_spawn_file_actions_t fa;
	int pfd[2] = {-1, -1}, status = 0;
	size_t got = 0;
	pid_t pid;

	if (out && pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out)
		posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (!getenv("CANARY_VERBOSE")) /* set it to see the tools' complaints */
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		if (out) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (out) {
		close(pfd[1]);
		for (;;) {
			ssize_t r = read(pfd[0], out + got, out_len - 1 - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
			if (got == out_len - 1)
				break;
		}
		out[got] = '\0';
		close(pfd[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define IP(...)                                                                                    \
	({                                                                                         \
		const char *const _a[] = {"ip", __VA_ARGS__, NULL};                                \
		canary_spawn(_a, NULL, 0);                                                         \
	})

/* ===== Addresses and names of a slot ===== */

static void fill_names(struct canary *c, int slot, int i)
{
	int k = slot * CANARY_MAX + i; /* 0..511: one /24 of 198.18.0.0/15 each */

	snprintf(c->name, sizeof(c->name), "c%d.s%d.canary.test", i, slot);
	snprintf(c->addr4, sizeof(c->addr4), "198.%d.%d.2", 18 + (k >> 8), k & 255);
	snprintf(c->prefix4, sizeof(c->prefix4), "198.%d.%d.0/24", 18 + (k >> 8), k & 255);
	snprintf(c->addr6, sizeof(c->addr6), "2001:db8:ca:%x::2", k);
	snprintf(c->prefix6, sizeof(c->prefix6), "2001:db8:ca:%x::/64", k);
	snprintf(c->netns, sizeof(c->netns), "cnry-%d-%d", slot, i);
	snprintf(c->link, sizeof(c->link), "cnry%dh%d", slot, i);
}

static void host_addrs(const struct canary *c, char *a4, size_t n4, char *a6, size_t n6)
{
	snprintf(a4, n4, "%.*s1/24", (int)(strrchr(c->addr4, '.') - c->addr4 + 1), c->addr4);
	snprintf(a6, n6, "%.*s1/64", (int)(strlen(c->addr6) - 1), c->addr6);
}

/* Removes whatever a slot's holder may have left: namespaces and links. */
static void scrub_slot(int slot)
{
	for (int i = 0; i < CANARY_MAX; i++) {
		struct canary c;
		char path[64];

		fill_names(&c, slot, i);
		if (if_nametoindex(c.link))
			IP("link", "del", c.link);
		snprintf(path, sizeof(path), "/run/netns/%s", c.netns);
		if (access(path, F_OK) == 0)
			IP("netns", "del", c.netns);
	}
}

/* Takes the first free slot, and scrubs every free slot on the way: what a
 * crashed test left in any of them goes now. */
static int take_slot(int *slot_out)
{
	char path[128];
	int got = -1;

	mkdir(LOCK_DIR, 0700);
	for (int s = 0; s < SLOTS; s++) {
		int fd;

		snprintf(path, sizeof(path), LOCK_DIR "/slot-%d", s);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			break;
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			close(fd);
			continue;
		}
		scrub_slot(s);
		if (got < 0) {
			*slot_out = s;
			got = fd;
		} else {
			close(fd);
		}
	}
	return got;
}

/* ===== The canary process ===== */

static void bump(struct shm *m, int i, enum canary_proto p)
{
	__atomic_fetch_add(&m->count[i][p], 1, __ATOMIC_SEQ_CST);
}

/* Counts one request for name (kind "sni" or "host"); "" is not counted. */
static void record_name(struct shm *m, int i, const char *kind, const char *name)
{
	char what[300];

	if (!name[0])
		return;
	snprintf(what, sizeof(what), "%s:%s", kind, name);
	for (int k = 0; k < NAMES_KEEP; k++) {
		if (!m->names[i][k][0])
			snprintf(m->names[i][k], sizeof(m->names[i][k]), "%s", what);
		if (strcmp(m->names[i][k], what) == 0) {
			__atomic_fetch_add(&m->name_count[i][k], 1, __ATOMIC_SEQ_CST);
			return;
		}
	}
}

static int listen_on(int type, uint16_t port, const char *bind6)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	int fd = socket(AF_INET6, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, zero = 0;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, bind6 ? &one : &zero, sizeof(int));
	if (bind6)
		inet_pton(AF_INET6, bind6, &a.sin6_addr);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void serve_http(int lfd, struct shm *m, int i, const char *name)
{
	char req[2048], resp[256];
	struct pollfd p;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	int body;

	if (fd < 0)
		return;
	bump(m, i, CANARY_TCP);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 300) > 0) {
		ssize_t n = read(fd, req, sizeof(req) - 1);
		char host[256];

		req[n > 0 ? n : 0] = '\0';
		canary__http_host(req, host, sizeof(host));
		record_name(m, i, "host", host);
	}
	body = (int)strlen(name) + 8;
	snprintf(resp, sizeof(resp),
		 "HTTP/1.0 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\ncanary %s\n",
		 body, name);
	if (write(fd, resp, strlen(resp)) < 0) {
		/* the client went away: it still counted as an arrival */
	}
	shutdown(fd, SHUT_WR);
	if (poll(&p, 1, 100) > 0 && read(fd, req, sizeof(req)) < 0) {
	}
	close(fd);
}

static void serve_echo(int fd, struct shm *m, int i)
{
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	char buf[2048];
	ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);

	if (n < 0)
		return;
	bump(m, i, CANARY_UDP);
	sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
}

/* Reads a query name (no compression in questions); returns the offset past it. */
static size_t dns_qname(const unsigned char *q, size_t n, size_t off, char *dst, size_t dl)
{
	size_t o = 0;

	while (off < n && q[off]) {
		unsigned len = q[off++];
		if (len > 63 || off + len > n)
			return 0;
		for (unsigned k = 0; k < len && o + 2 < dl; k++) {
			unsigned char ch = q[off + k];
			dst[o++] = (ch > 32 && ch < 127) ? (char)ch : '?';
		}
		if (o + 1 < dl)
			dst[o++] = '.';
		off += len;
	}
	if (off >= n)
		return 0;
	if (o)
		o--; /* drop the last dot */
	dst[o] = '\0';
	return off + 1;
}

static void serve_dns(int fd, struct shm *m, int i, const struct canary *c)
{
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	unsigned char q[512], r[600];
	char name[256] = "";
	size_t end, rl;
	unsigned k, qtype;
	ssize_t n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fl);

	if (n < 0)
		return;
	bump(m, i, CANARY_DNS);
	if (n < 12)
		return;
	end = dns_qname(q, (size_t)n, 12, name, sizeof(name));
	k = __atomic_fetch_add(&m->dns_n[i], 1, __ATOMIC_SEQ_CST);
	if (k < CANARY_DNS_KEEP)
		snprintf(m->dns_name[i][k], sizeof(m->dns_name[i][k]), "%s", name);
	if (!end || end + 4 > (size_t)n)
		return;
	qtype = (unsigned)q[end] << 8 | q[end + 1];
	end += 4;
	memcpy(r, q, end);
	r[2] = 0x84 | (q[2] & 0x01); /* QR, AA, RD copied */
	r[3] = 0;
	r[4] = 0, r[5] = 1; /* one question */
	r[6] = 0, r[7] = 0; /* answers: below */
	memset(r + 8, 0, 4);
	rl = end;
	if (qtype == 1 || qtype == 28) {
		unsigned char addr[16];
		int len = qtype == 1 ? 4 : 16;

		inet_pton(qtype == 1 ? AF_INET : AF_INET6, qtype == 1 ? c->addr4 : c->addr6, addr);
		r[7] = 1;
		r[rl++] = 0xc0, r[rl++] = 12; /* the question's name */
		r[rl++] = 0, r[rl++] = (unsigned char)qtype;
		r[rl++] = 0, r[rl++] = 1; /* IN */
		r[rl++] = 0, r[rl++] = 0, r[rl++] = 0, r[rl++] = 60;
		r[rl++] = 0, r[rl++] = (unsigned char)len;
		memcpy(r + rl, addr, (size_t)len);
		rl += (size_t)len;
	}
	sendto(fd, r, rl, 0, (struct sockaddr *)&from, fl);
}

static void count_icmp4(int fd, struct shm *m, int i)
{
	unsigned char buf[2048];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	size_t hl;

	if (n < (ssize_t)sizeof(struct ip))
		return;
	hl = (size_t)(buf[0] & 0x0f) * 4;
	if ((size_t)n > hl && buf[hl] == 8) /* echo request */
		bump(m, i, CANARY_ICMP);
}

static void count_icmp6(int fd, struct shm *m, int i)
{
	unsigned char buf[2048];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);

	if (n > 0 && buf[0] == ICMP6_ECHO_REQUEST)
		bump(m, i, CANARY_ICMP);
}

/* Every unicast packet to the canary that is TCP, UDP or an ICMP echo request
 * counts; link chatter (ARP, neighbour discovery, MLD) does not. */
static void count_any(int fd, struct shm *m, int i)
{
	unsigned char b[256];
	struct sockaddr_ll ll;
	socklen_t sl = sizeof(ll);
	ssize_t n = recvfrom(fd, b, sizeof(b), MSG_TRUNC, (struct sockaddr *)&ll, &sl);
	int hit = 0;

	if (n <= 0 || ll.sll_pkttype != PACKET_HOST)
		return;
	if (ntohs(ll.sll_protocol) == ETH_P_IP && n >= 20) {
		size_t hl = (size_t)(b[0] & 0x0f) * 4;
		hit = b[9] == IPPROTO_TCP || b[9] == IPPROTO_UDP ||
		      (b[9] == IPPROTO_ICMP && (size_t)n > hl && b[hl] == 8);
	} else if (ntohs(ll.sll_protocol) == ETH_P_IPV6 && n >= 41) {
		hit = b[6] == IPPROTO_TCP || b[6] == IPPROTO_UDP ||
		      (b[6] == IPPROTO_ICMPV6 && b[40] == ICMP6_ECHO_REQUEST);
	}
	if (hit)
		bump(m, i, CANARY_ANY);
}

enum {
	F_STOP,
	F_HTTP1,
	F_HTTP2,
	F_ECHO,
	F_DNS,
	F_ICMP4,
	F_ICMP6,
	F_ANY,
	F_HTTPS,
	F_HTTPS_RETRY,
	F_N
};

static void serve_https(int lfd, struct shm *m, int i, const char *name, int retry)
{
	char sni[256], host[256];
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	bump(m, i, CANARY_TCP);
	/* Blocking for the handshake, bounded by the socket's timeouts. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if ((retry ? canary__tls_serve_retry : canary__tls_serve)(fd, name, sni, sizeof(sni), host,
								  sizeof(host)) == 0) {
		record_name(m, i, "sni", sni);
		record_name(m, i, "host", host);
	}
	close(fd);
}

static int canary_child(const struct canary *c, int i, struct shm *m, int stop_fd, int ready_fd)
{
	struct pollfd p[F_N];
	char path[64];
	int nsfd, ifx;
	uint64_t end = now_ms() + CHILD_MAX_LIFE_MS;
	struct icmp6_filter flt;
	struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};

	snprintf(path, sizeof(path), "/run/netns/%s", c->netns);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
		return 1;
	close(nsfd);
	for (int k = 0; k < F_N; k++)
		p[k] = (struct pollfd){.fd = -1, .events = POLLIN};
	p[F_STOP].fd = stop_fd;
	p[F_HTTP1].fd = listen_on(SOCK_STREAM, CANARY_HTTP_PORT, NULL);
	p[F_HTTP2].fd = listen_on(SOCK_STREAM, CANARY_HTTP_PORT2, NULL);
	p[F_ECHO].fd = listen_on(SOCK_DGRAM, CANARY_ECHO_PORT, NULL);
	p[F_DNS].fd = listen_on(SOCK_DGRAM, CANARY_DNS_PORT, NULL);
	{
		int tls = canary__tls_ready();
		if (tls < 0)
			return 1;
		if (tls) {
			p[F_HTTPS].fd = listen_on(SOCK_STREAM, CANARY_HTTPS_PORT, NULL);
			p[F_HTTPS_RETRY].fd = listen_on(SOCK_STREAM, CANARY_HTTPS_RETRY_PORT, NULL);
		}
	}
	p[F_ICMP4].fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMP);
	p[F_ICMP6].fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMPV6);
	ICMP6_FILTER_SETBLOCKALL(&flt);
	ICMP6_FILTER_SETPASS(ICMP6_ECHO_REQUEST, &flt);
	if (p[F_ICMP6].fd >= 0)
		setsockopt(p[F_ICMP6].fd, IPPROTO_ICMPV6, ICMP6_FILTER, &flt, sizeof(flt));
	p[F_ANY].fd =
		socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
	ifx = (int)if_nametoindex("eth0");
	ll.sll_ifindex = ifx;
	if (ifx <= 0 || p[F_ANY].fd < 0 ||
	    bind(p[F_ANY].fd, (struct sockaddr *)&ll, sizeof(ll)) < 0)
		return 1;
	for (int k = 1; k < F_N; k++)
		if (p[k].fd < 0 && k != F_HTTPS && k != F_HTTPS_RETRY)
			return 1;
	if (write(ready_fd, "1", 1) != 1)
		return 1;
	close(ready_fd);
	while (now_ms() < end) {
		int r = poll(p, F_N, 500);

		if (r < 0 && errno != EINTR)
			return 1;
		if (r <= 0)
			continue;
		if (p[F_STOP].revents)
			return 0;
		if (p[F_ANY].revents & POLLIN)
			count_any(p[F_ANY].fd, m, i);
		if (p[F_HTTP1].revents & POLLIN)
			serve_http(p[F_HTTP1].fd, m, i, c->name);
		if (p[F_HTTP2].revents & POLLIN)
			serve_http(p[F_HTTP2].fd, m, i, c->name);
		if (p[F_HTTPS].revents & POLLIN)
			serve_https(p[F_HTTPS].fd, m, i, c->name, 0);
		if (p[F_HTTPS_RETRY].revents & POLLIN)
			serve_https(p[F_HTTPS_RETRY].fd, m, i, c->name, 1);
		if (p[F_ECHO].revents & POLLIN)
			serve_echo(p[F_ECHO].fd, m, i);
		if (p[F_DNS].revents & POLLIN)
			serve_dns(p[F_DNS].fd, m, i, c);
		if (p[F_ICMP4].revents & POLLIN)
			count_icmp4(p[F_ICMP4].fd, m, i);
		if (p[F_ICMP6].revents & POLLIN)
			count_icmp6(p[F_ICMP6].fd, m, i);
	}
	return 0;
}

/* Forks a recorder; returns its pid with *stop_out the pipe whose closing
 * ends it, after the child said it is ready (or -1). */
static pid_t fork_child(int (*fn)(void *, int, int), void *arg, int *stop_out)
{
	int stop[2], ready[2];
	char c;
	pid_t parent = getpid(), pid;
	struct pollfd p;

	if (pipe2(stop, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(ready, O_CLOEXEC) < 0) {
		close(stop[0]);
		close(stop[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		/* Keep no other recorder's stop pipe open, or closing it would
		 * not end that recorder. */
		for (int fd = 3; fd < 4096; fd++)
			if (fd != stop[0] && fd != ready[1])
				close(fd);
		_exit(fn(arg, stop[0], ready[1]));
	}
	close(stop[0]);
	close(ready[1]);
	p = (struct pollfd){.fd = ready[0], .events = POLLIN};
	if (pid < 0 || poll(&p, 1, 10000) != 1 || read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		close(stop[1]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(ready[0]);
	*stop_out = stop[1];
	return pid;
}

struct child_arg {
	const struct canary *c;
	int i;
	struct shm *m;
};

static int canary_child_tramp(void *a, int stop_fd, int ready_fd)
{
	struct child_arg *ca = a;

	return canary_child(ca->c, ca->i, ca->m, stop_fd, ready_fd);
}

static void end_child(pid_t *pid, int *stop_fd)
{
	if (*stop_fd >= 0)
		close(*stop_fd);
	*stop_fd = -1;
	if (*pid > 0) {
		/* Closing the pipe asks it to leave; a kill makes sure. */
		for (int k = 0; k < 50 && waitpid(*pid, NULL, WNOHANG) == 0; k++)
			usleep(10000);
		if (kill(*pid, SIGKILL) == 0)
			waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

/* ===== Sets ===== */

static void stop_all_at_exit(void)
{
	while (live_sets)
		canary_stop(live_sets);
	while (live_loops)
		canary_loopback_stop(live_loops);
}

static void register_exit(void)
{
	if (!atexit_done) {
		atexit(stop_all_at_exit);
		atexit_done = 1;
	}
}

/* Sets up one canary's namespace and link; returns 0 or -1. */
static int build_one(const struct canary *c)
{
	char h4[32], h6[64], a4[32], a6[64], route[512];
	const char *const get[] = {"ip", "-o", "route", "get", c->addr4, NULL};
	const char *const get6[] = {"ip", "-o", "-6", "route", "get", c->addr6, NULL};
	char want[32];

	host_addrs(c, h4, sizeof(h4), h6, sizeof(h6));
	snprintf(a4, sizeof(a4), "%s/24", c->addr4);
	snprintf(a6, sizeof(a6), "%s/64", c->addr6);
	if (IP("netns", "add", c->netns) != 0 ||
	    IP("link", "add", c->link, "type", "veth", "peer", "name", "eth0", "netns", c->netns) !=
		    0 ||
	    IP("-n", c->netns, "link", "set", "lo", "up") != 0 ||
	    IP("-n", c->netns, "addr", "add", a4, "dev", "eth0") != 0 ||
	    IP("-n", c->netns, "addr", "add", a6, "dev", "eth0", "nodad") != 0 ||
	    IP("-n", c->netns, "link", "set", "eth0", "up") != 0 ||
	    IP("addr", "add", h4, "dev", c->link) != 0 ||
	    IP("addr", "add", h6, "dev", c->link, "nodad") != 0 ||
	    IP("link", "set", c->link, "up") != 0)
		return -1;
	/* The safety check: the host must route each canary address to the
	 * canary's own link, or no test may send a packet to it. */
	snprintf(want, sizeof(want), " dev %s ", c->link);
	if (canary_spawn(get, route, sizeof(route)) != 0 || !strstr(route, want))
		return -1;
	if (canary_spawn(get6, route, sizeof(route)) != 0 || !strstr(route, want))
		return -1;
	return 0;
}

int canary_start(struct canary_set **out, int n)
{
	struct canary_set *s;

	if (n < 1 || n > CANARY_MAX || !canary_supported()) {
		fprintf(stderr, "canary: need root and 1..%d canaries\n", CANARY_MAX);
		return -1;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->shm = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (s->shm == MAP_FAILED) {
		free(s);
		return -1;
	}
	for (int i = 0; i < CANARY_MAX; i++)
		s->stop_fd[i] = -1;
	s->lock_fd = take_slot(&s->slot);
	if (s->lock_fd < 0) {
		fprintf(stderr, "canary: no free slot under " LOCK_DIR "\n");
		munmap(s->shm, sizeof(struct shm));
		free(s);
		return -1;
	}
	register_exit();
	s->next = live_sets;
	live_sets = s;
	for (int i = 0; i < n; i++) {
		struct child_arg ca = {.c = &s->host[i], .i = i, .m = s->shm};

		fill_names(&s->host[i], s->slot, i);
		s->n = i + 1;
		if (build_one(&s->host[i]) < 0) {
			fprintf(stderr,
				"canary: cannot set up %s (iproute2 failed or the host "
				"does not route its address to its link)\n",
				s->host[i].netns);
			goto fail;
		}
		s->pid[i] = fork_child(canary_child_tramp, &ca, &s->stop_fd[i]);
		if (s->pid[i] < 0) {
			s->pid[i] = 0;
			fprintf(stderr, "canary: %s did not start serving\n", s->host[i].netns);
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	canary_stop(s);
	return -1;
}

void canary_stop(struct canary_set *s)
{
	struct canary_set **pp;

	if (!s)
		return;
	for (pp = &live_sets; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	for (int i = 0; i < CANARY_MAX; i++)
		end_child(&s->pid[i], &s->stop_fd[i]);
	scrub_slot(s->slot);
	munmap(s->shm, sizeof(struct shm));
	close(s->lock_fd);
	free(s);
}

int canary_count(const struct canary_set *s)
{
	return s->n;
}

const struct canary *canary_get(const struct canary_set *s, int i)
{
	return i >= 0 && i < s->n ? &s->host[i] : NULL;
}

unsigned canary_arrivals(const struct canary_set *s, int i, enum canary_proto proto)
{
	if (i < 0 || i >= s->n || (int)proto < 0 || proto >= CANARY_PROTO_MAX)
		return 0;
	return __atomic_load_n(&s->shm->count[i][proto], __ATOMIC_SEQ_CST);
}

unsigned canary_name_arrivals(const struct canary_set *s, int i, const char *what)
{
	if (!s || i < 0 || i >= s->n)
		return 0;
	for (int k = 0; k < NAMES_KEEP; k++)
		if (strcmp(s->shm->names[i][k], what) == 0)
			return __atomic_load_n(&s->shm->name_count[i][k], __ATOMIC_SEQ_CST);
	return 0;
}

unsigned canary_arrivals_all(const struct canary_set *s)
{
	unsigned t = 0;

	for (int i = 0; i < s->n; i++)
		t += canary_arrivals(s, i, CANARY_ANY);
	return t;
}

const char *canary_dns_query(const struct canary_set *s, int i, unsigned k)
{
	if (i < 0 || i >= s->n || k >= CANARY_DNS_KEEP ||
	    k >= __atomic_load_n(&s->shm->dns_n[i], __ATOMIC_SEQ_CST))
		return NULL;
	return s->shm->dns_name[i][k];
}

unsigned
canary_wait(const struct canary_set *s, int i, enum canary_proto proto, unsigned want, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	unsigned v;

	while ((v = canary_arrivals(s, i, proto)) < want && now_ms() < end)
		usleep(10000);
	return v;
}

int canary_write_hosts(const struct canary_set *s, const char *path, const char *extra)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	fprintf(f, "# canary hosts (tests/canary)\n");
	for (int i = 0; i < s->n; i++)
		fprintf(f, "%s %s\n%s %s\n", s->host[i].addr4, s->host[i].name, s->host[i].addr6,
			s->host[i].name);
	if (extra)
		fputs(extra, f);
	return fclose(f) == 0 ? 0 : -1;
}

/* ===== The loopback listener ===== */

enum { L_STOP, L_TCP4, L_TCP6, L_UDP4, L_UDP6, L_N };

static int loop_child(void *arg, int stop_fd, int ready_fd)
{
	struct canary_loopback *l = arg;
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(l->port)};
	struct pollfd p[L_N];
	uint64_t end = now_ms() + CHILD_MAX_LIFE_MS;
	int one = 1;

	inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
	for (int k = 0; k < L_N; k++)
		p[k] = (struct pollfd){.fd = -1, .events = POLLIN};
	p[L_STOP].fd = stop_fd;
	p[L_TCP4].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	p[L_UDP4].fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	for (int k = L_TCP4; k <= L_UDP4; k += 2) {
		setsockopt(p[k].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(p[k].fd, (struct sockaddr *)&a4, sizeof(a4)) < 0)
			return 1;
	}
	if (listen(p[L_TCP4].fd, 16) < 0)
		return 1;
	p[L_TCP6].fd = listen_on(SOCK_STREAM, l->port, "::1");
	p[L_UDP6].fd = listen_on(SOCK_DGRAM, l->port, "::1");
	if (p[L_TCP6].fd < 0 || p[L_UDP6].fd < 0)
		return 1;
	if (write(ready_fd, "1", 1) != 1)
		return 1;
	close(ready_fd);
	while (now_ms() < end) {
		int r = poll(p, L_N, 500);

		if (r <= 0)
			continue;
		if (p[L_STOP].revents)
			return 0;
		for (int k = L_TCP4; k <= L_TCP6; k++)
			if (p[k].revents & POLLIN) {
				int fd = accept4(p[k].fd, NULL, NULL, SOCK_CLOEXEC);
				if (fd >= 0) {
					bump(l->shm, 0, CANARY_TCP);
					close(fd);
				}
			}
		for (int k = L_UDP4; k <= L_UDP6; k++)
			if (p[k].revents & POLLIN) {
				char b[512];
				if (recv(p[k].fd, b, sizeof(b), 0) >= 0)
					bump(l->shm, 0, CANARY_UDP);
			}
	}
	return 0;
}

/* A port free on 127.0.0.1 and ::1 for TCP and UDP, chosen by the kernel. */
static uint16_t free_port(void)
{
	for (int tries = 0; tries < 20; tries++) {
		struct sockaddr_in a = {.sin_family = AF_INET};
		socklen_t al = sizeof(a);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), t6, u6;
		uint16_t port;

		inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		port = ntohs(a.sin_port);
		close(fd);
		t6 = listen_on(SOCK_STREAM, port, "::1");
		u6 = listen_on(SOCK_DGRAM, port, "::1");
		if (t6 >= 0)
			close(t6);
		if (u6 >= 0)
			close(u6);
		if (t6 >= 0 && u6 >= 0)
			return port;
	}
	return 0;
}

int canary_loopback_start(struct canary_loopback **out)
{
	struct canary_loopback *l = calloc(1, sizeof(*l));

	if (!l)
		return -1;
	l->shm = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	l->stop_fd = -1;
	if (l->shm == MAP_FAILED) {
		free(l);
		return -1;
	}
	for (int tries = 0; tries < 5; tries++) {
		l->port = free_port();
		if (!l->port)
			continue;
		l->pid = fork_child(loop_child, l, &l->stop_fd);
		if (l->pid > 0)
			break;
		l->pid = 0;
	}
	if (l->pid <= 0) {
		munmap(l->shm, sizeof(struct shm));
		free(l);
		return -1;
	}
	register_exit();
	l->next = live_loops;
	live_loops = l;
	*out = l;
	return 0;
}

uint16_t canary_loopback_port(const struct canary_loopback *l)
{
	return l->port;
}

unsigned canary_loopback_arrivals(const struct canary_loopback *l, enum canary_proto proto)
{
	unsigned t = __atomic_load_n(&l->shm->count[0][CANARY_TCP], __ATOMIC_SEQ_CST);
	unsigned u = __atomic_load_n(&l->shm->count[0][CANARY_UDP], __ATOMIC_SEQ_CST);

	switch (proto) {
	case CANARY_TCP:
		return t;
	case CANARY_UDP:
		return u;
	case CANARY_ICMP:
	case CANARY_DNS:
	case CANARY_PROTO_MAX:
		return 0;
	case CANARY_ANY:
		break;
	}
	return t + u;
}

void canary_loopback_stop(struct canary_loopback *l)
{
	struct canary_loopback **pp;

	if (!l)
		return;
	for (pp = &live_loops; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	end_child(&l->pid, &l->stop_fd);
	munmap(l->shm, sizeof(struct shm));
	free(l);
}
