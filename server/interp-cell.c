/*
 * server/interp-cell.c: a cell of the code interpreter's API (port 49999,
 * server/interp.c routes it): POST /execute's body, the context it names
 * (a default one a language, created on first use, "e2b-default-python" or
 * "-bash"), its run on a worker thread in the box's busy slot, and its
 * stream of JSON lines as the SDK (npm @e2b/code-interpreter 2.8.0) reads
 * them: stdout and stderr as the cell writes, then its results (the
 * library's display items grouped as the SDK's Result, PNG in base64, JSON
 * parsed), its error (name, value, traceback), number_of_executions and
 * end_of_execution.
 *
 * libmicrohttpd's content reader drains the queued lines; a client that
 * leaves (the SDK's timeoutMs aborts the request) gets its cell
 * interrupted (sbx_context_interrupt() from the reader's thread, which the
 * worker waits out before it gives the slot back): the context keeps its
 * state and the next cell runs. A cell's own deadline is the policy's
 * run_code timeout, or the sandbox's remaining life if shorter; past it the
 * library interrupts it and the stream ends with an error named
 * TimeoutError.
 *
 * env_vars of a cell are given to the library as secrets: set in the
 * context's environment for that cell and the ones after it, and redacted
 * from every part of every result while the sandbox lives (the box keeps
 * the objects until it is freed, at most ISECRETS_MAX). The library redacts
 * each write of the stream on its own; the box also keeps the values (at
 * most IVALS_MAX), so that a value written in pieces is redacted across
 * the join (stream_feed_locked()). The body (at most 1
 * MiB) is parsed by jansson in parse_execute(), pure and fuzzed by
 * tests/fuzz/fuzz_e2bci.c.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"
#include "util/base64.h"
#include "util/json-text.h"

#define ICELL_QUEUE_MAX (1u << 20)
#define DEFAULT_PREFIX "e2b-default-"

/* ===== The box's contexts ===== */

/* The handle of a context by name (mu held); NULL: none kept. */
struct sbxs_ictx *sbxs_ictx_find_locked(struct sbxs_box *b, const char *name)
{
	for (struct sbxs_ictx *x = b->ictxs; x; x = x->next)
		if (strcmp(sbx_context_name(x->h), name) == 0)
			return x;
	return NULL;
}

int sbxs_ictx_count_locked(struct sbxs_box *b)
{
	int n = 0;

	for (struct sbxs_ictx *x = b->ictxs; x; x = x->next)
		n++;
	return n;
}

void sbxs_ictx_free(struct sbxs_ictx *x)
{
	sbx_context_free(x->h);
	free(x->cwd);
	free(x);
}

/* ===== Requests (pure: bytes in, fields out) ===== */

struct exec_req {
	json_t *root;
	const char *code;
	size_t code_len;
	const char *context_id; /* NULL: none */
	const char *language;	/* normalized; NULL: none */
	json_t *env;		/* an object of strings, or NULL */
};

/* E2B's language names as the library's: python (also python3, the
 * default) and bash (also sh); NULL for the others. */
const char *sbxs_interp_language(const char *s)
{
	if (!s || strcmp(s, "python") == 0 || strcmp(s, "python3") == 0)
		return "python";
	if (strcmp(s, "bash") == 0 || strcmp(s, "sh") == 0)
		return "bash";
	return NULL;
}

/* Whether name is a context id of the library's form. */
int sbxs_interp_id_ok(const char *s, size_t n)
{
	if (n < 1 || n > 64)
		return 0;
	for (size_t k = 0; k < n; k++) {
		char ch = s[k];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

/* The body of POST /execute: code, context_id, language, env_vars. 0, or
 * -1 with err (out->root is then NULL). */
static int
parse_execute(const char *body, size_t len, struct exec_req *out, char *err, size_t esize)
{
	static const char *const keys[] = {"code", "context_id", "language", "env_vars", NULL};
	json_error_t je;
	json_t *j, *v, *val;
	const char *bad, *k;

	memset(out, 0, sizeof(*out));
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, esize, "the body is not JSON: %s", je.text);
		return -1;
	}
	if (!json_is_object(j)) {
		snprintf(err, esize, "the body must be a JSON object");
		goto fail;
	}
	if ((bad = sbxs_unknown_key(j, keys))) {
		snprintf(err, esize, "unknown field '%.64s' (code, context_id, language, env_vars)",
			 bad);
		goto fail;
	}
	v = json_object_get(j, "code");
	if (!json_is_string(v)) {
		snprintf(err, esize, "code must be a string");
		goto fail;
	}
	out->code = json_string_value(v);
	out->code_len = json_string_length(v);
	v = json_object_get(j, "context_id");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) ||
		    !sbxs_interp_id_ok(json_string_value(v), json_string_length(v))) {
			snprintf(err, esize,
				 "context_id must be a context's id (1 to 64 of [A-Za-z0-9_-])");
			goto fail;
		}
		out->context_id = json_string_value(v);
	}
	v = json_object_get(j, "language");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			snprintf(err, esize, "language must be a string");
			goto fail;
		}
		out->language = sbxs_interp_language(json_string_value(v));
		if (!out->language) {
			snprintf(err, esize,
				 "language '%.64s' is not served by this server (python, bash)",
				 json_string_value(v));
			goto fail;
		}
	}
	if (out->context_id && out->language) {
		snprintf(err, esize, "Only one of context_id or language can be provided");
		goto fail;
	}
	v = json_object_get(j, "env_vars");
	if (v && !json_is_null(v)) {
		if (!sbxs_string_map(v)) {
			snprintf(err, esize, "env_vars must be an object of strings");
			goto fail;
		}
		if (json_object_size(v) > SBX_SECRETS_MAX) {
			snprintf(err, esize, "env_vars has more than %d names", SBX_SECRETS_MAX);
			goto fail;
		}
		json_object_foreach(v, k, val)
		{
			(void)val;
			if (!*k) {
				snprintf(err, esize, "env_vars has an empty name");
				goto fail;
			}
		}
		if (json_object_size(v))
			out->env = v;
	}
	out->root = j;
	return 0;
fail:
	json_decref(j);
	return -1;
}

/* ===== Replies ===== */

/* The code interpreter's errors are plain text, as its server's. */
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_interp_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	struct MHD_Response *r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_MUST_COPY);
	if (r)
		MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	return sbxs_queue(c, status, r);
}

unsigned sbxs_interp_status(int rc)
{
	switch (rc) {
	case SBX_EINVALID:
		return 400;
	case SBX_ENOTFOUND:
		return 404;
	case SBX_EDENIED:
		return 403;
	case SBX_ETOOBIG:
		return 413;
	case SBX_EUNSUPPORTED:
		return 501;
	default:
		return 500;
	}
}

/* The handle of context name, kept in the box (in the busy slot): the one
 * kept, or opened; a default one (lang not NULL) is created when missing.
 * 0, or a library code with its message in the library's last error. */
int sbxs_ictx_get(struct sbxs_box *b, const char *name, const char *lang, sbx_context **out)
{
	struct sbxs_server *srv = b->srv;
	struct sbxs_ictx *x;
	sbx_context *h = NULL;
	int rc;

	pthread_mutex_lock(&srv->mu);
	x = sbxs_ictx_find_locked(b, name);
	pthread_mutex_unlock(&srv->mu);
	if (x) {
		*out = x->h;
		return 0;
	}
	rc = sbx_context_open(&h, b->s, name);
	if (rc == SBX_ENOTFOUND && lang) {
		sbx_context_options o = SBX_CONTEXT_OPTIONS_INIT;

		o.language = lang;
		o.name = name;
		rc = sbx_context_create(&h, b->s, &o);
	}
	if (rc < 0)
		return rc;
	x = calloc(1, sizeof(*x));
	if (!x) {
		sbx_context_free(h);
		return SBX_ENOMEM;
	}
	x->h = h;
	pthread_mutex_lock(&srv->mu);
	if (sbxs_ictx_count_locked(b) >= ICTX_MAX) {
		/* Past the bound the handle is used once and dropped. */
		pthread_mutex_unlock(&srv->mu);
		free(x);
		*out = h;
		return 1;
	}
	x->next = b->ictxs;
	b->ictxs = x;
	pthread_mutex_unlock(&srv->mu);
	*out = h;
	return 0;
}

/* The busy slot for a request of a client that waits: the box's end bounds it. */
enum MHD_Result sbxs_interp_slot_refused(struct MHD_Connection *c, struct sbxs_box *b)
{
	return sbxs_reply_json(c, 502,
			       json_pack("{s:s, s:s, s:i}", "sandboxId", b->id, "message",
					 "The sandbox was not found", "code", 502));
}

/* ===== A cell and its stream ===== */

struct icell {
	struct sbxs_box *box; /* a reference */
	int refs;	      /* the worker's and the response's */
	pthread_cond_t cv;
	sbx_context *h;
	int h_kept; /* h is the box's (else the worker frees it) */
	char *code;
	size_t code_len;
	sbx_secrets *sec; /* this cell's env_vars, given to the box after */
	uint64_t timeout_ms;
	int fd;
	struct sbxs_frame *qh, *qt, *cur;
	size_t qbytes, cur_off;
	int eos, reader_done, running, interrupting, interrupted;
	char *pend[2]; /* stdout, stderr: what may begin a known value */
	size_t plen[2];
};

static void icell_free(struct icell *ce)
{
	struct sbxs_frame *f, *next;

	for (f = ce->qh; f; f = next) {
		next = f->next;
		free(f);
	}
	free(ce->cur);
	for (int k = 0; k < 2; k++) {
		if (ce->pend[k])
			explicit_bzero(ce->pend[k], ce->plen[k]);
		free(ce->pend[k]);
	}
	if (ce->code)
		explicit_bzero(ce->code, ce->code_len);
	free(ce->code);
	sbx_secrets_free(ce->sec);
	if (!ce->h_kept)
		sbx_context_free(ce->h);
	pthread_cond_destroy(&ce->cv);
	if (ce->box)
		sbxs_box_unref(ce->box);
	free(ce);
}

static void icell_unref(struct icell *ce)
{
	struct sbxs_server *srv = ce->box->srv;
	int last;

	pthread_mutex_lock(&srv->mu);
	last = --ce->refs == 0;
	pthread_mutex_unlock(&srv->mu);
	if (last)
		icell_free(ce);
}

/* Queues one line (mu held); a line nobody will read is dropped. */
static void push_locked(struct icell *ce, json_t *j)
{
	struct sbxs_frame *f;
	char *s;
	size_t n;

	if (!j)
		return;
	s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(j);
	if (!s || ce->reader_done) {
		free(s);
		return;
	}
	n = strlen(s);
	f = malloc(sizeof(*f) + n + 1);
	if (f) {
		f->next = NULL;
		f->len = n + 1;
		memcpy(f->data, s, n);
		f->data[n] = '\n';
		if (ce->qt)
			ce->qt->next = f;
		else
			ce->qh = f;
		ce->qt = f;
		ce->qbytes += f->len;
	}
	free(s);
	pthread_cond_broadcast(&ce->cv);
}

static json_t *now_json(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return sbxs_rfc3339((int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000);
}

/* Any bytes as a JSON string (invalid UTF-8 replaced, NUL kept). */
static json_t *bytes_json(const char *data, size_t len)
{
	json_t *j = sbx__json_text(data, len, NULL);

	return j ? j : json_string("");
}

/* Replaces, in place, every whole known value in buf[0..*n) (of room cap)
 * by the redaction mark, which may be longer than the value: a replacement
 * without room is not made (the caller gives three times the text). */
static void replace_values_locked(struct sbxs_box *b, char *buf, size_t *n, size_t cap)
{
	static const char mark[] = "<redacted>";
	const size_t ml = sizeof(mark) - 1;

	for (size_t k = 0; k < b->n_ivals; k++) {
		const char *v = b->ivals[k];
		size_t vl = b->ival_len[k], at = 0;
		char *hit;

		while (at < *n && (hit = memmem(buf + at, *n - at, v, vl))) {
			size_t off = (size_t)(hit - buf);

			if (*n - vl + ml > cap)
				break; /* no room: cannot happen, see the caller */
			memmove(buf + off + ml, buf + off + vl, *n - off - vl);
			memcpy(buf + off, mark, ml);
			*n = *n - vl + ml;
			at = off + ml;
		}
	}
}

/* How many bytes at the end of buf[0..n) begin a known value: they are held
 * until the next write shows whether the value follows. */
static size_t held_tail_locked(struct sbxs_box *b, const char *buf, size_t n)
{
	size_t hold = 0;

	for (size_t k = 0; k < b->n_ivals; k++) {
		const char *v = b->ivals[k];
		size_t vl = b->ival_len[k];
		size_t from = n >= vl ? n - vl + 1 : 0;

		for (size_t i = from; i < n && n - i > hold; i++)
			if (buf[i] == v[0] && memcmp(buf + i, v, n - i) == 0) {
				hold = n - i;
				break;
			}
	}
	return hold;
}

/*
 * A write of the cell (mu held): the library redacts each write on its
 * own, so a value written in two flushed pieces would pass in pieces. The
 * text is joined to what was held of the stream before, the box's known
 * values (every env_vars value given to its cells) are replaced across the
 * join, and what may begin a value is held for the next write (or the
 * end). Returns the text to send (malloc'd, *out_len), or NULL.
 */
static char *
stream_feed_locked(struct icell *ce, int s, const char *data, size_t len, size_t *out_len)
{
	struct sbxs_box *b = ce->box;
	size_t n = ce->plen[s] + len, cap = n * 3 + 16, hold;
	char *buf = malloc(cap), *rest = NULL;

	if (!buf)
		return NULL;
	if (ce->plen[s])
		memcpy(buf, ce->pend[s], ce->plen[s]);
	if (len)
		memcpy(buf + ce->plen[s], data, len);
	replace_values_locked(b, buf, &n, cap);
	hold = data ? held_tail_locked(b, buf, n) : 0;
	if (hold) {
		rest = malloc(hold);
		if (rest)
			memcpy(rest, buf + n - hold, hold);
		else
			hold = 0;
	}
	if (ce->pend[s])
		explicit_bzero(ce->pend[s], ce->plen[s]);
	free(ce->pend[s]);
	ce->pend[s] = rest;
	ce->plen[s] = hold;
	*out_len = n - hold;
	return buf;
}

static void push_text_locked(struct icell *ce, int s, const char *text, size_t n)
{
	if (n)
		push_locked(ce, json_pack("{s:s, s:o, s:o}", "type", s ? "stderr" : "stdout",
					  "text", bytes_json(text, n), "timestamp", now_json()));
}

static void cell_output(int stream, const char *data, size_t len, void *payload)
{
	struct icell *ce = payload;
	struct sbxs_server *srv = ce->box->srv;
	int s = stream == SBX_STREAM_STDERR;
	size_t n;
	char *text;

	pthread_mutex_lock(&srv->mu);
	text = stream_feed_locked(ce, s, data, len, &n);
	if (text) {
		push_text_locked(ce, s, text, n);
		explicit_bzero(text, n);
		free(text);
	}
	while (ce->qbytes > ICELL_QUEUE_MAX && !ce->reader_done && !ce->box->retired)
		sbxs_wait_until(&ce->cv, &srv->mu, sbx__mono_ms() + 1000);
	pthread_mutex_unlock(&srv->mu);
}

/* What is held of the streams goes out at the cell's end (mu held). */
static void streams_flush_locked(struct icell *ce)
{
	for (int s = 0; s < 2; s++) {
		size_t n;
		char *text;

		if (!ce->plen[s])
			continue;
		text = stream_feed_locked(ce, s, NULL, 0, &n);
		if (text) {
			push_text_locked(ce, s, text, n);
			explicit_bzero(text, n);
			free(text);
		}
	}
}

static int on_cell_output(int stream, const char *data, size_t len, void *payload)
{
	cell_output(stream, data, len, payload);
	return 0;
}

/* A MIME type as the SDK's Result field; NULL: not one it knows. */
static const char *mime_field(const char *mime)
{
	static const char *const map[][2] = {
		{"text/plain", "text"},	       {"text/html", "html"},
		{"text/markdown", "markdown"}, {"image/svg+xml", "svg"},
		{"image/png", "png"},	       {"image/jpeg", "jpeg"},
		{"application/pdf", "pdf"},    {"text/latex", "latex"},
		{"application/json", "json"},  {"application/javascript", "javascript"},
	};

	for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
		if (strcmp(mime, map[k][0]) == 0)
			return map[k][1];
	return NULL;
}

/* One item's value as the SDK reads it: PNG and JPEG in base64, JSON
 * parsed (text when it does not parse), the others as text. */
static json_t *item_value(const sbx_display_item *it)
{
	if (strcmp(it->mime, "image/png") == 0 || strcmp(it->mime, "image/jpeg") == 0) {
		char *s = malloc(sbx__base64_encoded_len(it->len) + 1);
		json_t *j;

		if (!s)
			return NULL;
		sbx__base64_encode(s, it->data, it->len);
		j = json_string(s);
		free(s);
		return j;
	}
	if (strcmp(it->mime, "application/json") == 0) {
		json_t *j = json_loadb((const char *)it->data, it->len,
				       JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);

		if (j)
			return j;
	}
	return bytes_json((const char *)it->data, it->len);
}

/*
 * The display items as the SDK's results: consecutive items of one kind
 * (the value's, or displayed) form one result until a MIME type repeats
 * (the library gives each display call's forms in a row, each type once).
 */
static json_t *results_json(const sbx_code_result *r)
{
	json_t *all = json_array(), *cur = NULL;
	int cur_main = -1;

	for (size_t k = 0; all && k < r->n_items; k++) {
		const sbx_display_item *it = &r->items[k];
		const char *field = mime_field(it->mime);

		if (!field)
			continue;
		if (!cur || cur_main != (it->is_result != 0) || json_object_get(cur, field)) {
			if (cur)
				json_array_append_new(all, cur);
			cur_main = it->is_result != 0;
			cur = json_pack("{s:s, s:b}", "type", "result", "is_main_result", cur_main);
			if (!cur)
				break;
		}
		json_object_set_new(cur, field, item_value(it));
	}
	if (cur)
		json_array_append_new(all, cur);
	return all;
}

/* The lines after a cell's output: results, error, number, end (mu held). */
static void push_end_locked(struct icell *ce, int rc, const sbx_code_result *r, const char *msg)
{
	if (rc < 0) {
		push_locked(ce, json_pack("{s:s, s:s, s:o, s:s}", "type", "error", "name",
					  "UnexpectedEndOfExecution", "value", sbxs_jtext(msg),
					  "traceback", ""));
	} else {
		json_t *res = results_json(r), *v;
		size_t k;

		json_array_foreach(res, k, v) push_locked(ce, json_incref(v));
		json_decref(res);
		if (r->status == SBX_CODE_TIMEOUT) {
			char why[160];

			snprintf(why, sizeof(why),
				 "the cell passed its deadline of %llu ms and was interrupted; "
				 "the context keeps its state",
				 (unsigned long long)ce->timeout_ms);
			push_locked(ce, json_pack("{s:s, s:s, s:s, s:o}", "type", "error", "name",
						  "TimeoutError", "value", why, "traceback",
						  sbxs_jtext(r->error_traceback ? r->error_traceback
										: "")));
		} else if (r->status == SBX_CODE_RESTARTED) {
			push_locked(ce, json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name",
						  "ContextRestarting", "value",
						  "the context was lost and started again: its "
						  "state is gone",
						  "traceback", ""));
		} else if (r->error_name) {
			push_locked(ce, json_pack("{s:s, s:o, s:o, s:o}", "type", "error", "name",
						  sbxs_jtext(r->error_name), "value",
						  sbxs_jtext(r->error_value ? r->error_value : ""),
						  "traceback",
						  sbxs_jtext(r->error_traceback ? r->error_traceback
										: "")));
		}
		push_locked(ce, json_pack("{s:s, s:I}", "type", "number_of_executions",
					  "execution_count", (json_int_t)r->execution_count));
	}
	push_locked(ce, json_pack("{s:s}", "type", "end_of_execution"));
	ce->eos = 1;
	pthread_cond_broadcast(&ce->cv);
}

/* Interrupts the cell if it runs (any thread but the worker's). */
static void icell_interrupt(struct icell *ce)
{
	struct sbxs_server *srv = ce->box->srv;
	sbx_context *h;

	pthread_mutex_lock(&srv->mu);
	if (!ce->running || ce->interrupted) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	ce->interrupted = ce->interrupting = 1;
	h = ce->h;
	pthread_mutex_unlock(&srv->mu);
	if (sbx_context_interrupt(h) < 0)
		srv->warn("serve: sandbox %s: cannot interrupt a cell whose client left: %s",
			  ce->box->id, sbx_error_last()->message);
	pthread_mutex_lock(&srv->mu);
	ce->interrupting = 0;
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&srv->mu);
}

/* The worker: the cell runs in the busy slot the request took for it. */
static void *icell_main(void *arg)
{
	struct icell *ce = arg;
	struct sbxs_box *b = ce->box;
	struct sbxs_server *srv = b->srv;
	sbx_code_options o = SBX_CODE_OPTIONS_INIT;
	sbx_code_result *r = NULL;
	char msg[1024] = "";
	int rc;

	o.timeout_ms = ce->timeout_ms;
	o.on_output = on_cell_output;
	o.payload = ce;
	o.secrets = ce->sec;
	pthread_mutex_lock(&srv->mu);
	ce->running = 1;
	pthread_mutex_unlock(&srv->mu);
	rc = sbx_context_run(&r, ce->h, ce->code, ce->code_len, &o);
	if (rc < 0)
		snprintf(msg, sizeof(msg), "%s", sbx_error_last()->message);
	pthread_mutex_lock(&srv->mu);
	ce->running = 0;
	while (ce->interrupting)
		pthread_cond_wait(&ce->cv, &srv->mu);
	if (ce->sec && b->n_isecrets < ISECRETS_MAX) {
		/* Redacted while the sandbox lives, as they stay in its environment. */
		b->isecrets[b->n_isecrets++] = ce->sec;
		ce->sec = NULL;
	}
	streams_flush_locked(ce);
	push_end_locked(ce, rc, r, msg);
	pthread_mutex_unlock(&srv->mu);
	sbx_code_result_free(r);
	sbxs_box_release(b, rc);
	icell_unref(ce);
	pthread_mutex_lock(&srv->mu);
	srv->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* libmicrohttpd's content reader: the queued lines as the cell makes them;
 * a client gone while it waits gets its cell interrupted. */
static ssize_t icell_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct icell *ce = cls;
	struct sbxs_server *srv = ce->box->srv;

	(void)pos;
	pthread_mutex_lock(&srv->mu);
	for (;;) {
		if (!ce->cur && ce->qh) {
			ce->cur = ce->qh;
			ce->qh = ce->qh->next;
			if (!ce->qh)
				ce->qt = NULL;
			ce->cur_off = 0;
		}
		if (ce->cur) {
			size_t left = ce->cur->len - ce->cur_off, k = left < max ? left : max;

			memcpy(buf, ce->cur->data + ce->cur_off, k);
			ce->cur_off += k;
			if (ce->cur_off == ce->cur->len) {
				ce->qbytes -= ce->cur->len;
				free(ce->cur);
				ce->cur = NULL;
				pthread_cond_broadcast(&ce->cv);
			}
			pthread_mutex_unlock(&srv->mu);
			return (ssize_t)k;
		}
		if (ce->eos) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		sbxs_wait_until(&ce->cv, &srv->mu, sbx__mono_ms() + 1000);
		if (ce->qh || ce->eos)
			continue;
		/* A client of this API never half-closes: a FIN is its leaving. */
		if (sbxs_client_gone(ce->fd)) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

static void icell_done(void *cls)
{
	struct icell *ce = cls;
	struct sbxs_server *srv = ce->box->srv;
	int gone;

	pthread_mutex_lock(&srv->mu);
	ce->reader_done = 1;
	gone = !ce->eos;
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&srv->mu);
	if (gone)
		icell_interrupt(ce);
	icell_unref(ce);
}

/* The cell's secrets from env_vars; 0, or -1 with err. */
static int cell_secrets(json_t *env, sbx_secrets **out, char *err, size_t esize)
{
	const char *k;
	json_t *v;

	*out = NULL;
	if (!env)
		return 0;
	if (sbx_secrets_new(out) < 0) {
		snprintf(err, esize, "out of memory");
		return -1;
	}
	json_object_foreach(env, k, v)
	{
		if (sbx_secrets_add(*out, k, json_string_value(v), json_string_length(v)) < 0) {
			snprintf(
				err, esize,
				"env_vars %.64s: %s (a cell's env_vars are secrets on this server: "
				"%d to %d bytes, redacted from its output)",
				k, sbx_error_last()->message, SBX_SECRET_MIN_LEN,
				SBX_SECRET_MAX_LEN);
			sbx_secrets_free(*out);
			*out = NULL;
			return -1;
		}
	}
	return 0;
}

/* Keeps copies of a cell's env_vars values in its box, for the stream's
 * joins (stream_feed_locked()); one already kept is not kept twice. 0, or
 * -1 past IVALS_MAX values (or out of memory). */
static int keep_values(struct sbxs_box *b, json_t *env)
{
	struct sbxs_server *srv = b->srv;
	const char *k;
	json_t *v;
	int rc = 0;

	pthread_mutex_lock(&srv->mu);
	json_object_foreach(env, k, v)
	{
		const char *val = json_string_value(v);
		size_t n = json_string_length(v), i;
		char *copy;

		for (i = 0; i < b->n_ivals; i++)
			if (b->ival_len[i] == n && memcmp(b->ivals[i], val, n) == 0)
				break;
		if (i < b->n_ivals)
			continue;
		if (b->n_ivals >= IVALS_MAX || !(copy = malloc(n))) {
			rc = -1;
			break;
		}
		memcpy(copy, val, n);
		b->ivals[b->n_ivals] = copy;
		b->ival_len[b->n_ivals++] = n;
	}
	pthread_mutex_unlock(&srv->mu);
	return rc;
}

enum MHD_Result
sbxs_interp_execute(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	struct sbxs_box *b = rq->box;
	const union MHD_ConnectionInfo *ci;
	struct exec_req er;
	char err[1024], name[80];
	struct MHD_Response *r;
	struct icell *ce;
	pthread_attr_t attr;
	pthread_t th;
	uint64_t now, t;
	int rc, started;

	if (parse_execute(rq->body, rq->len, &er, err, sizeof(err)) < 0)
		return sbxs_interp_error(c, 400, "%s", err);
	ce = calloc(1, sizeof(*ce));
	if (!ce || !(ce->code = malloc(er.code_len + 1))) {
		free(ce);
		json_decref(er.root);
		return sbxs_interp_error(c, 500, "out of memory");
	}
	sbxs_cond_init(&ce->cv);
	memcpy(ce->code, er.code, er.code_len);
	ce->code_len = er.code_len;
	pthread_mutex_lock(&srv->mu);
	rc = er.env && b->n_isecrets >= ISECRETS_MAX;
	pthread_mutex_unlock(&srv->mu);
	if (rc) {
		json_decref(er.root);
		icell_free(ce);
		return sbxs_interp_error(
			c, 400,
			"env_vars: %d cells of this sandbox were given env_vars, the bound "
			"of this server (they stay set in their contexts)",
			ISECRETS_MAX);
	}
	if (cell_secrets(er.env, &ce->sec, err, sizeof(err)) < 0) {
		json_decref(er.root);
		icell_free(ce);
		return sbxs_interp_error(c, 400, "%s", err);
	}
	if (er.env && keep_values(b, er.env) < 0) {
		json_decref(er.root);
		icell_free(ce);
		return sbxs_interp_error(
			c, 400,
			"env_vars: this sandbox's cells were given more than %d values, "
			"the bound of this server",
			IVALS_MAX);
	}
	if (er.context_id)
		snprintf(name, sizeof(name), "%s", er.context_id);
	else
		snprintf(name, sizeof(name), DEFAULT_PREFIX "%s",
			 er.language ? er.language : "python");
	json_decref(er.root);
	if (sbxs_box_acquire(b, 0) < 0) {
		icell_free(ce);
		return sbxs_interp_slot_refused(c, b);
	}
	rc = sbxs_ictx_get(b, name,
			   strncmp(name, DEFAULT_PREFIX, strlen(DEFAULT_PREFIX)) == 0
				   ? name + strlen(DEFAULT_PREFIX)
				   : NULL,
			   &ce->h);
	if (rc < 0) {
		snprintf(err, sizeof(err), "%s", sbx_error_last()->message);
		sbxs_box_release(b, rc);
		icell_free(ce);
		if (rc == SBX_ENOTFOUND)
			return sbxs_interp_error(c, 404, "Context %s not found", name);
		return sbxs_interp_error(c, sbxs_interp_status(rc),
					 "cannot reach the context %s: %s", name, err);
	}
	ce->h_kept = rc == 0;
	/* The policy's run_code timeout, or what is left of the sandbox's life. */
	now = sbx__mono_ms();
	t = sbx_policy_timeout_ms(sbx_sandbox_policy(b->s), SBX_TIMEOUT_RUN_CODE);
	if (b->end_mono > now && b->end_mono - now < t)
		t = b->end_mono - now;
	ce->timeout_ms = t < 100 ? 100 : t;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	ce->fd = ci ? ci->connect_fd : -1;
	ce->refs = 2;
	pthread_mutex_lock(&srv->mu);
	b->refs++;
	ce->box = b;
	srv->workers++;
	pthread_mutex_unlock(&srv->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&th, &attr, icell_main, ce) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		pthread_mutex_lock(&srv->mu);
		srv->workers--;
		push_end_locked(ce, -1, NULL, "cannot start a thread");
		ce->refs--;
		pthread_mutex_unlock(&srv->mu);
		sbxs_box_release(b, 0);
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK_MAX, icell_read, ce,
					      icell_done);
	if (!r) {
		icell_done(ce);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
	return sbxs_queue(c, 200, r);
}
