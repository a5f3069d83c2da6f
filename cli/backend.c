/*
 * cli/backend.c: opening the docker backend, and the default image.
 *
 * Only creating a sandbox needs the sandbox init. The library finds it at
 * $SANDBOXIO_INIT, else in its install directory. An in-tree build has
 * neither, so when both are missing the commands that create offer the
 * sbx-init that sits next to their own executable (build/sandboxio next to
 * build/sbx-init). Otherwise the library decides.
 *
 * Opening a backend reaps this host's orphans, except for `reap`, which
 * reaps itself so that it can report (or, with --dry-run, only report).
 *
 * The README's one command (`sandboxio run -- ...`) must work on a machine
 * where the default image was never built, so run, run-code and create build
 * the default image when it is missing. Any other image is never built or
 * pulled: create fails with the library's message saying how to get it.
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

int cli_backend_open(const struct cli_opts *o, sbx_backend **out)
{
	sbx_backend_options bo;
	char init[PATH_MAX];

	if (sbx_backend_options_init(&bo, SBX_BACKEND_OPTIONS_VERSION) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	bo.socket_path = o->socket;
	if (o->cmd == CMD_RUN || o->cmd == CMD_RUN_CODE || o->cmd == CMD_CREATE)
		bo.init_path = local_init(init, sizeof(init));
	bo.no_reap_at_open = o->cmd == CMD_REAP;
	if (sbx_backend_open(out, "docker", &bo) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

int cli_ensure_image(const struct cli_opts *o, sbx_backend *b, const char *ref)
{
	int rc;

	if (strcmp(ref, CLI_DEFAULT_IMAGE) != 0)
		return 0;
	rc = sbx_backend_image_exists(b, ref);
	if (rc < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	if (rc == 1)
		return 0;
	cli_warn("image %s is not present; building it first", ref);
	return cli_image_build(o, b, ref);
}
