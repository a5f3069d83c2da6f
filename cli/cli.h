/*
 * cli/cli.h: what the files of the sandboxio command share.
 *
 * The command is the only code of the project that prints or exits, so every
 * function here returns a process exit status (0 on success) after it has
 * reported any failure itself; callers only pass that status on. The CLI
 * uses the public API (include/sandboxio.h) and never the library's
 * internals, save its util/ helpers, which are shared (util/base64.h).
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <sandboxio.h>

#include "core/limit-kinds.h"

/* Exit statuses of our own, next to the program's exit code. */
#define CLI_EXIT_TIMEOUT 124
#define CLI_EXIT_FAIL 125
#define CLI_EXIT_KILLED 137

#define CLI_DEFAULT_IMAGE "sandboxio/python:3.11"
/* The image of the e2b recipe (`image build --recipe e2b`, `serve --e2b-image`). */
#define CLI_E2B_IMAGE "sandboxio/e2b-base:2"
#define CLI_DAEMON_SOCKET "/run/sandboxio/sandboxio.sock"
#define CLI_BACKEND "docker" /* the default; --backend or $SANDBOXIO_BACKEND name another */

enum cli_cmd {
	CMD_NONE = 0,
	CMD_RUN,
	CMD_RUN_CODE,
	CMD_CREATE,
	CMD_EXEC,
	CMD_RM,
	CMD_LS,
	CMD_REAP,
	CMD_IMAGE_BUILD,
	CMD_VERSION,
	CMD_DOCTOR,
	CMD_CONFIG,
	CMD_MCP,
	CMD_CP,
	CMD_PAUSE,
	CMD_RESUME,
	CMD_HELP
};

/* One --allow-host NAME[:PORT] or --allow-cidr CIDR[:PORT], as given. */
struct cli_allow {
	int cidr;   /* --allow-cidr */
	int preset; /* --allow-preset */
	const char *spec;
};

/* One --secret NAME or --secret-file NAME=PATH, as given. */
struct cli_secret {
	int file;
	const char *spec;
};

/* The command line as given: option values are kept as text and converted
 * (through the library's parsers and setters) only once parsing is done. */
struct cli_opts {
	enum cli_cmd cmd;
	const char *cmd_name; /* as shown in messages: "run", "image build" */
	int json;
	int help;
	int version;
	int dry_run;
	int effective;	    /* config --effective */
	const char *config; /* --config PATH; NULL: the library's search */
	const char *socket;
	const char *hosts_file;
	const char *backend;   /* --backend NAME; NULL: $SANDBOXIO_BACKEND, else docker */
	const char *audit_log; /* --audit-log PATH */
	const char *daemon;    /* --daemon PATH; NULL: $SANDBOXIO_DAEMON, else the default */
	int no_daemon;	       /* --no-daemon */
	int no_redact;	       /* --no-redact-output */
	const char *image;
	const char *timeout;
	const char *create_timeout;
	const char *lifetime;
	const char *pause_max;		 /* pause --max */
	const char *limit[SBX__LIMIT_N]; /* --cpus, --memory...: by sbx_limit_kind */
	const char *tenant;
	const char *workdir;
	const char *tier;
	const char *stdin_path;
	int interactive; /* -i: stream stdin as it comes */
	int tty;	 /* -t: a terminal in the sandbox, ours in raw mode */
	const char *lang;
	const char *ref;
	const char *recipe; /* image build: python (default) or e2b */
	const char **env;   /* NAME=VALUE, env_n of them, NULL-terminated */
	size_t env_n;
	struct cli_allow *allow; /* in the order given, allow_n of them */
	size_t allow_n;
	struct cli_secret *secret; /* in the order given, secret_n of them */
	size_t secret_n;
	/* The values of secret, read by cli_secrets_load() and freed by
	 * cli_opts_free(); NULL when no secret is given. */
	sbx_secrets *secrets;
	const char *id; /* exec: the sandbox id */
	char **args;	/* what follows the options */
	int nargs;
};

/* options.c */
int cli_parse_global(struct cli_opts *o, int argc, char **argv, int *i);
int cli_parse_command(struct cli_opts *o, int argc, char **argv, int *i);
void cli_opts_free(struct cli_opts *o);
int cli_run_timeout(const struct cli_opts *o, uint64_t *ms);
const char *cli_backend_name(const struct cli_opts *o);

/* policy.c */
int cli_build_policy(const struct cli_opts *o,
		     const sbx_config *cfg,
		     sbx_policy **out,
		     sbx_policy **effective);

/* secret.c */
int cli_secrets_load(struct cli_opts *o);

/* output.c */
void cli_print_lib_error(const struct cli_opts *o);
void cli_print_error(const struct cli_opts *o, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_print_json(void *json); /* takes a json_t *, prints it on stdout and frees it */
/* While c is set (on this thread), the first error reported is kept in it
 * instead of printed; NULL prints again. */
struct cli_capture {
	int set, code;
	char msg[1024];
};
void cli_capture_errors(struct cli_capture *c);

/* report.c: the report of a run (the daemon's exec included). */
#define CLI_EXIT_PIPE 141 /* our stdout went away: as a shell reports SIGPIPE */
struct cli_stream {
	int json;
	uint64_t shown[3]; /* by stream number */
	char last[3];	   /* the last byte shown, by stream number */
	int broken;	   /* writing our stdout or stderr failed: the run was canceled */
};

/* What the report needs to know besides the result. */
struct cli_run_info {
	const char *id;
	uint64_t spans_dropped; /* sbx_backend_spans_dropped() when reported */
	const char *backend;
	const char *tier; /* its name, or NULL */
	int64_t memory_cap;
	int64_t output_cap;
	uint64_t timeout_ms;
	const char *what; /* the program, for messages */
};
/* The streaming callback (sbx_output_cb); payload a struct cli_stream. */
int cli_on_output(int stream, const char *data, size_t len, void *payload);
int cli_report(const struct cli_opts *o,
	       const sbx_result *r,
	       const struct cli_run_info *ri,
	       const struct cli_stream *c);
/* Reports the signal that cut the command short; returns 128+N. */
int cli_interrupted(const struct cli_opts *o, const char *what);

/* tty.c: -i and -t of exec and run. check refuses what cannot be done (before any
 * sandbox is touched); options fills the run's; begin puts our terminal in
 * raw mode and passes window sizes on to s until end, which restores it. */
int cli_tty_check(const struct cli_opts *o);
void cli_tty_options(const struct cli_opts *o, sbx_run_options *ro);
int cli_tty_begin(const struct cli_opts *o, sbx_sandbox *s);
void cli_tty_end(void);

/* io.c */
int cli_write_all(int fd, const void *data, size_t len);
int cli_read_all(const char *path, char **out, size_t *len_out);
int cli_exe_dir(char *buf, size_t size);

/* signals.c */
int cli_signals_install(void);
int cli_signal_pending(void);
/* The read end of the signals' self-pipe (cli/watch.c), or -1 before install. */
int cli_signal_fd(void);
int cli_signal_exit(void);
void cli_signals_block(void);
void cli_signals_unblock(void);

/* watch.c */
int cli_watch_start(sbx_sandbox *s);
void cli_watch_stop(void);

/* backend.c */
int cli_backend_options(const struct cli_opts *o, sbx_backend_options *bo, char *init, size_t size);
int cli_backend_open(const struct cli_opts *o, const sbx_config *cfg, sbx_backend **out);
const char *cli_socket_path(const struct cli_opts *o);

/* image.c */
int cli_image_build(const struct cli_opts *o, sbx_backend *b, const char *recipe, const char *ref);
int cli_ensure_image(const struct cli_opts *o, sbx_backend *b, const char *ref);
int cmd_image_build(const struct cli_opts *o);

/* run.c */
int cmd_run(const struct cli_opts *o);
int cmd_run_code(const struct cli_opts *o);
int cmd_exec(const struct cli_opts *o);
int cmd_create(const struct cli_opts *o);

/* manage.c */
int cmd_rm(const struct cli_opts *o);
int cmd_ls(const struct cli_opts *o);
int cmd_reap(const struct cli_opts *o);
/* pause.c */
int cmd_pause(const struct cli_opts *o);

/* config.c */
int cli_config_load(const struct cli_opts *o, sbx_config **out);
int cmd_config(const struct cli_opts *o);

/* doctor.c */
int cmd_doctor(const struct cli_opts *o);

/* mcp.c: `sandboxio mcp`, the Model Context Protocol server (cli/mcp.h) */
int cmd_mcp(const struct cli_opts *o);

/* main.c */
void cli_usage(enum cli_cmd cmd, int to_stderr);

/* serve.c: `sandboxio serve`, dispatched by main.c before the command table
 * (it parses its own options); argv[i] is the first word after "serve". */
int cmd_serve(struct cli_opts *o, int argc, char **argv, int i);
void cli_serve_usage(int to_stderr);

/* code.c: `sandboxio code`, dispatched as serve is (its own options). */
int cmd_code(struct cli_opts *o, int argc, char **argv, int i);

/* cp.c */
/*
 * cp-unpack.c: the tar stream of a copy out, read from fd to its end, into
 * the current directory: the stream's one top name becomes local, or
 * local/(path's last name) when local is a directory. Returns 0, or -1 with
 * fail (fsize bytes) saying why; fd is read to its end either way.
 */
int cli_cp_unpack(int fd, const char *path, const char *local, char *fail, size_t fsize);
int cmd_cp(const struct cli_opts *o);
void cli_cp_usage(int to_stderr);
void cli_code_usage(int to_stderr);
/* daemon.c: `sandboxio daemon`, dispatched as serve is. */
int cmd_daemon(struct cli_opts *o, int argc, char **argv, int i);
void cli_daemon_usage(int to_stderr);

#endif
