/*
 * core/tty.c: the run options as far as their version goes, and what runs
 * as root (as_root, for a backend that has them), with a terminal or a
 * streamed stdin need of core: their checks, and the
 * window size a caller sets while such a run goes on (sbx_sandbox_resize(),
 * in core/sandbox.c, over the backend's resize).
 */
#include <stddef.h>
#include <string.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/tty-int.h"
#include "util/error-int.h"
#include "util/frame.h"

int sbx__run_options_load(sbx_run_options *dst, const sbx_run_options *opts)
{
	size_t size = offsetof(sbx_run_options, secrets);

	memset(dst, 0, sizeof(*dst));
	dst->version = SBX_RUN_OPTIONS_VERSION;
	if (!opts)
		return 0;
	if (opts->version == 0 || opts->version > SBX_RUN_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "run options version %u is not known (1..%u)", opts->version,
				      SBX_RUN_OPTIONS_VERSION);
	if (opts->version >= 2)
		size = offsetof(sbx_run_options, pty);
	if (opts->version >= 3)
		size = offsetof(sbx_run_options, as_root);
	if (opts->version >= 4)
		size = sizeof(*dst);
	memcpy(dst, opts, size);
	return 0;
}

int sbx__winsize_check(unsigned int rows, unsigned int cols)
{
	if (rows < 1 || rows > SBX_CHAN_WINSZ_MAX || cols < 1 || cols > SBX_CHAN_WINSZ_MAX)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "a terminal's size is 1 to %u rows and columns, not %u x %u",
				      SBX_CHAN_WINSZ_MAX, rows, cols);
	return 0;
}

int sbx__run_tty_req(struct sbx__run_req *req,
		     const sbx_run_options *o,
		     const struct sbx__backend_ops *ops)
{
	req->stdin_fd = -1;
	if (o->as_root && !ops->root_runs)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "run: the %s backend cannot run a program as the sandbox's "
				      "root (as_root)",
				      ops->name);
	req->as_root = o->as_root != 0;
	/* The policy's working directory is the sandbox user's, 0700: root,
	 * without CAP_DAC_OVERRIDE, cannot enter it. */
	if (req->as_root && !o->workdir)
		req->workdir = "/";
	if (!o->pty && !o->stream_stdin) {
		if (o->pty_rows || o->pty_cols)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run: pty_rows and pty_cols need pty");
		return 0;
	}
	if (!ops->resize)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "run: the %s backend has no terminals or streamed stdin",
				      ops->name);
	if (o->stream_stdin) {
		if (req->stdin_len || o->stdin_data)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run: stream_stdin and stdin_data together");
		if (o->stdin_fd < 0)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "run: stream_stdin needs a stdin_fd, not %d",
					      o->stdin_fd);
		req->stdin_fd = o->stdin_fd;
	}
	if (o->pty) {
		req->pty = 1;
		req->rows = o->pty_rows ? o->pty_rows : 24;
		req->cols = o->pty_cols ? o->pty_cols : 80;
		return sbx__winsize_check(req->rows, req->cols);
	}
	if (o->pty_rows || o->pty_cols)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "run: pty_rows and pty_cols need pty");
	return 0;
}
