/*
 * server/stdin.c: stdin streamed to a running command (Process.Start with
 * "stdin": true), as envd gives it: each SendInput reaches the command as
 * it is sent, before CloseStdin, which ends its input.
 *
 * The library gives a run its stdin whole, so the stream goes through
 * FIFOs in the sandbox's /tmp, made by the worker in the box's busy slot
 * just before the command runs (sbxs_stdin_prepare()). The command runs
 * under stdin_wrap: a keeper holds the input FIFO open for writing until
 * CloseStdin opens "<fifo>.close"; a feeder passes what came before the
 * start (the run's own stdin), then the input FIFO, to the command through
 * "<fifo>.cmd"; the command's exit status (or its signal) is the run's.
 * Each later SendInput is a run of `cat` into the FIFO on a handle of its
 * own (sbx_sandbox_open(), so docker exec: the busy slot is the command's),
 * one at a time per process, in order; CloseStdin is one more. One deadline
 * (--transfer-timeout) bounds a write and its wait for an earlier one, so a
 * queue of writes behind a process that does not read holds no connection
 * longer than that. Everything runs as the command's user inside the
 * sandbox (the sandbox user, or its root for a root command of the e2b
 * flavour: each can open only its own FIFOs); the FIFOs have mode 0600 and
 * a random name, and the wrapper removes them when the command ends.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server-int.h"

/* sh -c stdin_wrap sbx-stdin FIFO CMD ARGS... */
const char sbxs_stdin_wrap[] =
	"f=$1; shift\n"
	"exec 6<&0 3<>\"$f\" 4<\"$f\"\n"
	"( exec 4<&- 6<&-; read _ <\"$f.close\" ) >/dev/null 2>&1 &\n"
	"k=$!\n"
	"exec 3>&-\n"
	"( cat <&6; exec cat <&4 ) >\"$f.cmd\" 2>/dev/null &\n"
	"e=$!\n"
	"exec 4<&- 6<&-\n"
	"\"$@\" <\"$f.cmd\"\n"
	"s=$?\n"
	"kill $k $e 2>/dev/null\n"
	"rm -f \"$f\" \"$f.close\" \"$f.cmd\"\n"
	"if [ $s -gt 128 ] && [ $s -lt 160 ]; then kill -$((s - 128)) $$; fi\n"
	"exit $s\n";

int sbxs_stdin_prepare(struct sbxs_proc *pr, uint64_t timeout_ms)
{
	const char *argv[] = {
		"sh",	     "-c", "umask 077; exec mkfifo -m 600 \"$1\" \"$1.close\" \"$1.cmd\"",
		"sbx-stdin", NULL, NULL};
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	char hex[17];
	sbx_result *r = NULL;
	int rc;

	if (sbxs_random_hex(hex, 8) < 0)
		return -1;
	snprintf(pr->fifo, sizeof(pr->fifo), "/tmp/.sbx-in-%s", hex);
	argv[4] = pr->fifo;
	ro.timeout_ms = timeout_ms;
	ro.as_root = pr->as_root;
	rc = sbx_sandbox_run(&r, pr->box->s, argv, &ro);
	if (rc < 0)
		return rc;
	rc = r->status == SBX_RUN_EXITED && r->exit_code == 0 ? 0 : SBX_ERROR;
	sbx_result_free(r);
	return rc;
}

/*
 * One write to the process's FIFO (data, or with close the end of its
 * input), on a handle of its own; one at a time per process (mu not held).
 * Returns 0, or -1 with err.
 */
int sbxs_stdin_write(
	struct sbxs_proc *pr, const void *data, size_t n, int close, char *err, size_t esize)
{
	static const char write_sh[] = "[ -p \"$1\" ] || exit 3; exec cat >\"$1\"";
	static const char close_sh[] = "[ -p \"$1.close\" ] || exit 0; : >\"$1.close\"";
	struct sbxs_box *b = pr->box;
	struct sbxs_server *srv = b->srv;
	const char *argv[] = {"sh", "-c", close ? close_sh : write_sh, "sbx-stdin", pr->fifo, NULL};
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	sbx_sandbox *h = NULL;
	sbx_result *r = NULL;
	uint64_t deadline = sbx__mono_ms() + srv->transfer_ms, now;
	int rc;

	/* One deadline covers the wait for an earlier write and this one. */
	pthread_mutex_lock(&srv->mu);
	while (pr->in_busy && !pr->run_done && (now = sbx__mono_ms()) < deadline)
		sbxs_wait_until(&pr->cv, &srv->mu, deadline);
	if (pr->in_busy || pr->run_done) {
		int ended = pr->run_done;

		pthread_mutex_unlock(&srv->mu);
		if (ended && close)
			return 0; /* nothing left to close */
		if (ended)
			snprintf(err, esize, "the process's input is gone (it ended)");
		else
			snprintf(err, esize,
				 "an earlier input of the process was still being written at the "
				 "transfer's deadline (%llu s)",
				 (unsigned long long)(srv->transfer_ms / 1000));
		return -1;
	}
	pr->in_busy = 1;
	now = sbx__mono_ms();
	pthread_mutex_unlock(&srv->mu);
	ro.timeout_ms = deadline > now ? deadline - now : 1;
	ro.stdin_data = data;
	ro.stdin_len = n;
	ro.as_root = pr->as_root;
	rc = sbx_sandbox_open(&h, srv->b, sbx_sandbox_id(b->s));
	if (rc == 0) {
		rc = sbx_sandbox_run(&r, h, argv, &ro);
		sbx_sandbox_detach(h);
	}
	if (rc < 0)
		snprintf(err, esize, "the sandbox could not take the input (%s)", sbx_strerror(rc));
	else if (r->status == SBX_RUN_TIMEOUT)
		snprintf(err, esize,
			 "the process did not read its input within the transfer's deadline (%llu "
			 "s)",
			 (unsigned long long)(srv->transfer_ms / 1000));
	else if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		snprintf(err, esize, "the process's input is gone (it ended)");
	if (rc == 0 && (r->status != SBX_RUN_EXITED || r->exit_code != 0))
		rc = -1;
	sbx_result_free(r);
	pthread_mutex_lock(&srv->mu);
	pr->in_busy = 0;
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&srv->mu);
	return rc < 0 ? -1 : 0;
}
