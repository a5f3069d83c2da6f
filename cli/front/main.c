/*
 * cli/front/main.c: the sandboxio command's front, the program users call.
 *
 * The command proper (cli/main.c, built as sandboxio-full) links the
 * library's engine and through it some forty shared libraries (curl and its
 * TLS stack, nftables, libnl, protobuf-c, microhttpd), whose loading and
 * constructors cost more than a whole exec through the local daemon. This
 * front links only libc and jansson. It serves one case itself, `exec`
 * through the daemon (docs/daemon.md), with the command's own code
 * (cli/options.c parses, cli/dclient.c routes and talks to the daemon,
 * cli/report.c prints and gives the exit status), and execs the command
 * proper, with argv, environment and signal mask unchanged, for everything
 * else: another command, --help, a parse error, a run the daemon does not
 * take (secrets, -i, -t, an engine-side choice, an argument the protocol
 * cannot carry), a daemon that does not answer. The command proper then
 * decides again and prints what it prints today: while the front decides,
 * it prints nothing (its errors are captured) and holds SIGINT, SIGTERM and
 * SIGHUP back, so a signal meanwhile reaches whichever program goes on.
 *
 * The command proper is sandboxio-full beside this executable (the build
 * tree), else ../libexec/sandboxio/sandboxio-full from this executable's
 * folder (an install under any prefix), else SBX_LIBEXECDIR's.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/dclient.h"

#define FULL_NAME "sandboxio-full"

static void __attribute__((noreturn)) run_full(char **argv, const sigset_t *mask)
{
	/* Beside us (the build tree), where an install under a prefix puts it
	 * relative to bin/, and where this build installs it. */
	static const char *const rel[] = {"/" FULL_NAME, "/../libexec/sandboxio/" FULL_NAME};
	char dir[PATH_MAX], path[PATH_MAX + 64];

	sigprocmask(SIG_SETMASK, mask, NULL);
	if (cli_exe_dir(dir, sizeof(dir)) == 0)
		for (size_t k = 0; k < sizeof(rel) / sizeof(rel[0]); k++)
			if ((size_t)snprintf(path, sizeof(path), "%s%s", dir, rel[k]) <
				    sizeof(path) &&
			    access(path, X_OK) == 0)
				execv(path, argv);
	snprintf(path, sizeof(path), "%s", SBX_LIBEXECDIR "/" FULL_NAME);
	execv(path, argv);
	fprintf(stderr, "sandboxio: cannot run %s: %s\n", path, strerror(errno));
	exit(CLI_EXIT_FAIL);
}

/* The exec through the daemon, once the route is known to be the daemon's. */
static int serve(struct cli_opts *o, int fd, json_t *req, const sigset_t *mask)
{
	int rc;

	/* As cli/main.c: a closed pipe on our stdout shows up as EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (cli_signals_install() < 0) {
		sigprocmask(SIG_SETMASK, mask, NULL);
		json_decref(req);
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		return CLI_EXIT_FAIL;
	}
	/* A signal held back meanwhile is recorded now, and cancels the run. */
	sigprocmask(SIG_SETMASK, mask, NULL);
	rc = cli_exec_daemon(o, fd, req);
	if (fflush(stdout) == EOF && rc == 0)
		rc = CLI_EXIT_FAIL;
	return rc;
}

int main(int argc, char **argv)
{
	struct cli_opts o = {0};
	struct cli_capture cap;
	sigset_t hold, mask;
	json_t *req = NULL;
	uint64_t tmo = 0;
	int i = 1, fd = -1, rc;

	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigprocmask(SIG_BLOCK, &hold, &mask);
	cli_capture_errors(&cap);
	/* As cli/main.c parses: global options, the command, its options, the
	 * id, the options after it, the program. */
	if (cli_parse_global(&o, argc, argv, &i) || o.version || o.help || i == argc ||
	    strcmp(argv[i], "exec") != 0)
		goto full;
	o.cmd_name = argv[i++];
	o.cmd = CMD_EXEC;
	if (cli_parse_command(&o, argc, argv, &i) || o.help || i == argc)
		goto full;
	o.id = argv[i++];
	if (cli_parse_command(&o, argc, argv, &i) || o.help)
		goto full;
	o.args = argv + i;
	o.nargs = argc - i;
	/* What cli/run.c's cmd_exec() sends to the daemon, and nothing else. */
	if (o.nargs < 1 || o.secret_n || o.interactive || o.tty || cli_run_timeout(&o, &tmo))
		goto full;
	req = cli_daemon_exec_request(&o, tmo);
	if (!req || cli_daemon_open(&o, &fd) || fd < 0 || cap.set)
		goto full;
	cli_capture_errors(NULL);
	rc = serve(&o, fd, req, &mask);
	close(fd);
	cli_opts_free(&o);
	return rc;
full:
	json_decref(req);
	if (fd >= 0)
		close(fd);
	cli_opts_free(&o);
	run_full(argv, &mask);
}
