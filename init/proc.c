/*
 * init/proc.c: find, kill and reap every descendant of sbx-init.
 *
 * A run ends together with its whole process tree. A process group kill is
 * not enough because untrusted code can call setsid() or setpgid() to leave
 * the group, so the tree is walked through /proc/<pid>/task/<tid>/children
 * and every process found is sent SIGKILL. Processes forked during the walk
 * are orphaned when their parent dies and, because the init is a child
 * subreaper, reparented to it, so the next round finds them; rounds repeat
 * until nothing is left to reap. Kernels built without CONFIG_PROC_CHILDREN
 * have no children files, and then the parent links in /proc/<pid>/stat are
 * followed instead.
 */
#include "init/init.h"
#include "util/time.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* At most this many processes are tracked per walk; the rest wait a round. */
#define WALK_MAX 16384
/* Children files are read in chunks of this size. */
#define CHILDREN_BUF 4096
/* Upper bound on processes in the /proc scan fallback. */
#define SCAN_MAX 65536

struct pidset {
	pid_t *pids;
	size_t n, cap;
};

static int pidset_has(const struct pidset *s, pid_t p)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->pids[i] == p)
			return 1;
	return 0;
}

/*
 * Appends p. A tree walk never meets a pid twice except through a race with
 * reparenting, where a duplicate only means a second SIGKILL, so no check.
 */
static int pidset_add(struct pidset *s, pid_t p)
{
	if (s->n >= s->cap)
		return -1;
	s->pids[s->n++] = p;
	return 0;
}

static int read_fd_all(int fd, char *buf, size_t size)
{
	size_t have = 0;

	while (have + 1 < size) {
		ssize_t r = read(fd, buf + have, size - 1 - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		have += (size_t)r;
	}
	buf[have] = '\0';
	return (int)have;
}

/* Parses a list of decimal pids separated by spaces and adds them to s. */
static void add_pid_list(struct pidset *s, const char *p)
{
	while (*p) {
		char *end;
		long v;

		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			break;
		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno)
			break;
		if (v > 0)
			(void)pidset_add(s, (pid_t)v);
		p = end;
	}
}

/*
 * Adds the children of every thread of pid to s. Returns -1 if the children
 * files do not exist for this process at all.
 */
static int add_children(struct pidset *s, pid_t pid)
{
	char path[64], buf[CHILDREN_BUF];
	struct dirent *de;
	DIR *dir;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0; /* already gone */
	while ((de = readdir(dir)) != NULL) {
		char cpath[sizeof(path) + sizeof(de->d_name) + 16];
		int fd;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(cpath, sizeof(cpath), "%s/%s/children", path, de->d_name);
		fd = open(cpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		found = 1;
		/*
		 * A list longer than the buffer is cut; the pids missed here
		 * are found in a later round once their siblings are dead.
		 */
		if (read_fd_all(fd, buf, sizeof(buf)) > 0) {
			char *cut = strrchr(buf, ' ');

			if (strlen(buf) == sizeof(buf) - 1 && cut)
				*cut = '\0';
			add_pid_list(s, buf);
		}
		close(fd);
	}
	closedir(dir);
	return found ? 0 : -1;
}

static int have_children_files(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
	return access(path, R_OK) == 0;
}

static pid_t stat_ppid(const char *pid)
{
	char path[64], buf[512];
	char *p;
	int fd, ppid = -1;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (read_fd_all(fd, buf, sizeof(buf)) > 0) {
		/* The command name may hold spaces and parentheses: skip to the last ')'. */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %d", &ppid) != 1)
			ppid = -1;
	}
	close(fd);
	return (pid_t)ppid;
}

/* Fallback walk: repeatedly scans /proc for processes whose parent is known. */
static void scan_descendants(struct pidset *s, pid_t self)
{
	int pass;

	/* Each pass adds at least one generation, so depth bounds the passes. */
	for (pass = 0; pass < 64; pass++) {
		size_t before = s->n, seen = 0;
		struct dirent *de;
		DIR *dir = opendir("/proc");

		if (!dir)
			return;
		while ((de = readdir(dir)) != NULL && seen++ < SCAN_MAX) {
			pid_t pid, ppid;

			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			ppid = stat_ppid(de->d_name);
			if (ppid <= 0)
				continue;
			pid = (pid_t)atoi(de->d_name);
			if ((ppid == self || pidset_has(s, ppid)) && !pidset_has(s, pid))
				(void)pidset_add(s, pid);
		}
		closedir(dir);
		if (s->n == before)
			return;
	}
}

/*
 * Whether the kernel lacks child subreapers. A process's own answer about
 * itself means nothing as PID 1 (gVisor accepts the call there, where it
 * changes nothing, and refuses it everywhere else), so a child asks.
 */
int sbx_init_no_subreapers(void)
{
	int st = 0;
	pid_t p = fork();

	if (p == 0)
		_exit(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 && errno == EINVAL);
	if (p < 0)
		return 0;
	while (waitpid(p, &st, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 1;
}

/*
 * Where the kernel has no child subreapers (gVisor as Debian 12 ships it),
 * what a run's program leaves behind after leaving its process group is
 * reparented to PID 1 and escapes the supervisor's kill. PID 1 ends such
 * orphans, and their trees, once no run is in flight: its own runs are
 * known to it (keep: the pids of its supervisors), and a `docker exec` run
 * is a process without a parent in the sandbox (ppid 0), whose presence
 * defers the sweep. Orphans are told apart from PID 1's supervisors by
 * their pids alone, so a run that starts later is never touched.
 */
size_t sbx_init_sweep_orphans(const pid_t *keep, size_t nkeep)
{
	static pid_t pid[SCAN_MAX], ppid[SCAN_MAX], storage[WALK_MAX];
	struct pidset s = {storage, 0, WALK_MAX};
	pid_t self = getpid();
	size_t n = 0, i, k, before;
	struct dirent *de;
	DIR *dir = opendir("/proc");

	if (!dir)
		return 0;
	while ((de = readdir(dir)) != NULL && n < SCAN_MAX) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid[n] = (pid_t)atoi(de->d_name);
		ppid[n] = stat_ppid(de->d_name);
		if (pid[n] == self || ppid[n] < 0)
			continue;
		if (ppid[n] == 0) {
			closedir(dir);
			return 0; /* a run of `docker exec` is in flight */
		}
		n++;
	}
	closedir(dir);
	for (i = 0; i < n; i++) {
		int kept = 0;

		for (k = 0; k < nkeep; k++)
			kept |= keep[k] == pid[i];
		if (ppid[i] == self && !kept)
			(void)pidset_add(&s, pid[i]);
	}
	/* Each pass adds at least one generation, so depth bounds the passes. */
	for (k = 0; k < 64 && s.n; k++) {
		before = s.n;
		for (i = 0; i < n; i++)
			if (pidset_has(&s, ppid[i]) && !pidset_has(&s, pid[i]))
				(void)pidset_add(&s, pid[i]);
		if (s.n == before)
			break;
	}
	for (i = 0; i < s.n; i++)
		(void)kill(s.pids[i], SIGKILL);
	return s.n;
}

size_t sbx_init_kill_descendants(void)
{
	static pid_t storage[WALK_MAX];
	struct pidset s = {storage, 0, WALK_MAX};
	size_t i;
	pid_t self = getpid();

	if (have_children_files()) {
		(void)add_children(&s, self);
		/*
		 * Breadth first, reading a process's children before killing
		 * it so they are not lost to reparenting mid-walk.
		 */
		for (i = 0; i < s.n; i++) {
			(void)add_children(&s, s.pids[i]);
			(void)kill(s.pids[i], SIGKILL);
		}
	} else {
		scan_descendants(&s, self);
		for (i = 0; i < s.n; i++)
			(void)kill(s.pids[i], SIGKILL);
	}
	return s.n;
}

/* Reaps every exited child; returns 1 if children remain, 0 if none. */
static int reap(pid_t main_pid, int *main_status, int *main_reaped)
{
	int i;

	for (i = 0; i < SCAN_MAX; i++) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			if (p == main_pid && main_status && main_reaped) {
				*main_status = st;
				*main_reaped = 1;
			}
			continue;
		}
		if (p == 0)
			return 1;
		if (errno == EINTR)
			continue;
		return errno == ECHILD ? 0 : 1;
	}
	return 1;
}

static void drain_signalfd(int fd)
{
	struct signalfd_siginfo si[16];
	int i;

	for (i = 0; i < 64; i++)
		if (read(fd, si, sizeof(si)) <= 0)
			return;
}

int sbx_init_kill_tree(pid_t pgid,
		       pid_t main_pid,
		       int *main_status,
		       int *main_reaped,
		       int sigchld_fd,
		       int budget_ms)
{
	long long end = (long long)sbx__mono_ms() + budget_ms;

	if (pgid > 0)
		(void)kill(-pgid, SIGKILL);
	/*
	 * No child left means no descendant left: a descendant whose parent
	 * died was reparented to us (or to a subreaper that is itself our
	 * descendant), so the walk is only needed when something remains.
	 */
	if (!reap(main_pid, main_status, main_reaped))
		return 0;
	for (;;) {
		long long left;

		(void)sbx_init_kill_descendants();
		if (!reap(main_pid, main_status, main_reaped))
			return 0;
		left = end - (long long)sbx__mono_ms();
		if (left <= 0)
			return -1;
		/* Give the kernel a moment to finish the kills before walking again. */
		if (sigchld_fd >= 0) {
			struct pollfd pfd = {.fd = sigchld_fd, .events = POLLIN};

			if (poll(&pfd, 1, left < 10 ? (int)left : 10) > 0)
				drain_signalfd(sigchld_fd);
		} else {
			struct timespec ts = {0, 2 * 1000 * 1000};

			nanosleep(&ts, NULL);
		}
	}
}

/*
 * As the container's PID 1, kill(-1) reaches every process in the sandbox.
 * Anywhere else (tests, or a mistaken invocation) it would reach every
 * process of the same user on the host, so only the init's own descendants
 * are killed.
 */
void sbx_init_kill_sandbox(void)
{
	if (getpid() == 1)
		(void)kill(-1, SIGKILL);
	else
		(void)sbx_init_kill_tree(0, 0, NULL, NULL, -1, 1000);
}
