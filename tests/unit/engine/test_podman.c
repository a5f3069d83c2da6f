/*
 * tests/unit/engine/test_podman.c: where the docker backend's Podman flavour
 * differs (engine/podman.c). The seccomp profile's file: the sandbox's own,
 * 0600 and the engine's user's, never written through what is already
 * there, never in a folder another user may write in, removed, and swept
 * only when its sandbox is gone. The refusals:
 * a scripted Engine answers /version and /info as Podman 4.3.1 does
 * (rootful or rootless, cgroup v1 or v2, crun or runc), and a create is
 * refused naming what is missing before any container is asked for. The
 * real services run in tests/contract/run-podman.sh; only a script can be
 * every kind of host at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "engine/docker-int.h"
#include "support/fake_engine.h"

#define PROFILE "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}"

static void session_name(char *out, size_t len, int n)
{
	snprintf(out, len, "sbx-%06x%06x", (unsigned)getpid() & 0xffffff, (unsigned)n);
}

static void test_podman__seccomp_file_is_own_0600_and_goes(void **state)
{
	struct sbx__docker d = {.engine_uid = 4242, .engine_gid = 4343};
	char session[32], path[320], again[320], buf[256];
	struct stat st;
	FILE *f;
	size_t n;

	(void)state;
	if (geteuid() != 0)
		skip();
	session_name(session, sizeof(session), 1);
	assert_int_equal(sbx__podman_seccomp_write(&d, session, PROFILE, path, sizeof(path)), 0);
	assert_non_null(strstr(path, SBX_RUN_DIR "/seccomp/"));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 4242);
	assert_int_equal(st.st_gid, 4343);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, PROFILE);
	/* What is there already is never written through (a planted link). */
	assert_int_not_equal(sbx__podman_seccomp_write(&d, session, PROFILE, again, sizeof(again)),
			     0);
	sbx__podman_seccomp_remove(session);
	assert_int_not_equal(lstat(path, &st), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_not_equal(sbx__podman_seccomp_write(&d, session, PROFILE, again, sizeof(again)),
			     0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	unlink(path);
	/* Only names this backend makes become paths. */
	assert_int_equal(
		sbx__podman_seccomp_write(&d, "../../etc/x", PROFILE, again, sizeof(again)),
		SBX_EINVALID);
}

/* Not root, the profile goes under $XDG_RUNTIME_DIR/sandboxio, which may
 * be a place others write in (/tmp): a folder there that is not the
 * caller's alone (another user's, or open to others) is refused, and
 * nothing is written. Run as nobody in a child. */
static void test_podman__seccomp_dir_of_another_refused(void **state)
{
	char xdg[] = "/tmp/sbx-podman-xdg.XXXXXX", sub[96], path[320];
	struct sbx__docker d = {0};
	int status = -1;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* it needs to become nobody */
	assert_non_null(mkdtemp(xdg));
	assert_int_equal(chmod(xdg, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/sandboxio", xdg);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char session[32];
		int bad = 0;

		if (setgid(65534) != 0 || setuid(65534) != 0 ||
		    setenv("XDG_RUNTIME_DIR", xdg, 1) != 0)
			_exit(2);
		session_name(session, sizeof(session), 3);
		/* Ours but open to others. */
		if (mkdir(sub, 0700) != 0 || chmod(sub, 0777) != 0)
			_exit(3);
		bad |= sbx__podman_seccomp_write(&d, session, PROFILE, path, sizeof(path)) !=
		       SBX_EDENIED;
		bad |= !strstr(sbx_error_last()->message, "only it may write in");
		/* Ours and closed: written. */
		bad |= chmod(sub, 0700) != 0;
		bad |= sbx__podman_seccomp_write(&d, session, PROFILE, path, sizeof(path)) != 0;
		sbx__podman_seccomp_remove(session);
		_exit(bad ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Another user's (root's, here), 0700: refused as well. */
	snprintf(path, sizeof(path), "%s/seccomp", sub);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char session[32];

		if (setgid(65534) != 0 || setuid(65534) != 0 ||
		    setenv("XDG_RUNTIME_DIR", xdg, 1) != 0)
			_exit(2);
		session_name(session, sizeof(session), 4);
		_exit(sbx__podman_seccomp_write(&d, session, PROFILE, path, sizeof(path)) < 0 ? 0
											      : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	rmdir(sub);
	rmdir(xdg);
}

static const char *alive_session;

static int alive_one(const char *session, void *payload)
{
	(void)payload;
	return strcmp(session, alive_session) == 0;
}

static void test_podman__seccomp_sweep_takes_only_gone(void **state)
{
	struct sbx__docker d = {.engine_uid = 0, .engine_gid = 0};
	char live[32], gone[32], p1[320], p2[320], other[320];
	struct stat st;
	FILE *f;

	(void)state;
	if (geteuid() != 0)
		skip();
	session_name(live, sizeof(live), 2);
	session_name(gone, sizeof(gone), 3);
	assert_int_equal(sbx__podman_seccomp_write(&d, live, PROFILE, p1, sizeof(p1)), 0);
	assert_int_equal(sbx__podman_seccomp_write(&d, gone, PROFILE, p2, sizeof(p2)), 0);
	snprintf(other, sizeof(other), SBX_RUN_DIR "/seccomp/not-ours-%d.json", (int)getpid());
	f = fopen(other, "w");
	assert_non_null(f);
	fclose(f);
	alive_session = live;
	assert_true(sbx__podman_sweep(alive_one, NULL) >= 1);
	assert_int_equal(stat(p1, &st), 0);
	assert_int_not_equal(stat(p2, &st), 0);
	assert_int_equal(stat(other, &st), 0);
	sbx__podman_seccomp_remove(live);
	assert_int_not_equal(stat(p1, &st), 0);
	unlink(other);
}

#define VERSION_PODMAN                                                                             \
	"{\"Components\":[{\"Name\":\"Podman Engine\",\"Version\":\"4.3.1\"}],"                    \
	"\"Version\":\"4.3.1\"}"

static const struct fake_route rootless_v1[] = {
	{"GET", "/version", 200, VERSION_PODMAN},
	{"GET", "/info", 200,
	 "{\"BuildahVersion\":\"1.28.2\",\"Rootless\":true,\"CgroupVersion\":\"1\","
	 "\"DefaultRuntime\":\"crun\"}"},
};
static const struct fake_route rootless_v2[] = {
	{"GET", "/version", 200, VERSION_PODMAN},
	{"GET", "/info", 200,
	 "{\"BuildahVersion\":\"1.28.2\",\"Rootless\":true,\"CgroupVersion\":\"2\","
	 "\"DefaultRuntime\":\"crun\"}"},
};
static const struct fake_route rootful_crun_v1[] = {
	{"GET", "/version", 200, VERSION_PODMAN},
	{"GET", "/info", 200,
	 "{\"BuildahVersion\":\"1.28.2\",\"Rootless\":false,\"CgroupVersion\":\"1\","
	 "\"DefaultRuntime\":\"crun\","
	 "\"Runtimes\":{\"runsc\":{\"path\":\"/usr/bin/runsc\"}}}"},
};
static const struct fake_route rootful_runc_v1[] = {
	{"GET", "/version", 200, VERSION_PODMAN},
	{"GET", "/info", 200,
	 "{\"BuildahVersion\":\"1.28.2\",\"Rootless\":false,\"CgroupVersion\":\"1\","
	 "\"DefaultRuntime\":\"runc\","
	 "\"Runtimes\":{\"runsc\":{\"path\":\"/usr/bin/runsc\"}}}"},
};

/* A create (with an allowlist, at the gvisor tier if asked) is refused
 * naming need, and the Engine is asked for no image and no container. */
static void expect_refused(const struct fake_route *routes, int allow, int gvisor, const char *need)
{
	struct fake_engine *fe = fake_engine_start(routes, 2);
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	char init[4096];

	assert_non_null(fe);
	assert_non_null(getcwd(init, sizeof(init) - 32));
	strcat(init, "/build/sbx-init");
	bo.socket_path = fake_engine_socket(fe);
	bo.init_path = init;
	bo.no_reap_at_open = 1;
	if (sbx_backend_open(&b, "docker", &bo) != 0)
		fail_msg("open: %s", sbx_error_last()->message);
	assert_int_equal(sbx_policy_new(&p), 0);
	if (allow)
		assert_int_equal(sbx_policy_allow_cidr(p, "198.18.0.1", 0), 0);
	if (gvisor)
		assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_GVISOR), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_null(s);
	if (!strstr(sbx_error_last()->message, need))
		fail_msg("want '%s' named: %s", need, sbx_error_last()->message);
	assert_int_equal(fake_engine_count(fe, "POST", "/containers"), 0);
	assert_int_equal(fake_engine_count(fe, "GET", "/images"), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
	fake_engine_stop(fe);
}

static void test_podman__rootless_refuses_what_it_cannot_give(void **state)
{
	(void)state;
	expect_refused(rootless_v1, 1, 0, "network namespace and nftables");
	expect_refused(rootless_v2, 1, 0, "network namespace and nftables");
	expect_refused(rootless_v1, 0, 0, "cannot set memory, CPU or pids caps");
	expect_refused(rootless_v2, 0, 0, "outside the ids rootless Podman maps");
}

static void test_podman__rootful_refuses_crun_on_v1_and_gvisor(void **state)
{
	(void)state;
	expect_refused(rootful_crun_v1, 0, 0, "--runtime runc");
	expect_refused(rootful_runc_v1, 0, 1, "not available on Podman");
}

static const struct fake_route dockerd[] = {
	{"GET", "/version", 200,
	 "{\"Components\":[{\"Name\":\"Engine\"}],\"Version\":\"20.10.24\"}"},
	{"GET", "/info", 200, "{\"CgroupVersion\":\"1\",\"DefaultRuntime\":\"crun\"}"},
};

static void test_podman__describe_names_the_engine(void **state)
{
	struct fake_engine *fe = fake_engine_start(rootless_v1, 2);
	char out[160];

	(void)state;
	assert_non_null(fe);
	assert_int_equal(sbx__engine_describe(fake_engine_socket(fe), out, sizeof(out)), 0);
	assert_string_equal(out, "Podman 4.3.1, rootless, cgroup v1, runtime crun");
	fake_engine_stop(fe);
	/* dockerd's /info has no fields of Podman's: no Podman refusal there. */
	fe = fake_engine_start(dockerd, 2);
	assert_non_null(fe);
	assert_int_equal(sbx__engine_describe(fake_engine_socket(fe), out, sizeof(out)), 0);
	assert_string_equal(out, "Docker Engine 20.10.24");
	fake_engine_stop(fe);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podman__seccomp_file_is_own_0600_and_goes),
		cmocka_unit_test(test_podman__seccomp_dir_of_another_refused),
		cmocka_unit_test(test_podman__seccomp_sweep_takes_only_gone),
		cmocka_unit_test(test_podman__rootless_refuses_what_it_cannot_give),
		cmocka_unit_test(test_podman__rootful_refuses_crun_on_v1_and_gvisor),
		cmocka_unit_test(test_podman__describe_names_the_engine),
	};

	return cmocka_run_group_tests_name("test_podman", tests, NULL, NULL);
}
