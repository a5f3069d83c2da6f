/*
 * cli/output.c: error reports and JSON text.
 *
 * Every failure is reported once, as "sandboxio: <message>" on stderr and,
 * under --json, also as the one JSON object on stdout
 * ({"status":"error","error":...,"code":...}), so scripts read stdout and
 * people read stderr. The program's output is arbitrary bytes, and JSON
 * strings must be UTF-8: invalid sequences are replaced by U+FFFD (one per
 * maximal ill-formed subpart, as Unicode recommends) and the caller marks
 * the field "lossy-utf8". JSON is always produced by jansson.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"

static void print_json_error(int code, const char *msg)
{
	json_t *o = json_pack("{s:s, s:s, s:i}", "status", "error", "error", msg, "code", code);

	if (!o) /* msg was not UTF-8: the library's messages may quote input */
		o = json_pack("{s:s, s:o, s:i}", "status", "error", "error",
			      cli_json_text(msg, strlen(msg), NULL), "code", code);
	cli_print_json(o);
}

static void report(const struct cli_opts *o, int code, const char *msg)
{
	fprintf(stderr, "sandboxio: %s\n", msg);
	fflush(stderr);
	if (o && o->json)
		print_json_error(code, msg);
}

void cli_print_lib_error(const struct cli_opts *o)
{
	const sbx_error *e = sbx_error_last();
	int code = e->code ? e->code : SBX_ERROR;

	report(o, code, e->message[0] ? e->message : sbx_strerror(code));
}

void cli_print_error(const struct cli_opts *o, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(o, code, msg);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("sandboxio: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

int cli_print_json(void *json)
{
	json_t *j = json;
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int rc = 0;

	json_decref(j);
	if (!text) {
		fputs("sandboxio: cannot encode the JSON answer\n", stderr);
		return -1;
	}
	if (puts(text) == EOF || fflush(stdout) == EOF)
		rc = -1;
	free(text);
	return rc;
}

/*
 * Length of the well-formed UTF-8 sequence at s (Unicode Table 3-7), or 0
 * with *bad set to the length of its maximal ill-formed subpart (at least 1).
 */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		*bad = 1;
		return 0;
	}
	for (size_t i = 1; i <= need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return need + 1;
}

/*
 * Copies src into dst (which holds at least 3 * len bytes), replacing each
 * ill-formed subpart with U+FFFD. Returns the bytes written; *lossy is set
 * when anything was replaced.
 */
size_t cli_utf8_lossy(char *dst, const unsigned char *src, size_t len, int *lossy)
{
	size_t i = 0, o = 0, bad = 0;

	while (i < len) {
		size_t n = utf8_seq(src + i, len - i, &bad);

		if (n) {
			memcpy(dst + o, src + i, n);
			o += n;
			i += n;
			continue;
		}
		memcpy(dst + o, "\xEF\xBF\xBD", 3);
		o += 3;
		i += bad;
		if (lossy)
			*lossy = 1;
	}
	return o;
}

/* A JSON string of arbitrary bytes (NULs included); lossy tells whether
 * anything had to be replaced. Returns a json_t *, or NULL without memory. */
void *cli_json_text(const char *data, size_t len, int *lossy)
{
	json_t *s;
	char *fixed;
	size_t n;

	if (lossy)
		*lossy = 0;
	if (!data)
		return json_string("");
	s = json_stringn(data, len);
	if (s)
		return s;
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	fixed = malloc(len * 3 + 1);
	if (!fixed)
		return NULL;
	n = cli_utf8_lossy(fixed, (const unsigned char *)data, len, lossy);
	s = json_stringn(fixed, n);
	free(fixed);
	return s;
}
