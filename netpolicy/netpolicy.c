/*
 * netpolicy/netpolicy.c: an allowlist enforced on the host for a sandbox in
 * its own network namespace: the checks that decide whether it can be, and
 * the order in which its pieces are made and removed.
 *
 * Order matters for failing closed. The table (and the DOCKER-USER accepts)
 * go in first, so that by the time the sandbox has a link, every packet it
 * can send is already filtered; the link comes last. Removal goes the other
 * way: the link first, so nothing flows while the rules go. A sandbox that
 * ends by itself (its deadline) takes its link with its namespace; what it
 * leaves (its table, its DOCKER-USER rules) matches a link that no longer
 * exists and is removed by the next sweep.
 *
 * Those steps and a sweep must not interleave: a sweep that looked between
 * two steps would take a sandbox's closed table (made before its link) for
 * a leftover, or remove the rules that a closing sandbox was removing. The
 * sweep may be another process's (`sandboxio reap` beside running jobs)
 * or another engine's on the same host, whose idea of which sandboxes are
 * alive is not this one's. So every step that changes a sandbox's pieces,
 * and every sweep from its look at the host's links and tables to its last
 * removal, holds one host-wide lock (flock on NP_LOCK_PATH). Which
 * sandboxes are gone the sweep asks the Engine before it takes the lock
 * (see sbx__netpolicy_sweep()), and a create waits for the lock no longer
 * than its deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <sandboxio/errors.h>

#include "netpolicy/netpolicy-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/time.h"

#define CAP_NET_ADMIN_BIT 12
#define CAP_SYS_ADMIN_BIT 21

#define NP_LOCK_DIR "/run/sandboxio"
#define NP_LOCK_PATH NP_LOCK_DIR "/netpolicy.lock"

/*
 * Takes the host-wide lock (see the top); returns its descriptor. With a
 * deadline (not 0) it gives up with SBX_ETIMEOUT once the deadline passes,
 * as the uid lock does (engine/uid.c): a holder that is slow or stopped (a
 * `sandboxio reap` suspended at a terminal) must not hold a create past its
 * own deadline. Without one (removals, the sweep) it waits.
 */
static int host_lock(uint64_t deadline)
{
	unsigned wait_us = 1000;
	int fd;

	if (mkdir(NP_LOCK_DIR, 0755) < 0 && errno != EEXIST)
		return sbx__error_os(SBX_EUNSUPPORTED, errno, "allowlist lock: make %s",
				     NP_LOCK_DIR);
	fd = open(NP_LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx__error_os(SBX_EUNSUPPORTED, errno, "allowlist lock: open %s",
				     NP_LOCK_PATH);
	while (flock(fd, deadline ? LOCK_EX | LOCK_NB : LOCK_EX) < 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		if (e == EWOULDBLOCK && deadline) {
			if (sbx__mono_ms() >= deadline) {
				close(fd);
				return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_NETPOLICY,
						      "create: the create deadline passed while "
						      "waiting for the allowlist lock %s, held by "
						      "another create, close or sweep",
						      NP_LOCK_PATH);
			}
			usleep(wait_us);
			if (wait_us < 32000)
				wait_us *= 2;
			continue;
		}
		close(fd);
		return sbx__error_os(SBX_EUNSUPPORTED, e, "allowlist lock: lock %s", NP_LOCK_PATH);
	}
	return fd;
}

static void host_unlock(int fd)
{
	close(fd); /* the lock goes with the last descriptor */
}

int sbx__netpolicy_name(char dst[SBX_NP_NAME_MAX], const char *session)
{
	if (!session || strncmp(session, "sbx-", 4) != 0 || strlen(session) != 16)
		return -1;
	snprintf(dst, SBX_NP_NAME_MAX, "sbx%s", session + 4);
	return sbx__netpolicy_is_name(dst) ? 0 : -1;
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int sysctl_is_1(const char *path)
{
	char b[16];

	return read_small(path, b, sizeof(b)) == 0 && b[0] == '1';
}

static int have_caps(void)
{
	char buf[4096], *p;
	unsigned long long eff;

	if (read_small("/proc/self/status", buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nCapEff:");
	if (!p || sscanf(p + 8, "%llx", &eff) != 1)
		return 0;
	return (eff >> CAP_NET_ADMIN_BIT & 1) && (eff >> CAP_SYS_ADMIN_BIT & 1);
}

static int legacy_filter_loaded(void)
{
	char b[256];

	if (read_small("/proc/net/ip_tables_names", b, sizeof(b)) < 0)
		return 0;
	for (char *save = NULL, *t = strtok_r(b, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
		if (strcmp(t, "filter") == 0)
			return 1;
	return 0;
}

int sbx__netpolicy_check(const struct sbx__allow *a, size_t n, int *v6_ok)
{
	char *listing = NULL;
	int rc;

	*v6_ok = sysctl_is_1("/proc/sys/net/ipv6/conf/all/forwarding");
	if (!have_caps())
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "an egress allowlist needs CAP_NET_ADMIN and CAP_SYS_ADMIN "
				      "on the host (run as root) to give the sandbox its own "
				      "filtered link; without them it cannot be enforced");
	if (!sysctl_is_1("/proc/sys/net/ipv4/ip_forward"))
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "an egress allowlist needs IPv4 forwarding on the host "
				      "(net.ipv4.ip_forward=1), and it is off");
	for (size_t i = 0; i < n; i++)
		if (a[i].kind == SBX_ALLOW_CIDR && a[i].family == AF_INET6 && !*v6_ok)
			return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
					      "allow_cidr %s: IPv6 forwarding is off on this host "
					      "(net.ipv6.conf.all.forwarding=0), so IPv6 egress "
					      "cannot be enforced",
					      a[i].name);
	if (legacy_filter_loaded())
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "an iptables-legacy filter table is loaded on this host; "
				      "its FORWARD chain may drop what the sandbox's nftables "
				      "rules allow, and nftables cannot open it");
	rc = sbx__nft_run("list tables", &listing);
	free(listing);
	if (rc < 0)
		return sbx__error_wrap("nftables is not usable");
	return 0;
}

/* Appends one address or subnet; -1 without memory. */
static int push_addr(struct sbx__host_addr **v,
		     size_t *k,
		     size_t *cap,
		     int fam,
		     const void *addr,
		     unsigned plen,
		     const char *ifname)
{
	struct sbx__host_addr *h;

	if (*k == *cap) {
		struct sbx__host_addr *g = realloc(*v, (*cap = *cap ? *cap * 2 : 16) * sizeof(*g));
		if (!g)
			return -1;
		*v = g;
	}
	h = &(*v)[(*k)++];
	memset(h, 0, sizeof(*h));
	h->family = fam;
	memcpy(h->addr, addr, fam == AF_INET ? 4 : 16);
	h->plen = (uint8_t)plen;
	snprintf(h->ifname, sizeof(h->ifname), "%s", ifname ? ifname : "");
	return 0;
}

/* The prefix length of a netmask (contiguous ones); 0 if none. */
static unsigned mask_len(const uint8_t *m, size_t bytes)
{
	unsigned n = 0;

	for (size_t i = 0; i < bytes; i++)
		for (int bit = 7; bit >= 0 && (m[i] >> bit & 1); bit--)
			n++;
	return n;
}

/* Whether ifname is a bridge (Docker's docker0 and br-*, and any other). */
static int is_bridge(const char *ifname)
{
	char path[128];

	if (strchr(ifname, '/') || strstr(ifname, ".."))
		return 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/bridge", ifname);
	return access(path, F_OK) == 0;
}

int sbx__netpolicy_host_addrs(struct sbx__host_addr **out, size_t *n)
{
	struct ifaddrs *ifa = NULL;
	struct sbx__host_addr *v = NULL;
	size_t k = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (getifaddrs(&ifa) < 0)
		return sbx__error_os(SBX_ERROR, errno, "list this host's addresses");
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : 0;
		const uint8_t *a, *m = NULL;
		uint8_t net[16] = {0};
		unsigned bytes = fam == AF_INET ? 4 : 16, plen;

		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (fam == AF_INET) {
			a = (const uint8_t *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			if (i->ifa_netmask)
				m = (const uint8_t *)&((struct sockaddr_in *)i->ifa_netmask)
					    ->sin_addr;
		} else {
			a = (const uint8_t *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			if (i->ifa_netmask)
				m = (const uint8_t *)&((struct sockaddr_in6 *)i->ifa_netmask)
					    ->sin6_addr;
		}
		if (push_addr(&v, &k, &cap, fam, a, 0, i->ifa_name) < 0)
			goto oom;
		/* A bridge's whole subnet: other containers live there. */
		if (!m || !i->ifa_name || !is_bridge(i->ifa_name))
			continue;
		plen = mask_len(m, bytes);
		if (plen == 0 || plen >= bytes * 8)
			continue;
		for (unsigned b = 0; b < bytes; b++)
			net[b] = a[b] & m[b];
		if (push_addr(&v, &k, &cap, fam, net, plen, i->ifa_name) < 0)
			goto oom;
	}
	freeifaddrs(ifa);
	*out = v;
	*n = k;
	return 0;
oom:
	free(v);
	freeifaddrs(ifa);
	return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
}

/* Whether name still has a table, or (handle >= 0) that DOCKER-USER rule. */
static int still_there(const char *name, long handle)
{
	_sbx_cleanup_free_ long *handles = NULL;
	char **tables = NULL;
	size_t n = 0;
	int found = 0;

	if (handle >= 0) {
		if (sbx__nft_docker_user_rules(name, &handles, NULL, &n) < 0)
			return 1;
		for (size_t i = 0; i < n; i++)
			found |= handles[i] == handle;
		return found;
	}
	if (sbx__nft_tables(&tables, &n) < 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		found |= strcmp(tables[i], name) == 0;
		free(tables[i]);
	}
	free(tables);
	return found;
}

/*
 * Runs one delete; a refusal because the thing is gone already (removed by
 * hand, or by a process that does not take the lock) counts as done.
 */
static int delete_one(const char *cmd, const char *name, long handle)
{
	struct sbx__error_saved saved;
	int rc = sbx__nft_run(cmd, NULL);

	if (rc == 0)
		return 0;
	sbx__error_save(&saved);
	if (!still_there(name, handle)) {
		sbx__error_clear();
		return 0;
	}
	return sbx__error_restore(&saved, rc);
}

/* Removes the table and the DOCKER-USER rules of name; gone counts as removed. */
static int remove_rules(const char *name)
{
	_sbx_cleanup_free_ long *handles = NULL;
	char **tables = NULL, cmd[128];
	size_t nt = 0, nh = 0;
	int rc, first = 0, has = 0;

	rc = sbx__nft_docker_user_rules(name, &handles, NULL, &nh);
	for (size_t i = 0; rc == 0 && i < nh; i++) {
		snprintf(cmd, sizeof(cmd), "delete rule ip filter DOCKER-USER handle %ld",
			 handles[i]);
		rc = delete_one(cmd, name, handles[i]);
	}
	first = rc;
	rc = sbx__nft_tables(&tables, &nt);
	for (size_t i = 0; i < nt; i++) {
		if (strcmp(tables[i], name) == 0)
			has = 1;
		free(tables[i]);
	}
	free(tables);
	if (rc == 0 && has) {
		snprintf(cmd, sizeof(cmd), "delete table inet %s", name);
		rc = delete_one(cmd, name, -1);
	}
	return first < 0 ? first : rc;
}

static int detach_locked(const char *session);

static int
attach_locked(const char *session, pid_t pid, const struct sbx__np_plan *plan, uint64_t deadline)
{
	_sbx_cleanup_free_ char *rules = NULL;
	struct sbx__np_checker ck = {0};
	char name[SBX_NP_NAME_MAX];
	uint8_t a4[4] = {0}, a6[16] = {0};
	int rc, forward_drop = 0, docker_user;

	if (sbx__netpolicy_name(name, session) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY,
				      "'%.32s' is not a sandbox session", session);
	docker_user = sbx__nft_docker_state(&forward_drop);
	if (forward_drop && !docker_user)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "the host's ip filter FORWARD chain drops by default and "
				      "has no DOCKER-USER chain to open for the sandbox");
	/*
	 * The table needs the sandbox's address, and the address is claimed
	 * with the link. So: a closed table first (everything from the link
	 * refused), then the link, then the real rules replace the closed ones
	 * in one transaction.
	 */
	{
		struct sbx__np_plan none = {0};
		rc = sbx__netpolicy_ruleset(&rules, name, a4, a6, &none, NULL, 1, 0);
		if (rc == 0)
			rc = sbx__nft_run(rules, NULL);
		free(SBX_STEAL(&rules));
		if (rc < 0)
			return rc;
	}
	rc = sbx__nl_attach(name, pid, plan, a4, a6);
	/* The name checker before the real rules, which point to it. */
	if (rc == 0)
		rc = sbx__egress_start(name, pid, plan, deadline, &ck);
	if (rc == 0)
		rc = sbx__netpolicy_ruleset(&rules, name, a4, a6, plan, &ck, 1, docker_user);
	if (rc == 0) {
		/* Replace the closed table atomically: delete and re-add in one batch. */
		_sbx_cleanup_free_ char *batch = NULL;
		if (asprintf(&batch, "add table inet %s\ndelete table inet %s\n%s", name, name,
			     rules) < 0)
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
		else
			rc = sbx__nft_run(batch, NULL);
	}
	if (rc < 0) {
		struct sbx__error_saved saved;

		sbx__error_save(&saved);
		detach_locked(session);
		return sbx__error_restore(&saved, rc);
	}
	return 0;
}

int sbx__netpolicy_attach(const char *session,
			  pid_t pid,
			  const struct sbx__np_plan *plan,
			  uint64_t deadline)
{
	int lk = host_lock(deadline), rc;

	if (lk < 0)
		return lk;
	rc = attach_locked(session, pid, plan, deadline);
	host_unlock(lk);
	return rc;
}

static int detach_locked(const char *session)
{
	char name[SBX_NP_NAME_MAX];
	int rc, rc2;

	if (sbx__netpolicy_name(name, session) < 0)
		return 0; /* not a session of ours: nothing was made for it */
	rc = sbx__nl_remove(name);
	rc2 = remove_rules(name);
	if (rc == 0)
		rc = rc2;
	rc2 = sbx__egress_stop(name);
	return rc < 0 ? rc : rc2;
}

int sbx__netpolicy_detach(const char *session)
{
	char name[SBX_NP_NAME_MAX];
	int lk, rc;

	if (sbx__netpolicy_name(name, session) < 0)
		return 0; /* not a session of ours: nothing was made for it */
	if ((lk = host_lock(0)) < 0)
		return lk;
	rc = detach_locked(session);
	host_unlock(lk);
	return rc;
}

static int session_of(const char *name, char *dst, size_t len)
{
	return snprintf(dst, len, "sbx-%s", name + 3) < (int)len ? 0 : -1;
}

/* Names (sbxXXXXXXXXXXXX) of sandboxes that are gone, or of every one asked. */
struct np_names {
	char (*v)[SBX_NP_NAME_MAX];
	size_t n;
};

static int names_has(const struct np_names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 1;
	return 0;
}

static int names_add(struct np_names *s, const char *name)
{
	char(*g)[SBX_NP_NAME_MAX] = realloc(s->v, (s->n + 1) * sizeof(*g));

	if (!g)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	s->v = g;
	snprintf(g[s->n++], SBX_NP_NAME_MAX, "%s", name);
	return 0;
}

/* Asks alive() once about name, adding it to dead when its sandbox is gone. */
static int ask(struct np_names *asked,
	       struct np_names *dead,
	       const char *name,
	       sbx_np_alive_cb alive,
	       void *payload)
{
	char session[32];

	if (!sbx__netpolicy_is_name(name) || names_has(asked, name) ||
	    session_of(name, session, sizeof(session)) < 0)
		return 0;
	if (names_add(asked, name) < 0)
		return SBX_ENOMEM;
	return alive(session, payload) == 0 ? names_add(dead, name) : 0;
}

/* Every name of ours on the host (links, tables, tagged rules) whose
 * sandbox alive() says is gone, into dead. */
static int find_dead(struct np_names *dead, sbx_np_alive_cb alive, void *payload)
{
	struct np_names asked = {0};
	char **tables = NULL, **tagged = NULL;
	_sbx_cleanup_free_ long *handles = NULL;
	size_t nt = 0, nh = 0;
	int rc = 0;
	DIR *dir = opendir("/sys/class/net");
	struct dirent *de;

	while (rc == 0 && dir && (de = readdir(dir)))
		rc = ask(&asked, dead, de->d_name, alive, payload);
	if (dir)
		closedir(dir);
	/* Name checkers recorded for sandboxes (netpolicy/egress.c). */
	dir = opendir(SBX_NP_EGRESS_DIR);
	while (rc == 0 && dir && (de = readdir(dir)))
		rc = ask(&asked, dead, de->d_name, alive, payload);
	if (dir)
		closedir(dir);
	if (rc == 0)
		rc = sbx__nft_tables(&tables, &nt);
	if (rc == 0)
		rc = sbx__nft_docker_user_rules(NULL, &handles, &tagged, &nh);
	for (size_t i = 0; rc == 0 && i < nt + nh; i++)
		rc = ask(&asked, dead, i < nt ? tables[i] : tagged[i - nt], alive, payload);
	for (size_t i = 0; i < nt; i++)
		free(tables[i]);
	for (size_t i = 0; i < nh; i++)
		free(tagged[i]);
	free(tables);
	free(tagged);
	free(asked.v);
	return rc;
}

/* Removes what the sandboxes named in dead left: links, then tables and
 * DOCKER-USER rules whose link is gone. */
static int sweep_locked(const struct np_names *dead)
{
	char **tables = NULL, **tagged = NULL;
	_sbx_cleanup_free_ long *handles = NULL;
	size_t nt = 0, nh = 0;
	int cleaned = 0, rc;

	/* Links whose sandbox is gone (only a crash between steps leaves one),
	 * and name checkers still recorded for one (each ends by itself when
	 * its sandbox goes; this ends one that did not). */
	for (size_t i = 0; i < dead->n; i++) {
		if (sbx__nl_exists(dead->v[i]) && sbx__nl_remove(dead->v[i]) == 0)
			cleaned++;
		if (sbx__egress_stop(dead->v[i]) < 0)
			sbx__error_clear();
	}
	/* Tables and DOCKER-USER rules whose link and sandbox are both gone. */
	rc = sbx__nft_tables(&tables, &nt);
	if (rc == 0)
		rc = sbx__nft_docker_user_rules(NULL, &handles, &tagged, &nh);
	for (size_t i = 0; rc == 0 && i < nt + nh; i++) {
		const char *name = i < nt ? tables[i] : tagged[i - nt];

		if (!names_has(dead, name) || sbx__nl_exists(name))
			continue;
		if (remove_rules(name) == 0)
			cleaned++;
		else
			sbx__error_clear();
	}
	for (size_t i = 0; i < nt; i++)
		free(tables[i]);
	for (size_t i = 0; i < nh; i++)
		free(tagged[i]);
	free(tables);
	free(tagged);
	return rc < 0 ? rc : cleaned;
}

/*
 * Which sandboxes are gone is asked before the lock is taken: alive() asks
 * the Engine, once for every sandbox with a link, and holding the lock over
 * those calls would hold up every create's and close's steps behind the
 * Engine's answers. The answers stay true under the lock: a sandbox's link
 * and table are made after its container exists, and a session that is
 * gone never comes back (its name is never reused), so a name found dead
 * is not a live sandbox's, and what is removed under the lock is only what
 * is there then.
 */
int sbx__netpolicy_sweep(sbx_np_alive_cb alive, void *payload)
{
	struct np_names dead = {0};
	int lk, rc;

	if (!have_caps())
		return 0;
	rc = find_dead(&dead, alive, payload);
	if (rc == 0 && dead.n) {
		if ((lk = host_lock(0)) < 0) {
			rc = lk;
		} else {
			rc = sweep_locked(&dead);
			host_unlock(lk);
		}
	}
	free(dead.v);
	return rc;
}
