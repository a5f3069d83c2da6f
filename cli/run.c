/*
 * cli/run.c: run, run-code, exec and create.
 *
 * run and run-code are one-shot: create a sandbox, run, remove it. The
 * sandbox is removed on every path: a failed run, a broken stdout, and
 * SIGINT/SIGTERM/SIGHUP at any moment (cli/signals.c says how). Signals are
 * blocked while the sandbox is being created, so that a sandbox cannot come
 * into existence unseen; the record is checked right after.
 *
 * Without --json the program's output is copied to our stdout and stderr as
 * it arrives, from the streaming callback (cli/report.c, which prints the
 * report and gives the exit status), which only ever receives the bytes
 * within the sandbox's output cap (so the bytes shown are the bytes the
 * library kept); with --json one object describes the run. Both are redacted
 * by the library (every secret of --secret and --secret-file, and its
 * encoded forms, becomes "<redacted>") unless --no-redact-output is given.
 * The object's spans_dropped is sbx_backend_spans_dropped() once the
 * sandbox is closed: always present, 0 when tracing is off; spans dropped
 * later, when the backend is freed at exit, cannot be counted in it. The
 * exit status is the program's own, or 124 (timeout), 137 (killed, out of
 * memory included), 126/127 (could not be started), 125 (sandboxio or the
 * engine failed), 128+N (signal N to us).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/dclient.h"

/* Creates with the signals held back, then looks at what arrived meanwhile. */
static int
create_sandbox(const struct cli_opts *o, sbx_backend *b, const sbx_policy *p, sbx_sandbox **out)
{
	int rc;

	cli_signals_block();
	if (cli_signal_pending()) {
		cli_signals_unblock();
		return cli_interrupted(o, "no sandbox was created");
	}
	rc = sbx_sandbox_create(out, b, p);
	if (rc < 0)
		cli_print_lib_error(o);
	cli_signals_unblock();
	if (rc < 0)
		return CLI_EXIT_FAIL;
	if (cli_signal_pending()) {
		sbx_sandbox_close(*out);
		*out = NULL;
		return cli_interrupted(o, "the sandbox was removed");
	}
	return 0;
}

/* Reads --stdin (or run-code's FILE) unless a signal cuts the read short. */
static int read_input(const struct cli_opts *o, const char *path, char **out, size_t *len)
{
	if (cli_read_all(path, out, len) == 0)
		return 0;
	if (errno == EINTR && cli_signal_pending())
		return cli_interrupted(o, "no sandbox was created");
	cli_print_error(o, errno == ENOENT ? SBX_ENOTFOUND : SBX_EINVALID, "%s: %s",
			strcmp(path, "-") == 0 ? "standard input" : path, strerror(errno));
	return CLI_EXIT_FAIL;
}

struct oneshot {
	const char *const *argv; /* run */
	const char *lang;	 /* run-code */
	const char *code;
	size_t code_len;
	const char *stdin_data;
	size_t stdin_len;
	const char *what;
};

static int oneshot(const struct cli_opts *o, const struct oneshot *job)
{
	sbx_run_options ro;
	struct cli_stream ctx = {.json = o->json};
	struct cli_run_info ri = {.what = job->what};
	const sbx_policy *sp;
	sbx_config *cfg = NULL;
	sbx_policy *p = NULL, *eff = NULL;
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	char *id = NULL;
	int rc, lrc = 0;

	rc = cli_config_load(o, &cfg);
	if (!rc)
		rc = cli_build_policy(o, cfg, &p, &eff);
	if (rc)
		goto out;
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers: %s",
				strerror(errno));
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = cli_backend_open(o, cfg, &b);
	sbx_config_free(cfg); /* the backend holds its own reference */
	cfg = NULL;
	if (!rc)
		rc = cli_ensure_image(o, b, sbx_policy_image(eff));
	if (!rc)
		rc = create_sandbox(o, b, p, &s);
	if (rc)
		goto out;
	id = strdup(sbx_sandbox_id(s));
	if (!id) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	ri.id = id;
	ri.backend = sbx_backend_name(b);
	ri.tier = sbx_tier_name(sbx_sandbox_tier(s));
	sp = sbx_sandbox_policy(s); /* merged with the operator config */
	ri.memory_cap = sbx_policy_limit(sp, SBX_LIMIT_MEMORY);
	ri.output_cap = sbx_policy_limit(sp, SBX_LIMIT_OUTPUT);
	ri.timeout_ms =
		sbx_policy_timeout_ms(sp, job->lang ? SBX_TIMEOUT_RUN_CODE : SBX_TIMEOUT_RUN);
	sbx_run_options_init(&ro, SBX_RUN_OPTIONS_VERSION);
	ro.on_output = cli_on_output;
	ro.payload = &ctx;
	ro.stdin_data = job->stdin_data;
	ro.stdin_len = job->stdin_len;
	ro.secrets = o->secrets;
	ro.raw_output = o->no_redact;
	cli_tty_options(o, &ro);
	if (!cli_signal_pending()) {
		if (cli_watch_start(s) < 0)
			cli_warn("cannot watch for signals during the run: an interrupt will wait "
				 "for the program's next output");
		if (job->lang)
			lrc = sbx_sandbox_run_code(&r, s, job->lang, job->code, job->code_len, &ro);
		else if ((rc = cli_tty_begin(o, s)) == 0)
			lrc = sbx_sandbox_run(&r, s, job->argv, &ro);
		cli_tty_end();
		cli_watch_stop();
		if (lrc < 0 && !cli_signal_pending() && !ctx.broken) {
			cli_print_lib_error(o);
			rc = CLI_EXIT_FAIL;
		}
	}
	if (sbx_sandbox_close(s) < 0 && !cli_signal_pending())
		cli_warn("removing sandbox %.12s: %s (it ends at its deadline)", id,
			 sbx_error_last()->message);
	s = NULL;
	if (cli_signal_pending())
		rc = cli_interrupted(o, "the sandbox was removed");
	else if (ctx.broken)
		rc = CLI_EXIT_PIPE;
	else if (!rc) {
		ri.spans_dropped = sbx_backend_spans_dropped(b);
		rc = cli_report(o, r, &ri, &ctx);
	}
out:
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_backend_free(b);
	sbx_policy_free(eff);
	sbx_policy_free(p);
	sbx_config_free(cfg);
	free(id);
	return rc;
}

int cmd_run(const struct cli_opts *o)
{
	struct oneshot job = {0};
	char *in = NULL;
	int rc;

	if (o->nargs < 1) {
		cli_print_error(o, SBX_EINVALID,
				"run: no COMMAND given (see 'sandboxio run --help')");
		return CLI_EXIT_FAIL;
	}
	job.argv = (const char *const *)o->args;
	job.what = o->args[0];
	rc = cli_tty_check(o);
	if (rc)
		return rc;
	if (o->stdin_path) {
		if (cli_signals_install() < 0) {
			cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
			return CLI_EXIT_FAIL;
		}
		rc = read_input(o, o->stdin_path, &in, &job.stdin_len);
		if (rc)
			return rc;
		job.stdin_data = in;
	}
	rc = oneshot(o, &job);
	free(in);
	return rc;
}

int cmd_run_code(const struct cli_opts *o)
{
	struct oneshot job = {0};
	char *code = NULL;
	int rc;

	if (!o->lang) {
		cli_print_error(o, SBX_EINVALID, "run-code: --lang python|bash is required");
		return CLI_EXIT_FAIL;
	}
	if (strcmp(o->lang, "python") != 0 && strcmp(o->lang, "bash") != 0) {
		cli_print_error(o, SBX_EUNSUPPORTED,
				"run-code: language '%.32s' is not supported (python, bash)",
				o->lang);
		return CLI_EXIT_FAIL;
	}
	if (o->nargs != 1) {
		cli_print_error(o, SBX_EINVALID,
				"run-code: give exactly one FILE, or - for standard input");
		return CLI_EXIT_FAIL;
	}
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		return CLI_EXIT_FAIL;
	}
	rc = read_input(o, o->args[0], &code, &job.code_len);
	if (rc)
		return rc;
	job.lang = o->lang;
	job.code = code;
	job.what = o->lang;
	rc = oneshot(o, &job);
	free(code);
	return rc;
}

int cmd_exec(const struct cli_opts *o)
{
	sbx_run_options ro;
	struct cli_stream ctx = {.json = o->json};
	struct cli_run_info ri = {0};
	const sbx_policy *pol;
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	uint64_t tmo = 0;
	char *in = NULL;
	size_t in_len = 0;
	json_t *req;
	int rc, lrc;

	if (!o->id || o->nargs < 1) {
		cli_print_error(
			o, SBX_EINVALID,
			"exec: give a sandbox ID and a COMMAND (see 'sandboxio exec --help')");
		return CLI_EXIT_FAIL;
	}
	rc = cli_run_timeout(o, &tmo);
	if (!rc)
		rc = cli_tty_check(o);
	if (rc)
		return rc;
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		return CLI_EXIT_FAIL;
	}
	/* Secrets never leave this process, and the daemon carries no terminal
	 * or streamed stdin (-i, -t): those runs go direct. */
	if (!o->secrets && !o->interactive && !o->tty && (req = cli_daemon_exec_request(o, tmo))) {
		int dfd;

		rc = cli_daemon_open(o, &dfd);
		if (!rc && dfd >= 0) {
			rc = cli_exec_daemon(o, dfd, req);
			close(dfd);
			return rc;
		}
		json_decref(req);
		if (rc)
			return rc;
	}
	if (o->stdin_path) {
		rc = read_input(o, o->stdin_path, &in, &in_len);
		if (rc)
			return rc;
	}
	rc = cli_backend_open(o, NULL, &b);
	if (rc)
		goto out;
	if (sbx_sandbox_open(&s, b, o->id) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	pol = sbx_sandbox_policy(s);
	ri.id = o->id;
	ri.backend = sbx_backend_name(b);
	ri.tier = sbx_tier_name(sbx_sandbox_tier(s));
	ri.memory_cap = sbx_policy_limit(pol, SBX_LIMIT_MEMORY);
	ri.output_cap = sbx_policy_limit(pol, SBX_LIMIT_OUTPUT);
	ri.timeout_ms = tmo ? tmo : sbx_policy_timeout_ms(pol, SBX_TIMEOUT_RUN);
	ri.what = o->args[0];
	sbx_run_options_init(&ro, SBX_RUN_OPTIONS_VERSION);
	ro.on_output = cli_on_output;
	ro.payload = &ctx;
	ro.stdin_data = in;
	ro.stdin_len = in_len;
	ro.timeout_ms = tmo;
	ro.env = o->env;
	ro.workdir = o->workdir;
	ro.secrets = o->secrets;
	ro.raw_output = o->no_redact;
	cli_tty_options(o, &ro);
	if (cli_signal_pending()) {
		rc = cli_interrupted(o, "nothing was run");
		goto out;
	}
	if (cli_watch_start(s) < 0)
		cli_warn("cannot watch for signals during the run: an interrupt will wait for the "
			 "program's next output");
	rc = cli_tty_begin(o, s);
	lrc = rc ? 0 : sbx_sandbox_run(&r, s, (const char *const *)o->args, &ro);
	cli_tty_end();
	cli_watch_stop();
	if (rc)
		goto out;
	if (cli_signal_pending()) {
		/* The run cannot be stopped alone: its sandbox was killed, so remove it. */
		sbx_sandbox_close(s);
		s = NULL;
		rc = cli_interrupted(o, "the run was canceled, which removed its sandbox");
	} else if (ctx.broken)
		rc = CLI_EXIT_PIPE;
	else if (lrc < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	} else {
		ri.spans_dropped = sbx_backend_spans_dropped(b);
		rc = cli_report(o, r, &ri, &ctx);
	}
out:
	sbx_result_free(r);
	sbx_sandbox_detach(s);
	sbx_backend_free(b);
	free(in);
	return rc;
}

/* create through the daemon: signals held back as a direct create holds
 * them, and a sandbox nobody learns of removed. */
static int create_daemon(const struct cli_opts *o, int fd, json_t *req)
{
	struct cli_dcreate_info ci;
	json_t *reply = NULL;
	char err[1024];
	int rc, code;

	if (cli_signals_install() < 0) {
		json_decref(req);
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		return CLI_EXIT_FAIL;
	}
	cli_signals_block();
	rc = cli_daemon_create(o, fd, req, &reply);
	if (!rc && cli_dreply_create(reply, &ci, err, sizeof(err)) < 0) {
		cli_print_error(o, SBX_EENGINE, "%s", err);
		rc = CLI_EXIT_FAIL;
	}
	cli_signals_unblock();
	if (rc) {
		json_decref(reply);
		return rc;
	}
	cli_signals_block();
	if (cli_signal_pending()) {
		cli_daemon_kill(ci.id, &code, err, sizeof(err));
		json_decref(reply);
		return cli_interrupted(o, "the sandbox was removed");
	}
	if (o->json)
		rc = cli_print_json(json_pack("{s:s, s:s, s:s, s:s, s:I}", "sandbox_id", ci.id,
					      "backend", ci.backend, "tier", ci.tier, "tenant",
					      ci.tenant, "spans_dropped",
					      (json_int_t)ci.spans_dropped));
	else
		rc = printf("%s\n", ci.id) < 0 || fflush(stdout) == EOF ? -1 : 0;
	if (rc < 0) {
		/* Nobody learnt the id: the sandbox would only wait for its deadline. */
		cli_daemon_kill(ci.id, &code, err, sizeof(err));
		rc = CLI_EXIT_FAIL;
	}
	json_decref(reply);
	return rc;
}

int cmd_create(const struct cli_opts *o)
{
	sbx_config *cfg = NULL;
	sbx_policy *p = NULL, *eff = NULL;
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	json_t *req;
	int rc;

	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "create takes no COMMAND (got '%.64s'); use exec",
				o->args[0]);
		return CLI_EXIT_FAIL;
	}
	req = cli_daemon_create_request(o);
	if (req) {
		int dfd;

		rc = cli_daemon_open(o, &dfd);
		if (!rc && dfd >= 0) {
			rc = create_daemon(o, dfd, req);
			close(dfd);
			return rc;
		}
		json_decref(req);
		if (rc)
			return rc;
	}
	rc = cli_config_load(o, &cfg);
	if (!rc)
		rc = cli_build_policy(o, cfg, &p, &eff);
	if (rc)
		goto out;
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = cli_backend_open(o, cfg, &b);
	sbx_config_free(cfg); /* the backend holds its own reference */
	cfg = NULL;
	if (!rc)
		rc = cli_ensure_image(o, b, sbx_policy_image(eff));
	if (!rc)
		rc = create_sandbox(o, b, p, &s);
	if (rc)
		goto out;
	/* A signal until now undoes the creation; from here on it is held back
	 * (and dropped at exit): the id is printed and the sandbox kept. */
	cli_signals_block();
	if (cli_signal_pending()) {
		sbx_sandbox_close(s);
		s = NULL;
		rc = cli_interrupted(o, "the sandbox was removed");
		goto out;
	}
	if (o->json) {
		rc = cli_print_json(json_pack(
			"{s:s, s:s, s:s, s:s, s:I}", "sandbox_id", sbx_sandbox_id(s), "backend",
			sbx_backend_name(b), "tier", sbx_tier_name(sbx_sandbox_tier(s)), "tenant",
			sbx_policy_tenant(sbx_sandbox_policy(s)), "spans_dropped",
			(json_int_t)sbx_backend_spans_dropped(b)));
	} else {
		rc = printf("%s\n", sbx_sandbox_id(s)) < 0 || fflush(stdout) == EOF ? -1 : 0;
	}
	if (rc < 0) {
		/* Nobody learnt the id: the sandbox would only wait for its deadline. */
		sbx_sandbox_close(s);
		s = NULL;
		rc = CLI_EXIT_FAIL;
	}
	sbx_sandbox_detach(s);
	s = NULL;
out:
	sbx_backend_free(b);
	sbx_policy_free(eff);
	sbx_policy_free(p);
	sbx_config_free(cfg);
	return rc;
}
