/*
 * cli/backend.c: opening the backend (docker unless --backend or
 * $SANDBOXIO_BACKEND names e2b or modal; cli_backend_name() of
 * cli/options.c).
 *
 * Only creating a sandbox needs the sandbox init. The library finds it at
 * $SANDBOXIO_INIT, else in its install directory. An in-tree build has
 * neither, so when both are missing the commands that create offer the
 * sbx-init that sits next to their own executable (build/sandboxio next to
 * build/sbx-init). Otherwise the library decides.
 *
 * Opening a backend reaps this host's orphans, except for `reap`, which
 * reaps itself so that it can report (or, with --dry-run, only report), and
 * `doctor`, which only looks. --hosts-file is passed on as the backend's
 * hosts_file: the only place the names of an allowlist are then resolved.
 * --audit-log is the backend's audit_path, and $TRACEPARENT its traceparent
 * (the library reads the OTEL_* variables itself). Every backend but
 * doctor's is bound by the operator config (cli/config.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* The init next to our executable, when the usual places have none. */
static const char *local_init(char *buf, size_t size)
{
	const char *env = getenv("SANDBOXIO_INIT");
	char dir[PATH_MAX];

	if (env && *env)
		return NULL;
	if (access(SBX_LIBEXECDIR "/sbx-init", F_OK) == 0)
		return NULL;
	if (cli_exe_dir(dir, sizeof(dir)) < 0)
		return NULL;
	if ((size_t)snprintf(buf, size, "%s/sbx-init", dir) >= size)
		return NULL;
	return access(buf, F_OK) == 0 ? buf : NULL;
}

/*
 * The backend options of o's command. init (size bytes) holds the path of
 * an init next to our executable when bo ends up pointing at it.
 */
int cli_backend_options(const struct cli_opts *o, sbx_backend_options *bo, char *init, size_t size)
{
	const char *tp;

	if (sbx_backend_options_init(bo, SBX_BACKEND_OPTIONS_VERSION) < 0)
		return -1;
	bo->socket_path = o->socket;
	bo->hosts_file = o->hosts_file;
	bo->audit_path = o->audit_log;
	tp = getenv("TRACEPARENT");
	bo->traceparent = tp && *tp ? tp : NULL;
	if (o->cmd == CMD_RUN || o->cmd == CMD_RUN_CODE || o->cmd == CMD_CREATE ||
	    o->cmd == CMD_DOCTOR || o->cmd == CMD_MCP)
		bo->init_path = local_init(init, size);
	/* doctor only looks: it removes nothing but its own sandbox. */
	bo->no_reap_at_open = o->cmd == CMD_REAP || o->cmd == CMD_DOCTOR;
	return 0;
}

/*
 * Opens the docker backend bound by cfg, the operator config of
 * cli_config_load(); NULL: the config is loaded here. The backend keeps a
 * reference of its own, so the caller may free cfg right after.
 */
int cli_backend_open(const struct cli_opts *o, const sbx_config *cfg, sbx_backend **out)
{
	sbx_backend_options bo;
	sbx_config *own = NULL;
	char init[PATH_MAX];
	int rc = 0;

	if (!cfg) {
		rc = cli_config_load(o, &own);
		if (rc)
			return rc;
		cfg = own;
	}
	if (cli_backend_options(o, &bo, init, sizeof(init)) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	} else {
		bo.config = cfg;
		if (sbx_backend_open(out, cli_backend_name(o), &bo) < 0) {
			cli_print_lib_error(o);
			rc = CLI_EXIT_FAIL;
		}
	}
	sbx_config_free(own);
	return rc;
}

/* The socket the library uses: --socket, else $DOCKER_HOST's unix path,
 * else the default (as sbx_backend_options.socket_path says). */
const char *cli_socket_path(const struct cli_opts *o)
{
	const char *env = getenv("DOCKER_HOST");

	if (o->socket)
		return o->socket;
	if (env && *env)
		return strncmp(env, "unix://", 7) == 0 ? env + 7 : env;
	return "/var/run/docker.sock";
}
