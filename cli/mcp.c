/*
 * cli/mcp.c: `sandboxio mcp`, a Model Context Protocol server on stdio.
 *
 * The client starts this command and speaks JSON-RPC 2.0 to it, one message
 * per line on stdin, replies on stdout (nothing else is ever written there;
 * diagnostics go to stderr). cli/mcp-rpc.c parses and checks each message;
 * this file owns the session: one sandbox, created on the first tool call
 * under the policy of the command line merged with the operator config
 * (the same options and config as `create`, and `run`'s --secret, given to
 * every run and redacted from what comes back), and removed when stdin ends,
 * on SIGINT, SIGTERM or SIGHUP, and on any other way out of the loop. The
 * policy is fixed before the first message is read: the tools take no
 * argument that reaches it, and a run's timeout can only narrow the run
 * deadline (the library refuses a longer one).
 *
 * Signals: the handlers of cli/signals.c record the signal; the blocking
 * read of stdin returns EINTR and the loop ends; during a tool call the
 * watcher thread kills the sandbox so that the run returns at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/mcp.h"
#include "util/base64.h"
#include "util/json-text.h"

struct session {
	const struct cli_opts *o;
	sbx_config *cfg;
	sbx_policy *p;
	sbx_backend *b;
	sbx_sandbox *s;
	int broken; /* the sandbox was killed (a signal): no more runs */
};

/* A tool error naming the library's last error. */
static json_t *lib_error(const char *what)
{
	const sbx_error *e = sbx_error_last();
	char msg[1200];

	snprintf(msg, sizeof(msg), "%s: %s", what,
		 e->message[0] ? e->message : sbx_strerror(e->code ? e->code : SBX_ERROR));
	return json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text",
			 sbx__json_text(msg, strlen(msg), NULL), "isError", 1);
}

static int ensure_sandbox(struct session *ss, json_t **err)
{
	sbx_backend_options bo;
	char init[4096];

	if (ss->s)
		return 0;
	if (!ss->b) {
		if (cli_backend_options(ss->o, &bo, init, sizeof(init)) < 0) {
			*err = lib_error("backend");
			return -1;
		}
		bo.config = ss->cfg;
		if (sbx_backend_open(&ss->b, cli_backend_name(ss->o), &bo) < 0) {
			*err = lib_error("cannot reach the sandbox backend");
			return -1;
		}
	}
	if (sbx_sandbox_create(&ss->s, ss->b, ss->p) < 0) {
		*err = lib_error("cannot create the session's sandbox");
		return -1;
	}
	fprintf(stderr, "sandboxio mcp: sandbox %s created\n", sbx_sandbox_id(ss->s));
	return 0;
}

static json_t *run_result(const sbx_result *r)
{
	json_t *content = json_array(), *hit = json_array(), *res;
	char head[128];
	static const struct {
		unsigned bit;
		const char *name;
	} hits[] = {{SBX_HIT_MEMORY, "memory"},
		    {SBX_HIT_PIDS, "pids"},
		    {SBX_HIT_OUTPUT, "output"},
		    {SBX_HIT_TIMEOUT, "timeout"},
		    {SBX_HIT_DISK, "disk"}};

	for (size_t i = 0; i < sizeof(hits) / sizeof(hits[0]); i++)
		if (r->limits_hit & hits[i].bit)
			json_array_append_new(hit, json_string(hits[i].name));
	snprintf(head, sizeof(head), "status: %s, exit code %d", sbx_run_status_name(r->status),
		 r->exit_code);
	json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", head));
	if (r->stdout_len)
		json_array_append_new(content,
				      mcp_text_item("stdout:\n", r->stdout_data, r->stdout_len));
	if (r->stderr_len)
		json_array_append_new(content,
				      mcp_text_item("stderr:\n", r->stderr_data, r->stderr_len));
	res = json_pack("{s:o, s:b, s:{s:s, s:i, s:o, s:o, s:I, s:o}}", "content", content,
			"isError", !(r->status == SBX_RUN_EXITED && r->exit_code == 0),
			"structuredContent", "status", sbx_run_status_name(r->status), "exit_code",
			r->exit_code, "stdout", sbx__json_text(r->stdout_data, r->stdout_len, NULL),
			"stderr", sbx__json_text(r->stderr_data, r->stderr_len, NULL),
			"duration_ms", (json_int_t)r->duration_ms, "limits_hit", hit);
	return res;
}

static json_t *do_run(struct session *ss, const struct mcp_call *c)
{
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	static const char *const ls_argv[] = {"ls", "-la", "--", NULL, NULL};
	const char *argv[5];
	sbx_result *r = NULL;
	json_t *res;
	int rc;

	ro.timeout_ms = c->timeout_ms;
	ro.secrets = ss->o->secrets; /* --secret: every run's, redacted from what comes back */
	ro.raw_output = ss->o->no_redact;
	if (c->tool == MCP_RUN_CODE) {
		rc = sbx_sandbox_run_code(&r, ss->s, c->language, c->text, c->text_len, &ro);
	} else if (c->tool == MCP_LIST_FILES) {
		memcpy(argv, ls_argv, sizeof(argv));
		argv[3] = c->path;
		rc = sbx_sandbox_run(&r, ss->s, argv, &ro);
	} else {
		rc = sbx_sandbox_run(&r, ss->s, c->argv, &ro);
	}
	if (rc < 0)
		return lib_error("the run failed");
	res = run_result(r);
	sbx_result_free(r);
	return res;
}

/* The MIME type of an image by its first bytes (PNG, JPEG, GIF), or NULL. */
static const char *image_type(const unsigned char *d, size_t n)
{
	if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
		return "image/jpeg";
	if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
		return "image/gif";
	return NULL;
}

/* An image a run wrote comes back as MCP image content, anything else as text. */
static json_t *do_read(struct session *ss, const struct mcp_call *c)
{
	void *data = NULL;
	const char *mime;
	size_t len = 0;
	char *b64;
	json_t *res;

	if (sbx_sandbox_read_file(&data, &len, ss->s, c->path, 0) < 0)
		return lib_error(c->path);
	mime = image_type(data, len);
	if (!mime) {
		res = json_pack("{s:[o], s:b}", "content", mcp_text_item("", data, len), "isError",
				0);
		sbx_free(data);
		return res;
	}
	b64 = malloc(sbx__base64_encoded_len(len) + 1);
	res = NULL;
	if (b64) {
		sbx__base64_encode(b64, data, len);
		res = json_pack("{s:[{s:s, s:s, s:s}], s:b}", "content", "type", "image", "data",
				b64, "mimeType", mime, "isError", 0);
		free(b64);
	}
	sbx_free(data);
	return res;
}

static json_t *call_tool(struct session *ss, const struct mcp_call *c)
{
	char msg[128];

	switch (c->tool) {
	case MCP_RUN_CODE:
	case MCP_RUN_COMMAND:
	case MCP_LIST_FILES:
		return do_run(ss, c);
	case MCP_WRITE_FILE:
		if (sbx_sandbox_write_file(ss->s, c->path, c->text, c->text_len, c->mode) < 0)
			return lib_error(c->path);
		snprintf(msg, sizeof(msg), "wrote %zu bytes", c->text_len);
		return mcp_text_result(msg, 0);
	case MCP_READ_FILE:
		return do_read(ss, c);
	}
	return mcp_text_result("unknown tool", 1);
}

/* Every tool waits on the sandbox (files move through a run of sh or cat,
 * which a FIFO or a full pipe can hold until the run deadline), so a
 * signal kills the sandbox during any of them, not only during a run. */
static json_t *exec_call(void *ctx, const struct mcp_call *c)
{
	struct session *ss = ctx;
	json_t *err = NULL, *res;

	if (ss->broken)
		return mcp_text_result("the session's sandbox is gone", 1);
	if (ensure_sandbox(ss, &err) < 0)
		return err;
	if (cli_watch_start(ss->s) < 0)
		return mcp_text_result("cannot watch for signals", 1);
	res = call_tool(ss, c);
	cli_watch_stop();
	return res;
}

/* Reads one line of stdin into *buf (without the newline). Returns 1 with
 * a line, 0 at EOF, -1 on a signal or a read error, 2 for a line over
 * MCP_LINE_MAX (skipped to its end). */
static int read_line(char **buf, size_t *cap, size_t *len, char *in, size_t *in_len, size_t *in_off)
{
	int over = 0;

	*len = 0;
	for (;;) {
		char *nl;
		size_t n;
		ssize_t r;

		if (*in_off == *in_len) {
			r = read(0, in, 65536);
			if (r < 0 && errno == EINTR && !cli_signal_pending())
				continue;
			if (r < 0)
				return -1;
			if (r == 0)
				return *len || over ? (over ? 2 : 1) : 0;
			*in_len = (size_t)r;
			*in_off = 0;
		}
		nl = memchr(in + *in_off, '\n', *in_len - *in_off);
		n = nl ? (size_t)(nl - (in + *in_off)) : *in_len - *in_off;
		if (!over && *len + n > MCP_LINE_MAX)
			over = 1;
		if (!over) {
			if (*len + n + 1 > *cap) {
				size_t nc = (*len + n + 1) * 2;
				char *nb = realloc(*buf, nc);

				if (!nb)
					return -1;
				*buf = nb;
				*cap = nc;
			}
			memcpy(*buf + *len, in + *in_off, n);
			*len += n;
			(*buf)[*len] = '\0';
		}
		*in_off += n + (nl ? 1 : 0);
		if (nl)
			return over ? 2 : 1;
	}
}

static int write_reply(char *reply)
{
	size_t n = strlen(reply);
	int rc = cli_write_all(1, reply, n) < 0 || cli_write_all(1, "\n", 1) < 0 ? -1 : 0;

	free(reply);
	return rc;
}

static int serve(struct session *ss)
{
	struct mcp_state st = {.exec = exec_call, .ctx = ss};
	char *line = NULL, *reply, *in = malloc(65536);
	size_t cap = 0, len, in_len = 0, in_off = 0;
	int rc = 0, r;

	if (!in)
		return CLI_EXIT_FAIL;
	while (!cli_signal_pending()) {
		r = read_line(&line, &cap, &len, in, &in_len, &in_off);
		if (r == 0 || r < 0)
			break;
		if (r == 2)
			reply = mcp_too_long_reply();
		else if (len == 0 || (len == 1 && line[0] == '\r'))
			continue;
		else if (mcp_handle(&st, line, len, &reply) < 0)
			reply = NULL;
		if (reply && write_reply(reply) < 0) {
			if (cli_signal_pending())
				break; /* a signal ends the session, also mid-write */
			fprintf(stderr, "sandboxio mcp: cannot write to stdout: %s\n",
				strerror(errno));
			rc = CLI_EXIT_FAIL;
			break;
		}
		if (cli_signal_pending())
			ss->broken = 1;
	}
	free(line);
	free(in);
	return rc;
}

/* Without --lifetime, the session's sandbox lives at least as long as one
 * run may take (--timeout above the default lifetime raises it). */
static int lifetime_covers_runs(const struct cli_opts *o, sbx_policy *p, const sbx_policy *eff)
{
	uint64_t run = sbx_policy_timeout_ms(eff, SBX_TIMEOUT_RUN);
	uint64_t code = sbx_policy_timeout_ms(eff, SBX_TIMEOUT_RUN_CODE);
	uint64_t need = run > code ? run : code;

	if (need <= sbx_policy_timeout_ms(eff, SBX_TIMEOUT_SANDBOX))
		return 0;
	if (sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, need) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

int cmd_mcp(const struct cli_opts *o)
{
	struct session ss = {.o = o};
	sbx_policy *eff = NULL;
	int rc;

	if (o->json || o->nargs > 0) {
		struct cli_opts plain = *o;

		plain.json = 0; /* said on stderr only: stdout is the protocol's */
		cli_print_error(&plain, SBX_EINVALID,
				"mcp takes no %s (stdout carries the protocol)",
				o->json ? "--json" : "COMMAND");
		return CLI_EXIT_FAIL;
	}
	rc = cli_config_load(o, &ss.cfg);
	if (!rc)
		rc = cli_build_policy(o, ss.cfg, &ss.p, &eff);
	if (!rc && !o->lifetime)
		rc = lifetime_covers_runs(o, ss.p, eff);
	sbx_policy_free(eff);
	if (!rc && cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		rc = CLI_EXIT_FAIL;
	}
	if (!rc)
		rc = serve(&ss);
	if (ss.s) {
		const char *id = sbx_sandbox_id(ss.s);

		fprintf(stderr, "sandboxio mcp: removing sandbox %s\n", id);
		if (sbx_sandbox_close(ss.s) < 0) {
			cli_print_lib_error(o);
			rc = CLI_EXIT_FAIL;
		}
	}
	sbx_backend_free(ss.b);
	sbx_policy_free(ss.p);
	sbx_config_free(ss.cfg);
	if (!rc && cli_signal_pending())
		rc = 0; /* a signal is this command's normal end */
	return rc;
}
