/*
 * tests/contract/test_docker_pause.c: pause and resume on a real dockerd, at
 * the suite's tier (SBX_TEST_TIER). A paused sandbox keeps its processes and
 * files, refuses runs at once, does not count its deadline, is reaped past
 * its pause bound and not before (nor past its own deadline), and is removed
 * by a close.
 *
 * No wall-clock bound: waits are for an event (the clock passing a point,
 * the reaper's removal), each under a generous hang guard.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/docker-int.h"
#include "support/engine.h"

/* How long a wait for an event may take before the test says it hangs. */
#define HANG_GUARD_S 120

static sbx_backend *B;

static int64_t inspect_paused(const char *id)
{
	char path[256];
	long st = 0;
	json_t *j;
	int64_t r;

	snprintf(path, sizeof(path), "/containers/%s/json", id);
	j = t_engine_get(path, &st);
	if (st == 404) {
		json_decref(j);
		return -1;
	}
	assert_int_equal(st, 200);
	r = json_is_true(json_object_get(json_object_get(j, "State"), "Paused"));
	json_decref(j);
	return r;
}

static sbx_sandbox *create_on(sbx_backend *b, uint64_t life_ms)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, life_ms), 0);
	assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, life_ms), 0);
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	sbx_policy_free(p);
	return s;
}

static sbx_sandbox *create(uint64_t life_ms)
{
	return create_on(B, life_ms);
}

/* Waits (a wait for the clock, not a guess of speed) until time(NULL) >= t. */
static void wait_until(time_t t)
{
	struct timespec tick = {0, 50 * 1000 * 1000};

	assert_true(t - time(NULL) < HANG_GUARD_S);
	while (time(NULL) < t)
		nanosleep(&tick, NULL);
}

/* The poll interval of a wait for an event (not a guess of its time). */
static void tick(void)
{
	struct timespec t = {0, 50 * 1000 * 1000};

	nanosleep(&t, NULL);
}

static int run_rc(sbx_sandbox *s, const char *line)
{
	const char *argv[] = {"sh", "-c", line, NULL};
	sbx_result *r = NULL;
	int rc = sbx_sandbox_run(&r, s, argv, NULL);

	sbx_result_free(r);
	return rc;
}

static char *out_of(sbx_sandbox *s, const char *line)
{
	sbx_result *r = t_run(s, line, NULL);
	char *o;

	assert_int_equal(r->exit_code, 0);
	o = strdup(r->stdout_data);
	sbx_result_free(r);
	return o;
}

/* The ticker: a run (on a handle of its own, so through docker exec) that
 * appends the realtime clock in ns to /tmp/ticks every 10 ms until
 * /tmp/stop exists. */
struct ticker {
	sbx_sandbox *h;
	sbx_result *r;
};

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	const char *argv[] = {
		"python3", "-c",
		"import os, time\n"
		"f = open('/tmp/ticks', 'a')\n"
		"while not os.path.exists('/tmp/stop'):\n"
		"    f.write('%d\\n' % time.time_ns()); f.flush(); time.sleep(0.01)\n",
		NULL};

	(void)sbx_sandbox_run(&t->r, t->h, argv, NULL);
	return NULL;
}

/* Ticks in /tmp/ticks that lie in (from, to) ns, and those at or after to. */
static void count_ticks(sbx_sandbox *s, int64_t from, int64_t to, int *inside, int *after)
{
	char *o = out_of(s, "cat /tmp/ticks"), *save = NULL;

	*inside = *after = 0;
	for (char *l = strtok_r(o, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int64_t v = strtoll(l, NULL, 10);

		*inside += v > from && v < to;
		*after += v >= to;
	}
	free(o);
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A process keeps running state across a pause: it does not tick while
 * paused, and ticks again after the resume; a file survives; a run, a file
 * transfer and a second pause are refused at once with SBX_EPAUSED; the
 * init's deadline is moved by the time paused. */
static void test_engine_pause__keeps_processes_and_files(void **state)
{
	sbx_sandbox *s = create(3600000);
	struct ticker t = {0};
	pthread_t th;
	void *data = NULL;
	size_t len = 0;
	int64_t paused_at, resumed_at, d1 = 0, d2 = 0;
	int inside = 0, after = 0, guard;
	char *o;

	(void)state;
	assert_int_equal(sbx_sandbox_write_file(s, "/workspace/kept", "kept\n", 5, 0644), 0);
	assert_int_equal(sbx_sandbox_open(&t.h, B, sbx_sandbox_id(s)), 0);
	assert_int_equal(pthread_create(&th, NULL, ticker_main, &t), 0);
	/* Event: the ticker has ticked. */
	for (guard = 0; guard < HANG_GUARD_S * 10; guard++) {
		o = out_of(s, "test -s /tmp/ticks && echo y || true");
		inside = o[0] == 'y';
		free(o);
		if (inside)
			break;
		tick();
	}
	assert_true(inside);

	assert_int_equal(sbx_sandbox_deadline(s, &d1), 0);
	assert_int_equal(sbx_sandbox_pause(s, 0), 0);
	paused_at = now_ns();
	assert_int_equal(inspect_paused(sbx_sandbox_id(s)), 1);
	/* Refused at once, naming the state, never held until a deadline. */
	assert_int_equal(run_rc(s, "true"), SBX_EPAUSED);
	assert_non_null(strstr(sbx_error_last()->message, "paused"));
	assert_int_equal(sbx_sandbox_read_file(&data, &len, s, "/workspace/kept", 0), SBX_EPAUSED);
	assert_int_equal(sbx_sandbox_pause(s, 0), SBX_EPAUSED);
	assert_non_null(strstr(sbx_error_last()->message, "already paused"));
	/* The clock passes a second while it is paused. */
	wait_until(time(NULL) + 1);
	resumed_at = now_ns();
	assert_int_equal(sbx_sandbox_resume(s), 0);
	assert_int_equal(inspect_paused(sbx_sandbox_id(s)), 0);
	assert_int_equal(sbx_sandbox_resume(s), SBX_EINVALID);
	/* Its deadline moved by the (whole) seconds it was paused: at least one. */
	assert_int_equal(sbx_sandbox_deadline(s, &d2), 0);
	assert_true(d2 >= d1 + 1);

	/* Event: the ticker ticks again. */
	for (guard = 0; guard < HANG_GUARD_S * 10; guard++) {
		count_ticks(s, paused_at, resumed_at, &inside, &after);
		if (after)
			break;
		tick();
	}
	assert_int_equal(inside, 0);
	assert_true(after > 0);
	assert_int_equal(sbx_sandbox_read_file(&data, &len, s, "/workspace/kept", 0), 0);
	assert_memory_equal(data, "kept\n", 5);
	sbx_free(data);

	/* The ticker ends when told, having run all along. */
	assert_int_equal(sbx_sandbox_write_file(s, "/tmp/stop", "", 0, 0644), 0);
	pthread_join(th, NULL);
	assert_non_null(t.r);
	assert_int_equal(t.r->exit_code, 0);
	sbx_result_free(t.r);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_sandbox_detach(t.h);
}

struct reaped {
	const char *id;
	int removed;
	sbx_reap_reason reason;
};

static int on_reaped(const sbx_reap_info *info, void *payload)
{
	struct reaped *r = payload;

	if (strcmp(info->id, r->id) == 0) {
		r->removed = info->removed;
		r->reason = info->reason;
	}
	return 0;
}

/* The deadline does not count while paused: a sandbox paused past its own
 * deadline is not reaped, and resumed it has the life it had left.
 *
 * Its deadline label passes while it is paused; a reaper of a library that
 * predates pauses (an older build's suite on the same dockerd) would remove
 * it then, and the test says so when it fails for that. */
static void test_engine_pause__deadline_stops_while_paused(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	sbx_sandbox *s = NULL;
	struct reaped seen = {0};
	int64_t d1 = 0, d2 = 0;
	time_t t0 = 0, t1;
	uint64_t life;
	char *out;

	(void)state;
	/*
	 * The lifetime counts from before the create, which may take most of
	 * a short one on a loaded machine: a create that fails, or leaves
	 * under two seconds before the pause, is tried again with twice the
	 * lifetime.
	 */
	for (life = 6000; !s; life *= 2) {
		sbx_policy *p = t_policy();

		if (life > 96000)
			fail_msg("no sandbox paused with over 2 s of a %llu ms lifetime left: %s",
				 (unsigned long long)(life / 2), sbx_error_last()->message);
		assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, life), 0);
		assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_RUN, life), 0);
		if (sbx_sandbox_create(&s, B, p) == 0) {
			assert_int_equal(sbx_sandbox_deadline(s, &d1), 0);
			t0 = time(NULL);
			if (t0 + 2 >= (time_t)d1 || sbx_sandbox_pause(s, 600000) != 0) {
				sbx_sandbox_close(s);
				s = NULL;
			}
		}
		sbx_policy_free(p);
	}
	assert_int_equal(sbx_sandbox_deadline(s, &d2), SBX_EPAUSED);
	/* Past the deadline it had, paused. */
	wait_until((time_t)d1 + 1);
	o.tenant = t_tenant();
	seen.id = sbx_sandbox_id(s);
	seen.reason = (sbx_reap_reason)0;
	assert_true(sbx_backend_reap(B, &o, on_reaped, &seen) >= 0);
	assert_int_equal(seen.reason, 0); /* not condemned, for any reason */
	if (inspect_paused(sbx_sandbox_id(s)) == -1) {
		sbx_sandbox_close(s);
		fail_msg("the paused sandbox is gone past its deadline label, and this library's "
			 "reaper did not condemn it: a reaper that predates pauses (an older build "
			 "on this dockerd) or a bug removed it");
	}
	assert_int_equal(inspect_paused(sbx_sandbox_id(s)), 1);
	assert_int_equal(sbx_sandbox_resume(s), 0);
	t1 = time(NULL);
	assert_int_equal(sbx_sandbox_deadline(s, &d2), 0);
	/* Moved by the time it was paused: what it had left is what it has. */
	assert_true(d2 - d1 >= (int64_t)(d1 + 1 - t0) - 1);
	assert_true(d2 - d1 <= (int64_t)(t1 - t0) + 1);
	assert_true(d2 > (int64_t)time(NULL));
	out = out_of(s, "echo alive");
	assert_string_equal(out, "alive\n");
	free(out);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/* The reaper removes a paused sandbox once its pause bound has passed, and
 * not before; a resume after the bound is refused. */
static void test_engine_pause__reaped_past_bound_not_before(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	sbx_sandbox *s = create(3600000);
	char id[80];
	time_t t0;
	int n = 0, guard;

	(void)state;
	snprintf(id, sizeof(id), "%s", sbx_sandbox_id(s));
	o.tenant = t_tenant();
	t0 = time(NULL);
	assert_int_equal(sbx_sandbox_pause(s, 3000), 0);
	n = sbx_backend_reap(B, &o, NULL, NULL);
	/* Not before: only judged while the bound is surely ahead. */
	if (time(NULL) < t0 + 2) {
		assert_int_equal(n, 0);
		assert_int_equal(inspect_paused(id), 1);
	}
	wait_until(t0 + 4);
	assert_int_equal(sbx_sandbox_resume(s), SBX_ENOTFOUND);
	assert_non_null(strstr(sbx_error_last()->message, "past its bound"));
	for (guard = 0; guard < HANG_GUARD_S && inspect_paused(id) >= 0; guard++) {
		assert_true(sbx_backend_reap(B, &o, NULL, NULL) >= 0);
		if (inspect_paused(id) >= 0)
			wait_until(time(NULL) + 1);
	}
	assert_int_equal(inspect_paused(id), -1);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/* A paused sandbox whose owner died is reaped as any other, its bound far. */
static void test_engine_pause__dead_owner_reaped(void **state)
{
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	struct reaped seen = {0};
	char id[128] = "";
	int fds[2];
	pid_t pid;

	(void)state;
	(void)t_tenant(); /* fixed before the fork: the child shares the tenant */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
		sbx_backend *b = NULL;
		sbx_policy *p = t_policy();
		sbx_sandbox *s = NULL;

		bo.no_reap_at_open = 1;
		if (sbx_backend_open(&b, "docker", &bo) ||
		    sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, 3600000) ||
		    sbx_sandbox_create(&s, b, p) || sbx_sandbox_pause(s, 0))
			_exit(1);
		if (write(fds[1], sbx_sandbox_id(s), strlen(sbx_sandbox_id(s))) < 0)
			_exit(1);
		_exit(0); /* no close: the owner is gone, its sandbox paused */
	}
	close(fds[1]);
	assert_true(read(fds[0], id, sizeof(id) - 1) > 0);
	close(fds[0]);
	waitpid(pid, NULL, 0);
	assert_int_equal(inspect_paused(id), 1);
	seen.id = id;
	o.tenant = t_tenant();
	assert_true(sbx_backend_reap(B, &o, on_reaped, &seen) >= 1);
	assert_int_equal(seen.removed, 1);
	assert_int_equal(seen.reason, SBX_REAP_OWNER_GONE);
	assert_int_equal(inspect_paused(id), -1);
}

/* Close of a paused sandbox removes it; a bound over a day is refused, and
 * without a config one over the built-in ceiling (an hour). */
static void test_engine_pause__close_removes_paused(void **state)
{
	sbx_sandbox *s = create(3600000);
	char id[80];

	(void)state;
	snprintf(id, sizeof(id), "%s", sbx_sandbox_id(s));
	assert_int_equal(sbx_sandbox_pause(s, SBX_PAUSE_MAX_MS + 1), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "a day"));
	assert_int_equal(sbx_sandbox_pause(s, SBX_PAUSE_MAX_DEFAULT_MS + 1), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "ceilings.pause (3600 s)"));
	assert_non_null(strstr(sbx_error_last()->message, "(built-in)"));
	assert_int_equal(inspect_paused(id), 0);
	assert_int_equal(sbx_sandbox_pause(s, SBX_PAUSE_MAX_DEFAULT_MS), 0);
	assert_int_equal(inspect_paused(id), 1);
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_equal(inspect_paused(id), -1);
}

/* The record's at= and bound= (unix s) of sandbox id. */
static void record_times(const char *id, unsigned long long *at, unsigned long long *bound)
{
	char path[256], line[256] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/run/sandboxio/paused/%s", id);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(sscanf(line, "sandboxio-paused 1 at=%llu bound=%llu", at, bound), 2);
}

/* The bound is on the time paused in all: a pause after a resume has only
 * what the earlier pauses left, and none left is refused. Otherwise pause
 * after pause would keep a sandbox past its lifetime without end. */
static void test_engine_pause__pauses_add_up_to_the_bound(void **state)
{
	sbx_sandbox *s = create(3600000);
	unsigned long long at, bound;

	(void)state;
	assert_int_equal(sbx_sandbox_pause(s, 600000), 0);
	record_times(sbx_sandbox_id(s), &at, &bound);
	assert_int_equal(bound - at, 600);
	wait_until((time_t)at + 3); /* three seconds paused, at least */
	assert_int_equal(sbx_sandbox_resume(s), 0);
	assert_int_equal(sbx_sandbox_pause(s, 3000), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "in all"));
	assert_int_equal(inspect_paused(sbx_sandbox_id(s)), 0);
	assert_int_equal(sbx_sandbox_pause(s, 600000), 0);
	record_times(sbx_sandbox_id(s), &at, &bound);
	assert_true(bound - at <= 597);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/* A reaper that is not root (a user in the docker group) reads the record
 * too: otherwise it would skip every sandbox for a record it cannot read. */
static void test_engine_pause__record_read_by_a_reaper_not_root(void **state)
{
	sbx_sandbox *s = create(3600000);
	struct sbx__paused r;
	int status = -1;
	pid_t pid;

	(void)state;
	assert_int_equal(sbx_sandbox_pause(s, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		_exit(sbx__paused_read(sbx_sandbox_id(s), &r) == 1 && r.at != 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/* The operator's ceilings.pause bounds a pause: above it refused with
 * nothing frozen, at it accepted, and no bound given is the ceiling (the
 * record the reaper reads says so). It may lie above the built-in hour. */
static void test_engine_pause__config_ceiling(void **state)
{
	static const char json[] = "{\"ceilings\": {\"pause\": 7200}}";
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	struct sbx__paused r = {0}, first;
	sbx_config *c = NULL;
	sbx_backend *b = NULL;
	sbx_sandbox *s;
	char id[80];

	(void)state;
	assert_int_equal(sbx_config_parse(&c, json, strlen(json), "pause-ceiling.json"), 0);
	bo.config = c;
	assert_int_equal(sbx_backend_open(&b, "docker", &bo), 0);
	sbx_config_free(c);
	s = create_on(b, 3600000);
	snprintf(id, sizeof(id), "%s", sbx_sandbox_id(s));
	assert_int_equal(sbx_sandbox_pause(s, 7200001), SBX_EDENIED);
	assert_non_null(strstr(sbx_error_last()->message, "ceilings.pause (7200 s)"));
	assert_non_null(strstr(sbx_error_last()->message, "pause-ceiling.json"));
	assert_int_equal(inspect_paused(id), 0);
	assert_int_equal(sbx_sandbox_pause(s, 0), 0);
	assert_int_equal(inspect_paused(id), 1);
	assert_int_equal(sbx__paused_read(id, &r), 1);
	assert_int_equal(r.bound - r.at, 7200);
	first = r;
	assert_int_equal(sbx_sandbox_resume(s), 0);
	assert_int_equal(sbx_sandbox_pause(s, 7200000), 0);
	assert_int_equal(sbx__paused_read(id, &r), 1);
	/* The bound is on the time paused in all: the first pause's, which
	 * the resume added to the deadline, is spent (on a loaded host it may
	 * be a second or more). */
	assert_true(r.deadline >= first.deadline);
	assert_int_equal(r.bound - r.at, 7200 - (r.deadline - first.deadline));
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_equal(inspect_paused(id), -1);
	sbx_backend_free(b);
}

/* Only the creating handle can pause: another is refused, nothing frozen. */
static void test_engine_pause__other_handle_refused(void **state)
{
	sbx_sandbox *s = create(3600000), *h = NULL;

	(void)state;
	assert_int_equal(sbx_sandbox_open(&h, B, sbx_sandbox_id(s)), 0);
	assert_int_equal(sbx_sandbox_pause(h, 0), SBX_EUNSUPPORTED);
	assert_int_equal(inspect_paused(sbx_sandbox_id(s)), 0);
	sbx_sandbox_detach(h);
	assert_int_equal(sbx_sandbox_close(s), 0);
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
		cmocka_unit_test(test_engine_pause__keeps_processes_and_files),
		cmocka_unit_test(test_engine_pause__deadline_stops_while_paused),
		cmocka_unit_test(test_engine_pause__reaped_past_bound_not_before),
		cmocka_unit_test(test_engine_pause__close_removes_paused),
		cmocka_unit_test(test_engine_pause__dead_owner_reaped),
		cmocka_unit_test(test_engine_pause__other_handle_refused),
		cmocka_unit_test(test_engine_pause__pauses_add_up_to_the_bound),
		cmocka_unit_test(test_engine_pause__record_read_by_a_reaper_not_root),
		cmocka_unit_test(test_engine_pause__config_ceiling),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] pause", tests, setup, teardown);
}
