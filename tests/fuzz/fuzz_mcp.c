/*
 * tests/fuzz/fuzz_mcp.c: libFuzzer target for the JSON-RPC layer of
 * `sandboxio mcp` (cli/mcp-rpc.c): the input is a session, one message per
 * line, fed to mcp_handle() in order with the state kept between lines (so
 * that a session that initialized reaches tools/list and the argument
 * checks of tools/call). The executor is this target's own: it checks the
 * call it is given and runs nothing.
 *
 * Invariants besides the sanitizers': every reply is one JSON object on
 * one line with "jsonrpc": "2.0" and either a result or an error with a
 * message; a notification (no id) is never answered; a checked call has
 * an absolute path where the tool takes one, a NULL-terminated argv for
 * run_command, python or bash for run_code, and a mode within 0777. The
 * code or content of a call comes back through mcp_text_item(), as a run's
 * output does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *check_exec(void *ctx, const struct mcp_call *c)
{
	(void)ctx;
	switch (c->tool) {
	case MCP_RUN_CODE:
		if (!c->text ||
		    (strcmp(c->language, "python") != 0 && strcmp(c->language, "bash") != 0))
			abort();
		break;
	case MCP_RUN_COMMAND:
		if (!c->argv || !c->argv[0])
			abort();
		for (size_t i = 0; c->argv[i]; i++)
			if (i > MCP_ARGV_MAX)
				abort();
		break;
	case MCP_WRITE_FILE:
		if (c->mode > 0777 || !c->text)
			abort();
		/* fall through */
	case MCP_READ_FILE:
	case MCP_LIST_FILES:
		if (!c->path || c->path[0] != '/')
			abort();
		break;
	}
	/* The text comes back as a run's output would (bytes of any kind, NULs
	 * and ill-formed UTF-8 included after base64), so that the framing
	 * invariant below covers the text items of the sandbox's bytes. */
	if (c->text)
		return json_pack("{s:[o], s:b}", "content",
				 mcp_text_item("stdout:\n", c->text, c->text_len), "isError", 0);
	return mcp_text_result("checked", 0);
}

static void check_reply(const char *line, size_t len, const char *reply)
{
	json_t *in = json_loadb(line, len, JSON_DECODE_ANY, NULL), *r;

	if (!reply) {
		/* no reply: a notification, or a response of the client */
		if (!json_is_object(in) ||
		    (json_object_get(in, "id") && !json_is_null(json_object_get(in, "id")) &&
		     json_object_get(in, "method") &&
		     json_is_string(json_object_get(in, "jsonrpc")) &&
		     json_is_string(json_object_get(in, "method")) &&
		     !strcmp(json_string_value(json_object_get(in, "jsonrpc")), "2.0")))
			abort();
		json_decref(in);
		return;
	}
	if (strchr(reply, '\n'))
		abort();
	r = json_loads(reply, JSON_ALLOW_NUL, NULL); /* a sandbox's output may hold NULs */
	if (!json_is_object(r) ||
	    strcmp(json_string_value(json_object_get(r, "jsonrpc")) ?: "", "2.0") != 0)
		abort();
	if (!json_object_get(r, "result") == !json_object_get(r, "error"))
		abort();
	if (json_object_get(r, "error") &&
	    !json_is_string(json_object_get(json_object_get(r, "error"), "message")))
		abort();
	json_decref(r);
	json_decref(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_state st = {.exec = check_exec};
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *reply = NULL;

		if (len > 0 && mcp_handle(&st, p, len, &reply) == 0)
			check_reply(p, len, reply);
		free(reply);
		p += len + 1;
	}
	return 0;
}
