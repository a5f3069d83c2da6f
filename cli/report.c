/*
 * cli/report.c: what the command prints of a run, and exec through the
 * daemon.
 *
 * Without --json the program's output is copied to our stdout and stderr as
 * it arrives (cli_on_output(), the streaming callback); with --json one
 * object describes the run. cli_report() then says what happened (a
 * truncation, a deadline, a kill) and returns the exit status: the
 * program's own, or 124 (timeout), 137 (killed, out of memory included),
 * 126/127 (could not be started), 125 (sandboxio or the engine failed),
 * 128+N (signal N to us). cli/run.c reports its runs with it, and so does
 * cli_exec_daemon(), from the daemon's answer. This file and those it uses
 * need none of the engine's libraries: the command's front (cli/front/)
 * links it.
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
#include "util/json-text.h"

int cli_on_output(int stream, const char *data, size_t len, void *payload)
{
	struct cli_stream *c = payload;
	int fd = stream == SBX_STREAM_STDERR ? 2 : 1;

	if (cli_signal_pending())
		return 1;
	if (c->json || len == 0)
		return 0;
	if (cli_write_all(fd, data, len) < 0) {
		if (cli_signal_pending())
			return 1;
		c->broken = 1;
		return 1;
	}
	c->shown[fd] += len;
	c->last[fd] = data[len - 1];
	return 0;
}

static int exit_status(const sbx_result *r)
{
	switch (r->status) {
	case SBX_RUN_EXITED:
		return r->exit_code & 0xff;
	case SBX_RUN_TIMEOUT:
		return CLI_EXIT_TIMEOUT;
	case SBX_RUN_OOM:
	case SBX_RUN_KILLED:
		return CLI_EXIT_KILLED;
	case SBX_RUN_ERROR:
		return r->exit_code == 126 || r->exit_code == 127 ? r->exit_code : 126;
	}
	return CLI_EXIT_FAIL;
}

/* The caps a run ran into, by name. */
static json_t *limits_hit(unsigned int hit)
{
	json_t *a = json_array();

	for (const struct sbx__limit_hit *h = sbx__limit_hits; a && h->bit; h++)
		if (hit & h->bit)
			json_array_append_new(a, json_string(h->name));
	return a;
}

static int print_result_json(const sbx_result *r, const struct cli_run_info *ri)
{
	int out_lossy = 0, err_lossy = 0;
	json_t *out = sbx__json_text(r->stdout_data, r->stdout_len, &out_lossy);
	json_t *err = sbx__json_text(r->stderr_data, r->stderr_len, &err_lossy);
	json_t *o;

	o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o, s:b, s:b, s:I, s:I, s:I, s:I, s:I, "
		      "s:I}",
		      "sandbox_id", ri->id, "backend", ri->backend, "tier",
		      ri->tier ? ri->tier : "unknown", "status", sbx_run_status_name(r->status),
		      "exit_code", r->exit_code, "signal", r->term_signal, "stdout", out, "stderr",
		      err, "stdout_truncated", r->stdout_truncated != 0, "stderr_truncated",
		      r->stderr_truncated != 0, "stdout_bytes", (json_int_t)r->stdout_total,
		      "stderr_bytes", (json_int_t)r->stderr_total, "duration_ms",
		      (json_int_t)r->duration_ms, "cpu_user_us", (json_int_t)r->cpu_user_us,
		      "cpu_system_us", (json_int_t)r->cpu_system_us, "max_rss_kb",
		      (json_int_t)r->max_rss_kb);
	if (!o)
		return -1;
	json_object_set_new(o, "limits_hit", limits_hit(r->limits_hit));
	json_object_set_new(o, "spans_dropped", json_integer((json_int_t)ri->spans_dropped));
	if (out_lossy)
		json_object_set_new(o, "stdout_encoding", json_string("lossy-utf8"));
	if (err_lossy)
		json_object_set_new(o, "stderr_encoding", json_string("lossy-utf8"));
	return cli_print_json(o);
}

static void print_truncation(const char *name, size_t kept, uint64_t total, int64_t cap)
{
	cli_warn("%s truncated: %zu of %llu bytes kept (output cap %lld bytes)", name, kept,
		 (unsigned long long)total, (long long)cap);
}

/* Says what happened and returns the exit status. */
int cli_report(const struct cli_opts *o,
	       const sbx_result *r,
	       const struct cli_run_info *ri,
	       const struct cli_stream *c)
{
	int code = exit_status(r);

	if (o->json) {
		if (print_result_json(r, ri) < 0)
			return CLI_EXIT_FAIL;
		return code;
	}
	/* Our messages, if any, start on a line of their own. */
	if ((r->stdout_truncated || r->stderr_truncated || r->status != SBX_RUN_EXITED ||
	     (r->limits_hit & SBX_HIT_PIDS)) &&
	    c->shown[2] && c->last[2] != '\n')
		cli_write_all(2, "\n", 1);
	if (r->stdout_truncated)
		print_truncation("stdout", r->stdout_len, r->stdout_total, ri->output_cap);
	if (r->stderr_truncated)
		print_truncation("stderr", r->stderr_len, r->stderr_total, ri->output_cap);
	if ((r->limits_hit & SBX_HIT_PIDS) && r->status != SBX_RUN_OOM)
		cli_warn("the process cap (--pids) refused a fork or a thread");
	switch (r->status) {
	case SBX_RUN_EXITED:
		break;
	case SBX_RUN_TIMEOUT:
		if (ri->timeout_ms)
			cli_warn("timed out: the run's deadline of %.3g s passed and its processes "
				 "were killed",
				 (double)ri->timeout_ms / 1000.0);
		else
			cli_warn("timed out after %.3g s: the run's processes were killed",
				 (double)r->duration_ms / 1000.0);
		break;
	case SBX_RUN_OOM:
		cli_warn("killed: out of memory (memory cap %lld bytes)",
			 (long long)ri->memory_cap);
		break;
	case SBX_RUN_KILLED:
		cli_warn("killed by signal %d", r->term_signal);
		break;
	case SBX_RUN_ERROR:
		if (r->stderr_total == 0)
			cli_warn("%s could not be started (exit %d)", ri->what, code);
		break;
	}
	return code;
}

int cli_interrupted(const struct cli_opts *o, const char *what)
{
	cli_print_error(o, SBX_ECANCELED, "interrupted by signal %d; %s", cli_signal_pending(),
			what);
	return cli_signal_exit();
}

/* exec through the daemon (cli/dclient.c): the same report from its answer. */
int cli_exec_daemon(const struct cli_opts *o, int fd, json_t *req)
{
	struct cli_stream ctx = {.json = o->json};
	struct cli_run_info ri = {0};
	struct cli_dexec_info info;
	json_t *reply = NULL;
	sbx_result r = {0};
	int in = -1, rc;

	if (o->stdin_path) {
		in = strcmp(o->stdin_path, "-") == 0 ? STDIN_FILENO
						     : open(o->stdin_path, O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			json_decref(req);
			cli_print_error(o, errno == ENOENT ? SBX_ENOTFOUND : SBX_EINVALID, "%s: %s",
					o->stdin_path, strerror(errno));
			return CLI_EXIT_FAIL;
		}
	}
	rc = cli_daemon_exec(o, fd, req, in, cli_on_output, &ctx, &r, &info, &reply);
	if (in > STDIN_FILENO)
		close(in);
	if (cli_signal_pending()) {
		rc = cli_interrupted(o, "the run was canceled, which removed its sandbox");
	} else if (ctx.broken) {
		rc = CLI_EXIT_PIPE;
	} else if (rc == 0) {
		ri.id = o->id;
		ri.spans_dropped = info.spans_dropped;
		ri.backend = info.backend;
		ri.tier = info.tier;
		ri.memory_cap = info.memory_cap;
		ri.output_cap = info.output_cap;
		ri.timeout_ms = info.timeout_ms;
		ri.what = o->args[0];
		rc = cli_report(o, &r, &ri, &ctx);
	} else if (rc < 0) {
		rc = CLI_EXIT_FAIL;
	}
	free(r.stdout_data);
	free(r.stderr_data);
	json_decref(reply);
	return rc;
}
