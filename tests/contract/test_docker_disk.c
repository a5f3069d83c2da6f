/*
 * tests/contract/test_docker_disk.c: a sandbox's writable space is disk,
 * on a real dockerd: /workspace is a filesystem of its own on the host's
 * disk, outside the memory cgroup. Filling it gives ENOSPC and the program
 * lives; nothing of it (mount, loop device, file) outlives the sandbox,
 * whether it is closed, its creator is killed, or the engine removed it.
 * Needs root (mount, loop devices); skipped otherwise.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

#define NEED_ROOT()                                                                                \
	do {                                                                                       \
		if (!t_engine_ready() || geteuid() != 0)                                           \
			skip();                                                                    \
	} while (0)

static const char *session_of(const char *id, char *out, size_t n)
{
	char path[256];
	json_t *info;
	long st = 0;

	snprintf(path, sizeof(path), "/containers/%s/json", id);
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	snprintf(out, n, "%s",
		 json_string_value(
			 json_object_get(json_object_get(json_object_get(info, "Config"), "Labels"),
					 "io.sandboxio.session")));
	json_decref(info);
	assert_true(strncmp(out, "sbx-", 4) == 0);
	return out;
}

/* Whether the host's mount table has anything mounted at a path naming session. */
static int mounted(const char *session)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, session) != NULL;
	fclose(f);
	return found;
}

/* Whether a loop device is backed by a file naming session. */
static int looped(const char *session)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[512], back[1024] = "";
		FILE *f;

		if (strncmp(e->d_name, "loop", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(back, sizeof(back), f) && strstr(back, session))
			found = 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

static int file_left(const char *session)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "/var/lib/sandboxio/disks/%s.img", session);
	if (stat(path, &st) == 0)
		return 1;
	snprintf(path, sizeof(path), "/run/sandboxio/disks/%s", session);
	return stat(path, &st) == 0;
}

static void expect_gone(const char *session)
{
	assert_false(mounted(session));
	assert_false(looped(session));
	assert_false(file_left(session));
}

/* The mode of a path, or -1. */
static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static void expect_present(const char *session)
{
	char mnt[128];

	assert_true(mounted(session));
	assert_true(looped(session));
	assert_true(file_left(session));
	/* No other host user walks into a sandbox's files: the folder of the
	 * mounts is root's alone, and the file system's root the sandbox's. */
	snprintf(mnt, sizeof(mnt), "/run/sandboxio/disks/%s", session);
	assert_int_equal(mode_of("/run/sandboxio/disks"), 0700);
	assert_int_equal(mode_of(mnt), 0700);
}

/*
 * Defaults: memory 512 MiB, disk 1 GiB. The program writes until the
 * filesystem refuses, far past the memory cap: ENOSPC, not the OOM killer.
 */
static void test_engine_disk__full_disk_is_enospc_not_oom(void **state)
{
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	sbx_result *r;
	char session[64];
	unsigned long mib = 0;
	char err[32] = "";

	(void)state;
	NEED_ROOT();
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	session_of(sbx_sandbox_id(s), session, sizeof(session));
	expect_present(session);
	r = t_run(s,
		  "python3 -c \"import os,errno\n"
		  "fd=os.open('/workspace/big',os.O_WRONLY|os.O_CREAT,0o600); b=b'x'*(1<<20)\n"
		  "n=0; e='none'\n"
		  "try:\n"
		  "  while n < (2<<30): n+=os.write(fd,b)\n"
		  "except OSError as x: e=errno.errorcode[x.errno]\n"
		  "print(n>>20, e)\"",
		  NULL);
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		fail_msg("status %s code %d stderr %s", sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	assert_int_equal(sscanf(r->stdout_data, "%lu %31s", &mib, err), 2);
	assert_string_equal(err, "ENOSPC");
	/* Past the 512 MiB memory cap, within the 1 GiB disk cap. */
	assert_true(mib > 700 && mib < 1024);
	assert_true(r->limits_hit & SBX_HIT_DISK);
	assert_false(r->limits_hit & SBX_HIT_MEMORY);
	sbx_result_free(r);
	/* The sandbox is alive and its space frees again. */
	r = t_run(s, "rm /workspace/big && echo ok > /workspace/small && cat /workspace/small",
		  NULL);
	assert_string_equal(r->stdout_data, "ok\n");
	assert_false(r->limits_hit & SBX_HIT_DISK);
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_close(s), 0);
	expect_gone(session);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* The creator is killed with SIGKILL: the reaper removes the sandbox and its disk. */
static void test_engine_disk__reaper_removes_disk_of_killed_creator(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	char id[128] = "", session[64];
	sbx_backend *b;
	int fds[2], present;
	pid_t pid;

	(void)state;
	NEED_ROOT();
	(void)t_tenant(); /* fixed before the fork: the child shares the tenant */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
		sbx_backend *cb = NULL;
		sbx_policy *p = NULL;
		sbx_sandbox *s = NULL;

		bo.no_reap_at_open = 1;
		if (sbx_backend_open(&cb, "docker", &bo) || sbx_policy_new(&p) ||
		    sbx_policy_set_tenant(p, t_tenant()) || sbx_sandbox_create(&s, cb, p))
			_exit(1);
		if (write(fds[1], sbx_sandbox_id(s), strlen(sbx_sandbox_id(s))) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (read(fds[0], id, sizeof(id) - 1) <= 0)
		id[0] = '\0';
	close(fds[0]);
	/* The child dies before any assertion can end this test. */
	present = id[0] && session_of(id, session, sizeof(session)) && mounted(session) &&
		  looped(session) && file_left(session);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_true(present);
	/* Opening a backend reaps this host's orphans; reap again to be sure. */
	b = t_backend();
	o.tenant = t_tenant();
	assert_true(sbx_backend_reap(b, &o, NULL, NULL) >= 0);
	{
		char path[256];
		long st = 0;

		snprintf(path, sizeof(path), "/containers/%s/json", id);
		json_decref(t_engine_get(path, &st));
		assert_int_equal(st, 404);
	}
	expect_gone(session);
	sbx_backend_free(b);
}

/* A sandbox the engine removed on its own (AutoRemove at the deadline):
 * the next reap finds its disk by the session name and removes it. */
static void test_engine_disk__reaper_sweeps_disk_of_removed_sandbox(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	char session[64], path[256];
	long st = 0;

	(void)state;
	NEED_ROOT();
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	session_of(sbx_sandbox_id(s), session, sizeof(session));
	snprintf(path, sizeof(path), "/containers/%s?force=1", sbx_sandbox_id(s));
	json_decref(t_engine_request("DELETE", path, NULL, &st));
	assert_int_equal(st, 204);
	expect_present(session);
	o.tenant = t_tenant();
	(void)sbx_backend_reap(b, &o, NULL, NULL);
	expect_gone(session);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_disk__full_disk_is_enospc_not_oom),
		cmocka_unit_test(test_engine_disk__reaper_removes_disk_of_killed_creator),
		cmocka_unit_test(test_engine_disk__reaper_sweeps_disk_of_removed_sandbox),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] disk", tests, NULL, NULL);
}
