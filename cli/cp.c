/*
 * cli/cp.c: `sandboxio cp`, files and directories between this host and a
 * live sandbox, both ways.
 *
 * The bytes travel as a tar stream through an ordinary run of the sandbox
 * (through the daemon when it answers, else docker exec), not through the
 * Engine's archive API: the run is the sandbox's own user under all its
 * limits, so a copy in is counted against the disk cap as any write is,
 * files come out owned by the sandbox's user, every backend that runs
 * programs can do it, and above all every path is resolved INSIDE the
 * sandbox, by realpath(1) and tar(1) in its own mount namespace: a symlink
 * there, to whatever path, can only ever name the sandbox's own files, never
 * the host's. The resolved path must then lie in a writable place
 * (/workspace, /tmp), or the copy is refused, naming where it leads.
 *
 * What comes out is the sandbox's, which its code controls, so this host
 * reads the stream as hostile (libarchive, with its secure extraction flags):
 * every entry must lie under the one top name asked for (no "..", no
 * absolute name, nothing written through a symlink), only files,
 * directories, symlinks and hard links within the copy are made, and the
 * modes are kept without the set-id and sticky bits (a copy made as root
 * must not give the sandbox a set-uid file here). Owners are not restored:
 * the files are the caller's. The copy's contents are not redacted: cp is how
 * a file is taken out as it is (docs/daemon.md).
 *
 * Bounds: a copy out travels as the run's output, so it is at most the
 * sandbox's output cap (--max-output at create); past it the copy fails,
 * saying so. A copy in through the daemon is at most the daemon's stdin
 * bound (64 MiB); direct, the sandbox's disk cap bounds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

#include "cli/cli.h"
#include "cli/dclient.h"

#define CP_ERR_MAX 4096		   /* the sandbox's stderr kept for messages */
#define CP_PROGRESS_MIN (8u << 20) /* a copy shows progress from 8 MiB */

/*
 * The programs run in the sandbox ($1 the path; for in, $2 the top name of
 * the stream, empty for a stream given with -). Exit 3: no such path; 4:
 * outside the writable places; else tar's status. Out prints "size N" on
 * stderr before the stream, for the progress bar.
 */
#define CP_PLACES                                                                                  \
	"case $p in /workspace|/workspace/*|/tmp|/tmp/*) ;; *) echo \"sandboxio-cp: $1 resolves "  \
	"to $p, outside the sandbox's writable places (/workspace, /tmp)\" >&2; exit 4;; esac; "
static const char script_out[] =
	"p=$(realpath -e -- \"$1\" 2>/dev/null) || { echo \"sandboxio-cp: $1: no such file or "
	"directory in the sandbox\" >&2; exit 3; }; " CP_PLACES
	"d=${p%/*}; [ -n \"$d\" ] || d=/; n=${p##*/}; "
	"echo \"size $(cd \"$d\" && du -sb -- \"$n\" 2>/dev/null | cut -f1)\" >&2; "
	"exec tar -C \"$d\" -cf - -- \"$n\"";
static const char script_in[] =
	"full() { [ $(($(stat -f -c '%a*%S' -- \"$1\"))) -ge 65536 ] || echo \"sandboxio-cp: no "
	"space left on device\" >&2; }; "
	"if [ -d \"$1\" ]; then p=$(realpath -e -- \"$1\"); " CP_PLACES
	"if [ -z \"$2\" ] || { [ -d \"$p/$2\" ] && [ ! -L \"$p/$2\" ]; }; then "
	"tar -C \"$p\" -xpf - --no-same-owner && exit 0; rc=$?; full \"$p\"; exit $rc; fi; "
	"p=$p/$2; else "
	"[ -n \"$2\" ] || { echo \"sandboxio-cp: $1: a tar stream is copied into a directory, "
	"and this is none\" >&2; exit 3; }; "
	"case $1 in */) echo \"sandboxio-cp: $1: no such directory in the sandbox\" >&2; exit 3;; "
	"esac; "
	"b=${1##*/}; q=${1%/*}; [ \"$q\" != \"$1\" ] || q=.; [ -n \"$q\" ] || q=/; "
	"p=$(realpath -e -- \"$q\" 2>/dev/null) && [ -d \"$p\" ] || { echo \"sandboxio-cp: $q: no "
	"such directory in the sandbox\" >&2; exit 3; }; "
	"case $b in .|..) echo \"sandboxio-cp: $1: name the file to write\" >&2; exit 3;; esac; "
	"p=$p/$b; fi; " CP_PLACES "s=$(mktemp -d \"${p%/*}/.sbx-cp.XXXXXX\") || exit 1; "
	"tar -C \"$s\" -xpf - --no-same-owner; rc=$?; [ $rc -eq 0 ] || full \"$s\"; "
	"if [ $rc -eq 0 ]; then mv -fT -- \"$s/$2\" \"$p\" || rc=1; fi; rm -rf -- \"$s\"; exit $rc";

static const char usage[] =
	"usage: sandboxio cp [OPTIONS] ID:PATH LOCAL\n"
	"       sandboxio cp [OPTIONS] LOCAL ID:PATH\n"
	"\n"
	"Copies a file or a directory (recursively) out of the sandbox ID (made by\n"
	"'sandboxio create'), or into it. LOCAL - is a tar stream: written to our\n"
	"stdout, or read from our stdin and unpacked into the directory ID:PATH. A\n"
	"relative PATH is from /workspace. Into an existing directory, the copy keeps\n"
	"its name; else it takes the name given, and the folder above must exist.\n"
	"Modes are kept, without the set-id and sticky bits; the files are owned by\n"
	"the sandbox's user inside, by ours outside. PATH is resolved inside the\n"
	"sandbox, symlinks included, and must end in a writable place (/workspace or\n"
	"/tmp): any other path is refused. A copy in counts against the sandbox's\n"
	"disk cap (--disk); one that does not fit fails, saying so. A copy out is at\n"
	"most the sandbox's output cap (--max-output). File contents copied out are\n"
	"NOT redacted: a secret a file holds comes out as it is. A progress bar shows\n"
	"on stderr when it is a terminal and the copy is large.\n"
	"\n"
	"options:\n"
	"  --timeout S          the copy's deadline, at most the sandbox's run deadline\n";

void cli_cp_usage(int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	fputs(usage, f);
	fflush(f);
}

struct cp {
	const struct cli_opts *o;
	const char *id, *path; /* the sandbox's side */
	const char *local;     /* "-": a tar stream on stdin or stdout */
	int out;	       /* out of the sandbox */
	int pipe[2];	       /* the stream between the run and the (un)packer */
	pthread_t thread;
	int thread_started;
	char err[CP_ERR_MAX]; /* the sandbox's stderr, as far as it fits */
	size_t err_len;
	uint64_t size, done; /* bytes: expected (0: unknown), moved */
	int progress;
	double shown_at;
	char fail[512]; /* the (un)packer's failure, if any */
	int broken;	/* writing our stdout failed */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress(struct cp *c, int last)
{
	char bar[31];
	double t = now_s();
	size_t fill;

	if (!c->progress || c->size < CP_PROGRESS_MIN || (!last && t - c->shown_at < 0.1))
		return;
	c->shown_at = t;
	fill = c->done >= c->size ? 30 : (size_t)(c->done * 30 / c->size);
	memset(bar, '#', fill);
	memset(bar + fill, '.', 30 - fill);
	bar[30] = '\0';
	fprintf(stderr, "\r[%s] %3u%%  %.1f of %.1f MiB%s", bar,
		(unsigned)(c->done >= c->size ? 100 : c->done * 100 / c->size),
		(double)c->done / 1048576.0, (double)c->size / 1048576.0, last ? "\n" : "");
	fflush(stderr);
}

/* Its stderr: the size line, then messages, kept for the report. */
static void take_stderr(struct cp *c, const char *data, size_t len)
{
	size_t n = len < sizeof(c->err) - 1 - c->err_len ? len : sizeof(c->err) - 1 - c->err_len;
	char *nl;

	memcpy(c->err + c->err_len, data, n);
	c->err_len += n;
	c->err[c->err_len] = '\0';
	if (c->out && !c->size && strncmp(c->err, "size ", 5) == 0 && (nl = strchr(c->err, '\n'))) {
		c->size = strtoull(c->err + 5, NULL, 10);
		c->err_len -= (size_t)(nl + 1 - c->err);
		memmove(c->err, nl + 1, c->err_len + 1);
	}
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int on_output(int stream, const char *data, size_t len, void *payload)
{
	struct cp *c = payload;

	if (stream == SBX_STREAM_STDERR) {
		take_stderr(c, data, len);
		return 0;
	}
	if (!c->out || !len)
		return 0;
	c->done += len;
	progress(c, 0);
	/* The unpacker drains its pipe to the end even when it failed, so
	 * that the run is never cancelled (which would end the sandbox). */
	if (write_all(c->pipe[1], data, len) < 0 && !c->broken) {
		c->broken = 1;
		if (cli_signal_pending())
			return 1;
	}
	return 0;
}

/* ---- out: the stream unpacked here (cli/cp-unpack.c), on a thread ---- */

static void *unpack_main(void *arg)
{
	struct cp *c = arg;

	cli_cp_unpack(c->pipe[0], c->path, c->local, c->fail, sizeof(c->fail));
	return NULL;
}

/* ---- in: LOCAL packed here (a thread writing c->pipe[1]) ---- */

static int pack_file(struct cp *c, struct archive *out, const char *path)
{
	char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0) {
		snprintf(c->fail, sizeof(c->fail), "%.300s: %s", path, strerror(errno));
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || archive_write_data(out, buf, (size_t)n) != n) {
			snprintf(c->fail, sizeof(c->fail), "%.300s: %s", path,
				 n < 0 ? strerror(errno) : "the sandbox stopped reading the copy");
			close(fd);
			return -1;
		}
		c->done += (uint64_t)n;
		progress(c, 0);
	}
	close(fd);
	return 0;
}

static void *pack_main(void *arg)
{
	struct cp *c = arg;
	struct archive *disk = archive_read_disk_new(), *out = archive_write_new();
	struct archive_entry *e = NULL;
	const char *base = strrchr(c->local, '/') ? strrchr(c->local, '/') + 1 : c->local;
	size_t ll = strlen(c->local);
	int r;

	if (!disk || !out) {
		snprintf(c->fail, sizeof(c->fail), "out of memory");
		goto out;
	}
	archive_read_disk_set_symlink_hybrid(disk);
	archive_write_set_format_pax_restricted(out);
	if (archive_write_open_fd(out, c->pipe[1]) != ARCHIVE_OK ||
	    archive_read_disk_open(disk, c->local) != ARCHIVE_OK) {
		snprintf(c->fail, sizeof(c->fail), "%.300s: %s", c->local,
			 archive_error_string(disk));
		goto out;
	}
	for (;;) {
		const char *name;
		char *to;

		archive_entry_free(e);
		if (!(e = archive_entry_new())) {
			snprintf(c->fail, sizeof(c->fail), "out of memory");
			break;
		}
		r = archive_read_next_header2(disk, e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK) {
			snprintf(c->fail, sizeof(c->fail), "%s", archive_error_string(disk));
			break;
		}
		archive_read_disk_descend(disk);
		name = archive_entry_pathname(e);
		if (!name || strncmp(name, c->local, ll) != 0 ||
		    asprintf(&to, "%s%s", base, name + ll) < 0) {
			snprintf(c->fail, sizeof(c->fail), "%.300s: cannot be named in the copy",
				 name ? name : c->local);
			break;
		}
		archive_entry_set_pathname(e, to);
		free(to);
		/* As a copy out: no set-id or sticky bit crosses. */
		archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_set_uname(e, NULL);
		archive_entry_set_gname(e, NULL);
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			snprintf(c->fail, sizeof(c->fail), "%s", archive_error_string(out));
			break;
		}
		if (archive_entry_filetype(e) == AE_IFREG && archive_entry_size(e) > 0 &&
		    pack_file(c, out, archive_entry_sourcepath(e)) < 0)
			break;
	}
	if (!c->fail[0] && archive_write_close(out) != ARCHIVE_OK)
		snprintf(c->fail, sizeof(c->fail), "%s", archive_error_string(out));
out:
	archive_entry_free(e);
	archive_read_free(disk);
	archive_write_free(out);
	close(c->pipe[1]);
	c->pipe[1] = -1;
	return NULL;
}

static uint64_t tree_bytes;
static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F && S_ISREG(st->st_mode))
		tree_bytes += (uint64_t)st->st_size;
	return 0;
}

/* ---- the run ---- */

struct outcome {
	sbx_run_status status;
	int exit_code, truncated;
	unsigned int hit;
	int64_t output_cap;
};

/* Through the daemon at fd. Returns 0 with *oc, or an exit status after
 * printing. */
static int
via_daemon(struct cp *c, int fd, char **argv, int nargs, int in, uint64_t tmo, struct outcome *oc)
{
	struct cli_opts t = *c->o;
	struct cli_dexec_info info;
	json_t *req, *reply = NULL;
	sbx_result r;
	int rc;

	/* Under --json the client keeps what the run printed (at most the
	 * output cap) as it does for exec; freed below. Its errors are then
	 * printed as JSON too. */
	t.id = c->id;
	t.args = argv;
	t.nargs = nargs;
	t.stdin_path = in >= 0 ? "-" : NULL;
	t.no_redact = 1;
	t.workdir = NULL;
	t.env = NULL;
	t.env_n = 0;
	req = cli_daemon_exec_request(&t, tmo);
	if (!req) {
		cli_print_error(c->o, SBX_EINVALID,
				"cp: a path the daemon's protocol cannot carry "
				"(not UTF-8): give --no-daemon");
		return CLI_EXIT_FAIL;
	}
	rc = cli_daemon_exec(&t, fd, req, in, on_output, c, &r, &info, &reply);
	if (rc == CLI_DAEMON_INTERRUPTED || rc == CLI_DAEMON_CANCELED || cli_signal_pending())
		rc = cli_interrupted(c->o, "the copy was canceled, which removed its sandbox");
	else if (rc == 0) {
		oc->status = r.status;
		oc->exit_code = r.exit_code;
		oc->truncated = r.stdout_truncated;
		oc->hit = r.limits_hit;
		oc->output_cap = info.output_cap;
	}
	free(r.stdout_data);
	free(r.stderr_data);
	json_decref(reply);
	return rc;
}

static int direct(struct cp *c, char **argv, int in, uint64_t tmo, struct outcome *oc)
{
	sbx_run_options ro;
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	int rc, lrc;

	rc = cli_backend_open(c->o, NULL, &b);
	if (rc)
		return rc;
	if (sbx_sandbox_open(&s, b, c->id) < 0) {
		cli_print_lib_error(c->o);
		sbx_backend_free(b);
		return CLI_EXIT_FAIL;
	}
	sbx_run_options_init(&ro, SBX_RUN_OPTIONS_VERSION);
	ro.on_output = on_output;
	ro.payload = c;
	ro.timeout_ms = tmo;
	ro.raw_output = 1;
	if (in >= 0) {
		ro.stream_stdin = 1;
		ro.stdin_fd = in;
	}
	if (cli_watch_start(s) < 0)
		cli_warn("cannot watch for signals during the copy: an interrupt will wait for "
			 "its next output");
	lrc = sbx_sandbox_run(&r, s, (const char *const *)argv, &ro);
	cli_watch_stop();
	if (cli_signal_pending()) {
		sbx_sandbox_close(s);
		s = NULL;
		rc = cli_interrupted(c->o, "the copy was canceled, which removed its sandbox");
	} else if (lrc < 0) {
		cli_print_lib_error(c->o);
		rc = CLI_EXIT_FAIL;
	} else {
		oc->status = r->status;
		oc->exit_code = r->exit_code;
		oc->truncated = r->stdout_truncated;
		oc->hit = r->limits_hit;
		oc->output_cap = sbx_policy_limit(sbx_sandbox_policy(s), SBX_LIMIT_OUTPUT);
	}
	sbx_result_free(r);
	sbx_sandbox_detach(s);
	sbx_backend_free(b);
	return rc;
}

/* The sandbox's messages, without its "sandboxio-cp: " prefix. */
static const char *sandbox_says(struct cp *c)
{
	char *p = c->err, *q;
	size_t n;

	if (strncmp(p, "sandboxio-cp: ", 14) == 0)
		p += 14;
	n = strlen(p);
	while (n && p[n - 1] == '\n')
		p[--n] = '\0';
	/* tar's closing line says nothing the lines before it do not. */
	if (n > 0 && (q = strstr(p, "\ntar: Exiting with failure status")))
		*q = '\0';
	return *p ? p : "no message";
}

static int judge(struct cp *c, const struct outcome *oc)
{
	const struct cli_opts *o = c->o;

	if (oc->truncated) {
		cli_print_error(o, SBX_ETOOBIG,
				"cp: %s is larger than the sandbox's output cap (%lld bytes), "
				"which bounds a copy out: create the sandbox with a larger "
				"--max-output",
				c->path, (long long)oc->output_cap);
		return CLI_EXIT_FAIL;
	}
	if ((oc->hit & SBX_HIT_DISK) || strstr(c->err, "o space left on device")) {
		cli_print_error(o, SBX_ETOOBIG,
				"cp: no space left on device (ENOSPC) in the sandbox: %s does not "
				"fit its disk cap (--disk at create)%s",
				c->local,
				c->out ? ""
				       : "; nothing of it is kept, unless it was merged into a "
					 "directory there");
		return CLI_EXIT_FAIL;
	}
	if (oc->status == SBX_RUN_TIMEOUT) {
		cli_print_error(o, SBX_ETIMEOUT, "cp: the copy's deadline passed");
		return CLI_EXIT_FAIL;
	}
	if (oc->status != SBX_RUN_EXITED || oc->exit_code != 0) {
		int code = oc->exit_code == 4	? SBX_EDENIED
			   : oc->exit_code == 3 ? SBX_ENOTFOUND
						: SBX_ERROR;

		cli_print_error(o, code, "cp: %s", sandbox_says(c));
		return CLI_EXIT_FAIL;
	}
	if (c->fail[0]) {
		cli_print_error(o, SBX_EINVALID, "cp: %s", c->fail);
		return CLI_EXIT_FAIL;
	}
	if (c->broken) {
		cli_print_error(o, SBX_ERROR, "cp: writing the copy failed");
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/* ID:PATH; NULL when arg is local (it starts with / or ., or has no colon
 * after a name without a slash). */
static const char *remote_path(const char *arg, char *id, size_t size)
{
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : 0;

	if (!colon || n == 0 || arg[0] == '/' || arg[0] == '.' || memchr(arg, '/', n) || n >= size)
		return NULL;
	memcpy(id, arg, n);
	id[n] = '\0';
	return colon + 1;
}

static int start_thread(struct cp *c, void *(*fn)(void *))
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, NULL, fn, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	c->thread_started = rc == 0;
	return rc == 0 ? 0 : -1;
}

/* Runs the copy: the (un)packer thread on a pipe, the run through the
 * daemon or direct, then the verdict. */
static int run(struct cp *c, char **argv, int nargs, int in, uint64_t tmo)
{
	const struct cli_opts *o = c->o;
	struct outcome oc = {0};
	int fd = -1, rc;

	if (!(c->out && strcmp(c->local, "-") == 0) && in != STDIN_FILENO) {
		if (pipe2(c->pipe, O_CLOEXEC) < 0) {
			cli_print_error(o, SBX_ERROR, "cp: pipe: %s", strerror(errno));
			return CLI_EXIT_FAIL;
		}
		if (start_thread(c, c->out ? unpack_main : pack_main) < 0) {
			close(c->pipe[0]);
			close(c->pipe[1]);
			cli_print_error(o, SBX_ENOMEM, "cp: cannot start a thread");
			return CLI_EXIT_FAIL;
		}
		if (!c->out)
			in = c->pipe[0];
	} else if (c->out) {
		c->pipe[1] = STDOUT_FILENO;
	}
	rc = cli_daemon_open(o, &fd);
	if (!rc && fd >= 0) {
		rc = via_daemon(c, fd, argv, nargs, in, tmo, &oc);
		close(fd);
	} else if (!rc) {
		rc = direct(c, argv, in, tmo, &oc);
	}
	if (c->thread_started) {
		if (c->out) {
			close(c->pipe[1]); /* the unpacker sees the end */
			c->pipe[1] = -1;
		} else {
			/* A run that ended early leaves the packer on a full pipe. */
			close(c->pipe[0]);
			c->pipe[0] = -1;
		}
		pthread_join(c->thread, NULL);
		if (c->pipe[0] >= 0)
			close(c->pipe[0]);
	}
	if (rc)
		return rc;
	progress(c, 1);
	rc = judge(c, &oc);
	if (!rc && o->json)
		rc = cli_print_json(json_pack("{s:s, s:s, s:s, s:I}", "sandbox_id", c->id,
					      "direction", c->out ? "out" : "in", "path", c->path,
					      "bytes", (json_int_t)c->done)) < 0
			     ? CLI_EXIT_FAIL
			     : 0;
	return rc;
}

int cmd_cp(const struct cli_opts *o)
{
	static char top[PATH_MAX], dir[PATH_MAX];
	struct cp c = {.o = o, .pipe = {-1, -1}};
	char id[256], *argv[7];
	const char *src, *dst, *base;
	struct stat st;
	uint64_t tmo = 0;
	int in = -1, rc;

	if (o->nargs != 2) {
		cli_print_error(o, SBX_EINVALID,
				"cp: give a source and a destination, one of them ID:PATH (see "
				"'sandboxio cp --help')");
		return CLI_EXIT_FAIL;
	}
	src = remote_path(o->args[0], id, sizeof(id));
	dst = remote_path(o->args[1], id, sizeof(id));
	if (!src == !dst) {
		cli_print_error(o, SBX_EINVALID,
				"cp: %s: exactly one of the two must be ID:PATH, the sandbox's "
				"side",
				src ? "both name a sandbox" : "neither names a sandbox");
		return CLI_EXIT_FAIL;
	}
	c.out = src != NULL;
	c.id = id;
	c.path = c.out ? src : dst;
	if (!c.path[0] || !o->args[c.out ? 1 : 0][0]) {
		cli_print_error(o, SBX_EINVALID, "cp: an empty path");
		return CLI_EXIT_FAIL;
	}
	/* LOCAL without its trailing slashes; its name must be a name. */
	snprintf(dir, sizeof(dir), "%s", o->args[c.out ? 1 : 0]);
	while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	c.local = dir;
	rc = cli_run_timeout(o, &tmo);
	if (rc)
		return rc;
	if (c.out && o->json && strcmp(dir, "-") == 0) {
		cli_print_error(
			o, SBX_EINVALID,
			"cp: --json and a tar stream on stdout (-) cannot share it: give one");
		return CLI_EXIT_FAIL;
	}
	if (strcmp(dir, "-") != 0 &&
	    (!*base || strcmp(base, "..") == 0 || (strcmp(base, ".") == 0 && !c.out))) {
		cli_print_error(o, SBX_EINVALID, "cp: %s: name a file or a directory by its name",
				dir);
		return CLI_EXIT_FAIL;
	}
	if (!c.out && strcmp(dir, "-") != 0 && lstat(dir, &st) < 0) {
		cli_print_error(o, SBX_ENOTFOUND, "cp: %s: %s", dir, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (c.out && strcmp(dir, "-") != 0) {
		/* The copy is made from LOCAL's folder, with relative names only. */
		if (base != dir) {
			char *slash = (char *)base - 1;

			*slash = '\0';
			if (chdir(slash == dir ? "/" : dir) < 0) {
				cli_print_error(o, SBX_ENOTFOUND, "cp: %s: %s",
						slash == dir ? "/" : dir, strerror(errno));
				return CLI_EXIT_FAIL;
			}
		}
		c.local = base;
	}
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		return CLI_EXIT_FAIL;
	}
	c.progress = isatty(STDERR_FILENO) && !o->json;
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)(c.out ? script_out : script_in);
	argv[3] = "sandboxio-cp";
	argv[4] = (char *)c.path;
	argv[5] = NULL;
	argv[6] = NULL;
	if (!c.out) {
		/* $2: the stream's top name; empty for a stream given with -. */
		if (strcmp(dir, "-") == 0) {
			in = STDIN_FILENO;
		} else {
			snprintf(top, sizeof(top), "%s", base);
			if (c.progress && nftw(dir, add_size, 16, FTW_PHYS) == 0)
				c.size = tree_bytes;
		}
		argv[5] = top;
	}
	return run(&c, argv, c.out ? 5 : 6, in, tmo);
}
