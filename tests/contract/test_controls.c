/*
 * tests/contract/test_controls.c: the six controls of ADR-0005, one suite
 * for every backend. SBX_TEST_BACKEND names the backend (docker when unset);
 * tests/contract/run-remote.sh runs the suite again on e2b through
 * `sandboxio serve --api e2b` and on modal through the Modal double, both
 * backed by this machine's engine, so the canary hosts prove deny and
 * allow there too.
 *
 * Each case states one claim and fails if it is false: egress is denied by
 * default and an allowlist admits only what it lists (the canaries' own
 * record of arrivals, not the client's error), a run's deadline ends it,
 * unbounded is refused, caps apply (or, where a provider sets them, a
 * policy they exceed is refused naming the values), close leaves nothing
 * listed, a secret reaches only its run and never the output, tenants do
 * not see each other's sandboxes, and input, output, exit codes and files
 * cross intact.
 *
 * SBX_TEST_TIER=gvisor runs every case with the policy's least tier at
 * gvisor (the engine's runsc runtimes): the same claims, on gVisor's kernel,
 * allowlists included (the runtime runsc-hostinet, which setup.sh
 * registers).
 *
 * SBX_TEST_REAL=1 marks a run against a real provider: the canary cases
 * are skipped there (a provider's sandbox must never be pointed at an
 * address this machine owns), and so is the tier case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <cmocka.h>

#include "canary/canary.h"
#include "canary/probe.h"
#include "support/engine.h"

static const char *backend_name(void)
{
	const char *b = getenv("SBX_TEST_BACKEND");

	return b && *b ? b : "docker";
}

static int is_backend(const char *name)
{
	return strcmp(backend_name(), name) == 0;
}

static int real_provider(void)
{
	const char *r = getenv("SBX_TEST_REAL");

	return r && strcmp(r, "1") == 0;
}

/* The least tier every case asks for (SBX_TEST_TIER; container when unset). */
static sbx_tier test_tier(void)
{
	const char *t = getenv("SBX_TEST_TIER");
	sbx_tier tier = SBX_TIER_CONTAINER;

	if (t && *t && sbx_tier_parse(&tier, t) != 0)
		fail_msg("SBX_TEST_TIER=%s: not a tier", t);
	return tier;
}

static sbx_backend *open_backend(void)
{
	sbx_backend *b = NULL;

	if (sbx_backend_open(&b, backend_name(), NULL) != 0)
		fail_msg("backend_open %s: %s", backend_name(), sbx_error_last()->message);
	return b;
}

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
	struct canary_set *c;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (is_backend("docker") && !t_engine_ready()) {
		fprintf(stderr, "contract: dockerd or the default image is missing\n");
		free(f);
		return -1;
	}
	f->b = open_backend();
	f->p = t_policy();
	if (sbx_policy_set_min_tier(f->p, test_tier()) != 0) {
		fprintf(stderr, "contract: %s\n", sbx_error_last()->message);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	sbx_sandbox_close(f->s);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	canary_stop(f->c);
	free(f);
	return 0;
}

static void create(struct fx *f)
{
	if (sbx_sandbox_create(&f->s, f->b, f->p) != 0)
		fail_msg("create on %s: %s", backend_name(), sbx_error_last()->message);
}

static sbx_result *run_argv(sbx_sandbox *s, const char *const *argv, const sbx_run_options *o)
{
	sbx_result *r = NULL;

	if (sbx_sandbox_run(&r, s, argv, o) != 0)
		fail_msg("run %s: %s", argv[0], sbx_error_last()->message);
	return r;
}

/* Runs the canary probe with the given triples; returns its stdout (free it). */
static char *probe(sbx_sandbox *s, const char *const *triples)
{
	const char *argv[16] = {"python3", "-c", CANARY_PROBE_PY};
	sbx_result *r;
	char *out;
	int n = 3;

	for (; triples[n - 3] && n < 15; n++)
		argv[n] = triples[n - 3];
	argv[n] = NULL;
	r = run_argv(s, argv, NULL);
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		fail_msg("probe: status %s code %d: %s", sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	out = strdup(r->stdout_data);
	sbx_result_free(r);
	return out;
}

static int canaries(struct fx *f, int n)
{
	if (real_provider() || !canary_supported()) {
		print_message("skipped: canary hosts need root on this machine and a local "
			      "backend\n");
		return 0;
	}
	if (canary_start(&f->c, n) != 0)
		fail_msg("canary_start failed");
	return 1;
}

/* ===== 1. No network by default; an allowlist admits only what it lists ===== */

static void test_controls__deny_by_default(void **state)
{
	struct fx *f = *state;
	const struct canary *c0;
	char *out;

	if (!canaries(f, 1))
		skip();
	c0 = canary_get(f->c, 0);
	create(f);
	{
		const char *t[] = {"tcp",     c0->addr4, "80",	 "udp",	    c0->addr4, "7", "dns",
				   c0->addr4, "53",	 "icmp", c0->addr4, "0",       NULL};
		out = probe(f->s, t);
	}
	assert_null(strstr(out, " ok"));
	free(out);
	/* The canary's own record: nothing arrived, of any protocol. */
	assert_int_equal(canary_arrivals_all(f->c), 0);
}

static void test_controls__allowlist_admits_only_listed(void **state)
{
	struct fx *f = *state;
	const struct canary *c0, *c1;
	char *out, line[128];

	if (!canaries(f, 2))
		skip();
	c0 = canary_get(f->c, 0);
	c1 = canary_get(f->c, 1);
	assert_int_equal(sbx_policy_allow_cidr(f->p, c0->addr4, 0), 0);
	/* On the gvisor tier too: the same canaries, the same outcome. */
	create(f);
	assert_int_equal(sbx_sandbox_tier(f->s), test_tier());
	{
		const char *t[] = {"tcp", c0->addr4, "80",	"tcp", c1->addr4,
				   "80",  "udp",     c1->addr4, "7",   NULL};
		out = probe(f->s, t);
	}
	snprintf(line, sizeof(line), "tcp %s 80 ok HTTP/1.0 200", c0->addr4);
	if (!strstr(out, line))
		fail_msg("the listed canary was not reached: %s", out);
	snprintf(line, sizeof(line), "tcp %s 80 ok", c1->addr4);
	assert_null(strstr(out, line));
	free(out);
	assert_true(canary_arrivals(f->c, 0, CANARY_TCP) >= 1);
	assert_int_equal(canary_arrivals(f->c, 1, CANARY_ANY), 0);
}

/*
 * A run cannot speak for the init. On the container tier PID 1 is out of a
 * run's reach: bytes a run writes at /proc/1/fd/1 go nowhere and the next
 * run is its own. gVisor's kernel lets a run open PID 1's descriptors, so
 * there a malformed frame ends the sandbox (never taken as a frame), and a
 * run with a secret never uses the channel (docker exec), so its request
 * is not there to be read (docs/threat-model.md, the gvisor tier).
 */
static void test_controls__runs_cannot_reach_the_channel(void **state)
{
	struct fx *f = *state;
	const char *w = "printf 'noise' > /proc/1/fd/1 2>/dev/null; sleep 1; true";
	const char *argv[] = {"sh", "-c", "printf %s \"$K\"", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_secrets *sec = NULL;
	sbx_result *r = NULL;
	int rc;

	if (!is_backend("docker"))
		skip();
	create(f);
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "K", "chan-secret-1", 13), 0);
	o.secrets = sec;
	o.raw_output = 1;
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, &o), 0);
	assert_string_equal(r->stdout_data, "chan-secret-1");
	if (test_tier() == SBX_TIER_GVISOR)
		assert_int_equal(r->path, SBX_RUN_PATH_EXEC);
	sbx_result_free(r);
	r = NULL;
	rc = sbx_sandbox_run(&r, f->s, (const char *[]){"sh", "-c", w, NULL}, NULL);
	if (test_tier() == SBX_TIER_GVISOR) {
		/* Either the noise broke the protocol (the sandbox was ended), or
		 * it came after the run's end and the next run finds it so. */
		if (rc == 0) {
			sbx_result_free(r);
			r = NULL;
			rc = sbx_sandbox_run(&r, f->s, (const char *[]){"echo", "mine", NULL},
					     NULL);
		}
		if (rc == 0)
			fail_msg("noise on the channel was taken: %s", r->stdout_data);
		assert_non_null(strstr(sbx_error_last()->message, "protocol"));
	} else {
		assert_int_equal(rc, 0);
		sbx_result_free(r);
		r = t_run(f->s, "echo mine", NULL);
		assert_string_equal(r->stdout_data, "mine\n");
	}
	sbx_result_free(r);
	sbx_secrets_free(sec);
}

/* ===== 2. Mandatory timeouts ===== */

static void test_controls__run_deadline_ends_the_run(void **state)
{
	struct fx *f = *state;
	const char *sleeper[] = {"sleep", "60", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r;

	create(f);
	o.timeout_ms = 2000;
	r = run_argv(f->s, sleeper, &o);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	sbx_result_free(r);
	/* The sandbox outlives its run's deadline. */
	r = t_run(f->s, "echo after", NULL);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_string_equal(r->stdout_data, "after\n");
	sbx_result_free(r);
}

static void test_controls__unbounded_refused(void **state)
{
	struct fx *f = *state;

	assert_int_equal(sbx_policy_set_timeout_ms(f->p, SBX_TIMEOUT_RUN, 0), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_timeout_ms(f->p, SBX_TIMEOUT_SANDBOX, 0), SBX_EINVALID);
	assert_int_equal(sbx_policy_set_timeout_ms(f->p, SBX_TIMEOUT_CREATE, 0), SBX_EINVALID);
	assert_true(sbx_policy_timeout_ms(f->p, SBX_TIMEOUT_RUN) > 0);
}

/* ===== 3. Caps always applied ===== */

static void test_controls__open_files_cap_applies(void **state)
{
	struct fx *f = *state;
	sbx_result *r;

	assert_int_equal(sbx_policy_set_limit(f->p, SBX_LIMIT_NOFILE, 300), 0);
	create(f);
	r = t_run(f->s, "ulimit -n; ulimit -Hn", NULL);
	assert_string_equal(r->stdout_data, "300\n300\n");
	sbx_result_free(r);
}

static void test_controls__memory_cap_applies_or_is_refused(void **state)
{
	struct fx *f = *state;
	const char *hog[] = {"python3", "-c", "b = bytearray(400 << 20); print('allocated')", NULL};
	sbx_result *r;
	int rc;

	assert_int_equal(sbx_policy_set_limit(f->p, SBX_LIMIT_MEMORY, 128ll << 20), 0);
	rc = sbx_sandbox_create(&f->s, f->b, f->p);
	if (is_backend("e2b")) {
		/* E2B sets memory per template: a policy below it is refused,
		 * naming both values, and nothing is left behind. */
		assert_int_equal(rc, SBX_EDENIED);
		assert_non_null(strstr(sbx_error_last()->message, "memory"));
		assert_non_null(strstr(sbx_error_last()->message, "128"));
		return;
	}
	if (rc != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	r = run_argv(f->s, hog, NULL);
	assert_false(r->status == SBX_RUN_EXITED && r->exit_code == 0);
	assert_null(strstr(r->stdout_data, "allocated"));
	if (is_backend("docker")) {
		/* Told as an OOM on both tiers: on gvisor the host's OOM killer
		 * ends the Sentry with the run, and the Engine's "oom" event is
		 * the witness, not a lost channel. */
		assert_int_equal(r->status, SBX_RUN_OOM);
		assert_true(r->limits_hit & SBX_HIT_MEMORY);
	}
	sbx_result_free(r);
}

/* ===== 4. Guaranteed teardown ===== */

struct seen {
	const char *id;
	int found;
	int count;
};

static int list_cb(const sbx_sandbox_info *info, void *payload)
{
	struct seen *s = payload;

	s->count++;
	if (s->id && strcmp(info->id, s->id) == 0)
		s->found = 1;
	return 0;
}

static void test_controls__close_leaves_nothing(void **state)
{
	struct fx *f = *state;
	struct seen seen = {0};
	sbx_sandbox *again = NULL;
	char *id;

	create(f);
	id = strdup(sbx_sandbox_id(f->s));
	seen.id = id;
	assert_int_equal(sbx_backend_list(f->b, t_tenant(), list_cb, &seen), 0);
	assert_true(seen.found);
	assert_int_equal(sbx_sandbox_close(f->s), 0);
	f->s = NULL;
	memset(&seen, 0, sizeof(seen));
	seen.id = id;
	assert_int_equal(sbx_backend_list(f->b, t_tenant(), list_cb, &seen), 0);
	assert_false(seen.found);
	assert_int_equal(sbx_sandbox_open(&again, f->b, id), SBX_ENOTFOUND);
	free(id);
}

/* ===== 5. Secrets reach their run only, and never the output ===== */

static void test_controls__secret_reaches_only_its_run(void **state)
{
	struct fx *f = *state;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	unsigned char raw[12];
	char value[64], expect[80];
	const char *env[] = {expect, NULL};
	const char *cmd = "test \"$SBX_TOKEN\" = \"$EXPECT\" && echo \"got $SBX_TOKEN\"";
	sbx_secrets *sec = NULL;
	sbx_result *r;

	assert_int_equal(getrandom(raw, sizeof(raw), 0), (ssize_t)sizeof(raw));
	strcpy(value, "tok-");
	for (size_t i = 0; i < sizeof(raw); i++)
		sprintf(value + 4 + 2 * i, "%02x", raw[i]);
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "SBX_TOKEN", value, strlen(value)), 0);
	create(f);
	o.secrets = sec;
	/* The program gets the value (it compares it with a plain copy) and
	 * prints it. */
	snprintf(expect, sizeof(expect), "EXPECT=%s", value);
	o.env = env;
	r = t_run(f->s, cmd, &o);
	assert_int_equal(r->exit_code, 0);
	assert_null(strstr(r->stdout_data, value));
	assert_string_equal(r->stdout_data, "got <redacted>\n");
	sbx_result_free(r);
	/* A run without the secret does not see it: it is not sandbox-wide. */
	r = t_run(f->s, "echo \"${SBX_TOKEN:-unset}\"", NULL);
	assert_string_equal(r->stdout_data, "unset\n");
	sbx_result_free(r);
	sbx_secrets_free(sec);
}

/* ===== 6. One sandbox per tenant-run ===== */

static void test_controls__tenants_do_not_see_each_other(void **state)
{
	struct fx *f = *state;
	sbx_policy *other = t_policy();
	sbx_sandbox *o = NULL;
	char tenant[96];
	struct seen seen = {0};

	snprintf(tenant, sizeof(tenant), "%s-other", t_tenant());
	assert_int_equal(sbx_policy_set_tenant(other, tenant), 0);
	create(f);
	if (sbx_sandbox_create(&o, f->b, other) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	seen.id = sbx_sandbox_id(o);
	assert_int_equal(sbx_backend_list(f->b, t_tenant(), list_cb, &seen), 0);
	assert_false(seen.found);
	assert_int_equal(seen.count, 1);
	memset(&seen, 0, sizeof(seen));
	seen.id = sbx_sandbox_id(f->s);
	assert_int_equal(sbx_backend_list(f->b, tenant, list_cb, &seen), 0);
	assert_false(seen.found);
	assert_int_equal(seen.count, 1);
	assert_string_not_equal(sbx_sandbox_id(o), sbx_sandbox_id(f->s));
	sbx_sandbox_close(o);
	sbx_policy_free(other);
}

/* ===== Runs and files cross intact ===== */

static void test_controls__io_and_exit_codes(void **state)
{
	struct fx *f = *state;
	const char *cat[] = {"cat", NULL};
	static const char bin[] = "a\0b\nc\xff";
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	void *back = NULL;
	size_t len = 0;
	sbx_result *r;

	create(f);
	r = t_run(f->s, "echo out; echo err >&2; exit 3", NULL);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 3);
	assert_string_equal(r->stdout_data, "out\n");
	assert_string_equal(r->stderr_data, "err\n");
	sbx_result_free(r);
	o.stdin_data = "from stdin\n";
	o.stdin_len = strlen("from stdin\n");
	r = run_argv(f->s, cat, &o);
	assert_string_equal(r->stdout_data, "from stdin\n");
	sbx_result_free(r);
	if (sbx_sandbox_write_file(f->s, "/tmp/sbx-bin", bin, sizeof(bin) - 1, 0600) != 0)
		fail_msg("write_file: %s", sbx_error_last()->message);
	if (sbx_sandbox_read_file(&back, &len, f->s, "/tmp/sbx-bin", 0) != 0)
		fail_msg("read_file: %s", sbx_error_last()->message);
	assert_int_equal(len, sizeof(bin) - 1);
	assert_memory_equal(back, bin, len);
	sbx_free(back);
	assert_int_equal(sbx_sandbox_read_file(&back, &len, f->s, "/tmp/none", 0), SBX_ENOTFOUND);
	/* A run as the sandbox's root: uid 0 with no capability on docker; a
	 * provider's root is root with its powers, so the others refuse it. */
	o = (sbx_run_options)SBX_RUN_OPTIONS_INIT;
	o.as_root = 1;
	if (is_backend("docker")) {
		r = t_run(f->s, "id -u; grep CapEff /proc/self/status", &o);
		assert_string_equal(r->stdout_data, "0\nCapEff:\t0000000000000000\n");
		sbx_result_free(r);
	} else {
		r = NULL;
		assert_int_equal(sbx_sandbox_run(&r, f->s, cat, &o), SBX_EUNSUPPORTED);
		assert_non_null(strstr(sbx_error_last()->message, "as_root"));
		assert_null(r);
	}
}

/* ===== Isolation tier ===== */

static void test_controls__tier_is_reported_and_demands_are_kept(void **state)
{
	struct fx *f = *state;
	sbx_tier t;

	if (real_provider())
		skip();
	create(f);
	t = sbx_sandbox_tier(f->s);
	/* Every local path (the engine, and the servers backed by it) runs
	 * containers, or gVisor when asked; none may claim more than it gives. */
	assert_int_equal(t, test_tier());
	sbx_sandbox_close(f->s);
	f->s = NULL;
	assert_int_equal(sbx_policy_set_min_tier(f->p, SBX_TIER_MICROVM), 0);
	assert_true(sbx_sandbox_create(&f->s, f->b, f->p) < 0);
	assert_null(f->s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_controls__deny_by_default),
		T(test_controls__allowlist_admits_only_listed),
		T(test_controls__runs_cannot_reach_the_channel),
		T(test_controls__run_deadline_ends_the_run),
		T(test_controls__unbounded_refused),
		T(test_controls__open_files_cap_applies),
		T(test_controls__memory_cap_applies_or_is_refused),
		T(test_controls__close_leaves_nothing),
		T(test_controls__secret_reaches_only_its_run),
		T(test_controls__tenants_do_not_see_each_other),
		T(test_controls__io_and_exit_codes),
		T(test_controls__tier_is_reported_and_demands_are_kept),
#undef T
	};
	char name[64];

	snprintf(name, sizeof(name), "controls on %s, tier %s", backend_name(),
		 sbx_tier_name(test_tier()));
	return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}
