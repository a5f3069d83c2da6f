/*
 * tests/contract/test_docker_teardown.c: teardown and caps that bite, on a
 * real dockerd: the reaper removes what an owner left behind and nothing
 * else, concurrent closes leave nothing, and every run says which caps it
 * ran into.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroups/cgroups-int.h"
#include "engine/docker-int.h"
#include "engine/http-int.h"
#include "support/engine.h"
#include "support/fake_engine.h"

static sbx_backend *B;

static int exists(const char *id)
{
	char path[256];
	long st = 0;

	snprintf(path, sizeof(path), "/containers/%s/json", id);
	json_decref(t_engine_get(path, &st));
	return st == 200;
}

static sbx_sandbox *create(sbx_policy *p)
{
	sbx_sandbox *s = NULL;

	if (sbx_sandbox_create(&s, B, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	return s;
}

/* A child process creates a sandbox and dies without closing it. */
static char *orphan_of_dead_owner(int detached)
{
	int fds[2];
	char id[128] = "";
	pid_t pid;

	(void)t_tenant(); /* fixed before the fork: the child shares the tenant */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		sbx_backend *b = NULL;
		sbx_policy *p = NULL;
		sbx_sandbox *s = NULL;
		sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;

		o.no_reap_at_open = 1;
		if (sbx_backend_open(&b, "docker", &o) || sbx_policy_new(&p) ||
		    sbx_policy_set_tenant(p, t_tenant()) || sbx_policy_set_detached(p, detached) ||
		    sbx_sandbox_create(&s, b, p))
			_exit(1);
		if (write(fds[1], sbx_sandbox_id(s), strlen(sbx_sandbox_id(s))) < 0)
			_exit(1);
		_exit(0); /* no close: the owner is gone */
	}
	close(fds[1]);
	assert_true(read(fds[0], id, sizeof(id) - 1) > 0);
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return strdup(id);
}

struct seen {
	int removed, skipped;
	char last_detail[256];
	const char *want_id;
	sbx_reap_reason reason;
};

static int on_reap(const sbx_reap_info *info, void *payload)
{
	struct seen *s = payload;

	if (s->want_id && strcmp(info->id, s->want_id) != 0)
		return 0;
	s->removed += info->removed;
	s->skipped += info->reason == SBX_REAP_SKIPPED;
	s->reason = info->reason;
	snprintf(s->last_detail, sizeof(s->last_detail), "%s", info->detail);
	return 0;
}

static void test_engine_teardown__reap_removes_dead_owners_sandbox(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	char *id = orphan_of_dead_owner(0);
	struct seen seen = {.want_id = id};

	(void)state;
	assert_true(exists(id));
	o.tenant = t_tenant();
	o.dry_run = 1;
	assert_true(sbx_backend_reap(B, &o, on_reap, &seen) >= 1);
	assert_int_equal(seen.reason, SBX_REAP_OWNER_GONE);
	assert_int_equal(seen.removed, 0);
	assert_true(exists(id)); /* a dry run removes nothing */
	o.dry_run = 0;
	assert_true(sbx_backend_reap(B, &o, on_reap, &seen) >= 1);
	assert_int_equal(seen.removed, 1);
	assert_false(exists(id));
	free(id);
}

static void test_engine_teardown__reap_at_open(void **state)
{
	char *id = orphan_of_dead_owner(0);
	sbx_backend *b = NULL;

	(void)state;
	assert_true(exists(id));
	assert_int_equal(sbx_backend_open(&b, "docker", NULL), 0);
	assert_false(exists(id));
	sbx_backend_free(b);
	free(id);
}

static void test_engine_teardown__reap_spares_live_and_detached(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	sbx_policy *p = t_policy();
	sbx_sandbox *mine = create(p);
	char *detached = orphan_of_dead_owner(1);
	struct seen seen = {0};

	(void)state;
	o.tenant = t_tenant();
	assert_int_equal(sbx_backend_reap(B, &o, on_reap, &seen), 0);
	assert_true(exists(sbx_sandbox_id(mine)));
	assert_true(exists(detached));
	sbx_sandbox_close(mine);
	/* Detached ones go with rm (close) or at their deadline. */
	assert_int_equal(sbx_sandbox_open(&mine, B, detached), 0);
	assert_int_equal(sbx_sandbox_close(mine), 0);
	assert_false(exists(detached));
	free(detached);
	sbx_policy_free(p);
}

/* A container with our managed-by label but garbage in its other labels is
 * skipped with a reason; one without the label is never touched. */
static void test_engine_teardown__reap_never_touches_foreign_or_garbage(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	struct seen seen = {0};
	char body[1024], path[256];
	char *foreign_id, *garbage_id;
	json_t *r;
	long st;

	(void)state;
	snprintf(body, sizeof(body),
		 "{\"Image\":\"sandboxio/python:3.11\",\"Cmd\":[\"true\"],"
		 "\"Labels\":{\"io.sandboxio.tenant\":\"%s\",\"io.sandboxio.deadline\":\"1\"}}",
		 t_tenant());
	r = t_engine_request("POST", "/containers/create", body, &st);
	assert_int_equal(st, 201);
	foreign_id = strdup(json_string_value(json_object_get(r, "Id")));
	json_decref(r);
	snprintf(body, sizeof(body),
		 "{\"Image\":\"sandboxio/python:3.11\",\"Cmd\":[\"true\"],"
		 "\"Labels\":{\"io.sandboxio.managed-by\":\"sandboxio\","
		 "\"io.sandboxio.tenant\":\"%s\",\"io.sandboxio.deadline\":\"soon\\u0000;rm\"}}",
		 t_tenant());
	r = t_engine_request("POST", "/containers/create", body, &st);
	assert_int_equal(st, 201);
	garbage_id = strdup(json_string_value(json_object_get(r, "Id")));
	json_decref(r);

	o.tenant = t_tenant();
	seen.want_id = garbage_id;
	assert_int_equal(sbx_backend_reap(B, &o, on_reap, &seen), 0);
	assert_int_equal(seen.skipped, 1);
	assert_non_null(strstr(seen.last_detail, "deadline"));
	assert_true(exists(foreign_id));
	assert_true(exists(garbage_id));
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/containers/%s?force=1", i ? foreign_id : garbage_id);
		json_decref(t_engine_request("DELETE", path, NULL, &st));
	}
	free(foreign_id);
	free(garbage_id);
}

static void test_engine_teardown__reap_daemon_down(void **state)
{
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	bo.socket_path = "/nonexistent/docker.sock";
	assert_int_equal(sbx_backend_open(&b, "docker", &bo), SBX_EUNAVAILABLE);
}

/*
 * Another engine on the same host (a Podman service, a second dockerd)
 * knows none of this engine's sandboxes, so to its sweep every one of them
 * is gone. It must leave their host-side pieces alone: here a sweep whose
 * Engine answers 404 for every container runs while a paused sandbox with a
 * disk of its own lives, and the disk stays mounted and in use, and the
 * paused record its own reaper judges it by stays. The mark that
 * says whose the sandbox is goes with the sandbox's close.
 */
static void test_engine_teardown__other_engines_sweep_leaves_our_pieces(void **state)
{
	static const struct fake_route routes[] = {
		{"GET", "/containers/", 404, "{\"message\":\"No such container\"}", NULL, 0},
	};
	struct fake_engine *fe;
	struct sbx__docker other;
	char path[256], session[32], mark[128], mnt[256], paused[160];
	sbx_policy *p = t_policy();
	sbx_sandbox *s;
	sbx_result *r;
	json_t *c;
	long st = 0;

	(void)state;
	if (!sbx__disk_usable() || t_tier() == SBX_TIER_GVISOR) {
		sbx_policy_free(p);
		skip(); /* no disk: root with loop devices, the container tier */
	}
	s = create(p);
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	c = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	snprintf(session, sizeof(session), "%s", json_string_value(json_object_get(c, "Name")) + 1);
	json_decref(c);
	snprintf(mark, sizeof(mark), SBX_RUN_DIR "/engines/%s", session);
	assert_int_equal(access(mark, F_OK), 0);
	sbx__disk_mount_path(session, mnt, sizeof(mnt));

	/* Paused, too: its record is what its own reaper judges it by. */
	assert_int_equal(sbx_sandbox_pause(s, 600000), 0);
	snprintf(paused, sizeof(paused), SBX_PAUSED_DIR "/%s", sbx_sandbox_id(s));
	assert_int_equal(access(paused, F_OK), 0);

	fe = fake_engine_start(routes, 1);
	assert_non_null(fe);
	memset(&other, 0, sizeof(other));
	assert_int_equal(sbx__http_init(&other.http, fake_engine_socket(fe), 5000), 0);
	sbx__docker_reap_sweep(&other);
	sbx__http_done(&other.http);
	fake_engine_stop(fe);

	assert_int_equal(sbx__disk_check_mounted(session), 0);
	assert_int_equal(access(mark, F_OK), 0);
	assert_int_equal(access(paused, F_OK), 0);
	assert_int_equal(sbx_sandbox_resume(s), 0);
	r = t_run(s, "echo kept > /workspace/f && cat /workspace/f", NULL);
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(r->stdout_data, "kept\n");
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_not_equal(access(mark, F_OK), 0);
	assert_int_not_equal(access(mnt, F_OK), 0);
	sbx_policy_free(p);
}

struct closer {
	sbx_sandbox *s;
	int rc;
};

static void *close_main(void *arg)
{
	struct closer *c = arg;

	c->rc = sbx_sandbox_close(c->s);
	return NULL;
}

static void test_engine_teardown__twenty_concurrent_closes(void **state)
{
	enum { N = 20 };
	struct closer c[N];
	pthread_t th[N];
	sbx_policy *p = t_policy();
	char lab[128];

	(void)state;
	snprintf(lab, sizeof(lab), "io.sandboxio.tenant=%s", t_tenant());
	for (int i = 0; i < N; i++)
		c[i].s = create(p);
	assert_int_equal(t_engine_count_label(lab), N);
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, close_main, &c[i]);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(c[i].rc, 0);
	}
	assert_int_equal(t_engine_count_label(lab), 0);
	sbx_policy_free(p);
}

#define THREAD_BOMB                                                                                \
	"python3 -c \"import threading,time\n"                                                     \
	"try:\n"                                                                                   \
	"  while True: threading.Thread(target=time.sleep,args=(5,),daemon=True).start()\n"        \
	"except RuntimeError: print('capped')\""

/*
 * The gvisor tier: the sandbox's threads are the Sentry's tasks, not host
 * processes, so the host's pids cgroup does not count them (it counts the
 * Sentry's own threads); the cap reaches them as RLIMIT_NPROC
 * (engine/tiers.c). A thread bomb must be refused below the cap, as on the
 * container tier; before the cap reached the Sentry a run held 1,000
 * threads under a cap of 96. The memory cap ends the whole Sentry, so it is
 * tried in a sandbox of its own. docs/threat-model.md says what this means
 * for a user.
 */
static void gvisor_pids_and_oom(sbx_sandbox *s, sbx_policy *p, long cap)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_secrets *sec = NULL;
	char bomb[512];
	sbx_result *r;

	snprintf(bomb, sizeof(bomb),
		 "python3 -c \"import threading,time\n"
		 "n=0\n"
		 "try:\n"
		 "  while True:\n"
		 "    threading.Thread(target=time.sleep,args=(5,),daemon=True).start(); n+=1\n"
		 "except RuntimeError: print('capped', n < %ld)\"",
		 cap);
	r = t_run(s, bomb, NULL);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_string_equal(r->stdout_data, "capped True\n");
	sbx_result_free(r);
	sbx_sandbox_close(s);
	s = create(p);
	r = t_run(s, "python3 -c 'b = b\"x\" * (300 << 20)'", NULL);
	assert_int_equal(r->status, SBX_RUN_OOM);
	assert_true(r->limits_hit & SBX_HIT_MEMORY);
	sbx_result_free(r);
	sbx_sandbox_close(s);
	/* A run with a secret takes docker exec on this tier: told the same. */
	s = create(p);
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "TOKEN", "oom-witness-7Q", 14), 0);
	o.secrets = sec;
	r = t_run(s, "python3 -c 'b = b\"x\" * (300 << 20)'", &o);
	assert_int_equal(r->path, SBX_RUN_PATH_EXEC);
	assert_int_equal(r->status, SBX_RUN_OOM);
	assert_true(r->limits_hit & SBX_HIT_MEMORY);
	sbx_result_free(r);
	sbx_secrets_free(sec);
	sbx_sandbox_close(s);
}

static void test_engine_teardown__usage_and_limits_hit(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s;
	sbx_result *r;

	(void)state;
	/* On the gvisor tier the Sentry counts against both caps (pids at
	 * least 64 there: engine/tiers.c). */
	sbx_policy_set_limit(p, SBX_LIMIT_PIDS, t_tier() == SBX_TIER_GVISOR ? 96 : 32);
	sbx_policy_set_limit(p, SBX_LIMIT_MEMORY,
			     t_tier() == SBX_TIER_GVISOR ? 160 << 20 : 96 << 20);
	s = create(p);
	r = t_run(s, "python3 -c 'b = b\"x\" * (40 << 20); print(len(b))'", NULL);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_true(r->max_rss_kb >= 40 * 1024);
	assert_true(r->cpu_user_us + r->cpu_system_us > 0);
	assert_int_equal(r->limits_hit, 0);
	sbx_result_free(r);
	if (t_tier() == SBX_TIER_GVISOR) {
		gvisor_pids_and_oom(s, p, 96);
		sbx_policy_free(p);
		return;
	}
	r = t_run(s, THREAD_BOMB, NULL);
	assert_string_equal(r->stdout_data, "capped\n");
	assert_true(r->limits_hit & SBX_HIT_PIDS);
	sbx_result_free(r);
	r = t_run(s, "python3 -c 'b = b\"x\" * (300 << 20)'", NULL);
	assert_int_equal(r->status, SBX_RUN_OOM);
	assert_true(r->limits_hit & SBX_HIT_MEMORY);
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

/* The CPU the host's cgroup of sandbox s has used, in microseconds. */
static int64_t host_cpu_us(sbx_sandbox *s)
{
	char path[128];
	json_t *info;
	sbx_cgroup_usage u;
	long st = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	pid = (pid_t)json_integer_value(json_object_get(json_object_get(info, "State"), "Pid"));
	json_decref(info);
	assert_true(pid > 0);
	assert_int_equal(sbx__cgroup_read_usage(&u, "/sys/fs/cgroup", "/proc", pid), 0);
	assert_true(u.cpu_usage_us >= 0);
	return u.cpu_usage_us;
}

/*
 * A CPU spinner gets its CPU share, not the machine: with cpus=0.5, two
 * spinning threads for 2 s of wall time use about 1 s of CPU. Measured
 * where the cap is applied, the host's cgroup of the sandbox, on both
 * tiers; on the container tier the run's own figures agree. (On the gvisor
 * tier a run's figures are the Sentry's, which count the time the host's
 * cap held a task back: docs/threat-model.md.)
 */
static void test_engine_teardown__cpu_throttled_to_share(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s;
	sbx_result *r;
	double cpu_s, wall_s, share, host_s;
	int64_t before;

	(void)state;
	sbx_policy_set_limit(p, SBX_LIMIT_CPU_MILLI, 500);
	s = create(p);
	before = host_cpu_us(s);
	r = t_run(s,
		  "python3 -c \"import multiprocessing as m, time\n"
		  "def spin():\n"
		  "  t=time.time()\n"
		  "  while time.time()-t < 2: pass\n"
		  "ps=[m.Process(target=spin) for _ in range(2)]\n"
		  "[p.start() for p in ps]; [p.join() for p in ps]\"",
		  NULL);
	assert_int_equal(r->exit_code, 0);
	host_s = (double)(host_cpu_us(s) - before) / 1e6;
	cpu_s = (double)(r->cpu_user_us + r->cpu_system_us) / 1e6;
	wall_s = (double)r->duration_ms / 1e3;
	share = cpu_s / wall_s;
	fprintf(stderr,
		"  cpus=0.5: run %.2f s CPU, host cgroup %.2f s CPU, over %.2f s wall = %.2f "
		"cores at the host\n",
		cpu_s, host_s, wall_s, host_s / wall_s);
	/* The host's figure spans a little more than the run (its start and
	 * end on the channel), so it is compared with the run's wall time. */
	assert_true(host_s / wall_s < 0.5 * 1.25);
	if (t_tier() == SBX_TIER_CONTAINER)
		assert_true(share < 0.5 * 1.25);
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

static int setup(void **state)
{
	(void)state;
	if (!t_engine_ready())
		return -1;
	B = t_backend();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sbx_backend_free(B);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_teardown__reap_removes_dead_owners_sandbox),
		cmocka_unit_test(test_engine_teardown__reap_at_open),
		cmocka_unit_test(test_engine_teardown__reap_spares_live_and_detached),
		cmocka_unit_test(test_engine_teardown__reap_never_touches_foreign_or_garbage),
		cmocka_unit_test(test_engine_teardown__reap_daemon_down),
		cmocka_unit_test(test_engine_teardown__other_engines_sweep_leaves_our_pieces),
		cmocka_unit_test(test_engine_teardown__twenty_concurrent_closes),
		cmocka_unit_test(test_engine_teardown__usage_and_limits_hit),
		cmocka_unit_test(test_engine_teardown__cpu_throttled_to_share),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] teardown", tests, setup,
					   teardown);
}
