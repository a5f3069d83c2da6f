/*
 * cli/code.c: `sandboxio code`, cells in a named code context of a live
 * sandbox (sandboxio/interp.h).
 *
 * A context outlives this process: its driver keeps running inside the
 * sandbox (to the sandbox's deadline) and listens on a unix socket there;
 * each `sandboxio code` opens the sandbox by id, finds the context by name
 * (creating it on first use) and runs one cell, which reaches the context
 * through that socket. No creator process has to stay. Dispatched by
 * main.c before the command table, so it parses its own options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "util/base64.h"

static const char usage[] =
	"usage: sandboxio code [OPTIONS] ID [--] CODE|-\n"
	"       sandboxio code [OPTIONS] ID --list\n"
	"       sandboxio code [OPTIONS] ID --close\n"
	"\n"
	"Runs CODE (or standard input, with -) as one cell in the code context NAME of\n"
	"the sandbox ID (made by 'sandboxio create'). Variables, imports and the\n"
	"working directory persist from one cell to the next, as in a notebook; python\n"
	"prints the value of the cell's last expression. The context is created on\n"
	"first use and keeps running inside the sandbox, listening on a unix socket\n"
	"there (no network), until --close or the sandbox's end; each invocation\n"
	"reaches it again by name. Output streams as the cell runs. A cell past its\n"
	"deadline is interrupted (KeyboardInterrupt) and the context lives; one that\n"
	"does not stop within the grace has its context restarted, and its state is\n"
	"lost. Display items (figures, tables) are listed on stderr, and given whole\n"
	"(PNG in base64) by --json.\n"
	"\n"
	"options:\n"
	"  --context NAME       the context (1 to 64 of A-Z a-z 0-9 _ -); default\n"
	"                       'default'\n"
	"  --lang L             python (the default) or bash, when the context is created\n"
	"  --workdir DIR        its working directory, when it is created\n"
	"  --timeout S          the cell's deadline; default the sandbox's run_code one\n"
	"  --list               list the sandbox's live contexts\n"
	"  --close              end the context\n"
	"  --json               print JSON on stdout instead of text\n"
	"  --socket PATH        docker socket (default $DOCKER_HOST, /var/run/docker.sock)\n"
	"  --config PATH        a config that may only narrow the system config\n"
	"  --audit-log PATH     append audit events (JSON Lines) to PATH, created 0600\n"
	"exit status: 0 the cell ran; 1 it failed (an exception, a non-zero status);\n"
	"124 its deadline passed; 130 it was interrupted; 137 its context was\n"
	"restarted; 125 sandboxio or the engine failed.\n";

void cli_code_usage(int to_stderr)
{
	fputs(usage, to_stderr ? stderr : stdout);
}

struct code_opts {
	const char *context, *lang, *workdir;
	int list, close;
	const char *code;
};

/* Options may come before and after the id; "--" or a non-option ends them. */
static int parse(struct cli_opts *o, struct code_opts *c, int argc, char **argv, int i)
{
	static const struct {
		const char *name;
		int arg;
	} known[] = {{"context", 1}, {"lang", 1},  {"workdir", 1},  {"timeout", 1},
		     {"list", 0},    {"close", 0}, {"json", 0},	    {"socket", 1},
		     {"config", 1},  {"help", 0},  {"audit-log", 1}};

	for (; i < argc; i++) {
		const char *a = argv[i], *eq, *val = NULL;
		size_t n, k;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			if (!o->id && strcmp(a, "-") != 0) {
				o->id = a;
				continue;
			}
			break;
		}
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (strlen(known[k].name) == n && strncmp(a + 2, known[k].name, n) == 0)
				break;
		if (k == sizeof(known) / sizeof(known[0])) {
			cli_print_error(o, SBX_EINVALID,
					"unknown option %.*s (see 'sandboxio code --help')",
					(int)(n + 2 > 64 ? 64 : n + 2), a);
			return CLI_EXIT_FAIL;
		}
		if (!known[k].arg && eq) {
			cli_print_error(o, SBX_EINVALID, "option --%s takes no value",
					known[k].name);
			return CLI_EXIT_FAIL;
		}
		if (known[k].arg) {
			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val) {
				cli_print_error(o, SBX_EINVALID, "option --%s needs a value",
						known[k].name);
				return CLI_EXIT_FAIL;
			}
		}
		switch (k) {
		case 0:
			c->context = val;
			break;
		case 1:
			c->lang = val;
			break;
		case 2:
			c->workdir = val;
			break;
		case 3:
			o->timeout = val;
			break;
		case 4:
			c->list = 1;
			break;
		case 5:
			c->close = 1;
			break;
		case 6:
			o->json = 1;
			break;
		case 7:
			o->socket = val;
			break;
		case 8:
			o->config = val;
			break;
		case 9:
			o->help = 1;
			break;
		default:
			o->audit_log = val;
			break;
		}
	}
	if (o->help)
		return 0;
	if (!o->id && i < argc && strcmp(argv[i], "-") != 0)
		o->id = argv[i++];
	if (i < argc)
		c->code = argv[i++];
	if (!o->id || (!c->list && !c->close && !c->code) || i < argc) {
		cli_print_error(
			o, SBX_EINVALID,
			"code: give a sandbox ID and one CODE argument, or --list or --close "
			"(see 'sandboxio code --help')");
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static int on_out(int stream, const char *data, size_t len, void *payload)
{
	(void)payload;
	fwrite(data, 1, len, stream == SBX_STREAM_STDERR ? stderr : stdout);
	fflush(stream == SBX_STREAM_STDERR ? stderr : stdout);
	return 0;
}

static int list_cb(const char *name, const char *lang, void *payload)
{
	if (payload)
		json_array_append_new(payload,
				      json_pack("{s:s, s:s}", "name", name, "language", lang));
	else
		printf("%s\t%s\n", name, lang);
	return 0;
}

static json_t *result_json(const sbx_context *ctx, const sbx_code_result *r)
{
	json_t *items = json_array(), *j;

	for (size_t i = 0; items && i < r->n_items; i++) {
		const sbx_display_item *it = &r->items[i];
		json_t *data;

		if (strcmp(it->mime, "image/png") == 0) {
			size_t n = sbx__base64_encoded_len(it->len);
			char *b = malloc(n + 1);
			data = b ? json_stringn(b, sbx__base64_encode(b, it->data, it->len)) : NULL;
			free(b);
		} else {
			data = json_stringn((const char *)it->data, it->len);
		}
		json_array_append_new(items, json_pack("{s:s, s:o*, s:b}", "mime", it->mime, "data",
						       data, "result", it->is_result));
	}
	j = json_pack("{s:s, s:s, s:i, s:s%, s:s%, s:s?, s:o*, s:b, s:i, s:I}", "context",
		      sbx_context_name(ctx), "status", sbx_code_status_name(r->status),
		      "execution_count", (int)r->execution_count, "stdout", r->stdout_data,
		      r->stdout_len, "stderr", r->stderr_data, r->stderr_len, "text", r->text,
		      "items", items, "truncated", r->truncated, "malformed", (int)r->malformed,
		      "duration_ms", (json_int_t)r->duration_ms);
	if (j && r->error_name)
		json_object_set_new(j, "error",
				    json_pack("{s:s, s:s?, s:s?}", "name", r->error_name, "value",
					      r->error_value, "traceback", r->error_traceback));
	return j;
}

static int status_exit(sbx_code_status st)
{
	switch (st) {
	case SBX_CODE_OK:
		return 0;
	case SBX_CODE_ERROR:
		return 1;
	case SBX_CODE_TIMEOUT:
		return CLI_EXIT_TIMEOUT;
	case SBX_CODE_INTERRUPTED:
		return 130;
	case SBX_CODE_RESTARTED:
		return CLI_EXIT_KILLED;
	}
	return CLI_EXIT_FAIL;
}

static int run_cell(const struct cli_opts *o, sbx_context *ctx, const char *code, size_t len)
{
	sbx_code_options co = SBX_CODE_OPTIONS_INIT;
	sbx_code_result *r = NULL;
	uint64_t tmo = 0;
	int rc = cli_run_timeout(o, &tmo);

	if (rc)
		return rc;
	co.timeout_ms = tmo;
	if (!o->json)
		co.on_output = on_out;
	if (sbx_context_run(&r, ctx, code, len, &co) < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	if (o->json) {
		rc = cli_print_json(result_json(ctx, r)) < 0 ? CLI_EXIT_FAIL : 0;
	} else {
		if (r->text)
			printf("%s\n", r->text);
		for (size_t i = 0; i < r->n_items; i++)
			if (!r->items[i].is_result)
				fprintf(stderr, "[display %s, %zu bytes]\n", r->items[i].mime,
					r->items[i].len);
		if (r->error_name)
			fprintf(stderr, "%s",
				r->error_traceback && *r->error_traceback ? r->error_traceback
									  : r->error_name);
		if (r->error_name && (!r->error_traceback || !*r->error_traceback))
			fprintf(stderr, ": %s\n", r->error_value ? r->error_value : "");
		if (r->status == SBX_CODE_TIMEOUT || r->status == SBX_CODE_RESTARTED)
			fprintf(stderr, "sandboxio: the cell %s\n",
				r->status == SBX_CODE_TIMEOUT
					? "passed its deadline and was interrupted"
					: "did not stop: its context was restarted, its state is "
					  "lost");
	}
	if (rc == 0)
		rc = status_exit(r->status);
	sbx_code_result_free(r);
	return rc;
}

int cmd_code(struct cli_opts *o, int argc, char **argv, int i)
{
	struct code_opts c = {.context = "default"};
	sbx_context_options cro = SBX_CONTEXT_OPTIONS_INIT;
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	sbx_context *ctx = NULL;
	json_t *arr = NULL;
	char *in = NULL;
	size_t in_len = 0;
	int rc = parse(o, &c, argc, argv, i);

	if (rc)
		return rc;
	if (o->help) {
		cli_code_usage(0);
		return 0;
	}
	if (c.code && strcmp(c.code, "-") == 0 && cli_read_all("-", &in, &in_len) < 0) {
		cli_print_error(o, SBX_EINVALID, "standard input: %s", strerror(errno));
		return CLI_EXIT_FAIL;
	}
	rc = cli_backend_open(o, NULL, &b);
	if (rc)
		goto out;
	if (sbx_sandbox_open(&s, b, o->id) < 0) {
		rc = (cli_print_lib_error(o), CLI_EXIT_FAIL);
		goto out;
	}
	if (c.list) {
		arr = o->json ? json_array() : NULL;
		if (sbx_context_list(s, list_cb, arr) < 0)
			rc = (cli_print_lib_error(o), CLI_EXIT_FAIL);
		else if (arr)
			rc = cli_print_json(json_pack("{s:o}", "contexts", arr)) < 0 ? CLI_EXIT_FAIL
										     : 0;
		arr = NULL;
		goto out;
	}
	if (sbx_context_open(&ctx, s, c.context) < 0) {
		if (sbx_error_last()->code != SBX_ENOTFOUND || c.close) {
			rc = (cli_print_lib_error(o), CLI_EXIT_FAIL);
			goto out;
		}
		cro.name = c.context;
		cro.language = c.lang;
		cro.cwd = c.workdir;
		if (sbx_context_create(&ctx, s, &cro) < 0) {
			rc = (cli_print_lib_error(o), CLI_EXIT_FAIL);
			goto out;
		}
	} else if (c.lang && strcmp(c.lang, sbx_context_language(ctx)) != 0) {
		cli_print_error(o, SBX_EINVALID, "context %s is %s, not %s", c.context,
				sbx_context_language(ctx), c.lang);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (c.close) {
		rc = sbx_context_close(ctx) < 0 ? (cli_print_lib_error(o), CLI_EXIT_FAIL) : 0;
		ctx = NULL;
		goto out;
	}
	rc = in ? run_cell(o, ctx, in, in_len) : run_cell(o, ctx, c.code, strlen(c.code));
out:
	sbx_context_free(ctx);
	/* The sandbox and its contexts live on. */
	sbx_sandbox_detach(s);
	sbx_backend_free(b);
	json_decref(arr);
	free(in);
	return rc;
}
