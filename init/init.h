/*
 * init/init.h: internal interfaces shared by the parts of sbx-init.
 *
 * libseccomp is confined to init/seccomp.c and libcap to init/caps.c so the
 * static binary's dependency surface is easy to audit.
 */
#ifndef SBX_INIT_INIT_H
#define SBX_INIT_INIT_H

#include <stddef.h>
#include <sys/types.h>

/* Exit codes of the init itself. */
#define SBX_INIT_EXIT_USAGE 125
#define SBX_INIT_EXIT_TIMEOUT 124
#define SBX_INIT_EXIT_TERM 143
/* The host stopped reading our frames. */
#define SBX_INIT_EXIT_HOST_GONE 1

/* Writes "sbx-init: <message>\n" to fd 2 with a single write(2), no stdio. */
void sbx_init_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Drops every capability from the bounding, ambient, inheritable, permitted
 * and effective sets and verifies they are empty. Returns 0, or -1 after
 * printing why.
 */
int sbx_init_drop_caps(void);

/* Loads the extra seccomp layer. Returns 0, or -1 after printing why. */
int sbx_init_seccomp(void);

/* PR_SET_NO_NEW_PRIVS, capability drop and seccomp: the common lockdown. */
int sbx_init_lockdown(void);

/*
 * Sends SIGKILL to every descendant of the calling process. Returns the
 * number of processes signalled.
 */
size_t sbx_init_kill_descendants(void);

/*
 * Kills the calling process's whole descendant tree (and the process group
 * pgid first, if positive) and reaps until no child is left or about
 * budget_ms have passed. When main_pid is reaped, its wait status is stored
 * in *main_status and *main_reaped is set. sigchld_fd, if >= 0, is a
 * signalfd for SIGCHLD used to sleep between rounds. Returns 0 when no child
 * is left, -1 when the budget ran out first.
 */
int sbx_init_kill_tree(pid_t pgid,
		       pid_t main_pid,
		       int *main_status,
		       int *main_reaped,
		       int sigchld_fd,
		       int budget_ms);

/* Modes; each returns the process exit code. */
int sbx_init_pid1(int argc, char **argv);
int sbx_init_run(int argc, char **argv);

#endif
