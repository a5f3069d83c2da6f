/*
 * tests/unit/init/test_init_chan.c: runs the built sbx-init as
 * `pid1 --channel` on the host, with its stdin and stdout on pipes, and
 * speaks the run channel to it as the host would (docs/protocol.md).
 *
 * Its answers are read with the strict host-direction decoder, and every
 * frame is checked against the rules the host enforces (HELLO first, ids of
 * runs in flight only, nothing after a run's EXIT, credit within what was
 * sent). Covered: runs and their results, runs in flight together, stdin
 * under the window, the environment, deadlines that kill the whole tree,
 * the lockdown a run inherits, what a run cannot reach of PID 1, and what
 * the init does with a host that breaks the protocol or goes away.
 *
 * The init binary is $SANDBOXIO_INIT, or build/sbx-init.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/frame.h"

#define IDS 64
#define WAIT_MS 120000

struct runres {
	int exit_seen;
	struct sbx__frame_exit exit;
	char *out, *err;
	size_t out_len, err_len;
	uint64_t sent, credited;
};

struct init {
	pid_t pid;
	int in_w, out_r, err_r;
	struct sbx__chan_decoder dec;
	int frames, hello, closed, bad;
	char closed_why[512];
	char diag[8192];
	size_t diag_len;
	struct runres run[IDS];
};

static const char *init_path(void)
{
	const char *p = getenv("SANDBOXIO_INIT");

	return p && *p ? p : "build/sbx-init";
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void append(char **b, size_t *len, const unsigned char *p, size_t n)
{
	char *nb = realloc(*b, *len + n + 1);

	assert_non_null(nb);
	memcpy(nb + *len, p, n);
	*len += n;
	nb[*len] = '\0';
	*b = nb;
}

/* The host's rules on top of the decoder's. */
static int on_frame(int type, unsigned int id, const unsigned char *p, size_t len, void *arg)
{
	struct init *ip = arg;
	struct runres *r = id < IDS ? &ip->run[id] : NULL;

	if (ip->frames++ == 0 && type != SBX_FRAME_HELLO)
		return -2;
	if (type == SBX_FRAME_HELLO) {
		struct sbx__chan_hello h;

		if (ip->hello || sbx__chan_hello_decode(&h, p, len) != 0 ||
		    h.version != SBX_CHAN_VERSION || h.runs_max != SBX_CHAN_RUNS_MAX ||
		    h.window != SBX_CHAN_WINDOW)
			return -3;
		ip->hello = 1;
		return 0;
	}
	if (id == 0) {
		snprintf(ip->closed_why, sizeof(ip->closed_why), "%.*s", (int)len, p);
		ip->closed = 1;
		return 0;
	}
	if (!r || r->exit_seen)
		return -4;
	switch (type) {
	case SBX_FRAME_STDOUT:
		append(&r->out, &r->out_len, p, len);
		return 0;
	case SBX_FRAME_STDERR:
	case SBX_FRAME_ERROR:
		append(&r->err, &r->err_len, p, len);
		return 0;
	case SBX_FRAME_EXIT:
		r->exit_seen = 1;
		return sbx__frame_exit_decode(&r->exit, p, len) == 0 ? 0 : -5;
	case SBX_FRAME_CREDIT:
		r->credited += sbx__chan_credit_decode(p, len);
		return r->credited <= r->sent ? 0 : -6;
	default:
		return -7;
	}
}

static void start_env(struct init *ip, char *const envp[])
{
	int in[2], out[2], err[2];
	char dl[32];

	memset(ip, 0, sizeof(*ip));
	sbx__chan_decoder_init(&ip->dec, SBX_CHAN_TO_HOST);
	snprintf(dl, sizeof(dl), "%lld", (long long)time(NULL) + 120);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	ip->pid = fork();
	assert_true(ip->pid >= 0);
	if (ip->pid == 0) {
		char *argv[] = {(char *)init_path(), "pid1", "--deadline", dl, "--channel", NULL};

		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(99);
		if (envp)
			execve(argv[0], argv, envp);
		else
			execv(argv[0], argv);
		_exit(98);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	ip->in_w = in[1];
	ip->out_r = out[0];
	ip->err_r = err[0];
	fcntl(ip->out_r, F_SETFL, O_NONBLOCK);
	fcntl(ip->err_r, F_SETFL, O_NONBLOCK);
}

static void start(struct init *ip)
{
	start_env(ip, NULL);
}

/* Reads what the init says for up to ms; fails the test on a broken rule. */
static void pump(struct init *ip, int ms)
{
	struct pollfd pfd[2] = {{.fd = ip->out_r, .events = POLLIN},
				{.fd = ip->err_r, .events = POLLIN}};
	unsigned char buf[65536];
	ssize_t n;

	if (poll(pfd, 2, ms) <= 0)
		return;
	if (pfd[0].revents) {
		n = read(ip->out_r, buf, sizeof(buf));
		if (n > 0) {
			int rc = sbx__chan_feed(&ip->dec, buf, (size_t)n, on_frame, ip);

			if (rc != 0)
				fail_msg("the init broke the protocol (rc %d)", rc);
		}
	}
	if (pfd[1].revents) {
		n = read(ip->err_r, buf, sizeof(buf));
		if (n > 0 && ip->diag_len + (size_t)n < sizeof(ip->diag)) {
			memcpy(ip->diag + ip->diag_len, buf, (size_t)n);
			ip->diag_len += (size_t)n;
			ip->diag[ip->diag_len] = '\0';
		}
	}
}

static void write_all(struct init *ip, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n) {
		ssize_t w = write(ip->in_w, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		assert_true(w > 0);
		c += w;
		n -= (size_t)w;
	}
}

static void send_frame(struct init *ip, int type, unsigned int id, const void *p, size_t n)
{
	unsigned char h[SBX_FRAME_HDR];

	sbx__chan_header(h, type, id, (uint32_t)n);
	write_all(ip, h, sizeof(h));
	if (n)
		write_all(ip, p, n);
}

/* OPEN and SPEC for a run of argv with env in cwd. */
static void send_open(struct init *ip,
		      unsigned int id,
		      const char *const *argv,
		      const char *const *env,
		      const char *cwd,
		      uint64_t deadline_ms)
{
	struct sbx__chan_open o = {.deadline_ms = deadline_ms};
	unsigned char op[SBX_FRAME_OPEN_LEN];
	char *spec = NULL;
	size_t len = 0;

	append(&spec, &len, (const unsigned char *)cwd, strlen(cwd) + 1);
	for (; argv[o.argc]; o.argc++)
		append(&spec, &len, (const unsigned char *)argv[o.argc], strlen(argv[o.argc]) + 1);
	for (; env && env[o.envc]; o.envc++)
		append(&spec, &len, (const unsigned char *)env[o.envc], strlen(env[o.envc]) + 1);
	o.spec_len = (uint32_t)len;
	sbx__chan_open_encode(op, &o);
	send_frame(ip, SBX_FRAME_OPEN, id, op, sizeof(op));
	send_frame(ip, SBX_FRAME_SPEC, id, spec, len);
	free(spec);
}

/* Sends stdin within the window (reading credits as they come), then EOF. */
static void send_stdin(struct init *ip, unsigned int id, const void *p, size_t n)
{
	const unsigned char *c = p;
	long long end = now_ms() + WAIT_MS;
	struct runres *r = &ip->run[id];

	while (n && !r->exit_seen) {
		size_t room = SBX_CHAN_WINDOW - (size_t)(r->sent - r->credited);
		size_t k = n < room ? n : room;

		if (k > SBX_FRAME_MAX)
			k = SBX_FRAME_MAX;
		if (k == 0) {
			assert_true(now_ms() < end);
			pump(ip, 50);
			continue;
		}
		send_frame(ip, SBX_FRAME_STDIN, id, c, k);
		r->sent += k;
		c += k;
		n -= k;
	}
	send_frame(ip, SBX_FRAME_STDIN_EOF, id, NULL, 0);
}

static void run_sh(struct init *ip, unsigned int id, const char *line, uint64_t deadline_ms)
{
	const char *argv[] = {"sh", "-c", line, NULL};

	send_open(ip, id, argv, NULL, "/tmp", deadline_ms);
	send_frame(ip, SBX_FRAME_STDIN_EOF, id, NULL, 0);
}

static void wait_exit(struct init *ip, unsigned int id)
{
	long long end = now_ms() + WAIT_MS;

	while (!ip->run[id].exit_seen) {
		if (now_ms() > end)
			fail_msg("run %u did not end; init said: %s", id, ip->diag);
		pump(ip, 50);
	}
}

/* OPEN with a terminal of rows x cols, and SPEC, for argv in /tmp. */
static void send_open_pty(struct init *ip,
			  unsigned int id,
			  const char *const *argv,
			  uint16_t rows,
			  uint16_t cols,
			  uint64_t deadline_ms)
{
	struct sbx__chan_open o = {
		.flags = SBX_CHAN_OPEN_PTY, .deadline_ms = deadline_ms, .rows = rows, .cols = cols};
	unsigned char op[SBX_FRAME_OPEN_PTY_LEN];
	char *spec = NULL;
	size_t len = 0;

	append(&spec, &len, (const unsigned char *)"/tmp", 5);
	for (; argv[o.argc]; o.argc++)
		append(&spec, &len, (const unsigned char *)argv[o.argc], strlen(argv[o.argc]) + 1);
	o.spec_len = (uint32_t)len;
	assert_int_equal(sbx__chan_open_encode(op, &o), sizeof(op));
	send_frame(ip, SBX_FRAME_OPEN, id, op, sizeof(op));
	send_frame(ip, SBX_FRAME_SPEC, id, spec, len);
	free(spec);
}

/* Stdin without its end (a few bytes: within the window). */
static void send_input(struct init *ip, unsigned int id, const char *p)
{
	send_frame(ip, SBX_FRAME_STDIN, id, p, strlen(p));
	ip->run[id].sent += strlen(p);
}

static void send_resize(struct init *ip, unsigned int id, uint16_t rows, uint16_t cols)
{
	unsigned char p[SBX_FRAME_RESIZE_LEN];

	sbx__chan_resize_encode(p, rows, cols);
	send_frame(ip, SBX_FRAME_RESIZE, id, p, sizeof(p));
}

/* Waits until run id's output holds needle. */
static void wait_out(struct init *ip, unsigned int id, const char *needle)
{
	long long end = now_ms() + WAIT_MS;

	while (!ip->run[id].out || !strstr(ip->run[id].out, needle)) {
		if (now_ms() > end || ip->run[id].exit_seen)
			fail_msg("run %u did not say '%s' (it said '%s'); init said: %s", id,
				 needle, ip->run[id].out ? ip->run[id].out : "", ip->diag);
		pump(ip, 50);
	}
}

static void stop(struct init *ip)
{
	int st;

	kill(ip->pid, SIGTERM);
	assert_int_equal(waitpid(ip->pid, &st, 0), ip->pid);
	close(ip->in_w);
	close(ip->out_r);
	close(ip->err_r);
	for (int i = 0; i < IDS; i++) {
		free(ip->run[i].out);
		free(ip->run[i].err);
	}
}

static int pid_alive(pid_t p)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

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

static pid_t read_pid(const char *path)
{
	long long end = now_ms() + WAIT_MS;
	char buf[32] = "";

	while (now_ms() < end) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			close(fd);
		if (n > 0 && buf[n - 1] == '\n') {
			buf[n] = '\0';
			return (pid_t)atoi(buf);
		}
		usleep(10000);
	}
	fail_msg("no pid in %s", path);
	return 0;
}

static void wait_dead(pid_t p)
{
	long long end = now_ms() + WAIT_MS;

	while (pid_alive(p) && now_ms() < end)
		usleep(10000);
	if (pid_alive(p)) {
		kill(p, SIGKILL);
		fail_msg("process %d outlived its run", (int)p);
	}
}

static int count_fds(pid_t p)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)p);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_init_chan__hello_first(void **state)
{
	struct init ip;

	(void)state;
	start(&ip);
	for (long long end = now_ms() + WAIT_MS; !ip.hello && now_ms() < end;)
		pump(&ip, 50);
	assert_true(ip.hello);
	assert_int_equal(ip.frames, 1);
	stop(&ip);
}

static void test_init_chan__run_and_result(void **state)
{
	struct init ip;

	(void)state;
	start(&ip);
	run_sh(&ip, 42, "echo out; echo err >&2; exit 7", 10000);
	wait_exit(&ip, 42);
	assert_int_equal(ip.run[42].exit.status, SBX_FRAME_ST_EXITED);
	assert_int_equal(ip.run[42].exit.code, 7);
	assert_string_equal(ip.run[42].out, "out\n");
	assert_string_equal(ip.run[42].err, "err\n");
	stop(&ip);
}

static void test_init_chan__argv_verbatim_and_cwd(void **state)
{
	const char *argv[] = {"sh", "-c", "printf '[%s]' \"$@\"; pwd", "x", "a b", "$HOME",
			      "",   NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open(&ip, 1, argv, NULL, "/usr", 10000);
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	wait_exit(&ip, 1);
	assert_string_equal(ip.run[1].out, "[a b][$HOME][]/usr\n");
	stop(&ip);
}

/* Run 1 waits for a file that is made only once run 2 has ended. */
static void test_init_chan__runs_in_flight_together(void **state)
{
	const char *slow[] = {"sh", "-c", "read go; echo slow", NULL};
	struct init ip;

	(void)state;
	start(&ip);
	/* Run 1 waits for a line the host sends only once run 2 is over. */
	send_open(&ip, 1, slow, NULL, "/tmp", 60000);
	run_sh(&ip, 2, "echo fast", 60000);
	wait_exit(&ip, 2);
	assert_false(ip.run[1].exit_seen);
	assert_string_equal(ip.run[2].out, "fast\n");
	send_stdin(&ip, 1, "go\n", 3);
	wait_exit(&ip, 1);
	assert_int_equal(ip.run[1].exit.status, SBX_FRAME_ST_EXITED);
	assert_string_equal(ip.run[1].out, "slow\n");
	stop(&ip);
}

static void test_init_chan__stdin_past_the_window(void **state)
{
	const char *argv[] = {"wc", "-c", NULL};
	static char big[300000];
	struct init ip;

	(void)state;
	memset(big, 'x', sizeof(big));
	start(&ip);
	send_open(&ip, 3, argv, NULL, "/", 10000);
	send_stdin(&ip, 3, big, sizeof(big));
	wait_exit(&ip, 3);
	assert_string_equal(ip.run[3].out, "300000\n");
	assert_int_equal(ip.run[3].credited, sizeof(big));
	stop(&ip);
}

/* A program that reads none of its input still ends, and the id is free again. */
static void test_init_chan__unread_stdin(void **state)
{
	const char *argv[] = {"true", NULL};
	static char big[1 << 20];
	struct init ip;

	(void)state;
	start(&ip);
	send_open(&ip, 4, argv, NULL, "/", 10000);
	send_stdin(&ip, 4, big, sizeof(big));
	wait_exit(&ip, 4);
	assert_int_equal(ip.run[4].exit.code, 0);
	memset(&ip.run[4], 0, sizeof(ip.run[4]));
	run_sh(&ip, 4, "echo again", 10000);
	wait_exit(&ip, 4);
	assert_string_equal(ip.run[4].out, "again\n");
	stop(&ip);
}

static void test_init_chan__environment(void **state)
{
	char *envp[] = {"PATH=/usr/bin:/bin", "FOO=init", "KEEP=yes", NULL};
	const char *argv[] = {"sh", "-c", "echo $FOO $KEEP $NEW", NULL};
	const char *env[] = {"FOO=first", "NEW=1", "FOO=run", NULL};
	struct init ip;

	(void)state;
	start_env(&ip, envp);
	send_open(&ip, 1, argv, env, "/", 10000);
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	wait_exit(&ip, 1);
	assert_string_equal(ip.run[1].out, "run yes 1\n");
	stop(&ip);
}

/* A run's environment (secrets) reaches only its program: not PID 1's own, not its stderr. */
static void test_init_chan__environment_stays_with_the_run(void **state)
{
	const char *argv[] = {"sh", "-c", "test \"$TOKEN\" = s3cr3t-v4lue && echo ok", NULL};
	const char *env[] = {"TOKEN=s3cr3t-v4lue", NULL};
	char path[64], buf[65536];
	struct init ip;
	ssize_t n;
	int fd;

	(void)state;
	start(&ip);
	send_open(&ip, 1, argv, env, "/", 10000);
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 1, NULL, 0);
	wait_exit(&ip, 1);
	assert_string_equal(ip.run[1].out, "ok\n");
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)ip.pid);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_true(n >= 0);
	assert_null(memmem(buf, (size_t)n, "s3cr3t", 6));
	pump(&ip, 100);
	assert_null(strstr(ip.diag, "s3cr3t"));
	stop(&ip);
}

static void test_init_chan__command_not_found(void **state)
{
	const char *argv[] = {"no-such-program-here", NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open(&ip, 9, argv, NULL, "/", 10000);
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 9, NULL, 0);
	wait_exit(&ip, 9);
	assert_int_equal(ip.run[9].exit.status, SBX_FRAME_ST_EXECFAIL);
	assert_int_equal(ip.run[9].exit.code, 127);
	assert_non_null(strstr(ip.run[9].err, "no-such-program-here"));
	stop(&ip);
}

/*
 * At its deadline a run's whole tree dies, including what left its process
 * group. A deadline that struck before the tree was whole (the escaped
 * child wrote its pid) proves nothing: the run goes again with twice the
 * deadline.
 */
static void test_init_chan__deadline_kills_tree(void **state)
{
	char dir[] = "/tmp/sbx-chan-test.XXXXXX", line[512], file[128];
	struct init ip;
	unsigned int id = 5;
	uint64_t dl;
	pid_t p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/pid", dir);
	snprintf(line, sizeof(line),
		 "setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300' & sleep 301", file,
		 file, file);
	start(&ip);
	for (dl = 700; dl <= 44800; dl *= 2, id++) {
		run_sh(&ip, id, line, dl);
		wait_exit(&ip, id);
		assert_int_equal(ip.run[id].exit.status, SBX_FRAME_ST_TIMEOUT);
		assert_int_equal(ip.run[id].exit.code, 124);
		if (access(file, F_OK) == 0)
			break;
	}
	p = read_pid(file);
	wait_dead(p);
	stop(&ip);
	unlink(file);
	rmdir(dir);
}

static void test_init_chan__background_ends_with_run(void **state)
{
	char dir[] = "/tmp/sbx-chan-test.XXXXXX", line[512], file[128];
	struct init ip;
	pid_t p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/pid", dir);
	snprintf(line, sizeof(line),
		 "sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300' & "
		 "while [ ! -s %s ]; do sleep 0.01; done",
		 file, file, file, file);
	start(&ip);
	run_sh(&ip, 6, line, 20000);
	wait_exit(&ip, 6);
	assert_int_equal(ip.run[6].exit.code, 0);
	p = read_pid(file);
	wait_dead(p);
	stop(&ip);
	unlink(file);
	rmdir(dir);
}

/* A run inherits PID 1's lockdown: no_new_privs, a seccomp filter, no capabilities. */
static void test_init_chan__run_is_locked_down(void **state)
{
	struct init ip;

	(void)state;
	start(&ip);
	run_sh(&ip, 1,
	       "grep -E '^(Seccomp|CapEff|CapPrm|CapBnd):' /proc/self/status | tr -s "
	       "'\\t ' ' '; setpriv -d | grep no_new_privs",
	       10000);
	wait_exit(&ip, 1);
	/* Asked of the kernel (PR_GET_NO_NEW_PRIVS): gVisor's status file has no such line. */
	assert_non_null(strstr(ip.run[1].out, "no_new_privs: 1\n"));
	assert_non_null(strstr(ip.run[1].out, "Seccomp: 2\n"));
	assert_non_null(strstr(ip.run[1].out, "CapEff: 0000000000000000\n"));
	assert_non_null(strstr(ip.run[1].out, "CapPrm: 0000000000000000\n"));
	assert_non_null(strstr(ip.run[1].out, "CapBnd: 0000000000000000\n"));
	stop(&ip);
}

/*
 * A run cannot reach the channel: PID 1's and the supervisors' fds (the
 * requests of other runs, the frames to the host) and PID 1's memory are
 * closed to it.
 */
static void test_init_chan__channel_out_of_reach(void **state)
{
	char line[1024];
	struct init ip;

	(void)state;
	start(&ip);
	snprintf(line, sizeof(line),
		 "for p in %d $(cat /proc/%d/task/*/children) $PPID; do "
		 "  [ $p = $$ ] && continue; "
		 "  readlink /proc/$p/fd/0 >/dev/null 2>&1 && echo fds-open-$p; "
		 "  cat /proc/$p/environ >/dev/null 2>&1 && echo environ-open-$p; "
		 "  echo x 2>/dev/null > /proc/$p/fd/1 && echo wrote-$p; "
		 "  head -c1 /proc/$p/mem >/dev/null 2>&1 && echo mem-open-$p; "
		 "done; echo checked",
		 (int)ip.pid, (int)ip.pid);
	run_sh(&ip, 1, line, 10000);
	wait_exit(&ip, 1);
	assert_string_equal(ip.run[1].out, "checked\n");
	stop(&ip);
}

/* A host that breaks the protocol: the channel closes, with word why, and its runs die. */
static void test_init_chan__host_violation_closes(void **state)
{
	char dir[] = "/tmp/sbx-chan-test.XXXXXX", line[512], file[128];
	static const unsigned char junk[] = {0xA5, 0x77, 0, 1, 0, 0, 0, 0};
	struct init ip;
	pid_t p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/pid", dir);
	snprintf(line, sizeof(line), "echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300", file, file,
		 file);
	start(&ip);
	run_sh(&ip, 1, line, 60000);
	p = read_pid(file);
	write_all(&ip, junk, sizeof(junk));
	for (long long end = now_ms() + WAIT_MS; !ip.closed && now_ms() < end;)
		pump(&ip, 50);
	assert_true(ip.closed);
	assert_non_null(strstr(ip.closed_why, "malformed"));
	wait_dead(p);
	/* PID 1 itself stays: the sandbox lives on for docker exec. */
	assert_true(pid_alive(ip.pid));
	stop(&ip);
	unlink(file);
	rmdir(dir);
}

/* The host lets go of the channel: the runs in flight are stopped. */
static void test_init_chan__input_end_stops_runs(void **state)
{
	char dir[] = "/tmp/sbx-chan-test.XXXXXX", line[512], file[128];
	struct init ip;
	pid_t p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/pid", dir);
	snprintf(line, sizeof(line), "echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300", file, file,
		 file);
	start(&ip);
	run_sh(&ip, 1, line, 60000);
	p = read_pid(file);
	close(ip.in_w);
	ip.in_w = open("/dev/null", O_WRONLY);
	wait_dead(p);
	assert_true(pid_alive(ip.pid));
	stop(&ip);
	unlink(file);
	rmdir(dir);
}

/*
 * PID 1 between runs: no run's supervisor left, the spare one for the next
 * run forked (one child, alive); then its fds, once they no longer change
 * from one look to the next, or -1 if it never got there (hang guard).
 */
static int idle_fds(struct init *ip)
{
	long long end = now_ms() + WAIT_MS;
	int last = -1;

	while (now_ms() < end) {
		char path[64], kids[256];
		int n = 0, fd, live = 0;
		ssize_t k;

		pump(ip, 10);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)ip->pid,
			 (int)ip->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		k = read(fd, kids, sizeof(kids) - 1);
		close(fd);
		kids[k > 0 ? k : 0] = '\0';
		for (char *t = strtok(kids, " \n"); t; t = strtok(NULL, " \n"), n++)
			live += pid_alive((pid_t)atoi(t));
		if (n == 1 && live == 1) {
			int now = count_fds(ip->pid);

			if (now == last)
				return now;
			last = now;
		} else {
			last = -1;
		}
	}
	return -1;
}

/* Many runs one after another leave PID 1 as they found it. */
static void test_init_chan__no_leak_across_runs(void **state)
{
	struct init ip;
	int before, after = -1;

	(void)state;
	start(&ip);
	run_sh(&ip, 1, "true", 10000);
	wait_exit(&ip, 1);
	before = idle_fds(&ip);
	assert_true(before > 0);
	for (unsigned int k = 0; k < 150; k++) {
		unsigned int id = 2 + k % (IDS - 2);

		memset(&ip.run[id], 0, sizeof(ip.run[id]));
		run_sh(&ip, id, "echo $$", 10000);
		wait_exit(&ip, id);
		assert_int_equal(ip.run[id].exit.code, 0);
		free(ip.run[id].out);
		ip.run[id].out = NULL;
	}
	/* A leak never settles back; a slow machine only takes longer to (hang guard). */
	for (long long end = now_ms() + WAIT_MS; after != before && now_ms() < end;)
		after = idle_fds(&ip);
	assert_int_equal(after, before);
	stop(&ip);
}

/* Forgets what run id said, so that a later run can use the id again. */
static void forget_run(struct init *ip, unsigned int id)
{
	free(ip->run[id].out);
	free(ip->run[id].err);
	memset(&ip->run[id], 0, sizeof(ip->run[id]));
}

/*
 * What a run leaves behind outside its process group, orphaned, ends with
 * the run, as seen from inside: later runs look for it. So the proof holds
 * where the init runs under another kernel whose pids the host cannot see
 * (gVisor, SBX_INIT_KERNEL=gvisor). A kernel without child subreapers
 * (gVisor as Debian 12 ships it) gives the orphan to PID 1, which ends it
 * once no run is in flight; the look is repeated until then, bounded only
 * as a hang guard.
 */
static void test_init_chan__escaped_orphan_ends(void **state)
{
	char dir[] = "/tmp/sbx-chan-test.XXXXXX", line[512], look[256], file[128];
	long long end = now_ms() + WAIT_MS;
	struct init ip;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/pid", dir);
	snprintf(line, sizeof(line),
		 "(setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300' "
		 ">/dev/null 2>&1 &); while [ ! -s %s ]; do sleep 0.01; done",
		 file, file, file, file);
	snprintf(look, sizeof(look), "kill -0 $(cat %s) 2>/dev/null && echo alive || echo gone",
		 file);
	start(&ip);
	run_sh(&ip, 1, line, 20000);
	wait_exit(&ip, 1);
	assert_int_equal(ip.run[1].exit.code, 0);
	for (;;) {
		forget_run(&ip, 2);
		run_sh(&ip, 2, look, 20000);
		wait_exit(&ip, 2);
		assert_int_equal(ip.run[2].exit.code, 0);
		assert_non_null(ip.run[2].out);
		if (strcmp(ip.run[2].out, "gone\n") == 0)
			break;
		assert_string_equal(ip.run[2].out, "alive\n");
		if (now_ms() > end)
			fail_msg("the orphan of run 1 outlived it");
	}
	stop(&ip);
	unlink(file);
	rmdir(dir);
}

/*
 * The program's stdio is a terminal of the size asked, in a new session
 * (that it is the controlling terminal shows in the ^C case: the line
 * discipline signals the session's foreground group).
 */
static void test_init_chan__pty_terminal(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "for f in 0 1 2; do test -t $f || echo \"fd $f is no tty\"; done; "
			      "read pid comm st ppid pgrp sid rest < /proc/self/stat; "
			      "[ \"$sid\" = $$ ] && [ \"$pgrp\" = $$ ] && echo leader; "
			      "stty size; echo err >&2; exit 3",
			      NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open_pty(&ip, 5, argv, 30, 100, 20000);
	wait_exit(&ip, 5);
	assert_int_equal(ip.run[5].exit.status, SBX_FRAME_ST_EXITED);
	assert_int_equal(ip.run[5].exit.code, 3);
	assert_non_null(ip.run[5].out);
	assert_null(strstr(ip.run[5].out, "no tty"));
	assert_non_null(strstr(ip.run[5].out, "leader"));
	/* The terminal's own newline is CR LF: output went through the line discipline. */
	assert_non_null(strstr(ip.run[5].out, "30 100\r\n"));
	assert_non_null(strstr(ip.run[5].out, "err"));
	/* Everything comes on the terminal: nothing on stderr. */
	assert_int_equal(ip.run[5].err_len, 0);
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 5, NULL, 0);
	stop(&ip);
}

/* RESIZE sets the terminal's size, and the program gets SIGWINCH. */
static void test_init_chan__pty_resize(void **state)
{
	const char *argv[] = {
		"sh", "-c", "trap 'stty size; exit 7' WINCH; echo ready; while :; do sleep 1; done",
		NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open_pty(&ip, 6, argv, 24, 80, 60000);
	wait_out(&ip, 6, "ready");
	send_resize(&ip, 6, 40, 120);
	wait_exit(&ip, 6);
	assert_int_equal(ip.run[6].exit.code, 7);
	assert_non_null(strstr(ip.run[6].out, "40 120"));
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 6, NULL, 0);
	stop(&ip);
}

/* RESIZE sets the terminal's size (also where no SIGWINCH comes: gVisor as Debian ships it). */
static void test_init_chan__pty_resize_sets_size(void **state)
{
	const char *argv[] = {"sh", "-c", "echo ready; read x; stty size", NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open_pty(&ip, 9, argv, 24, 80, 60000);
	wait_out(&ip, 9, "ready");
	send_resize(&ip, 9, 40, 120);
	/* Frames are handled in order: the size is set before the line arrives. */
	send_input(&ip, 9, "go\n");
	wait_exit(&ip, 9);
	assert_int_equal(ip.run[9].exit.code, 0);
	assert_non_null(strstr(ip.run[9].out, "40 120"));
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 9, NULL, 0);
	stop(&ip);
}

/* Input reaches the program through the terminal: lines, and ^C as SIGINT. */
static void test_init_chan__pty_input_and_ctrl_c(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "read line; echo \"got:$line\"; trap 'echo caught; exit 5' INT; "
			      "echo ready; while :; do sleep 1; done",
			      NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open_pty(&ip, 7, argv, 24, 80, 60000);
	send_input(&ip, 7, "hello\n");
	wait_out(&ip, 7, "got:hello");
	wait_out(&ip, 7, "ready");
	/* The byte, not a signal: the terminal's line discipline makes SIGINT of it. */
	send_input(&ip, 7, "\003");
	wait_exit(&ip, 7);
	assert_int_equal(ip.run[7].exit.status, SBX_FRAME_ST_EXITED);
	assert_int_equal(ip.run[7].exit.code, 5);
	assert_non_null(strstr(ip.run[7].out, "caught"));
	assert_int_equal(ip.run[7].credited, ip.run[7].sent);
	send_frame(&ip, SBX_FRAME_STDIN_EOF, 7, NULL, 0);
	stop(&ip);
}

/* A RESIZE for a run without a terminal closes the channel. */
static void test_init_chan__resize_without_pty_closes(void **state)
{
	const char *argv[] = {"sh", "-c", "read x", NULL};
	struct init ip;

	(void)state;
	start(&ip);
	send_open(&ip, 8, argv, NULL, "/tmp", 60000);
	send_resize(&ip, 8, 24, 80);
	for (long long end = now_ms() + WAIT_MS; !ip.closed && now_ms() < end;)
		pump(&ip, 50);
	assert_true(ip.closed);
	assert_non_null(strstr(ip.closed_why, "without a terminal"));
	stop(&ip);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_chan__hello_first),
		cmocka_unit_test(test_init_chan__run_and_result),
		cmocka_unit_test(test_init_chan__argv_verbatim_and_cwd),
		cmocka_unit_test(test_init_chan__runs_in_flight_together),
		cmocka_unit_test(test_init_chan__stdin_past_the_window),
		cmocka_unit_test(test_init_chan__unread_stdin),
		cmocka_unit_test(test_init_chan__environment),
		cmocka_unit_test(test_init_chan__environment_stays_with_the_run),
		cmocka_unit_test(test_init_chan__command_not_found),
		cmocka_unit_test(test_init_chan__deadline_kills_tree),
		cmocka_unit_test(test_init_chan__background_ends_with_run),
		cmocka_unit_test(test_init_chan__run_is_locked_down),
		cmocka_unit_test(test_init_chan__channel_out_of_reach),
		cmocka_unit_test(test_init_chan__host_violation_closes),
		cmocka_unit_test(test_init_chan__input_end_stops_runs),
		cmocka_unit_test(test_init_chan__no_leak_across_runs),
		cmocka_unit_test(test_init_chan__escaped_orphan_ends),
		cmocka_unit_test(test_init_chan__pty_terminal),
		cmocka_unit_test(test_init_chan__pty_resize),
		cmocka_unit_test(test_init_chan__pty_resize_sets_size),
		cmocka_unit_test(test_init_chan__pty_input_and_ctrl_c),
		cmocka_unit_test(test_init_chan__resize_without_pty_closes),
	};
	/*
	 * Under gVisor the init's processes live in the sandbox's own kernel,
	 * where the host's pids do not reach: the cases that look at them by
	 * host pid (kill, /proc) cannot run there, and running them would
	 * signal unrelated host processes. A terminal's signals (SIGINT from
	 * ^C, SIGWINCH at a resize) do not reach the program in gVisor as
	 * Debian ships it: those two cases are left out; the size is checked.
	 * The rest is the same proof.
	 */
	const struct CMUnitTest gvisor[] = {
		cmocka_unit_test(test_init_chan__hello_first),
		cmocka_unit_test(test_init_chan__run_and_result),
		cmocka_unit_test(test_init_chan__argv_verbatim_and_cwd),
		cmocka_unit_test(test_init_chan__runs_in_flight_together),
		cmocka_unit_test(test_init_chan__stdin_past_the_window),
		cmocka_unit_test(test_init_chan__unread_stdin),
		cmocka_unit_test(test_init_chan__environment),
		cmocka_unit_test(test_init_chan__command_not_found),
		cmocka_unit_test(test_init_chan__run_is_locked_down),
		cmocka_unit_test(test_init_chan__escaped_orphan_ends),
		cmocka_unit_test(test_init_chan__pty_terminal),
		cmocka_unit_test(test_init_chan__pty_resize_sets_size),
		cmocka_unit_test(test_init_chan__resize_without_pty_closes),
	};
	const char *kernel = getenv("SBX_INIT_KERNEL");

	if (kernel && strcmp(kernel, "gvisor") == 0)
		return cmocka_run_group_tests_name("init run channel, under gVisor", gvisor, NULL,
						   NULL);
	return cmocka_run_group_tests_name("init run channel", tests, NULL, NULL);
}
