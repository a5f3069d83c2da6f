/*
 * tests/unit/cli/test_mcp_rpc.c: unit tests of cli/mcp-rpc.c, the JSON-RPC
 * layer of `sandboxio mcp`: the lifecycle (nothing but initialize and ping
 * before initialize, one initialize), revision negotiation (each of the
 * three revisions echoed, another answered with the newest), the tool list
 * and its schemas, malformed messages, batches, notifications, unknown
 * methods and tools, and the checks of each tool's arguments, including
 * that no argument beyond a tool's schema is taken. The executor is a
 * function of this test that records the checked call it is given: the
 * unit here is the parser; the engine-backed tests run the real one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/mcp-rpc.c"

static struct {
	int calls;
	enum mcp_tool tool;
	char lang[16];
	char text[256];
	size_t text_len;
	char argv[8][64];
	int argc;
	char path[256];
	unsigned mode;
	uint64_t timeout_ms;
} seen;

static json_t *record(void *ctx, const struct mcp_call *c)
{
	(void)ctx;
	memset(&seen, 0, sizeof(seen));
	seen.calls = 1;
	seen.tool = c->tool;
	if (c->language)
		snprintf(seen.lang, sizeof(seen.lang), "%s", c->language);
	if (c->text) {
		seen.text_len = c->text_len;
		memcpy(seen.text, c->text, c->text_len < 255 ? c->text_len : 255);
	}
	for (seen.argc = 0; c->argv && c->argv[seen.argc] && seen.argc < 8; seen.argc++)
		snprintf(seen.argv[seen.argc], 64, "%s", c->argv[seen.argc]);
	if (c->path)
		snprintf(seen.path, sizeof(seen.path), "%s", c->path);
	seen.mode = c->mode;
	seen.timeout_ms = c->timeout_ms;
	return mcp_text_result("done", 0);
}

/* Sends one line; returns the parsed reply (NULL when none). */
static json_t *send_line(struct mcp_state *st, const char *line)
{
	char *reply = NULL;
	json_t *j;

	assert_int_equal(mcp_handle(st, line, strlen(line), &reply), 0);
	if (!reply)
		return NULL;
	assert_null(strchr(reply, '\n')); /* one message per line */
	j = json_loads(reply, 0, NULL);
	assert_non_null(j);
	free(reply);
	assert_string_equal(json_string_value(json_object_get(j, "jsonrpc")), "2.0");
	return j;
}

static int error_code(json_t *j)
{
	json_t *e = json_object_get(j, "error");

	return e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
}

static const char *error_message(json_t *j)
{
	return json_string_value(json_object_get(json_object_get(j, "error"), "message"));
}

static void init_state(struct mcp_state *st)
{
	json_t *j;

	memset(st, 0, sizeof(*st));
	st->exec = record;
	j = send_line(st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			  "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			  "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	assert_int_equal(error_code(j), 0);
	json_decref(j);
	assert_null(
		send_line(st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
}

static void test_negotiates_each_revision(void **state)
{
	static const char *const asked[] = {"2025-06-18", "2025-03-26", "2024-11-05", "2099-01-01",
					    "1.0"};
	static const char *const got[] = {"2025-06-18", "2025-03-26", "2024-11-05", "2025-06-18",
					  "2025-06-18"};
	(void)state;

	for (size_t i = 0; i < 5; i++) {
		struct mcp_state st = {0};
		char line[256];
		json_t *j, *r;

		snprintf(line, sizeof(line),
			 "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\",\"params\":"
			 "{\"protocolVersion\":\"%s\",\"capabilities\":{}}}",
			 asked[i]);
		j = send_line(&st, line);
		r = json_object_get(j, "result");
		assert_string_equal(json_string_value(json_object_get(j, "id")), "a");
		assert_string_equal(json_string_value(json_object_get(r, "protocolVersion")),
				    got[i]);
		assert_non_null(json_object_get(json_object_get(r, "capabilities"), "tools"));
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(r, "serverInfo"), "name")),
				    "sandboxio");
		assert_string_equal(st.version, got[i]);
		json_decref(j);
	}
}

static void test_lifecycle(void **state)
{
	struct mcp_state st = {0};
	json_t *j;
	(void)state;

	st.exec = record;
	j = send_line(&st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	assert_int_equal(error_code(j), MCP_INVALID_REQUEST);
	assert_non_null(strstr(error_message(j), "not initialized"));
	json_decref(j);
	j = send_line(&st, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	assert_true(json_is_object(json_object_get(j, "result")));
	json_decref(j);
	j = send_line(&st,
		      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{}}");
	assert_int_equal(error_code(j), MCP_INVALID_PARAMS); /* no protocolVersion */
	assert_false(st.initialized);
	json_decref(j);
	init_state(&st);
	j = send_line(&st, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":"
			   "{\"protocolVersion\":\"2025-06-18\"}}");
	assert_int_equal(error_code(j), MCP_INVALID_REQUEST);
	assert_non_null(strstr(error_message(j), "already initialized"));
	json_decref(j);
}

static void test_tools_list_and_schemas(void **state)
{
	static const char *const names[] = {"run_code", "run_command", "write_file", "read_file",
					    "list_files"};
	struct mcp_state st;
	json_t *j, *tools;
	(void)state;

	init_state(&st);
	j = send_line(&st,
		      "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{}}");
	tools = json_object_get(json_object_get(j, "result"), "tools");
	assert_int_equal(json_array_size(tools), 5);
	for (size_t i = 0; i < 5; i++) {
		json_t *t = json_array_get(tools, i), *sc = json_object_get(t, "inputSchema");
		json_t *req = json_object_get(sc, "required");
		const char *k;
		json_t *v;

		assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
		assert_true(strlen(json_string_value(json_object_get(t, "description"))) > 20);
		assert_string_equal(json_string_value(json_object_get(sc, "type")), "object");
		assert_true(json_is_false(json_object_get(sc, "additionalProperties")));
		assert_true(!req || json_array_size(req) > 0);
		/* no property can reach the policy */
		json_object_foreach(json_object_get(sc, "properties"), k, v)
		{
			(void)v;
			assert_null(strstr(k, "network"));
			assert_null(strstr(k, "image"));
			assert_null(strstr(k, "cap"));
			assert_null(strstr(k, "memory"));
			assert_null(strstr(k, "allow"));
			assert_null(strstr(k, "env"));
		}
	}
	json_decref(j);
}

static void test_malformed_messages(void **state)
{
	static const struct {
		const char *line;
		int code;
		int null_id;
	} cases[] = {
		{"garbage", MCP_PARSE_ERROR, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,", MCP_PARSE_ERROR, 1},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_INVALID_REQUEST, 1},
		{"[]", MCP_INVALID_REQUEST, 1},
		{"42", MCP_INVALID_REQUEST, 1},
		{"\"ping\"", MCP_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 0},
		{"{\"id\":1,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", MCP_INVALID_REQUEST, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":[]}",
		 MCP_INVALID_PARAMS, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", MCP_PARSE_ERROR, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"run_code\",\"arguments\":{\"code\":\"a\\u0000b\"}}}",
		 MCP_PARSE_ERROR, 1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}",
		 MCP_METHOD_NOT_FOUND, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such\"}", MCP_METHOD_NOT_FOUND, 0},
	};
	struct mcp_state st;
	(void)state;

	init_state(&st);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = send_line(&st, cases[i].line);

		assert_non_null(j);
		assert_int_equal(error_code(j), cases[i].code);
		assert_true(strlen(error_message(j)) > 0);
		if (cases[i].null_id)
			assert_true(json_is_null(json_object_get(j, "id")));
		else
			assert_int_equal(json_integer_value(json_object_get(j, "id")), 1);
		json_decref(j);
	}
}

static void test_batch_is_refused_as_such(void **state)
{
	struct mcp_state st;
	json_t *j;
	(void)state;

	init_state(&st);
	j = send_line(&st, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			   "{\"name\":\"list_files\"}}]");
	assert_int_equal(error_code(j), MCP_INVALID_REQUEST);
	assert_non_null(strstr(error_message(j), "batches are not supported"));
	assert_int_equal(seen.calls, 0);
	json_decref(j);
}

static void test_notifications_and_responses_get_no_reply(void **state)
{
	struct mcp_state st;
	(void)state;

	init_state(&st);
	assert_null(send_line(&st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
				   "\"params\":{\"requestId\":3}}"));
	assert_null(send_line(&st, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such\"}"));
	assert_null(send_line(&st, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":"
				   "{\"name\":\"run_code\",\"arguments\":{\"code\":\"x\"}}}"));
	assert_int_equal(seen.calls, 0); /* a notification runs no tool */
	assert_null(send_line(&st, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}"));
	assert_null(send_line(&st, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":1}}"));
}

static json_t *call(struct mcp_state *st, const char *name, const char *args)
{
	char line[2048];

	memset(&seen, 0, sizeof(seen));
	snprintf(line, sizeof(line),
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"%s\",\"arguments\":%s}}",
		 name, args);
	return send_line(st, line);
}

static void
expect_invalid(struct mcp_state *st, const char *name, const char *args, const char *words)
{
	json_t *j = call(st, name, args);

	assert_int_equal(error_code(j), MCP_INVALID_PARAMS);
	if (!strstr(error_message(j), words))
		fail_msg("%s %s: '%s' lacks '%s'", name, args, error_message(j), words);
	assert_int_equal(seen.calls, 0);
	json_decref(j);
}

static void test_tool_arguments_are_checked(void **state)
{
	struct mcp_state st;
	(void)state;

	init_state(&st);
	expect_invalid(&st, "nope", "{}", "unknown tool 'nope'");
	expect_invalid(&st, "run_code", "{}", "'code'");
	expect_invalid(&st, "run_code", "{\"code\":1}", "'code' must be a string");
	expect_invalid(&st, "run_code", "{\"code\":\"x\",\"language\":\"ruby\"}", "python or bash");
	expect_invalid(&st, "run_code", "{\"code\":\"x\",\"timeout\":0}", "'timeout'");
	expect_invalid(&st, "run_code", "{\"code\":\"x\",\"timeout\":\"5\"}", "'timeout'");
	expect_invalid(&st, "run_code", "{\"code\":\"x\",\"timeout\":1e12}", "'timeout'");
	/* nothing beyond the schema: no way to ask for network, image, caps */
	expect_invalid(&st, "run_code", "{\"code\":\"x\",\"network\":true}",
		       "no argument 'network'");
	expect_invalid(&st, "run_code", "{\"code\":\"x\",\"image\":\"a\"}", "no argument 'image'");
	expect_invalid(&st, "run_command", "{\"argv\":[\"ls\"],\"cap_add\":[\"ALL\"]}",
		       "no argument 'cap_add'");
	expect_invalid(&st, "run_command", "{\"argv\":[\"ls\"],\"env\":{}}", "no argument 'env'");
	expect_invalid(&st, "run_command", "{}", "'argv' or 'command'");
	expect_invalid(&st, "run_command", "{\"argv\":[\"a\"],\"command\":\"b\"}",
		       "'argv' or 'command'");
	expect_invalid(&st, "run_command", "{\"argv\":[]}", "non-empty array");
	expect_invalid(&st, "run_command", "{\"argv\":[\"a\",2]}", "strings");
	expect_invalid(&st, "run_command", "{\"argv\":\"ls\"}", "non-empty array");
	expect_invalid(&st, "write_file", "{\"path\":\"/workspace/a\"}", "'content'");
	expect_invalid(&st, "write_file", "{\"path\":\"rel\",\"content\":\"\"}", "absolute");
	expect_invalid(&st, "write_file", "{\"path\":\"/a\",\"content\":\"\",\"mode\":4095}",
		       "'mode'");
	expect_invalid(&st, "write_file",
		       "{\"path\":\"/a\",\"content\":\"!!\",\"encoding\":\"base64\"}",
		       "not base64");
	expect_invalid(&st, "write_file", "{\"path\":\"/a\",\"content\":\"\",\"encoding\":\"hex\"}",
		       "'encoding'");
	expect_invalid(&st, "read_file", "{}", "'path'");
	expect_invalid(&st, "read_file", "{\"path\":\"/a\",\"max\":1}", "no argument 'max'");
	expect_invalid(&st, "list_files", "{\"path\":\"x/..\"}", "absolute");
	expect_invalid(&st, "run_code", "[1]", "'arguments' must be an object");
}

static void expect_call(json_t *j)
{
	json_t *r = json_object_get(j, "result");

	assert_int_equal(error_code(j), 0);
	assert_int_equal(seen.calls, 1);
	assert_true(json_is_false(json_object_get(r, "isError")));
	json_decref(j);
}

static void test_good_calls_reach_the_executor(void **state)
{
	struct mcp_state st;
	(void)state;

	init_state(&st);
	expect_call(call(&st, "run_code", "{\"code\":\"print(6*7)\"}"));
	assert_int_equal(seen.tool, MCP_RUN_CODE);
	assert_string_equal(seen.lang, "python");
	assert_string_equal(seen.text, "print(6*7)");
	assert_int_equal(seen.timeout_ms, 0);
	expect_call(
		call(&st, "run_code", "{\"code\":\"echo\",\"language\":\"bash\",\"timeout\":1.5}"));
	assert_string_equal(seen.lang, "bash");
	assert_int_equal(seen.timeout_ms, 1500);
	expect_call(call(&st, "run_command", "{\"argv\":[\"ls\",\"-l\",\"/\"]}"));
	assert_int_equal(seen.argc, 3);
	assert_string_equal(seen.argv[2], "/");
	expect_call(call(&st, "run_command", "{\"command\":\"echo hi | wc -c\"}"));
	assert_int_equal(seen.argc, 3);
	assert_string_equal(seen.argv[0], "sh");
	assert_string_equal(seen.argv[1], "-c");
	assert_string_equal(seen.argv[2], "echo hi | wc -c");
	expect_call(call(&st, "write_file", "{\"path\":\"/workspace/a\",\"content\":\"hi\\n\"}"));
	assert_string_equal(seen.path, "/workspace/a");
	assert_int_equal(seen.text_len, 3);
	assert_int_equal(seen.mode, 0644);
	expect_call(call(&st, "write_file",
			 "{\"path\":\"/tmp/b\",\"content\":\"AAEC\",\"encoding\":"
			 "\"base64\",\"mode\":493}"));
	assert_int_equal(seen.text_len, 3);
	assert_memory_equal(seen.text, "\x00\x01\x02", 3);
	assert_int_equal(seen.mode, 0755);
	expect_call(call(&st, "read_file", "{\"path\":\"/workspace/a\"}"));
	assert_int_equal(seen.tool, MCP_READ_FILE);
	expect_call(call(&st, "list_files", "{}"));
	assert_string_equal(seen.path, "/workspace");
	/* arguments may be left out when none is required */
	memset(&seen, 0, sizeof(seen));
	expect_call(send_line(&st, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\","
				   "\"params\":{\"name\":\"list_files\"}}"));
}

static void test_too_long_reply(void **state)
{
	char *r = mcp_too_long_reply();
	json_t *j;
	(void)state;

	j = json_loads(r, 0, NULL);
	assert_int_equal(error_code(j), MCP_PARSE_ERROR);
	assert_true(json_is_null(json_object_get(j, "id")));
	json_decref(j);
	free(r);
}

/* Output and files are the sandbox's bytes: a NUL in them does not cut the
 * text item short (what follows it would reach structuredContent but not
 * the content a client shows). */
static void test_text_item_keeps_bytes_after_a_nul(void **state)
{
	static const char data[] = "before\0after\xff\n";
	json_t *item = mcp_text_item("stdout:\n", data, sizeof(data) - 1);
	json_t *text;
	(void)state;

	assert_non_null(item);
	assert_string_equal(json_string_value(json_object_get(item, "type")), "text");
	text = json_object_get(item, "text");
	assert_int_equal(json_string_length(text),
			 strlen("stdout:\nbefore") + 1 + strlen("after\xef\xbf\xbd\n"));
	assert_memory_equal(json_string_value(text), "stdout:\nbefore\0after\xef\xbf\xbd\n",
			    json_string_length(text));
	json_decref(item);
}

/* A message of many small values ({} costs jansson about 200 bytes, so a
 * line of them at the line bound would take 2 GB) is refused before it is
 * parsed; one at the bound of argv, and strings holding the same bytes, are
 * not. */
static void test_a_message_of_too_many_values_is_refused_unparsed(void **state)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\","
				   "\"params\":{\"a\":[";
	size_t n = MCP_VALUES_MAX + 1, len = sizeof(head) - 1, i;
	char *line = malloc(len + n * 3 + 8);
	struct mcp_state st;
	json_t *j;
	(void)state;

	assert_non_null(line);
	init_state(&st);
	memcpy(line, head, len);
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(line + len, "%s{}", i ? "," : "");
	strcpy(line + len, "]}}");
	j = send_line(&st, line);
	assert_int_equal(error_code(j), MCP_PARSE_ERROR);
	assert_true(json_is_null(json_object_get(j, "id")));
	assert_non_null(strstr(error_message(j), "values"));
	json_decref(j);
	/* the same characters inside a string are one value */
	len = sizeof(head) - 1;
	memcpy(line, head, len);
	line[len++] = '"';
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(line + len, "{},");
	strcpy(line + len, "\"]}}");
	j = send_line(&st, line);
	assert_int_equal(error_code(j), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 3);
	json_decref(j);
	/* argv at its bound is well within */
	len = (size_t)sprintf(line,
			      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
			      "\"params\":{\"name\":\"run_command\",\"arguments\":{\"argv\":[");
	for (i = 0; i < MCP_ARGV_MAX; i++)
		len += (size_t)sprintf(line + len, "%s\"a\"", i ? "," : "");
	strcpy(line + len, "]}}}");
	st.exec = record;
	j = send_line(&st, line);
	assert_int_equal(error_code(j), 0);
	assert_int_equal(seen.tool, MCP_RUN_COMMAND);
	json_decref(j);
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiates_each_revision),
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_tools_list_and_schemas),
		cmocka_unit_test(test_malformed_messages),
		cmocka_unit_test(test_batch_is_refused_as_such),
		cmocka_unit_test(test_notifications_and_responses_get_no_reply),
		cmocka_unit_test(test_tool_arguments_are_checked),
		cmocka_unit_test(test_good_calls_reach_the_executor),
		cmocka_unit_test(test_too_long_reply),
		cmocka_unit_test(test_text_item_keeps_bytes_after_a_nul),
		cmocka_unit_test(test_a_message_of_too_many_values_is_refused_unparsed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
