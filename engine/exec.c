/*
 * engine/exec.c: one run in a docker sandbox.
 *
 * `docker exec` starts `sbx-init run` (util/frame.h) with the run's argv,
 * environment and deadline; the hijacked connection carries the program's
 * stdin to it and the Engine's multiplexed stream back. Inside that stream
 * the init's stdout holds frames, which the decoder checks strictly: the
 * init shares the sandbox with the untrusted program, so every byte is
 * treated as hostile. The host keeps its own deadline (the run's plus a
 * grace) and kills the sandbox when the init does not answer by then.
 * Once the EXIT frame is read, the host ends the program's stdin, and the
 * init exits only then, so no stdin is in flight when the exec ends.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sandboxio.h>

#include "cgroups/cgroups-int.h"
#include "engine/chan-int.h"
#include "engine/docker-int.h"
#include "util/buf.h"
#include "util/error-int.h"
#include "util/frame.h"
#include "util/secmem.h"

#define MUX_HDR 8
#define MUX_FRAME_MAX (1u << 20)
#define INIT_DIAG_MAX 4096

struct run_io {
	const struct sbx__run_req *req;
	struct sbx__buf diag; /* the init's own stderr */
	struct sbx__frame_decoder dec;
	struct sbx__frame_exit exit;
	int have_exit;
	int canceled;
	/* Engine stream demultiplexer. */
	unsigned char mux_hdr[MUX_HDR];
	size_t mux_hdr_have;
	uint32_t mux_left;
	int mux_stream;
	int mux_error;
};

/* The init's stderr for a message, quoted (sbx__error_quote()) into dq, which
 * is filled before the message is: ": " before it, or "" when it is empty. */
static const char *diag_quote(const struct run_io *io, char *dq, size_t cap)
{
	return sbx__error_quote(dq, cap, io->diag.data, io->diag.len) ? ": " : "";
}

static int on_frame(int type, const unsigned char *p, size_t len, void *arg)
{
	struct run_io *io = arg;
	int stream = 0, rc;

	switch ((enum sbx__frame_type)type) {
	case SBX_FRAME_STDOUT:
		stream = SBX_STREAM_STDOUT;
		break;
	case SBX_FRAME_STDERR:
	case SBX_FRAME_ERROR:
		stream = SBX_STREAM_STDERR;
		break;
	case SBX_FRAME_EXIT:
		if (sbx__frame_exit_decode(&io->exit, p, len) < 0)
			return -1;
		io->have_exit = 1;
		return 0;
	}
	if (!stream)
		return -1;
	/* Raw output goes to core's sink, which redacts, caps and keeps it. */
	rc = io->req->sink(io->req->sink_arg, stream, p, len);
	if (rc == 1)
		io->canceled = 1;
	return rc;
}

/* Feeds bytes of the Engine's multiplexed stream: [type,0,0,0,len(4)] payload. */
static int demux(struct run_io *io, const unsigned char *p, size_t n)
{
	while (n) {
		if (io->mux_left == 0) {
			size_t take = MUX_HDR - io->mux_hdr_have;
			if (take > n)
				take = n;
			memcpy(io->mux_hdr + io->mux_hdr_have, p, take);
			io->mux_hdr_have += take;
			p += take;
			n -= take;
			if (io->mux_hdr_have < MUX_HDR)
				return 0;
			io->mux_hdr_have = 0;
			io->mux_stream = io->mux_hdr[0];
			io->mux_left = (uint32_t)io->mux_hdr[4] << 24 |
				       (uint32_t)io->mux_hdr[5] << 16 |
				       (uint32_t)io->mux_hdr[6] << 8 | io->mux_hdr[7];
			if (io->mux_stream > 2 || io->mux_hdr[1] || io->mux_hdr[2] ||
			    io->mux_hdr[3] || io->mux_left > MUX_FRAME_MAX) {
				io->mux_error = 1;
				return -1;
			}
			continue;
		}
		size_t take = n < io->mux_left ? n : io->mux_left;
		if (io->mux_stream == 1) {
			int rc = sbx__frame_feed(&io->dec, p, take, on_frame, io);
			if (rc != 0)
				return rc;
		} else {
			/* The init's own stderr: diagnostics, bounded. */
			sbx__buf_append(&io->diag, p, take);
		}
		p += take;
		n -= take;
		io->mux_left -= (uint32_t)take;
	}
	return 0;
}

/* The stream's bytes: with a terminal (Tty) they are its raw output, else multiplexed frames. */
static int feed_out(struct run_io *io, const unsigned char *p, size_t n)
{
	int rc;

	if (!io->req->pty)
		return demux(io, p, n);
	rc = io->req->sink(io->req->sink_arg, SBX_STREAM_STDOUT, p, n);
	if (rc == 1)
		io->canceled = 1;
	return rc;
}

/* The exec of each box's run with a terminal in flight (box->tty_exec): its
 * thread names it, sbx_sandbox_resize() from another reads it. */
pthread_mutex_t sbx__tty_lock = PTHREAD_MUTEX_INITIALIZER;

void sbx__tty_exec_set(struct sbx__docker_box *b, const char *exec_id)
{
	pthread_mutex_lock(&sbx__tty_lock);
	snprintf(b->tty_exec, sizeof(b->tty_exec), "%s", exec_id ? exec_id : "");
	pthread_mutex_unlock(&sbx__tty_lock);
}

int sbx__tty_exec_resize(struct sbx__docker *d,
			 const char *exec_id,
			 unsigned int rows,
			 unsigned int cols)
{
	char path[256];
	long status = 0;

	snprintf(path, sizeof(path), "/exec/%s/resize?h=%u&w=%u", exec_id, rows, cols);
	return sbx__docker_call(d, "POST", path, NULL, 0, &status, NULL);
}

static long long exec_exit_code(struct sbx__docker *d, const char *exec_id);

/*
 * A run with a terminal reports through the exec's exit code (`sbx-init run
 * --tty`). The Engine may end the stream a moment before it records the
 * code: it is asked again, a little later each time, until the deadline.
 */
static int tty_exit(struct sbx__docker *d,
		    const char *exec_id,
		    const struct sbx__run_req *req,
		    uint64_t duration_ms,
		    uint64_t deadline,
		    struct run_io *io)
{
	long long code = exec_exit_code(d, exec_id);

	for (long ns = 1000000; code < 0 && sbx__mono_ms() < deadline; ns = ns * 2 % 256000000) {
		struct timespec pause = {0, ns};

		sbx__error_clear();
		nanosleep(&pause, NULL);
		code = exec_exit_code(d, exec_id);
	}
	if (code < 0 || code > 255)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE,
				      "the run's exec has no exit code (%lld)", code);
	io->exit = (struct sbx__frame_exit){.status = SBX_FRAME_ST_EXITED, .code = (int32_t)code};
	if (code == 124 && duration_ms >= req->timeout_ms)
		io->exit.status = SBX_FRAME_ST_TIMEOUT;
	io->have_exit = 1;
	return 0;
}

/* Streamed stdin: reads the caller's fd when poll said so; 0 at its end. */
static int read_stream(const struct sbx__run_req *req, unsigned char *b, size_t cap, size_t *len)
{
	ssize_t n = read(req->stdin_fd, b, cap);

	if (n > 0) {
		*len = (size_t)n;
		return 1;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* The exec request without its Env; attach 0: a detached exec. */
static json_t *exec_body(const struct sbx__run_req *req, int attach)
{
	char dl[32], size[32];
	json_t *cmd;

	snprintf(dl, sizeof(dl), "%llu", (unsigned long long)req->timeout_ms);
	snprintf(size, sizeof(size), "%ux%u", req->rows, req->cols);
	cmd = json_pack("[s,s,s,s,s,s]", SBX_INIT_MOUNT, "run", "--deadline-ms", dl, "--cwd",
			req->workdir);
	/* With a terminal the init runs the program on the Engine's (Tty). */
	if (!cmd ||
	    (req->pty && (json_array_append_new(cmd, json_string("--tty")) < 0 ||
			  json_array_append_new(cmd, json_string(size)) < 0)) ||
	    (req->as_root && json_array_append_new(cmd, json_string("--as-root")) < 0) ||
	    json_array_append_new(cmd, json_string("--")) < 0) {
		json_decref(cmd);
		return NULL;
	}
	for (size_t i = 0; req->argv[i]; i++)
		if (json_array_append_new(cmd, json_string(req->argv[i])) < 0) {
			json_decref(cmd);
			return NULL;
		}
	/* No User: the exec runs as the container's, the sandbox's own uid,
	 * root runs too: the init's run mode makes them uid 0 of a user
	 * namespace that maps only that uid (init/userns.c), never the host's
	 * root. The exec keeps the container's empty capability sets, seccomp
	 * profile and no-new-privileges (Privileged is false), and the init
	 * applies its own lockdown again (init/lockdown.c). */
	return json_pack("{s:b,s:b,s:b,s:b,s:o,s:s,s:b,s:s}", "AttachStdin", attach, "AttachStdout",
			 attach, "AttachStderr", attach, "Tty", req->pty ? 1 : 0, "Cmd", cmd,
			 "WorkingDir", "/", "Privileged", 0, "User", "");
}

/*
 * The exec request as JSON text in locked memory (util/secmem.h). Its Env
 * may hold secrets, so they are escaped straight into this buffer, which is
 * wiped after the call, and never pass through jansson's unwiped copies.
 * The per-run exec Env is the one place where Docker keeps a value out of
 * every record it shows: exec and container inspect, and the container's
 * config on disk (tests/contract/test_docker_secrets.c checks each).
 */
static char *exec_text(const struct sbx__run_req *req, int attach, size_t *size_out)
{
	_cleanup_json_ json_t *body = exec_body(req, attach);
	_sbx_cleanup_free_ char *rest = NULL;
	size_t need, o = 0;
	char *t;

	if (body)
		rest = json_dumps(body, JSON_COMPACT);
	if (!rest || rest[0] != '{') {
		sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "build exec request");
		return NULL;
	}
	need = strlen("{\"Env\":[],") + strlen(rest + 1) + 1;
	for (size_t i = 0; req->env && req->env[i]; i++)
		need += sbx__json_escaped_len(req->env[i], strlen(req->env[i])) + 3;
	t = sbx__secmem_alloc(need);
	if (!t) {
		sbx__error_os(SBX_EDENIED, errno,
			      "cannot lock memory for the run's environment (RLIMIT_MEMLOCK)");
		return NULL;
	}
	o += (size_t)sprintf(t, "{\"Env\":[");
	for (size_t i = 0; req->env && req->env[i]; i++) {
		if (i)
			t[o++] = ',';
		t[o++] = '"';
		o += sbx__json_escape(t + o, req->env[i], strlen(req->env[i]));
		t[o++] = '"';
	}
	o += (size_t)sprintf(t + o, "],%s", rest + 1);
	*size_out = need;
	return t;
}

/*
 * With debug logging on, dockerd writes the body of each small POST to its
 * log ("form data"), an exec's Env included. A secret would then be on the
 * daemon's disk, so runs with secrets are refused on such a daemon.
 */
static int refuse_debug_daemon(struct sbx__docker *d)
{
	_cleanup_json_ json_t *info = NULL;
	long status = 0;
	int rc;

	rc = sbx__docker_call(d, "GET", "/info", NULL, 0, &status, &info);
	if (rc < 0)
		return rc;
	if (!json_is_false(json_object_get(info, "Debug")))
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_ENGINE,
				      "secrets are refused: dockerd runs with debug logging (or "
				      "does not say it does not), which writes each exec's "
				      "environment to the daemon's log");
	return 0;
}

/* The exit code dockerd recorded for an exec, or -1. */
static long long exec_exit_code(struct sbx__docker *d, const char *exec_id)
{
	_cleanup_json_ json_t *info = NULL;
	char path[256];
	long status = 0;

	snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
	if (sbx__docker_call(d, "GET", path, NULL, 0, &status, &info) < 0 ||
	    !json_is_integer(json_object_get(info, "ExitCode")))
		return -1;
	return json_integer_value(json_object_get(info, "ExitCode"));
}

/*
 * One function on purpose (some 160 lines): the exec's create, start, read
 * loop and inspect share one cleanup path (out:) that stops and frees in
 * the reverse order of what was made, and one deadline.
 */
int sbx__docker_exec(struct sbx__docker *d,
		     struct sbx__docker_box *b,
		     const struct sbx__run_req *req,
		     sbx_result *res)
{
	_cleanup_json_ json_t *resp = NULL;
	struct sbx__hijack hj = {.fd = -1};
	struct run_io io = {.req = req};
	const unsigned char *in = req->stdin_data;
	size_t in_left = req->stdin_len;
	uint64_t start = sbx__mono_ms(), deadline, exit_at = 0;
	char path[256], body_start[64], exec_id[160], dq[SBX_ERROR_MSG_MAX];
	long status = 0;
	int rc = 0, eof = 0, host_timeout = 0, have_u0, dead, let_go = 0;
	/* The run's OOM witness spoke (gvisor): 1 the cgroup went, 2 an OOM. */
	int host_end = 0;
	_cleanup_oom_watch_ struct sbx__cgroup_oom_watch oomw = {0};
	sbx_cgroup_usage u0, u1;
	unsigned char buf[65536], ib[16384];
	size_t text_size = 0, ilen = 0, ioff = 0;
	int in_open = req->stdin_fd >= 0;
	char *text;

	if ((dead = __atomic_load_n(&b->dead, __ATOMIC_SEQ_CST)) != 0)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE, "sandbox %.12s %s", b->id,
				      sbx__dead_why(dead));
	if (req->has_secrets && (rc = refuse_debug_daemon(d)) < 0)
		return rc;
	deadline = start + req->timeout_ms + SBX_RUN_GRACE_MS;
	io.diag.cap = INIT_DIAG_MAX;
	sbx__frame_decoder_init(&io.dec);
	have_u0 = b->pid > 0 && sbx__cgroup_read_usage(&u0, "/sys/fs/cgroup", "/proc", b->pid) == 0;
	sbx__docker_run_witness(b, &oomw);
	text = exec_text(req, 1, &text_size);
	if (!text)
		return sbx__error_code();
	snprintf(path, sizeof(path), "/containers/%s/exec", b->id);
	rc = sbx__docker_call_text(d, "POST", path, text, 0, &status, &resp);
	sbx__secmem_free(text, text_size);
	if (rc == SBX_ENOTFOUND || (rc < 0 && status == 409))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "sandbox %.12s is gone or not running (its deadline may "
				      "have passed)",
				      b->id);
	if (rc < 0)
		return rc;
	if (!json_is_string(json_object_get(resp, "Id")))
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "exec: no Id in answer");
	snprintf(exec_id, sizeof(exec_id), "%.128s",
		 json_string_value(json_object_get(resp, "Id")));
	snprintf(path, sizeof(path), "/exec/%s/start", exec_id);
	snprintf(body_start, sizeof(body_start), "{\"Detach\":false,\"Tty\":%s}",
		 req->pty ? "true" : "false");
	rc = sbx__http_hijack(&d->http, path, body_start, 0, &hj);
	if (rc < 0)
		return rc;
	if (hj.pre_len)
		rc = feed_out(&io, hj.pre, hj.pre_len);
	/* Its first size is the init's to set (--tty RxC); later ones are the Engine's. */
	if (req->pty)
		sbx__tty_exec_set(b, exec_id);
	/* With the Engine's terminal, the end of its stdin ends the stream: never sent. */
	if (in_left == 0 && !in_open && !req->pty)
		shutdown(hj.fd, SHUT_WR);
	while (rc == 0 && !eof) {
		struct pollfd pfds[3] = {{.fd = -1}, {.fd = -1}, {.fd = -1}};
		struct pollfd *pfd = &pfds[0];
		uint64_t now = sbx__mono_ms(), until = deadline;
		ssize_t r;
		int n;

		if (io.have_exit && !let_go && !req->pty) {
			/* The report is in (it may have come with the upgrade's
			 * answer): what the program has not read is for nobody,
			 * and the init waits for this end before it exits
			 * (init/run.c, await_host_letgo). */
			let_go = 1;
			exit_at = now;
			in_left = 0;
			in_open = 0;
			ilen = ioff = 0;
			shutdown(hj.fd, SHUT_WR);
		}
		/* After the report, the stream's end is waited for a while, no
		 * more: the result is known, and the init exits on its own. */
		if (let_go && exit_at + SBX_FRAME_LETGO_HOST_MS < until)
			until = exit_at + SBX_FRAME_LETGO_HOST_MS;
		if (now >= until) {
			host_timeout = !host_end && !io.have_exit;
			break;
		}
		pfds[0] = (struct pollfd){.fd = hj.fd,
					  .events = POLLIN | (in_left || ilen ? POLLOUT : 0)};
		/*
		 * On the gvisor tier the Engine may keep an exec's stream open
		 * after the sandbox is gone (its OOM among them): the witness
		 * counts the cgroup's OOM and its removal, so either ends the
		 * wait. What the stream still holds then is read, no more.
		 */
		if (host_end)
			pfd->events = POLLIN;
		else if (in_open && !ilen)
			pfds[1] = (struct pollfd){.fd = req->stdin_fd, .events = POLLIN};
		if (oomw.on && !host_end)
			pfds[2] = (struct pollfd){.fd = oomw.efd, .events = POLLIN};
		n = poll(pfds, 3, host_end ? 0 : (int)(until - now));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = sbx__error_os(SBX_EENGINE, errno, "poll");
			break;
		}
		if (n == 0 && host_end)
			break;
		if (pfds[2].revents) {
			int seen = sbx__cgroup_oom_poll(&oomw, 0);

			if (seen == SBX_CGROUP_OOM_YES)
				host_end = 2;
			else if (seen == SBX_CGROUP_OOM_GONE)
				host_end = 1;
			else if (seen < 0)
				sbx__cgroup_oom_unwatch(&oomw); /* no witness: the stream alone */
		}
		if (pfds[1].revents && !read_stream(req, ib, sizeof(ib), &ilen)) {
			in_open = 0; /* its end: the program's stdin ends */
			if (!req->pty)
				shutdown(hj.fd, SHUT_WR);
		}
		ioff = ilen ? ioff : 0;
		if (ilen && (pfd->revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w =
				send(hj.fd, ib + ioff, ilen - ioff, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0)
				ioff += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				in_open = 0, ioff = ilen; /* the program stopped reading */
			if (ioff == ilen)
				ilen = ioff = 0;
		}
		if (in_left && (pfd->revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = send(hj.fd, in, in_left > 65536 ? 65536 : in_left,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				in += w;
				in_left -= (size_t)w;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				in_left = 0; /* the program stopped reading: drop the rest */
			}
			if (in_left == 0)
				shutdown(hj.fd, SHUT_WR);
		}
		if (pfd->revents & (POLLIN | POLLHUP | POLLERR)) {
			r = recv(hj.fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				rc = sbx__error_os(SBX_EENGINE, errno, "read exec stream");
				break;
			}
			if (r == 0) {
				eof = 1;
				break;
			}
			rc = feed_out(&io, buf, (size_t)r);
		}
	}
	sbx__hijack_close(&hj);
	sbx__tty_exec_set(b, NULL);
	res->duration_ms = sbx__mono_ms() - start;
	if (rc == 1 && io.canceled) {
		sbx__docker_kill(d, b);
		if (req->ended)
			*req->ended = SBX__ENDED_KILLED;
		rc = sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_ENGINE,
				    "run canceled by the output callback; sandbox %.12s was killed",
				    b->id);
		goto out;
	}
	if (rc == -2) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory for output");
		goto out;
	}
	if (rc < 0 && sbx__error_code() == SBX_OK) {
		/* A protocol violation: the sandbox is not trusted any further. */
		sbx__docker_kill(d, b);
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		if (io.mux_error)
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE,
					    "the Engine's exec stream of sandbox %.12s had a "
					    "malformed header (stream %d, length %u), so the "
					    "sandbox was killed",
					    b->id, io.mux_stream, (unsigned)io.mux_left);
		else
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT,
					    "sandbox %.12s broke the run protocol (%s), so it was "
					    "killed%s%s",
					    b->id, io.dec.why ? io.dec.why : "?",
					    diag_quote(&io, dq, sizeof(dq)), dq);
		goto out;
	}
	if (rc < 0)
		goto out;
	if (host_timeout) {
		/* The init did not end the run by its deadline: end the sandbox. */
		sbx__docker_kill(d, b);
		if (req->ended)
			*req->ended = SBX__ENDED_TIMEOUT;
		io.exit = (struct sbx__frame_exit){.status = SBX_FRAME_ST_TIMEOUT, .code = 124};
		io.have_exit = 1;
	}
	/* Not when the library ended it (sbx_sandbox_kill, a timeout): its end is known. */
	if (!io.have_exit && !__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST) &&
	    (host_end == 2 ||
	     (oomw.on && sbx__cgroup_oom_poll(&oomw, host_end ? OOM_WITNESS_WAIT_MS : 0) ==
				 SBX_CGROUP_OOM_YES))) {
		/* Only the witness was asked: the container may still be
		 * running, which the kill makes sure of. */
		(void)sbx__docker_kill_why(d, b, SBX__DEAD_OOM);
		sbx__error_clear();
		sbx__docker_oom_end(b, req, &io.exit);
		io.have_exit = 1;
	}
	/* With the Engine's terminal the exit comes from the exec's record,
	 * which a gone sandbox's exec never gets. */
	if (req->pty && !io.have_exit && !host_end &&
	    !__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST) &&
	    (rc = tty_exit(d, exec_id, req, res->duration_ms, deadline, &io)) < 0)
		goto out;
	if (!io.have_exit && __atomic_load_n(&b->dead, __ATOMIC_SEQ_CST)) {
		/* Killed through sbx_sandbox_kill() while the run was in flight. */
		io.exit = (struct sbx__frame_exit){
			.status = SBX_FRAME_ST_SIGNALED, .code = 137, .signal = 9};
		io.have_exit = 1;
	}
	if (!io.have_exit) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_INIT,
				    "sandbox %.12s: the run ended without an exit report (the "
				    "init exited %lld)%s%s",
				    b->id, exec_exit_code(d, exec_id),
				    diag_quote(&io, dq, sizeof(dq)), dq);
		goto out;
	}
	sbx__chan_fill_status(&io.exit, res);
	/* Which caps the run ran into: the cgroup's counters are the witness. */
	if (have_u0 && sbx__cgroup_read_usage(&u1, "/sys/fs/cgroup", "/proc", b->pid) == 0) {
		if (u1.pids_events_max > u0.pids_events_max)
			res->limits_hit |= SBX_HIT_PIDS;
		if (u0.oom_kills >= 0 && u1.oom_kills > u0.oom_kills)
			res->limits_hit |= SBX_HIT_MEMORY;
	}
	if (io.exit.flags & SBX_FRAME_F_OOM)
		res->limits_hit |= SBX_HIT_MEMORY;
	if (res->status == SBX_RUN_TIMEOUT)
		res->limits_hit |= SBX_HIT_TIMEOUT;
	/* The output fields are filled by core (core/output.c). */
	rc = 0;
out:
	sbx__buf_clear(&io.diag);
	return rc;
}

/*
 * A detached exec of `sbx-init run`: the program runs under the init's
 * supervisor (its deadline, the sandbox user, seccomp and caps) and nobody
 * reads its output. Used for what must outlive one call (code contexts).
 */
int sbx__docker_spawn(void *state, void *box, const struct sbx__run_req *req)
{
	struct sbx__docker *d = state;
	struct sbx__docker_box *b = box;
	_cleanup_json_ json_t *resp = NULL;
	char path[256], exec_id[160];
	size_t text_size = 0;
	long status = 0;
	char *text;
	int rc, dead;

	if ((dead = __atomic_load_n(&b->dead, __ATOMIC_SEQ_CST)) != 0)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE, "sandbox %.12s %s", b->id,
				      sbx__dead_why(dead));
	if (req->has_secrets)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "a detached program is given no secrets");
	text = exec_text(req, 0, &text_size);
	if (!text)
		return sbx__error_code();
	snprintf(path, sizeof(path), "/containers/%s/exec", b->id);
	rc = sbx__docker_call_text(d, "POST", path, text, 0, &status, &resp);
	sbx__secmem_free(text, text_size);
	if (rc == SBX_ENOTFOUND || (rc < 0 && status == 409))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_ENGINE,
				      "sandbox %.12s is gone or not running (its deadline may "
				      "have passed)",
				      b->id);
	if (rc < 0)
		return rc;
	if (!json_is_string(json_object_get(resp, "Id")))
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "exec: no Id in answer");
	snprintf(exec_id, sizeof(exec_id), "%.128s",
		 json_string_value(json_object_get(resp, "Id")));
	snprintf(path, sizeof(path), "/exec/%s/start", exec_id);
	/* Its answer says nothing: dockerd's is empty, Podman's a newline. */
	return sbx__docker_call_text(d, "POST", path, "{\"Detach\":true,\"Tty\":false}", 0, &status,
				     NULL);
}
