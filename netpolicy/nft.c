/*
 * netpolicy/nft.c: the nftables side of an allowlist: the rules of one
 * sandbox, and running and listing them through libnftables.
 *
 * Each sandbox has a table of its own (inet "sbx<hex>"), so removing a
 * sandbox's rules is one "delete table" and nothing else is touched. Its
 * egress chain sits on prerouting at priority -150: after conntrack, before
 * Docker's DNAT and before every filter chain, so it sees the destination
 * the sandbox named. Docker's FORWARD chain (iptables-nft, policy drop) is
 * traversed anyway and would drop what this table lets through; the only
 * way past it is an accept in its DOCKER-USER chain, so each sandbox adds
 * two, tagged with its name, and removes them with its table.
 *
 * libnftables is not documented as thread-safe across contexts, so every
 * call here holds one lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <jansson.h>
#include <nftables/libnftables.h>

#include <sandboxio/errors.h>

#include "netpolicy/netpolicy-int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define DOCKER_USER_TAG "sandboxio "

static pthread_mutex_t nft_lock = PTHREAD_MUTEX_INITIALIZER;

int sbx__netpolicy_is_name(const char *s)
{
	if (strncmp(s, "sbx", 3) != 0 || strlen(s) != 15)
		return 0;
	for (int i = 3; i < 15; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* ===== The rules of one sandbox ===== */

static int emit_rule(struct sbx__buf *b, const char *t, const struct sbx__np_rule *r)
{
	char a[INET6_ADDRSTRLEN];

	sbx__addr_format(r->family, r->addr, a, sizeof(a));
	if (r->port)
		return sbx__buf_printf(
			b,
			"add rule inet %s sbx_egress %s daddr %s/%u meta l4proto { tcp, udp } th "
			"dport %u accept\n",
			t, r->family == AF_INET ? "ip" : "ip6", a, r->plen, r->port);
	return sbx__buf_printf(b, "add rule inet %s sbx_egress %s daddr %s/%u accept\n", t,
			       r->family == AF_INET ? "ip" : "ip6", a, r->plen);
}

/*
 * A name entry's address: its TCP goes to the sandbox's name checker
 * (tproxy keeps the destination; the mark routes it to this host), and when
 * no checker listens tproxy does not match and the next rule resets the
 * connection. Its UDP (QUIC) falls through to the final refusal.
 */
static int emit_name_rule(struct sbx__buf *b,
			  const char *t,
			  const struct sbx__np_rule *r,
			  const struct sbx__np_checker *ck)
{
	char a[INET6_ADDRSTRLEN], tcp[32] = "meta l4proto tcp";
	const char *fam = r->family == AF_INET ? "ip" : "ip6";
	int rc = 0;

	sbx__addr_format(r->family, r->addr, a, sizeof(a));
	if (r->port)
		snprintf(tcp, sizeof(tcp), "tcp dport %u", r->port);
	if (ck && (r->family == AF_INET ? ck->port4 : ck->port6))
		rc |= sbx__buf_printf(
			b,
			"add rule inet %s sbx_egress %s daddr %s/%u %s tproxy %s to %s:%u "
			"meta mark set 0x%x accept\n",
			t, fam, a, r->plen, tcp, fam, r->family == AF_INET ? "127.0.0.1" : "[::1]",
			r->family == AF_INET ? ck->port4 : ck->port6, SBX_NP_TPROXY_MARK);
	rc |= sbx__buf_printf(
		b, "add rule inet %s sbx_egress %s daddr %s/%u %s counter reject with tcp reset\n",
		t, fam, a, r->plen, tcp);
	return rc;
}

static int
emit_drop(struct sbx__buf *b, const char *t, int family, const uint8_t *addr, unsigned plen)
{
	char a[INET6_ADDRSTRLEN];

	sbx__addr_format(family, addr, a, sizeof(a));
	return sbx__buf_printf(b, "add rule inet %s sbx_egress %s daddr %s/%u drop\n", t,
			       family == AF_INET ? "ip" : "ip6", a, plen);
}

int sbx__netpolicy_ruleset(char **out,
			   const char *t,
			   const uint8_t a4[4],
			   const uint8_t a6[16],
			   const struct sbx__np_plan *plan,
			   const struct sbx__np_checker *ck,
			   int reject,
			   int docker_user)
{
	struct sbx__buf b = {0};
	char s4[INET_ADDRSTRLEN], s6[INET6_ADDRSTRLEN];
	const struct sbx__special *tab;
	size_t tn;
	int rc = 0;

	inet_ntop(AF_INET, a4, s4, sizeof(s4));
	inet_ntop(AF_INET6, a6, s6, sizeof(s6));
	rc |= sbx__buf_printf(&b, "add table inet %s\n", t);
	/* Egress: everything the sandbox's link sends, before DNAT. */
	rc |= sbx__buf_printf(
		&b,
		"add chain inet %s sbx_egress { type filter hook prerouting priority -150; "
		"policy accept; }\n",
		t);
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_egress iifname != \"%s\" accept\n", t, t);
	/* Anti-spoofing: the sandbox sends from its own addresses only. */
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_egress ip saddr != %s counter drop\n", t,
			      s4);
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_egress ip6 saddr != %s counter drop\n", t,
			      s6);
	/* Never, before any accept: the fixed table (netpolicy/special.c),
	 * then this host's own addresses and bridges as they were at create,
	 * and its local, broadcast and multicast addresses as they are when
	 * the packet comes. An allowed range that holds one is carved here. */
	tn = sbx__special_table(&tab);
	for (size_t i = 0; i < tn; i++)
		rc |= emit_drop(&b, t, tab[i].family, tab[i].addr, tab[i].plen);
	for (size_t i = 0; i < plan->never_n; i++)
		rc |= emit_drop(&b, t, plan->never[i].family, plan->never[i].addr,
				plan->never[i].plen		   ? plan->never[i].plen
				: plan->never[i].family == AF_INET ? 32
								   : 128);
	rc |= sbx__buf_printf(
		&b,
		"add rule inet %s sbx_egress fib daddr type { local, broadcast, multicast } drop\n",
		t);
	/* CIDR entries first: an address one opens keeps its address-only
	 * meaning, whatever name also resolves to it. */
	for (size_t i = 0; i < plan->n; i++)
		if (!plan->rules[i].host)
			rc |= emit_rule(&b, t, &plan->rules[i]);
	for (size_t i = 0; i < plan->n; i++)
		if (plan->rules[i].host)
			rc |= emit_name_rule(&b, t, &plan->rules[i], ck);
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_egress counter %s\n", t,
			      reject ? "reject with icmpx type admin-prohibited" : "drop");
	/* Toward the sandbox: answers only; nothing may start a flow to it. */
	rc |= sbx__buf_printf(
		&b,
		"add chain inet %s sbx_ingress { type filter hook forward priority -10; "
		"policy accept; }\n",
		t);
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_ingress oifname != \"%s\" accept\n", t, t);
	rc |= sbx__buf_printf(
		&b, "add rule inet %s sbx_ingress ct state established,related accept\n", t);
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_ingress counter drop\n", t);
	rc |= sbx__buf_printf(&b,
			      "add chain inet %s sbx_nat { type nat hook postrouting priority 100; "
			      "policy accept; }\n",
			      t);
	rc |= sbx__buf_printf(&b, "add rule inet %s sbx_nat ip saddr %s masquerade\n", t, s4);
	if (plan->has_v6)
		rc |= sbx__buf_printf(&b, "add rule inet %s sbx_nat ip6 saddr %s masquerade\n", t,
				      s6);
	if (docker_user) {
		rc |= sbx__buf_printf(
			&b,
			"insert rule ip filter DOCKER-USER iifname \"%s\" accept comment "
			"\"" DOCKER_USER_TAG "%s\"\n",
			t, t);
		rc |= sbx__buf_printf(
			&b,
			"insert rule ip filter DOCKER-USER oifname \"%s\" accept comment "
			"\"" DOCKER_USER_TAG "%s\"\n",
			t, t);
	}
	if (rc != 0 || !(*out = sbx__buf_steal(&b))) {
		sbx__buf_clear(&b);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	}
	return 0;
}

/* ===== libnftables ===== */

static int nft_run_locked(const char *cmds, char **json_out)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	const char *errs;
	int rc = 0;

	if (!ctx)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				      "nftables: cannot make a context");
	if (json_out)
		nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_HANDLE);
	if (nft_ctx_buffer_output(ctx) != 0 || nft_ctx_buffer_error(ctx) != 0) {
		nft_ctx_free(ctx);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY,
				      "nftables: out of memory");
	}
	if (nft_run_cmd_from_buffer(ctx, cmds) != 0) {
		char msg[400];

		errs = nft_ctx_get_error_buffer(ctx);
		snprintf(msg, sizeof(msg), "%s", errs && *errs ? errs : "(no message)");
		msg[strcspn(msg, "\n")] = '\0';
		rc = sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				    "nftables refused the sandbox's rules: %s", msg);
	} else if (json_out) {
		const char *o = nft_ctx_get_output_buffer(ctx);
		*json_out = strdup(o ? o : "");
		if (!*json_out)
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	}
	nft_ctx_free(ctx);
	return rc;
}

int sbx__nft_run(const char *cmds, char **json_out)
{
	int rc;

	pthread_mutex_lock(&nft_lock);
	rc = nft_run_locked(cmds, json_out);
	pthread_mutex_unlock(&nft_lock);
	return rc;
}

/* Runs a listing and returns its "nftables" array (decref the root). */
static int list_json(const char *cmd, json_t **root)
{
	_sbx_cleanup_free_ char *text = NULL;
	int rc = sbx__nft_run(cmd, &text);

	if (rc < 0)
		return rc;
	*root = json_loads(text, 0, NULL);
	if (!*root)
		return sbx__error_set(SBX_ERROR, SBX_ERRCLASS_NETPOLICY,
				      "nftables: the listing is not JSON");
	return 0;
}

static int push_name(char ***v, size_t *n, const char *s)
{
	char **g = realloc(*v, (*n + 1) * sizeof(char *));

	if (!g)
		return -1;
	*v = g;
	if (!(g[*n] = strdup(s)))
		return -1;
	(*n)++;
	return 0;
}

int sbx__nft_tables(char ***out, size_t *n)
{
	json_t *root = NULL, *item;
	size_t i;
	int rc;

	*out = NULL;
	*n = 0;
	rc = list_json("list tables inet", &root);
	if (rc < 0)
		return rc;
	json_array_foreach(json_object_get(root, "nftables"), i, item)
	{
		const char *name =
			json_string_value(json_object_get(json_object_get(item, "table"), "name"));
		if (name && sbx__netpolicy_is_name(name) && push_name(out, n, name) < 0) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
			break;
		}
	}
	json_decref(root);
	return rc;
}

int sbx__nft_docker_state(int *forward_drop)
{
	json_t *root = NULL, *item;
	size_t i;
	int has_user = 0;

	*forward_drop = 0;
	if (list_json("list table ip filter", &root) < 0) {
		sbx__error_clear(); /* no such table: nothing of Docker's to open */
		return 0;
	}
	json_array_foreach(json_object_get(root, "nftables"), i, item)
	{
		json_t *c = json_object_get(item, "chain");
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *hook = json_string_value(json_object_get(c, "hook"));
		const char *pol = json_string_value(json_object_get(c, "policy"));

		if (!name)
			continue;
		if (strcmp(name, "DOCKER-USER") == 0)
			has_user = 1;
		if (hook && strcmp(hook, "forward") == 0 && pol && strcmp(pol, "drop") == 0)
			*forward_drop = 1;
	}
	json_decref(root);
	return has_user;
}

int sbx__nft_docker_user_rules(const char *name, long **handles, char ***names_out, size_t *n)
{
	json_t *root = NULL, *item;
	size_t i;
	int rc;

	*handles = NULL;
	*n = 0;
	if (names_out)
		*names_out = NULL;
	rc = list_json("list chain ip filter DOCKER-USER", &root);
	if (rc < 0) {
		sbx__error_clear(); /* no DOCKER-USER chain: no rule of ours in it */
		return 0;
	}
	json_array_foreach(json_object_get(root, "nftables"), i, item)
	{
		json_t *r = json_object_get(item, "rule");
		const char *comment = json_string_value(json_object_get(r, "comment"));
		const char *tagged;
		long *g;

		if (!r || !comment ||
		    strncmp(comment, DOCKER_USER_TAG, strlen(DOCKER_USER_TAG)) != 0)
			continue;
		tagged = comment + strlen(DOCKER_USER_TAG);
		if (!sbx__netpolicy_is_name(tagged) || (name && strcmp(tagged, name) != 0))
			continue;
		g = realloc(*handles, (*n + 1) * sizeof(long));
		if (!g || (names_out && push_name(names_out, n, tagged) < 0)) {
			if (g)
				*handles = g;
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
			break;
		}
		*handles = g;
		g[names_out ? *n - 1 : *n] = (long)json_integer_value(json_object_get(r, "handle"));
		if (!names_out)
			(*n)++;
	}
	json_decref(root);
	return rc;
}
