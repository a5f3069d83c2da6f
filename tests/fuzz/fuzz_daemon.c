/*
 * tests/fuzz/fuzz_daemon.c: libFuzzer target for the local daemon's
 * protocol (cli/dproto.c): the frames both ends read, the requests the
 * daemon parses from its clients, and the replies the command parses from
 * the daemon. The input's first byte picks the reader (even: the daemon
 * reading a client, odd: the command reading the daemon); the rest is a
 * stream of frames, each header judged before its payload is taken.
 *
 * Invariants besides the sanitizers': a header that passes has a length
 * within its type's bound (so nothing is allocated for a refused one); a
 * request that parses has a known op, and an exec one an id and a
 * NULL-terminated, non-empty argv of strings without NUL bytes; a create
 * request's limits are only the command's limit options; a reply that
 * parses as an error has a negative code and a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/dproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void request(const uint8_t *p, size_t n)
{
	struct cli_dreq rq;
	char err[256];

	if (cli_dreq_parse((const char *)p, n, &rq, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
		return;
	}
	if (rq.op < CLI_DOP_CREATE || rq.op > CLI_DOP_RESUME)
		abort();
	if (rq.op == CLI_DOP_EXEC) {
		size_t k = 0;

		if (!rq.id || !rq.argv || !rq.argv[0])
			abort();
		for (; rq.argv[k]; k++)
			(void)strlen(rq.argv[k]);
		if (k > CLI_D_ARGS_MAX)
			abort();
	}
	for (size_t k = 0; k < rq.env_n; k++)
		if (!rq.env[k])
			abort();
	for (size_t k = 0; k < rq.allow_n; k++)
		if (!rq.allow[k].spec)
			abort();
	cli_dreq_free(&rq);
}

static void reply(const uint8_t *p, size_t n)
{
	struct cli_dexec_info info;
	struct cli_dcreate_info ci;
	const char *msg = NULL;
	json_t *root = NULL, *rows = NULL;
	sbx_result r;
	char err[256];
	int code = 0, rc;

	rc = cli_dreply_parse((const char *)p, n, &root, &code, &msg, err, sizeof(err));
	if (rc < 0)
		return;
	if (rc > 0) {
		if (code >= 0 || !msg || !root) /* msg points into root */
			abort();
		json_decref(root);
		return;
	}
	memset(&r, 0, sizeof(r));
	if (cli_dreply_exec(root, &r, &info, err, sizeof(err)) == 0 &&
	    (r.status > SBX_RUN_ERROR || !info.backend || !info.tier))
		abort();
	if (cli_dreply_create(root, &ci, err, sizeof(err)) == 0 && (!ci.id || !ci.id[0]))
		abort();
	if (cli_dreply_rows(root, &rows, err, sizeof(err)) == 0)
		json_decref(rows);
	json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int from_daemon;

	if (size < 1)
		return 0;
	from_daemon = data[0] & 1;
	data++;
	size--;
	while (size >= CLI_D_HDR) {
		enum cli_dtype t;
		size_t n;
		char err[256];

		if (cli_dframe_check(data, from_daemon, &t, &n, err, sizeof(err)) < 0)
			return 0;
		if (n > (t == CLI_D_REQUEST || t == CLI_D_REPLY ? CLI_D_JSON_MAX : CLI_D_DATA_MAX))
			abort();
		data += CLI_D_HDR;
		size -= CLI_D_HDR;
		if (n > size)
			return 0;
		if (t == CLI_D_REQUEST)
			request(data, n);
		else if (t == CLI_D_REPLY)
			reply(data, n);
		data += n;
		size -= n;
	}
	return 0;
}
