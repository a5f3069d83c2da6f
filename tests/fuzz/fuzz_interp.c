/*
 * tests/fuzz/fuzz_interp.c: libFuzzer target for core/interp-parse.c, the
 * host's reader of a code context's lines (what a cell's run prints, which a
 * cell can forge by writing to the context's socket).
 *
 * The first byte chooses where the input is cut in two feeds (so lines
 * split across chunks are reached) and whether a secret is live. Properties
 * checked besides the sanitizers':
 *  - items are at most SBX_INTERP_ITEMS_MAX, each with a known MIME type and
 *    NUL-terminated data; their bytes together are within the cap;
 *  - stdout and stderr are never NULL after finish, and within the cap
 *    (plus what redaction adds);
 *  - with the secret live, its value appears in no part of the result,
 *    escaped or not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/interp-int.h"
#include "core/secret-int.h"
#include "util/redact-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 65536
static const char secret[] = "Fz\"s<&>cr3t";

static void no_secret(const void *p, size_t n)
{
	if (p && memmem(p, n, secret, strlen(secret)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sbx_secrets *sec;
	struct sbx__redact_scope scope;
	struct sbx__interp_parser p;
	sbx_code_result *r = calloc(1, sizeof(*r));
	size_t cut, n;
	int live;

	if (!r || size < 1)
		return free(r), 0;
	if (!sec &&
	    (sbx_secrets_new(&sec) != 0 || sbx_secrets_add(sec, "S", secret, strlen(secret)) != 0))
		abort();
	live = data[0] & 1;
	data++;
	size--;
	cut = size ? (data[0] * 7u) % (size + 1) : 0;
	sbx__redact_scope_init(&scope);
	if (live && sbx__redact_scope_add(&scope, sbx__secrets_redact_set(sec)) < 0)
		abort();
	sbx__interp_parser_init(&p, r, CAP, &scope);
	if (sbx__interp_feed(&p, data, cut) < 0 ||
	    sbx__interp_feed(&p, data + cut, size - cut) < 0 || sbx__interp_finish(&p) < 0)
		abort();
	if (!r->stdout_data || !r->stderr_data || r->n_items > SBX_INTERP_ITEMS_MAX)
		abort();
	n = 0;
	for (size_t i = 0; i < r->n_items; i++) {
		const sbx_display_item *it = &r->items[i];
		if (!it->mime || !it->data || it->data[it->len] != '\0')
			abort();
		n += it->len;
		if (live)
			no_secret(it->data, it->len);
	}
	if (n > CAP)
		abort();
	if (live) {
		no_secret(r->stdout_data, r->stdout_len);
		no_secret(r->stderr_data, r->stderr_len);
		no_secret(r->text, r->text ? strlen(r->text) : 0);
		no_secret(r->error_name, r->error_name ? strlen(r->error_name) : 0);
		no_secret(r->error_value, r->error_value ? strlen(r->error_value) : 0);
		no_secret(r->error_traceback, r->error_traceback ? strlen(r->error_traceback) : 0);
	}
	sbx__interp_parser_done(&p);
	sbx_code_result_free(r);
	sbx__redact_scope_done(&scope);
	return 0;
}
