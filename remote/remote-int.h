/*
 * remote/remote-int.h: what the e2b and modal adapters share.
 *
 * A provider sets CPU and memory (or reports them from a template), but
 * neither E2B nor Modal has a control for open files, processes, core
 * dumps or file size per sandbox. Those caps are applied to every run the
 * same way: argv is started under prlimit(1) (util-linux, in every Debian
 * and Ubuntu image), whose limits the run's whole process tree inherits.
 * The limits are set as hard and soft at once, so the program cannot raise
 * them again. docs/backends.md says what this covers and what it does not.
 */
#ifndef SBX_REMOTE_REMOTE_INT_H
#define SBX_REMOTE_REMOTE_INT_H

#include <sandboxio/policy.h>

/*
 * Builds {"prlimit", "--nofile=N:N", "--nproc=P:P", "--core=0:0",
 * "--fsize=D:D", "--", argv..., NULL} from the policy's open-files,
 * processes and disk caps. *out is malloc'ed; free it with
 * sbx__remote_argv_free(). Returns 0, SBX_EINVALID (empty argv), SBX_ENOMEM.
 */
int sbx__remote_argv(char ***out, const sbx_policy *p, const char *const *argv);

/* Frees what sbx__remote_argv() made. NULL is a no-op. */
void sbx__remote_argv_free(char **v);

/* The remote backends' tables (remote/e2b/e2b.c, remote/modal/modal.c),
 * which backends/registry.c opens. */
struct sbx__backend_ops;
extern const struct sbx__backend_ops sbx__e2b_ops;
extern const struct sbx__backend_ops sbx__modal_ops;

#endif
