/*
 * core/tty-int.h: run options, terminals and streamed stdin (core/tty.c).
 */
#ifndef SBX_CORE_TTY_INT_H
#define SBX_CORE_TTY_INT_H

#include <sandboxio/sandbox.h>

struct sbx__run_req;
struct sbx__backend_ops;

/* The caller's run options (NULL: defaults), read as far as their version goes. */
int sbx__run_options_load(sbx_run_options *dst, const sbx_run_options *opts);
/* Fills req's root, terminal and streamed stdin from o (stdin_fd -1 when
 * not streamed), or refuses what o asks wrongly or ops cannot do. */
int sbx__run_tty_req(struct sbx__run_req *req,
		     const sbx_run_options *o,
		     const struct sbx__backend_ops *ops);
/* SBX_EINVALID unless rows and cols are both 1..4096. */
int sbx__winsize_check(unsigned int rows, unsigned int cols);

#endif
