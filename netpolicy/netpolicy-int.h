/*
 * netpolicy/netpolicy-int.h: enforcement of an egress allowlist for a
 * sandbox that lives in its own network namespace (the docker backend).
 *
 * One sandbox, one name: "sbx" + the 12 hex digits of its session. That
 * name is the host side of its veth and its own nftables table (inet), and
 * tags its accept rules in Docker's DOCKER-USER chain. The sandbox side of
 * the veth is "eth0" with one address from SBX_NP_SANDBOX_NET4/6, routes to
 * the allowed prefixes only, and static neighbours (no ARP, no NDP). The
 * table filters everything the link sends, by destination and port, before
 * Docker's rules and before any DNAT; it drops what nobody started toward
 * the sandbox, and masquerades.
 */
#ifndef SBX_NETPOLICY_NETPOLICY_INT_H
#define SBX_NETPOLICY_NETPOLICY_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "netpolicy/allow-int.h"

#define SBX_NP_NAME_MAX 16

/* The link/table name of a session "sbx-XXXXXXXXXXXX"; -1 if it is not one. */
int sbx__netpolicy_name(char dst[SBX_NP_NAME_MAX], const char *session);

/*
 * Whether this host can enforce the allowlist: CAP_NET_ADMIN and
 * CAP_SYS_ADMIN, nftables, IPv4 forwarding, IPv6 forwarding when a v6 CIDR
 * is allowed, and no iptables-legacy filter table that would drop forwarded
 * packets nftables cannot open. *v6_ok tells whether IPv6 can be enforced.
 * Returns 0 or SBX_EUNSUPPORTED naming what is missing.
 */
int sbx__netpolicy_check(const struct sbx__allow *a, size_t n, int *v6_ok);

/* This host's own addresses (every interface) and the subnet of every
 * bridge on it (Docker's among them); free() *out. */
int sbx__netpolicy_host_addrs(struct sbx__host_addr **out, size_t *n);

/*
 * The name checker of one sandbox (sbx-egress, netpolicy/egress.c): a host
 * process listening on 127.0.0.1:port4 and [::1]:port6 (IP_TRANSPARENT),
 * to which the sandbox's table sends TCP toward name entries with tproxy,
 * marked SBX_NP_TPROXY_MARK; one host-wide policy rule routes marked packets
 * through table SBX_NP_TPROXY_TABLE, which delivers everything locally.
 */
#define SBX_NP_TPROXY_MARK 0x73627865u
#define SBX_NP_TPROXY_TABLE 29538
#define SBX_NP_TPROXY_PRIO 29538

struct sbx__np_checker {
	pid_t pid;
	unsigned long long start; /* its start time (/proc/PID/stat field 22) */
	uint16_t port4, port6;
};

/*
 * The nftables commands for one sandbox (one transaction): its table, and
 * when docker_user is set, the two accept rules in ip filter DOCKER-USER.
 * reject: answer refused packets with ICMP admin-prohibited (else drop).
 * ck: the sandbox's name checker; NULL (or a port of 0) resets every TCP
 * connection to a name entry's addresses.
 */
int sbx__netpolicy_ruleset(char **out,
			   const char *name,
			   const uint8_t a4[4],
			   const uint8_t a6[16],
			   const struct sbx__np_plan *plan,
			   const struct sbx__np_checker *ck,
			   int reject,
			   int docker_user);

/*
 * Starts the checker of sandbox name (whose init is host pid `pid`) for the
 * name entries of plan, from plan->checker: double-forked into its own
 * session, holding a pidfd on the init, so it ends with the sandbox whoever
 * started it. Records its pid beside the table (SBX_NP_EGRESS_DIR/NAME) and
 * makes the host-wide policy route if missing. deadline bounds the wait for
 * it to listen. Returns 0 with *ck filled, or an error naming the problem.
 */
int sbx__egress_start(const char *name,
		      pid_t pid,
		      const struct sbx__np_plan *plan,
		      uint64_t deadline,
		      struct sbx__np_checker *ck);
/* The checker's path: $SANDBOXIO_EGRESS, else sbx-egress beside init_path
 * (the install directory, or the build's). malloc'ed; NULL without one. */
char *sbx__egress_path(const char *init_path);

/* Ends the checker recorded for name, if it is still that process, and
 * removes its record. Gone counts as ended. */
int sbx__egress_stop(const char *name);

#define SBX_NP_EGRESS_DIR "/run/sandboxio/egress"

/*
 * Gives the sandbox whose init is host pid `pid` its link and rules. On
 * failure everything made so far is removed. deadline (sbx__mono_ms()) bounds
 * the wait for the host-wide lock; 0 means none. Returns 0, SBX_ETIMEOUT
 * (the deadline passed waiting for the lock; nothing was made),
 * SBX_EUNSUPPORTED (nftables or netlink refused), SBX_ERROR, SBX_ENOMEM.
 */
int sbx__netpolicy_attach(const char *session,
			  pid_t pid,
			  const struct sbx__np_plan *plan,
			  uint64_t deadline);

/* Removes the link, table and DOCKER-USER rules of a session. Gone already
 * counts as removed. Returns 0 or the first error. */
int sbx__netpolicy_detach(const char *session);

/* 1: the session's sandbox still exists; 0: it is gone; <0: cannot tell. */
typedef int (*sbx_np_alive_cb)(const char *session, void *payload);

/*
 * Removes what sandboxes that no longer exist left on the host: tables and
 * DOCKER-USER rules whose link is gone and whose sandbox is gone, and links
 * whose sandbox is gone. Without CAP_NET_ADMIN it does nothing. Returns the
 * number of sessions cleaned, or an error.
 */
int sbx__netpolicy_sweep(sbx_np_alive_cb alive, void *payload);

/* ===== Between netpolicy's own files ===== */

/* Runs nftables commands; with json_out, the JSON listing they print. */
int sbx__nft_run(const char *cmds, char **json_out);
/* Lists the names of the sandbox tables ("sbx" + 12 hex) present. */
int sbx__nft_tables(char ***out, size_t *n);
/* Handles of DOCKER-USER rules tagged for name (all tagged rules if NULL,
 * their names in names_out). */
int sbx__nft_docker_user_rules(const char *name, long **handles, char ***names_out, size_t *n);
/* 1 if ip filter DOCKER-USER exists; *forward_drop: ip filter FORWARD drops. */
int sbx__nft_docker_state(int *forward_drop);

int sbx__nl_attach(const char *name,
		   pid_t pid,
		   const struct sbx__np_plan *plan,
		   uint8_t a4[4],
		   uint8_t a6[16]);
int sbx__nl_remove(const char *name);
int sbx__nl_exists(const char *name);
/* Whether s is a sandbox link/table name ("sbx" + 12 lower-case hex). */
int sbx__netpolicy_is_name(const char *s);

#endif
