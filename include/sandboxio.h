/*
 * sandboxio.h: the public API of libsandboxio.
 *
 * Runs untrusted code in sandboxes that are secure by default, on the local
 * Docker Engine. Anything not declared under include/sandboxio/ is not API.
 *
 *	sbx_backend *b = NULL; sbx_policy *p = NULL; sbx_sandbox *s = NULL;
 *	sbx_result *r = NULL;
 *	const char *argv[] = {"python3", "-c", "print(6*7)", NULL};
 *	if (sbx_backend_open(&b, "docker", NULL) == 0 && sbx_policy_new(&p) == 0 &&
 *	    sbx_sandbox_create(&s, b, p) == 0 && sbx_sandbox_run(&r, s, argv, NULL) == 0)
 *		fwrite(r->stdout_data, 1, r->stdout_len, stdout);
 *	else
 *		fprintf(stderr, "%s\n", sbx_error_last()->message);
 *	sbx_result_free(r); sbx_sandbox_close(s); sbx_policy_free(p); sbx_backend_free(b);
 */
#ifndef SANDBOXIO_H
#define SANDBOXIO_H

#include "sandboxio/common.h"
#include "sandboxio/config.h"
#include "sandboxio/errors.h"
#include "sandboxio/interp.h"
#include "sandboxio/policy.h"
#include "sandboxio/pool.h"
#include "sandboxio/sandbox.h"
#include "sandboxio/secret.h"

#endif
