/*
 * cli/secret.c: --secret NAME and --secret-file NAME=PATH.
 *
 * A secret's value never comes from our command line, which every process
 * of the host can read (ps, /proc/PID/cmdline): --secret NAME takes it from
 * our environment variable NAME, --secret-file NAME=PATH from a file, and
 * there is no --secret NAME=VALUE (one is refused without quoting its
 * value). Each value goes straight into the library's secrets object
 * (locked memory, redacted from every record while the object lives); then
 * our own copy is wiped: the bytes of the variable are zeroed where they lie
 * (so /proc/PID/environ no longer holds them) and the variable is removed,
 * so that no child we start (the image build script) and no later code sees
 * it. This is done before the command does anything else, and the variable
 * of every --secret is wiped even when an earlier secret was refused.
 *
 * The run then hands the object to the library (sbx_run_options.secrets),
 * which refuses what it must: a value too short or too long, a name that is
 * also a plain variable of the run, an operator config whose "secrets" is
 * false. The object is freed with the options (cli_opts_free()).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

extern char **environ;

/* Zeroes the value of every NAME=... of our environment, then removes NAME. */
static void scrub(const char *name)
{
	size_t n = strlen(name);

	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			explicit_bzero(*e + n + 1, strlen(*e + n + 1));
	unsetenv(name);
}

static int has_name(const sbx_secrets *sec, const char *name)
{
	for (size_t i = 0; i < sbx_secrets_count(sec); i++)
		if (strcmp(sbx_secrets_name(sec, i), name) == 0)
			return 1;
	return 0;
}

static int add_from_env(struct cli_opts *o, const char *name)
{
	const char *v;

	if (strchr(name, '=')) {
		cli_print_error(
			o, SBX_EINVALID,
			"--secret takes the name of an environment variable that holds the "
			"value (NAME=VALUE sandboxio ... --secret NAME), not NAME=VALUE: a "
			"command line is visible to every process of the host; a value in a "
			"file is given with --secret-file NAME=PATH");
		return CLI_EXIT_FAIL;
	}
	if (has_name(o->secrets, name)) {
		cli_print_error(o, SBX_EINVALID, "secret %.64s is given twice", name);
		return CLI_EXIT_FAIL;
	}
	v = getenv(name);
	if (!v) {
		cli_print_error(o, SBX_ENOTFOUND,
				"--secret %.64s: environment variable %.64s is not set", name,
				name);
		return CLI_EXIT_FAIL;
	}
	if (sbx_secrets_add(o->secrets, name, v, strlen(v)) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static int add_from_file(struct cli_opts *o, const char *spec)
{
	const char *eq = strchr(spec, '=');
	char *name;
	int rc = 0;

	if (!eq || eq == spec || eq[1] == '\0') {
		cli_print_error(o, SBX_EINVALID, "--secret-file '%.64s': expected NAME=PATH", spec);
		return CLI_EXIT_FAIL;
	}
	name = strndup(spec, (size_t)(eq - spec));
	if (!name) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	if (sbx_secrets_add_file(o->secrets, name, eq + 1) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	}
	free(name);
	return rc;
}

/* Reads the values of o->secret into o->secrets (left NULL without any). */
int cli_secrets_load(struct cli_opts *o)
{
	int rc = 0;

	if (o->secret_n == 0)
		return 0;
	if (sbx_secrets_new(&o->secrets) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	}
	for (size_t k = 0; k < o->secret_n; k++) {
		const struct cli_secret *c = &o->secret[k];

		if (!rc)
			rc = c->file ? add_from_file(o, c->spec) : add_from_env(o, c->spec);
		if (!c->file && c->spec[0] && !strchr(c->spec, '='))
			scrub(c->spec);
	}
	return rc;
}
