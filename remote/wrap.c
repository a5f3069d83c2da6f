/*
 * remote/wrap.c: the per-run caps of remote backends (remote/remote-int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "remote/remote-int.h"
#include "util/error-int.h"

#define WRAP_HEAD 6 /* prlimit, four limits, "--" */

int sbx__remote_argv(char ***out, const sbx_policy *p, const char *const *argv)
{
	char lim[4][48];
	size_t n = 0;
	char **v;

	if (!argv || !argv[0] || !argv[0][0])
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "run: empty argv");
	while (argv[n])
		n++;
	snprintf(lim[0], sizeof(lim[0]), "--nofile=%lld:%lld",
		 (long long)p->limit[SBX_LIMIT_NOFILE], (long long)p->limit[SBX_LIMIT_NOFILE]);
	snprintf(lim[1], sizeof(lim[1]), "--nproc=%lld:%lld", (long long)p->limit[SBX_LIMIT_PIDS],
		 (long long)p->limit[SBX_LIMIT_PIDS]);
	snprintf(lim[2], sizeof(lim[2]), "--core=0:0");
	snprintf(lim[3], sizeof(lim[3]), "--fsize=%lld:%lld", (long long)p->limit[SBX_LIMIT_DISK],
		 (long long)p->limit[SBX_LIMIT_DISK]);
	v = calloc(WRAP_HEAD + n + 1, sizeof(*v));
	if (!v)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_OS, "run: out of memory");
	v[0] = strdup("prlimit");
	for (size_t i = 0; i < 4; i++)
		v[1 + i] = strdup(lim[i]);
	v[5] = strdup("--");
	for (size_t i = 0; i < n; i++)
		v[WRAP_HEAD + i] = strdup(argv[i]);
	for (size_t i = 0; i < WRAP_HEAD + n; i++) {
		if (!v[i]) {
			sbx__remote_argv_free(v);
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_OS, "run: out of memory");
		}
	}
	*out = v;
	return 0;
}

void sbx__remote_argv_free(char **v)
{
	if (!v)
		return;
	for (char **q = v; *q; q++)
		free(*q);
	free(v);
}
