/*
 * cli/options.c: the command line, parsed into struct cli_opts (cli/policy.c
 * turns it into a policy).
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
	O_RECIPE,
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
	O_NO_DAEMON,
	O_MAX
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
	{"recipe", O_RECIPE, 1},
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
	{"max", O_MAX, 1},
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
	case CMD_PAUSE:
		return M_COMMON | BIT(O_MAX);
	case CMD_RM:
	case CMD_RESUME:
		return M_COMMON;
	case CMD_LS:
		return M_COMMON | BIT(O_TENANT);
	case CMD_REAP:
		return M_COMMON | BIT(O_TENANT) | BIT(O_DRY_RUN);
	case CMD_IMAGE_BUILD:
		return M_COMMON | BIT(O_REF) | BIT(O_RECIPE);
	case CMD_VERSION:
	case CMD_DOCTOR:
		return M_COMMON;
	case CMD_CONFIG:
		return M_SANDBOX | BIT(O_EFFECTIVE);
	case CMD_MCP:
		return M_SANDBOX | M_RUN;
	case CMD_CP:
		return M_COMMON | BIT(O_TIMEOUT);
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
	case O_RECIPE:
		o->recipe = val;
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
	case O_MAX:
		o->pause_max = val;
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

/* --backend, else $SANDBOXIO_BACKEND, else docker. */
const char *cli_backend_name(const struct cli_opts *o)
{
	const char *env = getenv("SANDBOXIO_BACKEND");

	if (o->backend)
		return o->backend;
	return env && *env ? env : CLI_BACKEND;
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
