/*
 * tests/unit/engine/test_docker_tiers.c: which runtimes the docker backend
 * needs for the gvisor tier, and that it refuses, naming what is missing,
 * before it asks the Engine for anything. A scripted Engine answers /info
 * with the runtimes a daemon could have; the real daemon of the test
 * machine has both (scripts/setup.sh), so only a script can lack them.
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

#include "engine/docker-int.h"
#include "support/fake_engine.h"

static const struct fake_route no_runsc[] = {
	{"GET", "/info", 200, "{\"Runtimes\":{\"runc\":{\"path\":\"runc\"}}}"},
};
static const struct fake_route runsc_only[] = {
	{"GET", "/info", 200,
	 "{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\"}}}"},
};

static const struct fake_route runsc_both[] = {
	{"GET", "/info", 200,
	 "{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\"},"
	 "\"runsc-hostinet\":{\"path\":\"/usr/bin/runsc\"}}}"},
};

static sbx_backend *open_on(struct fake_engine *fe)
{
	sbx_backend_options bo = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	char init[4096];

	assert_non_null(getcwd(init, sizeof(init) - 32));
	strcat(init, "/build/sbx-init");
	bo.socket_path = fake_engine_socket(fe);
	bo.init_path = init;
	bo.no_reap_at_open = 1;
	if (sbx_backend_open(&b, "docker", &bo) != 0)
		fail_msg("open: %s", sbx_error_last()->message);
	return b;
}

/* Creates at the gvisor tier (with an allowlist if asked); want the refusal
 * naming need, and no request to the Engine but /info. */
static void expect_refused(const struct fake_route *routes, int allow, long pids, const char *need)
{
	struct fake_engine *fe = fake_engine_start(routes, 1);
	sbx_backend *b;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;

	assert_non_null(fe);
	b = open_on(fe);
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_GVISOR), 0);
	if (allow)
		assert_int_equal(sbx_policy_allow_cidr(p, "198.18.0.1", 0), 0);
	if (pids)
		assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, pids), 0);
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

static void test_docker_tiers__gvisor_needs_runsc(void **state)
{
	(void)state;
	expect_refused(no_runsc, 0, 0, "'runsc' runtime");
}

static void test_docker_tiers__allowlist_needs_runsc_hostinet(void **state)
{
	(void)state;
	expect_refused(runsc_only, 1, 0, "'runsc-hostinet'");
}

/* The Sentry's own threads count against the cap on that tier: a cap that
 * would leave the sandbox's programs nothing is refused before any create. */
static void test_docker_tiers__gvisor_refuses_pids_below_its_floor(void **state)
{
	(void)state;
	expect_refused(runsc_both, 0, 63, "pids 63 is below 64");
	expect_refused(runsc_both, 1, 32, "pids 32 is below 64");
}

/* What the Engine is asked for on each tier: the policy's pids cap as the
 * host cgroup's on the container tier; on the gvisor tier the policy's cap
 * as the Sentry's RLIMIT_NPROC and a host cap with the Sentry's room, which
 * no caller's value but the policy's moves. */
static void test_docker_tiers__gvisor_host_pids_and_nproc(void **state)
{
	static const long caps[] = {64, 256, SBX_MAX_PIDS};
	sbx_policy *p = NULL;

	(void)state;
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx__docker_tier_host_pids(p), SBX_DEFAULT_PIDS);
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		json_t *hc = json_pack("{s:I, s:[]}", "PidsLimit", (json_int_t)caps[i], "Ulimits");
		json_t *nproc;

		assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, caps[i]), 0);
		assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_CONTAINER), 0);
		assert_int_equal(sbx__docker_tier_host_pids(p), caps[i]);
		assert_int_equal(sbx__docker_tier_hostconfig(p, hc), 0);
		assert_int_equal(json_integer_value(json_object_get(hc, "PidsLimit")), caps[i]);
		assert_int_equal(json_array_size(json_object_get(hc, "Ulimits")), 0);

		assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_GVISOR), 0);
		assert_int_equal(sbx__docker_tier_host_pids(p),
				 SBX_GVISOR_SENTRY_PIDS + SBX_GVISOR_HOST_PIDS_PER_TASK * caps[i]);
		assert_int_equal(sbx__docker_tier_hostconfig(p, hc), 0);
		assert_int_equal(json_integer_value(json_object_get(hc, "PidsLimit")),
				 SBX_GVISOR_SENTRY_PIDS + SBX_GVISOR_HOST_PIDS_PER_TASK * caps[i]);
		assert_string_equal(json_string_value(json_object_get(hc, "Runtime")),
				    SBX_RUNTIME_GVISOR);
		nproc = json_array_get(json_object_get(hc, "Ulimits"), 0);
		assert_string_equal(json_string_value(json_object_get(nproc, "Name")), "nproc");
		assert_int_equal(json_integer_value(json_object_get(nproc, "Soft")), caps[i]);
		assert_int_equal(json_integer_value(json_object_get(nproc, "Hard")), caps[i]);
		json_decref(hc);
	}
	sbx_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_tiers__gvisor_needs_runsc),
		cmocka_unit_test(test_docker_tiers__allowlist_needs_runsc_hostinet),
		cmocka_unit_test(test_docker_tiers__gvisor_refuses_pids_below_its_floor),
		cmocka_unit_test(test_docker_tiers__gvisor_host_pids_and_nproc),
	};

	return cmocka_run_group_tests_name("docker tiers", tests, NULL, NULL);
}
