/*
 * tests/unit/engine/test_docker_labels.c: the limits label that a docker
 * sandbox carries, read back by sbx_sandbox_open().
 *
 * Sandboxes made by earlier versions carry "io.sandboxio.limits" as
 * "cpu=...,memory=...,pids=...,disk=...,nofile=...,output=...", and opening
 * one must give back every cap under exactly those words; a label without
 * one of them is refused naming the word. A scripted Engine answers the
 * inspect, so no container is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "support/fake_engine.h"

#define LABELS_HEAD                                                                                \
	"{\"Id\":\"%s\",\"Config\":{\"Image\":\"sandboxio/python:3.11\",\"Labels\":{"              \
	"\"io.sandboxio.managed-by\":\"sandboxio\",\"io.sandboxio.tenant\":\"t1\","                \
	"\"io.sandboxio.workdir\":\"/workspace\","                                                 \
	"\"io.sandboxio.timeouts\":\"run=1000,run_code=2000\","                                    \
	"\"io.sandboxio.limits\":\"%s\"}},\"State\":{\"Pid\":0},"                                  \
	"\"HostConfig\":{\"Runtime\":\"runc\"}}"

static char full_body[1024], short_body[1024];

static const struct fake_route routes[] = {
	{"GET", "/info", 200, "{}"},
	{"GET", "/containers/labelsfull/json", 200, full_body},
	{"GET", "/containers/labelsshort/json", 200, short_body},
};

struct fx {
	struct fake_engine *fe;
	sbx_backend *b;
};

static int fx_setup(void **state)
{
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	struct fx *f = calloc(1, sizeof(*f));
	char init[4096];

	if (!f || !getcwd(init, sizeof(init) - 32))
		return -1;
	strcat(init, "/build/sbx-init");
	snprintf(full_body, sizeof(full_body), LABELS_HEAD, "labelsfull",
		 "cpu=1500,memory=1073741824,pids=300,disk=2147483648,nofile=2048,output=1048576");
	snprintf(short_body, sizeof(short_body), LABELS_HEAD, "labelsshort",
		 "cpu=1500,memory=1073741824,pids=300,disk=2147483648,output=1048576");
	f->fe = fake_engine_start(routes, 3);
	if (!f->fe)
		return -1;
	bo.socket_path = fake_engine_socket(f->fe);
	bo.init_path = init;
	bo.no_reap_at_open = 1;
	if (sbx_backend_open(&f->b, "docker", &bo) != 0) {
		fprintf(stderr, "open: %s\n", sbx_error_last()->message);
		return -1;
	}
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	sbx_backend_free(f->b);
	fake_engine_stop(f->fe);
	free(f);
	return 0;
}

static void test_docker_labels__every_limit_read_back(void **state)
{
	struct fx *f = *state;
	sbx_sandbox *s = NULL;
	const sbx_policy *p;

	if (sbx_sandbox_open(&s, f->b, "labelsfull") != 0)
		fail_msg("open: %s", sbx_error_last()->message);
	p = sbx_sandbox_policy(s);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_CPU_MILLI), 1500);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_MEMORY), 1ll << 30);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_PIDS), 300);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_DISK), 2ll << 30);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_NOFILE), 2048);
	assert_int_equal(sbx_policy_limit(p, SBX_LIMIT_OUTPUT), 1ll << 20);
	assert_int_equal(sbx_policy_timeout_ms(p, SBX_TIMEOUT_RUN), 1000);
	assert_int_equal(sbx_policy_timeout_ms(p, SBX_TIMEOUT_RUN_CODE), 2000);
	sbx_sandbox_detach(s);
}

static void test_docker_labels__missing_word_named(void **state)
{
	struct fx *f = *state;
	sbx_sandbox *s = NULL;

	assert_int_equal(sbx_sandbox_open(&s, f->b, "labelsshort"), SBX_EINVALID);
	assert_null(s);
	assert_string_equal(sbx_error_last()->message,
			    "sandbox 'labelsshort': label limits has a bad nofile");
}

#define T(name) cmocka_unit_test_setup_teardown(test_docker_labels__##name, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(every_limit_read_back),
		T(missing_word_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
