/*
 * netpolicy/egress.c: the name checker of a sandbox (sbx-egress, see
 * egress/main.c and docs/egress-names.md): starting it, recording it and
 * ending it, and the one host-wide policy route that delivers the packets
 * its tproxy rules mark to this host.
 *
 * The checker is spawned into a session of its own (POSIX_SPAWN_SETSID),
 * forks once more and the first process exits, so nothing ties it to the
 * process that attached the policy: a one-shot run, a create whose caller
 * exits, serve, the daemon. It holds a pidfd on the sandbox's init (given
 * as its descriptor 3) and ends when that becomes readable. Its pid and
 * start time are recorded in SBX_NP_EGRESS_DIR under the sandbox's table
 * name; detach and the sweep end it by that record, after checking that the
 * pid is still the same process (start time and name), through a pidfd so
 * that no other process can be signalled.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include <sandboxio/errors.h>

#include "netpolicy/netpolicy-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/proc.h"
#include "util/time.h"

/* How long a checker may take to listen, when the caller gives no deadline,
 * and how long an ended one may take to go: hang guards only. */
#define START_GUARD_MS 30000
#define STOP_GUARD_MS 10000

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The start time of pid, and whether its name is sbx-egress. Returns 0,
 * or -1 when the process is gone. */
static int proc_start(pid_t pid, unsigned long long *start, int *is_checker)
{
	char comm[32];

	if (sbx__proc_stat(pid, start, comm, sizeof(comm)) < 0)
		return -1;
	*is_checker = strcmp(comm, "sbx-egress") == 0;
	return 0;
}

/* ===== The host-wide policy route ===== */

static int nl_err(int err, const char *what)
{
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY, "name checker: %s: %s",
			      what, nl_geterror(err));
}

static int route_family(struct nl_sock *sk, int family, int lo)
{
	struct rtnl_rule *rule = rtnl_rule_alloc();
	struct rtnl_route *rt = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	uint8_t zero[16] = {0};
	struct nl_addr *dst = nl_addr_build(family, zero, family == AF_INET ? 4 : 16);
	int err = -NLE_NOMEM, rc = 0;

	if (rule && rt && nh && dst) {
		rtnl_rule_set_family(rule, family);
		rtnl_rule_set_prio(rule, SBX_NP_TPROXY_PRIO);
		rtnl_rule_set_mark(rule, SBX_NP_TPROXY_MARK);
		rtnl_rule_set_mask(rule, 0xffffffffu);
		rtnl_rule_set_table(rule, SBX_NP_TPROXY_TABLE);
		rtnl_rule_set_action(rule, FR_ACT_TO_TBL);
		err = rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL);
		if (err == -NLE_EXIST)
			err = 0;
	}
	if (err < 0) {
		rc = nl_err(err, "add the policy rule for marked packets");
	} else {
		nl_addr_set_prefixlen(dst, 0);
		rtnl_route_set_family(rt, (uint8_t)family);
		rtnl_route_set_table(rt, SBX_NP_TPROXY_TABLE);
		rtnl_route_set_type(rt, RTN_LOCAL);
		rtnl_route_set_scope(rt, RT_SCOPE_HOST);
		rtnl_route_set_dst(rt, dst);
		rtnl_route_nh_set_ifindex(nh, lo);
		rtnl_route_add_nexthop(rt, nh);
		nh = NULL; /* the route owns it now */
		err = rtnl_route_add(sk, rt, NLM_F_CREATE | NLM_F_EXCL);
		if (err < 0 && err != -NLE_EXIST)
			rc = nl_err(err, "add the local route of marked packets");
	}
	if (nh)
		rtnl_route_nh_free(nh);
	if (dst)
		nl_addr_put(dst);
	if (rt)
		rtnl_route_put(rt);
	if (rule)
		rtnl_rule_put(rule);
	return rc;
}

/* ip rule fwmark MARK lookup TABLE; ip route add local default dev lo table
 * TABLE; both families. Made once, kept: they touch marked packets only. */
static int policy_route(int v6)
{
	struct nl_sock *sk = nl_socket_alloc();
	int lo = (int)if_nametoindex("lo"), err, rc;

	if (!sk)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	if (!lo) {
		nl_socket_free(sk);
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "name checker: this host has no loopback interface");
	}
	if ((err = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		nl_socket_free(sk);
		return nl_err(err, "netlink");
	}
	rc = route_family(sk, AF_INET, lo);
	if (rc == 0 && v6)
		rc = route_family(sk, AF_INET6, lo);
	nl_socket_free(sk);
	return rc;
}

/* ===== Start ===== */

char *sbx__egress_path(const char *init_path)
{
	const char *env = secure_getenv("SANDBOXIO_EGRESS"), *slash;
	char *out = NULL;

	if (env && *env)
		return strdup(env);
	if (!init_path || !(slash = strrchr(init_path, '/')))
		return NULL;
	if (asprintf(&out, "%.*s/sbx-egress", (int)(slash - init_path), init_path) < 0)
		return NULL;
	return out;
}

static int record_path(char *dst, size_t len, const char *name)
{
	return snprintf(dst, len, SBX_NP_EGRESS_DIR "/%s", name) < (int)len ? 0 : -1;
}

static int write_record(const char *name, const struct sbx__np_checker *ck)
{
	char path[128], tmp[160], text[64];
	int fd, n;

	if (mkdir(SBX_NP_EGRESS_DIR, 0700) < 0 && errno != EEXIST)
		return sbx__error_os(SBX_EUNSUPPORTED, errno, "name checker: make %s",
				     SBX_NP_EGRESS_DIR);
	record_path(path, sizeof(path), name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	n = snprintf(text, sizeof(text), "%d %llu\n", (int)ck->pid, ck->start);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		if (fd >= 0)
			unlink(tmp);
		return sbx__error_os(SBX_ERROR, e, "name checker: record %s", path);
	}
	return 0;
}

/* The argument of one name entry's address: NAME/PORT/ADDRESS. */
static char *rule_arg(const struct sbx__np_plan *plan, const struct sbx__np_rule *r)
{
	char a[48], *s = NULL;

	sbx__addr_format(r->family, r->addr, a, sizeof(a));
	if (asprintf(&s, "%s/%u/%s", plan->hosts[r->host - 1], r->port, a) < 0)
		return NULL;
	return s;
}

/* Reads "PID START PORT4 PORT6\n" from the checker's ready pipe. */
static int read_ready(int fd, uint64_t deadline, struct sbx__np_checker *ck)
{
	char buf[640];
	size_t got = 0;
	int p4, p6;

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = sbx__mono_ms();
		ssize_t n;

		if (now >= deadline)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_NETPOLICY,
					      "name checker: it did not listen before the "
					      "create deadline");
		if (poll(&pfd, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			return sbx__error_os(SBX_ERROR, errno, "name checker: poll");
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got) || got == sizeof(buf) - 1)
			break;
	}
	buf[got] = '\0';
	if (strncmp(buf, "error ", 6) == 0) {
		buf[strcspn(buf, "\n")] = '\0';
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_NETPOLICY, "name checker: %s",
				      buf + 6);
	}
	if (sscanf(buf, "%d %llu %d %d", &ck->pid, &ck->start, &p4, &p6) != 4 || ck->pid <= 1 ||
	    p4 <= 0 || p4 > 65535 || p6 < 0 || p6 > 65535)
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_NETPOLICY,
				      "name checker: it ended before listening (%.80s)",
				      got ? buf : "no answer");
	ck->port4 = (uint16_t)p4;
	ck->port6 = (uint16_t)p6;
	return 0;
}

/* The exporter settings in a sealed memory file above 4 (they may hold a
 * collector's credentials, so never on the command line); -1 when none. */
static int otlp_file(const char *text)
{
	size_t n = text ? strlen(text) : 0;
	int fd, raw;

	if (!text)
		return -1;
	raw = (int)syscall(SYS_memfd_create, "sbx-egress-otlp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (raw < 0)
		return -1;
	fd = fcntl(raw, F_DUPFD_CLOEXEC, 10);
	close(raw);
	if (fd >= 0 && (write(fd, text, n) != (ssize_t)n || lseek(fd, 0, SEEK_SET) != 0 ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) < 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int spawn(const char *path, char **argv, int pidfd, int ready_w, int otlp)
{
	static char *none_env[] = {NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t child;
	int rc, status;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawn_file_actions_adddup2(&fa, pidfd, 3);
	posix_spawn_file_actions_adddup2(&fa, ready_w, 4);
	if (otlp >= 0)
		posix_spawn_file_actions_adddup2(&fa, otlp, 5);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	/* No environment: the checker needs none, and the caller's may hold
	 * credentials (a server's, an exporter's headers). */
	rc = posix_spawn(&child, path, &fa, &at, argv, none_env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0)
		return sbx__error_os(SBX_ENOTFOUND, rc, "name checker: run %.200s", path);
	/* The first process forks the checker and exits at once. */
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			break;
	return 0;
}

int sbx__egress_start(const char *name,
		      pid_t pid,
		      const struct sbx__np_plan *plan,
		      uint64_t deadline,
		      struct sbx__np_checker *ck)
{
	_sbx_cleanup_close_ int pidfd = -1, rd = -1, wr = -1, otlp = -1;
	char **argv = NULL;
	size_t argc = 0;
	int p[2], rc;

	memset(ck, 0, sizeof(*ck));
	if (!plan->hosts_n)
		return 0;
	if (!plan->checker || plan->checker[0] != '/' || access(plan->checker, X_OK) < 0)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_NETPOLICY,
				      "allow_host needs the name checker sbx-egress, and %.200s "
				      "is not an executable (build it with make, install it with "
				      "make install, or set SANDBOXIO_EGRESS)",
				      plan->checker ? plan->checker : "(none)");
	if ((rc = policy_route(plan->has_v6)) < 0)
		return rc;
	/* Descriptors above 4, so that the spawn's dup2 to 3 and 4 never
	 * meets one of them. */
	{
		int raw = pidfd_open_(pid);
		if (raw < 0)
			return sbx__error_os(SBX_EDENIED, errno,
					     "name checker: the sandbox's init (pid %d)", (int)pid);
		pidfd = fcntl(raw, F_DUPFD_CLOEXEC, 10);
		close(raw);
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx__error_os(SBX_ERROR, errno, "name checker: pipe");
	rd = fcntl(p[0], F_DUPFD_CLOEXEC, 10);
	wr = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
	close(p[0]);
	close(p[1]);
	if (pidfd < 0 || rd < 0 || wr < 0)
		return sbx__error_os(SBX_ERROR, errno, "name checker: descriptors");
	argv = calloc(plan->n + 20, sizeof(char *));
	if (!argv)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	argv[argc++] = strdup("sbx-egress");
	for (int i = 0; i < 2; i++)
		if (plan->audit_file[i]) {
			argv[argc++] = strdup("--audit");
			argv[argc++] = strdup(plan->audit_file[i]);
		}
	{
		static const char *const opt[] = {"--tenant", "--sandbox", "--trace", "--span"};
		const char *val[] = {plan->tenant, plan->sandbox_id, plan->trace_id, plan->span_id};

		for (int i = 0; i < 4; i++)
			if (val[i] && *val[i]) {
				argv[argc++] = strdup(opt[i]);
				argv[argc++] = strdup(val[i]);
			}
	}
	/* Spans of its connections: the settings on descriptor 5. Without
	 * them (none, or no memory file) it exports nothing; the audit stays. */
	if (plan->otlp && plan->trace_id && plan->span_id && (otlp = otlp_file(plan->otlp)) >= 0) {
		argv[argc++] = strdup("--otlp");
		argv[argc++] = strdup("5");
	}
	argv[argc++] = strdup(name);
	for (size_t i = 0; i < plan->n; i++)
		if (plan->rules[i].host)
			argv[argc++] = rule_arg(plan, &plan->rules[i]);
	rc = 0;
	for (size_t i = 0; i < argc; i++)
		if (!argv[i])
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	if (rc == 0)
		rc = spawn(plan->checker, argv, pidfd, wr, otlp);
	close(SBX_STEAL_FD(&wr));
	if (rc == 0)
		rc = read_ready(rd, deadline ? deadline : sbx__mono_ms() + START_GUARD_MS, ck);
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	if (rc == 0) {
		int is = 0;
		unsigned long long start = 0;

		if (proc_start(ck->pid, &start, &is) < 0 || start != ck->start || !is)
			rc = sbx__error_set(SBX_ERROR, SBX_ERRCLASS_NETPOLICY,
					    "name checker: pid %d is not the checker it started",
					    (int)ck->pid);
		else
			rc = write_record(name, ck);
		if (rc < 0 && is && start == ck->start)
			kill(ck->pid, SIGKILL);
	}
	return rc;
}

/* ===== Stop ===== */

int sbx__egress_stop(const char *name)
{
	char path[128], buf[64];
	unsigned long long start = 0, now_start = 0;
	int pid = 0, is = 0, fd;
	ssize_t n;

	if (record_path(path, sizeof(path), name) < 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0; /* none recorded: nothing to end */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "%d %llu", &pid, &start) == 2 && pid > 1) {
		int pfd = pidfd_open_(pid);

		/* Checked after the pidfd is held: if it is the same process
		 * now, the pidfd names it and no other. */
		if (pfd >= 0 && proc_start(pid, &now_start, &is) == 0 && is && now_start == start &&
		    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0) {
			struct pollfd p = {.fd = pfd, .events = POLLIN};

			/* Until it is gone (its sockets closed), with a hang guard. */
			while (poll(&p, 1, STOP_GUARD_MS) < 0 && errno == EINTR)
				;
		}
		if (pfd >= 0)
			close(pfd);
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return sbx__error_os(SBX_ERROR, errno, "name checker: remove %s", path);
	return 0;
}
