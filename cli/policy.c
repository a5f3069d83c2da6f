/*
 * cli/policy.c: the options of cli/options.c turned into a policy: limits,
 * deadlines, environment and egress, set through the library's setters and
 * merged with the operator config, so that the command accepts and refuses
 * exactly what the library does and prints the library's own message.
 * Kept apart from the parsing, which the command's front (cli/front/)
 * links without the library's engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* A plain decimal count such as "256" (pids, open files); range checks are
 * the setter's. */
static int parse_count(const struct cli_opts *o, const char *opt, const char *text, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno) {
		cli_print_error(o, SBX_EINVALID, "--%s '%.32s': expected a whole number", opt,
				text);
		return CLI_EXIT_FAIL;
	}
	*out = v;
	return 0;
}

/* CPUs as a decimal number of cores ("0.5", "2") into thousandths of a core;
 * range checks are the setter's. */
static int parse_cpus(const struct cli_opts *o, const char *text, int64_t *out)
{
	const char *s = text;
	int64_t whole = 0, frac = 0;
	int digits = 0, fdigits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (whole > 1000000)
			goto bad;
		whole = whole * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, fdigits++) {
			if (fdigits >= 3)
				goto bad;
			frac = frac * 10 + (*s - '0');
		}
		if (fdigits == 0)
			goto bad;
		for (int k = fdigits; k < 3; k++)
			frac *= 10;
	}
	if (*s || digits == 0)
		goto bad;
	*out = whole * 1000 + frac;
	return 0;
bad:
	cli_print_error(o, SBX_EINVALID,
			"--cpus '%.32s': expected a number of cores such as 0.5 or 2 (at most 3 "
			"decimals)",
			text);
	return CLI_EXIT_FAIL;
}

/* The option of one limit kind, read in the kind's unit (core/limit-kinds.h). */
static int set_limit(const struct cli_opts *o, sbx_policy *p, int kind)
{
	const struct sbx__limit_desc *d = &sbx__limit_kinds[kind];
	const char *text = o->limit[kind];
	int64_t v = 0;
	int rc = 0;

	if (!text)
		return 0;
	switch (d->unit) {
	case SBX__LIMIT_UNIT_MILLI:
		rc = parse_cpus(o, text, &v);
		break;
	case SBX__LIMIT_UNIT_SIZE:
		rc = sbx_parse_size(&v, text) < 0 ? -1 : 0;
		break;
	case SBX__LIMIT_UNIT_COUNT:
		rc = parse_count(o, d->option, text, &v);
		break;
	}
	if (rc == CLI_EXIT_FAIL)
		return rc;
	if (rc < 0 || sbx_policy_set_limit(p, d->kind, v) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/*
 * Deadlines. Only what the command line gives is set, so that the operator
 * config's defaults apply to the rest; the merge with the config checks
 * each value set against its ceiling. --timeout is the deadline of the runs
 * (run and run_code), --create-timeout that of the creation.
 *
 * run and run-code: --lifetime is the sandbox's whole life, which the init
 * inside the sandbox enforces even when sandboxio itself is killed. Without
 * it the sandbox outlives its run by a margin, up to the operator's timeout
 * ceiling, so that it never ends in the middle of the run; a --lifetime
 * shorter than the run's deadline (--timeout, else the default the config
 * gives) is refused for the same reason. create: --timeout is also the
 * sandbox's lifetime unless --lifetime is given; with --lifetime alone, the
 * runs' default deadline is at most the lifetime. config --effective: each
 * option sets its own deadline and nothing else.
 */
#define CLI_LIFETIME_MARGIN_MS 30000u

static int set_run_timeouts(sbx_policy *p, uint64_t ms)
{
	if (sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, ms) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN_CODE, ms) < 0)
		return -1;
	return 0;
}

/* The deadline of o's runs once p is merged with cfg. */
static int effective_run_timeout(const struct cli_opts *o,
				 const sbx_config *cfg,
				 const sbx_policy *p,
				 uint64_t *ms)
{
	sbx_policy *eff = NULL;

	if (sbx_config_apply(&eff, cfg, p, cli_backend_name(o)) < 0)
		return -1;
	*ms = sbx_policy_timeout_ms(eff, o->cmd == CMD_RUN_CODE ? SBX_TIMEOUT_RUN_CODE
								: SBX_TIMEOUT_RUN);
	sbx_policy_free(eff);
	return 0;
}

static int set_timeouts(const struct cli_opts *o, const sbx_config *cfg, sbx_policy *p)
{
	uint64_t t = 0, c = 0, life = 0, ceiling;
	int rc;

	rc = cli_run_timeout(o, &t);
	if (rc)
		return rc;
	if (o->lifetime && sbx_parse_duration_ms(&life, o->lifetime) < 0)
		goto fail;
	if (o->create_timeout && (sbx_parse_duration_ms(&c, o->create_timeout) < 0 ||
				  sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_CREATE, c) < 0))
		goto fail;
	if (t && set_run_timeouts(p, t) < 0)
		goto fail;
	/* mcp: the session's sandbox lives for --lifetime (else the config's or
	 * the built-in default), whatever the deadline of each run. */
	if (o->cmd == CMD_CONFIG || o->cmd == CMD_MCP || (o->cmd == CMD_CREATE && !life)) {
		if (o->cmd == CMD_CREATE && t) /* create --timeout: the lifetime too */
			life = t;
		if (life && sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, life) < 0)
			goto fail;
		return 0;
	}
	if (!t) {
		if (effective_run_timeout(o, cfg, p, &t) < 0)
			goto fail;
		if (o->cmd == CMD_CREATE && life < t) {
			t = life;
			if (set_run_timeouts(p, t) < 0)
				goto fail;
		}
	}
	if (life && life < t) {
		cli_print_error(o, SBX_EINVALID,
				"--lifetime %.32s is shorter than the run deadline of %.6g s%s: "
				"the sandbox would end before its run",
				o->lifetime, (double)t / 1000.0,
				o->timeout ? " (--timeout)"
					   : " (the default; lower it with --timeout)");
		return CLI_EXIT_FAIL;
	}
	if (!life) {
		ceiling = sbx_config_timeout_ceiling_ms(cfg);
		life = t + CLI_LIFETIME_MARGIN_MS;
		if (life > ceiling)
			life = ceiling;
	}
	if (sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, life) < 0)
		goto fail;
	return 0;
fail:
	cli_print_lib_error(o);
	return CLI_EXIT_FAIL;
}

static int set_env(const struct cli_opts *o, sbx_policy *p)
{
	for (size_t k = 0; k < o->env_n; k++) {
		const char *kv = o->env[k], *eq = strchr(kv, '=');
		char *name;
		int rc;

		if (!eq) {
			cli_print_error(o, SBX_EINVALID, "--env '%.64s': expected NAME=VALUE", kv);
			return CLI_EXIT_FAIL;
		}
		name = strndup(kv, (size_t)(eq - kv));
		if (!name) {
			cli_print_error(o, SBX_ENOMEM, "out of memory");
			return CLI_EXIT_FAIL;
		}
		rc = sbx_policy_set_env(p, name, eq + 1);
		free(name);
		if (rc < 0) {
			cli_print_lib_error(o);
			return CLI_EXIT_FAIL;
		}
	}
	return 0;
}

/*
 * The egress allowlist, checked entry by entry by the library's own parsers
 * before anything is created, so that a bad entry costs no sandbox.
 */
static int set_allow(const struct cli_opts *o, sbx_policy *p)
{
	for (size_t k = 0; k < o->allow_n; k++) {
		const struct cli_allow *a = &o->allow[k];
		int rc = a->cidr     ? sbx_policy_allow_cidr_spec(p, a->spec)
			 : a->preset ? sbx_policy_allow_preset(p, a->spec)
				     : sbx_policy_allow_host_spec(p, a->spec);

		if (rc < 0) {
			cli_print_lib_error(o);
			return CLI_EXIT_FAIL;
		}
	}
	return 0;
}

/*
 * The policy of the command line in *out: only what the options give is
 * set, the rest is left to the operator config. It is merged with cfg here
 * once, so that a request the config refuses costs no sandbox; effective
 * (may be NULL) receives the merged policy, which sbx_sandbox_create()
 * computes again from *out.
 */
int cli_build_policy(const struct cli_opts *o,
		     const sbx_config *cfg,
		     sbx_policy **out,
		     sbx_policy **effective)
{
	sbx_policy *p = NULL, *eff = NULL;
	sbx_tier tier;
	int rc;

	if (sbx_policy_new(&p) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	rc = 0;
	for (int k = SBX__LIMIT_FIRST; !rc && k <= SBX__LIMIT_LAST; k++)
		rc = set_limit(o, p, k);
	if (!rc)
		rc = set_env(o, p);
	if (!rc)
		rc = set_allow(o, p);
	if (!rc && ((o->image && sbx_policy_set_image(p, o->image) < 0) ||
		    (o->tenant && sbx_policy_set_tenant(p, o->tenant) < 0) ||
		    (o->workdir && sbx_policy_set_workdir(p, o->workdir) < 0) ||
		    (o->tier && (sbx_tier_parse(&tier, o->tier) < 0 ||
				 sbx_policy_set_min_tier(p, tier) < 0)))) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	}
	/* A sandbox made by create outlives this process: the reaper must leave
	 * it alone until rm or its deadline. */
	if (!rc && o->cmd == CMD_CREATE && sbx_policy_set_detached(p, 1) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	}
	/* Deadlines last: they may depend on the merge of all the rest. */
	if (!rc)
		rc = set_timeouts(o, cfg, p);
	if (!rc && sbx_config_apply(&eff, cfg, p, cli_backend_name(o)) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	}
	if (rc) {
		sbx_policy_free(p);
		return rc;
	}
	*out = p;
	if (effective)
		*effective = eff;
	else
		sbx_policy_free(eff);
	return 0;
}
