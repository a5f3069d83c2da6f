/*
 * core/interp-parse.c: the host's reader of a code context's lines
 * (core/interp-int.h). The lines are split here (a newline ends each) and
 * each is parsed by jansson; this file only checks that the object is one
 * of the driver's and takes its fields, bounded.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/interp-int.h"
#include "util/base64.h"
#include "util/redact-int.h"

#define REDACTED "<redacted>"

/*
 * One escape of HTML/XML (&quot; &#39; &#x27; &lt; &gt; &amp; &apos;) or
 * of JSON (\" \\ \/ \n \t \r \uXXXX below 0x80) at s[i]: the byte it
 * stands for in *c, its length returned; 0 when there is none.
 */
static size_t unescape1(const char *s, size_t n, size_t i, char *c)
{
	static const struct {
		const char *e;
		char c;
	} named[] = {{"&quot;", '"'}, {"&apos;", '\''}, {"&lt;", '<'},
		     {"&gt;", '>'},   {"&amp;", '&'},	{NULL, 0}};
	size_t left = n - i;

	if (s[i] == '&') {
		for (size_t k = 0; named[k].e; k++) {
			size_t l = strlen(named[k].e);
			if (left >= l && memcmp(s + i, named[k].e, l) == 0)
				return (*c = named[k].c), l;
		}
		if (left >= 4 && s[i + 1] == '#') {
			int hex = s[i + 2] == 'x' || s[i + 2] == 'X';
			unsigned v = 0;
			size_t j = i + 2 + (size_t)hex;
			for (; j < n && j < i + 8; j++) {
				char d = s[j];
				if (d >= '0' && d <= '9')
					v = v * (hex ? 16 : 10) + (unsigned)(d - '0');
				else if (hex && ((d | 0x20) >= 'a' && (d | 0x20) <= 'f'))
					v = v * 16 + (unsigned)((d | 0x20) - 'a' + 10);
				else
					break;
			}
			if (j < n && s[j] == ';' && j > i + 2 + (size_t)hex && v > 0 && v < 0x80)
				return (*c = (char)v), j + 1 - i;
		}
		return 0;
	}
	if (s[i] == '\\' && left >= 2) {
		switch (s[i + 1]) {
		case '"':
		case '\\':
		case '/':
			return (*c = s[i + 1]), 2;
		case 'n':
			return (*c = '\n'), 2;
		case 't':
			return (*c = '\t'), 2;
		case 'r':
			return (*c = '\r'), 2;
		case 'u': {
			unsigned v = 0;
			if (left < 6)
				return 0;
			for (size_t j = i + 2; j < i + 6; j++) {
				char d = (char)(s[j] | 0x20);
				if (s[j] >= '0' && s[j] <= '9')
					v = v * 16 + (unsigned)(s[j] - '0');
				else if (d >= 'a' && d <= 'f')
					v = v * 16 + (unsigned)(d - 'a' + 10);
				else
					return 0;
			}
			if (v == 0 || v >= 0x80)
				return 0;
			return (*c = (char)v), 6;
		}
		default:
			return 0;
		}
	}
	return 0;
}

/*
 * Marks in m what a value's occurrence covers in the unescaped view of s
 * (HTML entities and JSON escapes undone): a value with '"', '<' or '\' in
 * it is written escaped in an HTML table or a JSON text. Returns 0 or -1.
 */
static int
mark_unescaped(struct sbx__redact_scope *scope, const char *s, size_t n, unsigned char *m)
{
	char *view = malloc(n ? n : 1);
	size_t *from = malloc((n ? n : 1) * sizeof(size_t)), v = 0, i = 0;
	unsigned char *vm = NULL;
	int rc = -1;

	if (!view || !from)
		goto out;
	while (i < n) {
		char c;
		size_t l = unescape1(s, n, i, &c);
		from[v] = i;
		view[v++] = l ? c : s[i];
		i += l ? l : 1;
	}
	vm = calloc(v ? v : 1, 1);
	if (!vm || sbx__redact_mark(scope, view, v, vm, NULL) < 0)
		goto out;
	for (size_t k = 0; k < v; k++)
		if (vm[k]) {
			size_t end = k + 1 < v ? from[k + 1] : n;
			memset(m + from[k], 1, end - from[k]);
		}
	rc = 0;
out:
	free(view);
	free(from);
	free(vm);
	return rc;
}

char *sbx__interp_redact(
	struct sbx__redact_scope *scope, const char *s, size_t n, size_t *out_n, int *hit)
{
	unsigned char *m = NULL;
	size_t o = 0, marked = 0;
	char *r;

	*hit = 0;
	if (sbx__redact_any(scope)) {
		m = calloc(n ? n : 1, 1);
		if (!m || sbx__redact_mark(scope, s, n, m, NULL) < 0 ||
		    ((memchr(s, '&', n) || memchr(s, '\\', n)) &&
		     mark_unescaped(scope, s, n, m) < 0)) {
			free(m);
			return NULL;
		}
		for (size_t i = 0; i < n; i++)
			marked += m[i];
	}
	/* Each marked run becomes REDACTED: at most one per marked byte. */
	r = malloc(n + marked * (sizeof(REDACTED) - 1) + 1);
	if (!r) {
		free(m);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (m && m[i]) {
			if (i == 0 || !m[i - 1]) {
				memcpy(r + o, REDACTED, sizeof(REDACTED) - 1);
				o += sizeof(REDACTED) - 1;
			}
			*hit = 1;
			continue;
		}
		r[o++] = s[i];
	}
	r[o] = '\0';
	*out_n = o;
	free(m);
	return r;
}

void sbx__interp_parser_init(struct sbx__interp_parser *p,
			     sbx_code_result *res,
			     uint64_t cap,
			     struct sbx__redact_scope *scope)
{
	memset(p, 0, sizeof(*p));
	if (cap == 0 || cap > SBX_MAX_OUTPUT)
		cap = SBX_MAX_OUTPUT;
	p->cap = cap;
	p->res = res;
	p->scope = scope;
	p->line.cap = SBX_INTERP_LINE_MAX;
	p->out[0].cap = p->out[1].cap = (size_t)cap;
}

void sbx__interp_parser_done(struct sbx__interp_parser *p)
{
	sbx__buf_clear(&p->line);
	sbx__buf_clear(&p->out[0]);
	sbx__buf_clear(&p->out[1]);
}

static int
add_item(struct sbx__interp_parser *p, const char *mime, char *data, size_t len, int main)
{
	sbx_code_result *r = p->res;
	sbx_display_item *it;

	if (r->n_items >= SBX_INTERP_ITEMS_MAX || p->item_bytes + len > p->cap) {
		r->truncated = 1;
		free(data);
		return 0;
	}
	if (r->n_items == p->items_alloc) {
		size_t na = p->items_alloc ? p->items_alloc * 2 : 8;
		void *ni = realloc(r->items, na * sizeof(*r->items));
		if (!ni) {
			free(data);
			return SBX_ENOMEM;
		}
		r->items = ni;
		p->items_alloc = na;
	}
	it = &r->items[r->n_items];
	it->mime = strdup(mime);
	if (!it->mime) {
		free(data);
		return SBX_ENOMEM;
	}
	it->data = (unsigned char *)data;
	it->len = len;
	it->is_result = main;
	r->n_items++;
	p->item_bytes += len;
	return 0;
}

static int known_mime(const char *m)
{
	static const char *const ok[] = {
		"text/plain",	    "text/html",     "image/png",  "image/svg+xml",
		"application/json", "text/markdown", "text/latex", NULL};

	for (size_t i = 0; ok[i]; i++)
		if (strcmp(m, ok[i]) == 0)
			return 1;
	return 0;
}

/* A PNG: base64 decoded; one holding a secret becomes a note. */
static int add_png(struct sbx__interp_parser *p, const char *b64, size_t n, int main)
{
	size_t len = 0, rn;
	unsigned char *bytes = malloc(sbx__base64_decoded_max(n) + 1);
	unsigned char *m;
	int rc, hit = 0;
	char *t;

	if (!bytes)
		return SBX_ENOMEM;
	if (sbx__base64_decode(bytes, &len, b64, n, 0) < 0) {
		free(bytes);
		p->res->malformed++;
		return 0;
	}
	bytes[len] = 0;
	if (sbx__redact_any(p->scope)) {
		m = calloc(len ? len : 1, 1);
		if (!m || sbx__redact_mark(p->scope, bytes, len, m, NULL) < 0) {
			free(m);
			free(bytes);
			return SBX_ENOMEM;
		}
		for (size_t i = 0; i < len && !hit; i++)
			hit = m[i];
		free(m);
	}
	if (!hit)
		return add_item(p, "image/png", (char *)bytes, len, main);
	free(bytes);
	t = sbx__interp_redact(NULL, "<redacted: a PNG that held a secret>", 36, &rn, &rc);
	if (!t)
		return SBX_ENOMEM;
	return add_item(p, "text/plain", t, rn, main);
}

static int on_display(struct sbx__interp_parser *p, json_t *o)
{
	json_t *data = json_object_get(o, "data"), *v;
	int main = json_is_true(json_object_get(o, "main")), rc, hit;
	const char *mime;
	size_t n;
	char *t;

	if (!json_is_object(data))
		return (p->res->malformed++, 0);
	json_object_foreach(data, mime, v)
	{
		if (!json_is_string(v) || strlen(mime) > SBX_INTERP_MIME_MAX || !known_mime(mime)) {
			p->res->malformed++;
			continue;
		}
		if (strcmp(mime, "image/png") == 0) {
			rc = add_png(p, json_string_value(v), json_string_length(v), main);
		} else {
			t = sbx__interp_redact(p->scope, json_string_value(v),
					       json_string_length(v), &n, &hit);
			if (!t)
				return SBX_ENOMEM;
			if (main && strcmp(mime, "text/plain") == 0 && !p->res->text &&
			    !(p->res->text = strdup(t))) {
				free(t);
				return SBX_ENOMEM;
			}
			rc = add_item(p, mime, t, n, main);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int set_str(struct sbx__interp_parser *p, char **dst, json_t *v)
{
	size_t n;
	int hit;

	if (*dst || !json_is_string(v))
		return 0;
	*dst = sbx__interp_redact(p->scope, json_string_value(v), json_string_length(v), &n, &hit);
	return *dst ? 0 : SBX_ENOMEM;
}

static int on_out(struct sbx__interp_parser *p, json_t *o)
{
	json_t *s = json_object_get(o, "s"), *d = json_object_get(o, "d");
	int stream = json_is_integer(s) ? (int)json_integer_value(s) : 0, hit, rc = 0;
	struct sbx__buf *b;
	size_t n;
	char *t;

	if ((stream != 1 && stream != 2) || !json_is_string(d))
		return (p->res->malformed++, 0);
	t = sbx__interp_redact(p->scope, json_string_value(d), json_string_length(d), &n, &hit);
	if (!t)
		return SBX_ENOMEM;
	b = &p->out[stream - 1];
	if (sbx__buf_append(b, t, n) < 0)
		rc = SBX_ENOMEM;
	if (b->truncated)
		p->res->truncated = 1;
	if (rc == 0 && p->cb && !p->canceled && n && p->cb(stream, t, n, p->payload) != 0)
		p->canceled = 1;
	free(t);
	return rc;
}

static int on_line(struct sbx__interp_parser *p, const char *line, size_t len)
{
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	const char *t = json_string_value(json_object_get(o, "t"));
	sbx_code_result *r = p->res;
	json_t *v;
	int rc = 0;

	if (!json_is_object(o) || !t) {
		r->malformed++;
	} else if (strcmp(t, "out") == 0) {
		rc = on_out(p, o);
	} else if (strcmp(t, "display") == 0) {
		rc = on_display(p, o);
	} else if (strcmp(t, "err") == 0) {
		if (r->error_name)
			r->malformed++;
		else if ((rc = set_str(p, &r->error_name, json_object_get(o, "name"))) == 0 &&
			 (rc = set_str(p, &r->error_value, json_object_get(o, "value"))) == 0)
			rc = set_str(p, &r->error_traceback, json_object_get(o, "tb"));
	} else if (strcmp(t, "end") == 0 && !p->saw_end) {
		const char *st = json_string_value(json_object_get(o, "status"));
		v = json_object_get(o, "n");
		p->saw_end = 1;
		if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		    json_integer_value(v) <= UINT32_MAX)
			r->execution_count = (unsigned int)json_integer_value(v);
		if (st && strcmp(st, "ok") == 0)
			r->status = SBX_CODE_OK;
		else if (st && strcmp(st, "interrupted") == 0)
			r->status = SBX_CODE_INTERRUPTED;
		else if (st && strcmp(st, "dead") == 0)
			p->dead = 1;
		else
			r->status = SBX_CODE_ERROR;
	} else if (strcmp(t, "truncated") == 0) {
		r->truncated = 1;
	} else if (strcmp(t, "deadline") == 0) {
		p->deadline = 1;
	} else if (strcmp(t, "dead") == 0) {
		p->dead = 1;
	} else {
		r->malformed++;
	}
	json_decref(o);
	return rc;
}

int sbx__interp_feed(struct sbx__interp_parser *p, const void *data, size_t len)
{
	const char *s = data;
	int rc;

	while (len) {
		const char *nl = memchr(s, '\n', len);
		size_t take = nl ? (size_t)(nl - s) : len;

		if (!p->skipping) {
			if (sbx__buf_append(&p->line, s, take) < 0)
				return SBX_ENOMEM;
			if (p->line.truncated) {
				/* Past the bound: the whole line is dropped. */
				p->skipping = 1;
				p->res->truncated = 1;
				p->res->malformed++;
				sbx__buf_clear(&p->line);
				p->line.cap = SBX_INTERP_LINE_MAX;
			}
		}
		if (nl) {
			if (!p->skipping && p->line.len) {
				rc = on_line(p, p->line.data, p->line.len);
				if (rc < 0)
					return rc;
			}
			p->skipping = 0;
			sbx__buf_clear(&p->line);
			p->line.cap = SBX_INTERP_LINE_MAX;
			take++;
		}
		s += take;
		len -= take;
	}
	return 0;
}

int sbx__interp_finish(struct sbx__interp_parser *p)
{
	sbx_code_result *r = p->res;
	size_t n;
	int hit;

	if (p->line.len || p->skipping)
		r->malformed++;
	sbx__buf_clear(&p->line);
	/* Once more over each whole stream: a secret split between two of the
	 * cell's writes is caught here (the callback saw the parts). */
	for (int i = 0; i < 2; i++) {
		char **dst = i ? &r->stderr_data : &r->stdout_data;
		size_t *dlen = i ? &r->stderr_len : &r->stdout_len;

		*dst = sbx__interp_redact(p->scope, p->out[i].data ? p->out[i].data : "",
					  p->out[i].len, &n, &hit);
		if (!*dst)
			return SBX_ENOMEM;
		*dlen = n;
		sbx__buf_clear(&p->out[i]);
	}
	return 0;
}
