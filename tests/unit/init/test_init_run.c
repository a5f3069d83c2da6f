/*
 * tests/unit/init/test_init_run.c: runs the built sbx-init directly on the
 * host and checks what it says on the wire.
 *
 * `sbx-init run` is executed as a child of the test with its stdout on a
 * pipe, and that stream is decoded with the same strict decoder the library
 * uses, so these tests cover the init and the protocol end to end without a
 * container. The lockdown (no_new_privs, capability drop, seccomp) applies
 * only to the init's own process tree, never to the test.
 *
 * The seccomp layer is checked from the inside: the test binary re-executes
 * itself under the init with `--probe NAME` and reports whether each denied
 * call really failed the expected way.
 *
 * The init binary is $SANDBOXIO_INIT, or build/sbx-init relative to the
 * current directory (make runs tests from the top of the tree).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "util/frame.h"

/* Any single test that takes this long has hung: kill the init and fail. */
#define HANG_LIMIT_MS 60000
#define MSG_CAP 4096

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

struct result {
	int wstatus; /* of the sbx-init process */
	int decode_rc;
	int exit_seen;
	int frames;
	int frames_after_exit;
	size_t biggest;
	struct sbx__frame_exit exit;
	char *out;
	size_t out_len;
	char *err;
	size_t err_len;
	char msg[MSG_CAP];
	size_t msg_len;
	char diag[MSG_CAP]; /* the init's own stderr */
	size_t diag_len;
	double elapsed;
	struct sbx__frame_decoder dec;
};

static char self_exe[4096];

/* Set by a test for the next run only: the init runs as on a kernel without
 * close_range (gVisor as Debian 12 ships it), with one descriptor left open
 * for it to find. */
static int no_close_range;
/* The next run_init_ex() starts sbx-init as this uid and gid (0: as we are). */
static uid_t next_uid;
#define LEFT_OPEN_FD 1000
/* A close or fcntl on a descriptor this high can only be a blind scan. */
#define BLIND_SCAN_FD 4096

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

/* close_range fails with ENOSYS; close or fcntl at BLIND_SCAN_FD or above
 * kills the process. */
static int filter_close_range(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fcntl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, BLIND_SCAN_FD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static const char *init_path(void)
{
	const char *p = getenv("SANDBOXIO_INIT");

	return p && *p ? p : "build/sbx-init";
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append(char **buf, size_t *len, const unsigned char *p, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);

	assert_non_null(nb);
	memcpy(nb + *len, p, n);
	*len += n;
	nb[*len] = '\0';
	*buf = nb;
}

static void append_fixed(char *buf, size_t *len, const void *p, size_t n)
{
	if (n > MSG_CAP - 1 - *len)
		n = MSG_CAP - 1 - *len;
	memcpy(buf + *len, p, n);
	*len += n;
	buf[*len] = '\0';
}

static int on_frame(int type, const unsigned char *p, size_t len, void *arg)
{
	struct result *r = arg;

	r->frames++;
	if (r->exit_seen)
		r->frames_after_exit++;
	if (len > r->biggest)
		r->biggest = len;
	switch (type) {
	case SBX_FRAME_STDOUT:
		append(&r->out, &r->out_len, p, len);
		break;
	case SBX_FRAME_STDERR:
		append(&r->err, &r->err_len, p, len);
		break;
	case SBX_FRAME_ERROR:
		append_fixed(r->msg, &r->msg_len, p, len);
		break;
	case SBX_FRAME_EXIT:
		if (sbx__frame_exit_decode(&r->exit, p, len) != 0)
			return -2;
		r->exit_seen = 1;
		break;
	default:
		return -3;
	}
	return 0;
}

static struct result *result_new(void)
{
	struct result *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	sbx__frame_decoder_init(&r->dec);
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	assert_non_null(r->out);
	assert_non_null(r->err);
	return r;
}

static void result_free(struct result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	free(r);
}

/* Fails the test, the init killed, once HANG_LIMIT_MS have passed since start. */
static void hang_guard(pid_t pid, double start)
{
	if ((now_s() - start) * 1000 > HANG_LIMIT_MS) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("sbx-init did not finish within %d ms", HANG_LIMIT_MS);
	}
}

/*
 * Runs the init with args (argv without argv[0], NULL-terminated), stdin
 * from stdin_path (or /dev/null), and collects everything it says. With
 * block_term, the init starts with SIGTERM blocked, so the test can send one
 * at any moment without racing the init's own setup; term_after_ms > 0
 * sends it that long after the start.
 */
static struct result *
run_init_ex(const char *const *args, const char *stdin_path, int block_term, int term_after_ms)
{
	struct result *r = result_new();
	const char *argv[64];
	int outp[2], errp[2];
	sigset_t term, old;
	double start, term_at;
	int termed = 0, i;
	pid_t pid;

	argv[0] = init_path();
	for (i = 0; args[i]; i++) {
		assert_true(i + 2 < (int)(sizeof(argv) / sizeof(argv[0])));
		argv[i + 1] = args[i];
	}
	argv[i + 1] = NULL;

	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(errp, O_CLOEXEC), 0);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	if (block_term)
		assert_int_equal(sigprocmask(SIG_BLOCK, &term, &old), 0);
	start = now_s();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);

		if (in < 0 || dup2(in, 0) < 0 || dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0)
			_exit(99);
		if (no_close_range &&
		    (dup2(0, LEFT_OPEN_FD) != LEFT_OPEN_FD || filter_close_range() != 0))
			_exit(97);
		if (next_uid &&
		    (setgroups(0, NULL) != 0 || setgid(next_uid) != 0 || setuid(next_uid) != 0))
			_exit(96);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
	no_close_range = 0; /* for this run only, even when a test fails */
	next_uid = 0;
	if (block_term)
		assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	close(outp[1]);
	close(errp[1]);
	term_at = start + term_after_ms / 1000.0;

	while (outp[0] >= 0 || errp[0] >= 0) {
		struct pollfd pfd[2] = {{.fd = outp[0], .events = POLLIN},
					{.fd = errp[0], .events = POLLIN}};
		unsigned char buf[8192];
		double t = now_s();
		int k;

		hang_guard(pid, start);
		if (term_after_ms > 0 && !termed && t >= term_at) {
			kill(pid, SIGTERM);
			termed = 1;
		}
		if (poll(pfd, 2, 50) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		for (k = 0; k < 2; k++) {
			ssize_t n;

			if (pfd[k].fd < 0 || !pfd[k].revents)
				continue;
			n = read(pfd[k].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(pfd[k].fd);
				if (k == 0)
					outp[0] = -1;
				else
					errp[0] = -1;
				continue;
			}
			if (k == 0) {
				if (r->decode_rc == 0)
					r->decode_rc = sbx__frame_feed(&r->dec, buf, (size_t)n,
								       on_frame, r);
			} else {
				append_fixed(r->diag, &r->diag_len, buf, (size_t)n);
			}
		}
	}
	assert_int_equal(waitpid(pid, &r->wstatus, 0), pid);
	r->elapsed = now_s() - start;
	return r;
}

static struct result *run_init(const char *const *args)
{
	return run_init_ex(args, NULL, 0, 0);
}

/* Runs `sbx-init run --deadline-ms ms -- sh -c line`. */
static struct result *run_sh(int ms, const char *line)
{
	char dl[32];
	const char *args[] = {"run", "--deadline-ms", dl, "--", "sh", "-c", line, NULL};

	snprintf(dl, sizeof(dl), "%d", ms);
	return run_init(args);
}

static void dump(const struct result *r)
{
	fprintf(stderr,
		"  init wstatus=%#x decode_rc=%d exit_seen=%d status=%u code=%d signal=%u\n"
		"  stdout=[%s]\n  stderr=[%s]\n  error=[%s]\n  init stderr=[%s]\n",
		r->wstatus, r->decode_rc, r->exit_seen, r->exit.status, r->exit.code,
		r->exit.signal, r->out, r->err, r->msg, r->diag);
}

/* A run that completed the protocol: init exit 0, clean stream, one EXIT last. */
static void assert_clean(const struct result *r)
{
	if (!WIFEXITED(r->wstatus) || WEXITSTATUS(r->wstatus) != 0 || r->decode_rc != 0 ||
	    !r->exit_seen || r->frames_after_exit || r->biggest > SBX_FRAME_MAX)
		dump(r);
	assert_true(WIFEXITED(r->wstatus));
	assert_int_equal(WEXITSTATUS(r->wstatus), 0);
	assert_int_equal(r->decode_rc, 0);
	assert_true(r->exit_seen);
	assert_int_equal(r->dec.done, 1);
	assert_int_equal(r->frames_after_exit, 0);
	assert_true(r->biggest <= SBX_FRAME_MAX);
}

static void assert_exited(const struct result *r, int code)
{
	assert_clean(r);
	if (r->exit.status != SBX_FRAME_ST_EXITED || r->exit.code != code)
		dump(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_EXITED);
	assert_int_equal(r->exit.code, code);
	assert_int_equal(r->exit.signal, 0);
}

/* A process is gone if it does not exist or is only a zombie. */
static int pid_alive(pid_t p)
{
	char path[64], buf[512], *rp;
	int fd;
	ssize_t n;

	if (kill(p, 0) != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && rp[2] == 'Z');
}

struct tmp {
	char dir[64];
	char file[128];
};

static void tmp_make(struct tmp *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/sbx-init-test.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->file, sizeof(t->file), "%s/pid", t->dir);
}

static void tmp_remove(struct tmp *t)
{
	unlink(t->file);
	rmdir(t->dir);
}

static pid_t read_pidfile(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

/* Fails the test if pid survived the run, after cleaning it up. */
static void assert_dead(pid_t pid)
{
	int alive;

	assert_true(pid > 1);
	alive = pid_alive(pid);
	if (alive)
		kill(pid, SIGKILL);
	assert_false(alive);
}

static void test_init_run__stdout_frames(void **state)
{
	const char *args[] = {"run",  "--deadline-ms", "20000", "--",
			      "echo", "hello",	       "world", NULL};
	struct result *r;

	(void)state;
	r = run_init(args);
	assert_exited(r, 0);
	assert_string_equal(r->out, "hello world\n");
	assert_int_equal(r->err_len, 0);
	assert_int_equal(r->msg_len, 0);
	assert_true(r->exit.maxrss_kb > 0);
	result_free(r);
}

static void test_init_run__stderr_separate(void **state)
{
	struct result *r;

	(void)state;
	r = run_sh(20000, "echo out; echo err >&2; echo out2");
	assert_exited(r, 0);
	assert_string_equal(r->out, "out\nout2\n");
	assert_string_equal(r->err, "err\n");
	result_free(r);
}

static void test_init_run__exit_code(void **state)
{
	struct result *r;

	(void)state;
	r = run_sh(20000, "exit 3");
	assert_exited(r, 3);
	result_free(r);
}

static void test_init_run__signaled(void **state)
{
	struct result *r;

	(void)state;
	r = run_sh(20000, "kill -9 $$");
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_SIGNALED);
	assert_int_equal(r->exit.signal, 9);
	assert_int_equal(r->exit.code, 137);
	result_free(r);
}

/* SIGPIPE is ignored in the init; the program must get it back at default. */
static void test_init_run__signal_dispositions_reset(void **state)
{
	struct result *r;

	(void)state;
	r = run_sh(20000, "kill -PIPE $$");
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_SIGNALED);
	assert_int_equal(r->exit.signal, SIGPIPE);
	result_free(r);
}

static void test_init_run__exec_not_found(void **state)
{
	const char *args[] = {
		"run", "--deadline-ms", "20000", "--", "python4-no-such-program", "-c", "1", NULL};
	struct result *r;

	(void)state;
	r = run_init(args);
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_EXECFAIL);
	assert_int_equal(r->exit.code, 127);
	assert_string_equal(r->msg, "python4-no-such-program: command not found");
	assert_int_equal(r->out_len, 0);
	result_free(r);
}

static void test_init_run__exec_permission_denied(void **state)
{
	const char *args[] = {"run", "--deadline-ms", "20000", "--", NULL, NULL};
	struct tmp t;
	struct result *r;
	int fd;

	(void)state;
	tmp_make(&t);
	fd = open(t.file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	args[4] = t.file;
	r = run_init(args);
	tmp_remove(&t);
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_EXECFAIL);
	assert_int_equal(r->exit.code, 126);
	assert_non_null(strstr(r->msg, "permission denied"));
	result_free(r);
}

static void test_init_run__cwd(void **state)
{
	const char *args[] = {"run", "--deadline-ms", "20000", "--cwd", "/tmp", "--", "pwd", NULL};
	struct result *r;

	(void)state;
	r = run_init(args);
	assert_exited(r, 0);
	assert_string_equal(r->out, "/tmp\n");
	result_free(r);
}

static void test_init_run__bad_cwd(void **state)
{
	const char *args[] = {"run", "--deadline-ms", "20000", "--cwd", "/no/such/dir",
			      "--",  "true",	      NULL};
	struct result *r;

	(void)state;
	r = run_init(args);
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_EXECFAIL);
	assert_int_equal(r->exit.code, 127);
	assert_non_null(strstr(r->msg, "/no/such/dir"));
	result_free(r);
}

static void test_init_run__stdin_inherited(void **state)
{
	const char *args[] = {"run", "--deadline-ms", "20000", "--", "cat", NULL};
	struct tmp t;
	struct result *r;
	int fd;

	(void)state;
	tmp_make(&t);
	fd = open(t.file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "from stdin\n", 11), 11);
	close(fd);
	r = run_init_ex(args, t.file, 0, 0);
	tmp_remove(&t);
	assert_exited(r, 0);
	assert_string_equal(r->out, "from stdin\n");
	result_free(r);
}

/*
 * After its EXIT frame the init waits for the end of its stdin, reading
 * and dropping what still comes, and only then exits (docs/protocol.md: no
 * stdin is in flight when an exec ends). The test holds the stdin pipe's
 * write end: the init is still there after the EXIT; 256 KiB written then
 * (four times a pipe's buffer) go through, read by nothing but the init;
 * closing that end ends it, with 0 and nothing more on its stdout.
 */
static void test_init_run__waits_for_the_end_of_stdin(void **state)
{
	const char *argv[] = {init_path(), "run", "--deadline-ms",   "600000", "--",
			      "sh",	   "-c",  "echo hi; exit 3", NULL};
	static char junk[256 << 10];
	struct result *r = result_new();
	unsigned char buf[8192];
	int inp[2], outp[2], st;
	double start = now_s();
	size_t off = 0;
	ssize_t n;
	pid_t pid;

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe2(inp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(inp[0], 0) < 0 || dup2(outp[1], 1) < 0)
			_exit(99);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
	close(inp[0]);
	close(outp[1]);
	while (!r->exit_seen) {
		struct pollfd p = {.fd = outp[0], .events = POLLIN};

		hang_guard(pid, start);
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(outp[0], buf, sizeof(buf));
		assert_true(n > 0); /* no end before the EXIT */
		assert_int_equal(sbx__frame_feed(&r->dec, buf, (size_t)n, on_frame, r), 0);
	}
	assert_int_equal(r->exit.code, 3);
	assert_string_equal(r->out, "hi\n");
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
	assert_int_equal(fcntl(inp[1], F_SETFL, O_NONBLOCK), 0);
	while (off < sizeof(junk)) {
		struct pollfd p = {.fd = inp[1], .events = POLLOUT};

		hang_guard(pid, start);
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = write(inp[1], junk + off, sizeof(junk) - off);
		if (n < 0 && errno != EAGAIN)
			fail_msg("writing the init's stdin after its EXIT: %s", strerror(errno));
		off += n > 0 ? (size_t)n : 0;
	}
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
	close(inp[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read(outp[0], buf, sizeof(buf)), 0);
	close(outp[0]);
	result_free(r);
}

/* More than one frame's worth, in order, each frame within the limit. */
static void test_init_run__large_output(void **state)
{
	const char *args[] = {"run", "--deadline-ms", "20000", "--", "seq", "1", "200000", NULL};
	struct result *r;
	char *want;
	size_t len = 0;
	int i;

	(void)state;
	want = malloc(2000000);
	assert_non_null(want);
	for (i = 1; i <= 200000; i++)
		len += (size_t)sprintf(want + len, "%d\n", i);
	r = run_init(args);
	assert_exited(r, 0);
	assert_int_equal(r->out_len, len);
	assert_memory_equal(r->out, want, len);
	assert_true(r->frames > 2);
	free(want);
	result_free(r);
}

static void test_init_run__timeout_kills_tree(void **state)
{
	char line[512];
	struct tmp t;
	struct result *r;

	int ms;

	(void)state;
	tmp_make(&t);
	snprintf(line, sizeof(line), "sleep 300 & echo $! > %s; echo started; sleep 300", t.file);
	/* A deadline that struck before the tree started proves nothing: go again with twice it. */
	for (ms = 300, r = NULL; ms <= 9600; ms *= 2) {
		if (r)
			result_free(r);
		r = run_sh(ms, line);
		assert_clean(r);
		assert_int_equal(r->exit.status, SBX_FRAME_ST_TIMEOUT);
		assert_int_equal(r->exit.code, 124);
		/* Generous: only proves the 300 s sleeps were not waited for. */
		assert_true(r->elapsed < ms / 1000.0 + 60.0);
		if (r->out && strcmp(r->out, "started\n") == 0)
			break;
	}
	assert_string_equal(r->out, "started\n");
	assert_dead(read_pidfile(t.file));
	tmp_remove(&t);
	result_free(r);
}

static void test_init_run__background_killed_after_exit(void **state)
{
	char line[512];
	struct tmp t;
	struct result *r;

	(void)state;
	tmp_make(&t);
	snprintf(line, sizeof(line), "sleep 30 & echo $! > %s; echo done", t.file);
	r = run_sh(20000, line);
	assert_exited(r, 0);
	assert_string_equal(r->out, "done\n");
	assert_true(r->elapsed < 15.0);
	assert_dead(read_pidfile(t.file));
	tmp_remove(&t);
	result_free(r);
}

/* A new session whose parent exits: out of the process group and orphaned. */
static void test_init_run__escaped_orphan_killed(void **state)
{
	char line[512];
	struct tmp t;
	struct result *r;

	(void)state;
	tmp_make(&t);
	snprintf(line, sizeof(line),
		 "(setsid sh -c 'echo $$ > %s; exec sleep 30' >/dev/null 2>&1 &); "
		 "i=0; while [ ! -s %s ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done",
		 t.file, t.file);
	r = run_sh(20000, line);
	assert_exited(r, 0);
	assert_true(r->elapsed < 15.0);
	assert_dead(read_pidfile(t.file));
	tmp_remove(&t);
	result_free(r);
}

static void test_init_run__caps_nnp_seccomp(void **state)
{
	struct result *r;

	(void)state;
	r = run_sh(20000, "grep -E '^(Cap(Prm|Eff|Bnd|Amb|Inh)|NoNewPrivs|Seccomp):' "
			  "/proc/self/status");
	assert_exited(r, 0);
	assert_non_null(strstr(r->out, "CapInh:\t0000000000000000"));
	assert_non_null(strstr(r->out, "CapPrm:\t0000000000000000"));
	assert_non_null(strstr(r->out, "CapEff:\t0000000000000000"));
	assert_non_null(strstr(r->out, "CapBnd:\t0000000000000000"));
	assert_non_null(strstr(r->out, "CapAmb:\t0000000000000000"));
	assert_non_null(strstr(r->out, "NoNewPrivs:\t1"));
	assert_non_null(strstr(r->out, "Seccomp:\t2"));
	result_free(r);
}

/* The program shares the init's uid; it must not reach the init's fd 1. */
static void test_init_run__cannot_forge_frames(void **state)
{
	struct result *r;

	(void)state;
	r = run_sh(20000, "exec 3>/proc/$PPID/fd/1 && printf 'forged' >&3");
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_EXITED);
	assert_int_not_equal(r->exit.code, 0);
	assert_int_equal(r->out_len, 0);
	result_free(r);
}

static void test_init_run__unshare_denied(void **state)
{
	const char *args[] = {"run",	 "--deadline-ms", "20000", "--",
			      "unshare", "--user",	  "true",  NULL};
	struct result *r;

	(void)state;
	if (access("/usr/bin/unshare", X_OK) != 0 && access("/bin/unshare", X_OK) != 0)
		skip();
	r = run_init(args);
	assert_clean(r);
	assert_int_equal(r->exit.status, SBX_FRAME_ST_EXITED);
	assert_int_not_equal(r->exit.code, 0);
	result_free(r);
}

/* A root run (--as-root) is uid 0 of a user namespace that maps only the
 * uid it started as, with every capability dropped (init/userns.c). */
static void test_init_run__as_root_in_own_namespace(void **state)
{
	const char *args[] = {"run",
			      "--as-root",
			      "--deadline-ms",
			      "20000",
			      "--",
			      "sh",
			      "-c",
			      "id -u; id -g; cat /proc/self/uid_map | tr -s ' '; "
			      "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status | tr -s '\\t' ' '",
			      NULL};
	struct result *r;

	(void)state;
	if (geteuid() != 0)
		skip(); /* it needs a uid to start as */
	next_uid = 65534;
	r = run_init(args);
	assert_exited(r, 0);
	assert_string_equal(r->out, "0\n0\n 0 65534 1\nCapPrm: 0000000000000000\n"
				    "CapEff: 0000000000000000\nCapBnd: 0000000000000000\n");
	result_free(r);
}

/* Started as uid 0, a root run would map the host's root: refused. */
static void test_init_run__as_root_refused_as_uid0(void **state)
{
	const char *args[] = {"run", "--as-root", "--deadline-ms", "20000", "--", "true", NULL};
	struct result *r;

	(void)state;
	if (geteuid() != 0)
		skip(); /* it needs to be uid 0 */
	r = run_init(args);
	assert_true(WIFEXITED(r->wstatus));
	assert_int_equal(WEXITSTATUS(r->wstatus), 125);
	assert_non_null(strstr(r->diag, "must start as the sandbox's own uid, not 0:0"));
	result_free(r);
}

static struct result *run_probe(const char *name)
{
	const char *args[] = {"run",	"--deadline-ms", "20000", "--",
			      self_exe, "--probe",	 name,	  NULL};

	/*
	 * In sanitizer builds the probe is instrumented too, and the leak
	 * checker needs ptrace, which the layer under test refuses. The test
	 * process parsed its own options at startup, so this reaches only the
	 * processes it starts.
	 */
	assert_int_equal(setenv("LSAN_OPTIONS", "detect_leaks=0", 1), 0);
	return run_init(args);
}

static void expect_probe_ok(const char *name)
{
	struct result *r = run_probe(name);

	assert_exited(r, 0);
	result_free(r);
}

static void test_init_run__seccomp_denies_namespaces(void **state)
{
	(void)state;
	expect_probe_ok("namespaces");
}

static void test_init_run__seccomp_clone3_enosys(void **state)
{
	(void)state;
	expect_probe_ok("clone3");
}

static void test_init_run__seccomp_allows_fork(void **state)
{
	(void)state;
	expect_probe_ok("fork");
}

static void test_init_run__seccomp_personality(void **state)
{
	(void)state;
	expect_probe_ok("personality");
}

static void test_init_run__seccomp_sockets(void **state)
{
	(void)state;
	expect_probe_ok("sockets");
}

static void test_init_run__seccomp_misc(void **state)
{
	(void)state;
	expect_probe_ok("misc");
}

static void test_init_run__no_fd_leak(void **state)
{
	(void)state;
	expect_probe_ok("fds");
}

/* Without close_range the init lists its open descriptors instead of
 * trying every number (65,536 calls cost seconds a run under gVisor): a
 * blind scan is killed by the filter, and a descriptor left open must not
 * reach the program. */
static void test_init_run__no_fd_leak_without_close_range(void **state)
{
	(void)state;
	no_close_range = 1;
	expect_probe_ok("fds");
}

static void expect_sigsys(const char *probe)
{
	struct result *r = run_probe(probe);
	uint32_t status, sig;

	assert_clean(r);
	status = r->exit.status;
	sig = r->exit.signal;
	result_free(r);
	/* SIGSEGV: the kernel has no such ABI at all, so there is nothing to filter. */
	if (status == SBX_FRAME_ST_SIGNALED && sig == SIGSEGV)
		skip();
	if (status != SBX_FRAME_ST_SIGNALED || sig != SIGSYS)
		fprintf(stderr, "  probe %s: status=%u signal=%u\n", probe, status, sig);
	assert_int_equal(status, SBX_FRAME_ST_SIGNALED);
	assert_int_equal(sig, SIGSYS);
}

static void test_init_run__seccomp_kills_i386_abi(void **state)
{
	(void)state;
#if defined(__x86_64__)
	expect_sigsys("i386");
#else
	skip();
#endif
}

static void test_init_run__seccomp_kills_x32_abi(void **state)
{
	(void)state;
#if defined(__x86_64__)
	expect_sigsys("x32");
#else
	skip();
#endif
}

static void test_init_run__rusage(void **state)
{
	struct result *r;

	(void)state;
	r = run_probe("spin");
	assert_exited(r, 0);
	assert_true(r->exit.utime_us + r->exit.stime_us > 0);
	assert_true(r->exit.maxrss_kb > 0);
	result_free(r);
}

static void expect_usage_error(const char *const *args)
{
	struct result *r = run_init(args);

	if (!WIFEXITED(r->wstatus) || WEXITSTATUS(r->wstatus) != 125)
		dump(r);
	assert_true(WIFEXITED(r->wstatus));
	assert_int_equal(WEXITSTATUS(r->wstatus), 125);
	assert_int_equal(r->frames, 0);
	assert_true(r->diag_len > 0);
	result_free(r);
}

static void test_init_run__usage_errors(void **state)
{
	static const char *const a1[] = {NULL};
	static const char *const a2[] = {"bogus", NULL};
	static const char *const a3[] = {"run", "--", "true", NULL};
	static const char *const a4[] = {"run", "--deadline-ms", "abc", "--", "true", NULL};
	static const char *const a5[] = {"run", "--deadline-ms", "0", "--", "true", NULL};
	static const char *const a6[] = {"run", "--deadline-ms", "-5", "--", "true", NULL};
	static const char *const a7[] = {"run", "--deadline-ms", "1000", NULL};
	static const char *const a8[] = {"run", "--deadline-ms", "1000", "--", NULL};
	static const char *const a9[] = {"run", "--deadline-ms", "1000", "true", NULL};
	static const char *const a10[] = {"run", "--deadline-ms", "1000", "--cwd", NULL};
	static const char *const a11[] = {"run", "--deadline-ms", "1000", "--deadline-ms", "10",
					  "--",	 "true",	  NULL};
	static const char *const a12[] = {"pid1", NULL};
	static const char *const a13[] = {"pid1", "--deadline", "soon", NULL};
	static const char *const a14[] = {"pid1", "--deadline", "-1", NULL};
	static const char *const a15[] = {"pid1", "--deadline", "100", "extra", NULL};
	static const char *const a16[] = {"pid1", "--deadline-ms", "100", NULL};
	static const char *const *const all[] = {a1, a2,  a3,  a4,  a5,	 a6,  a7,  a8,
						 a9, a10, a11, a12, a13, a14, a15, a16};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		expect_usage_error(all[i]);
}

static void test_init_run__pid1_deadline(void **state)
{
	char dl[32];
	const char *args[] = {"pid1", "--deadline", dl, NULL};
	struct result *r;

	(void)state;
	snprintf(dl, sizeof(dl), "%lld", (long long)time(NULL) + 2);
	r = run_init(args);
	assert_true(WIFEXITED(r->wstatus));
	assert_int_equal(WEXITSTATUS(r->wstatus), 124);
	assert_non_null(strstr(r->diag, "sbx-init: sandbox deadline reached"));
	/* The deadline was at least one whole second away. */
	assert_true(r->elapsed > 0.9);
	assert_true(r->elapsed < 20.0);
	assert_int_equal(r->frames, 0);
	result_free(r);
}

static void test_init_run__pid1_past_deadline(void **state)
{
	char dl[32];
	const char *args[] = {"pid1", "--deadline", dl, NULL};
	struct result *r;

	(void)state;
	snprintf(dl, sizeof(dl), "%lld", (long long)time(NULL) - 10);
	r = run_init(args);
	assert_true(WIFEXITED(r->wstatus));
	assert_int_equal(WEXITSTATUS(r->wstatus), 124);
	assert_true(r->elapsed < 10.0);
	result_free(r);
}

static void test_init_run__pid1_sigterm(void **state)
{
	char dl[32];
	const char *args[] = {"pid1", "--deadline", dl, NULL};
	struct result *r;

	(void)state;
	snprintf(dl, sizeof(dl), "%lld", (long long)time(NULL) + 120);
	r = run_init_ex(args, NULL, 1, 200);
	if (!WIFEXITED(r->wstatus))
		dump(r);
	assert_true(WIFEXITED(r->wstatus));
	assert_int_equal(WEXITSTATUS(r->wstatus), 143);
	assert_true(r->elapsed < 60.0);
	result_free(r);
}

/* ---- probes: run inside `sbx-init run`, report through the exit code ---- */

static int bad;

static void expect_errno(const char *what, long rc, int want)
{
	if (rc == -1 && errno == want)
		return;
	fprintf(stderr, "probe %s: rc=%ld errno=%d (%s), wanted errno %d\n", what, rc, errno,
		strerror(errno), want);
	bad = 1;
}

static void expect_success(const char *what, long rc)
{
	if (rc != -1)
		return;
	fprintf(stderr, "probe %s: failed: %s\n", what, strerror(errno));
	bad = 1;
}

static void probe_namespaces(void)
{
	static const unsigned long flags[] = {CLONE_NEWUSER,  CLONE_NEWNS,  CLONE_NEWNET,
					      CLONE_NEWPID,   CLONE_NEWUTS, CLONE_NEWIPC,
					      CLONE_NEWCGROUP};
	size_t i;

	expect_errno("unshare(0)", unshare(0), EPERM);
	expect_errno("unshare(NEWUSER)", unshare(CLONE_NEWUSER), EPERM);
	expect_errno("setns", setns(0, 0), EPERM);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		long rc = syscall(SYS_clone, flags[i] | SIGCHLD, NULL, NULL, NULL, NULL);

		if (rc == 0)
			_exit(0); /* a child that should never have been created */
		if (rc > 0)
			waitpid((pid_t)rc, NULL, 0);
		expect_errno("clone(CLONE_NEW*)", rc, EPERM);
	}
}

static void probe_clone3(void)
{
	expect_errno("clone3", syscall(SYS_clone3, NULL, (size_t)0), ENOSYS);
}

static void probe_fork(void)
{
	int st = -1;
	pid_t p = fork();

	if (p == 0)
		_exit(7);
	expect_success("fork", p);
	if (p > 0) {
		expect_success("waitpid", waitpid(p, &st, 0));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
			bad = 1;
	}
}

static void probe_personality(void)
{
	expect_success("personality(query)", personality(0xffffffff));
	expect_success("personality(PER_LINUX)", personality(PER_LINUX));
	expect_errno("personality(ADDR_NO_RANDOMIZE)", personality(ADDR_NO_RANDOMIZE), EPERM);
	expect_errno("personality(READ_IMPLIES_EXEC)", personality(READ_IMPLIES_EXEC), EPERM);
	expect_errno("personality(PER_LINUX32)", personality(PER_LINUX32), EPERM);
	expect_errno("personality(0xfffffffe)", personality(0xfffffffe), EPERM);
}

static void probe_sockets(void)
{
	/* Families refused whatever the type, including ones this kernel may lack. */
	static const struct {
		const char *name;
		int family, type;
	} refused[] = {
		{"AF_UNSPEC", AF_UNSPEC, SOCK_DGRAM},
		{"AF_ALG", AF_ALG, SOCK_SEQPACKET},
		{"AF_VSOCK", AF_VSOCK, SOCK_STREAM},
		{"AF_PACKET", AF_PACKET, SOCK_DGRAM},
		{"AF_NETLINK", AF_NETLINK, SOCK_DGRAM},
		{"AF_TIPC", AF_TIPC, SOCK_DGRAM},
		{"AF_RDS", AF_RDS, SOCK_SEQPACKET},
		{"AF_CAN", AF_CAN, SOCK_DGRAM},
		{"AF_X25", AF_X25, SOCK_SEQPACKET},
		{"AF_KEY", AF_KEY, SOCK_DGRAM},
		{"AF_SMC", AF_SMC, SOCK_STREAM},
		{"AF_BLUETOOTH", AF_BLUETOOTH, SOCK_STREAM},
		{"AF_AX25", AF_AX25, SOCK_SEQPACKET},
		{"AF_APPLETALK", AF_APPLETALK, SOCK_DGRAM},
		{"AF_IPX", AF_IPX, SOCK_DGRAM},
		{"AF_XDP", AF_XDP, SOCK_STREAM},
		{"AF_MAX+7", AF_MAX + 7, SOCK_STREAM},
		{"-1", -1, SOCK_STREAM},
		{"AF_INET+RAW", AF_INET, SOCK_RAW},
		{"AF_INET6+RAW", AF_INET6, SOCK_RAW},
		{"AF_INET+PACKET", AF_INET, SOCK_PACKET},
		{"AF_UNIX+RDM", AF_UNIX, SOCK_RDM},
	};
	int fd, sv[2];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "socket(%s)", refused[i].name);
		expect_errno(what, socket(refused[i].family, refused[i].type, 0), EPERM);
		snprintf(what, sizeof(what), "socketpair(%s)", refused[i].name);
		expect_errno(what, socketpair(refused[i].family, refused[i].type, 0, sv), EPERM);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	expect_success("socket(AF_UNIX)", fd);
	if (fd >= 0)
		close(fd);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	expect_success("socket(AF_INET, SOCK_DGRAM)", fd);
	if (fd >= 0)
		close(fd);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
	expect_success("socket(AF_INET6, SOCK_STREAM)", fd);
	if (fd >= 0)
		close(fd);
	expect_success("socketpair(AF_UNIX, SOCK_SEQPACKET)",
		       socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	close(sv[0]);
	close(sv[1]);
}

static void probe_misc(void)
{
	unsigned char params[256] = {0};

	expect_errno("io_uring_setup", syscall(SYS_io_uring_setup, 1, params), EPERM);
	expect_errno("userfaultfd", syscall(SYS_userfaultfd, 0), EPERM);
	expect_errno("bpf", syscall(SYS_bpf, 0, NULL, 0), EPERM);
	expect_errno("keyctl", syscall(SYS_keyctl, 0, -3, 0), EPERM);
	expect_errno("add_key", syscall(SYS_add_key, "user", "x", "y", 1, -3), EPERM);
	expect_errno("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	expect_errno("ptrace", ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM);
	expect_errno("process_vm_readv",
		     syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0), EPERM);
	expect_errno("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL), EPERM);
	expect_errno("chroot", syscall(SYS_chroot, "/"), EPERM);
	expect_errno("pidfd_getfd", syscall(SYS_pidfd_getfd, 0, 0, 0), EPERM);
	expect_errno("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM);
	expect_errno("syslog", syscall(SYS_syslog, 3, NULL, 0), EPERM);
	expect_errno("clock_settime", syscall(SYS_clock_settime, CLOCK_REALTIME, NULL), EPERM);
	/* An ordinary call still works. */
	expect_success("getpid", getpid());
}

static void probe_fds(void)
{
	int fd;

	/* Only 0, 1 and 2 may be open; 3 is free for the probe to use. */
	for (fd = 3; fd < 1024; fd++) {
		if (fcntl(fd, F_GETFD) >= 0) {
			fprintf(stderr, "probe fds: fd %d is open\n", fd);
			bad = 1;
		}
	}
}

static void probe_spin(void)
{
	volatile unsigned long x = 0;
	double end = now_s() + 0.05;

	while (now_s() < end)
		x++;
}

#if defined(__x86_64__)
static void probe_i386(void)
{
	long rc = 20; /* getpid on i386 */

	/* A kernel without the ABI faults instead; a sanitizer must not hide that. */
	signal(SIGSEGV, SIG_DFL);
	__asm__ volatile("int $0x80" : "+a"(rc) : : "memory");
	fprintf(stderr, "probe i386: int 0x80 returned %ld\n", rc);
	bad = 1;
}

static void probe_x32(void)
{
	long rc = syscall(0x40000000L | SYS_getpid);

	fprintf(stderr, "probe x32: returned %ld\n", rc);
	bad = 1;
}
#endif

static int probe(const char *name)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} probes[] = {
		{"namespaces", probe_namespaces},
		{"clone3", probe_clone3},
		{"fork", probe_fork},
		{"personality", probe_personality},
		{"sockets", probe_sockets},
		{"misc", probe_misc},
		{"fds", probe_fds},
		{"spin", probe_spin},
#if defined(__x86_64__)
		{"i386", probe_i386},
		{"x32", probe_x32},
#endif
	};
	size_t i;

	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (strcmp(probes[i].name, name) == 0) {
			probes[i].fn();
			return bad ? 1 : 0;
		}
	}
	fprintf(stderr, "unknown probe %s\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_run__stdout_frames),
		cmocka_unit_test(test_init_run__stderr_separate),
		cmocka_unit_test(test_init_run__exit_code),
		cmocka_unit_test(test_init_run__signaled),
		cmocka_unit_test(test_init_run__signal_dispositions_reset),
		cmocka_unit_test(test_init_run__exec_not_found),
		cmocka_unit_test(test_init_run__exec_permission_denied),
		cmocka_unit_test(test_init_run__cwd),
		cmocka_unit_test(test_init_run__bad_cwd),
		cmocka_unit_test(test_init_run__stdin_inherited),
		cmocka_unit_test(test_init_run__waits_for_the_end_of_stdin),
		cmocka_unit_test(test_init_run__large_output),
		cmocka_unit_test(test_init_run__timeout_kills_tree),
		cmocka_unit_test(test_init_run__background_killed_after_exit),
		cmocka_unit_test(test_init_run__escaped_orphan_killed),
		cmocka_unit_test(test_init_run__caps_nnp_seccomp),
		cmocka_unit_test(test_init_run__cannot_forge_frames),
		cmocka_unit_test(test_init_run__unshare_denied),
		cmocka_unit_test(test_init_run__as_root_in_own_namespace),
		cmocka_unit_test(test_init_run__as_root_refused_as_uid0),
		cmocka_unit_test(test_init_run__seccomp_denies_namespaces),
		cmocka_unit_test(test_init_run__seccomp_clone3_enosys),
		cmocka_unit_test(test_init_run__seccomp_allows_fork),
		cmocka_unit_test(test_init_run__seccomp_personality),
		cmocka_unit_test(test_init_run__seccomp_sockets),
		cmocka_unit_test(test_init_run__seccomp_misc),
		cmocka_unit_test(test_init_run__no_fd_leak),
		cmocka_unit_test(test_init_run__no_fd_leak_without_close_range),
		cmocka_unit_test(test_init_run__seccomp_kills_i386_abi),
		cmocka_unit_test(test_init_run__seccomp_kills_x32_abi),
		cmocka_unit_test(test_init_run__rusage),
		cmocka_unit_test(test_init_run__usage_errors),
		cmocka_unit_test(test_init_run__pid1_deadline),
		cmocka_unit_test(test_init_run__pid1_past_deadline),
		cmocka_unit_test(test_init_run__pid1_sigterm),
	};
	ssize_t n;

	if (argc == 3 && strcmp(argv[1], "--probe") == 0)
		return probe(argv[2]);

	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "cannot find this test binary: %s\n", strerror(errno));
		return 1;
	}
	self_exe[n] = '\0';
	if (access(init_path(), X_OK) != 0) {
		fprintf(stderr,
			"%s: not found or not executable (build it or set SANDBOXIO_INIT)\n",
			init_path());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
