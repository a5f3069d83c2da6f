/*
 * netpolicy/link.c: the sandbox's own link (libnl): a veth whose far end is
 * created directly inside the sandbox's network namespace as "eth0".
 *
 * The pair is made in one request with the peer already in the target
 * namespace, so there is never a half-made link in the host's namespace.
 * Addresses are one per sandbox, claimed by adding the host route to it
 * with NLM_F_EXCL: the kernel decides races between processes. Neighbours
 * are static on both sides (the MACs are ours), so neither side answers or
 * sends ARP or neighbour discovery, and the sandbox's gateway is an address
 * the host does not own. The sandbox's side is configured from a short-lived
 * thread that entered its namespace with setns(2): a netlink socket talks
 * to the namespace it was opened in, and only that thread ever switches.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>

#include <sandboxio/errors.h>

#include "netpolicy/netpolicy-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define SANDBOX_IF "eth0"
#define ADDR_SLOTS 16384 /* 169.254.64.0/18 */

static void sk_freep(struct nl_sock **sk)
{
	if (*sk)
		nl_socket_free(*sk);
}
#define _cleanup_sk_ _sbx_cleanup_(sk_freep)

static struct nl_sock *sk_open(int *err)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (!sk) {
		*err = -NLE_NOMEM;
		return NULL;
	}
	*err = nl_connect(sk, NETLINK_ROUTE);
	if (*err < 0) {
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

static struct nl_addr *addr_of(int family, const uint8_t *a, unsigned plen)
{
	struct nl_addr *n = nl_addr_build(family, a, family == AF_INET ? 4 : 16);

	if (n)
		nl_addr_set_prefixlen(n, (int)plen);
	return n;
}

static int write_sysctl(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	close(fd);
	return n == (ssize_t)strlen(value) ? 0 : -EIO;
}

static int ifindex_of(struct nl_sock *sk, const char *name)
{
	struct rtnl_link *l = NULL;
	int idx, err = rtnl_link_get_kernel(sk, 0, name, &l);

	if (err < 0)
		return err;
	idx = rtnl_link_get_ifindex(l);
	rtnl_link_put(l);
	return idx;
}

static int link_up(struct nl_sock *sk, int ifindex)
{
	struct rtnl_link *orig = rtnl_link_alloc(), *chg = rtnl_link_alloc();
	int err = -NLE_NOMEM;

	if (orig && chg) {
		rtnl_link_set_ifindex(orig, ifindex);
		rtnl_link_set_flags(chg, IFF_UP);
		err = rtnl_link_change(sk, orig, chg, 0);
	}
	rtnl_link_put(orig);
	rtnl_link_put(chg);
	return err;
}

static int add_addr(struct nl_sock *sk, int ifindex, int family, const uint8_t *a)
{
	struct rtnl_addr *ra = rtnl_addr_alloc();
	struct nl_addr *local = addr_of(family, a, family == AF_INET ? 32 : 128);
	int err = -NLE_NOMEM;

	if (ra && local) {
		rtnl_addr_set_ifindex(ra, ifindex);
		rtnl_addr_set_family(ra, family);
		rtnl_addr_set_local(ra, local);
		rtnl_addr_set_prefixlen(ra, family == AF_INET ? 32 : 128);
		if (family == AF_INET6)
			rtnl_addr_set_flags(ra, IFA_F_NODAD);
		err = rtnl_addr_add(sk, ra, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(ra);
	return err;
}

/* A route to dst/plen out of ifindex, through gw (NULL: on the link). */
static int add_route(struct nl_sock *sk,
		     int ifindex,
		     int family,
		     const uint8_t *dst,
		     unsigned plen,
		     const uint8_t *gw,
		     const uint8_t *src,
		     int flags)
{
	struct rtnl_route *r = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	struct nl_addr *d = addr_of(family, dst, plen), *g = NULL, *s = NULL;
	int err = -NLE_NOMEM;

	if (gw)
		g = addr_of(family, gw, family == AF_INET ? 32 : 128);
	if (src)
		s = addr_of(family, src, family == AF_INET ? 32 : 128);
	if (r && nh && d && (!gw || g) && (!src || s)) {
		rtnl_route_set_family(r, (uint8_t)family);
		rtnl_route_set_dst(r, d);
		rtnl_route_set_table(r, RT_TABLE_MAIN);
		rtnl_route_set_protocol(r, RTPROT_STATIC);
		rtnl_route_set_scope(r, gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK);
		if (s)
			rtnl_route_set_pref_src(r, s);
		rtnl_route_nh_set_ifindex(nh, ifindex);
		if (g)
			rtnl_route_nh_set_gateway(nh, g);
		rtnl_route_add_nexthop(r, nh);
		nh = NULL; /* the route owns it now */
		err = rtnl_route_add(sk, r, flags);
	}
	if (nh)
		rtnl_route_nh_free(nh);
	nl_addr_put(d);
	nl_addr_put(g);
	nl_addr_put(s);
	rtnl_route_put(r);
	return err;
}

static int
add_neigh(struct nl_sock *sk, int ifindex, int family, const uint8_t *ip, const uint8_t mac[6])
{
	struct rtnl_neigh *n = rtnl_neigh_alloc();
	struct nl_addr *d = addr_of(family, ip, family == AF_INET ? 32 : 128);
	struct nl_addr *ll = nl_addr_build(AF_LLC, mac, 6);
	int err = -NLE_NOMEM;

	if (n && d && ll) {
		rtnl_neigh_set_ifindex(n, ifindex);
		rtnl_neigh_set_family(n, family);
		rtnl_neigh_set_dst(n, d);
		rtnl_neigh_set_lladdr(n, ll);
		rtnl_neigh_set_state(n, NUD_PERMANENT);
		err = rtnl_neigh_add(sk, n, NLM_F_CREATE | NLM_F_REPLACE);
	}
	nl_addr_put(d);
	nl_addr_put(ll);
	rtnl_neigh_put(n);
	return err;
}

/* ===== The sandbox's side, from inside its namespace ===== */

struct ns_job {
	int nsfd;
	const struct sbx__np_plan *plan;
	const uint8_t *a4, *a6, *host_mac;
	int err;
	int os; /* err is -errno, not a libnl code */
	char what[128];
};

static void *ns_side(void *arg)
{
	struct ns_job *j = arg;
	_cleanup_sk_ struct nl_sock *sk = NULL;
	uint8_t gw4[16] = {0}, gw6[16] = {0};
	char path[128];
	int idx, err;

	inet_pton(AF_INET, SBX_NP_GATEWAY4, gw4);
	inet_pton(AF_INET6, SBX_NP_GATEWAY6, gw6);
	if (setns(j->nsfd, CLONE_NEWNET) < 0) {
		j->err = -errno;
		j->os = 1;
		snprintf(j->what, sizeof(j->what), "enter the sandbox's network namespace");
		return NULL;
	}
#define STEP(call, fmt, ...)                                                                       \
	do {                                                                                       \
		err = (call);                                                                      \
		if (err < 0) {                                                                     \
			j->err = err;                                                              \
			snprintf(j->what, sizeof(j->what), fmt, __VA_ARGS__);                      \
			return NULL;                                                               \
		}                                                                                  \
	} while (0)
	sk = sk_open(&err);
	STEP(sk ? 0 : err, "%s", "open netlink in the sandbox");
	idx = ifindex_of(sk, SANDBOX_IF);
	STEP(idx, "%s", "find " SANDBOX_IF " in the sandbox");
	if (!j->plan->has_v6) {
		/* This thread's /proc/sys/net is the sandbox's namespace. */
		snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", SANDBOX_IF);
		write_sysctl(path, "1");
	}
	STEP(link_up(sk, idx), "%s", "bring " SANDBOX_IF " up");
	if (j->plan->has_v4) {
		STEP(add_addr(sk, idx, AF_INET, j->a4), "%s", "address " SANDBOX_IF);
		STEP(add_route(sk, idx, AF_INET, gw4, 32, NULL, NULL, NLM_F_EXCL), "%s",
		     "route to the gateway");
		STEP(add_neigh(sk, idx, AF_INET, gw4, j->host_mac), "%s", "gateway neighbour");
	}
	if (j->plan->has_v6) {
		/*
		 * Docker starts a sandbox with IPv6 disabled on every link (the
		 * namespace's default), so eth0 is born with it off: enable it
		 * there only, learning no routes from advertisements.
		 */
		snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/accept_ra", SANDBOX_IF);
		err = write_sysctl(path, "0");
		if (err == 0) {
			snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
				 SANDBOX_IF);
			err = write_sysctl(path, "0");
		}
		if (err < 0) {
			j->err = err;
			j->os = 1;
			snprintf(j->what, sizeof(j->what), "enable IPv6 on " SANDBOX_IF);
			return NULL;
		}
		STEP(add_addr(sk, idx, AF_INET6, j->a6), "%s", "IPv6 address " SANDBOX_IF);
		STEP(add_neigh(sk, idx, AF_INET6, gw6, j->host_mac), "%s",
		     "IPv6 gateway neighbour");
	}
	for (size_t i = 0; i < j->plan->n; i++) {
		const struct sbx__np_rule *r = &j->plan->rules[i];
		int v4 = r->family == AF_INET;

		err = add_route(sk, idx, r->family, r->addr, r->plen, v4 ? gw4 : gw6,
				v4 ? j->a4 : j->a6, NLM_F_EXCL);
		if (err == -NLE_EXIST)
			continue; /* the same prefix again, with another port */
		STEP(err, "route %zu to an allowed prefix", i);
	}
#undef STEP
	return NULL;
}

/* ===== Attach and remove ===== */

static int nl_fail(int err, const char *what, const char *name)
{
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY, "sandbox link %s: %s: %s",
			      name, what, err < 0 && err > -1000 ? nl_geterror(-err) : "failed");
}

static int make_veth(struct nl_sock *sk,
		     const char *name,
		     int nsfd,
		     const uint8_t hmac[6],
		     const uint8_t smac[6])
{
	struct rtnl_link *veth = rtnl_link_veth_alloc(), *peer;
	struct nl_addr *h = nl_addr_build(AF_LLC, hmac, 6), *s = nl_addr_build(AF_LLC, smac, 6);
	int err = -NLE_NOMEM;

	if (veth && h && s) {
		peer = rtnl_link_veth_get_peer(veth);
		rtnl_link_set_name(veth, name);
		rtnl_link_set_addr(veth, h);
		rtnl_link_set_name(peer, SANDBOX_IF);
		rtnl_link_set_addr(peer, s);
		rtnl_link_set_ns_fd(peer, nsfd);
		err = rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL);
		rtnl_link_put(peer);
	}
	nl_addr_put(h);
	nl_addr_put(s);
	rtnl_link_put(veth);
	return err;
}

int sbx__nl_attach(
	const char *name, pid_t pid, const struct sbx__np_plan *plan, uint8_t a4[4], uint8_t a6[16])
{
	_cleanup_sk_ struct nl_sock *sk = NULL;
	_sbx_cleanup_close_ int nsfd = -1;
	uint8_t hmac[6], smac[6], rnd[2];
	struct ns_job job = {0};
	char path[128];
	pthread_t th;
	int err, idx, got = 0;
	unsigned seed;

	snprintf(path, sizeof(path), "/proc/%ld/ns/net", (long)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return sbx__error_os(SBX_ERROR, errno, "sandbox link %s: open %s", name, path);
	if (getrandom(hmac, 6, 0) != 6 || getrandom(smac, 6, 0) != 6 || getrandom(rnd, 2, 0) != 2)
		return sbx__error_os(SBX_ERROR, errno, "getrandom");
	hmac[0] = (uint8_t)((hmac[0] & 0xfe) | 0x02); /* unicast, locally administered */
	smac[0] = (uint8_t)((smac[0] & 0xfe) | 0x02);
	sk = sk_open(&err);
	if (!sk)
		return nl_fail(err, "open netlink", name);
	err = make_veth(sk, name, nsfd, hmac, smac);
	if (err < 0)
		return nl_fail(err, "create the veth pair", name);
	idx = ifindex_of(sk, name);
	if (idx < 0) {
		err = idx;
		goto fail;
	}
	if (!plan->has_v6) {
		snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", name);
		write_sysctl(path, "1");
	}
	if ((err = link_up(sk, idx)) < 0)
		goto fail;
	/* Claim an address: the host route to it, added exclusively. */
	seed = ((unsigned)rnd[0] << 8 | rnd[1]) % ADDR_SLOTS;
	for (unsigned k = 0; k < 256 && !got; k++) {
		unsigned slot = (seed + k) % ADDR_SLOTS;

		if (slot == 0 || slot == ADDR_SLOTS - 1)
			continue;
		memset(a6, 0, 16);
		inet_pton(AF_INET, "169.254.64.0", a4);
		a4[2] = (uint8_t)(a4[2] + (slot >> 8));
		a4[3] = (uint8_t)(slot & 0xff);
		inet_pton(AF_INET6, "fd73:6278::", a6);
		a6[14] = (uint8_t)(slot >> 8);
		a6[15] = (uint8_t)(slot & 0xff);
		err = add_route(sk, idx, AF_INET, a4, 32, NULL, NULL, NLM_F_EXCL);
		if (err == -NLE_EXIST)
			continue;
		if (err < 0)
			goto fail;
		got = 1;
	}
	if (!got) {
		err = -NLE_EXIST;
		goto fail;
	}
	if ((err = add_neigh(sk, idx, AF_INET, a4, smac)) < 0)
		goto fail;
	if (plan->has_v6 && ((err = add_route(sk, idx, AF_INET6, a6, 128, NULL, NULL, 0)) < 0 ||
			     (err = add_neigh(sk, idx, AF_INET6, a6, smac)) < 0))
		goto fail;
	job = (struct ns_job){.nsfd = nsfd, .plan = plan, .a4 = a4, .a6 = a6, .host_mac = hmac};
	if (pthread_create(&th, NULL, ns_side, &job) != 0) {
		err = -NLE_NOMEM;
		goto fail;
	}
	pthread_join(th, NULL);
	if (job.err < 0) {
		sbx__nl_remove(name);
		if (!job.os)
			return nl_fail(job.err, job.what, name);
		return sbx__error_os(SBX_EUNSUPPORTED, -job.err, "sandbox link %s: %s", name,
				     job.what);
	}
	return 0;
fail:
	sbx__nl_remove(name);
	return nl_fail(err, "configure the host side", name);
}

int sbx__nl_exists(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	return access(path, F_OK) == 0;
}

int sbx__nl_remove(const char *name)
{
	_cleanup_sk_ struct nl_sock *sk = NULL;
	struct rtnl_link *l;
	int err;

	if (!sbx__nl_exists(name))
		return 0;
	sk = sk_open(&err);
	if (!sk)
		return nl_fail(err, "open netlink", name);
	l = rtnl_link_alloc();
	if (!l)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	rtnl_link_set_name(l, name);
	err = rtnl_link_delete(sk, l);
	rtnl_link_put(l);
	/* Gone meanwhile (its namespace ended) counts as removed. */
	if (err < 0 && err != -NLE_NODEV && err != -NLE_OBJ_NOTFOUND && sbx__nl_exists(name))
		return nl_fail(err, "remove", name);
	return 0;
}
