/*
 * cli/dclient.h: the command's calls to the local daemon (cli/dclient.c),
 * which cli/run.c and cli/manage.c use when cli_daemon_open() finds one,
 * and its frame I/O, which the daemon (cli/daemon.c) shares.
 */
#ifndef SBX_CLI_DCLIENT_H
#define SBX_CLI_DCLIENT_H

#include <jansson.h>

#include "cli/cli.h"
#include "cli/dproto.h"

/* Returned, instead of an exit status, when a signal cut a call short, or
 * when the output callback asked to stop (the connection is then closed,
 * which ends the run). Nothing has been printed. */
#define CLI_DAEMON_INTERRUPTED (-2)
#define CLI_DAEMON_CANCELED (-3)

/* n bytes from fd: 0, -1 (end or error), -2 (EINTR with a signal pending). */
int cli_dread_full(int fd, void *buf, size_t n);
/* One frame to fd (MSG_NOSIGNAL): 0 or -1. */
int cli_dsend_frame(int fd, enum cli_dtype type, const void *data, size_t len);

/*
 * The route of o's command: *fd a connection to the daemon, or -1 for the
 * direct path. Returns 0, or an exit status after printing (a named daemon
 * that does not answer, or an engine-side choice given with one).
 */
int cli_daemon_open(const struct cli_opts *o, int *fd);

/* The requests, or NULL when the protocol cannot carry o (not UTF-8): the
 * caller then takes the direct path. */
json_t *cli_daemon_create_request(const struct cli_opts *o);
json_t *cli_daemon_exec_request(const struct cli_opts *o, uint64_t timeout_ms);

/* create: *reply the daemon's answer (sandbox_id, backend, tier, tenant,
 * spans_dropped). req is taken. */
int cli_daemon_create(const struct cli_opts *o, int fd, json_t *req, json_t **reply);

/*
 * exec: streams in (a descriptor, or -1: no stdin), passes each output chunk
 * to cb, and fills r (stdout/stderr kept only under --json; the caller frees
 * them) and info, which point into *reply (the caller frees it). req is
 * taken.
 */
int cli_daemon_exec(const struct cli_opts *o,
		    int fd,
		    json_t *req,
		    int in,
		    sbx_output_cb cb,
		    void *payload,
		    sbx_result *r,
		    struct cli_dexec_info *info,
		    json_t **reply);

/* exec on fd and its report (cli/report.c): what a direct exec prints of a
 * run, from the daemon's answer. req is taken. Returns the exit status. */
int cli_exec_daemon(const struct cli_opts *o, int fd, json_t *req);

/* kill: on a connection of its own to the daemon cli_daemon_open() chose.
 * -1 with *code and msg (the daemon's message, or why it did not answer). */
int cli_daemon_kill(const char *id, int *code, char *msg, size_t size);
/* As cli_daemon_kill, for op "kill", "pause" or "resume"; max_ms is a
 * pause's bound (0: the daemon sends none, and the ceiling applies). */
int cli_daemon_on(
	const char *id, const char *op, uint64_t max_ms, int *code, char *msg, size_t size);

/* list: *rows the array of sandboxes (o->tenant's, or all). */
int cli_daemon_list(const struct cli_opts *o, int fd, json_t **rows);

#endif
