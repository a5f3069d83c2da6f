/*
 * netpolicy/preset.c: egress presets (netpolicy/preset-int.h).
 *
 * Hand-written: the format is a few line kinds ("[NAME]", "NAME[:PORT]",
 * "*.NAME[:PORT] = NAME...", comments), every name goes through the one
 * validator of egress names (netpolicy/names.c), and every size is bounded
 * before anything is kept. The built-in text is share/sandboxio/presets/
 * egress.conf, compiled in by the Makefile (build/gen/netpolicy/presets-text.h).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio/errors.h>

#include "netpolicy/preset-int.h"
#include "util/error-int.h"

static const char builtin_text[] =
#include "netpolicy/presets-text.h"
	;

static int perr(int code, const char *origin, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(int code, const char *origin, size_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbx__error_set(code, SBX_ERRCLASS_NETPOLICY, "presets %s line %zu: %s", origin, line,
			      msg);
}

void sbx__presets_clear(struct sbx__presets *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n; i++) {
		for (size_t j = 0; j < ps->p[i].n; j++)
			free(ps->p[i].e[j].pins);
		free(ps->p[i].e);
	}
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}

const struct sbx__preset *sbx__presets_find(const struct sbx__presets *ps, const char *name)
{
	for (size_t i = 0; ps && name && i < ps->n; i++)
		if (strcmp(ps->p[i].name, name) == 0)
			return &ps->p[i];
	return NULL;
}

void sbx__presets_names(const struct sbx__presets *ps, char *dst, size_t cap)
{
	size_t o = 0;

	if (cap)
		dst[0] = '\0';
	for (size_t i = 0; ps && i < ps->n && o < cap; i++) {
		int w = snprintf(dst + o, cap - o, "%s%s", i ? ", " : "", ps->p[i].name);

		if (w < 0)
			break;
		o += (size_t)w;
	}
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* The next whitespace-separated token of s[*at..n), or 0 bytes. */
static size_t token(const char *s, size_t n, size_t *at, const char **tok)
{
	size_t b, e;

	for (b = *at; b < n && is_space(s[b]); b++)
		;
	for (e = b; e < n && !is_space(s[e]); e++)
		;
	*tok = s + b;
	*at = e;
	return e - b;
}

static int section(struct sbx__presets *ps, const char *s, size_t n, const char *origin, size_t ln)
{
	struct sbx__preset *g;
	const char *name = s + 1;
	size_t nl = n - 2;

	if (n < 2 || s[n - 1] != ']')
		return perr(SBX_EINVALID, origin, ln, "a preset name is written [NAME]");
	if (nl == 0 || nl > SBX_PRESET_NAME_MAX)
		return perr(SBX_EINVALID, origin, ln, "a preset name is 1 to %d characters",
			    SBX_PRESET_NAME_MAX);
	for (size_t i = 0; i < nl; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '-'))
			return perr(SBX_EINVALID, origin, ln,
				    "a preset name is lower-case letters, digits and '-'");
	if (ps->n && ps->p[ps->n - 1].n == 0)
		return perr(SBX_EINVALID, origin, ln, "preset [%s] has no entries",
			    ps->p[ps->n - 1].name);
	for (size_t i = 0; i < ps->n; i++)
		if (strlen(ps->p[i].name) == nl && memcmp(ps->p[i].name, name, nl) == 0)
			return perr(SBX_EINVALID, origin, ln, "preset [%.*s] appears twice",
				    (int)nl, name);
	if (ps->n >= SBX_PRESETS_MAX)
		return perr(SBX_ETOOBIG, origin, ln, "more than %d presets", SBX_PRESETS_MAX);
	g = realloc(ps->p, (ps->n + 1) * sizeof(*g));
	if (!g)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	ps->p = g;
	memset(&g[ps->n], 0, sizeof(g[ps->n]));
	memcpy(g[ps->n].name, name, nl);
	ps->n++;
	return 0;
}

/* "NAME[:PORT]" of an entry into e. */
static int
entry_name(struct sbx__preset_entry *e, const char *t, size_t tl, const char *origin, size_t ln)
{
	const char *colon = memchr(t, ':', tl);
	size_t nl = colon ? (size_t)(colon - t) : tl;
	char what[64];

	e->port = 0;
	if (colon) {
		unsigned long v = 0;
		size_t pl = tl - nl - 1;

		if (pl == 0 || pl > 5)
			return perr(SBX_EINVALID, origin, ln, "a port is a number in 1..65535");
		for (size_t i = nl + 1; i < tl; i++) {
			if (t[i] < '0' || t[i] > '9')
				return perr(SBX_EINVALID, origin, ln,
					    "a port is a number in 1..65535");
			v = v * 10 + (unsigned long)(t[i] - '0');
		}
		if (v == 0 || v > 65535)
			return perr(SBX_EINVALID, origin, ln, "a port is a number in 1..65535");
		e->port = (uint16_t)v;
	}
	snprintf(what, sizeof(what), "presets %.32s line %zu: entry", origin, ln);
	return sbx__names_parse_entry(e->name, &e->wildcard, what, t, nl);
}

static int entry(struct sbx__preset *p, const char *s, size_t n, const char *origin, size_t ln)
{
	struct sbx__preset_entry e = {0}, *g;
	const char *t;
	size_t at = 0, tl = token(s, n, &at, &t);
	int rc;

	if ((rc = entry_name(&e, t, tl, origin, ln)) < 0)
		return rc;
	tl = token(s, n, &at, &t);
	if (tl == 0 && e.wildcard)
		return perr(SBX_EINVALID, origin, ln,
			    "wildcard %s needs '= NAME...': the names pinned until the name "
			    "check runs per connection",
			    e.name);
	if (tl && (tl != 1 || t[0] != '='))
		return perr(SBX_EINVALID, origin, ln,
			    "expected '= NAME...' or the end of the line");
	if (tl && !e.wildcard)
		return perr(SBX_EINVALID, origin, ln, "'=' follows only a wildcard entry");
	while (tl && (tl = token(s, n, &at, &t)) > 0) {
		char(*pg)[SBX_NAME_BUF];
		char what[64];
		int w = 0;

		if (e.pins_n >= SBX_PRESET_PINS_MAX) {
			free(e.pins);
			return perr(SBX_ETOOBIG, origin, ln, "more than %d names for one wildcard",
				    SBX_PRESET_PINS_MAX);
		}
		pg = realloc(e.pins, (e.pins_n + 1) * sizeof(*pg));
		if (!pg) {
			free(e.pins);
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
		}
		e.pins = pg;
		snprintf(what, sizeof(what), "presets %.32s line %zu: pinned name", origin, ln);
		if ((rc = sbx__names_parse_entry(e.pins[e.pins_n], &w, what, t, tl)) < 0 ||
		    (w && (rc = perr(SBX_EINVALID, origin, ln,
				     "a pinned name is exact, not a wildcard")) < 0) ||
		    (!sbx__names_match(e.name, t, tl) &&
		     (rc = perr(SBX_EINVALID, origin, ln, "pinned name %s does not match %s",
				e.pins[e.pins_n], e.name)) < 0)) {
			free(e.pins);
			return rc;
		}
		e.pins_n++;
	}
	if (e.wildcard && e.pins_n == 0)
		return perr(SBX_EINVALID, origin, ln, "'=' with no names after it");
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].port == e.port && strcmp(p->e[i].name, e.name) == 0) {
			free(e.pins);
			return perr(SBX_EINVALID, origin, ln, "entry %s appears twice in [%s]",
				    e.name, p->name);
		}
	if (p->n >= SBX_PRESET_ENTRIES_MAX) {
		free(e.pins);
		return perr(SBX_ETOOBIG, origin, ln, "more than %d entries in [%s]",
			    SBX_PRESET_ENTRIES_MAX, p->name);
	}
	g = realloc(p->e, (p->n + 1) * sizeof(*g));
	if (!g) {
		free(e.pins);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_NETPOLICY, "out of memory");
	}
	p->e = g;
	p->e[p->n++] = e;
	return 0;
}

int sbx__presets_parse(struct sbx__presets *out, const char *text, size_t len, const char *origin)
{
	struct sbx__presets ps = {0};
	size_t pos = 0, ln = 0;
	int rc = 0;

	if (!origin)
		origin = "(text)";
	if (!out || (!text && len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY,
				      "presets: NULL argument");
	if (len > SBX_PRESET_TEXT_MAX)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_NETPOLICY,
				      "presets %s: over %d bytes", origin, SBX_PRESET_TEXT_MAX);
	if (len && memchr(text, '\0', len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY,
				      "presets %s: holds a NUL byte", origin);
	while (rc == 0 && pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos), *hash;
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		pos += n + (nl ? 1 : 0);
		ln++;
		if (n > SBX_PRESET_LINE_MAX) {
			rc = perr(SBX_EINVALID, origin, ln, "longer than %d bytes",
				  SBX_PRESET_LINE_MAX);
			break;
		}
		if ((hash = memchr(s, '#', n)))
			n = (size_t)(hash - s);
		if (n && s[n - 1] == '\r')
			n--;
		while (n && is_space(*s))
			s++, n--;
		while (n && is_space(s[n - 1]))
			n--;
		if (n == 0)
			continue;
		if (s[0] == '[')
			rc = section(&ps, s, n, origin, ln);
		else if (ps.n == 0)
			rc = perr(SBX_EINVALID, origin, ln, "an entry before any [NAME]");
		else
			rc = entry(&ps.p[ps.n - 1], s, n, origin, ln);
	}
	if (rc == 0 && ps.n && ps.p[ps.n - 1].n == 0)
		rc = perr(SBX_EINVALID, origin, ln, "preset [%s] has no entries",
			  ps.p[ps.n - 1].name);
	if (rc < 0) {
		sbx__presets_clear(&ps);
		return rc;
	}
	*out = ps;
	return 0;
}

static struct sbx__presets builtin;
static int builtin_rc;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_parse(void)
{
	builtin_rc =
		sbx__presets_parse(&builtin, builtin_text, sizeof(builtin_text) - 1, "(built in)");
}

int sbx__presets_builtin(const struct sbx__presets **out)
{
	pthread_once(&builtin_once, builtin_parse);
	if (builtin_rc < 0)
		return sbx__error_set(builtin_rc, SBX_ERRCLASS_NETPOLICY,
				      "the built-in egress presets do not parse (a build defect)");
	*out = &builtin;
	return 0;
}
