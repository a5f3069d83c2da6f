/*
 * cli/egress/relay.c: one connection of sbx-egress: the check of its first
 * bytes, the connection to the address the sandbox named, and the relay
 * both ways, following the requests of a plain HTTP connection so that
 * each one's Host is checked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio/errors.h>

#include "cli/egress/egress.h"
#include "core/audit-int.h"
#include "core/record-int.h"
#include "netpolicy/sni-int.h"
#include "util/proc.h"

/* Hang guards, not bounds on speed: a client that connects and sends
 * nothing, and an address that never answers. */
#define FIRST_BYTES_GUARD_MS 30000
#define CONNECT_GUARD_MS 30000
#define COPY_BUF 65536

static int tokenise_entry(struct egress_cfg *c, const char *arg, char *why, size_t why_len)
{
	const char *w = NULL;

	if (c->n >= EGRESS_ENTRIES_MAX) {
		snprintf(why, why_len, "more than %d entries", EGRESS_ENTRIES_MAX);
		return -1;
	}
	if (sbx__egress_entry_parse(&c->v[c->n], arg, &w) < 0) {
		snprintf(why, why_len, "entry '%.300s': %s", arg, w);
		return -1;
	}
	c->n++;
	return 0;
}

/* The options before the table name; returns how many arguments they took. */
static int options(struct egress_cfg *c, int argc, char **argv, char *why, size_t why_len)
{
	int i = 0, files = 0;

	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		const char *v = argv[i + 1];

		if (strcmp(argv[i], "--audit") == 0 && files < 2)
			c->audit_file[files++] = v;
		else if (strcmp(argv[i], "--tenant") == 0)
			c->tenant = v;
		else if (strcmp(argv[i], "--sandbox") == 0)
			c->sandbox_id = v;
		else if (strcmp(argv[i], "--trace") == 0)
			c->trace_id = v;
		else if (strcmp(argv[i], "--span") == 0)
			c->span_id = v;
		else if (strcmp(argv[i], "--otlp") == 0 && strcmp(v, "5") == 0)
			c->otlp_fd = 5;
		else {
			snprintf(why, why_len, "unknown option '%.40s'", argv[i]);
			return -1;
		}
	}
	return i;
}

int egress_cfg_parse(struct egress_cfg *c, int argc, char **argv, char *why, size_t why_len)
{
	int i;

	memset(c, 0, sizeof(*c));
	c->otlp_fd = -1;
	if ((i = options(c, argc, argv, why, why_len)) < 0)
		return -1;
	if (i >= argc || strlen(argv[i]) != 15 || strncmp(argv[i], "sbx", 3) != 0) {
		snprintf(why, why_len, "'%.40s' is not a sandbox's table name",
			 i < argc ? argv[i] : "");
		return -1;
	}
	snprintf(c->table, sizeof(c->table), "%s", argv[i++]);
	c->v = calloc(EGRESS_ENTRIES_MAX, sizeof(*c->v));
	if (!c->v) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	for (; i < argc; i++)
		if (tokenise_entry(c, argv[i], why, why_len) < 0)
			return -1;
	if (c->n == 0) {
		snprintf(why, why_len, "no entries");
		return -1;
	}
	return 0;
}

int egress_audit_open(struct egress_cfg *c, char *why, size_t why_len)
{
	if (!c->audit_file[0])
		return 0;
	if (sbx__audit_open_required(&c->audit, c->audit_file[0], c->audit_file[1], NULL, NULL,
				     "docker") < 0) {
		snprintf(why, why_len, "%s", sbx_error_last()->message);
		return -1;
	}
	return 0;
}

int egress_record(const struct egress_cfg *c,
		  uint64_t start_ns,
		  const struct sbx__egress_verdict *v,
		  int family,
		  const uint8_t addr[16],
		  uint16_t port,
		  unsigned long long up,
		  unsigned long long down,
		  long long duration_ms)
{
	struct sbx__audit_ctx ctx = {.sandbox_id = c->sandbox_id,
				     .tenant = c->tenant,
				     .trace_id = c->trace_id,
				     .span_id = c->span_id};
	struct sbx__audit_egress e = {0};
	char a[INET6_ADDRSTRLEN];
	int named = 0, rc;

	inet_ntop(family, addr, a, sizeof(a));
	for (size_t i = 0; v->name[0] && i < c->n; i++)
		named |= sbx__names_match(c->v[i].name, v->name, strlen(v->name));
	e.allowed = v->verdict == SBX_EGRESS_ALLOW;
	e.reason = e.allowed ? NULL : v->verdict == SBX_EGRESS_MORE ? "closed" : v->reason;
	/* A name no entry allows is not recorded: it could carry what the
	 * sandbox holds, and this process knows no secret to redact. */
	e.name = named ? v->name : NULL;
	e.name_len = strlen(v->name);
	e.address = a;
	e.port = port;
	e.bytes_up = up;
	e.bytes_down = down;
	e.duration_ms = duration_ms > 0 ? (uint64_t)duration_ms : 0;
	/* The audit first: a span is an observer and may be lost. */
	rc = sbx__audit_egress(c->audit, &ctx, &e) < 0 ? -1 : 0;
	egress_span(c, &e, start_ns);
	return rc;
}

int egress_self_start(unsigned long long *start)
{
	return sbx__proc_start_time(getpid(), start) < 0 ? -1 : 0;
}

void egress_reset(int fd)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Connects to the address the sandbox named, from this host. */
static int connect_to(const struct sockaddr_storage *dst, socklen_t len)
{
	int fd = socket(dst->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)dst, len) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	while (poll(&p, 1, CONNECT_GUARD_MS) < 0 && errno == EINTR)
		;
	if (!(p.revents & POLLOUT) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

struct conn {
	const struct egress_cfg *cfg;
	int c, u; /* the sandbox's side, the address's side */
	int family;
	uint8_t addr[16];
	uint16_t port;
	uint8_t *pend; /* HTTP: client bytes not yet forwarded */
	size_t pend_n;
	unsigned long long credit; /* HTTP: bytes of the current request still allowed */
	unsigned long long up, down;
	/* TLS: the server's first bytes, until they tell whether it asks for
	 * a second ClientHello (sbx__tls_is_hrr), which is never let through. */
	uint8_t srv[SBX_TLS_HRR_LEN];
	size_t srv_n;
	int srv_known;
	struct sbx__egress_verdict v;
};

/* TLS: whether the server's bytes buf[0..n) so far ask for a second
 * ClientHello; -1 (and k->v says so) when they do. */
static int tls_server_bytes(struct conn *k, const uint8_t *buf, size_t n)
{
	size_t take = sizeof(k->srv) - k->srv_n;
	int hrr;

	if (k->v.http || k->srv_known)
		return 0;
	if (take > n)
		take = n;
	memcpy(k->srv + k->srv_n, buf, take);
	k->srv_n += take;
	hrr = sbx__tls_is_hrr(k->srv, k->srv_n);
	if (hrr < 0)
		return 0;
	k->srv_known = 1;
	if (hrr == 0)
		return 0;
	k->v.verdict = SBX_EGRESS_REFUSE;
	k->v.reason = "hello-retry";
	return -1;
}

/* HTTP: forwards what the requests checked so far allow, and checks each
 * next head. 0, or -1 when one is refused (c->v says why). */
static int http_forward(struct conn *k)
{
	while (k->pend_n) {
		if (k->credit) {
			size_t n = k->credit < k->pend_n ? (size_t)k->credit : k->pend_n;
			if (write_all(k->u, k->pend, n) < 0)
				return -1;
			k->up += n;
			k->credit -= n;
			memmove(k->pend, k->pend + n, k->pend_n - n);
			k->pend_n -= n;
			continue;
		}
		sbx__egress_decide(k->cfg->v, k->cfg->n, SBX_EGRESS_HTTP, k->family, k->addr,
				   k->port, k->pend, k->pend_n, &k->v);
		if (k->v.verdict == SBX_EGRESS_REFUSE)
			return -1;
		if (k->v.verdict == SBX_EGRESS_MORE) {
			if (k->pend_n >= SBX_SNI_MAX) {
				k->v.verdict = SBX_EGRESS_REFUSE;
				k->v.reason = "too-long";
				return -1;
			}
			return 0;
		}
		k->credit = k->v.head_len + k->v.body_len;
	}
	return 0;
}

/* Relays both ways until both sides have ended; -1 on a refusal or error. */
static int relay(struct conn *k)
{
	uint8_t *buf = malloc(COPY_BUF);
	int c_eof = 0, u_eof = 0, rc = 0;

	if (!buf)
		return -1;
	while (rc == 0 && !(c_eof && u_eof)) {
		struct pollfd p[2] = {{.fd = c_eof ? -1 : k->c, .events = POLLIN},
				      {.fd = u_eof ? -1 : k->u, .events = POLLIN}};
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		if (p[1].revents) {
			n = recv(k->u, buf, COPY_BUF, 0);
			if (n <= 0) {
				u_eof = 1;
				shutdown(k->c, SHUT_WR);
			} else if (tls_server_bytes(k, buf, (size_t)n) < 0 ||
				   write_all(k->c, buf, (size_t)n) < 0) {
				rc = -1;
			} else {
				k->down += (unsigned long long)n;
			}
		}
		if (rc == 0 && p[0].revents) {
			if (k->v.http) {
				n = recv(k->c, k->pend + k->pend_n, SBX_SNI_MAX - k->pend_n, 0);
				if (n > 0) {
					k->pend_n += (size_t)n;
					rc = http_forward(k);
				}
			} else {
				n = recv(k->c, buf, COPY_BUF, 0);
				if (n > 0 && write_all(k->u, buf, (size_t)n) < 0)
					rc = -1;
				else if (n > 0)
					k->up += (unsigned long long)n;
			}
			if (n <= 0) {
				c_eof = 1;
				shutdown(k->u, SHUT_WR);
			}
		}
	}
	free(buf);
	return rc;
}

/* Waits for the first bytes and decides; 1 allowed, 0 refused, -1 the
 * client left or sent nothing in time. */
static int first_bytes(struct conn *k)
{
	long long until = mono_ms() + FIRST_BYTES_GUARD_MS;

	for (;;) {
		struct pollfd p = {.fd = k->c, .events = POLLIN};
		long long left = until - mono_ms();
		ssize_t n;

		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!p.revents)
			continue;
		n = recv(k->c, k->pend + k->pend_n, SBX_SNI_MAX - k->pend_n, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		k->pend_n += (size_t)n;
		sbx__egress_decide(k->cfg->v, k->cfg->n, SBX_EGRESS_AUTO, k->family, k->addr,
				   k->port, k->pend, k->pend_n, &k->v);
		if (k->v.verdict == SBX_EGRESS_MORE && k->pend_n >= SBX_SNI_MAX) {
			k->v.verdict = SBX_EGRESS_REFUSE;
			k->v.reason = "too-long";
		}
		if (k->v.verdict != SBX_EGRESS_MORE)
			return k->v.verdict == SBX_EGRESS_ALLOW;
	}
}

void egress_serve(const struct egress_cfg *cfg, int fd)
{
	struct conn k = {.cfg = cfg, .c = fd, .u = -1};
	struct sockaddr_storage dst;
	socklen_t dl = sizeof(dst);
	long long t0 = mono_ms();
	uint64_t start_ns = sbx__record_now_ns();
	int ok = 0;

	k.pend = malloc(SBX_SNI_MAX);
	if (!k.pend || getsockname(fd, (struct sockaddr *)&dst, &dl) < 0) {
		free(k.pend);
		egress_reset(fd);
		return;
	}
	k.family = dst.ss_family;
	if (k.family == AF_INET) {
		memcpy(k.addr, &((struct sockaddr_in *)&dst)->sin_addr, 4);
		k.port = ntohs(((struct sockaddr_in *)&dst)->sin_port);
	} else {
		memcpy(k.addr, &((struct sockaddr_in6 *)&dst)->sin6_addr, 16);
		k.port = ntohs(((struct sockaddr_in6 *)&dst)->sin6_port);
	}
	ok = first_bytes(&k);
	if (ok == 1 && (k.u = connect_to(&dst, dl)) < 0) {
		k.v.verdict = SBX_EGRESS_REFUSE;
		k.v.reason = "unreachable";
		ok = 0;
	}
	if (ok == 1) {
		if (k.v.http) {
			k.credit = k.v.head_len + k.v.body_len;
			ok = http_forward(&k) == 0 && relay(&k) == 0;
		} else {
			ok = write_all(k.u, k.pend, k.pend_n) == 0;
			k.up = k.pend_n;
			ok = ok && relay(&k) == 0;
		}
	}
	if (k.u >= 0)
		ok ? close(k.u) : egress_reset(k.u);
	ok ? close(fd) : egress_reset(fd);
	free(k.pend);
	/* Fail closed: a connection that cannot be recorded ends the checker,
	 * and with it every connection; the rules then refuse new ones. */
	if (egress_record(cfg, start_ns, &k.v, k.family, k.addr, k.port, k.up, k.down,
			  mono_ms() - t0) < 0)
		_exit(3);
}
