/*
 * tests/unit/engine/test_docker_remove.c: removing a container
 * (sbx__docker_remove) says "gone" only once the Engine is done with it.
 *
 * After a kill, dockerd's AutoRemove removes the container on its own, and a
 * DELETE that arrives meanwhile is answered 409 ("removal already in
 * progress") while the container is still listed. A scripted Engine gives
 * each answer that a real dockerd gives only in a narrow race, so every path
 * is taken on every run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "engine/docker-int.h"
#include "support/fake_engine.h"
#include "util/error-int.h"

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

static void test_remove__done_at_once(void **state)
{
	static const struct fake_route r[] = {{"DELETE", "/containers/box1", 204, ""}};
	struct fx f;

	(void)state;
	start(&f, r, 1);
	assert_int_equal(sbx__docker_remove(&f.d, "box1"), 0);
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/box1"), 1);
	assert_int_equal(fake_engine_count(f.fe, "POST", "/containers/box1/wait"), 0);
	stop(&f);
}

static void test_remove__already_gone(void **state)
{
	static const struct fake_route r[] = {
		{"DELETE", "/containers/box2", 404, "{\"message\":\"No such container: box2\"}"}};
	struct fx f;

	(void)state;
	start(&f, r, 1);
	assert_int_equal(sbx__docker_remove(&f.d, "box2"), 0);
	assert_int_equal(fake_engine_count(f.fe, "POST", "/containers/box2/wait"), 0);
	stop(&f);
}

/* The race of a SIGTERM during a run: the kill made dockerd start removing
 * it, so the DELETE is refused, and close must wait for the removal. */
static void test_remove__in_progress_waits_for_removal(void **state)
{
	static const struct fake_route r[] = {
		{"DELETE", "/containers/box3", 409,
		 "{\"message\":\"removal of container box3 is already in progress\"}"},
		{"POST", "/containers/box3/wait", 200, "{\"StatusCode\":137}"},
	};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_remove(&f.d, "box3"), 0);
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/box3"), 1);
	assert_int_equal(fake_engine_count(f.fe, "POST", "/containers/box3/wait"), 1);
	stop(&f);
}

/* Removed between the 409 and the wait: the wait's 404 means it is gone. */
static void test_remove__in_progress_then_gone(void **state)
{
	static const struct fake_route r[] = {
		{"DELETE", "/containers/box4", 409, "{\"message\":\"removal in progress\"}"},
		{"POST", "/containers/box4/wait", 404, "{\"message\":\"No such container: box4\"}"},
	};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__docker_remove(&f.d, "box4"), 0);
	assert_int_equal(fake_engine_count(f.fe, "POST", "/containers/box4/wait"), 1);
	stop(&f);
}

/* A wait that fails is an error: nobody may be told the sandbox is gone. */
static void test_remove__wait_fails(void **state)
{
	static const struct fake_route r[] = {
		{"DELETE", "/containers/box5", 409, "{\"message\":\"removal in progress\"}"},
		{"POST", "/containers/box5/wait", 500, "{\"message\":\"engine broke\"}"},
	};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_true(sbx__docker_remove(&f.d, "box5") < 0);
	assert_non_null(strstr(sbx_error_last()->message, "engine broke"));
	stop(&f);
}

/* Podman answers the force removal of a frozen container with 500
 * "container state improper: stopped" once it has stopped it: asked once
 * more, never more than that. */
static void test_remove__podman_improper_state_asked_again(void **state)
{
	static const struct fake_route r[] = {
		{"DELETE", "/containers/box5", 500,
		 "{\"cause\":\"container state improper\",\"message\":\"container state "
		 "improper: stopped\",\"response\":500}"}};
	struct fx f;

	(void)state;
	start(&f, r, 1);
	assert_true(sbx__docker_remove(&f.d, "box5") < 0);
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/box5"), 2);
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remove__done_at_once),
		cmocka_unit_test(test_remove__already_gone),
		cmocka_unit_test(test_remove__in_progress_waits_for_removal),
		cmocka_unit_test(test_remove__in_progress_then_gone),
		cmocka_unit_test(test_remove__wait_fails),
		cmocka_unit_test(test_remove__podman_improper_state_asked_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
