/*
 * cli/egress/main.c: sbx-egress, the name checker of one sandbox
 * (docs/egress-names.md). Started by netpolicy/egress.c as
 *
 *   sbx-egress [--audit PATH]... [--tenant T] [--sandbox ID] [--trace ID]
 *              [--span ID] [--otlp 5] sbxXXXXXXXXXXXX NAME/PORT/ADDRESS...
 *
 * with descriptor 3 a pidfd on the sandbox's init and 4 the write end of a
 * pipe (with --otlp, 5 holds the exporter settings: cli/egress/span.c).
 * It forks once (the first process exits, so the one left belongs to no
 * caller), listens on 127.0.0.1 and [::1] with IP_TRANSPARENT on ports
 * the kernel picks, writes "PID START PORT4 PORT6\n" to 4, and serves until
 * the pidfd is readable (the sandbox is gone) or it is killed; anything that
 * stops it from starting is written to 4 as "error WHY\n" instead. Each
 * connection ends with one egress.connection event in the backend's audit
 * files (docs/audit.md), and, when the sandbox's creator traces, one span
 * (cli/egress/span.c). It keeps no descriptor but 0 to 4 of its starter
 * (5 is read and closed before it listens), and gives up every capability
 * once it listens.
 *
 * Each connection the sandbox's tproxy rules send here keeps the address the
 * sandbox named (getsockname). Its first bytes (at most SBX_SNI_MAX, with a
 * hang guard on the wait for them) decide (netpolicy/egress-decide.c): an
 * allowed one is relayed to that address from this host; a refused one is
 * reset at once (SO_LINGER 0). On plain HTTP every request's head is
 * checked in turn (cli/egress/relay.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/egress/egress.h"

#define PIDFD 3
#define READY_FD 4
#define OTLP_FD 5
#define CONN_MAX 256

static struct egress_cfg cfg;
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static int conns;

static int listener(int family, uint16_t *port)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_storage ss = {0};
	socklen_t len;

	if (fd < 0)
		return -1;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
		if (setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one)) < 0)
			goto fail;
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
		if (setsockopt(fd, SOL_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) < 0)
			goto fail;
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto fail;
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					: ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
fail:
	close(fd);
	return -1;
}

static void *conn_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;

	egress_serve(&cfg, fd);
	pthread_mutex_lock(&conn_lock);
	conns--;
	pthread_mutex_unlock(&conn_lock);
	return NULL;
}

/* Whether fd's local address is a loopback one: a connection made straight
 * to a listener by a process of this host, never one the sandbox's rules
 * sent here (they drop every local destination before the tproxy rules). */
static int straight_to_listener(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 1;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 1;
}

static void accept_one(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), over;
	pthread_attr_t at;
	pthread_t t;

	if (fd < 0)
		return;
	/* Any user of this host can connect to 127.0.0.1:PORT4: such a
	 * connection takes no slot and writes nothing to the sandbox's audit. */
	if (straight_to_listener(fd)) {
		egress_reset(fd);
		return;
	}
	pthread_mutex_lock(&conn_lock);
	over = conns >= CONN_MAX;
	if (!over)
		conns++;
	pthread_mutex_unlock(&conn_lock);
	if (over) {
		egress_reset(fd);
		return;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	if (pthread_create(&t, &at, conn_thread, (void *)(intptr_t)fd) != 0) {
		egress_reset(fd);
		pthread_mutex_lock(&conn_lock);
		conns--;
		pthread_mutex_unlock(&conn_lock);
	}
	pthread_attr_destroy(&at);
}

/*
 * Gives up every capability once the listeners are bound and the audit
 * files open: what is left (accepting on the listeners, connecting out,
 * writing the open audit files) needs none, and the bytes this process
 * reads come from the sandbox. No new privileges, and the bounding set and
 * securebits (when it may change them) so that none comes back.
 */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0}, {0}};

	if (prctl(PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) == 1) {
		for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
			(void)prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
		(void)prctl(PR_SET_SECUREBITS,
			    SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
				    SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
			    0, 0, 0);
	}
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &h, d) < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* Tells the starter why this checker cannot start. */
static int ready_error(const char *why)
{
	char line[600];
	int n = snprintf(line, sizeof(line), "error %.500s\n", why);

	if (write(READY_FD, line, (size_t)n) < 0)
		return 1;
	return 1;
}

int main(int argc, char **argv)
{
	struct pollfd p[3];
	unsigned long long start;
	uint16_t port4 = 0, port6 = 0;
	int l4, l6, np;
	pid_t pid;
	char line[96], why[600] = "";

	/* Only 0 to 4 (and 5 with --otlp) are this process's: whatever else
	 * the starter left open without close-on-exec (its Engine connections,
	 * an embedding program's sockets and files) would live as long as the
	 * sandbox. */
	closefrom(OTLP_FD + 1);
	if (argc < 3 || egress_cfg_parse(&cfg, argc - 1, argv + 1, why, sizeof(why)) < 0)
		return ready_error(why);
	if (cfg.otlp_fd != OTLP_FD)
		close(OTLP_FD);
	signal(SIGPIPE, SIG_IGN);
	pid = fork();
	if (pid < 0)
		return ready_error("fork failed");
	if (pid > 0)
		_exit(0); /* the caller waits for this one only */
	if (egress_audit_open(&cfg, why, sizeof(why)) < 0)
		return ready_error(why);
	egress_trace_open(&cfg);
	l4 = listener(AF_INET, &port4);
	l6 = listener(AF_INET6, &port6); /* none without IPv6: the rules then reset */
	if (l4 < 0 || egress_self_start(&start) < 0)
		return ready_error("cannot listen on 127.0.0.1 with IP_TRANSPARENT");
	if (drop_capabilities() < 0)
		return ready_error("cannot give up its capabilities");
	snprintf(line, sizeof(line), "%d %llu %u %u\n", (int)getpid(), start, port4,
		 l6 >= 0 ? port6 : 0);
	if (write(READY_FD, line, strlen(line)) != (ssize_t)strlen(line))
		return 1;
	close(READY_FD);
	p[0] = (struct pollfd){.fd = PIDFD, .events = POLLIN};
	p[1] = (struct pollfd){.fd = l4, .events = POLLIN};
	p[2] = (struct pollfd){.fd = l6, .events = POLLIN};
	np = l6 >= 0 ? 3 : 2;
	for (;;) {
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[0].revents)
			_exit(0); /* the sandbox is gone: every connection goes with us */
		for (int i = 1; i < np; i++)
			if (p[i].revents & POLLIN)
				accept_one(p[i].fd);
	}
}
