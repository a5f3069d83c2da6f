/*
 * cli/daemon.c: `sandboxio daemon`, the local daemon: the project's own API
 * (create, exec, kill, list) on a unix socket, for the command's other
 * invocations (cli/dclient.c) and any program that speaks its protocol
 * (cli/dproto.h; docs/protocol.md, "The local daemon's protocol";
 * docs/daemon.md).
 *
 * Why it exists: a sandbox's fast run path, the init's channel, belongs to
 * the handle that created the sandbox. The daemon creates the sandboxes
 * and keeps their handles, so every later `sandboxio exec` runs over the
 * channel instead of docker exec. A sandbox it does not hold (made by a
 * direct `create`, or before a restart of the daemon) is opened by id and
 * kept: it is adopted, and its runs go through docker exec. Its channel is
 * not reopened: the init says HELLO once, and a new attacher could not know
 * where the dead one left PID 1's parser (a frame cut in the middle), so
 * the protocol would need a resynchronisation it does not have.
 *
 * The policy of a create is the command's own: the request carries the
 * options as text, and cli_build_policy() makes the policy under the
 * operator config the daemon loaded at its start, exactly as a direct
 * create does; the errors it reports are captured (cli_capture_errors())
 * and answered. A sandbox made here is detached, as a direct create's is:
 * its owner is nobody, its lifetime is enforced by its init, and the
 * reaper removes it after its deadline whether the daemon lives or not.
 *
 * Access is the socket's file mode: its directory 0750 and the socket 0660
 * with group `sandboxio` (or --group), else 0700 and 0600 (root only). This
 * file is the command: its options, the socket, the start (in the
 * foreground, or --background) and the stop; the work, connection by
 * connection, is cli/daemon-conn.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/daemon.h"

static const char usage_daemon[] =
	"usage: sandboxio [GLOBAL OPTIONS] daemon [--socket PATH] [--group NAME]\n"
	"                 [--background [--pid-file PATH]]\n"
	"\n"
	"Serves the sandboxio API (create, exec, kill, list) on a unix socket, for\n"
	"the command's own create, exec, rm and ls, which use the daemon when it\n"
	"answers: runs in the sandboxes it created go over their init's channel\n"
	"(about a millisecond) instead of docker exec. Prints 'ready' on stdout when\n"
	"it serves. The operator config is read at start, as for any command (the\n"
	"global --config narrows it); --audit-log records every event with the\n"
	"client's pid, uid and gid. SIGINT, SIGTERM or SIGHUP stops it; the\n"
	"sandboxes it made live on until 'rm' or their lifetime, and a daemon\n"
	"started later serves them again (through docker exec). docs/daemon.md.\n"
	"\n"
	"options:\n"
	"  --socket PATH        the socket (default " CLI_DAEMON_SOCKET ");\n"
	"                       its directory is made 0750 if missing\n"
	"  --group NAME         the group that may connect (socket 0660); default\n"
	"                       'sandboxio' when it exists, else root only (0600)\n"
	"  --background         detach once ready (without systemd); the parent prints\n"
	"                       'ready' and exits 0, or 125 when the daemon failed\n"
	"  --pid-file PATH      with --background: write the daemon's pid there\n";

void cli_daemon_usage(int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	fputs(usage_daemon, f);
	fflush(f);
}

/* The file of --audit-log, as the library would accept it: a regular file of
 * ours that grants group and others nothing. */
static int audit_open(const struct cli_opts *o)
{
	struct stat st;
	int fd = open(o->audit_log, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		cli_print_error(
			o, SBX_EDENIED, "daemon: audit log %.200s: %s", o->audit_log,
			fd < 0 ? strerror(errno)
			       : "not a regular file of ours that only we may read and write");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	cli_dstate.audit_fd = fd;
	return 0;
}

/* ===== The socket ===== */

/* The group of --group, else `sandboxio` when it exists. 0: *gid set; 1:
 * none (root only); -1: --group names no group. */
static int pick_group(const char *name, gid_t *gid)
{
	struct group *gr = getgrnam(name ? name : "sandboxio");

	if (!gr)
		return name ? -1 : 1;
	*gid = gr->gr_gid;
	return 0;
}

/* A daemon already answering at path? */
static int answers(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return rc;
}

/*
 * 0 when dir and every directory above it is root's or ours, and nobody
 * else may write in it (or only as in /tmp: sticky). Else someone else
 * could put their own socket at the path once ours is bound, or swap it
 * for a link before its chown and chmod (which would then give the group a
 * file of their choice).
 */
static int safe_dir(const struct cli_opts *o, const char *dir)
{
	char p[sizeof(((struct sockaddr_un *)0)->sun_path)];
	size_t n = strlen(dir), k = 0;
	struct stat st;

	do {
		while (k < n && dir[k] == '/')
			k++;
		while (k < n && dir[k] != '/')
			k++;
		snprintf(p, sizeof(p), "%.*s", (int)(k ? k : 1), dir);
		/* A link of root's or ours (/var/run) is judged by its target. */
		if (lstat(p, &st) < 0 ||
		    (S_ISLNK(st.st_mode) && (st.st_uid == 0 || st.st_uid == geteuid()) &&
		     stat(p, &st) < 0))
			st.st_mode = 0;
		if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			cli_print_error(
				o, SBX_EDENIED,
				"daemon: %s: not a directory of root's or ours that only its "
				"owner may write in: someone else could replace the socket",
				p);
			return -1;
		}
	} while (k < n);
	return 0;
}

/*
 * The listening socket at path: its directory made (0750, or 0700 without a
 * group) if missing, or, for the default socket, set so if it is ours; a
 * stale socket replaced, one that answers refused; the socket 0660 with
 * group gid, or 0600.
 */
static int listen_at(const struct cli_opts *o, const char *path, int has_gid, gid_t gid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	mode_t old;
	int fd, made;

	if (strlen(path) >= sizeof(sa.sun_path) || path[0] != '/') {
		cli_print_error(o, SBX_EINVALID,
				"daemon: --socket '%.200s': expected an absolute path of at most "
				"%zu bytes",
				path, sizeof(sa.sun_path) - 1);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	/* The directory: made if missing; the default one (which the library
	 * may have made 0755 for its disks) narrowed when it is ours. */
	made = mkdir(dir, has_gid ? 0750 : 0700) == 0;
	if (!made && errno != EEXIST) {
		cli_print_error(o, SBX_ERROR, "daemon: cannot make %s: %s", dir, strerror(errno));
		return -1;
	}
	if ((made || (strcmp(path, CLI_DAEMON_SOCKET) == 0 && lstat(dir, &st) == 0 &&
		      S_ISDIR(st.st_mode) && st.st_uid == geteuid())) &&
	    ((has_gid && chown(dir, (uid_t)-1, gid) < 0) ||
	     chmod(dir, has_gid ? 0750 : 0700) < 0)) {
		cli_print_error(o, SBX_ERROR, "daemon: %s: %s", dir, strerror(errno));
		return -1;
	}
	if (safe_dir(o, dir) < 0)
		return -1;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			cli_print_error(o, SBX_EINVALID, "daemon: %s exists and is not a socket",
					path);
			return -1;
		}
		if (answers(path)) {
			cli_print_error(o, SBX_EINVALID, "daemon: a daemon already answers at %s",
					path);
			return -1;
		}
		unlink(path);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	old = umask(0177); /* 0600 from the start; widened to the group below */
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		umask(old);
		cli_print_error(o, SBX_ERROR, "daemon: cannot bind %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	umask(old);
	if ((has_gid && (lchown(path, (uid_t)-1, gid) < 0 || chmod(path, 0660) < 0)) ||
	    listen(fd, 128) < 0) {
		cli_print_error(o, SBX_ERROR, "daemon: %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

/* ===== The command ===== */

struct daemon_args {
	const char *socket, *group, *pid_file;
	int background;
};

/* --NAME VALUE or --NAME=VALUE, as the other commands take them. */
static int parse_args(struct cli_opts *o, struct daemon_args *a, int argc, char **argv, int i)
{
	static const char *const names[] = {"socket", "group", "pid-file", "background", "help"};

	while (i < argc) {
		const char *arg = argv[i++], *name = arg + 2, *eq, *val = NULL, **dst = NULL;
		size_t nlen, k;

		if (strcmp(arg, "-h") == 0) {
			o->help = 1;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
			cli_print_error(o, SBX_EINVALID, "daemon takes no arguments (got '%.64s')",
					arg);
			return CLI_EXIT_FAIL;
		}
		eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		for (k = 0; k < 5; k++)
			if (strlen(names[k]) == nlen && strncmp(names[k], name, nlen) == 0)
				break;
		if (k == 5) {
			cli_print_error(
				o, SBX_EINVALID,
				"unknown option %.*s for 'daemon' (see 'sandboxio daemon --help')",
				(int)(nlen + 2), arg);
			return CLI_EXIT_FAIL;
		}
		if (k >= 3) { /* flags */
			if (eq) {
				cli_print_error(o, SBX_EINVALID, "option --%s takes no value",
						names[k]);
				return CLI_EXIT_FAIL;
			}
			*(k == 3 ? &a->background : &o->help) = 1;
			continue;
		}
		dst = k == 0 ? &a->socket : k == 1 ? &a->group : &a->pid_file;
		if (eq)
			val = eq + 1;
		else if (i < argc)
			val = argv[i++];
		if (!val || !*val) {
			cli_print_error(o, SBX_EINVALID, "option --%s needs a value", names[k]);
			return CLI_EXIT_FAIL;
		}
		*dst = val;
	}
	if (a->pid_file && !a->background && !o->help) {
		cli_print_error(o, SBX_EINVALID, "daemon: --pid-file goes with --background");
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/*
 * --background: forks before any thread exists. The parent waits for the
 * child's ready byte and prints the ready line (0), or reports that it
 * failed (125); the child returns -1 and goes on, its ready byte to write
 * on *ready_fd.
 */
static int go_background(const struct cli_opts *o, int *ready_fd)
{
	int p[2], st;
	pid_t pid;
	ssize_t n;
	char b;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		cli_print_error(o, SBX_ERROR, "daemon: cannot start in the background: %s",
				strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		close(p[0]);
		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			close(null);
		}
		*ready_fd = p[1];
		return -1;
	}
	close(p[1]);
	while ((n = read(p[0], &b, 1)) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (n == 1) {
		printf("ready\n");
		return fflush(stdout) == EOF ? CLI_EXIT_FAIL : 0;
	}
	waitpid(pid, &st, 0);
	cli_print_error(o, SBX_ERROR, "daemon: it did not start (its message is above)");
	return CLI_EXIT_FAIL;
}

static int write_pid_file(const struct cli_opts *o, const char *path)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) < 0) {
		cli_print_error(o, SBX_ERROR, "daemon: pid file %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Opens the docker backend under cfg, the events through audit_line(). */
static int open_backend(struct cli_opts *o, const sbx_config *cfg)
{
	sbx_backend_options bo;
	enum cli_cmd cmd = o->cmd;
	char init[PATH_MAX];
	int rc;

	o->cmd = CMD_CREATE; /* the init next to our executable, as create takes it */
	rc = cli_backend_options(o, &bo, init, sizeof(init));
	o->cmd = cmd;
	if (rc < 0) {
		cli_print_lib_error(o);
		return -1;
	}
	bo.config = cfg;
	bo.audit_path = NULL;
	if (cli_dstate.audit_fd >= 0)
		bo.audit_cb = cli_daemon_audit_line;
	if (sbx_backend_open(&cli_dstate.b, "docker", &bo) < 0) {
		cli_print_lib_error(o);
		return -1;
	}
	return 0;
}

/* Serves until a signal; the sandboxes are left to their lifetime. */
static int serve(const struct cli_opts *o,
		 int lfd,
		 int ready_fd,
		 const struct daemon_args *a,
		 const sigset_t *set)
{
	pthread_t acc;
	int sig = 0, conns;

	if (pthread_create(&acc, NULL, cli_daemon_accept_main, &lfd) != 0) {
		cli_print_error(o, SBX_ERROR, "daemon: cannot start a thread");
		return CLI_EXIT_FAIL;
	}
	if (a->pid_file && write_pid_file(o, a->pid_file) < 0)
		sig = -1;
	if (sig == 0 && ready_fd >= 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (write(ready_fd, "r", 1) != 1)
			sig = -1;
		close(ready_fd);
		if (null >= 0) {
			dup2(null, 2);
			close(null);
		}
	} else if (sig == 0 && (printf("ready\n") < 0 || fflush(stdout) == EOF)) {
		sig = -1;
	}
	while (sig == 0 && sigwait(set, &sig) != 0)
		sig = 0;
	__atomic_store_n(&cli_dstate.stopping, 1, __ATOMIC_SEQ_CST);
	shutdown(lfd, SHUT_RDWR);
	pthread_join(acc, NULL);
	close(lfd);
	unlink(a->socket);
	if (a->pid_file)
		unlink(a->pid_file);
	pthread_mutex_lock(&cli_dstate.mu);
	conns = cli_dstate.conns;
	pthread_mutex_unlock(&cli_dstate.mu);
	if (conns) {
		/* Runs in flight go on to their own deadlines, as when a creator
		 * dies (docs/threat-model.md); their clients see us go. */
		fflush(NULL);
		_exit(sig < 0 ? CLI_EXIT_FAIL : 0);
	}
	cli_daemon_boxes_free();
	return sig < 0 ? CLI_EXIT_FAIL : 0;
}

int cmd_daemon(struct cli_opts *o, int argc, char **argv, int i)
{
	struct daemon_args a = {.socket = CLI_DAEMON_SOCKET};
	sbx_config *cfg = NULL;
	sigset_t set;
	gid_t gid = 0;
	int rc, lfd = -1, ready_fd = -1, grp;

	o->cmd_name = "daemon";
	rc = parse_args(o, &a, argc, argv, i);
	if (rc)
		return rc;
	if (o->help) {
		cli_daemon_usage(0);
		return 0;
	}
	if (strcmp(cli_backend_name(o), "docker") != 0) {
		cli_print_error(o, SBX_EUNSUPPORTED, "daemon: it serves the docker backend only");
		return CLI_EXIT_FAIL;
	}
	grp = pick_group(a.group, &gid);
	if (grp < 0) {
		cli_print_error(o, SBX_EINVALID, "daemon: --group '%.64s': no such group", a.group);
		return CLI_EXIT_FAIL;
	}
	if (a.background) {
		rc = go_background(o, &ready_fd);
		if (rc >= 0)
			return rc;
	}
	/* Every thread (the backend's, ours) inherits the mask: sigwait() takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = cli_config_load(o, &cfg);
	if (rc)
		goto out;
	cli_dstate.cfg = cfg;
	if ((o->audit_log && audit_open(o) < 0) || open_backend(o, cfg) < 0 ||
	    (lfd = listen_at(o, a.socket, grp == 0, gid)) < 0) {
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = serve(o, lfd, ready_fd, &a, &set);
out:
	sbx_backend_free(cli_dstate.b);
	sbx_config_free(cfg);
	if (cli_dstate.audit_fd >= 0)
		close(cli_dstate.audit_fd);
	return rc;
}
