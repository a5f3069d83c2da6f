/*
 * tests/contract/test_docker_pool.c: warm pools (docs/pools.md) on a real
 * dockerd. What the pool holds is counted on the Engine by label
 * (io.sandboxio.pool=<id>), independently of the library's counters.
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

#include "support/engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!t_engine_ready()) {
		fprintf(stderr, "contract: dockerd or the default image is missing\n");
		return -1;
	}
	f->b = t_backend();
	f->p = t_policy();
	/* 600 s of life: up to 300 s idle in the pool, then the run timeout. */
	assert_int_equal(sbx_policy_set_timeout_ms(f->p, SBX_TIMEOUT_SANDBOX, 600000), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	free(f);
	return 0;
}

static sbx_pool *pool_new(struct fx *f, const sbx_policy *p, unsigned int size, uint64_t age_ms)
{
	sbx_pool_options o = SBX_POOL_OPTIONS_INIT;
	sbx_pool *pool = NULL;

	o.size = size;
	o.max_age_ms = age_ms;
	o.use_ms = 60000;
	if (sbx_pool_new(&pool, f->b, p ? p : f->p, &o) != 0)
		fail_msg("pool_new: %s", sbx_error_last()->message);
	return pool;
}

static int count(const sbx_pool *pool)
{
	char l[128];

	snprintf(l, sizeof(l), "io.sandboxio.pool=%s", sbx_pool_id(pool));
	return t_engine_count_label(l);
}

/* Waits up to 60 s for the pool to hold n idle sandboxes. */
static void wait_idle(sbx_pool *pool, unsigned int n)
{
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};

	for (int i = 0; i < 600; i++) {
		assert_int_equal(sbx_pool_get_stats(pool, &st), 0);
		if (st.idle >= n)
			return;
		usleep(100000);
	}
	fail_msg("pool holds %u idle sandboxes, not %u (failures %llu, last error %d)", st.idle, n,
		 (unsigned long long)st.create_failures, st.last_error);
}

static const char *label_of(json_t *inspect, const char *key)
{
	return json_string_value(json_object_get(
		json_object_get(json_object_get(inspect, "Config"), "Labels"), key));
}

static json_t *inspect(const sbx_sandbox *s)
{
	char path[256];
	long st;
	json_t *j;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	j = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	return j;
}

/* A take hands out a live sandbox of the pool's tenant, labelled with the pool. */
static void test_docker_pool__take_is_live_and_labelled(void **state)
{
	struct fx *f = *state;
	sbx_pool *pool = pool_new(f, NULL, 1, 300000);
	sbx_sandbox *s = NULL;
	sbx_result *r;
	json_t *j;

	wait_idle(pool, 1);
	assert_int_equal(sbx_pool_take(&s, pool), 0);
	j = inspect(s);
	assert_true(json_is_true(json_object_get(json_object_get(j, "State"), "Running")));
	assert_string_equal(label_of(j, "io.sandboxio.tenant"), t_tenant());
	assert_string_equal(label_of(j, "io.sandboxio.pool"), sbx_pool_id(pool));
	assert_string_equal(label_of(j, "io.sandboxio.managed-by"), "sandboxio");
	assert_string_equal(sbx_policy_tenant(sbx_sandbox_policy(s)), t_tenant());
	json_decref(j);
	r = t_run(s, "echo ok", NULL);
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(r->stdout_data, "ok\n");
	/* The run channel made on the top-up thread serves the taker's thread. */
	assert_int_equal(r->path, SBX_RUN_PATH_CHANNEL);
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_equal(sbx_pool_free(pool), 0);
}

/* Two takes, two sandboxes; closed ones never come back; the pool refills. */
static void test_docker_pool__once_never_back_refills(void **state)
{
	struct fx *f = *state;
	sbx_pool *pool = pool_new(f, NULL, 2, 300000);
	sbx_sandbox *a = NULL, *b = NULL;
	char ida[80], idb[80];
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};

	wait_idle(pool, 2);
	assert_int_equal(count(pool), 2);
	assert_int_equal(sbx_pool_take(&a, pool), 0);
	assert_int_equal(sbx_pool_take(&b, pool), 0);
	assert_string_not_equal(sbx_sandbox_id(a), sbx_sandbox_id(b));
	snprintf(ida, sizeof(ida), "%s", sbx_sandbox_id(a));
	snprintf(idb, sizeof(idb), "%s", sbx_sandbox_id(b));
	assert_int_equal(sbx_sandbox_close(a), 0);
	assert_int_equal(sbx_sandbox_close(b), 0);
	/* Refilled to size with new sandboxes; the two closed ones are gone. */
	wait_idle(pool, 2);
	assert_int_equal(count(pool), 2);
	for (int i = 0; i < 2; i++) {
		sbx_sandbox *s = NULL;

		assert_int_equal(sbx_pool_take(&s, pool), 0);
		assert_string_not_equal(sbx_sandbox_id(s), ida);
		assert_string_not_equal(sbx_sandbox_id(s), idb);
		assert_int_equal(sbx_sandbox_close(s), 0);
	}
	assert_int_equal(sbx_pool_get_stats(pool, &st), 0);
	assert_int_equal(st.taken, 4);
	assert_int_equal(st.misses, 0);
	snprintf(ida, sizeof(ida), "io.sandboxio.pool=%s", sbx_pool_id(pool));
	assert_int_equal(sbx_pool_free(pool), 0);
	assert_int_equal(t_engine_count_label(ida), 0);
}

/* An empty pool creates on the spot and says so. */
static void test_docker_pool__miss_creates_and_says_so(void **state)
{
	struct fx *f = *state;
	sbx_pool *pool = pool_new(f, NULL, 1, 300000);
	sbx_sandbox *a = NULL, *b = NULL;
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};

	int rc = 0, tries = 0;
	uint64_t taken = 0;

	/*
	 * Two takes back to back: the top-up thread almost never makes the
	 * next sandbox between them, but may; then that take counts as taken,
	 * and the case goes again until the second take finds the pool empty.
	 */
	do {
		sbx_sandbox_close(b);
		b = NULL;
		wait_idle(pool, 1);
		if (!a) {
			assert_int_equal(sbx_pool_take(&a, pool), 0);
			taken++;
		}
		rc = sbx_pool_take(&b, pool);
		assert_true(rc == 0 || rc == 1);
		taken += rc == 0;
		assert_int_equal(sbx_pool_get_stats(pool, &st), 0);
		assert_int_equal(st.taken, taken);
		assert_int_equal(st.misses, rc);
	} while (rc == 0 && ++tries < 20);
	assert_int_equal(rc, 1);
	assert_string_not_equal(sbx_sandbox_id(a), sbx_sandbox_id(b));
	sbx_sandbox_close(a);
	sbx_sandbox_close(b);
	assert_int_equal(sbx_pool_free(pool), 0);
}

/* Whether the Engine has no container of this id. */
static int gone(const char *id)
{
	char path[256];
	long status = 0;

	snprintf(path, sizeof(path), "/containers/%s/json", id);
	json_decref(t_engine_get(path, &status));
	return status == 404;
}

/*
 * An idle sandbox older than max_age is removed and replaced. Whichever
 * sandbox the pool holds when the case looks (on a slow machine the first
 * may have expired already), that one must go and another take its place.
 */
static void test_docker_pool__max_age_replaces(void **state)
{
	struct fx *f = *state;
	sbx_pool *pool = pool_new(f, NULL, 1, 3000);
	sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};
	char first[128] = "", filt[256], path[512];
	long status;
	json_t *j;
	int i;

	wait_idle(pool, 1);
	/* Its id, read on the Engine by the pool's label (hang guard 120 s). */
	snprintf(filt, sizeof(filt),
		 "%%7B%%22label%%22%%3A%%5B%%22io.sandboxio.pool%%3D%s%%22%%5D%%7D",
		 sbx_pool_id(pool));
	snprintf(path, sizeof(path), "/containers/json?filters=%s", filt);
	for (i = 0; i < 1200 && !first[0]; i++) {
		j = t_engine_get(path, &status);
		assert_int_equal(status, 200);
		if (json_array_size(j) == 1)
			snprintf(first, sizeof(first), "%s",
				 json_string_value(json_object_get(json_array_get(j, 0), "Id")));
		json_decref(j);
		if (!first[0])
			usleep(100000);
	}
	assert_true(first[0]);
	/* It expires, goes, and a fresh one takes its place (hang guard 120 s). */
	for (i = 0; i < 1200; i++) {
		assert_int_equal(sbx_pool_get_stats(pool, &st), 0);
		if (st.expired >= 1 && st.idle == 1 && gone(first) && count(pool) == 1)
			break;
		usleep(100000);
	}
	assert_true(st.expired >= 1);
	assert_int_equal(st.idle, 1);
	assert_true(gone(first));
	assert_int_equal(count(pool), 1);
	assert_int_equal(sbx_pool_free(pool), 0);
}

/* Freeing the pool removes every idle sandbox and leaves taken ones alone. */
static void test_docker_pool__free_removes_idle(void **state)
{
	struct fx *f = *state;
	sbx_pool *pool = pool_new(f, NULL, 3, 300000);
	sbx_sandbox *s = NULL;
	char label[128];
	json_t *j;

	wait_idle(pool, 3);
	assert_int_equal(sbx_pool_take(&s, pool), 0);
	snprintf(label, sizeof(label), "io.sandboxio.pool=%s", sbx_pool_id(pool));
	assert_int_equal(sbx_pool_free(pool), 0);
	assert_int_equal(t_engine_count_label(label), 1);
	j = inspect(s);
	assert_true(json_is_true(json_object_get(json_object_get(j, "State"), "Running")));
	json_decref(j);
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_equal(t_engine_count_label(label), 0);
}

/* A process that made a pool and died: its pooled sandboxes are owner-gone. */
static void test_docker_pool__dead_owner_is_reaped(void **state)
{
	struct fx *f = *state;
	char label[128];
	int fds[2], status, n;
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
		sbx_pool_options o = SBX_POOL_OPTIONS_INIT;
		sbx_pool_stats st = {.version = SBX_POOL_STATS_VERSION};
		sbx_backend *b = NULL;
		sbx_pool *pool = NULL;
		char id[64] = "";

		bo.no_reap_at_open = 1;
		o.size = 2;
		o.max_age_ms = 300000;
		o.use_ms = 60000;
		if (sbx_backend_open(&b, "docker", &bo) == 0 &&
		    sbx_pool_new(&pool, b, f->p, &o) == 0) {
			for (int i = 0; i < 600; i++) {
				sbx_pool_get_stats(pool, &st);
				if (st.idle == 2 && st.creating == 0)
					break;
				usleep(100000);
			}
			if (st.idle == 2)
				snprintf(id, sizeof(id), "%s", sbx_pool_id(pool));
		}
		if (write(fds[1], id, sizeof(id)) < 0)
			_exit(2);
		_exit(0); /* dies with its pool: no free, no close */
	}
	close(fds[1]);
	{
		char id[64] = "";

		got = read(fds[0], id, sizeof(id));
		close(fds[0]);
		assert_int_equal(got, (ssize_t)sizeof(id));
		assert_true(id[0] != '\0');
		snprintf(label, sizeof(label), "io.sandboxio.pool=%s", id);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(t_engine_count_label(label), 2);
	{
		sbx_reap_options ro = SBX_REAP_OPTIONS_INIT;

		ro.tenant = t_tenant();
		n = sbx_backend_reap(f->b, &ro, NULL, NULL);
		assert_true(n >= 2);
	}
	assert_int_equal(t_engine_count_label(label), 0);
}

/* Pools of two tenants never hand out each other's sandboxes. */
static void test_docker_pool__tenants_never_cross(void **state)
{
	struct fx *f = *state;
	sbx_policy *q = NULL;
	sbx_pool *pa, *pb;
	char tb[96];

	snprintf(tb, sizeof(tb), "%s-other", t_tenant());
	assert_int_equal(sbx_policy_dup(&q, f->p), 0);
	assert_int_equal(sbx_policy_set_tenant(q, tb), 0);
	pa = pool_new(f, NULL, 2, 300000);
	pb = pool_new(f, q, 2, 300000);
	assert_string_not_equal(sbx_pool_id(pa), sbx_pool_id(pb));
	wait_idle(pa, 2);
	wait_idle(pb, 2);
	/* Three takes each: two from the pool, one made on the spot or refilled. */
	for (int i = 0; i < 6; i++) {
		sbx_pool *pool = i % 2 ? pb : pa;
		const char *want = i % 2 ? tb : t_tenant();
		sbx_sandbox *s = NULL;
		json_t *j;

		assert_true(sbx_pool_take(&s, pool) >= 0);
		j = inspect(s);
		assert_string_equal(label_of(j, "io.sandboxio.tenant"), want);
		assert_string_equal(label_of(j, "io.sandboxio.pool"), sbx_pool_id(pool));
		assert_string_equal(sbx_policy_tenant(sbx_sandbox_policy(s)), want);
		json_decref(j);
		assert_int_equal(sbx_sandbox_close(s), 0);
	}
	assert_int_equal(sbx_pool_free(pa), 0);
	assert_int_equal(sbx_pool_free(pb), 0);
	sbx_policy_free(q);
}

/* Takes from several threads: each sandbox is handed out once. */
struct taker {
	sbx_pool *pool;
	sbx_sandbox *s;
	int rc;
};

static void *take_main(void *arg)
{
	struct taker *t = arg;

	t->rc = sbx_pool_take(&t->s, t->pool);
	return NULL;
}

static void test_docker_pool__threads_take_once(void **state)
{
	struct fx *f = *state;
	sbx_pool *pool = pool_new(f, NULL, 4, 300000);
	struct taker t[6];
	pthread_t th[6];
	int from_pool = 0;

	wait_idle(pool, 4);
	for (int i = 0; i < 6; i++) {
		t[i] = (struct taker){.pool = pool};
		assert_int_equal(pthread_create(&th[i], NULL, take_main, &t[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 6; i++) {
		assert_true(t[i].rc == 0 || t[i].rc == 1);
		from_pool += t[i].rc == 0;
		for (int k = 0; k < i; k++)
			assert_string_not_equal(sbx_sandbox_id(t[i].s), sbx_sandbox_id(t[k].s));
	}
	assert_true(from_pool >= 4);
	for (int i = 0; i < 6; i++)
		assert_int_equal(sbx_sandbox_close(t[i].s), 0);
	assert_int_equal(sbx_pool_free(pool), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(test_docker_pool__##name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(dead_owner_is_reaped),    T(take_is_live_and_labelled),
		T(once_never_back_refills), T(miss_creates_and_says_so),
		T(max_age_replaces),	    T(free_removes_idle),
		T(tenants_never_cross),	    T(threads_take_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
