/*
 * cli/config.c: the operator config (docs/config.md) and `config
 * --effective`.
 *
 * The config is loaded by sbx_config_load_narrowed(): the system config
 * (/etc/sandboxio/config.json, root-owned, else the built-in one) is the
 * bound, and --config PATH, else $SANDBOXIO_CONFIG, may only narrow it. The
 * arguments and environment of this command may be an agent's, so they are
 * never trusted to widen anything: a narrowing config beyond the system's is
 * refused, naming the key and both files. The command never reads the
 * variable itself. A config that cannot be used is an error (exit 125) with
 * the library's message; it is never skipped.
 *
 * `config --effective [OPTIONS]` prints what the library's merge makes of
 * the options, taken as the request: each value with where it came from
 * ("builtin", the config file, "request"). Each option sets its own value
 * and nothing else (--timeout the runs' deadlines, --lifetime the
 * sandbox's), and a request beyond a ceiling is refused as create would
 * refuse it.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int cli_config_load(const struct cli_opts *o, sbx_config **out)
{
	*out = NULL;
	if (sbx_config_load_narrowed(out, o->config) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

int cmd_config(const struct cli_opts *o)
{
	sbx_config *cfg = NULL;
	sbx_policy *p = NULL;
	char *text = NULL;
	int rc;

	if (!o->effective) {
		cli_print_error(o, SBX_EINVALID,
				"config: give --effective (see 'sandboxio config --help')");
		return CLI_EXIT_FAIL;
	}
	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "config takes no arguments (got '%.64s')",
				o->args[0]);
		return CLI_EXIT_FAIL;
	}
	rc = cli_config_load(o, &cfg);
	if (!rc)
		rc = cli_build_policy(o, cfg, &p, NULL);
	if (rc)
		goto out;
	if (sbx_config_describe(&text, cfg, p, cli_backend_name(o)) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (printf("%s\n", text) < 0 || fflush(stdout) == EOF)
		rc = CLI_EXIT_FAIL;
out:
	sbx_free(text);
	sbx_policy_free(p);
	sbx_config_free(cfg);
	return rc;
}
