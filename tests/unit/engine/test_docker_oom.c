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

/* One case: the Engine's answers to the wait and to /events, the verdict,
 * and how many times the log was asked. */
struct oom_case {
	const char *what;
	unsigned wait_status;
	const char *wait_body, *events;
	int oom, asked;
};

static const struct oom_case cases[] = {
	/* The event is in the log when the end is: one look. */
	{"logged before the end", 200, "{\"StatusCode\":137}", OOM_EVENT, 1, 1},
	/* Killed (137) with no event yet: the log is followed, a second call. */
	{"SIGKILL, no event yet", 200, "{\"StatusCode\":137}", "", 0, 2},
	/* Gone already (AutoRemove): how it ended is unknown, so followed too. */
	{"gone already", 404, "{\"message\":\"No such container\"}", "", 0, 2},
	/* Any other end was not the OOM killer's: no wait for an event. */
	{"another end", 200, "{\"StatusCode\":1}", "", 0, 1},
	/* An Engine that fails the wait cannot tell: not an OOM, nothing asked. */
	{"the wait failed", 500, "{\"message\":\"boom\"}", OOM_EVENT, 0, 0},
};

static void test_oom__each_order_of_end_and_event(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct oom_case *c = &cases[i];
		const struct fake_route r[] = {
			{"POST", "/containers/box1/wait", c->wait_status, c->wait_body},
			{"GET", "/events", 200, c->events}};
		struct fx f;
		int oom, asked;

		start(&f, r, 2);
		oom = sbx__docker_ended_by_oom(&f.d, "box1", 1);
		asked = fake_engine_count(f.fe, "GET", "/events");
		if (oom != c->oom || asked != c->asked)
			fail_msg("%s: oom %d, /events asked %d times", c->what, oom, asked);
		stop(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom__each_order_of_end_and_event),
	};

	return cmocka_run_group_tests_name("docker: ended by the memory cap", tests, NULL, NULL);
}
