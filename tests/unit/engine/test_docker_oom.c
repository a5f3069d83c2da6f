/*
 * tests/unit/engine/test_docker_oom.c: whether the memory cap ended a
 * sandbox (sbx__docker_ended_by_oom), the Engine's "oom" event being the
 * witness.
 *
 * The runtime reports an OOM and the end it caused on two paths, and on a
 * loaded host the end can reach dockerd's log first: a sandbox that a
 * SIGKILL ended (137) has the log followed until the event comes; any other
 * end is not the OOM killer's and is judged at once. A scripted Engine
 * gives each order on every run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "engine/docker-int.h"
#include "support/fake_engine.h"

#define OOM_EVENT                                                                                  \
	"{\"Type\":\"container\",\"Action\":\"oom\",\"Actor\":{\"ID\":\"box1\"},\"time\":1}\n"

struct fx {
	struct fake_engine *fe;
	struct sbx__docker d;
};

static void start(struct fx *f, const struct fake_route *routes, int n)
{
	memset(f, 0, sizeof(*f));
	f->fe = fake_engine_start(routes, n);
	assert_non_null(f->fe);
	assert_int_equal(sbx__http_init(&f->d.http, fake_engine_socket(f->fe), 5000), 0);
}

static void stop(struct fx *f)
{
	sbx__http_done(&f->d.http);
	fake_engine_stop(f->fe);
}

/* The event is in the log when the end is: one look. */
static void test_oom__logged_before_the_end(void **state)
{
	static const struct fake_route r[] = {
		{"POST", "/containers/box1/wait", 200, "{\"StatusCode\":137}"},
		{"GET", "/events", 200, OOM_EVENT}};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_ended_by_oom(&f.d, "box1", 1), 1);
	assert_int_equal(fake_engine_count(f.fe, "GET", "/events"), 1);
	stop(&f);
}

/* Killed (137) with no event yet: the log is followed, a second call. */
static void test_oom__sigkill_follows_the_log(void **state)
{
	static const struct fake_route r[] = {
		{"POST", "/containers/box1/wait", 200, "{\"StatusCode\":137}"},
		{"GET", "/events", 200, ""}};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_ended_by_oom(&f.d, "box1", 1), 0);
	assert_int_equal(fake_engine_count(f.fe, "GET", "/events"), 2);
	stop(&f);
}

/* Gone already (AutoRemove): how it ended is unknown, so followed too. */
static void test_oom__gone_follows_the_log(void **state)
{
	static const struct fake_route r[] = {
		{"POST", "/containers/box1/wait", 404, "{\"message\":\"No such container\"}"},
		{"GET", "/events", 200, ""}};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_ended_by_oom(&f.d, "box1", 1), 0);
	assert_int_equal(fake_engine_count(f.fe, "GET", "/events"), 2);
	stop(&f);
}

/* Any other end was not the OOM killer's: no wait for an event. */
static void test_oom__other_end_judged_at_once(void **state)
{
	static const struct fake_route r[] = {
		{"POST", "/containers/box1/wait", 200, "{\"StatusCode\":1}"},
		{"GET", "/events", 200, ""}};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_ended_by_oom(&f.d, "box1", 1), 0);
	assert_int_equal(fake_engine_count(f.fe, "GET", "/events"), 1);
	stop(&f);
}

/* An Engine that fails the wait cannot tell: not an OOM, nothing asked. */
static void test_oom__engine_error_is_not_oom(void **state)
{
	static const struct fake_route r[] = {
		{"POST", "/containers/box1/wait", 500, "{\"message\":\"boom\"}"},
		{"GET", "/events", 200, OOM_EVENT}};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_ended_by_oom(&f.d, "box1", 1), 0);
	assert_int_equal(fake_engine_count(f.fe, "GET", "/events"), 0);
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom__logged_before_the_end),
		cmocka_unit_test(test_oom__sigkill_follows_the_log),
		cmocka_unit_test(test_oom__gone_follows_the_log),
		cmocka_unit_test(test_oom__other_end_judged_at_once),
		cmocka_unit_test(test_oom__engine_error_is_not_oom),
	};

	return cmocka_run_group_tests_name("docker: ended by the memory cap", tests, NULL, NULL);
}
