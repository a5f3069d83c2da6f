/*
 * cli/daemon.h: what the command `sandboxio daemon` (cli/daemon.c: the
 * socket, its modes, the start and the stop) and its work
 * (cli/daemon-conn.c: connections, requests, sandboxes, audit) share.
 */
#ifndef SBX_CLI_DAEMON_H
#define SBX_CLI_DAEMON_H

#include <pthread.h>
#include <stddef.h>

#include "cli/cli.h"

struct cli_dbox;

/* The daemon's state; mu guards boxes and conns, never held across a
 * library call. */
struct cli_dstate {
	pthread_mutex_t mu;
	sbx_backend *b;
	const sbx_config *cfg;
	struct cli_dbox *boxes;
	int conns, stopping;
	int audit_fd; /* --audit-log, or -1 */
};
extern struct cli_dstate cli_dstate;

/* The backend's audit callback: the event with the client's "peer" added,
 * written whole to audit_fd and synced. */
int cli_daemon_audit_line(const char *line, size_t len, void *payload);

/* Accepts on *(int *)arg until stopping is set and the socket shut down,
 * a thread per connection. */
void *cli_daemon_accept_main(void *arg);

/* Leaves every sandbox held to its lifetime (call with no connection left). */
void cli_daemon_boxes_free(void);

#endif
