/*
 * cli/dproto.h: the local daemon's protocol (docs/protocol.md, "The local
 * daemon's protocol"): frames on a unix stream socket, and the requests
 * and replies they carry. Pure code: bytes in, structures out; the daemon
 * (cli/daemon.c) and the command's client (cli/dclient.c) share it, and
 * tests/fuzz/fuzz_daemon.c drives it with hostile bytes.
 *
 * A frame is a 5-byte header, byte 0 the type and bytes 1-4 the payload's
 * length (big-endian), then the payload. A request is one JSON object.
 */
#ifndef SBX_CLI_DPROTO_H
#define SBX_CLI_DPROTO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cli/cli.h"

#define CLI_D_HDR 5
#define CLI_D_DATA_MAX 65536u	  /* STDIN, STDOUT, STDERR */
#define CLI_D_JSON_MAX (4u << 20) /* REQUEST, REPLY */
#define CLI_D_ARGS_MAX 65536u	  /* argv, env and allow entries of one request */

enum cli_dtype {
	CLI_D_REQUEST = 0x01,	/* client: the request, first and once */
	CLI_D_STDIN = 0x02,	/* client: exec's stdin, 1..65536 bytes */
	CLI_D_STDIN_EOF = 0x03, /* client: exec's stdin ends (empty) */
	CLI_D_STDOUT = 0x11,	/* daemon: 1..65536 bytes of the run's stdout */
	CLI_D_STDERR = 0x12,	/* daemon: ... of its stderr */
	CLI_D_REPLY = 0x13	/* daemon: the answer, last */
};

enum cli_dop {
	CLI_DOP_CREATE = 1,
	CLI_DOP_EXEC,
	CLI_DOP_KILL,
	CLI_DOP_LIST,
	CLI_DOP_PAUSE,
	CLI_DOP_RESUME
};

/* A request as parsed; its strings point into root. */
struct cli_dreq {
	enum cli_dop op;
	json_t *root;
	const char *id;	    /* exec, kill, pause, resume */
	const char *tenant; /* create, list; NULL: none */
	const char **argv;  /* exec: NULL-terminated */
	const char **env;   /* exec, create: NULL-terminated; NULL: none */
	size_t env_n;
	const char *workdir;
	uint64_t timeout_ms; /* exec */
	uint64_t max_ms;     /* pause: its bound; 0: the ceiling */
	int want_stdin, raw_output;
	/* create: the options as text, as the command line gives them */
	const char *image, *timeout, *create_timeout, *lifetime, *tier;
	const char *limit[SBX__LIMIT_N];
	struct cli_allow *allow;
	size_t allow_n;
};

/* Writes a header for a payload of len bytes. */
void cli_dframe_header(uint8_t hdr[CLI_D_HDR], enum cli_dtype type, size_t len);

/*
 * Checks a header before its payload is read: a type the sender may send
 * (from_daemon: the daemon's types, else the client's) and a length within
 * that type's bound. Returns 0 with *type and *len, or -1 with err.
 */
int cli_dframe_check(const uint8_t hdr[CLI_D_HDR],
		     int from_daemon,
		     enum cli_dtype *type,
		     size_t *len,
		     char *err,
		     size_t esize);

/* A REQUEST payload into rq (freed with cli_dreq_free() on success). Unknown
 * keys, wrong types, NUL bytes in strings and missing fields are refused.
 * Returns 0, or -1 with err. */
int cli_dreq_parse(const char *json, size_t len, struct cli_dreq *rq, char *err, size_t esize);
void cli_dreq_free(struct cli_dreq *rq);

/* What an exec's REPLY says besides the result (run.c's report needs it). */
struct cli_dexec_info {
	const char *backend, *tier; /* into the reply's JSON */
	int64_t memory_cap, output_cap;
	uint64_t timeout_ms, spans_dropped;
};

/*
 * A REPLY payload: *root the object (the caller frees it). An error reply
 * gives *code (an SBX_E* value) and *msg and returns 1; a success returns 0;
 * a malformed one -1 with err.
 */
int cli_dreply_parse(const char *json,
		     size_t len,
		     json_t **root,
		     int *code,
		     const char **msg,
		     char *err,
		     size_t esize);

/* An exec's successful reply into r (its stdout/stderr are left alone) and
 * info. Returns 0, or -1 with err. */
int cli_dreply_exec(
	json_t *root, sbx_result *r, struct cli_dexec_info *info, char *err, size_t esize);

/* A create's successful reply, pointing into root. Returns 0, or -1 with err. */
struct cli_dcreate_info {
	const char *id, *backend, *tier, *tenant;
	uint64_t spans_dropped;
};
int cli_dreply_create(json_t *root, struct cli_dcreate_info *info, char *err, size_t esize);

/* A list's successful reply: *rows, an array of {id, tenant, image, state,
 * created, deadline} (a new reference). Returns 0, or -1 with err. */
int cli_dreply_rows(json_t *root, json_t **rows, char *err, size_t esize);

#endif
