/*
 * tests/fuzz/fuzz_e2bci.c: libFuzzer target for the parsers of the code
 * interpreter's API of `sandboxio serve --api e2b` (port 49999,
 * server/interp.c and server/interp-cell.c) that take a client's bytes:
 * the body of POST /execute (parse_execute()), the body of POST /contexts
 * (parse_new_context()) and the path of a context's call with its method
 * (parse_context_path()); and what the stream makes of a cell's display
 * items, which a cell chooses (results_json(): the grouping into the SDK's
 * results, PNG in base64, JSON parsed back), and the join of a cell's
 * streamed writes (stream_feed_locked()), which a cell chooses too.
 *
 * The .c files are included so that their static functions are reached
 * without changing them; no daemon is started. The first byte chooses the
 * parser; the rest is its input (for a path: the method up to the first
 * newline, then the path; for display items: records of a type byte, a
 * length byte and that many bytes; for a stream: two values of a length
 * byte (4 to 19) and their bytes, then writes of a length byte and their
 * bytes). Invariants besides the sanitizers': a
 * refusal says why; a parsed /execute has its code, never both a context
 * and a language, a language the library has, and a context id of the
 * library's form; a context path's id is of that form; every result is an
 * object of type "result" whose PNG decodes back to the item's bytes; the
 * text a stream sends, whole, holds no known value however the writes
 * were cut.
 */
#include "server/interp-cell.c"
#include "server/interp.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const mimes[] = {"text/plain",    "text/html",	 "image/png",
				    "image/svg+xml", "application/json", "text/markdown",
				    "text/latex",    "image/jpeg",	 "application/x-other"};

static void fuzz_results(const uint8_t *p, size_t n)
{
	sbx_display_item items[64];
	sbx_code_result r = {0};
	json_t *all, *v;
	size_t k = 0, i;

	while (n >= 2 && k < 64) {
		size_t len = p[1] < n - 2 ? p[1] : n - 2;
		unsigned char *d = malloc(len + 1);

		if (!d)
			abort();
		memcpy(d, p + 2, len);
		d[len] = '\0';
		items[k].mime = (char *)mimes[(p[0] & 0x7f) % (sizeof(mimes) / sizeof(mimes[0]))];
		items[k].data = d;
		items[k].len = len;
		items[k].is_result = p[0] >> 7;
		k++;
		p += 2 + len;
		n -= 2 + len;
	}
	r.items = items;
	r.n_items = k;
	all = results_json(&r);
	if (!json_is_array(all))
		abort();
	json_array_foreach(all, i, v)
	{
		json_t *png = json_object_get(v, "png");

		if (!json_is_object(v) ||
		    strcmp(json_string_value(json_object_get(v, "type")), "result") != 0 ||
		    !json_is_boolean(json_object_get(v, "is_main_result")))
			abort();
		if (png) {
			const char *s = json_string_value(png);
			unsigned char *back;
			size_t blen;
			int found = 0;

			if (!s)
				abort();
			back = malloc(sbx__base64_decoded_max(strlen(s)) + 1);
			if (!back || sbx__base64_decode(back, &blen, s, strlen(s), 0) < 0)
				abort();
			for (size_t m = 0; m < k; m++)
				found |= strcmp(items[m].mime, "image/png") == 0 &&
					 items[m].len == blen &&
					 memcmp(items[m].data, back, blen) == 0;
			if (!found)
				abort();
			free(back);
		}
	}
	json_decref(all);
	for (i = 0; i < k; i++)
		free(items[i].data);
}

static void fuzz_stream(const uint8_t *p, size_t n)
{
	struct sbxs_server srv = {0};
	struct sbxs_box box = {0};
	struct icell ce = {0};
	char *sent = NULL, *text;
	size_t slen = 0, tl;

	box.srv = &srv;
	ce.box = &box;
	ce.reader_done = 1; /* push_locked() drops the lines: only the text counts */
	for (int k = 0; k < 2; k++) {
		size_t vl;

		if (n < 1)
			return;
		vl = 4 + p[0] % 16;
		if (n < 1 + vl)
			return;
		box.ivals[box.n_ivals] = (char *)p + 1;
		box.ival_len[box.n_ivals++] = vl;
		p += 1 + vl;
		n -= 1 + vl;
	}
	for (int last = 0; !last;) {
		size_t wl = 0;

		if (n >= 1) {
			wl = p[0] < n - 1 ? p[0] : n - 1;
			text = stream_feed_locked(&ce, 0, (const char *)p + 1, wl, &tl);
			p += 1 + wl;
			n -= 1 + wl;
		} else {
			text = stream_feed_locked(&ce, 0, NULL, 0, &tl);
			last = 1;
		}
		if (!text)
			abort();
		sent = realloc(sent, slen + tl + 1);
		if (!sent)
			abort();
		memcpy(sent + slen, text, tl);
		slen += tl;
		free(text);
	}
	/* A value inside the mark itself ("dact" in "<redacted>") is the mark's. */
	for (size_t k = 0; k < box.n_ivals; k++)
		if (!memmem("<redacted>", 10, box.ivals[k], box.ival_len[k]) &&
		    memmem(sent, slen, box.ivals[k], box.ival_len[k]))
			abort();
	free(sent);
	free(ce.pend[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024] = "";
	const char *body;
	size_t len;

	if (size < 1)
		return 0;
	body = (const char *)data + 1;
	len = size - 1;
	switch (data[0] % 5) {
	case 0: {
		struct exec_req er;

		if (parse_execute(body, len, &er, err, sizeof(err)) < 0) {
			if (!err[0] || er.root)
				abort();
			break;
		}
		if (!er.code || (er.context_id && er.language) ||
		    (er.language && strcmp(er.language, "python") != 0 &&
		     strcmp(er.language, "bash") != 0) ||
		    (er.context_id && !sbxs_interp_id_ok(er.context_id, strlen(er.context_id))) ||
		    (er.env && !json_is_object(er.env)))
			abort();
		json_decref(er.root);
		break;
	}
	case 1: {
		const char *lang, *cwd;
		json_t *root;

		if (parse_new_context(body, len, &root, &lang, &cwd, err, sizeof(err)) < 0) {
			if (!err[0] || root)
				abort();
			break;
		}
		if (!lang || (cwd && cwd[0] != '/'))
			abort();
		json_decref(root);
		break;
	}
	case 2: {
		char *s = strndup(body, len), *nl, id[72];
		const char *method = "GET", *path = s;

		if (!s)
			abort();
		nl = strchr(s, '\n');
		if (nl) {
			*nl = '\0';
			method = s;
			path = nl + 1;
		}
		if (parse_context_path(method, path, id, sizeof(id)) >= IOP_RESTART &&
		    !sbxs_interp_id_ok(id, strlen(id)))
			abort();
		free(s);
		break;
	}
	case 3:
		fuzz_results(data + 1, size - 1);
		break;
	default:
		fuzz_stream(data + 1, size - 1);
		break;
	}
	return 0;
}
