/*
 * cgroups/cgroups.c: reads a container's resource limits and usage from the
 * host's cgroup filesystem.
 *
 * The engine only says what it was asked to apply. To verify that the caps
 * are really in force, the library reads them back from the kernel, through a
 * host pid inside the container: <procroot>/<pid>/cgroup names the cgroup of
 * that process in every hierarchy, as "0::/path" for v2 and
 * "N:memory:/path" or "N:cpu,cpuacct:/path" for v1.
 *
 * Each controller is resolved on its own. If a v1 line lists it and its
 * directory exists (<root>/<controller>/<path>, or <root>/<list>/<path> where
 * co-mounted controllers have no per-controller link), it is read from v1:
 * hybrid hosts with Docker's cgroupfs driver put the limits there, while the
 * unified hierarchy only tracks processes. Otherwise it is read from v2, whose
 * mount is <root> on a pure v2 host (<root>/cgroup.controllers exists) and
 * <root>/unified on a hybrid one.
 *
 * The text of these files is handled as untrusted input. Reads are bounded and
 * numbers are parsed strictly: plain decimal digits, no sign, no spaces, no
 * overflow, nothing after them but one newline. A cgroup path must be
 * absolute and free of ".." components; /proc shows such paths for cgroups
 * outside the reader's cgroup namespace, and following them would leave the
 * container's own cgroup.
 */
#include "cgroups/cgroups-int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CG_FILE_MAX 4096 /* bound on a control file, NUL included */
#define CG_PROC_MAX 8192 /* bound on <procroot>/<pid>/cgroup, NUL included */
/* v1 reports "no limit" as PAGE_COUNTER_MAX pages, about 2^63 rounded down to a page. */
#define CG_V1_HUGE (INT64_C(1) << 62)

/* Flags of cg_parse_value(). */
#define CG_MAX 1u    /* "max" means unlimited (v2 files, v1 pids.max) */
#define CG_HUGE 2u   /* values from 2^62 up mean unlimited (v1 memory files) */
#define CG_MINUS1 4u /* "-1" means unlimited (v1 cpu.cfs_quota_us) */

enum cg_ctl { CG_MEMORY, CG_CPU, CG_CPUACCT, CG_PIDS, CG_NCTL };

static const char *const cg_names[CG_NCTL] = {"memory", "cpu", "cpuacct", "pids"};

struct cg_span {
	const char *p;
	size_t n;
};

/* <procroot>/<pid>/cgroup, parsed; the spans point into buf. */
struct cg_proc {
	char buf[CG_PROC_MAX];
	bool v1_seen[CG_NCTL];
	struct cg_span v1_list[CG_NCTL]; /* the controller list of the line: "cpu,cpuacct" */
	struct cg_span v1_path[CG_NCTL];
	bool v2_seen;
	struct cg_span v2_path;
};

static bool cg_span_is(struct cg_span s, const char *word)
{
	size_t n = strlen(word);

	return s.n == n && memcmp(s.p, word, n) == 0;
}

/* snprintf into a PATH_MAX buffer; -ENAMETOOLONG instead of truncating. */
__attribute__((format(printf, 2, 3))) static int cg_path(char *dst, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (n >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Reads a whole small file into buf (cap bytes, NUL included). A file that
 * does not fit, is not a regular file or holds a NUL byte is -EINVAL.
 */
static int cg_read_file(const char *path, char *buf, size_t cap, size_t *lenp)
{
	struct stat st;
	size_t len = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (len == cap - 1) {
			char extra;

			r = read(fd, &extra, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				rc = -errno;
			else if (r > 0)
				rc = -EINVAL;
			break;
		}
		r = read(fd, buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
out:
	close(fd);
	if (rc < 0)
		return rc;
	buf[len] = '\0';
	if (memchr(buf, '\0', len))
		return -EINVAL;
	*lenp = len;
	return 0;
}

/* Absolute, and no component is "..". */
static bool cg_path_ok(struct cg_span path)
{
	size_t i = 0;

	if (path.n == 0 || path.p[0] != '/')
		return false;
	while (i < path.n) {
		size_t start;

		while (i < path.n && path.p[i] == '/')
			i++;
		start = i;
		while (i < path.n && path.p[i] != '/')
			i++;
		if (i - start == 2 && path.p[start] == '.' && path.p[start + 1] == '.')
			return false;
	}
	return true;
}

static int cg_parse_proc(struct cg_proc *pr, size_t len)
{
	const char *s = pr->buf, *end = pr->buf + len;

	if (len == 0)
		return -EINVAL;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		const char *c1, *c2, *q;
		struct cg_span list, path;

		c1 = memchr(s, ':', (size_t)(eol - s));
		if (!c1 || c1 == s)
			return -EINVAL;
		for (q = s; q < c1; q++)
			if (*q < '0' || *q > '9')
				return -EINVAL;
		c2 = memchr(c1 + 1, ':', (size_t)(eol - c1 - 1));
		if (!c2)
			return -EINVAL;
		list.p = c1 + 1;
		list.n = (size_t)(c2 - c1 - 1);
		path.p = c2 + 1;
		path.n = (size_t)(eol - c2 - 1);
		if (list.n == 0) {
			/* The v2 line is "0::/path" and there is at most one. */
			if (c1 - s != 1 || s[0] != '0' || pr->v2_seen)
				return -EINVAL;
			pr->v2_seen = true;
			pr->v2_path = path;
		} else {
			const char *t = list.p, *lend = list.p + list.n;

			while (t <= lend) {
				const char *comma = memchr(t, ',', (size_t)(lend - t));
				struct cg_span name = {t, (size_t)((comma ? comma : lend) - t)};
				int c;

				for (c = 0; c < CG_NCTL; c++) {
					if (!cg_span_is(name, cg_names[c]))
						continue;
					if (pr->v1_seen[c])
						return -EINVAL;
					pr->v1_seen[c] = true;
					pr->v1_list[c] = list;
					pr->v1_path[c] = path;
				}
				if (!comma)
					break;
				t = comma + 1;
			}
		}
		s = nl ? nl + 1 : end;
	}
	return 0;
}

static int cg_load_proc(struct cg_proc *pr, const char *procroot, pid_t pid)
{
	char path[PATH_MAX];
	size_t len;
	int rc;

	memset(pr, 0, sizeof(*pr));
	rc = cg_path(path, "%s/%d/cgroup", procroot, (int)pid);
	if (rc < 0)
		return rc;
	rc = cg_read_file(path, pr->buf, sizeof(pr->buf), &len);
	if (rc < 0)
		return rc;
	return cg_parse_proc(pr, len);
}

/* 1 if path is a directory, 0 if it is absent, else a negative errno. */
static int cg_is_dir(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	return S_ISDIR(st.st_mode) ? 1 : 0;
}

/* The path without trailing slashes, so that "/" joins as "". */
static struct cg_span cg_trim(struct cg_span path)
{
	while (path.n > 0 && path.p[path.n - 1] == '/')
		path.n--;
	return path;
}

/* Finds the directory (PATH_MAX bytes) holding controller c's files and its version. */
static int
cg_locate(const struct cg_proc *pr, const char *root, enum cg_ctl c, char *dir, int *version)
{
	struct cg_span path;
	int rc;

	if (pr->v1_seen[c]) {
		if (!cg_path_ok(pr->v1_path[c]))
			return -EINVAL;
		path = cg_trim(pr->v1_path[c]);
		rc = cg_path(dir, "%s/%s%.*s", root, cg_names[c], (int)path.n, path.p);
		if (rc == 0)
			rc = cg_is_dir(dir);
		if (rc == 0 && !cg_span_is(pr->v1_list[c], cg_names[c])) {
			rc = cg_path(dir, "%s/%.*s%.*s", root, (int)pr->v1_list[c].n,
				     pr->v1_list[c].p, (int)path.n, path.p);
			if (rc == 0)
				rc = cg_is_dir(dir);
		}
		if (rc < 0)
			return rc;
		if (rc == 1) {
			*version = 1;
			return 0;
		}
	}
	if (pr->v2_seen) {
		char probe[PATH_MAX];

		if (!cg_path_ok(pr->v2_path))
			return -EINVAL;
		path = cg_trim(pr->v2_path);
		rc = cg_path(probe, "%s/cgroup.controllers", root);
		if (rc < 0)
			return rc;
		if (access(probe, F_OK) == 0)
			rc = cg_path(dir, "%s%.*s", root, (int)path.n, path.p);
		else if (errno == ENOENT)
			rc = cg_path(dir, "%s/unified%.*s", root, (int)path.n, path.p);
		else
			rc = -errno;
		if (rc < 0)
			return rc;
		*version = 2;
		return 0;
	}
	return -ENOENT;
}

/* Strict non-negative decimal. */
static int cg_parse_u63(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = s[i] - '0';
		if (v > (INT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int cg_parse_value(const char *s, size_t n, unsigned flags, int64_t *out)
{
	int rc;

	if ((flags & CG_MAX) && n == 3 && memcmp(s, "max", 3) == 0) {
		*out = SBX_CGROUP_UNLIMITED;
		return 0;
	}
	if ((flags & CG_MINUS1) && n == 2 && memcmp(s, "-1", 2) == 0) {
		*out = SBX_CGROUP_UNLIMITED;
		return 0;
	}
	rc = cg_parse_u63(s, n, out);
	if (rc == 0 && (flags & CG_HUGE) && *out >= CG_V1_HUGE)
		*out = SBX_CGROUP_UNLIMITED;
	return rc;
}

/* Reads dir/file, which must be one non-empty line; returns its length without the newline. */
static int cg_read_line(const char *dir, const char *file, char *buf, size_t *lenp)
{
	char path[PATH_MAX];
	size_t len;
	int rc;

	rc = cg_path(path, "%s/%s", dir, file);
	if (rc < 0)
		return rc;
	rc = cg_read_file(path, buf, CG_FILE_MAX, &len);
	if (rc < 0)
		return rc;
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (len == 0 || memchr(buf, '\n', len))
		return -EINVAL;
	*lenp = len;
	return 0;
}

static int cg_read_value(const char *dir, const char *file, unsigned flags, int64_t *out)
{
	char buf[CG_FILE_MAX];
	size_t len;
	int rc;

	rc = cg_read_line(dir, file, buf, &len);
	if (rc < 0)
		return rc;
	return cg_parse_value(buf, len, flags, out);
}

/*
 * Reads the value of key from a flat keyed file ("key value" lines). Every line
 * must have a key and a space; only the wanted key's value is parsed. A
 * missing key is -ENOENT, a repeated one -EINVAL.
 */
static int cg_read_key(const char *dir, const char *file, const char *key, int64_t *out)
{
	char path[PATH_MAX], buf[CG_FILE_MAX];
	const char *s, *end;
	bool found = false;
	int64_t v = 0;
	size_t len;
	int rc;

	rc = cg_path(path, "%s/%s", dir, file);
	if (rc < 0)
		return rc;
	rc = cg_read_file(path, buf, sizeof(buf), &len);
	if (rc < 0)
		return rc;
	if (len == 0)
		return -EINVAL;
	s = buf;
	end = buf + len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		const char *sp = memchr(s, ' ', (size_t)(eol - s));

		if (!sp || sp == s)
			return -EINVAL;
		if (cg_span_is((struct cg_span){s, (size_t)(sp - s)}, key)) {
			if (found)
				return -EINVAL;
			rc = cg_parse_u63(sp + 1, (size_t)(eol - sp - 1), &v);
			if (rc < 0)
				return rc;
			found = true;
		}
		s = nl ? nl + 1 : end;
	}
	if (!found)
		return -ENOENT;
	*out = v;
	return 0;
}

/* v2 cpu.max: "<quota|max> <period>". */
static int cg_read_cpu_max(const char *dir, int64_t *quota, int64_t *period)
{
	char buf[CG_FILE_MAX];
	const char *sp;
	size_t len;
	int rc;

	rc = cg_read_line(dir, "cpu.max", buf, &len);
	if (rc < 0)
		return rc;
	sp = memchr(buf, ' ', len);
	if (!sp)
		return -EINVAL;
	rc = cg_parse_value(buf, (size_t)(sp - buf), CG_MAX, quota);
	if (rc < 0)
		return rc;
	return cg_parse_u63(sp + 1, len - (size_t)(sp - buf) - 1, period);
}

/* An optional value: absent becomes SBX_CGROUP_UNKNOWN. */
static int cg_optional(int rc, int64_t *v)
{
	if (rc == -ENOENT) {
		*v = SBX_CGROUP_UNKNOWN;
		return 0;
	}
	return rc;
}

static int cg_memory_limits(sbx_cgroup_limits *l, const char *dir, int version)
{
	int64_t swap;
	int rc;

	if (version == 1) {
		rc = cg_read_value(dir, "memory.limit_in_bytes", CG_HUGE, &l->memory_max);
		if (rc < 0)
			return rc;
		rc = cg_read_value(dir, "memory.memsw.limit_in_bytes", CG_HUGE, &l->memswap_max);
		return cg_optional(rc, &l->memswap_max);
	}
	rc = cg_read_value(dir, "memory.max", CG_MAX, &l->memory_max);
	if (rc < 0)
		return rc;
	rc = cg_read_value(dir, "memory.swap.max", CG_MAX, &swap);
	if (rc == -ENOENT) {
		l->memswap_max = SBX_CGROUP_UNKNOWN;
		return 0;
	}
	if (rc < 0)
		return rc;
	if (l->memory_max == SBX_CGROUP_UNLIMITED || swap == SBX_CGROUP_UNLIMITED)
		l->memswap_max = SBX_CGROUP_UNLIMITED;
	else if (__builtin_add_overflow(l->memory_max, swap, &l->memswap_max))
		return -EINVAL;
	return 0;
}

static int cg_cpu_limits(sbx_cgroup_limits *l, const char *dir, int version)
{
	int rc;

	if (version == 1) {
		rc = cg_read_value(dir, "cpu.cfs_quota_us", CG_MINUS1, &l->cpu_quota_us);
		if (rc == 0)
			rc = cg_read_value(dir, "cpu.cfs_period_us", 0, &l->cpu_period_us);
	} else {
		rc = cg_read_cpu_max(dir, &l->cpu_quota_us, &l->cpu_period_us);
	}
	if (rc == 0 && l->cpu_period_us == 0)
		rc = -EINVAL;
	return rc;
}

int sbx__cgroup_read_limits(sbx_cgroup_limits *out,
			    const char *root,
			    const char *procroot,
			    pid_t pid)
{
	struct cg_proc pr;
	sbx_cgroup_limits l;
	char dir[PATH_MAX];
	int rc, version;

	if (!out || !root || !procroot || pid <= 0)
		return -EINVAL;
	rc = cg_load_proc(&pr, procroot, pid);
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_MEMORY, dir, &version);
	if (rc < 0)
		return rc;
	l.version = version;
	rc = cg_memory_limits(&l, dir, version);
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_PIDS, dir, &version);
	if (rc < 0)
		return rc;
	rc = cg_read_value(dir, "pids.max", CG_MAX, &l.pids_max);
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_CPU, dir, &version);
	if (rc < 0)
		return rc;
	rc = cg_cpu_limits(&l, dir, version);
	if (rc < 0)
		return rc;

	*out = l;
	return 0;
}

int sbx__cgroup_memory_dir(
	char *dir, int *version, const char *root, const char *procroot, pid_t pid)
{
	struct cg_proc pr;
	int rc;

	if (!dir || !version || !root || !procroot || pid <= 0)
		return -EINVAL;
	rc = cg_load_proc(&pr, procroot, pid);
	if (rc < 0)
		return rc;
	return cg_locate(&pr, root, CG_MEMORY, dir, version);
}

int sbx__cgroup_oom_kills(const char *dir, int64_t *out)
{
	if (!dir || !out)
		return -EINVAL;
	return cg_read_key(dir, "memory.oom_control", "oom_kill", out);
}

int sbx__cgroup_read_usage(sbx_cgroup_usage *out, const char *root, const char *procroot, pid_t pid)
{
	struct cg_proc pr;
	sbx_cgroup_usage u;
	char dir[PATH_MAX];
	int rc, version;
	int64_t ns;

	if (!out || !root || !procroot || pid <= 0)
		return -EINVAL;
	rc = cg_load_proc(&pr, procroot, pid);
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_MEMORY, dir, &version);
	if (rc < 0)
		return rc;
	if (version == 1) {
		rc = cg_read_value(dir, "memory.max_usage_in_bytes", 0, &u.memory_peak);
		rc = cg_optional(rc, &u.memory_peak);
		if (rc == 0)
			rc = cg_optional(
				cg_read_value(dir, "memory.usage_in_bytes", 0, &u.memory_current),
				&u.memory_current);
		if (rc == 0)
			rc = cg_optional(
				cg_read_key(dir, "memory.oom_control", "oom_kill", &u.oom_kills),
				&u.oom_kills);
	} else {
		rc = cg_read_value(dir, "memory.peak", 0, &u.memory_peak);
		rc = cg_optional(rc, &u.memory_peak);
		if (rc == 0)
			rc = cg_optional(cg_read_value(dir, "memory.current", 0, &u.memory_current),
					 &u.memory_current);
		if (rc == 0)
			rc = cg_optional(
				cg_read_key(dir, "memory.events", "oom_kill", &u.oom_kills),
				&u.oom_kills);
	}
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_PIDS, dir, &version);
	if (rc < 0)
		return rc;
	rc = cg_read_value(dir, "pids.current", 0, &u.pids_current);
	if (rc == 0)
		rc = cg_read_key(dir, "pids.events", "max", &u.pids_events_max);
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_CPUACCT, dir, &version);
	if (rc < 0)
		return rc;
	if (version == 1) {
		rc = cg_read_value(dir, "cpuacct.usage", 0, &ns);
		u.cpu_usage_us = ns / 1000;
	} else {
		rc = cg_read_key(dir, "cpu.stat", "usage_usec", &u.cpu_usage_us);
	}
	if (rc < 0)
		return rc;

	rc = cg_locate(&pr, root, CG_CPU, dir, &version);
	if (rc < 0)
		return rc;
	rc = cg_read_key(dir, "cpu.stat", "nr_throttled", &u.nr_throttled);
	if (rc < 0)
		return rc;

	*out = u;
	return 0;
}

#define CG_VAL_LEN 24

static const char *cg_fmt(char *buf, int64_t v)
{
	if (v == SBX_CGROUP_UNLIMITED)
		return "unlimited";
	if (v == SBX_CGROUP_UNKNOWN)
		return "unknown";
	snprintf(buf, CG_VAL_LEN, "%" PRId64, v);
	return buf;
}

__attribute__((format(printf, 3, 4))) static int
cg_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len > 0) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* quota/period within 1% of milli/1000: |quota*1000 - milli*period| * 100 <= milli*period. */
static bool cg_cpu_matches(int64_t quota, int64_t period, int64_t milli)
{
	int64_t got, want, diff, scaled;

	if (quota <= 0 || period <= 0 || milli <= 0)
		return false;
	if (__builtin_mul_overflow(quota, (int64_t)1000, &got) ||
	    __builtin_mul_overflow(milli, period, &want))
		return false;
	diff = got > want ? got - want : want - got;
	if (__builtin_mul_overflow(diff, (int64_t)100, &scaled))
		return false;
	return scaled <= want;
}

/* The kernel rounds a memory limit down to whole pages: asked 100000001, it
 * keeps 99999744. Anything else is a difference. */
static int page_rounded(int64_t got, int64_t asked)
{
	return got >= 0 && got <= asked && asked - got < 4096;
}

int sbx__cgroup_check(const sbx_cgroup_limits *got,
		      int64_t memory,
		      int64_t pids,
		      int64_t cpu_milli,
		      char *why,
		      size_t why_len)
{
	char a[CG_VAL_LEN], b[CG_VAL_LEN];

	if (why && why_len > 0)
		why[0] = '\0';
	if (!got)
		return cg_why(why, why_len, "no limits were read back");
	if (!page_rounded(got->memory_max, memory))
		return cg_why(why, why_len, "memory.max is %s, policy asked %" PRId64,
			      cg_fmt(a, got->memory_max), memory);
	if (got->memswap_max != SBX_CGROUP_UNKNOWN && !page_rounded(got->memswap_max, memory))
		return cg_why(why, why_len, "memory+swap is %s, policy asked %" PRId64,
			      cg_fmt(a, got->memswap_max), memory);
	if (got->pids_max != pids)
		return cg_why(why, why_len, "pids.max is %s, policy asked %" PRId64,
			      cg_fmt(a, got->pids_max), pids);
	if (!cg_cpu_matches(got->cpu_quota_us, got->cpu_period_us, cpu_milli))
		return cg_why(why, why_len,
			      "cpu quota/period is %s/%s, policy asked %" PRId64 " millicpu",
			      cg_fmt(a, got->cpu_quota_us), cg_fmt(b, got->cpu_period_us),
			      cpu_milli);
	return 0;
}
