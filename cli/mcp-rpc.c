/*
 * cli/mcp-rpc.c: the JSON-RPC 2.0 layer of `sandboxio mcp`, a parser of a
 * client's bytes (the MCP client is whatever the operator plugged in, and
 * the model behind it writes the tool arguments).
 *
 * jansson parses each line (duplicate keys and strings holding NUL
 * refused, depth bounded by jansson); this file checks the message's shape as JSON-RPC 2.0 and the
 * MCP lifecycle, and each tool call's arguments against the tool's schema
 * by hand: the schemas are small and fixed, and a general JSON Schema
 * validator is not among Debian's C libraries. What it refuses and why:
 *  - a line that is not JSON, or that holds more than MCP_VALUES_MAX
 *    values (counted before parsing: see too_many_values()): -32700, id null;
 *  - a batch (an array): -32600; revision 2025-06-18 removed batches and
 *    this server answers each message alone in every revision;
 *  - "jsonrpc" other than "2.0", an id that is not a string or an
 *    integer, a method that is not a string, params that are not an
 *    object: -32600 (params: -32602);
 *  - any request but initialize and ping before initialize, and a second
 *    initialize: -32600;
 *  - an unknown method: -32601; an unknown tool, a missing or mistyped
 *    argument, an argument the tool does not have (additionalProperties is
 *    false: no argument can ask for network, capabilities, an image or
 *    anything else of the policy), a string with a NUL, a path that is
 *    not absolute: -32602, naming the argument.
 * Notifications (no id) get no reply whatever they hold; responses from
 * the client (this server sends no requests) are dropped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "cli/mcp.h"
#include "util/base64.h"
#include "util/json-text.h"

const char *const mcp_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05", NULL};

/* ----- replies ----- */

static char *dump(json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

	json_decref(msg);
	return s;
}

static char *error_reply(json_t *id, int code, const char *message)
{
	return dump(json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
			      "code", code, "message", message));
}

static char *result_reply(json_t *id, json_t *result)
{
	return dump(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

char *mcp_too_long_reply(void)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "Parse error: a message is at most %u bytes", MCP_LINE_MAX);
	return error_reply(NULL, MCP_PARSE_ERROR, msg);
}

json_t *mcp_text_result(const char *text, int is_error)
{
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text,
			 "isError", is_error);
}

json_t *mcp_text_item(const char *label, const char *data, size_t len)
{
	json_t *t = sbx__json_text(data, len, NULL), *item = NULL;
	size_t ll = strlen(label), tl;
	char *s;

	/* By length, not as a C string: the text may hold NULs. */
	if (!t)
		return NULL;
	tl = json_string_length(t);
	s = malloc(ll + tl + 1);
	if (s) {
		memcpy(s, label, ll);
		memcpy(s + ll, json_string_value(t), tl);
		s[ll + tl] = '\0';
		item = json_pack("{s:s, s:o}", "type", "text", "text", json_stringn(s, ll + tl));
		free(s);
	}
	json_decref(t);
	return item;
}

void mcp_call_done(struct mcp_call *c)
{
	free((void *)c->argv);
	c->argv = NULL;
	free(c->owned);
	c->owned = NULL;
}

/* ----- the tools and their schemas ----- */

static json_t *prop(const char *type, const char *desc)
{
	return json_pack("{s:s, s:s}", "type", type, "description", desc);
}

static json_t *tool(const char *name,
		    const char *title,
		    const char *desc,
		    json_t *props,
		    const char *req1,
		    const char *req2)
{
	json_t *req = req1 ? json_pack("[s]", req1) : NULL;
	json_t *schema = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
				   "additionalProperties", 0);

	/* "required" is left out when empty: JSON Schema draft 4 wants it non-empty. */
	if (req2)
		json_array_append_new(req, json_string(req2));
	if (req && schema)
		json_object_set_new(schema, "required", req);
	else
		json_decref(req);
	return json_pack("{s:s, s:s, s:s, s:o}", "name", name, "title", title, "description", desc,
			 "inputSchema", schema);
}

#define TIMEOUT_DESC                                                                               \
	"Seconds before the run is killed; at most the server's run deadline (a longer one is "    \
	"refused). Default: that deadline."

static json_t *tools_list(void)
{
	json_t *lang = json_pack("{s:s, s:[s,s], s:s, s:s}", "type", "string", "enum", "python",
				 "bash", "default", "python", "description",
				 "The language of code: python (python3) or bash.");
	json_t *argv = json_pack("{s:s, s:{s:s}, s:i, s:s}", "type", "array", "items", "type",
				 "string", "minItems", 1, "description",
				 "The program and its arguments, run without a shell (argv[0] "
				 "is looked up in PATH). Give argv or command, not both.");
	json_t *enc = json_pack("{s:s, s:[s,s], s:s, s:s}", "type", "string", "enum", "utf-8",
				"base64", "default", "utf-8", "description",
				"How content is written: utf-8 text, or base64 of bytes.");
	json_t *mode = json_pack("{s:s, s:i, s:i, s:s}", "type", "integer", "minimum", 0, "maximum",
				 511, "description",
				 "Permission bits, as a number (420 is 0644). Default 420.");

	return json_pack(
		"{s:[o,o,o,o,o]}", "tools",
		tool("run_code", "Run code",
		     "Runs Python or bash code in this session's sandbox (no network unless the "
		     "operator allowed some; files persist for the session under /workspace) and "
		     "returns its stdout, stderr and exit status.",
		     json_pack("{s:o, s:o, s:o}", "code", prop("string", "The source code to run."),
			       "language", lang, "timeout", prop("number", TIMEOUT_DESC)),
		     "code", NULL),
		tool("run_command", "Run a command",
		     "Runs a command in this session's sandbox, as an argument vector (argv) or a "
		     "shell line (command, run with sh -c), and returns its stdout, stderr and "
		     "exit "
		     "status.",
		     json_pack(
			     "{s:o, s:o, s:o}", "argv", argv, "command",
			     prop("string",
				  "A shell line, run with sh -c. Give argv or command, not both."),
			     "timeout", prop("number", TIMEOUT_DESC)),
		     NULL, NULL),
		tool("write_file", "Write a file",
		     "Creates or replaces a file in the sandbox. The path must be absolute and "
		     "writable by the sandbox user: under /workspace or /tmp.",
		     json_pack("{s:o, s:o, s:o, s:o}", "path",
			       prop("string", "Absolute path, under /workspace or /tmp."),
			       "content", prop("string", "The file's content."), "encoding", enc,
			       "mode", mode),
		     "path", "content"),
		tool("read_file", "Read a file",
		     "Reads a file from the sandbox: a PNG, JPEG or GIF image comes back as an "
		     "image, anything else as text (bytes that are not UTF-8 are replaced).",
		     json_pack("{s:o}", "path", prop("string", "Absolute path of the file.")),
		     "path", NULL),
		tool("list_files", "List files",
		     "Lists a directory of the sandbox (ls -la). Default: /workspace.",
		     json_pack("{s:o}", "path",
			       prop("string", "Absolute path of a directory. Default /workspace.")),
		     NULL, NULL));
}

/* ----- checking a call's arguments ----- */

struct check {
	char msg[256];
};

static int bad(struct check *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct check *ck, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ck->msg, sizeof(ck->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* A string argument: no NUL, at most max bytes. */
static int get_str(struct check *ck,
		   json_t *args,
		   const char *tool,
		   const char *key,
		   size_t max,
		   int required,
		   const char **out,
		   size_t *len)
{
	json_t *v = json_object_get(args, key);

	*out = NULL;
	if (!v)
		return required ? bad(ck, "Invalid params: %s needs the argument '%s'", tool, key)
				: 0;
	if (!json_is_string(v))
		return bad(ck, "Invalid params: %s: '%s' must be a string", tool, key);
	if (json_string_length(v) > max)
		return bad(ck, "Invalid params: %s: '%s' is too long", tool, key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(ck, "Invalid params: %s: '%s' holds a NUL character", tool, key);
	*out = json_string_value(v);
	if (len)
		*len = json_string_length(v);
	return 0;
}

static int
get_path(struct check *ck, json_t *args, const char *tool, int required, const char **out)
{
	if (get_str(ck, args, tool, "path", MCP_PATH_MAX, required, out, NULL) < 0)
		return -1;
	if (*out && (*out)[0] != '/')
		return bad(ck, "Invalid params: %s: 'path' must be absolute (start with '/')",
			   tool);
	return 0;
}

static int get_timeout(struct check *ck, json_t *args, const char *tool, uint64_t *ms)
{
	json_t *v = json_object_get(args, "timeout");
	double s;

	*ms = 0;
	if (!v)
		return 0;
	if (!json_is_number(v))
		return bad(ck, "Invalid params: %s: 'timeout' must be a number of seconds", tool);
	s = json_number_value(v);
	if (!(s > 0) || s > (double)SBX_MAX_TIMEOUT_MS / 1000.0)
		return bad(ck, "Invalid params: %s: 'timeout' must be above 0 and at most 86400",
			   tool);
	*ms = (uint64_t)(s * 1000.0);
	if (*ms == 0)
		*ms = 1;
	return 0;
}

/* Every key of args must be one of the tool's (NULL-terminated list). */
static int only_keys(struct check *ck, json_t *args, const char *tool, const char *const *keys)
{
	const char *k;
	json_t *v;

	json_object_foreach(args, k, v)
	{
		size_t i;

		(void)v;
		for (i = 0; keys[i]; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (!keys[i])
			return bad(ck, "Invalid params: %s has no argument '%.64s'", tool, k);
	}
	return 0;
}

static int check_run_code(struct check *ck, json_t *args, struct mcp_call *c)
{
	static const char *const keys[] = {"code", "language", "timeout", NULL};

	if (only_keys(ck, args, "run_code", keys) < 0 ||
	    get_str(ck, args, "run_code", "code", MCP_TEXT_MAX, 1, &c->text, &c->text_len) < 0 ||
	    get_str(ck, args, "run_code", "language", 16, 0, &c->language, NULL) < 0 ||
	    get_timeout(ck, args, "run_code", &c->timeout_ms) < 0)
		return -1;
	if (!c->language)
		c->language = "python";
	if (strcmp(c->language, "python") != 0 && strcmp(c->language, "bash") != 0)
		return bad(ck, "Invalid params: run_code: 'language' must be python or bash");
	return 0;
}

static int check_run_command(struct check *ck, json_t *args, struct mcp_call *c)
{
	static const char *const keys[] = {"argv", "command", "timeout", NULL};
	json_t *argv = json_object_get(args, "argv");
	const char *line = NULL;
	size_t i, n, total = 0;

	if (only_keys(ck, args, "run_command", keys) < 0 ||
	    get_str(ck, args, "run_command", "command", MCP_TEXT_MAX, 0, &line, NULL) < 0 ||
	    get_timeout(ck, args, "run_command", &c->timeout_ms) < 0)
		return -1;
	if (!argv == !line)
		return bad(ck,
			   "Invalid params: run_command needs 'argv' or 'command' (one of them)");
	n = argv ? json_array_size(argv) : 3;
	if (argv && (!json_is_array(argv) || n == 0 || n > MCP_ARGV_MAX))
		return bad(ck, "Invalid params: run_command: 'argv' must be a non-empty array of "
			       "strings");
	c->argv = calloc(n + 1, sizeof(*c->argv));
	if (!c->argv)
		return bad(ck, "Internal error: out of memory");
	if (line) {
		c->argv[0] = "sh";
		c->argv[1] = "-c";
		c->argv[2] = line;
		return 0;
	}
	for (i = 0; i < n; i++) {
		json_t *a = json_array_get(argv, i);

		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
			return bad(ck, "Invalid params: run_command: 'argv' must hold strings "
				       "without NUL");
		total += json_string_length(a) + 1;
		if (total > MCP_TEXT_MAX)
			return bad(ck, "Invalid params: run_command: 'argv' is too long");
		c->argv[i] = json_string_value(a);
	}
	return 0;
}

static int check_write_file(struct check *ck, json_t *args, struct mcp_call *c)
{
	static const char *const keys[] = {"path", "content", "encoding", "mode", NULL};
	const char *enc = NULL;
	json_t *mode = json_object_get(args, "mode");
	size_t n;

	if (only_keys(ck, args, "write_file", keys) < 0 ||
	    get_path(ck, args, "write_file", 1, &c->path) < 0 ||
	    get_str(ck, args, "write_file", "encoding", 16, 0, &enc, NULL) < 0)
		return -1;
	c->mode = 0644;
	if (mode) {
		if (!json_is_integer(mode) || json_integer_value(mode) < 0 ||
		    json_integer_value(mode) > 0777)
			return bad(ck,
				   "Invalid params: write_file: 'mode' must be an integer from 0 "
				   "to 511");
		c->mode = (unsigned int)json_integer_value(mode);
	}
	if (enc && strcmp(enc, "utf-8") != 0 && strcmp(enc, "base64") != 0)
		return bad(ck, "Invalid params: write_file: 'encoding' must be utf-8 or base64");
	if (!json_is_string(json_object_get(args, "content")))
		return bad(ck, "Invalid params: write_file needs the argument 'content' (a "
			       "string)");
	c->text = json_string_value(json_object_get(args, "content"));
	c->text_len = json_string_length(json_object_get(args, "content"));
	if (c->text_len > MCP_TEXT_MAX)
		return bad(ck, "Invalid params: write_file: 'content' is too long");
	if (!enc || strcmp(enc, "base64") != 0)
		return 0;
	c->owned = malloc(sbx__base64_decoded_max(c->text_len) + 1);
	if (!c->owned)
		return bad(ck, "Internal error: out of memory");
	if (sbx__base64_decode(c->owned, &n, c->text, c->text_len, 0) < 0)
		return bad(ck, "Invalid params: write_file: 'content' is not base64");
	c->text = c->owned;
	c->text_len = n;
	return 0;
}

static int
check_path_only(struct check *ck, json_t *args, const char *tool, int required, struct mcp_call *c)
{
	static const char *const keys[] = {"path", NULL};

	if (only_keys(ck, args, tool, keys) < 0 || get_path(ck, args, tool, required, &c->path) < 0)
		return -1;
	if (!c->path)
		c->path = "/workspace";
	return 0;
}

static const struct {
	const char *name;
	enum mcp_tool tool;
} tool_names[] = {{"run_code", MCP_RUN_CODE},
		  {"run_command", MCP_RUN_COMMAND},
		  {"write_file", MCP_WRITE_FILE},
		  {"read_file", MCP_READ_FILE},
		  {"list_files", MCP_LIST_FILES}};

/* Fills c from params ({name, arguments}); -1 with ck->msg set. */
static int check_call(struct check *ck, json_t *params, struct mcp_call *c)
{
	json_t *name = json_object_get(params, "name"),
	       *args = json_object_get(params, "arguments");
	json_t *empty = NULL;
	size_t i;
	int rc = -1;

	if (!json_is_string(name))
		return bad(ck, "Invalid params: tools/call needs 'name', a string");
	for (i = 0; i < sizeof(tool_names) / sizeof(tool_names[0]); i++)
		if (strcmp(tool_names[i].name, json_string_value(name)) == 0)
			break;
	if (i == sizeof(tool_names) / sizeof(tool_names[0]))
		return bad(ck, "Invalid params: unknown tool '%.64s'%s", json_string_value(name),
			   "");
	if (args && !json_is_object(args))
		return bad(ck, "Invalid params: 'arguments' must be an object");
	if (!args)
		args = empty = json_object();
	c->tool = tool_names[i].tool;
	switch (c->tool) {
	case MCP_RUN_CODE:
		rc = check_run_code(ck, args, c);
		break;
	case MCP_RUN_COMMAND:
		rc = check_run_command(ck, args, c);
		break;
	case MCP_WRITE_FILE:
		rc = check_write_file(ck, args, c);
		break;
	case MCP_READ_FILE:
		rc = check_path_only(ck, args, "read_file", 1, c);
		break;
	case MCP_LIST_FILES:
		rc = check_path_only(ck, args, "list_files", 0, c);
		break;
	}
	json_decref(empty);
	return rc;
}

/* ----- methods ----- */

static json_t *initialize(struct mcp_state *st, json_t *params, struct check *ck)
{
	json_t *pv = json_object_get(params, "protocolVersion");
	const char *v = mcp_versions[0];

	if (!json_is_string(pv)) {
		bad(ck, "Invalid params: initialize needs 'protocolVersion', a string");
		return NULL;
	}
	/* The client's revision if this server speaks it, else the newest this
	 * server speaks (the client then decides whether to go on). */
	for (size_t i = 0; mcp_versions[i]; i++)
		if (strcmp(mcp_versions[i], json_string_value(pv)) == 0)
			v = mcp_versions[i];
	snprintf(st->version, sizeof(st->version), "%s", v);
	st->initialized = 1;
	return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
			 "sandboxio", "title", "sandboxio", "version", SBX_VERSION_STRING,
			 "instructions",
			 "Each session has one sandbox, created on the first tool call and "
			 "removed when the session ends; files under /workspace persist between "
			 "calls. Its network, resources and image are the operator's policy; no "
			 "tool argument changes them.");
}

static json_t *call_tool(struct mcp_state *st, json_t *params, struct check *ck, int *code)
{
	struct mcp_call c = {0};
	json_t *res;

	if (check_call(ck, params, &c) < 0) {
		*code = strncmp(ck->msg, "Internal", 8) == 0 ? MCP_INTERNAL_ERROR
							     : MCP_INVALID_PARAMS;
		mcp_call_done(&c);
		return NULL;
	}
	res = st->exec ? st->exec(st->ctx, &c)
		       : mcp_text_result("no sandbox backend in this process", 1);
	mcp_call_done(&c);
	if (!res) {
		*code = MCP_INTERNAL_ERROR;
		bad(ck, "Internal error: out of memory");
	}
	return res;
}

/* The id: a string or an integer (MCP forbids null). 0 if fine. */
static int id_ok(json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

static char *
request(struct mcp_state *st, json_t *msg, json_t *id, const char *method, json_t *params)
{
	struct check ck = {{0}};
	json_t *res = NULL;
	int code = MCP_INVALID_PARAMS;

	if (strcmp(method, "ping") == 0)
		return result_reply(id, json_object());
	if (strcmp(method, "initialize") == 0) {
		if (st->initialized)
			return error_reply(id, MCP_INVALID_REQUEST,
					   "Invalid Request: already initialized");
		res = initialize(st, params, &ck);
	} else if (!st->initialized) {
		return error_reply(id, MCP_INVALID_REQUEST,
				   "Invalid Request: not initialized (send initialize first)");
	} else if (strcmp(method, "tools/list") == 0) {
		res = tools_list();
		if (!res)
			code = MCP_INTERNAL_ERROR;
	} else if (strcmp(method, "tools/call") == 0) {
		res = call_tool(st, params, &ck, &code);
	} else {
		char m[128];

		snprintf(m, sizeof(m), "Method not found: %.64s", method);
		return error_reply(id, MCP_METHOD_NOT_FOUND, m);
	}
	(void)msg;
	if (!res)
		return error_reply(id, code, ck.msg[0] ? ck.msg : "Internal error");
	return result_reply(id, res);
}

/*
 * Whether the text holds more than MCP_VALUES_MAX JSON values, counted
 * without parsing: outside strings, each value but the first follows a '[',
 * a ',' or a ':' (an overcount by the keys, which is fine). jansson spends
 * about 200 bytes on each object and 50 on each number, so a line of "{},"
 * at MCP_LINE_MAX would take 2 GB and 20 s of the server to parse, while a
 * message of this protocol holds at most a few thousand values.
 */
static int too_many_values(const char *s, size_t len)
{
	size_t n = 1;
	int in_str = 0, esc = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if ((c == '[' || c == ',' || c == ':') && ++n > MCP_VALUES_MAX) {
			return 1;
		}
	}
	return 0;
}

int mcp_handle(struct mcp_state *st, const char *line, size_t len, char **reply)
{
	json_error_t jerr;
	json_t *msg, *id, *method, *params, *jv;

	*reply = NULL;
	if (too_many_values(line, len)) {
		char m[96];

		snprintf(m, sizeof(m), "Parse error: a message holds at most %u JSON values",
			 MCP_VALUES_MAX);
		*reply = error_reply(NULL, MCP_PARSE_ERROR, m);
		return *reply ? 0 : -1;
	}
	msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!msg) {
		*reply = error_reply(NULL, MCP_PARSE_ERROR, "Parse error: not a JSON text");
		return *reply ? 0 : -1;
	}
	if (json_is_array(msg)) {
		*reply = error_reply(NULL, MCP_INVALID_REQUEST,
				     "Invalid Request: batches are not supported; send one "
				     "message per line");
		goto out;
	}
	if (!json_is_object(msg)) {
		*reply = error_reply(NULL, MCP_INVALID_REQUEST,
				     "Invalid Request: a message is a JSON object");
		goto out;
	}
	id = json_object_get(msg, "id");
	method = json_object_get(msg, "method");
	params = json_object_get(msg, "params");
	jv = json_object_get(msg, "jsonrpc");
	if (!method && id && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
		json_decref(msg); /* a response: this server sent no request */
		return 0;
	}
	if (id && !id_ok(id)) {
		*reply = error_reply(NULL, MCP_INVALID_REQUEST,
				     "Invalid Request: 'id' must be a string or an integer");
		goto out;
	}
	if (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0 ||
	    !json_is_string(method)) {
		if (id)
			*reply = error_reply(id, MCP_INVALID_REQUEST,
					     "Invalid Request: expected \"jsonrpc\": \"2.0\" and a "
					     "string 'method'");
		goto out;
	}
	if (!id) {
		json_decref(msg); /* a notification: never answered */
		return 0;
	}
	if (params && !json_is_object(params)) {
		*reply = error_reply(id, MCP_INVALID_PARAMS,
				     "Invalid params: 'params' must be an object");
		goto out;
	}
	*reply = request(st, msg, id, json_string_value(method), params);
out:
	json_decref(msg);
	return *reply ? 0 : -1;
}
