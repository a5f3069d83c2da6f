/*
 * tests/fuzz/fuzz_http.c: libFuzzer target for the Docker Engine API
 * transport (engine/http.c) as it reads the Engine's answer: through
 * libcurl for plain calls (status line, headers, chunked and sized bodies,
 * sbx__http_call()), its own strict reader of the status line and headers
 * of a hijacked connection and the stream's early bytes (the upgrade,
 * sbx__http_hijack()), and the error message it quotes
 * (sbx__http_message()).
 *
 * The answer is served over a unix socket in a temporary directory
 * (sock_server.h), so the real client code runs end to end. The first byte
 * chooses the call; the rest is the answer. Invariants besides the
 * sanitizers': a plain call's body stays within the 16 MiB cap, a hijack's
 * early bytes fit its buffer, and a quoted message is a string within its
 * buffer with no trailing newline.
 */
#include <sandboxio.h>

#include "engine/http-int.h"
#include "sock_server.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sbx__http http;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__buf resp = {0};
	long status = 0;

	if (!http.sock && sbx__http_init(&http, fz_srv_start(), 10000) != 0)
		abort();
	if (size < 1)
		return 0;
	fz_srv_answer(data + 1, size - 1);
	switch (data[0] & 3) {
	case 0:
	case 1:
		if (sbx__http_call(&http, data[0] & 1 ? "POST" : "GET", "/containers/fz/json",
				   data[0] & 1 ? "{\"a\":1}" : NULL, 0, &status, &resp) == 0 &&
		    resp.len > (16u << 20))
			abort();
		sbx__buf_clear(&resp);
		break;
	case 2: {
		struct sbx__hijack *hj = malloc(sizeof(*hj));

		if (!hj)
			abort();
		if (sbx__http_hijack(&http, "/containers/fz/attach?stream=1", "{}", 0, hj) == 0) {
			if (hj->pre_len > sizeof(hj->pre))
				abort();
			sbx__hijack_close(hj);
		}
		free(hj);
		break;
	}
	default: {
		char msg[64];
		size_t n;

		if (sbx__buf_append(&resp, data + 1, size - 1) < 0)
			abort();
		sbx__http_message(&resp, msg, sizeof(msg));
		n = strnlen(msg, sizeof(msg));
		if (n == sizeof(msg) || (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')))
			abort();
		sbx__buf_clear(&resp);
		break;
	}
	}
	sbx_error_clear();
	return 0;
}
