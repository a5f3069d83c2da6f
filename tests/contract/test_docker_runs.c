/*
 * tests/contract/test_docker_runs.c: runs in a real docker sandbox: status
 * and exit codes, deadlines that kill the whole process tree, output caps,
 * stdin, run_code, files, caps that bite (memory, pids, disk), threads, and
 * teardown on close.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!t_engine_ready())
		return -1;
	f->b = t_backend();
	f->p = t_policy();
	sbx_policy_set_limit(f->p, SBX_LIMIT_OUTPUT, 1 << 20);
	if (t_make(f->b, f->p, &f->s, NULL) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	t_unmake(f->b, f->p, f->s, NULL);
	free(f);
	return 0;
}

static sbx_sandbox *S(void **state)
{
	return ((struct fx *)*state)->s;
}

/* A sandbox of its own, for cases that kill or exhaust it. */
static sbx_sandbox *fresh(void **state, sbx_policy *p)
{
	sbx_sandbox *s = NULL;

	if (sbx_sandbox_create(&s, ((struct fx *)*state)->b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	return s;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_engine_runs__exit_code_and_streams(void **state)
{
	sbx_result *r = t_run(S(state), "echo out; echo err >&2; exit 7", NULL);

	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 7);
	assert_string_equal(r->stdout_data, "out\n");
	assert_string_equal(r->stderr_data, "err\n");
	sbx_result_free(r);
}

static void test_engine_runs__argv_passed_verbatim(void **state)
{
	const char *argv[] = {"printf", "[%s]", "a b", "$HOME", "'\"", "", NULL};
	sbx_result *r = NULL;

	assert_int_equal(sbx_sandbox_run(&r, S(state), argv, NULL), 0);
	assert_string_equal(r->stdout_data, "[a b][$HOME]['\"][]");
	sbx_result_free(r);
}

static void test_engine_runs__stdin_delivered(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	static char big[300000];
	sbx_result *r;

	memset(big, 'x', sizeof(big));
	o.stdin_data = big;
	o.stdin_len = sizeof(big);
	r = t_run(S(state), "wc -c", &o);
	assert_string_equal(r->stdout_data, "300000\n");
	sbx_result_free(r);
}

static void test_engine_runs__env_and_workdir(void **state)
{
	const char *env[] = {"GREETING=hello world", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r;

	o.env = env;
	o.workdir = "/tmp";
	r = t_run(S(state), "echo \"$GREETING\"; pwd", &o);
	assert_string_equal(r->stdout_data, "hello world\n/tmp\n");
	sbx_result_free(r);
}

static void test_engine_runs__command_not_found(void **state)
{
	const char *argv[] = {"no-such-program", NULL};
	sbx_result *r = NULL;

	assert_int_equal(sbx_sandbox_run(&r, S(state), argv, NULL), 0);
	assert_int_equal(r->status, SBX_RUN_ERROR);
	assert_int_equal(r->exit_code, 127);
	assert_non_null(strstr(r->stderr_data, "no-such-program"));
	sbx_result_free(r);
}

static void test_engine_runs__killed_by_signal(void **state)
{
	sbx_result *r = t_run(S(state), "kill -TERM $$", NULL);

	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->term_signal, 15);
	assert_int_equal(r->exit_code, 143);
	sbx_result_free(r);
}

/*
 * The deadline kills the whole tree, including what left the process group.
 * The tree says "ready" once its three parts run; a deadline that came
 * before that (a slow machine) proves nothing, so the case runs again with
 * twice the deadline until the tree was whole when it struck.
 */
static void test_engine_runs__timeout_kills_tree(void **state)
{
	static const char tree[] =
		"rm -f /tmp/tk.a /tmp/tk.b; "
		"setsid sh -c 'touch /tmp/tk.a; exec sleep 300' & "
		"(trap '' TERM HUP; touch /tmp/tk.b; exec sleep 301) & "
		"while [ ! -e /tmp/tk.a ] || [ ! -e /tmp/tk.b ]; do sleep 0.01; done; "
		"echo ready; exec sleep 302";
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	uint64_t t0;
	sbx_result *r = NULL;

	for (o.timeout_ms = 1000; o.timeout_ms <= 64000; o.timeout_ms *= 2) {
		sbx_result_free(r);
		t0 = now_ms();
		r = t_run(S(state), tree, &o);
		assert_int_equal(r->status, SBX_RUN_TIMEOUT);
		assert_int_equal(r->exit_code, 124);
		/* Hang guard: the tree's sleeps last 300 s, the deadline far less. */
		assert_true(now_ms() - t0 < o.timeout_ms + 60000);
		if (strcmp(r->stdout_data, "ready\n") == 0)
			break;
	}
	assert_string_equal(r->stdout_data, "ready\n");
	sbx_result_free(r);
	r = t_run(S(state),
		  "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done "
		  "| grep -c '^sleep 30[012]' || true",
		  NULL);
	assert_string_equal(r->stdout_data, "0\n");
	sbx_result_free(r);
}

static void test_engine_runs__background_ends_with_run(void **state)
{
	sbx_result *r = t_run(S(state), "sleep 303 & echo started", NULL);

	assert_string_equal(r->stdout_data, "started\n");
	sbx_result_free(r);
	r = t_run(S(state),
		  "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done "
		  "| grep -c '^sleep 303' || true",
		  NULL);
	assert_string_equal(r->stdout_data, "0\n");
	sbx_result_free(r);
}

static void test_engine_runs__run_cannot_widen_deadline(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"true", NULL};
	sbx_result *r = NULL;

	o.timeout_ms = SBX_DEFAULT_TIMEOUT_MS + 1;
	assert_int_equal(sbx_sandbox_run(&r, S(state), argv, &o), SBX_EINVALID);
	assert_null(r);
	assert_non_null(strstr(sbx_error_last()->message, "narrow"));
}

static void test_engine_runs__output_capped_and_counted(void **state)
{
	sbx_result *r = t_run(S(state), "head -c 50000000 /dev/zero; echo tail >&2", NULL);

	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->stdout_len, 1 << 20);
	assert_true(r->stdout_truncated);
	assert_int_equal(r->stdout_total, 50000000);
	assert_false(r->stderr_truncated);
	assert_string_equal(r->stderr_data, "tail\n");
	sbx_result_free(r);
}

static void test_engine_runs__binary_output_intact(void **state)
{
	sbx_result *r = t_run(S(state), "printf '\\000\\377\\200abc\\000'", NULL);

	assert_int_equal(r->stdout_len, 7);
	assert_memory_equal(r->stdout_data, "\0\377\200abc\0", 7);
	sbx_result_free(r);
}

struct seen {
	size_t out, err;
};

static int on_output(int stream, const char *data, size_t len, void *payload)
{
	struct seen *s = payload;

	(void)data;
	if (stream == SBX_STREAM_STDOUT)
		s->out += len;
	else
		s->err += len;
	return 0;
}

static void test_engine_runs__streaming_callback(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct seen seen = {0};
	sbx_result *r;

	o.on_output = on_output;
	o.payload = &seen;
	r = t_run(S(state), "for i in 1 2 3; do echo line$i; sleep 0.1; done; echo e >&2", &o);
	assert_int_equal(seen.out, 18);
	assert_int_equal(seen.err, 2);
	sbx_result_free(r);
}

static void test_engine_runs__run_code_python_and_bash(void **state)
{
	static const char py[] = "import numpy, requests\nprint(int(numpy.arange(10).sum()))\n";
	static const char sh[] = "x=$((6*7)); echo $x\n";
	sbx_result *r = NULL;

	assert_int_equal(sbx_sandbox_run_code(&r, S(state), "python", py, strlen(py), NULL), 0);
	assert_string_equal(r->stdout_data, "45\n");
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_run_code(&r, S(state), "bash", sh, strlen(sh), NULL), 0);
	assert_string_equal(r->stdout_data, "42\n");
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_run_code(&r, S(state), "cobol", sh, strlen(sh), NULL),
			 SBX_EUNSUPPORTED);
}

static void test_engine_runs__files_round_trip(void **state)
{
	static const char data[] = "line one\n\0binary\377";
	void *back = NULL;
	size_t len = 0;

	assert_int_equal(
		sbx_sandbox_write_file(S(state), "/workspace/in.bin", data, sizeof(data) - 1, 0600),
		0);
	assert_int_equal(sbx_sandbox_read_file(&back, &len, S(state), "/workspace/in.bin", 0), 0);
	assert_int_equal(len, sizeof(data) - 1);
	assert_memory_equal(back, data, len);
	sbx_free(back);
	back = NULL;
	assert_int_equal(sbx_sandbox_read_file(&back, &len, S(state), "/workspace/in.bin", 4),
			 SBX_ETOOBIG);
	assert_int_equal(sbx_sandbox_read_file(&back, &len, S(state), "/workspace/nope", 0),
			 SBX_ENOTFOUND);
	assert_int_equal(sbx_sandbox_write_file(S(state), "/etc/passwd", "x", 1, 0644),
			 SBX_EDENIED);
	assert_int_equal(sbx_sandbox_write_file(S(state), "/workspace/../etc/x", "x", 1, 0644),
			 SBX_EINVALID);
	assert_null(back);
}

static void test_engine_runs__memory_cap_reports_oom(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s;
	sbx_result *r;

	sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, 64 << 20);
	s = fresh(state, p);
	r = t_run(s, "python3 -c 'b = b\"x\" * (200 << 20); print(len(b))'", NULL);
	assert_int_equal(r->status, SBX_RUN_OOM);
	assert_int_equal(r->exit_code, 137);
	sbx_result_free(r);
	if (t_tier() == SBX_TIER_GVISOR) {
		static const char *const echo[] = {"echo", "alive", NULL};
		sbx_run_options o = SBX_RUN_OPTIONS_INIT;

		/* There the cap ends the whole sandbox (the host's OOM killer
		 * takes the Sentry): a later run is refused, naming why. */
		r = NULL;
		assert_int_equal(sbx_sandbox_run(&r, s, echo, &o), SBX_ENOTFOUND);
		assert_null(r);
		assert_non_null(strstr(sbx_error_last()->message, "memory cap"));
	} else {
		/* The sandbox survives its OOM and keeps working. */
		r = t_run(s, "echo alive", NULL);
		assert_string_equal(r->stdout_data, "alive\n");
		sbx_result_free(r);
	}
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

static void test_engine_runs__pids_cap_contains_fork_bomb(void **state)
{
	sbx_policy *p = t_policy();
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_sandbox *s;
	sbx_result *r;

	sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 64);
	s = fresh(state, p);
	/* Only a hang guard: the cap, not the deadline, must end the loop. */
	o.timeout_ms = 120000;
	r = t_run(s,
		  "python3 -c \"import threading,time\n"
		  "n=0\n"
		  "try:\n"
		  "  while True:\n"
		  "    threading.Thread(target=time.sleep,args=(30,),daemon=True).start(); n+=1\n"
		  "except RuntimeError: print('capped', n < 64)\"",
		  &o);
	assert_string_equal(r->stdout_data, "capped True\n");
	sbx_result_free(r);
	/* Processes too: the cap refuses the program (EAGAIN) and the sandbox
	 * lives on, on both tiers (on gvisor each process also costs the host
	 * tasks, which the host cap leaves room for: engine/tiers.c). */
	r = t_run(s,
		  "python3 -c \"import os,time\n"
		  "n=0\n"
		  "try:\n"
		  "  while True:\n"
		  "    if os.fork()==0:\n"
		  "      time.sleep(30); os._exit(0)\n"
		  "    n+=1\n"
		  "except OSError as e: print('capped', n < 64, e.errno)\"",
		  &o);
	assert_string_equal(r->stdout_data, "capped True 11\n");
	sbx_result_free(r);
	r = t_run(s, "echo alive", NULL);
	assert_string_equal(r->stdout_data, "alive\n");
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

static void test_engine_runs__disk_cap_enospc(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s;
	sbx_result *r;

	sbx_policy_set_limit(p, SBX_LIMIT_DISK, 64 << 20);
	s = fresh(state, p);
	r = t_run(s, "dd if=/dev/zero of=/workspace/fill bs=1M count=200 2>&1; echo rc=$?", NULL);
	assert_non_null(strstr(r->stdout_data, "No space left on device"));
	assert_non_null(strstr(r->stdout_data, "rc=1"));
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

struct worker {
	sbx_backend *b;
	int ok;
	char want[32];
};

static void *thread_main(void *arg)
{
	struct worker *w = arg;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	const char *argv[] = {"sh", "-c", "echo $0; touch /workspace/mine; ls /workspace", w->want,
			      NULL};
	char expect[64];

	snprintf(expect, sizeof(expect), "%s\nmine\n", w->want);
	if (sbx_policy_new(&p) == 0 && sbx_policy_set_tenant(p, t_tenant()) == 0 &&
	    sbx_sandbox_create(&s, w->b, p) == 0 && sbx_sandbox_run(&r, s, argv, NULL) == 0)
		w->ok = strcmp(r->stdout_data, expect) == 0;
	sbx_result_free(r);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	return NULL;
}

/* Separate sandboxes from separate threads, sharing nothing. */
static void test_engine_runs__threads_isolated(void **state)
{
	struct worker w[4];
	pthread_t th[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.b = ((struct fx *)*state)->b};
		snprintf(w[i].want, sizeof(w[i].want), "thread-%d", i);
		pthread_create(&th[i], NULL, thread_main, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(w[i].ok);
	}
}

static void test_engine_runs__close_removes(void **state)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s = fresh(state, p);
	char path[256];
	long st = 0;
	json_t *j;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	json_decref(t_engine_get(path, &st));
	assert_int_equal(st, 200);
	assert_int_equal(sbx_sandbox_close(s), 0);
	j = t_engine_get(path, &st);
	json_decref(j);
	assert_int_equal(st, 404);
	sbx_policy_free(p);
}

struct killer {
	sbx_sandbox *s;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started;
};

/* The run said it started: from here on it only waits, printing nothing. */
static int on_started(int stream, const char *data, size_t len, void *payload)
{
	struct killer *k = payload;

	(void)stream, (void)data, (void)len;
	pthread_mutex_lock(&k->mu);
	k->started = 1;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	return 0;
}

static void *killer(void *arg)
{
	struct killer *k = arg;

	pthread_mutex_lock(&k->mu);
	while (!k->started)
		pthread_cond_wait(&k->cv, &k->mu);
	pthread_mutex_unlock(&k->mu);
	sbx_sandbox_kill(k->s);
	return NULL;
}

/* A run that has gone quiet is cancelled from another thread. */
static void test_engine_runs__kill_from_another_thread(void **state)
{
	sbx_policy *p = t_policy();
	struct killer k = {.s = fresh(state, p),
			   .mu = PTHREAD_MUTEX_INITIALIZER,
			   .cv = PTHREAD_COND_INITIALIZER};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"sh", "-c", "echo started; exec sleep 3000", NULL};
	sbx_result *r = NULL;
	pthread_t th;

	o.on_output = on_started;
	o.payload = &k;
	pthread_create(&th, NULL, killer, &k);
	assert_int_equal(sbx_sandbox_run(&r, k.s, argv, &o), 0);
	/* A run that ended otherwise never started the killer: let it go. */
	on_started(SBX_STREAM_STDOUT, "", 0, &k);
	pthread_join(th, NULL);
	assert_int_equal(r->status, SBX_RUN_KILLED);
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_run(&r, k.s, argv, NULL), SBX_ENOTFOUND);
	assert_int_equal(sbx_sandbox_close(k.s), 0);
	sbx_policy_free(p);
}

/* The init ends a detached sandbox at its deadline, and nothing lingers. */
/*
 * The sandbox ends at its own deadline with nobody to close it. A deadline
 * that ran out before the create was done (the init ended first: exit code
 * 124) proves nothing: the create goes again with twice the deadline.
 */
static void test_engine_runs__dead_man_deadline(void **state)
{
	sbx_backend *b = ((struct fx *)*state)->b;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	char path[256];
	long st = 200, dl, waited;

	for (dl = 5000; !s; dl *= 2) {
		assert_true(dl <= 320000);
		sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, (uint64_t)dl);
		if (sbx_sandbox_create(&s, b, p) != 0 &&
		    !strstr(sbx_error_last()->message, "exit code 124"))
			fail_msg("create: %s", sbx_error_last()->message);
	}
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	sbx_sandbox_detach(s);
	/* Hang guard only: far past the deadline and the removal. */
	for (waited = 0; waited < dl / 2 + 120000 && st != 404; waited += 100) {
		json_decref(t_engine_get(path, &st));
		usleep(100000);
	}
	assert_int_equal(st, 404);
	sbx_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_runs__exit_code_and_streams),
		cmocka_unit_test(test_engine_runs__argv_passed_verbatim),
		cmocka_unit_test(test_engine_runs__stdin_delivered),
		cmocka_unit_test(test_engine_runs__env_and_workdir),
		cmocka_unit_test(test_engine_runs__command_not_found),
		cmocka_unit_test(test_engine_runs__killed_by_signal),
		cmocka_unit_test(test_engine_runs__timeout_kills_tree),
		cmocka_unit_test(test_engine_runs__background_ends_with_run),
		cmocka_unit_test(test_engine_runs__run_cannot_widen_deadline),
		cmocka_unit_test(test_engine_runs__output_capped_and_counted),
		cmocka_unit_test(test_engine_runs__binary_output_intact),
		cmocka_unit_test(test_engine_runs__streaming_callback),
		cmocka_unit_test(test_engine_runs__run_code_python_and_bash),
		cmocka_unit_test(test_engine_runs__files_round_trip),
		cmocka_unit_test(test_engine_runs__memory_cap_reports_oom),
		cmocka_unit_test(test_engine_runs__pids_cap_contains_fork_bomb),
		cmocka_unit_test(test_engine_runs__disk_cap_enospc),
		cmocka_unit_test(test_engine_runs__threads_isolated),
		cmocka_unit_test(test_engine_runs__close_removes),
		cmocka_unit_test(test_engine_runs__kill_from_another_thread),
		cmocka_unit_test(test_engine_runs__dead_man_deadline),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] runs", tests, setup, teardown);
}
