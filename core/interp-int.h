/*
 * core/interp-int.h: the host's reader of a code context's driver
 * (core/interp-driver.py), without I/O, so it can be fuzzed alone.
 *
 * The driver's lines reach the host as the stdout of a cell's run; the
 * sandbox writes them, so each one is hostile: a line is at most
 * SBX_INTERP_LINE_MAX bytes (longer ones are dropped whole), it must be one
 * JSON object of the driver's protocol, display items are at most
 * SBX_INTERP_ITEMS_MAX, and what is kept is bounded by the output cap.
 * Anything else is counted in malformed and dropped.
 */
#ifndef SBX_CORE_INTERP_INT_H
#define SBX_CORE_INTERP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sandboxio.h>

#include "util/buf.h"

#define SBX_INTERP_LINE_MAX (64u << 20)
#define SBX_INTERP_ITEMS_MAX 256u
#define SBX_INTERP_MIME_MAX 127u

struct sbx__redact_scope;

struct sbx__interp_parser {
	struct sbx__buf line;		 /* the line being received */
	int skipping;			 /* the line passed its bound: drop up to the newline */
	uint64_t cap;			 /* bytes kept of each output stream and of all items */
	uint64_t item_bytes;		 /* bytes held by items so far */
	struct sbx__redact_scope *scope; /* redacts every decoded part; NULL: none */
	sbx_output_cb cb;		 /* stream text as it comes (redacted) */
	void *payload;
	int canceled; /* cb returned non-zero */
	struct sbx__buf out[2];
	sbx_code_result *res; /* text, error, items, status fields */
	size_t items_alloc;
	int saw_end;
	int deadline; /* the client interrupted the cell at its deadline */
	int dead;     /* the client said the context was lost */
};

/* res must be zeroed; cap 0 means the SBX_MAX_OUTPUT bound. */
void sbx__interp_parser_init(struct sbx__interp_parser *p,
			     sbx_code_result *res,
			     uint64_t cap,
			     struct sbx__redact_scope *scope);
/* Feeds bytes of the client's stdout. Returns 0, or SBX_ENOMEM. */
int sbx__interp_feed(struct sbx__interp_parser *p, const void *data, size_t len);
/* Ends the input: a partial last line is malformed; moves stdout/stderr
 * into res. Returns 0, or SBX_ENOMEM. */
int sbx__interp_finish(struct sbx__interp_parser *p);
void sbx__interp_parser_done(struct sbx__interp_parser *p);

/* A copy of s[0..n) with every value of scope (and of the process) replaced
 * by "<redacted>", NUL-terminated; *out_n its length. *hit: whether any was.
 * NULL when memory ran out. */
char *sbx__interp_redact(
	struct sbx__redact_scope *scope, const char *s, size_t n, size_t *out_n, int *hit);

#endif
