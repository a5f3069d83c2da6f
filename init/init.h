/*
 * init/init.h: internal interfaces shared by the parts of sbx-init.
 *
 * libseccomp is confined to init/seccomp.c and libcap to init/caps.c so the
 * static binary's dependency surface is easy to audit.
 *
 * The parts call one way, from the entry point down: init/sbx-init.c (main,
 * PID 1) over init/chan.c (the run channel; its requests are parsed by
 * init/request.c) over init/run.c (one supervised run) over init/lockdown.c
 * (over caps.c and seccomp.c), init/proc.c (the process tree) and
 * init/msg.c (messages, numbers), which every part uses.
 */
#ifndef SBX_INIT_INIT_H
#define SBX_INIT_INIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/frame.h"

/* Exit codes of the init itself. */
#define SBX_INIT_EXIT_USAGE 125
#define SBX_INIT_EXIT_TIMEOUT 124
#define SBX_INIT_EXIT_TERM 143
/* The host stopped reading our frames. */
#define SBX_INIT_EXIT_HOST_GONE 1
/* `sbx-init connect`: nothing listens on the port (init/connect.c). */
#define SBX_INIT_EXIT_REFUSED 122

/*
 * Parses a positive decimal integer of at most max, digits only (no sign,
 * no space, no suffix). Returns 0, or -1 and leaves *out alone.
 */
int sbx_init_parse_positive(const char *s, long long max, long long *out);

/* Writes "sbx-init: <message>\n" to fd 2 with a single write(2), no stdio. */
void sbx_init_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Closes (cloexec: marks close-on-exec) every descriptor above 2 except
 * keep (-1: none). Allocates nothing: a vfork child may call it. */
void sbx_init_fds_past_stdio(int keep, int cloexec);

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

/* Whether the kernel has no child subreapers (gVisor before 2023): a child is forked to ask. */
int sbx_init_no_subreapers(void);

/*
 * For PID 1 where the kernel has no child subreapers: SIGKILLs every child
 * of the caller that is not in keep (nkeep pids: its supervisors), with its
 * tree, unless a process without a parent (a `docker exec` run) is alive.
 * Returns the number of processes signalled.
 */
size_t sbx_init_sweep_orphans(const pid_t *keep, size_t nkeep);

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
/* `sbx-init connect PORT`: one TCP connection to the sandbox's loopback,
 * relayed over stdin and stdout (init/connect.c). */
int sbx_init_connect(int argc, char **argv);
/* A port in plain digits, 1..65535 (no sign, no leading zero); 0: not one. */
unsigned sbx_init_port_parse(const char *s);

/*
 * Supervises one program (init/run.c): starts prog (looked up in PATH, with
 * the caller's environ) in cwd (NULL: here) in its own process group as a
 * subreaper's child, relays its output as frames on fd 1, kills its whole
 * tree when it exits or at deadline_ms, and ends with one EXIT frame. Its
 * stdin is the caller's fd 0. lockdown: apply sbx_init_lockdown() first
 * (the channel's supervisors inherit PID 1's instead). Returns the exit code.
 */
int sbx_init_supervise(long long deadline_ms, const char *cwd, char **prog, int lockdown);
/* The same in two steps: what needs no request (a spare does it ahead of
 * its run), then the run. Each returns an exit code; prepare's 0 is "go on". */
int sbx_init_supervise_prepare(int lockdown);
/* A root run's user namespace (init/userns.c): uid and gid 0 there are the
 * caller's, which must not be 0. Before the lockdown, which drops the
 * capabilities the namespace gives. 0, or -1 said on stderr. */
int sbx_init_enter_root_ns(void);
int sbx_init_supervise_start(long long deadline_ms, const char *cwd, char **prog);

/*
 * A run under a pseudo-terminal: the program gets the slave as its
 * controlling terminal in a new session (stdin, stdout and stderr), the
 * supervisor relays the master's output as STDOUT frames and writes its own
 * stdin to the master. resize_fd, if >= 0, carries window sizes (4 bytes
 * each: u16 rows, u16 cols, big-endian) until end of file.
 */
struct sbx_init_tty {
	uint16_t rows, cols;
	int resize_fd;
};
int sbx_init_supervise_start_tty(long long deadline_ms,
				 const char *cwd,
				 char **prog,
				 const struct sbx_init_tty *tty);

/*
 * A spare's spec header on its control pipe (init/chan.c writes it,
 * init/spare.c reads it): u64 deadline ms, u32 argc, u32 envc, u32 spec
 * length, u32 flags (CTL_PTY), u16 rows, u16 cols. A run with a terminal
 * keeps the pipe after its spec: window sizes follow, CTL_RESIZE bytes each.
 */
#define CTL_HEAD 28
#define CTL_PTY 1u
#define CTL_RESIZE 4

/*
 * In a spare supervisor (init/spare.c): stdin from in_r, frames to
 * frames_w; waits for its spec on ctl, then runs it. End of file on ctl
 * before any byte means "not needed": it exits quietly.
 */
void sbx_init_spare_main(int in_r, int frames_w, int ctl) __attribute__((noreturn));

/* Kills every process of the sandbox (as PID 1), or every descendant elsewhere. */
void sbx_init_kill_sandbox(void);

/*
 * PID 1 with the run channel (init/chan.c): serves run requests on fd 0 and
 * answers on fd 1 (docs/protocol.md) until deadline (unix seconds), besides
 * reaping and the dead-man switch. Expects every signal blocked and the
 * lockdown applied. Returns the exit code.
 */
int sbx_init_chan_serve(long long deadline);

/* ===== The channel's request parser (init/request.c), free of I/O ===== */

/* One complete, valid run request. */
struct sbx_init_spec {
	unsigned int id;
	long long deadline_ms;
	int pty; /* run under a pseudo-terminal of rows x cols */
	uint16_t rows, cols;
	char *cwd;
	char **argv; /* NULL-terminated */
	char **env;  /* NULL-terminated NAME=VALUE, to override the init's own */
	uint32_t argc, envc, len;
	unsigned char *blob; /* owns the strings: len bytes */
	char **vec;	     /* owns the arrays */
};

/*
 * Splits a spec blob (cwd, argv, env as NUL-terminated strings) into a
 * spec that takes ownership of blob. The blob must hold exactly 1 + argc +
 * envc strings with nothing after the last, an absolute cwd, a non-empty
 * program name and NAME=VALUE entries. Returns NULL with *why set (blob is
 * then still the caller's).
 */
struct sbx_init_spec *sbx_init_spec_split(
	unsigned char *blob, uint32_t len, uint32_t argc, uint32_t envc, const char **why);
/* Wipes and frees a spec. */
void sbx_init_spec_free(struct sbx_init_spec *s);

struct sbx_init_req_ops {
	/* A valid request: start it. Takes ownership of spec. */
	void (*start)(void *arg, struct sbx_init_spec *spec);
	/* Stdin bytes of a live run, already within its window. */
	void (*stdin_data)(void *arg, unsigned int id, const unsigned char *p, size_t len);
	/* The end of a live run's stdin. */
	void (*stdin_eof)(void *arg, unsigned int id);
	/* A new window size for a live run with a terminal. */
	void (*resize)(void *arg, unsigned int id, uint16_t rows, uint16_t cols);
	/* DEADLINE: the sandbox's new deadline (unix seconds), or 0 to only
	 * ask for it; either way DEADLINE_AT is owed. */
	void (*deadline)(void *arg, uint64_t unix_s);
};

/* What the parser knows of a run id. */
struct sbx_init_slot {
	unsigned int id;
	int used;
	int eof;	  /* STDIN_EOF came */
	int pty;	  /* the run has a terminal: RESIZE is allowed */
	int finished;	  /* the init is done with the run: later stdin is dropped */
	uint32_t unacked; /* stdin bytes received and not yet consumed */
};

struct sbx_init_req {
	struct sbx__chan_decoder dec;
	const struct sbx_init_req_ops *ops;
	void *arg;
	struct sbx_init_slot slot[SBX_CHAN_RUNS_MAX];
	unsigned int pend_id; /* the run whose spec is being received, or 0 */
	struct sbx__chan_open pend;
	unsigned char *blob;
	uint32_t have;
	const char *why; /* the first violation; nothing is accepted after it */
};

void sbx_init_req_init(struct sbx_init_req *r, const struct sbx_init_req_ops *ops, void *arg);
/* Feeds host bytes. Returns 0, or -1 on a violation (r->why says which). */
int sbx_init_req_feed(struct sbx_init_req *r, const unsigned char *p, size_t n);
/* n stdin bytes of run id left the init's hands: they leave its window. */
void sbx_init_req_consumed(struct sbx_init_req *r, unsigned int id, uint32_t n);
/* The init is done with run id (its EXIT is out); the slot frees at its EOF. */
void sbx_init_req_finished(struct sbx_init_req *r, unsigned int id);
/* Frees a spec being received. */
void sbx_init_req_done(struct sbx_init_req *r);

#endif
