/*
 * tests/fuzz/fuzz_e2b.c: libFuzzer target for what the E2B backend reads
 * from the provider: envd's process stream (the Connect envelopes of
 * remote/e2b/connect.c, each envelope's JSON event and its base64 output,
 * on_frame() in remote/e2b/run.c), the control plane's error answers
 * (sbx__e2b_status_error() in remote/e2b/rest.c, with the sanitizer and
 * the scrubbing of the key and the token), its answers' headers
 * (X-Next-Token, Sandboxio-Tier: on_header() in rest.c), and its sandbox
 * descriptions (check_readback(), the RFC 3339 times, and the list and
 * reaper's reading of each listed sandbox, list_one() and reap_one(), in
 * remote/e2b/sandbox.c, reap_one()'s items judged by core/reap.c).
 *
 * run.c, sandbox.c and rest.c are included so that their static readers
 * are reached without changing them; nothing here opens a connection. The
 * JSON decoding of a control plane answer (sbx__e2b_api()) is jansson's,
 * inline after the transfer: the readers above take its result.
 *
 * The first byte chooses the reader and how the stream is cut into reads.
 * Invariants besides the sanitizers': a decoder error is sticky, output
 * reaches the sink only after a start event, and no message quotes the
 * API key (nor, from envd, the envd token) whole.
 */
#include "core/reap-int.h"
#include "remote/e2b/rest.c"
#include "remote/e2b/run.c"
#include "remote/e2b/sandbox.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY "e2b_fuzzkey0123456789"
#define TOKEN "envd-token-fuzz-0123"

struct sink_state {
	struct proc *p;
	size_t bytes;
};

static int sink(void *arg, int stream, const void *d, size_t n)
{
	struct sink_state *s = arg;

	if ((stream != SBX_STREAM_STDOUT && stream != SBX_STREAM_STDERR) || !d || !n ||
	    !s->p->have_start)
		abort();
	s->bytes += n;
	return 0;
}

static void no_secret(const char *s)
{
	if (strstr(s, KEY) || strstr(s, TOKEN))
		abort();
}

static void stream(const uint8_t *data, size_t size, size_t chunk)
{
	struct sbx__e2b e = {.api_key = (char *)KEY};
	struct sbx__e2b_box b = {.id = (char *)"ifuzz0000000000000000", .token = (char *)TOKEN};
	struct sink_state ss = {0};
	struct sbx__run_req req = {.sink = sink, .sink_arg = &ss};
	struct proc p = {.e = &e, .b = &b, .req = &req, .status = 200};
	int last = 0;

	ss.p = &p;
	sbx__connect_init(&p.dec, 1u << 16);
	for (size_t off = 0; off < size;) {
		size_t n = size - off < chunk ? size - off : chunk;
		int rc = sbx__connect_feed(&p.dec, data + off, n, on_frame, &p);

		if (last < 0 && rc == 0)
			abort(); /* an error is not sticky */
		if (rc != 0)
			last = rc < 0 ? rc : last;
		if (rc != 0)
			break; /* on_stream() stops the transfer here */
		off += n;
	}
	(void)sbx__connect_finish(&p.dec);
	no_secret(p.eos_code);
	no_secret(p.eos_msg);
	no_secret(sbx_error_last()->message);
	sbx__connect_done(&p.dec);
}

static void status_error(const uint8_t *data, size_t size, long status)
{
	struct sbx__e2b e = {.api_key = (char *)KEY};
	struct sbx__e2b_resp rs = {.status = status};

	if (sbx__buf_append(&rs.body, data, size) < 0)
		abort();
	if (sbx__e2b_status_error(&e, "GET /sandboxes", "ifuzz", &rs) >= 0)
		abort();
	/* The control plane knows no envd token: only the key is scrubbed. */
	if (strstr(sbx_error_last()->message, KEY))
		abort();
	sbx__buf_clear(&rs.body);
}

static int list_cb(const sbx_sandbox_info *info, void *arg)
{
	(void)arg;
	if (!sbx__e2b_valid_id(info->id) || !info->tenant || !info->image || !info->state ||
	    info->created < 0)
		abort();
	return 0;
}

/* Header lines as libcurl hands them to on_header(), each with its CRLF. */
static void headers(const uint8_t *p, size_t n)
{
	struct sbx__e2b_resp rs = {0};

	while (n) {
		const uint8_t *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) + 1 : n;
		char *line = malloc(len);

		if (!line)
			abort();
		memcpy(line, p, len);
		if (on_header(line, 1, len, &rs) != len)
			abort();
		free(line);
		if (!memchr(rs.next_token, '\0', sizeof(rs.next_token)) ||
		    !memchr(rs.tier, '\0', sizeof(rs.tier)))
			abort();
		for (const char *c = rs.next_token; *c; c++)
			if (!isprint((unsigned char)*c))
				abort();
		p += len;
		n -= len;
	}
	(void)tier_of(rs.tier, &(sbx_tier){0});
}

/* The reaper's judgement of each item reap_one() hands it (core/reap.c). */
static int reap_fn(void *arg, const struct sbx__reap_item *item)
{
	const char *why = "";

	(void)arg;
	if (!item->id || !item->tenant || !item->self)
		abort();
	(void)sbx__reap_judge(item, &why);
	return 0;
}

static void describe(const uint8_t *data, size_t size)
{
	json_t *d = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	sbx_policy *p = NULL;

	if (!d)
		return;
	if (sbx_policy_new(&p) < 0)
		abort();
	(void)check_readback("ifuzz", "base", p, d);
	(void)parse_rfc3339(json_string_value(json_object_get(d, "startedAt")));
	(void)parse_rfc3339(json_string_value(json_object_get(d, "endAt")));
	(void)is_ours(json_object_get(d, "metadata"));
	{
		struct sbx__e2b e = {.api_key = (char *)KEY};
		struct list_ctx lc = {.tenant = NULL, .cb = list_cb};
		struct reap_ctx rc = {.e = &e, .tenant = "t1", .only_local = 1, .fn = reap_fn};
		json_t *item;
		size_t i;

		snprintf(e.self.host, sizeof(e.self.host), "fuzzhost");
		if (json_is_array(d)) {
			json_array_foreach(d, i, item)
			{
				(void)list_one(item, &lc);
				(void)reap_one(item, &rc);
			}
		} else {
			(void)list_one(d, &lc);
			(void)reap_one(d, &rc);
		}
	}
	sbx_policy_free(p);
	json_decref(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] & 3) {
	case 0:
	case 1:
		stream(data + 1, size - 1, (size_t)(data[0] >> 2) * 7 + 1);
		break;
	case 2:
		status_error(data + 1, size - 1, 400 + (long)(data[0] >> 2) * 3);
		break;
	default:
		if (data[0] & 4)
			headers(data + 1, size - 1);
		else
			describe(data + 1, size - 1);
		break;
	}
	sbx__error_clear();
	return 0;
}
