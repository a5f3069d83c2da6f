/*
 * cli/doctor.c: `sandboxio doctor`, which checks that this host can run
 * sandboxes and prints one line per check: "ok|warn|FAIL  NAME  DETAIL".
 *
 * The checks that need the engine go through the library: the backend
 * opens (the daemon answers; the library does not report the Engine's
 * version), the default image is present, and a default sandbox is created
 * and runs `true` (so the init binary works). A second run in that sandbox
 * reads back what a program inside gets: NoNewPrivs, CapEff, Seccomp, its
 * uid and its interfaces, and makes the deny canary: a UDP connect() to
 * 198.51.100.7 and to 2001:db8::7, which must fail with ENETUNREACH. A UDP
 * connect only picks a route; it sends no packet, so doctor sends no
 * traffic anywhere. The sandbox is removed on every path, SIGINT, SIGTERM
 * and SIGHUP included (cli/signals.c), and the backend is opened without
 * reaping: doctor changes nothing but its own sandbox.
 *
 * The host checks read /proc and /sys, run `nft list tables` (spawned,
 * no shell) and load the operator config (cli/config.c), which doctor's own
 * sandbox does not use: it checks the host, not what the operator permits. What only egress allowlists need is a warning when missing:
 * a default sandbox has no network and does not need it. The exit status
 * is 0 when no check failed, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "engine/docker-int.h"
#include "util/json-text.h"

extern char **environ;

#define DOCTOR_TENANT "sandboxio-doctor"
#define DOCTOR_RUN_MS 30000u
#define DOCTOR_LIFETIME_MS 120000u
#define DOCTOR_NFT_MS 10000
/* Each docker sandbox runs as a uid of its own from this range (engine/docker-int.h). */
#define DOCTOR_UID_BASE 1500000000ul
#define DOCTOR_UID_COUNT 65536ul
#define DENY_ADDR4 "198.51.100.7"
#define DENY_ADDR6 "2001:db8::7"

#define CAP_NET_ADMIN_BIT 12
#define CAP_SYS_ADMIN_BIT 21

enum level { LV_OK, LV_WARN, LV_FAIL };

struct doctor {
	const struct cli_opts *o;
	json_t *checks; /* --json: the checks so far */
	int failed;
};

/*
 * What runs inside the sandbox: "key=value" lines. The UDP sockets are
 * connected, never written to, so no packet leaves even if a route existed.
 */
static const char probe[] =
	"import errno, os, socket\n"
	"st = {}\n"
	"for line in open('/proc/self/status'):\n"
	"    k, _, v = line.partition(':')\n"
	"    st[k] = v.strip()\n"
	"for k in ('NoNewPrivs', 'CapEff', 'Seccomp'):\n"
	"    print('%s=%s' % (k, st.get(k, '?')))\n"
	"print('uid=%d' % os.getuid())\n"
	"devs = [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]]\n"
	"print('ifaces=' + ','.join(devs))\n"
	"for key, fam, addr in (('udp4', socket.AF_INET, '" DENY_ADDR4 "'),\n"
	"                       ('udp6', socket.AF_INET6, '" DENY_ADDR6 "')):\n"
	"    try:\n"
	"        s = socket.socket(fam, socket.SOCK_DGRAM)\n"
	"    except OSError as e:\n"
	"        print('%s=socket:%s' % (key, errno.errorcode.get(e.errno, e.errno)))\n"
	"        continue\n"
	"    try:\n"
	"        s.connect((addr, 7))\n"
	"        r = 'connected'\n"
	"    except OSError as e:\n"
	"        r = errno.errorcode.get(e.errno, str(e.errno))\n"
	"    s.close()\n"
	"    print('%s=%s' % (key, r))\n";

static void check(struct doctor *d, enum level lv, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void check(struct doctor *d, enum level lv, const char *name, const char *fmt, ...)
{
	const char *word = "ok", *status = "ok";
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	switch (lv) {
	case LV_OK:
		break;
	case LV_WARN:
		word = status = "warn";
		break;
	case LV_FAIL:
		word = "FAIL";
		status = "fail";
		d->failed = 1;
		break;
	}
	if (d->o->json) {
		json_t *c = json_pack("{s:s, s:s, s:o}", "name", name, "status", status, "detail",
				      sbx__json_text(detail, strlen(detail), NULL));

		if (c)
			json_array_append_new(d->checks, c);
		return;
	}
	printf("%-4s  %-15s  %s\n", word, name, detail);
	fflush(stdout);
}

/* Reads a small file into buf, NUL-terminated. Returns 0, or -1 with errno. */
static int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -1;
	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;

			close(fd);
			errno = saved;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return 0;
}

/*
 * The value of the line "KEY<sep>VALUE" of text, without leading blanks,
 * into out. Returns 0, or -1 when there is no such line.
 */
static int line_value(const char *text, const char *key, char sep, char *out, size_t size)
{
	size_t klen = strlen(key);
	const char *l = text;

	while (l && *l) {
		size_t n;

		if (strncmp(l, key, klen) == 0 && l[klen] == sep) {
			l += klen + 1;
			l += strspn(l, " \t");
			n = strcspn(l, "\n");
			if (n >= size)
				n = size - 1;
			memcpy(out, l, n);
			out[n] = '\0';
			return 0;
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return -1;
}

/* Whether word is one of the blank-separated words of list. */
static int has_word(const char *list, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *p = list; *p;) {
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (n == wlen && strncmp(p, word, n) == 0)
			return 1;
		p += n;
	}
	return 0;
}

/* ===== The engine and a sandbox ===== */

/* The init the library will mount, as sbx_backend_options.init_path says. */
static const char *init_shown(const sbx_backend_options *bo)
{
	const char *env = getenv("SANDBOXIO_INIT");

	if (bo->init_path)
		return bo->init_path;
	if (env && *env)
		return env;
	return SBX_LIBEXECDIR "/sbx-init";
}

/* What the probe found, for the checks that come after the sandbox's. */
struct probe_out {
	int ran; /* the probe ran and printed its lines */
	char why[512];
	char udp4[64];
	char udp6[64];
};

static int interrupted(const struct doctor *d, const char *what)
{
	cli_print_error(d->o, SBX_ECANCELED, "interrupted by signal %d; %s", cli_signal_pending(),
			what);
	return cli_signal_exit();
}

/* Runs argv in s with the signal watcher on. Returns the library's rc. */
static int run_watched(sbx_sandbox *s, const char *const *argv, sbx_result **r)
{
	sbx_run_options ro;
	int rc;

	sbx_run_options_init(&ro, SBX_RUN_OPTIONS_VERSION);
	if (cli_watch_start(s) < 0)
		cli_warn("cannot watch for signals during the run: an interrupt will wait for "
			 "the run's end");
	rc = sbx_sandbox_run(r, s, argv, &ro);
	cli_watch_stop();
	return rc;
}

/* A run's outcome in words, for a failed check. */
static void run_failure(char *buf, size_t size, int lrc, const sbx_result *r)
{
	if (lrc < 0)
		snprintf(buf, size, "%s", sbx_error_last()->message);
	else if (r->stderr_len)
		snprintf(buf, size, "status %s, exit %d: %.200s", sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	else
		snprintf(buf, size, "status %s, exit %d", sbx_run_status_name(r->status),
			 r->exit_code);
	buf[strcspn(buf, "\n")] = '\0';
}

/* The probe's value of key, or "(missing)". */
static const char *probe_value(const char *text, const char *key, char *buf, size_t size)
{
	if (line_value(text, key, '=', buf, size) < 0)
		snprintf(buf, size, "(missing)");
	return buf;
}

/* The lines of the probe's output, one check each. */
static void probe_checks(struct doctor *d, const char *text, struct probe_out *po)
{
	char v[256];
	char *end;

	if (strcmp(probe_value(text, "NoNewPrivs", v, sizeof(v)), "1") == 0)
		check(d, LV_OK, "no-new-privs", "NoNewPrivs is 1 inside");
	else
		check(d, LV_FAIL, "no-new-privs", "NoNewPrivs is %s inside, not 1", v);

	probe_value(text, "CapEff", v, sizeof(v));
	if (v[0] >= '0' && v[0] <= '9' && strtoull(v, &end, 16) == 0 && *end == '\0')
		check(d, LV_OK, "capabilities", "CapEff is %s inside", v);
	else
		check(d, LV_FAIL, "capabilities", "CapEff is %s inside, not 0", v);

	if (strcmp(probe_value(text, "Seccomp", v, sizeof(v)), "2") == 0)
		check(d, LV_OK, "seccomp-mode", "Seccomp is 2 (filter) inside");
	else
		check(d, LV_FAIL, "seccomp-mode", "Seccomp is %s inside, not 2 (filter)", v);

	{
		char *uend;
		unsigned long uid = strtoul(probe_value(text, "uid", v, sizeof(v)), &uend, 10);

		if (*v && !*uend && uid >= DOCTOR_UID_BASE &&
		    uid - DOCTOR_UID_BASE < DOCTOR_UID_COUNT)
			check(d, LV_OK, "uid", "runs as uid %s, the sandbox's own", v);
		else
			check(d, LV_FAIL, "uid",
			      "runs as uid %s, not one of the sandbox range %lu+", v,
			      DOCTOR_UID_BASE);
	}

	if (strcmp(probe_value(text, "ifaces", v, sizeof(v)), "lo") == 0)
		check(d, LV_OK, "interfaces", "only lo in /proc/net/dev");
	else
		check(d, LV_FAIL, "interfaces", "/proc/net/dev lists %s, not only lo", v);

	po->ran = line_value(text, "udp4", '=', po->udp4, sizeof(po->udp4)) == 0 &&
		  line_value(text, "udp6", '=', po->udp6, sizeof(po->udp6)) == 0;
	if (!po->ran)
		snprintf(po->why, sizeof(po->why), "not checked: the probe printed no result");
}

/* A policy for doctor's short-lived sandboxes at tier; NULL when it could
 * not be made (the check named what said why). */
static sbx_policy *doctor_policy(struct doctor *d, const char *what, sbx_tier tier)
{
	sbx_policy *p = NULL;

	if (sbx_policy_new(&p) < 0 || sbx_policy_set_tenant(p, DOCTOR_TENANT) < 0 ||
	    sbx_policy_set_min_tier(p, tier) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, DOCTOR_RUN_MS) < 0 ||
	    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, DOCTOR_LIFETIME_MS) < 0) {
		check(d, LV_FAIL, what, "%s", sbx_error_last()->message);
		sbx_policy_free(p);
		return NULL;
	}
	return p;
}

/*
 * Creates a sandbox with the signals held off, so that a Ctrl-C cannot
 * leave one half made. Returns 1 when made, 0 when the create failed (msg
 * says why), -1 when a signal came (then *s may still be set).
 */
static int doctor_create(sbx_backend *b, sbx_policy *p, sbx_sandbox **s, char *msg, size_t len)
{
	int lrc;

	cli_signals_block();
	lrc = cli_signal_pending() ? 0 : sbx_sandbox_create(s, b, p);
	if (lrc < 0)
		snprintf(msg, len, "%s", sbx_error_last()->message);
	cli_signals_unblock();
	if (cli_signal_pending())
		return -1; /* *s, if made, is removed by doctor_finish() */
	return lrc == 0 && *s ? 1 : 0;
}

/* Removes what a check made. Returns 0, or the exit status when a signal
 * cut the check short. */
static int
doctor_finish(struct doctor *d, sbx_sandbox *s, const char *id, sbx_result *r, sbx_policy *p)
{
	sbx_result_free(r);
	if (s && sbx_sandbox_close(s) < 0 && !cli_signal_pending())
		check(d, LV_FAIL, "cleanup", "removing sandbox %s: %s (it ends at its deadline)",
		      id, sbx_error_last()->message);
	sbx_policy_free(p);
	if (cli_signal_pending())
		return interrupted(d, s ? "the sandbox was removed" : "no sandbox was created");
	return 0;
}

/*
 * Creates a default sandbox, runs `true` and the probe in it, and removes
 * it. Returns 0, or the exit status when a signal cut the checks short.
 */
static int sandbox_checks(struct doctor *d,
			  sbx_backend *b,
			  const sbx_backend_options *bo,
			  struct probe_out *po)
{
	static const char *const argv_true[] = {"true", NULL};
	const char *const argv_probe[] = {"python3", "-c", probe, NULL};
	char msg[512], id[16] = "";
	sbx_policy *p = doctor_policy(d, "sandbox", SBX_TIER_CONTAINER);
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	int lrc;

	if (!p || (lrc = doctor_create(b, p, &s, msg, sizeof(msg))) < 0)
		goto out;
	if (lrc == 0) {
		check(d, LV_FAIL, "sandbox", "create failed (init %s): %s", init_shown(bo), msg);
		goto out;
	}
	snprintf(id, sizeof(id), "%.12s", sbx_sandbox_id(s));

	lrc = run_watched(s, argv_true, &r);
	if (cli_signal_pending())
		goto out;
	if (lrc < 0 || r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		run_failure(msg, sizeof(msg), lrc, r);
		check(d, LV_FAIL, "sandbox", "created %s, but 'true' failed (init %s): %s", id,
		      init_shown(bo), msg);
		goto out;
	}
	check(d, LV_OK, "sandbox", "created %s and ran 'true' (init %s)", id, init_shown(bo));
	sbx_result_free(r);
	r = NULL;

	lrc = run_watched(s, argv_probe, &r);
	if (cli_signal_pending())
		goto out;
	if (lrc < 0 || r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		run_failure(msg, sizeof(msg), lrc, r);
		check(d, LV_FAIL, "probe", "the checks inside the sandbox did not run: %s", msg);
		snprintf(po->why, sizeof(po->why), "not checked: the probe did not run");
		goto out;
	}
	probe_checks(d, r->stdout_data, po);
out:
	return doctor_finish(d, s, id, r, p);
}

/*
 * Whether the host offers a tier beyond container, proven by a short run: a
 * sandbox at that tier reads /proc/version, and a user-space kernel (gVisor)
 * answers there with its own, not the host's. A tier the backend cannot give
 * is a warning naming why (its create is refused, never downgraded). Returns
 * 0, or the exit status when a signal cut the check short.
 */
static int tier_check(struct doctor *d, sbx_backend *b, sbx_tier tier, const char *host_kernel)
{
	const char *const argv[] = {"cat", "/proc/version", NULL};
	char name[32], msg[512], id[16] = "";
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	int lrc;

	snprintf(name, sizeof(name), "tier-%s", sbx_tier_name(tier));
	if (!(p = doctor_policy(d, name, tier)) ||
	    (lrc = doctor_create(b, p, &s, msg, sizeof(msg))) < 0)
		goto out;
	if (lrc == 0) {
		msg[strcspn(msg, "\n")] = '\0';
		check(d, LV_WARN, name, "not offered here: %s", msg);
		goto out;
	}
	snprintf(id, sizeof(id), "%.12s", sbx_sandbox_id(s));
	lrc = run_watched(s, argv, &r);
	if (cli_signal_pending())
		goto out;
	if (lrc < 0 || r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		run_failure(msg, sizeof(msg), lrc, r);
		check(d, LV_FAIL, name, "created %s, but reading /proc/version failed: %s", id,
		      msg);
		goto out;
	}
	r->stdout_data[strcspn(r->stdout_data, "\n")] = '\0';
	if (sbx_sandbox_tier(s) != tier || strcmp(r->stdout_data, host_kernel) == 0)
		check(d, LV_FAIL, name, "sandbox %s sees the host's kernel: not a %s sandbox", id,
		      sbx_tier_name(tier));
	else
		check(d, LV_OK, name, "ran in %s under its own kernel ('%.40s', not the host's)",
		      id, r->stdout_data);
out:
	return doctor_finish(d, s, id, r, p);
}

/* ===== The host ===== */

static void check_cgroups(struct doctor *d)
{
	static const char *const want[] = {"memory", "pids", "cpu"};
	char buf[8192], missing[64] = "";
	const char *where;
	int v2 = read_text("/sys/fs/cgroup/cgroup.controllers", buf, sizeof(buf)) == 0;

	where = v2 ? "/sys/fs/cgroup/cgroup.controllers" : "/proc/cgroups";
	if (!v2) {
		/* "#subsys_name hierarchy num_cgroups enabled": keep the enabled names. */
		char raw[8192];
		size_t len = 0;

		if (read_text("/proc/cgroups", raw, sizeof(raw)) < 0) {
			check(d, LV_FAIL, "cgroups",
			      "neither /sys/fs/cgroup/cgroup.controllers nor /proc/cgroups can be "
			      "read: %s",
			      strerror(errno));
			return;
		}
		buf[0] = '\0';
		for (char *save = NULL, *l = strtok_r(raw, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			char name[64];
			unsigned hier, num, enabled;

			if (l[0] == '#' ||
			    sscanf(l, "%63s %u %u %u", name, &hier, &num, &enabled) != 4 ||
			    !enabled)
				continue;
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s", name);
			if (len >= sizeof(buf))
				break;
		}
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!has_word(buf, want[i]))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 " %s", want[i]);
	if (missing[0])
		check(d, LV_FAIL, "cgroups", "missing controllers:%s (%s)", missing, where);
	else
		check(d, LV_OK, "cgroups", "memory, pids and cpu present (cgroup v%d, %s)",
		      v2 ? 2 : 1, where);
}

static void check_seccomp(struct doctor *d, const char *status)
{
	char v[32];

	if (line_value(status, "Seccomp", ':', v, sizeof(v)) == 0)
		check(d, LV_OK, "seccomp", "the kernel supports seccomp (/proc/self/status)");
	else
		check(d, LV_FAIL, "seccomp",
		      "no Seccomp field in /proc/self/status: the kernel "
		      "lacks seccomp");
}

static void check_caps(struct doctor *d, const char *status)
{
	unsigned long long eff = 0;
	char v[32], *end;
	int net, sys;

	if (line_value(status, "CapEff", ':', v, sizeof(v)) == 0)
		eff = strtoull(v, &end, 16);
	net = (int)(eff >> CAP_NET_ADMIN_BIT & 1);
	sys = (int)(eff >> CAP_SYS_ADMIN_BIT & 1);
	if (net && sys)
		check(d, LV_OK, "egress-caps", "CAP_NET_ADMIN and CAP_SYS_ADMIN held (uid %u)",
		      (unsigned)geteuid());
	else
		check(d, LV_WARN, "egress-caps",
		      "%s%s%s not held (uid %u): --allow-host and --allow-cidr are refused; run "
		      "as root",
		      net ? "" : "CAP_NET_ADMIN", !net && !sys ? " and " : "",
		      sys ? "" : "CAP_SYS_ADMIN", (unsigned)geteuid());
}

static void check_forwarding(struct doctor *d)
{
	char v[16];

	if (read_text("/proc/sys/net/ipv4/ip_forward", v, sizeof(v)) < 0)
		check(d, LV_WARN, "ipv4-forward",
		      "/proc/sys/net/ipv4/ip_forward: %s: --allow-host and --allow-cidr are "
		      "refused",
		      strerror(errno));
	else if (v[0] == '1')
		check(d, LV_OK, "ipv4-forward", "net.ipv4.ip_forward is 1");
	else
		check(d, LV_WARN, "ipv4-forward",
		      "net.ipv4.ip_forward is 0: --allow-host and --allow-cidr are refused");

	if (read_text("/proc/sys/net/ipv6/conf/all/forwarding", v, sizeof(v)) == 0 && v[0] == '1')
		check(d, LV_OK, "ipv6-forward", "net.ipv6.conf.all.forwarding is 1");
	else
		check(d, LV_WARN, "ipv6-forward",
		      "net.ipv6.conf.all.forwarding is not 1: IPv6 --allow-cidr entries (and "
		      "names with only IPv6 addresses) are refused; names pin their IPv4 "
		      "addresses only");
}

/*
 * Spawns argv (no shell) with stdin and stdout on /dev/null and reads the
 * first line of its stderr into err. Returns its wait status, or -1 with
 * errno (ENOENT: no such program, ETIMEDOUT: killed at the deadline).
 */
static int spawn_quiet(const char *path, char *const argv[], char *err, size_t size)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	struct timespec t0, now;
	size_t len = 0;
	int pfd[2], st = 0, rc, timed_out = 0;
	pid_t pid;

	err[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGPIPE);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	rc = posix_spawn(&pid, path, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		errno = rc;
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
		char chunk[512];
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = DOCTOR_NFT_MS -
		       ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			kill(pid, SIGKILL);
			timed_out = 1;
			break;
		}
		if (poll(&pf, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			break;
		}
		n = read(pfd[0], chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		if (len < size - 1) {
			size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;

			memcpy(err + len, chunk, take);
			len += take;
			err[len] = '\0';
		}
	}
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	err[strcspn(err, "\n")] = '\0';
	if (timed_out) {
		errno = ETIMEDOUT;
		return -1;
	}
	return st;
}

static void check_nft(struct doctor *d)
{
	static const char *const paths[] = {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft",
					    "/bin/nft"};
	char *const argv[] = {"nft", "list", "tables", NULL};
	char err[256];
	int st = -1;

	errno = ENOENT;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		st = spawn_quiet(paths[i], argv, err, sizeof(err));
		if (st >= 0 || errno != ENOENT) {
			if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
				check(d, LV_OK, "nftables", "'%s list tables' works", paths[i]);
				return;
			}
			if (st >= 0)
				check(d, LV_WARN, "nftables",
				      "'%s list tables' failed (%s %d)%s%s: --allow-host and "
				      "--allow-cidr are refused",
				      paths[i], WIFEXITED(st) ? "exit" : "signal",
				      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				      err[0] ? ": " : "", err);
			else
				check(d, LV_WARN, "nftables",
				      "'%s list tables': %s: --allow-host and --allow-cidr are "
				      "refused",
				      paths[i], strerror(errno));
			return;
		}
	}
	check(d, LV_WARN, "nftables",
	      "no nft program found (/usr/sbin, /sbin, /usr/bin, /bin): nftables cannot be "
	      "checked; --allow-host and --allow-cidr need it");
}

static void check_legacy(struct doctor *d)
{
	char buf[1024];

	if (read_text("/proc/net/ip_tables_names", buf, sizeof(buf)) == 0 &&
	    has_word(buf, "filter"))
		check(d, LV_WARN, "iptables-legacy",
		      "an iptables-legacy filter table is loaded: --allow-host and --allow-cidr "
		      "are refused");
	else
		check(d, LV_OK, "iptables-legacy", "no iptables-legacy filter table");
}

/* The operator config loads (doctor's own sandbox is made without it). */
static void check_config(struct doctor *d)
{
	sbx_config *cfg = NULL;

	if (sbx_config_load_narrowed(&cfg, d->o->config) < 0) {
		check(d, LV_FAIL, "config", "%s", sbx_error_last()->message);
		return;
	}
	if (sbx_config_source(cfg))
		check(d, LV_OK, "config", "%s", sbx_config_source(cfg));
	else
		check(d, LV_OK, "config", "none found: the built-in defaults and ceilings apply");
	sbx_config_free(cfg);
}

static void check_deny(struct doctor *d, const struct probe_out *po)
{
	if (!po->ran)
		check(d, LV_FAIL, "deny-canary", "%s", po->why);
	else if (strcmp(po->udp4, "ENETUNREACH") == 0 && strcmp(po->udp6, "ENETUNREACH") == 0)
		check(d, LV_OK, "deny-canary",
		      "UDP connect to " DENY_ADDR4 " and " DENY_ADDR6
		      " inside: ENETUNREACH (no packet sent)");
	else
		check(d, LV_FAIL, "deny-canary",
		      "UDP connect inside to " DENY_ADDR4 ": %s, to " DENY_ADDR6
		      ": %s; want ENETUNREACH for both",
		      po->udp4, po->udp6);
}

int cmd_doctor(const struct cli_opts *o)
{
	struct doctor d = {.o = o};
	struct probe_out po = {0};
	sbx_backend_options bo;
	sbx_backend *b = NULL;
	char init[PATH_MAX], status[8192] = "", kernel[512];
	int rc = 0, img;

	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "doctor takes no arguments (got '%.64s')",
				o->args[0]);
		return CLI_EXIT_FAIL;
	}
	if (cli_signals_install() < 0) {
		cli_print_error(o, SBX_ERROR, "cannot install signal handlers");
		return CLI_EXIT_FAIL;
	}
	if (o->json && !(d.checks = json_array())) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	snprintf(po.why, sizeof(po.why), "not checked: no sandbox ran");
	if (cli_backend_options(o, &bo, init, sizeof(init)) < 0 ||
	    sbx_backend_open(&b, "docker", &bo) < 0) {
		check(&d, LV_FAIL, "daemon", "%s", sbx_error_last()->message);
		check(&d, LV_FAIL, "image", "not checked: the daemon does not answer");
		check(&d, LV_FAIL, "sandbox", "not checked: the daemon does not answer");
	} else {
		char engine[160] = "";

		/* Which engine: Docker's, or Podman's compatible API (engine/podman.c). */
		if (sbx__engine_describe(cli_socket_path(o), engine, sizeof(engine)) < 0) {
			snprintf(engine, sizeof(engine), "engine not described: %s",
				 sbx_error_last()->message);
			sbx_error_clear();
		}
		check(&d, LV_OK, "daemon", "answers on %s (libsandboxio %s): %s",
		      cli_socket_path(o), sbx_version(), engine);
		img = sbx_backend_image_exists(b, CLI_DEFAULT_IMAGE);
		if (img == 1) {
			check(&d, LV_OK, "image", CLI_DEFAULT_IMAGE " is present");
			rc = sandbox_checks(&d, b, &bo, &po);
			if (read_text("/proc/version", kernel, sizeof(kernel)) < 0)
				kernel[0] = '\0';
			kernel[strcspn(kernel, "\n")] = '\0';
			if (!rc)
				rc = tier_check(&d, b, SBX_TIER_GVISOR, kernel);
			if (!rc)
				rc = tier_check(&d, b, SBX_TIER_MICROVM, kernel);
		} else {
			if (img < 0)
				check(&d, LV_FAIL, "image", "%s", sbx_error_last()->message);
			else
				check(&d, LV_FAIL, "image",
				      CLI_DEFAULT_IMAGE " is missing: build it with 'sandboxio "
							"image build'");
			check(&d, LV_FAIL, "sandbox", "not checked: no default image");
		}
	}
	if (rc)
		goto out;

	check_cgroups(&d);
	if (read_text("/proc/self/status", status, sizeof(status)) < 0)
		status[0] = '\0';
	check_seccomp(&d, status);
	check_caps(&d, status);
	check_forwarding(&d);
	check_nft(&d);
	check_legacy(&d);
	check_config(&d);
	check_deny(&d, &po);
	if (cli_signal_pending()) {
		rc = interrupted(&d, "nothing is left");
		goto out;
	}
	if (o->json &&
	    cli_print_json(json_pack("{s:b, s:O}", "ok", !d.failed, "checks", d.checks)) < 0)
		rc = CLI_EXIT_FAIL;
	else
		rc = d.failed ? 1 : 0;
out:
	json_decref(d.checks);
	sbx_backend_free(b);
	return rc;
}
