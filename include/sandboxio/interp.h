/*
 * sandboxio/interp.h: code contexts, a stateful code interpreter in a live
 * sandbox.
 *
 * A context is one long-lived interpreter process inside the sandbox
 * (python, or a bash process) whose variables, imports and working
 * directory persist from one cell to the next, as in a notebook. Several
 * contexts may live in one sandbox; each has its own process and
 * namespace. The process runs under the sandbox's init like any run (the
 * sandbox user, its seccomp filter, no capabilities, the sandbox's limits)
 * and ends at the sandbox's deadline at the latest. It outlives the handle:
 * sbx_context_free() leaves it running, and sbx_context_open() finds it
 * again by name, from this process or another (the sandboxio command's
 * `code`). Each cell is a run of the sandbox (audited and traced as
 * run_code) that talks to the context over a unix socket inside the
 * sandbox; nothing listens on a network. docs/interp.md describes the
 * protocol and what a cell can do to other contexts (the same user runs
 * them all: they are separate, not isolated from each other).
 *
 * Only the docker backend has contexts; e2b and modal return
 * SBX_EUNSUPPORTED. Like runs, one sandbox's contexts are used by one
 * thread at a time, except sbx_context_interrupt().
 */
#ifndef SANDBOXIO_INTERP_H
#define SANDBOXIO_INTERP_H

#include "common.h"
#include "sandbox.h"
#include "secret.h"

SBX_BEGIN_DECL

typedef struct sbx_context sbx_context;

typedef struct {
	unsigned int version;
	/** "python" (NULL means "python") or "bash". Copied. */
	const char *language;
	/** The context's working directory, absolute; NULL: the policy's. */
	const char *cwd;
	/** 1 to 64 of [A-Za-z0-9_-]; NULL: "ctx-" and 16 random hex digits.
	 *  Copied. */
	const char *name;
} sbx_context_options;

#define SBX_CONTEXT_OPTIONS_VERSION 1
#define SBX_CONTEXT_OPTIONS_INIT                                                                   \
	{                                                                                          \
		.version = SBX_CONTEXT_OPTIONS_VERSION                                             \
	}

/**
 * Starts a context in a live sandbox. It returns once the process is
 * started; the first cell waits (within its own deadline) until the
 * context listens.
 * @param[out] out written only on success.
 * Ownership: sbx_context_close() ends the context and frees the handle;
 * sbx_context_free() frees the handle only. Either before the sandbox's.
 * Returns: 0, SBX_EINVALID (a language other than python or bash, a name
 * not of the form above or already a live context's, a relative cwd),
 * SBX_EVERSION, SBX_EUNSUPPORTED (not the docker backend), SBX_ENOTFOUND
 * (the sandbox is gone), SBX_EDENIED, SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int
sbx_context_create(sbx_context **out, sbx_sandbox *s, const sbx_context_options *opts);

/**
 * A handle on a live context of the sandbox, by name.
 * @param[out] out written only on success.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_ENOTFOUND (no live context of
 * that name), SBX_EDENIED, SBX_EUNSUPPORTED, SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_context_open(sbx_context **out, sbx_sandbox *s, const char *name);

/** The context's name. Lent for the handle's lifetime. */
SBX_EXTERN const char *sbx_context_name(const sbx_context *c);

/** The context's language, "python" or "bash". Lent for the handle's lifetime. */
SBX_EXTERN const char *sbx_context_language(const sbx_context *c);

typedef enum {
	SBX_CODE_OK = 0,	  /* the cell ran to its end */
	SBX_CODE_ERROR = 1,	  /* it raised (python) or its status was not 0 (bash) */
	SBX_CODE_INTERRUPTED = 2, /* sbx_context_interrupt() stopped it; the context lives */
	SBX_CODE_TIMEOUT = 3,	  /* its deadline passed: it was interrupted; the context lives */
	SBX_CODE_RESTARTED = 4	  /* the context was lost (it did not stop within the
				     grace after the interrupt, or its process ended)
				     and a new one was started: its state is gone */
} sbx_code_status;

/** Names a status: "ok", "error", "interrupted", "timeout", "restarted". */
SBX_EXTERN const char *sbx_code_status_name(sbx_code_status st);

/** One display item: a MIME type and its bytes. */
typedef struct {
	char *mime;	     /* "text/plain", "text/html", "image/png", "image/svg+xml",
		       "application/json", "text/markdown", "text/latex" */
	unsigned char *data; /* NUL-terminated; image/png: the PNG's bytes */
	size_t len;
	int is_result; /* a form of the last expression's value */
} sbx_display_item;

/** What a cell produced. Read-only for the caller; free with sbx_code_result_free(). */
typedef struct {
	unsigned int version;
	sbx_code_status status;
	char *stdout_data; /* NUL-terminated; never NULL */
	size_t stdout_len;
	char *stderr_data;
	size_t stderr_len;
	/** The text/plain form of the last expression's value; NULL: none
	 *  (bash, a statement, or None). */
	char *text;
	/** The error, or all NULL: the exception's class name ("ExitCode" for
	 *  a bash cell's status), its text and the formatted traceback. */
	char *error_name;
	char *error_value;
	char *error_traceback;
	/** Display items in the order the cell made them: figures left open
	 *  (PNG and SVG), display() calls, and the forms of the last value. */
	sbx_display_item *items;
	size_t n_items;
	unsigned int execution_count; /* the cell's number in its context */
	/** Non-zero when something was dropped: output past the cap, a line
	 *  from the context over its bound, an item past the items' bound. */
	int truncated;
	/** Lines from the context that were not its protocol (a cell can write
	 *  to the context's socket): dropped, counted here. */
	unsigned int malformed;
	uint64_t duration_ms;
} sbx_code_result;

/** Frees a result. ^NULL is a harmless no-op. */
SBX_EXTERN void sbx_code_result_free(sbx_code_result *r);

typedef struct {
	unsigned int version;
	/** The cell's deadline, interrupt and grace included; 0: the policy's
	 *  run_code timeout. ^Above that timeout it is refused. */
	uint64_t timeout_ms;
	/** The cell's stdout and stderr text as it comes, redacted; its return
	 *  value is ignored (stop a cell with sbx_context_interrupt() from
	 *  another thread). NULL: none. */
	sbx_output_cb on_output;
	void *payload;
	/** Secrets set in the context's environment (os.environ) for this cell
	 *  and the ones after it (sandboxio/secret.h); NULL: none. Lent. */
	const sbx_secrets *secrets;
} sbx_code_options;

#define SBX_CODE_OPTIONS_VERSION 1
#define SBX_CODE_OPTIONS_INIT                                                                      \
	{                                                                                          \
		.version = SBX_CODE_OPTIONS_VERSION                                                \
	}

/**
 * Runs one cell in the context and waits for it. Python: every statement
 * but the last expression is executed, the last expression is evaluated
 * and its value given as text and display items (IPython's rule).
 *
 * ^At the cell's deadline less a grace (a fifth of it, at most 3 s, twice)
 * the context gets SIGINT: the cell stops with KeyboardInterrupt and the
 * status is SBX_CODE_TIMEOUT; ^a context that does not come back within the
 * grace is killed and started again (SBX_CODE_RESTARTED). ^Every part of
 * the result (streams, text, error, and the text of HTML, SVG, JSON and
 * other items) has every secret given to the sandbox replaced by
 * "<redacted>"; ^a PNG holding one of them (or an encoded form) is replaced
 * by a text/plain item saying so. A cell's own failure is in the result;
 * the call returns 0 for it.
 * @param[out] out written only on success.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_EDENIED, SBX_ENOTFOUND (the
 * sandbox is gone), SBX_EUNSUPPORTED, SBX_ECANCELED, SBX_EENGINE,
 * SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_context_run(sbx_code_result **out,
			       sbx_context *c,
			       const char *code,
			       size_t code_len,
			       const sbx_code_options *opts);

/**
 * Sends SIGINT to the context's process, from any thread (a cell in
 * progress on another thread then ends SBX_CODE_INTERRUPTED).
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_ENOTFOUND (the context is not
 * alive), SBX_EDENIED, SBX_EUNSUPPORTED, SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_context_interrupt(sbx_context *c);

/**
 * Kills the context's process and starts a new one of the same name,
 * language and cwd: its state is gone.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_EUNSUPPORTED, SBX_ENOTFOUND
 * (the sandbox is gone), SBX_EDENIED, SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_context_restart(sbx_context *c);

/**
 * Kills the context's process and frees the handle. ^NULL is a harmless
 * no-op. ^The handle is freed even when the kill fails.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_ENOTFOUND (it was not alive),
 * SBX_EDENIED, SBX_EUNSUPPORTED, SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT,
 * SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_context_close(sbx_context *c);

/** Frees the handle and leaves the context alive. ^NULL is a harmless no-op. */
SBX_EXTERN void sbx_context_free(sbx_context *c);

/** Called once per live context; return non-zero to stop the listing. */
typedef int (*sbx_context_list_cb)(const char *name, const char *language, void *payload);

/**
 * Lists the sandbox's live contexts, by name.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_EUNSUPPORTED, SBX_ENOTFOUND,
 * SBX_EDENIED, SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED,
 * SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_context_list(sbx_sandbox *s, sbx_context_list_cb cb, void *payload);

SBX_END_DECL

#endif
