/*
 * tests/contract/test_docker_root.c: runs as the sandbox's root
 * (sbx_run_options.as_root) against the real dockerd, on the handle that
 * created the sandbox (whose runs otherwise take the init's channel) and on
 * one from sbx_sandbox_open() (docker exec).
 *
 * Root there is uid 0 of a user namespace that maps only the sandbox's
 * uid, and nothing more: every capability set empty, no_new_privs, the
 * same seccomp filter, the same read-only root. Each privilege root would
 * use is tried and must fail with the error a process without it gets; what
 * it writes is the sandbox user's; and while it holds every inotify
 * instance it may, the host's root still gets one (a root run as the host's
 * uid 0 would fail that).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

struct fx {
	char start[8192]; /* the last run.start audit event */
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s; /* created: the channel for plain runs */
	sbx_sandbox *x; /* opened: docker exec */
};

static int on_audit(const char *line, size_t len, void *payload)
{
	struct fx *f = payload;

	if (len < sizeof(f->start) && strstr(line, "\"run.start\"")) {
		memcpy(f->start, line, len);
		f->start[len] = '\0';
	}
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;

	if (!f || !t_engine_ready())
		return -1;
	bo.audit_cb = on_audit;
	bo.audit_payload = f;
	if (sbx_backend_open(&f->b, "docker", &bo) != 0) {
		fprintf(stderr, "setup: %s\n", sbx_error_last()->message);
		return -1;
	}
	f->p = t_policy();
	if (t_make(f->b, f->p, &f->s, &f->x) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	t_unmake(f->b, f->p, f->s, f->x);
	free(f);
	return 0;
}

static sbx_result *run_as(sbx_sandbox *s, int root, const char *line)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;

	o.as_root = root;
	return t_run(s, line, &o);
}

/* The status file for the sets and the filter; prctl for no_new_privs and
 * the ambient set, which gVisor's status file does not list. */
static const char status_line[] =
	"id -u; id -g; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|Seccomp):' /proc/self/status | "
	"tr -s '\\t' ' '; python3 -c \"import ctypes\n"
	"c=ctypes.CDLL(None)\n"
	"print('nnp', c.prctl(39,0,0,0,0))\n"
	"print('ambient', sum(c.prctl(47,1,k,0,0)==1 for k in range(41)))\"";

static const char no_privs[] = "CapInh: 0000000000000000\nCapPrm: 0000000000000000\n"
			       "CapEff: 0000000000000000\nCapBnd: 0000000000000000\n"
			       "Seccomp: 2\nnnp 1\nambient 0\n";

static void expect_root(sbx_sandbox *s)
{
	sbx_result *r = run_as(s, 1, status_line);
	char want[512];

	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 0);
	snprintf(want, sizeof(want), "0\n0\n%s", no_privs);
	assert_string_equal(r->stdout_data, want);
	/* The init's channel runs as the sandbox's uid: root goes by exec. */
	assert_int_equal(r->path, SBX_RUN_PATH_EXEC);
	sbx_result_free(r);
}

static void test_engine_root__uid0_without_privileges(void **state)
{
	struct fx *f = *state;

	expect_root(f->s);
	expect_root(f->x);
}

/* The audit's run.start says which runs were root, and where they ran. */
static void test_engine_root__audited(void **state)
{
	struct fx *f = *state;
	json_t *ev;

	sbx_result_free(run_as(f->s, 1, "true"));
	ev = json_loads(f->start, 0, NULL);
	assert_non_null(ev);
	assert_true(json_is_true(json_object_get(ev, "as_root")));
	assert_string_equal(json_string_value(json_object_get(ev, "workdir")), "/");
	json_decref(ev);
	sbx_result_free(run_as(f->s, 0, "true"));
	ev = json_loads(f->start, 0, NULL);
	assert_non_null(ev);
	assert_true(json_is_false(json_object_get(ev, "as_root")));
	assert_string_equal(json_string_value(json_object_get(ev, "workdir")), "/workspace");
	json_decref(ev);
}

/* Without as_root, and after a root run, the same handle runs as the
 * sandbox's own uid, on the channel: the option does not stick. */
static void test_engine_root__plain_runs_stay_the_user(void **state)
{
	struct fx *f = *state;
	sbx_result *r;
	unsigned long uid = 0, gid = 0;

	expect_root(f->s);
	r = run_as(f->s, 0, "id -u; id -g");
	assert_int_equal(sscanf(r->stdout_data, "%lu\n%lu\n", &uid, &gid), 2);
	assert_true(uid >= 1500000000ul && uid < 1500000000ul + 65536);
	assert_int_equal(uid, gid);
	assert_int_equal(r->path, SBX_RUN_PATH_CHANNEL);
	sbx_result_free(r);
}

/*
 * What root would do with its capabilities, each refused: writing the image
 * (/etc/hostname: the root is read-only), mounting (CAP_SYS_ADMIN),
 * becoming another uid (there is none in its namespace), reading the
 * image's /root, 0700 of the host's root, which its namespace does not map
 * (CAP_DAC_OVERRIDE would let it), giving its file to another uid
 * (CAP_CHOWN), making a device node (CAP_MKNOD), and another user
 * namespace (the one call the engine's profile lets the init make, which
 * the init's filter refuses every run). On the gvisor tier the
 * Sentry lets any uid, the sandbox user's too, make a node in its own
 * tmpfs, which opens only the Sentry's devices (/dev/mem is ENXIO there):
 * docs/threat-model.md.
 */
static void test_engine_root__privileged_acts_fail(void **state)
{
	struct fx *f = *state;
	sbx_result *r;
	char want[256];

	/* The Sentry checks the file's owner before the read-only mount. */
	snprintf(want, sizeof(want),
		 "hostname %s\nmount EPERM\nsetuid EINVAL\nrootdir EACCES\nchown EINVAL\n"
		 "mknod %s\nunshare EPERM\n",
		 t_tier() == SBX_TIER_GVISOR ? "EACCES" : "EROFS",
		 t_tier() == SBX_TIER_GVISOR ? "done" : "EPERM");
	r = run_as(f->x, 1,
		   "python3 - <<'EOF'\n"
		   "import ctypes, errno, os\n"
		   "c = ctypes.CDLL(None, use_errno=True)\n"
		   "def tried(name, fn):\n"
		   "    try:\n"
		   "        fn()\n"
		   "        print(name, 'done')\n"
		   "    except OSError as e:\n"
		   "        print(name, errno.errorcode[e.errno])\n"
		   "def mount():\n"
		   "    os.makedirs('/tmp/m', exist_ok=True)\n"
		   "    if c.mount(b'none', b'/tmp/m', b'tmpfs', 0, None) != 0:\n"
		   "        raise OSError(ctypes.get_errno(), 'mount')\n"
		   "open('/tmp/roots', 'w').close()\n"
		   "tried('hostname', lambda: open('/etc/hostname', 'w').write('x'))\n"
		   "tried('mount', mount)\n"
		   "tried('setuid', lambda: os.setuid(1500000000))\n"
		   "tried('rootdir', lambda: os.listdir('/root'))\n"
		   "tried('chown', lambda: os.chown('/tmp/roots', 1500000000, 1500000000))\n"
		   "tried('mknod', lambda: os.mknod('/tmp/null', 0o20666, os.makedev(1, 3)))\n"
		   "tried('unshare', lambda: c.unshare(0x10000000) == 0 or "
		   "(_ for _ in ()).throw(OSError(ctypes.get_errno(), 'unshare')))\n"
		   "EOF");
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(r->stdout_data, want);
	sbx_result_free(r);
}

/*
 * Root is the sandbox user under another name (init/userns.c): what a root
 * run writes belongs to the sandbox's uid and gid, and the user's files are
 * root's there. A root run as the host's uid 0 would leave files of uid 0.
 */
#define OWNERS                                                                                     \
	"python3 -c 'import os, sys\n"                                                             \
	"for p in sys.argv[1:]: print(os.stat(p).st_uid, os.stat(p).st_gid, sep=\"\\n\")'"

static void test_engine_root__is_the_sandbox_user(void **state)
{
	struct fx *f = *state;
	sbx_result *r;
	char want[64];

	sbx_result_free(run_as(f->s, 1, "rm -f /tmp/byroot && touch /tmp/byroot"));
	sbx_result_free(run_as(f->s, 0, "rm -f /tmp/byuser && touch /tmp/byuser"));
	r = run_as(f->s, 0, "id -u; id -g");
	snprintf(want, sizeof(want), "%s", r->stdout_data);
	sbx_result_free(r);
	/* Python's stat: coreutils' fails on the gvisor tier (threat-model.md). */
	r = run_as(f->s, 0, OWNERS " /tmp/byroot");
	assert_string_equal(r->stdout_data, want);
	sbx_result_free(r);
	r = run_as(f->x, 1, OWNERS " /tmp/byuser /tmp/byroot");
	assert_string_equal(r->stdout_data, "0\n0\n0\n0\n");
	sbx_result_free(r);
}

/* A root run's processes end with it, as a user run's do. */
static void test_engine_root__tree_ends_with_the_run(void **state)
{
	struct fx *f = *state;
	sbx_result *r = run_as(f->s, 1, "sleep 4711 & echo started");

	assert_string_equal(r->stdout_data, "started\n");
	sbx_result_free(r);
	r = run_as(f->s, 0,
		   "for p in /proc/[0-9]*; do tr '\\0' ' ' <$p/cmdline 2>/dev/null; echo; "
		   "done | grep -c '^sleep 4711' || true");
	assert_string_equal(r->stdout_data, "0\n");
	sbx_result_free(r);
}

/* A root run that holds every inotify instance its uid may have, until the
 * test lets it go (/tmp/go); /tmp/full says it holds them (a rename: it may
 * have no descriptor left, on the gvisor tier where its file limit ends it). */
struct hold {
	sbx_sandbox *x;
	sbx_result *r;
	volatile int done;
};

static void *hold_inotify(void *p)
{
	struct hold *h = p;

	h->r = run_as(h->x, 1,
		      "python3 - <<'EOF'\n"
		      "import ctypes, os, time\n"
		      "c = ctypes.CDLL(None, use_errno=True)\n"
		      "open('/tmp/full.new', 'w').close()\n"
		      "n = 0\n"
		      "while c.inotify_init1(0) >= 0:\n"
		      "    n += 1\n"
		      "print('held', n, os.strerror(ctypes.get_errno()))\n"
		      "os.rename('/tmp/full.new', '/tmp/full')\n"
		      "while not os.path.exists('/tmp/go'):\n"
		      "    time.sleep(0.05)\n"
		      "EOF");
	__atomic_store_n(&h->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * The kernel counts inotify instances per user (128 here) and no
 * capability lifts the count. A root run that was the host's uid 0 would
 * take them from every root process of the host: while it holds all it
 * can, this test, the host's root, must still get one. (On the gvisor tier
 * the Sentry keeps its own count either way.)
 */
static void test_engine_root__kernel_counters_are_the_sandboxs(void **state)
{
	struct fx *f = *state;
	struct hold h = {.x = f->x};
	pthread_t th;
	int held = 0, fd;

	if (geteuid() != 0)
		skip(); /* the host's side of the claim is root's counters */
	assert_int_equal(pthread_create(&th, NULL, hold_inotify, &h), 0);
	/* Until the root run holds them, or has ended without (a hang guard:
	 * the run's own deadline ends it). */
	while (!held && !__atomic_load_n(&h.done, __ATOMIC_SEQ_CST)) {
		sbx_result *r = run_as(f->s, 0, "test -e /tmp/full && echo yes || true");

		held = strcmp(r->stdout_data, "yes\n") == 0;
		sbx_result_free(r);
	}
	fd = inotify_init1(IN_CLOEXEC);
	sbx_result_free(run_as(f->s, 0, "touch /tmp/go"));
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(held);
	assert_int_equal(h.r->exit_code, 0);
	assert_non_null(strstr(h.r->stdout_data, "held "));
	assert_non_null(strstr(h.r->stdout_data, "Too many open files"));
	sbx_result_free(h.r);
	assert_true(fd >= 0);
	close(fd);
}

/* A caller built against version 3 has no as_root: whatever follows its
 * struct is never read, so its runs stay the sandbox user's. */
static void test_engine_root__older_options_ignore_it(void **state)
{
	struct fx *f = *state;
	const char *argv[] = {"id", "-u", NULL};
	sbx_run_options o;
	sbx_result *r = NULL;

	o.as_root = 7;
	assert_int_equal(sbx_run_options_init(&o, 3), 0);
	assert_int_equal(o.as_root, 7);
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, &o), 0);
	assert_string_not_equal(r->stdout_data, "0\n");
	sbx_result_free(r);
	assert_int_equal(sbx_run_options_init(&o, 4), 0);
	assert_int_equal(o.as_root, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_root__uid0_without_privileges),
		cmocka_unit_test(test_engine_root__audited),
		cmocka_unit_test(test_engine_root__plain_runs_stay_the_user),
		cmocka_unit_test(test_engine_root__privileged_acts_fail),
		cmocka_unit_test(test_engine_root__is_the_sandbox_user),
		cmocka_unit_test(test_engine_root__tree_ends_with_the_run),
		cmocka_unit_test(test_engine_root__kernel_counters_are_the_sandboxs),
		cmocka_unit_test(test_engine_root__older_options_ignore_it),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] runs as root", tests, setup,
					   teardown);
}
