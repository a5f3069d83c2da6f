/*
 * tests/fuzz/fuzz_serve.c: libFuzzer target for the parsers of the
 * E2B-compatible server of `sandboxio serve` (server/) that take a
 * client's bytes, each the lowest function that does: the NewSandbox body
 * (parse_create(), and its network rules, sbxs_parse_network()), the
 * metadata filter's query and its percent-decoding
 * (parse_metadata_filter(), pct_decode()), the list cursor (parse_token()),
 * RFC 3339 times (parse_rfc3339(), with the round trip of sbxs_rfc3339()
 * of server/rest-json.c), the process Start request (parse_start()), the
 * process selector (parse_selector()), Connect-Timeout-Ms
 * (parse_timeout_header()), a terminal's input and resize (SendInput's
 * ProcessInput, sbxs_pty_parse_input(), and the UpdateRequest,
 * sbxs_pty_parse_update(), server/pty.c; Start's pty is parse_start()'s),
 * envd paths (sbxs_map_path(), server/paths.c),
 * multipart uploads (sbxs_parse_multipart()), the answer of the
 * filesystem program from inside a sandbox (fs_answer(), server/fs.c), gzip
 * bodies (sbxs_gunzip()), signed URLs (sbxs_signature_check(),
 * server/sign.c) and the lines of the watch program (watch_line(),
 * server/watch.c).
 *
 * The .c files are included so that their static parsers are reached
 * without changing them; no daemon is started. Not reached: what is read
 * inline in libmicrohttpd's callbacks with a live connection (the Host
 * routing and envd port of envd_target() in server/server.c, the body
 * limits, Basic user names, and the start request's 5-byte Connect
 * envelope in sbxs_envd_start()).
 *
 * The first byte chooses the parser (modulo 16; 14 with bit 0x10 set is
 * the terminal's); the rest is its input (for multipart:
 * the Content-Type up to the first newline, then the body). Invariants
 * besides the sanitizers': a refusal says why, a mapped path is absolute,
 * cleaned and within its buffer, parsed uploads lie inside the body, and a
 * time rendered by sbxs_rfc3339() parses back to the same millisecond.
 * Once at start (LLVMFuzzerInitialize()), larger than the fuzzer's inputs:
 * an 8 MiB answer of tiny values from the filesystem program is refused
 * with jansson's heap staying under 16 MiB (parsed, it took 128 MiB).
 */
#include "server/envd.c"
#include "server/fs.c"
#include "server/process.c"
#include "server/pty.c"
#include "server/rest-create.c"
#include "server/rest-list.c"
#include "server/watch.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* jansson's heap, counted while the large answer is read. */
static size_t heap_now, heap_peak;

static void *counted_malloc(size_t n)
{
	size_t *p = malloc(n + 16);

	if (!p)
		return NULL;
	p[0] = n;
	heap_now += n;
	if (heap_now > heap_peak)
		heap_peak = heap_now;
	return p + 2;
}

static void counted_free(void *q)
{
	size_t *p = q;

	if (!p)
		return;
	p -= 2;
	heap_now -= p[0];
	free(p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t n = 8u << 20, k;
	char *big = malloc(n + 32), err[256] = "";
	struct fs_answer a;
	int rc;

	(void)argc;
	(void)argv;
	if (!big)
		abort();
	k = (size_t)sprintf(big, "{\"entries\":[0");
	while (k < n - 2) {
		big[k++] = ',';
		big[k++] = '0';
	}
	big[k++] = ']';
	big[k++] = '}';
	json_set_alloc_funcs(counted_malloc, counted_free);
	rc = fs_answer(big, k, &a, err, sizeof(err));
	fs_answer_free(&a);
	json_set_alloc_funcs(malloc, free);
	free(big);
	if (rc == 0 || !err[0] || heap_peak > (16u << 20)) {
		fprintf(stderr,
			"fs_answer of an 8 MiB answer of tiny values: rc %d, heap %zu MiB\n", rc,
			heap_peak >> 20);
		abort();
	}
	return 0;
}

static void multipart(const char *in, size_t n)
{
	const char *nl = memchr(in, '\n', n);
	char ct[256], err[256] = "";
	struct sbxs_upload ups[4];
	size_t cl;
	int k;

	if (!nl)
		return;
	cl = (size_t)(nl - in);
	if (cl >= sizeof(ct))
		return;
	memcpy(ct, in, cl);
	ct[cl] = '\0';
	{
		/* The body in a buffer of its own length, as the request holds it. */
		size_t bl = n - cl - 1;
		char *body = malloc(bl ? bl : 1);

		if (!body)
			abort();
		memcpy(body, nl + 1, bl);
		k = sbxs_parse_multipart(ct, body, bl, ups, 4, err, sizeof(err));
		if (k < 0 && !err[0])
			abort();
		for (int i = 0; i < k; i++)
			if (ups[i].data < body || ups[i].data + ups[i].len > body + bl ||
			    (ups[i].name &&
			     (ups[i].name < body || ups[i].name + ups[i].name_len > body + bl)))
				abort();
		free(body);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char bad[256] = "", err[512] = "";
	char *s;
	json_t *j;

	if (size < 1)
		return 0;
	s = strndup((const char *)data + 1, size - 1);
	if (!s)
		abort();
	j = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
	switch (data[0] % 16) {
	case 0: {
		struct sbxs_create_req cr = {0};

		if (j && parse_create(j, &cr, bad, sizeof(bad), err, sizeof(err)) < 0 && !err[0] &&
		    !bad[0])
			abort();
		break;
	}
	case 1: {
		struct sbxs_create_req cr = {0};

		if (j && sbxs_parse_network(j, &cr, bad, sizeof(bad), err, sizeof(err)) < 0 &&
		    !err[0] && !bad[0])
			abort();
		break;
	}
	case 2: {
		json_t *f = NULL;

		if (parse_metadata_filter(s, &f) == 0)
			json_decref(f);
		break;
	}
	case 3: {
		char *c = strdup(s);

		if (!c)
			abort();
		if (pct_decode(c, strlen(c), data[0] & 0x80) > (ssize_t)strlen(s))
			abort();
		free(c);
		break;
	}
	case 4: {
		int64_t started;
		char id[21];

		if (parse_token(s, &started, id) == 0 && strlen(id) != 20)
			abort();
		break;
	}
	case 5: {
		int64_t ms = 0, back = -1;

		(void)parse_rfc3339(s, &ms);
		if (size >= 7) {
			/* Any time from 1970 to 9999 renders and parses back. */
			uint64_t v = 0;
			json_t *t;

			for (size_t i = 1; i < 7; i++)
				v = v << 8 | data[i];
			ms = (int64_t)(v % 253402300800000ull);
			t = sbxs_rfc3339(ms);
			if (!t || parse_rfc3339(json_string_value(t), &back) != 0 || back != ms)
				abort();
			json_decref(t);
		}
		break;
	}
	case 6: {
		struct sbxs_proc *pr = calloc(1, sizeof(*pr));
		const char *code = NULL;

		if (!pr)
			abort();
		pthread_cond_init(&pr->cv, NULL);
		if (j && parse_start(j, pr, &code, err, sizeof(err)) < 0 && !err[0])
			abort();
		sbxs_proc_free(pr);
		break;
	}
	case 7: {
		unsigned pid = 0;
		const char *tag = NULL;

		if (j && parse_selector(j, &pid, &tag, err, sizeof(err)) < 0 && !err[0])
			abort();
		break;
	}
	case 8: {
		uint64_t ms;

		(void)parse_timeout_header(s, &ms);
		break;
	}
	case 9: {
		char out[64];

		if (sbxs_map_path(s, out, sizeof(out)) == 0) {
			size_t n = strnlen(out, sizeof(out));

			/* Absolute, cleaned: no "." or ".." segment reaches the library. */
			if (n == sizeof(out) || out[0] != '/' || strstr(out, "/../") ||
			    strstr(out, "/./") || strstr(out, "//") ||
			    (n >= 3 && strcmp(out + n - 3, "/..") == 0) ||
			    (n >= 2 && strcmp(out + n - 2, "/.") == 0))
				abort();
		}
		break;
	}
	case 10: {
		struct fs_answer a;

		/* The sandbox's answer: checked, or refused with a reason; every
		 * entry built has a path and Go's mode string. */
		if (fs_answer((const char *)data + 1, size - 1, &a, err, sizeof(err)) < 0) {
			if (!err[0] || a.entry || a.entries)
				abort();
		} else if (a.entry && (!json_is_string(json_object_get(a.entry, "path")) ||
				       !json_is_string(json_object_get(a.entry, "permissions")))) {
			abort();
		}
		fs_answer_free(&a);
		break;
	}
	case 11: {
		/* A gzip body: inflated within the bound, or refused. */
		char *out = NULL;
		size_t n = 0;
		int rc = sbxs_gunzip((const char *)data + 1, size - 1, 1u << 20, &out, &n);

		if ((rc == 0) != (out != NULL) || (rc == 0 && (n > (1u << 20) || out[n])) ||
		    (rc != 0 && n))
			abort();
		free(out);
		break;
	}
	case 12: {
		/* A signed URL's fields, one a line: path, user, signature,
		 * expiration; the token is fixed. Refusals say why. */
		char *f[4] = {NULL, NULL, NULL, NULL}, *save = NULL, *line;
		int k = 0;

		for (line = strtok_r(s, "\n", &save); line && k < 4;
		     line = strtok_r(NULL, "\n", &save))
			f[k++] = line;
		if (sbxs_signature_check(f[0] ? f[0] : "", data[0] & 0x80 ? "read" : "write",
					 f[1] ? f[1] : "", "fuzz-token", f[2], f[3], 1764633600,
					 err, sizeof(err)) < 0 &&
		    !err[0])
			abort();
		break;
	}
	case 13: {
		/* A line of the watch program: an event has its name and one of
		 * envd's five types; an errno is in range. */
		json_t *ev = NULL;
		int e = 0;
		enum wline w = watch_line((const char *)data + 1, size - 1, &ev, &e);

		if ((w == WL_EVENT) != (ev != NULL) || (w == WL_ERRNO && (e < 0 || e > 4095)))
			abort();
		json_decref(ev);
		break;
	}
	case 14:
		if (data[0] & 0x10) {
			/* A terminal's SendInput (0x20 set: ProcessInput, with a
			 * bound of 16 bytes when 0x40 is set too) or Update: a
			 * refusal says why and leaves nothing; bytes taken are
			 * within the bound; a size taken is 1 to 4096 each. */
			unsigned rows = 0, cols = 0;

			if (data[0] & 0x20) {
				unsigned char *out = (unsigned char *)"x";
				size_t n = 99, max = data[0] & 0x40 ? 16 : 1u << 20;
				int is_pty = -1, rc;

				if (!j)
					break;
				rc = sbxs_pty_parse_input(j, max, &out, &n, &is_pty, err,
							  sizeof(err));
				if (rc < 0 ? !err[0] || out || n : !out || (is_pty && n > max))
					abort();
				free(out);
			} else if (j) {
				int rc = sbxs_pty_parse_update(j, &rows, &cols, err, sizeof(err));

				if ((rc < 0 && !err[0]) || (rc == 1 && (rows < 1 || rows > 4096 ||
									cols < 1 || cols > 4096)))
					abort();
			}
			break;
		}
		multipart((const char *)data + 1, size - 1);
		break;
	default:
		multipart((const char *)data + 1, size - 1);
		break;
	}
	json_decref(j);
	free(s);
	return 0;
}
