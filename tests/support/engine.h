/*
 * tests/support/engine.h: what the contract tests need besides the library:
 * an independent look at the Engine (inspect, list) over its socket, so a
 * test checks what dockerd holds, not what the library says it asked for.
 */
#ifndef SBX_TESTS_ENGINE_H
#define SBX_TESTS_ENGINE_H

#include <jansson.h>
#include <sandboxio.h>

/* The engine's unix socket: DOCKER_HOST's when it is unix://PATH, else dockerd's. */
const char *t_engine_socket(void);
/* GET path on the Engine; returns the decoded JSON (caller decrefs) or NULL,
 * with *status set (0 when the daemon could not be reached). */
json_t *t_engine_get(const char *path, long *status);
/* Any request on the Engine with an optional JSON body; returns the decoded
 * answer (may be NULL for empty bodies) with *status set. */
json_t *t_engine_request(const char *method, const char *path, const char *body, long *status);
/* Any request on the Engine; returns the answer's body as text (caller
 * frees; "" when empty, NULL when the daemon could not be reached), for
 * answers that are not one JSON document (/events) or must be searched as
 * bytes. */
char *t_engine_text(const char *method, const char *path, long *status);
/* Number of containers (running or not) carrying label key=value. */
int t_engine_count_label(const char *label);
/* 1 when the daemon answers and the default image is present; tests skip otherwise. */
int t_engine_ready(void);
/* Opens the docker backend with the in-tree init; fails the test on error. */
sbx_backend *t_backend(void);
/* Runs argv (a shell line if argv has one entry "sh -c"); fails the test on a
 * library error. */
sbx_result *t_run(sbx_sandbox *s, const char *shell_line, const sbx_run_options *o);
/* A policy with a unique tenant for this test process. */
sbx_policy *t_policy(void);
/* The fixture most suites share: a sandbox of p on b and, when x is not
 * NULL, a second handle to it (sbx_sandbox_open). On failure it says why
 * on stderr and returns -1; t_unmake() then frees what was made. */
/* Runs argv in s; fails the test unless it exits 0. Returns its stdout
 * (free() it). */
char *t_run_ok(sbx_sandbox *s, const char *const *argv);
int t_make(sbx_backend *b, sbx_policy *p, sbx_sandbox **s, sbx_sandbox **x);
/* Detaches x, closes s, frees p and b; each may be NULL. */
void t_unmake(sbx_backend *b, sbx_policy *p, sbx_sandbox *s, sbx_sandbox *x);
/* The tier the suite runs at: $SBX_TEST_TIER, container when unset. */
sbx_tier t_tier(void);
const char *t_tenant(void);

#endif
