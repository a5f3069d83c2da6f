/*
 * cli/output.c: error reports and JSON output.
 *
 * Every failure is reported once, as "sandboxio: <message>" on stderr and,
 * under --json, also as the one JSON object on stdout
 * ({"status":"error","error":...,"code":...}), so scripts read stdout and
 * people read stderr. The program's output is arbitrary bytes, and JSON
 * strings must be UTF-8: util/json-text.c replaces invalid sequences and
 * the caller marks the field "lossy-utf8". JSON is always produced by
 * jansson. The daemon (cli/daemon.c) reuses the command's code on its
 * clients' behalf: on its threads an error is captured, not printed, and
 * the client prints it as its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "util/json-text.h"

static void print_json_error(int code, const char *msg)
{
	json_t *o = json_pack("{s:s, s:s, s:i}", "status", "error", "error", msg, "code", code);

	if (!o) /* msg was not UTF-8: the library's messages may quote input */
		o = json_pack("{s:s, s:o, s:i}", "status", "error", "error",
			      sbx__json_text(msg, strlen(msg), NULL), "code", code);
	cli_print_json(o);
}

/* The daemon's capture of this thread's errors (cli_capture_errors()). */
static __thread struct cli_capture *capture;

void cli_capture_errors(struct cli_capture *c)
{
	if (c)
		memset(c, 0, sizeof(*c));
	capture = c;
}

static void report(const struct cli_opts *o, int code, const char *msg)
{
	if (capture) {
		if (!capture->set) {
			capture->set = 1;
			capture->code = code;
			snprintf(capture->msg, sizeof(capture->msg), "%s", msg);
		}
		return;
	}
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
