/*
 * cli/main.c: the sandboxio command: dispatch, usage and version.
 *
 * `sandboxio [--json] [--socket PATH] [--hosts-file FILE] [--config PATH]
 * [--audit-log PATH] COMMAND [OPTIONS] ...`. Global options come before the
 * command; each command then parses its own options (cli/options.c), the
 * values of its secrets are read (cli/secret.c), and it does its work
 * (cli/run.c, cli/manage.c, cli/image.c, cli/doctor.c, cli/config.c). This
 * is the only place that exits: commands return the exit status. `serve`
 * (cli/serve.c) is dispatched before the command table and parses its own
 * options.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"

static const char usage_main[] =
	"usage: sandboxio [--json] [--backend NAME] [--socket PATH] [--hosts-file FILE]\n"
	"                 [--config PATH] [--audit-log PATH] COMMAND ...\n"
	"       sandboxio --version\n"
	"\n"
	"Runs untrusted code in sandboxes that are secure by default: no network,\n"
	"no capabilities, a read-only root, capped CPU, memory, processes, disk, open\n"
	"files and output, and a deadline on every run and on every sandbox.\n"
	"\n"
	"commands:\n"
	"  run [OPTIONS] [--] COMMAND [ARG...]   create a sandbox, run COMMAND, remove it\n"
	"  run-code [OPTIONS] --lang L FILE|-    the same for python or bash source code\n"
	"  create [OPTIONS]                      create a sandbox and print its id\n"
	"  exec [OPTIONS] ID [--] COMMAND [ARG...]  run COMMAND in a sandbox made by create\n"
	"  code [OPTIONS] ID [--] CODE|-         run a cell in a code context of a sandbox\n"
	"  cp [OPTIONS] SRC DEST                 copy files out of a sandbox or into it\n"
	"  rm ID [ID...]                         remove sandboxes\n"
	"  pause ID / resume ID                  freeze a sandbox of the daemon, thaw it\n"
	"  ls [--tenant T]                       list sandboxes\n"
	"  reap [--dry-run] [--tenant T]         remove sandboxes that nobody will close\n"
	"  image build [--recipe R] [--ref REF]  build the default (or e2b) image locally\n"
	"  doctor                                check that this host can run sandboxes\n"
	"  config --effective [OPTIONS]          print the operator config and what applies\n"
	"  serve --api e2b [OPTIONS]             serve an E2B-compatible API on this host\n"
	"  daemon [OPTIONS]                      serve create, exec, rm and ls on a socket\n"
	"  mcp [OPTIONS]                         serve the Model Context Protocol on stdio\n"
	"  version                               print the version\n"
	"  help [COMMAND]                        print this help, or a command's\n"
	"\n"
	"global options: --json (machine-readable output), --socket PATH (docker socket),\n"
	"  --hosts-file FILE (hosts(5) file that alone resolves --allow-host names),\n"
	"  --config PATH (a config that narrows the system config\n"
	"  /etc/sandboxio/config.json, else the built-in one; default $SANDBOXIO_CONFIG),\n"
	"  --audit-log PATH (append audit events, one JSON object per line, to PATH;\n"
	"  created 0600; an operation whose event cannot be written fails),\n"
	"  --daemon PATH (create, exec, rm and ls through the daemon at PATH; default\n"
	"  $SANDBOXIO_DAEMON, else " CLI_DAEMON_SOCKET " when a daemon answers there),\n"
	"  --no-daemon (talk to the engine directly; or SANDBOXIO_DAEMON=none),\n"
	"  --backend NAME (docker, the default; e2b or modal; default $SANDBOXIO_BACKEND;\n"
	"  e2b reads E2B_API_KEY, E2B_DOMAIN, E2B_API_URL, E2B_SANDBOX_URL; modal reads\n"
	"  MODAL_TOKEN_ID, MODAL_TOKEN_SECRET, MODAL_SERVER_URL, MODAL_ENVIRONMENT;\n"
	"  docs/backends.md maps every option per backend)\n"
	"environment: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT\n"
	"  turns on OpenTelemetry spans (OTLP/HTTP, JSON); TRACEPARENT (a W3C\n"
	"  traceparent) makes them join the caller's trace. The --json objects of\n"
	"  run, run-code, exec and create carry spans_dropped: the spans that could\n"
	"  not be exported by then (0 when tracing is off)\n"
	"exit status: the program's own; 124 timed out; 137 killed (out of memory\n"
	"included); 126/127 the program could not be started; 125 sandboxio or the\n"
	"engine failed; 128+N when sandboxio got signal N (the sandbox is removed).\n"
	"'sandboxio COMMAND --help' describes each command.\n";

/* The global options, which every command also takes after its name. */
static const char usage_common_opts[] =
	"  --json               print JSON on stdout instead of text\n"
	"  --socket PATH        docker socket (default $DOCKER_HOST, /var/run/docker.sock)\n"
	"  --backend NAME       docker (the default), e2b or modal (default\n"
	"                       $SANDBOXIO_BACKEND)\n"
	"  --hosts-file FILE    resolve --allow-host names from this hosts(5) file only\n"
	"                       (default $SANDBOXIO_HOSTS_FILE, else the host's resolver)\n"
	"  --config PATH        a config that may only narrow the system config\n"
	"                       /etc/sandboxio/config.json (default $SANDBOXIO_CONFIG)\n"
	"  --audit-log PATH     append audit events (JSON Lines) to PATH, created 0600\n"
	"  --daemon PATH        create, exec, rm and ls go through the daemon at PATH\n"
	"                       (default $SANDBOXIO_DAEMON, else " CLI_DAEMON_SOCKET "\n"
	"                       when a daemon answers there; 'sandboxio daemon --help')\n"
	"  --no-daemon          talk to the engine directly (or SANDBOXIO_DAEMON=none)\n";

static const char usage_sandbox_opts[] =
	"  --image REF          image (default " CLI_DEFAULT_IMAGE ")\n"
	"  --create-timeout S   deadline of the creation itself\n"
	"  --cpus N             CPU cores, decimal (0.5, 2); default 1\n"
	"  --memory SIZE        memory cap (512m, 1g); swap is the same; default 512m\n"
	"  --pids N             processes and threads; default 256\n"
	"  --disk SIZE          writable space; default 1g\n"
	"  --nofile N           open files per process; default 1024\n"
	"  --max-output SIZE    output kept per stream; default 16m\n"
	"  --env NAME=VALUE     environment of the runs (repeatable; not secret)\n"
	"  --tenant ID          tenant label of the sandbox; default 'default'\n"
	"  --workdir DIR        working directory of the runs; default /workspace (the\n"
	"                       writable places are /workspace and /tmp)\n"
	"  --tier T             least isolation: container, gvisor or microvm\n"
	"  --allow-host NAME[:PORT]\n"
	"                       allow egress to NAME: TCP and UDP to PORT, or every port\n"
	"                       and protocol without one (repeatable; see Network below)\n"
	"  --allow-cidr CIDR[:PORT]\n"
	"                       the same for an IPv4 or IPv6 prefix or one address\n"
	"                       (198.51.100.0/24:443, [2001:db8::1]:443, 2001:db8::/32)\n"
	"  --allow-preset NAME  allow the names a package registry needs: pypi, npm,\n"
	"                       crates, debian, github (repeatable; each name as\n"
	"                       --allow-host; the list: share/sandboxio/presets/)\n";

/* After the sandbox options, and the global ones. */
static const char usage_sandbox_notes[] =
	"Durations are seconds (300, 1.5, 90s, 5m, 2h); sizes take k, m, g, t.\n"
	"The defaults above are the built-in ones; an operator config may set others,\n"
	"and bounds every option: a value above its ceiling is refused (exit 125),\n"
	"never lowered ('sandboxio config --effective' shows what applies).\n"
	"\n"
	"Network: by default a sandbox has no network at all (only its own loopback).\n"
	"--allow-host and --allow-cidr open one destination each and nothing else.\n"
	"Names are resolved on the host when the sandbox is created and their\n"
	"addresses are pinned into its /etc/hosts; there is no resolver inside, so\n"
	"no other name resolves and addresses that change later are not followed.\n"
	"What stays open: anything the sandbox sends to an allowed host and port;\n"
	"an allowlist bounds where data goes, not what is sent. Allowlists need root\n"
	"(CAP_NET_ADMIN and CAP_SYS_ADMIN), IPv4 forwarding and nftables on the host;\n"
	"IPv6 entries also need IPv6 forwarding ('sandboxio doctor' checks). A bad\n"
	"entry exits 125 before anything is created.\n";

static const char usage_mcp[] =
	"usage: sandboxio mcp [OPTIONS]\n"
	"\n"
	"Serves the Model Context Protocol (revisions 2025-06-18, 2025-03-26 and\n"
	"2024-11-05) on stdin and stdout, for an MCP client that starts this command.\n"
	"Tools: run_code, run_command, write_file, read_file, list_files. A session\n"
	"has one sandbox, created on the first tool call under the policy of these\n"
	"options and the operator config, and removed when stdin ends or on SIGINT,\n"
	"SIGTERM or SIGHUP; no tool argument can change the policy. Diagnostics go\n"
	"to stderr. docs/mcp.md has the client configuration.\n"
	"\n"
	"options:\n"
	"  --timeout S          each run's deadline (a tool call may only narrow it);\n"
	"                       default 300 s\n"
	"  --lifetime S         the session sandbox's whole life; default 300 s, or the\n"
	"                       run deadline when that is longer\n"
	"Secrets (below) go to every run of the session, as for run; the client sees\n"
	"<redacted> where output or a file read holds one.\n";

static const char usage_run[] =
	"usage: sandboxio run [OPTIONS] [--] COMMAND [ARG...]\n"
	"\n"
	"Creates a sandbox, runs COMMAND in it (looked up in the sandbox's PATH), and\n"
	"removes the sandbox, also when sandboxio is interrupted. Output is shown as it\n"
	"arrives. Options stop at COMMAND or at --. If sandboxio is killed outright\n"
	"(SIGKILL), the sandbox ends at its lifetime, or earlier by 'sandboxio reap'.\n"
	"\n"
	"options:\n"
	"  --timeout S          the run's deadline; default 300 s\n"
	"  --lifetime S         the sandbox's whole life, enforced inside the sandbox even\n"
	"                       if sandboxio is killed; at least the run's deadline;\n"
	"                       default the run's deadline plus 30 s\n"
	"  --stdin FILE|-       feed the program's standard input from FILE or ours\n"
	"  --interactive, -i    stream our standard input to the program as it comes\n"
	"  --tty, -t            run the program under a terminal (see 'sandboxio exec\n"
	"                       --help'); with -i (-it) it gets our keys\n";

/* run, run-code and exec. */
static const char usage_secret_opts[] =
	"  --secret NAME        give the program the secret held in sandboxio's own\n"
	"                       environment variable NAME, as its variable NAME, for\n"
	"                       this run only (repeatable). The value is never taken\n"
	"                       from the command line: set it in the environment\n"
	"                       (NAME=VALUE sandboxio run --secret NAME ...); sandboxio\n"
	"                       wipes NAME from its environment once read. A value has\n"
	"                       4 to 16384 bytes of UTF-8\n"
	"  --secret-file NAME=PATH\n"
	"                       the same, the value read from the file PATH (one\n"
	"                       trailing newline removed)\n"
	"  --no-redact-output   show stdout and stderr as the program wrote them. By\n"
	"                       default every secret's value, and its base64 and\n"
	"                       percent-encoded forms, is replaced by <redacted> in\n"
	"                       them. With this flag a program that prints a secret\n"
	"                       shows it on the terminal, in --json output and in\n"
	"                       whatever keeps them (logs, CI output). Errors and\n"
	"                       audit events stay redacted. Redaction catches\n"
	"                       accidents, not a program bent on leaking a secret\n";

static const char usage_run_code[] =
	"usage: sandboxio run-code [OPTIONS] --lang python|bash FILE|-\n"
	"\n"
	"Creates a sandbox, runs the source code of FILE (- reads it from standard\n"
	"input) with python3 or bash, and removes the sandbox.\n"
	"\n"
	"options:\n"
	"  --lang L             python or bash (required)\n"
	"  --timeout S          the run's deadline; default 300 s\n"
	"  --lifetime S         the sandbox's whole life, enforced inside the sandbox even\n"
	"                       if sandboxio is killed; at least the run's deadline;\n"
	"                       default the run's deadline plus 30 s\n";

static const char usage_create[] =
	"usage: sandboxio create [OPTIONS]\n"
	"\n"
	"Creates a sandbox and prints its id ({\"sandbox_id\":...} with --json). The\n"
	"sandbox lives until 'sandboxio rm ID' or the end of its lifetime, whichever\n"
	"comes first; 'sandboxio reap' leaves it alone until then.\n"
	"\n"
	"options:\n"
	"  --timeout S          the default deadline of its runs, and its lifetime unless\n"
	"                       --lifetime is given; default 300 s\n"
	"  --lifetime S         the sandbox's whole life, enforced inside the sandbox; at\n"
	"                       least --timeout (which then defaults to at most it)\n";

static const char usage_exec[] =
	"usage: sandboxio exec [OPTIONS] ID [OPTIONS] [--] COMMAND [ARG...]\n"
	"\n"
	"Runs COMMAND in the sandbox ID (made by 'sandboxio create'), under the limits\n"
	"it was created with. Interrupting exec cancels the run, which removes the\n"
	"sandbox: a run cannot be stopped alone.\n"
	"\n"
	"options:\n"
	"  --timeout S          the run's deadline, at most the sandbox's run deadline\n"
	"  --env NAME=VALUE     extra environment for this run (repeatable)\n"
	"  --workdir DIR        working directory of this run\n"
	"  --stdin FILE|-       feed the program's standard input from FILE or ours\n"
	"  --interactive, -i    stream our standard input to the program as it comes,\n"
	"                       until its end of file\n"
	"  --tty, -t            run the program under a terminal in the sandbox, of our\n"
	"                       terminal's size (kept as ours changes); ours is in raw\n"
	"                       mode for the run, so ^C goes to the program. Its stdout\n"
	"                       and stderr both come as the terminal's output. Needs a\n"
	"                       terminal on our standard input; with -i (-it) it gets\n"
	"                       our keys\n";

static const char usage_rm[] = "usage: sandboxio rm [--json] [--socket PATH] ID [ID...]\n"
			       "\n"
			       "Kills and removes sandboxes. Only sandboxio's own sandboxes can "
			       "be removed.\n"
			       "An unknown ID is reported, the others are still removed, and the "
			       "exit status is 125.\n";

static const char usage_pause[] =
	"usage: sandboxio pause [--max DURATION] ID\n"
	"       sandboxio resume ID\n"
	"\n"
	"pause freezes every process of a sandbox where it is (its memory and files\n"
	"are kept, and its lifetime stops counting for at most --max, after which it\n"
	"is removed); resume thaws it with the lifetime it had left. --max defaults\n"
	"to the operator config's ceilings.pause (1 h), and one above it is refused.\n"
	"Only the handle that created a sandbox can, so these go through the daemon\n"
	"(sandboxio daemon) for a sandbox it created; any other is refused, and so\n"
	"is a sandbox with a run in flight.\n";

static const char usage_ls[] = "usage: sandboxio ls [--tenant T] [--json] [--socket PATH]\n"
			       "\n"
			       "Lists sandboxio's sandboxes, of one tenant or all: id, tenant, "
			       "image, state,\n"
			       "age and the time left before the deadline.\n";

static const char usage_reap[] =
	"usage: sandboxio reap [--dry-run] [--tenant T] [--json] [--socket PATH]\n"
	"\n"
	"Removes sandboxio's sandboxes that nobody will close: those whose owner process\n"
	"is gone (this host's, or made before its last boot) and those whose deadline\n"
	"passed. A sandbox made by 'create' has no owner and stays until its deadline.\n"
	"Prints one line per candidate:\n"
	"  OUTCOME  ID  TENANT  REASON  [DETAIL]\n"
	"OUTCOME is removed, would remove (--dry-run), skipped (labels that cannot be\n"
	"judged: left alone) or failed; REASON is owner-gone, deadline-passed,\n"
	"owner-rebooted or skipped. The count goes to stderr. --json prints an array of\n"
	"{id, tenant, reason, removed, detail}. Exit status 125 when the engine fails\n"
	"or a removal failed. The other commands reap this host's orphans as they start.\n"
	"\n"
	"options:\n"
	"  --dry-run            report the candidates, remove nothing\n"
	"  --tenant T           only this tenant's sandboxes\n";

static const char usage_image[] =
	"usage: sandboxio image build [--recipe python|e2b] [--ref REF] [--json]\n"
	"                             [--socket PATH]\n"
	"\n"
	"Builds a sandbox image from Debian packages (mmdebstrap, as root) and imports\n"
	"it into dockerd as REF; no registry is used. The build script is\n"
	"$SANDBOXIO_MKIMAGE, else scripts/mkimage.sh of the source tree next to an\n"
	"in-tree build, else the installed one.\n"
	"\n"
	"options:\n"
	"  --recipe python      the default image (default REF " CLI_DEFAULT_IMAGE ")\n"
	"  --recipe e2b         E2B's base template: user 'user', home /home/user, git,\n"
	"                       curl, sudo, nodejs (default REF " CLI_E2B_IMAGE "), for\n"
	"                       'serve --e2b-image'\n"
	"  --ref REF            the image's name\n";

static const char usage_config[] =
	"usage: sandboxio config --effective [OPTIONS]\n"
	"\n"
	"Prints, as JSON, the operator config merged with OPTIONS as a create would\n"
	"merge them: each effective value with its origin (\"builtin\", the system\n"
	"config file, the narrowing config file, or \"request\" for an option given\n"
	"here), the system config, the ceilings, and the permitted\n"
	"images, egress, backends, secrets, tenant rule and tier. Values of --env never\n"
	"appear. The bound is /etc/sandboxio/config.json, else the built-in config;\n"
	"--config PATH, else $SANDBOXIO_CONFIG, may only narrow it (a wider value is\n"
	"refused, naming both files). Each option sets its own\n"
	"value and nothing else: --timeout the runs' deadlines, --lifetime the\n"
	"sandbox's, --create-timeout the creation's. A value above a ceiling is refused\n"
	"(exit 125) as a create would refuse it. Nothing is created.\n"
	"\n"
	"options:\n"
	"  --effective          print what applies (required)\n"
	"  --timeout S          the runs' deadline\n"
	"  --lifetime S         the sandbox's whole life\n";

static const char usage_doctor[] =
	"usage: sandboxio doctor [--json] [--socket PATH]\n"
	"\n"
	"Checks that this host can run sandboxes, one line per check:\n"
	"  ok|warn|FAIL  NAME  DETAIL\n"
	"the daemon answers; the default image is present; a default sandbox can be\n"
	"created and runs 'true' (so the init binary works), and inside it\n"
	"NoNewPrivs is 1, CapEff is 0, Seccomp is 2, the uid is the sandbox's own\n"
	"(from 1500000000) and the only interface is lo; the cgroup controllers\n"
	"memory, pids and cpu are present; the kernel has seccomp; the prerequisites of egress "
	"allowlists (CAP_NET_ADMIN\n"
	"and CAP_SYS_ADMIN, IPv4 and IPv6 forwarding, 'nft list tables'); that the\n"
	"operator config loads (--config, else as 'sandboxio config' finds it); and the\n"
	"deny canary: inside the default sandbox, a UDP connect() to 198.51.100.7\n"
	"and to 2001:db8::7 fails with ENETUNREACH. A UDP connect sends no packet:\n"
	"doctor sends no traffic anywhere. A missing allowlist prerequisite is a\n"
	"warning: default sandboxes, which have no network, do not need it.\n"
	"Then the tiers beyond container, each proven by a short run: a sandbox at\n"
	"the gvisor tier must see gVisor's own kernel in /proc/version, not the\n"
	"host's (tier-gvisor); a tier this host does not offer (runsc not\n"
	"registered with dockerd; microvm on the docker backend) is a warning\n"
	"naming why: a create that asks for it is refused, never downgraded.\n"
	"The sandboxes are removed before doctor exits, also on SIGINT or SIGTERM; it\n"
	"does not reap other sandboxes. --json prints one object instead:\n"
	"  {\"ok\": BOOL, \"checks\": [{\"name\", \"status\": ok|warn|fail, \"detail\"}]}\n"
	"Exit status 0 when no check failed, else 1.\n";

void cli_usage(enum cli_cmd cmd, int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	switch (cmd) {
	case CMD_RUN:
		fputs(usage_run, f);
		fputs(usage_secret_opts, f);
		fputs(usage_sandbox_opts, f);
		fputs(usage_common_opts, f);
		fputs(usage_sandbox_notes, f);
		break;
	case CMD_RUN_CODE:
		fputs(usage_run_code, f);
		fputs(usage_secret_opts, f);
		fputs(usage_sandbox_opts, f);
		fputs(usage_common_opts, f);
		fputs(usage_sandbox_notes, f);
		break;
	case CMD_CREATE:
		fputs(usage_create, f);
		fputs(usage_sandbox_opts, f);
		fputs(usage_common_opts, f);
		fputs(usage_sandbox_notes, f);
		break;
	case CMD_CONFIG:
		fputs(usage_config, f);
		fputs(usage_sandbox_opts, f);
		fputs(usage_common_opts, f);
		fputs(usage_sandbox_notes, f);
		break;
	case CMD_EXEC:
		fputs(usage_exec, f);
		fputs(usage_secret_opts, f);
		fputs(usage_common_opts, f);
		break;
	case CMD_RM:
		fputs(usage_rm, f);
		break;
	case CMD_PAUSE:
	case CMD_RESUME:
		fputs(usage_pause, f);
		break;
	case CMD_LS:
		fputs(usage_ls, f);
		break;
	case CMD_REAP:
		fputs(usage_reap, f);
		fputs(usage_common_opts, f);
		break;
	case CMD_IMAGE_BUILD:
		fputs(usage_image, f);
		break;
	case CMD_DOCTOR:
		fputs(usage_doctor, f);
		break;
	case CMD_MCP:
		fputs(usage_mcp, f);
		fputs(usage_secret_opts, f);
		fputs(usage_sandbox_opts, f);
		fputs(usage_common_opts, f);
		break;
	case CMD_CP:
		cli_cp_usage(to_stderr);
		fputs(usage_common_opts, f);
		break;
	case CMD_NONE:
	case CMD_VERSION:
	case CMD_HELP:
		fputs(usage_main, f);
		break;
	}
	/* The commands without options of their own: the global ones. */
	if (cmd == CMD_RM || cmd == CMD_LS || cmd == CMD_IMAGE_BUILD || cmd == CMD_DOCTOR ||
	    cmd == CMD_PAUSE || cmd == CMD_RESUME) {
		fputs("\noptions:\n", f);
		fputs(usage_common_opts, f);
	}
	fflush(f);
}

static const struct {
	const char *name;
	enum cli_cmd cmd;
} commands[] = {
	{"run", CMD_RUN},	  {"run-code", CMD_RUN_CODE},
	{"create", CMD_CREATE},	  {"exec", CMD_EXEC},
	{"rm", CMD_RM},		  {"ls", CMD_LS},
	{"reap", CMD_REAP},	  {"image", CMD_IMAGE_BUILD},
	{"version", CMD_VERSION}, {"doctor", CMD_DOCTOR},
	{"config", CMD_CONFIG},	  {"mcp", CMD_MCP},
	{"cp", CMD_CP},		  {"help", CMD_HELP},
	{"pause", CMD_PAUSE},	  {"resume", CMD_RESUME},
};

static enum cli_cmd lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return commands[i].cmd;
	return CMD_NONE;
}

static int print_version(const struct cli_opts *o)
{
	if (o->json)
		return cli_print_json(json_pack("{s:s, s:s}", "version", SBX_VERSION_STRING,
						"library", sbx_version())) < 0
			       ? CLI_EXIT_FAIL
			       : 0;
	if (strcmp(sbx_version(), SBX_VERSION_STRING) == 0)
		printf("sandboxio %s\n", SBX_VERSION_STRING);
	else
		printf("sandboxio %s (libsandboxio %s)\n", SBX_VERSION_STRING, sbx_version());
	return fflush(stdout) == EOF ? CLI_EXIT_FAIL : 0;
}

/* `help`, `help COMMAND`. */
static int help(int argc, char **argv, int i)
{
	enum cli_cmd c = i < argc ? lookup(argv[i]) : CMD_NONE;

	if (i < argc && strcmp(argv[i], "serve") == 0) {
		cli_serve_usage(0);
		return 0;
	}
	if (i < argc && strcmp(argv[i], "code") == 0) {
		cli_code_usage(0);
		return 0;
	}
	if (i < argc && strcmp(argv[i], "daemon") == 0) {
		cli_daemon_usage(0);
		return 0;
	}

	if (i < argc && c == CMD_NONE) {
		fprintf(stderr, "sandboxio: unknown command '%s'\n", argv[i]);
		cli_usage(CMD_NONE, 1);
		return CLI_EXIT_FAIL;
	}
	cli_usage(c, 0);
	return 0;
}

static int dispatch(struct cli_opts *o, int argc, char **argv)
{
	int i = 1, rc;

	rc = cli_parse_global(o, argc, argv, &i);
	if (rc)
		return rc;
	if (o->version && i == argc)
		return print_version(o);
	if (i == argc) {
		if (o->help) {
			cli_usage(CMD_NONE, 0);
			return 0;
		}
		cli_print_error(o, SBX_EINVALID, "no command given (see 'sandboxio --help')");
		return CLI_EXIT_FAIL;
	}
	o->cmd_name = argv[i];
	/* serve parses its own options (cli/serve.c). */
	if (strcmp(argv[i], "serve") == 0)
		return cmd_serve(o, argc, argv, i + 1);
	if (strcmp(argv[i], "code") == 0)
		return cmd_code(o, argc, argv, i + 1);
	if (strcmp(argv[i], "daemon") == 0)
		return cmd_daemon(o, argc, argv, i + 1);
	o->cmd = lookup(argv[i]);
	if (o->cmd == CMD_NONE) {
		cli_print_error(o, SBX_EINVALID, "unknown command '%.64s' (see 'sandboxio --help')",
				argv[i]);
		return CLI_EXIT_FAIL;
	}
	i++;
	if (o->cmd == CMD_HELP)
		return help(argc, argv, i);
	if (o->cmd == CMD_IMAGE_BUILD) {
		o->cmd_name = "image build";
		if (i < argc && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
			cli_usage(CMD_IMAGE_BUILD, 0);
			return 0;
		}
		if (i == argc || strcmp(argv[i], "build") != 0) {
			cli_print_error(o, SBX_EINVALID,
					"image: unknown subcommand '%.64s' (only 'image build')",
					i < argc ? argv[i] : "");
			return CLI_EXIT_FAIL;
		}
		i++;
	}
	rc = cli_parse_command(o, argc, argv, &i);
	if (rc)
		return rc;
	/* exec ID [OPTIONS] [--] COMMAND: options may also follow the id. */
	if (o->cmd == CMD_EXEC && !o->help && i < argc) {
		o->id = argv[i++];
		rc = cli_parse_command(o, argc, argv, &i);
		if (rc)
			return rc;
	}
	o->args = argv + i;
	o->nargs = argc - i;
	if (o->help) {
		cli_usage(o->cmd, 0);
		return 0;
	}
	rc = cli_secrets_load(o);
	if (rc)
		return rc;
	switch (o->cmd) {
	case CMD_RUN:
		return cmd_run(o);
	case CMD_RUN_CODE:
		return cmd_run_code(o);
	case CMD_CREATE:
		return cmd_create(o);
	case CMD_EXEC:
		return cmd_exec(o);
	case CMD_RM:
		return cmd_rm(o);
	case CMD_PAUSE:
	case CMD_RESUME:
		return cmd_pause(o);
	case CMD_LS:
		return cmd_ls(o);
	case CMD_REAP:
		return cmd_reap(o);
	case CMD_IMAGE_BUILD:
		return cmd_image_build(o);
	case CMD_DOCTOR:
		return cmd_doctor(o);
	case CMD_CONFIG:
		return cmd_config(o);
	case CMD_MCP:
		return cmd_mcp(o);
	case CMD_CP:
		return cmd_cp(o);
	case CMD_VERSION:
		if (o->nargs > 0) {
			cli_print_error(o, SBX_EINVALID, "version takes no arguments");
			return CLI_EXIT_FAIL;
		}
		return print_version(o);
	case CMD_HELP:
	case CMD_NONE:
		break;
	}
	return CLI_EXIT_FAIL;
}

int main(int argc, char **argv)
{
	struct cli_opts o = {0};
	int rc;

	/* A closed pipe on our stdout shows up as EPIPE on write, not as death. */
	signal(SIGPIPE, SIG_IGN);
	rc = dispatch(&o, argc, argv);
	cli_opts_free(&o);
	if (fflush(stdout) == EOF && rc == 0)
		rc = CLI_EXIT_FAIL;
	return rc;
}
