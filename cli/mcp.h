/*
 * cli/mcp.h: the Model Context Protocol server of `sandboxio mcp`.
 *
 * cli/mcp-rpc.c reads the client's messages (JSON-RPC 2.0, one per line on
 * stdin), negotiates the protocol revision, lists the tools and checks each
 * tool call's arguments against its schema; it touches no sandbox and is
 * fuzzed (tests/fuzz/fuzz_mcp.c). cli/mcp.c owns the session: the stdio
 * loop, signals, and the one sandbox the checked calls run in.
 */
#ifndef SBX_CLI_MCP_H
#define SBX_CLI_MCP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* A message (one line) longer than this is refused unread. */
#define MCP_LINE_MAX (24u << 20)
/* Bounds on a tool call's arguments. */
#define MCP_PATH_MAX 4096u
#define MCP_ARGV_MAX 4096u
#define MCP_TEXT_MAX (16u << 20) /* code, a shell line, a file's content */
/* A message holding more JSON values than this is refused unparsed. */
#define MCP_VALUES_MAX 65536u

/* JSON-RPC 2.0's error codes. */
#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603

enum mcp_tool { MCP_RUN_CODE = 0, MCP_RUN_COMMAND, MCP_WRITE_FILE, MCP_READ_FILE, MCP_LIST_FILES };

/* A tool call whose arguments passed their schema. Strings are borrowed
 * from the request (valid while it is) unless said otherwise. */
struct mcp_call {
	enum mcp_tool tool;
	const char *language; /* run_code: "python" or "bash" */
	const char *text;     /* run_code: the code; write_file: the content */
	size_t text_len;
	const char **argv;   /* run_command: NULL-terminated; owned (free with mcp_call_done) */
	const char *path;    /* write_file, read_file, list_files */
	unsigned int mode;   /* write_file */
	uint64_t timeout_ms; /* run_code, run_command: 0 for the policy's */
	char *owned;	     /* write_file: the decoded base64 content, if any */
};

/* Runs a checked call and returns its CallToolResult (an object with
 * "content" and "isError"), or NULL for out of memory. */
typedef json_t *(*mcp_exec_fn)(void *ctx, const struct mcp_call *c);

struct mcp_state {
	int initialized;  /* initialize answered */
	char version[16]; /* the negotiated revision */
	mcp_exec_fn exec; /* NULL: tool calls are answered with a tool error */
	void *ctx;
};

/*
 * Handles one message (len bytes, no newline). *reply is the message to
 * write back (a NUL-terminated compact JSON text without newline; free())
 * or NULL when none is due (a notification, a response). Returns 0, or -1
 * when out of memory.
 */
int mcp_handle(struct mcp_state *st, const char *line, size_t len, char **reply);

/* The reply to a line that passed MCP_LINE_MAX (a parse error). */
char *mcp_too_long_reply(void);

/* A CallToolResult holding one text; is_error marks a failed tool. */
json_t *mcp_text_result(const char *text, int is_error);

/* A text content item: label followed by the bytes data (the sandbox's:
 * NULs kept, bytes that are not UTF-8 replaced by U+FFFD); NULL without
 * memory. */
json_t *mcp_text_item(const char *label, const char *data, size_t len);

void mcp_call_done(struct mcp_call *c);

/* The revisions this server speaks, newest first; NULL-terminated. */
extern const char *const mcp_versions[];

#endif
