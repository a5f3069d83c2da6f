/*
 * cli/image.c: `sandboxio image build`, the default image (or the e2b
 * flavour's) made locally.
 *
 * The image is built from Debian packages by scripts/mkimage.sh, which
 * writes a root filesystem tarball, by one of its recipes: python (the
 * default image; the script is called with the tarball's path alone) or
 * e2b (sandboxio/e2b-base:2, `--recipe e2b` before the path); the library
 * then imports it through the Engine API, so no registry is involved. The
 * script is found at $SANDBOXIO_MKIMAGE, else in the source tree next to an
 * in-tree build (build/sandboxio -> scripts/mkimage.sh), else in the
 * install directory.
 * It is started with posix_spawn and an argv (no shell parses anything),
 * its output goes to our stderr (stdout is kept for --json), and the
 * temporary directory holding the tarball is removed on every path.
 *
 * The README's one command (`sandboxio run -- ...`) must work on a machine
 * where the default image was never built, so run, run-code and create build
 * the default image when it is missing. Any other image is never built or
 * pulled: create fails with the library's message saying how to get it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"

extern char **environ;

static int find_script(char *buf, size_t size)
{
	static const char *const rel[] = {"/../scripts/mkimage.sh", "/../../scripts/mkimage.sh"};
	const char *env = getenv("SANDBOXIO_MKIMAGE");
	char dir[PATH_MAX];

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		return 0;
	}
	if (cli_exe_dir(dir, sizeof(dir)) == 0)
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
			if ((size_t)snprintf(buf, size, "%s%s", dir, rel[i]) < size &&
			    access(buf, R_OK) == 0)
				return 0;
	snprintf(buf, size, "%s", SBX_LIBEXECDIR "/mkimage.sh");
	return access(buf, R_OK) == 0 ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Waits for the script; a signal to us is passed on to it once, and the
 * wait goes on so that nothing is left running. */
static int wait_child(pid_t pid, int *status)
{
	int forwarded = 0;

	for (;;) {
		if (waitpid(pid, status, 0) == pid)
			return 0;
		if (errno != EINTR)
			return -1;
		if (cli_signal_pending() && !forwarded) {
			kill(pid, SIGTERM);
			forwarded = 1;
		}
	}
}

/* The recipes of scripts/mkimage.sh: the first is the default. */
static const struct {
	const char *name, *ref;
} recipes[] = {{"python", CLI_DEFAULT_IMAGE}, {"e2b", CLI_E2B_IMAGE}};

static int
run_script(const struct cli_opts *o, const char *script, const char *recipe, const char *tar)
{
	posix_spawn_file_actions_t fa;
	int other = strcmp(recipe, recipes[0].name) != 0;
	char *argv_x[] = {(char *)script, (char *)(other ? "--recipe" : tar),
			  (char *)(other ? recipe : NULL), (char *)tar, NULL};
	char *argv_sh[] = {(char *)"sh",
			   (char *)script,
			   (char *)(other ? "--recipe" : tar),
			   (char *)(other ? recipe : NULL),
			   (char *)tar,
			   NULL};
	int direct = access(script, X_OK) == 0, status = 0, rc;
	pid_t pid;

	if (posix_spawn_file_actions_init(&fa) != 0) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	rc = posix_spawn(&pid, direct ? script : "/bin/sh", &fa, NULL, direct ? argv_x : argv_sh,
			 environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		cli_print_error(o, SBX_ERROR, "cannot start the image build script %s: %s", script,
				strerror(rc));
		return CLI_EXIT_FAIL;
	}
	if (wait_child(pid, &status) < 0) {
		cli_print_error(o, SBX_ERROR, "waiting for the image build script: %s",
				strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (cli_signal_pending())
		return cli_signal_exit();
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		cli_print_error(o, SBX_ERROR, "the image build script %s failed (exit %d)", script,
				WEXITSTATUS(status));
	else
		cli_print_error(o, SBX_ERROR, "the image build script %s was killed by signal %d",
				script, WTERMSIG(status));
	return CLI_EXIT_FAIL;
}

int cli_image_build(const struct cli_opts *o, sbx_backend *b, const char *recipe, const char *ref)
{
	char script[PATH_MAX], dir[PATH_MAX], tar[PATH_MAX + 16];
	const char *base = getenv("TMPDIR");
	int rc, imported = 0;

	if (find_script(script, sizeof(script)) < 0) {
		cli_print_error(o, SBX_ENOTFOUND,
				"the image build script is not installed (looked for %s); set "
				"SANDBOXIO_MKIMAGE to scripts/mkimage.sh of the source tree",
				script);
		return CLI_EXIT_FAIL;
	}
	if (!base || !*base)
		base = "/var/tmp";
	if ((size_t)snprintf(dir, sizeof(dir), "%s/sandboxio-image.XXXXXX", base) >= sizeof(dir) ||
	    !mkdtemp(dir)) {
		cli_print_error(o, SBX_ERROR, "cannot make a temporary directory under %s: %s",
				base, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	snprintf(tar, sizeof(tar), "%s/rootfs.tar", dir);
	cli_warn("building %s from Debian packages with the %s recipe (about a minute)...", ref,
		 recipe);
	rc = run_script(o, script, recipe, tar);
	if (rc == 0 && !cli_signal_pending()) {
		cli_warn("importing %s into the engine...", ref);
		if (sbx_backend_import_image(b, tar, ref) < 0) {
			cli_print_lib_error(o);
			rc = CLI_EXIT_FAIL;
		} else {
			imported = 1;
		}
	}
	remove_tree(dir);
	if (rc == CLI_EXIT_FAIL) /* already reported */
		return rc;
	if (cli_signal_pending()) {
		cli_print_error(o, SBX_ECANCELED, "interrupted by signal %d; %s",
				cli_signal_pending(),
				imported ? "the image was imported" : "no image was imported");
		return cli_signal_exit();
	}
	cli_warn("imported %s", ref);
	return 0;
}

int cli_ensure_image(const struct cli_opts *o, sbx_backend *b, const char *ref)
{
	int rc;

	/* Only the local engine builds images; a provider has its own. */
	if (strcmp(sbx_backend_name(b), "docker") != 0 || strcmp(ref, CLI_DEFAULT_IMAGE) != 0)
		return 0;
	rc = sbx_backend_image_exists(b, ref);
	if (rc < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	if (rc == 1)
		return 0;
	cli_warn("image %s is not present; building it first", ref);
	return cli_image_build(o, b, recipes[0].name, ref);
}

int cmd_image_build(const struct cli_opts *o)
{
	const char *recipe = o->recipe ? o->recipe : recipes[0].name, *ref = NULL;
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	int rc;

	for (size_t i = 0; !ref && i < sizeof(recipes) / sizeof(recipes[0]); i++)
		if (strcmp(recipe, recipes[i].name) == 0)
			ref = o->ref ? o->ref : recipes[i].ref;
	if (!ref) {
		cli_print_error(o, SBX_EINVALID,
				"image build: unknown recipe '%.64s' (python or e2b)", recipe);
		return CLI_EXIT_FAIL;
	}
	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "image build takes no arguments (got '%.64s')",
				o->args[0]);
		return CLI_EXIT_FAIL;
	}
	/* The reference is checked as a policy would check it, before any work. */
	if (sbx_policy_new(&p) < 0 || sbx_policy_set_image(p, ref) < 0) {
		cli_print_lib_error(o);
		sbx_policy_free(p);
		return CLI_EXIT_FAIL;
	}
	sbx_policy_free(p);
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers: %s",
				strerror(errno));
		return CLI_EXIT_FAIL;
	}
	rc = cli_backend_open(o, NULL, &b);
	if (rc)
		return rc;
	rc = cli_image_build(o, b, recipe, ref);
	sbx_backend_free(b);
	if (rc == 0 && o->json)
		cli_print_json(json_pack("{s:s, s:s}", "status", "imported", "image", ref));
	return rc;
}
