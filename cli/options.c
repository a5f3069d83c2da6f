/*
 * cli/options.c: the command line, parsed into struct cli_opts and then
 * turned into a policy.
 *
 * Parsing only checks the syntax (known option, value present) and keeps
 * every value as text; converting it is left to the library's parsers and
 * setters, so the command accepts and refuses exactly what the library does
 * and prints the library's own message. Options are taken in both
 * "--opt value" and "--opt=value" forms and stop at the first non-option or
 * at "--"; each command accepts its own set, and an option it does not know
 * is an error naming the option.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The option of each limit kind (core/limit-kinds.h): its id, row, bit, store. */
#define LIMIT_ID(ID, ...) O_LIMIT_##ID,
#define LIMIT_OPT(ID, name, key, label, audit, span, option, ...) {option, O_LIMIT_##ID, 1},
#define LIMIT_BIT(ID, ...) | BIT(O_LIMIT_##ID)
#define LIMIT_CASE(ID, ...)                                                                        \
	case O_LIMIT_##ID:                                                                         \
		o->limit[SBX_LIMIT_##ID] = val;                                                    \
		break;

enum opt_id {
	O_JSON,
	O_SOCKET,
	O_HELP,
	O_VERSION,
	O_IMAGE,
	O_TIMEOUT,
	O_CREATE_TIMEOUT,
	/* clang-format off */
	SBX__LIMIT_KINDS(LIMIT_ID)
	/* clang-format on */
	O_ENV,
	O_TENANT,
	O_WORKDIR,
	O_TIER,
	O_STDIN,
	O_LANG,
	O_REF,
	O_LIFETIME,
	O_DRY_RUN,
	O_ALLOW_HOST,
	O_ALLOW_CIDR,
	O_ALLOW_PRESET,
	O_HOSTS_FILE,
	O_CONFIG,
	O_EFFECTIVE,
	O_SECRET,
	O_SECRET_FILE,
	O_NO_REDACT,
	O_AUDIT_LOG,
	O_BACKEND,
	O_INTERACTIVE,
	O_TTY,
	O_DAEMON,
	O_NO_DAEMON
};

#define BIT(id) (1ull << (id))

struct opt {
	const char *name;
	enum opt_id id;
	int has_arg;
};

static const struct opt opts[] = {
	{"json", O_JSON, 0},
	{"socket", O_SOCKET, 1},
	{"help", O_HELP, 0},
	{"version", O_VERSION, 0},
	{"image", O_IMAGE, 1},
	{"timeout", O_TIMEOUT, 1},
	{"create-timeout", O_CREATE_TIMEOUT, 1},
	/* clang-format off */
	SBX__LIMIT_KINDS(LIMIT_OPT)
	/* clang-format on */
	{"env", O_ENV, 1},
	{"tenant", O_TENANT, 1},
	{"workdir", O_WORKDIR, 1},
	{"tier", O_TIER, 1},
	{"stdin", O_STDIN, 1},
	{"lang", O_LANG, 1},
	{"ref", O_REF, 1},
	{"lifetime", O_LIFETIME, 1},
	{"dry-run", O_DRY_RUN, 0},
	{"allow-host", O_ALLOW_HOST, 1},
	{"allow-cidr", O_ALLOW_CIDR, 1},
	{"allow-preset", O_ALLOW_PRESET, 1},
	{"hosts-file", O_HOSTS_FILE, 1},
	{"config", O_CONFIG, 1},
	{"effective", O_EFFECTIVE, 0},
	{"secret", O_SECRET, 1},
	{"secret-file", O_SECRET_FILE, 1},
	{"no-redact-output", O_NO_REDACT, 0},
	{"audit-log", O_AUDIT_LOG, 1},
	{"backend", O_BACKEND, 1},
	{"interactive", O_INTERACTIVE, 0},
	{"tty", O_TTY, 0},
	{"daemon", O_DAEMON, 1},
	{"no-daemon", O_NO_DAEMON, 0},
};

#define M_COMMON                                                                                   \
	(BIT(O_JSON) | BIT(O_SOCKET) | BIT(O_HOSTS_FILE) | BIT(O_CONFIG) | BIT(O_AUDIT_LOG) |      \
	 BIT(O_HELP) | BIT(O_BACKEND) | BIT(O_DAEMON) | BIT(O_NO_DAEMON))
#define M_LIMITS (0ull SBX__LIMIT_KINDS(LIMIT_BIT))
#define M_SANDBOX                                                                                  \
	(M_COMMON | BIT(O_IMAGE) | BIT(O_TIMEOUT) | BIT(O_CREATE_TIMEOUT) | M_LIMITS |             \
	 BIT(O_ENV) | BIT(O_TENANT) | BIT(O_WORKDIR) | BIT(O_TIER) | BIT(O_LIFETIME) |             \
	 BIT(O_ALLOW_HOST) | BIT(O_ALLOW_CIDR) | BIT(O_ALLOW_PRESET))
/* What a run is given besides its command: secrets, and their redaction. */
#define M_RUN (BIT(O_SECRET) | BIT(O_SECRET_FILE) | BIT(O_NO_REDACT))

/* Which options each command takes. */
static unsigned long long mask_for(enum cli_cmd cmd)
{
	switch (cmd) {
	case CMD_RUN:
		return M_SANDBOX | M_RUN | BIT(O_STDIN) | BIT(O_INTERACTIVE) | BIT(O_TTY);
	case CMD_RUN_CODE:
		return M_SANDBOX | M_RUN | BIT(O_LANG);
	case CMD_CREATE:
		return M_SANDBOX;
	case CMD_EXEC:
		return M_COMMON | M_RUN | BIT(O_TIMEOUT) | BIT(O_ENV) | BIT(O_WORKDIR) |
		       BIT(O_STDIN) | BIT(O_INTERACTIVE) | BIT(O_TTY);
	case CMD_RM:
		return M_COMMON;
	case CMD_LS:
		return M_COMMON | BIT(O_TENANT);
	case CMD_REAP:
		return M_COMMON | BIT(O_TENANT) | BIT(O_DRY_RUN);
	case CMD_IMAGE_BUILD:
		return M_COMMON | BIT(O_REF);
	case CMD_VERSION:
	case CMD_DOCTOR:
		return M_COMMON;
	case CMD_CONFIG:
		return M_SANDBOX | BIT(O_EFFECTIVE);
	case CMD_MCP:
		return M_SANDBOX | M_RUN;
	case CMD_HELP:
		return BIT(O_HELP);
	case CMD_NONE:
		return M_COMMON | BIT(O_VERSION);
	}
	return 0;
}

static int add_env(struct cli_opts *o, const char *kv)
{
	const char **grown = realloc(o->env, (o->env_n + 2) * sizeof(*grown));

	if (!grown) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	o->env = grown;
	o->env[o->env_n++] = kv;
	o->env[o->env_n] = NULL;
	return 0;
}

/* --allow-host, --allow-cidr and --allow-preset, kept in the order given. */
static int add_allow(struct cli_opts *o, int cidr, int preset, const char *spec)
{
	struct cli_allow *grown = realloc(o->allow, (o->allow_n + 1) * sizeof(*grown));

	if (!grown) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	o->allow = grown;
	o->allow[o->allow_n].cidr = cidr;
	o->allow[o->allow_n].preset = preset;
	o->allow[o->allow_n].spec = spec;
	o->allow_n++;
	return 0;
}

/* --secret and --secret-file, kept in the order given; their values are
 * read by cli_secrets_load() once parsing is done. */
static int add_secret(struct cli_opts *o, int file, const char *spec)
{
	struct cli_secret *grown = realloc(o->secret, (o->secret_n + 1) * sizeof(*grown));

	if (!grown) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	o->secret = grown;
	o->secret[o->secret_n].file = file;
	o->secret[o->secret_n].spec = spec;
	o->secret_n++;
	return 0;
}

static int store(struct cli_opts *o, enum opt_id id, const char *val)
{
	switch (id) {
	case O_JSON:
		o->json = 1;
		break;
	case O_HELP:
		o->help = 1;
		break;
	case O_VERSION:
		o->version = 1;
		break;
	case O_SOCKET:
		o->socket = val;
		break;
	case O_IMAGE:
		o->image = val;
		break;
	case O_TIMEOUT:
		o->timeout = val;
		break;
	case O_CREATE_TIMEOUT:
		o->create_timeout = val;
		break;
		/* clang-format off */
	SBX__LIMIT_KINDS(LIMIT_CASE)
	/* clang-format on */
	case O_ENV:
		return add_env(o, val);
	case O_TENANT:
		o->tenant = val;
		break;
	case O_WORKDIR:
		o->workdir = val;
		break;
	case O_TIER:
		o->tier = val;
		break;
	case O_STDIN:
		o->stdin_path = val;
		break;
	case O_LANG:
		o->lang = val;
		break;
	case O_REF:
		o->ref = val;
		break;
	case O_LIFETIME:
		o->lifetime = val;
		break;
	case O_DRY_RUN:
		o->dry_run = 1;
		break;
	case O_ALLOW_HOST:
		return add_allow(o, 0, 0, val);
	case O_ALLOW_CIDR:
		return add_allow(o, 1, 0, val);
	case O_ALLOW_PRESET:
		return add_allow(o, 0, 1, val);
	case O_HOSTS_FILE:
		o->hosts_file = val;
		break;
	case O_BACKEND:
		o->backend = val;
		break;
	case O_CONFIG:
		o->config = val;
		break;
	case O_EFFECTIVE:
		o->effective = 1;
		break;
	case O_SECRET:
		return add_secret(o, 0, val);
	case O_SECRET_FILE:
		return add_secret(o, 1, val);
	case O_NO_REDACT:
		o->no_redact = 1;
		break;
	case O_AUDIT_LOG:
		o->audit_log = val;
		break;
	case O_INTERACTIVE:
		o->interactive = 1;
		break;
	case O_TTY:
		o->tty = 1;
		break;
	case O_DAEMON:
		o->daemon = val;
		break;
	case O_NO_DAEMON:
		o->no_daemon = 1;
		break;
	}
	return 0;
}

static void unknown(const struct cli_opts *o, const char *arg, size_t len)
{
	if (o->cmd == CMD_NONE)
		cli_print_error(o, SBX_EINVALID, "unknown option %.*s (see 'sandboxio --help')",
				(int)len, arg);
	else
		cli_print_error(o, SBX_EINVALID,
				"unknown option %.*s for '%s' (see 'sandboxio %s --help')",
				(int)len, arg, o->cmd_name, o->cmd_name);
}

/*
 * Consumes options from argv[*i] on. Stops at the first non-option ("-" on
 * its own is one: it names standard input) and after "--".
 */
static int parse(struct cli_opts *o, int argc, char **argv, int *i, unsigned long long mask)
{
	while (*i < argc) {
		const char *arg = argv[*i], *name, *eq, *val = NULL;
		const struct opt *hit = NULL;
		size_t nlen;

		if (arg[0] != '-' || arg[1] == '\0')
			return 0;
		if (strcmp(arg, "--") == 0) {
			(*i)++;
			return 0;
		}
		if (strcmp(arg, "-h") == 0 && (mask & BIT(O_HELP))) {
			o->help = 1;
			(*i)++;
			continue;
		}
		/* -i, -t and together (-it, -ti), as docker exec takes them. */
		if ((mask & BIT(O_TTY)) && arg[1] != '-' &&
		    strspn(arg + 1, "it") == strlen(arg + 1)) {
			o->interactive |= strchr(arg, 'i') != NULL;
			o->tty |= strchr(arg, 't') != NULL;
			(*i)++;
			continue;
		}
		if (arg[1] != '-') {
			unknown(o, arg, strlen(arg));
			return CLI_EXIT_FAIL;
		}
		name = arg + 2;
		eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, name, nlen) == 0)
				hit = &opts[k];
		if (!hit || !(mask & BIT(hit->id))) {
			unknown(o, arg, nlen + 2);
			return CLI_EXIT_FAIL;
		}
		(*i)++;
		if (hit->has_arg) {
			if (eq) {
				val = eq + 1;
			} else if (*i < argc) {
				val = argv[(*i)++];
			} else {
				cli_print_error(o, SBX_EINVALID, "option --%s needs a value",
						hit->name);
				return CLI_EXIT_FAIL;
			}
		} else if (eq) {
			cli_print_error(o, SBX_EINVALID, "option --%s takes no value", hit->name);
			return CLI_EXIT_FAIL;
		}
		if (store(o, hit->id, val) != 0)
			return CLI_EXIT_FAIL;
	}
	return 0;
}

int cli_parse_global(struct cli_opts *o, int argc, char **argv, int *i)
{
	return parse(o, argc, argv, i, mask_for(CMD_NONE));
}

int cli_parse_command(struct cli_opts *o, int argc, char **argv, int *i)
{
	return parse(o, argc, argv, i, mask_for(o->cmd));
}

void cli_opts_free(struct cli_opts *o)
{
	free(o->env);
	o->env = NULL;
	o->env_n = 0;
	free(o->allow);
	o->allow = NULL;
	o->allow_n = 0;
	free(o->secret);
	o->secret = NULL;
	o->secret_n = 0;
	sbx_secrets_free(o->secrets);
	o->secrets = NULL;
}

/* A plain decimal count such as "256" (pids, open files); range checks are
 * the setter's. */
/* --backend, else $SANDBOXIO_BACKEND, else docker. */
const char *cli_backend_name(const struct cli_opts *o)
{
	const char *env = getenv("SANDBOXIO_BACKEND");

	if (o->backend)
		return o->backend;
	return env && *env ? env : CLI_BACKEND;
}

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

int cli_run_timeout(const struct cli_opts *o, uint64_t *ms)
{
	*ms = 0;
	if (!o->timeout)
		return 0;
	if (sbx_parse_duration_ms(ms, o->timeout) < 0) {
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
