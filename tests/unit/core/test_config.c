/*
 * tests/unit/core/test_config.c: unit tests of core/config*.c, the operator
 * config.
 *
 * Covers strict parsing (the example, unknown and duplicate keys,
 * wrong types, values that would unset a control, values outside the
 * built-in range, defaults above ceilings, lists), the search order and the
 * file-permission check (files under a mkdtemp directory), the precedence of
 * the merge (built-in < operator defaults < request), every ceiling (above
 * is refused with a message naming the ceiling and the file, at the ceiling
 * is accepted), images, backends, tenant, tier floor, the secrets and egress
 * hooks, the description behind `config --effective`, and that
 * docs/config.md documents every key of the parser's table.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <sandboxio.h>

#include "core/config-int.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define ORIGIN "test.json"
#define SENTINEL ((void *)0x5b5b)

/* The example, as an operator would write it. */
static const char example[] =
	"{\"defaults\": {\"timeout\": 300, \"cpus\": 1, \"memory\": \"512m\", \"pids\": 256, "
	"\"disk\": \"1g\"},\n"
	" \"ceilings\": {\"timeout\": 3600, \"cpus\": 2, \"memory\": \"2g\", \"pids\": 1024, "
	"\"disk\": \"4g\", \"output\": \"64m\"},\n"
	" \"images\": [\"sandboxio/python:3.11\"],\n"
	" \"egress\": {\"cidrs\": [\"198.51.100.0/24\"], \"hosts\": [\"pypi.org\"]},\n"
	" \"backends\": [\"docker\"], \"secrets\": true, \"require_tenant\": false, "
	"\"min_tier\": \"container\"}";

static void assert_msg(const char *word)
{
	const char *m = sbx_error_last()->message;

	if (!strstr(m, word))
		fail_msg("error message '%s' does not name '%s'", m, word);
}

static sbx_config *parse_ok(const char *json)
{
	sbx_config *c = NULL;

	if (sbx_config_parse(&c, json, strlen(json), ORIGIN) != 0)
		fail_msg("parse '%s': %s", json, sbx_error_last()->message);
	assert_non_null(c);
	return c;
}

/* Refused with SBX_EINVALID, naming the key path and the origin. */
static void parse_bad(const char *json, const char *key)
{
	sbx_config *c = SENTINEL;
	int rc = sbx_config_parse(&c, json, strlen(json), ORIGIN);

	if (rc != SBX_EINVALID)
		fail_msg("parse '%s': got %d, want SBX_EINVALID", json, rc);
	assert_ptr_equal(c, SENTINEL);
	assert_int_equal(sbx_error_last()->klass, SBX_ERRCLASS_POLICY);
	assert_msg(ORIGIN);
	assert_msg(key);
}

static sbx_policy *policy(void)
{
	sbx_policy *p = NULL;

	assert_int_equal(sbx_policy_new(&p), 0);
	return p;
}

/* The merge refuses with SBX_EDENIED, naming the ceiling and the origin. */
static void apply_denied(const sbx_config *c, const sbx_policy *req, const char *word)
{
	sbx_policy *eff = SENTINEL;

	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_ptr_equal(eff, SENTINEL);
	assert_int_equal(sbx_error_last()->klass, SBX_ERRCLASS_POLICY);
	assert_msg(word);
	if (sbx_config_source(c))
		assert_msg(sbx_config_source(c));
}

static sbx_policy *apply_ok(const sbx_config *c, const sbx_policy *req)
{
	sbx_policy *eff = NULL;

	if (sbx_config_apply(&eff, c, req, "docker") != 0)
		fail_msg("apply: %s", sbx_error_last()->message);
	return eff;
}

/* ===== Parsing ===== */

static void test_core_config__example_parses(void **state)
{
	sbx_config *c = parse_ok(example);

	(void)state;
	assert_string_equal(sbx_config_source(c), ORIGIN);
	assert_int_equal(sbx_config_timeout_ceiling_ms(c), 3600000);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_CPU_MILLI), 2000);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_MEMORY), 2ll << 30);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 1024);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_DISK), 4ll << 30);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_OUTPUT), 64ll << 20);
	/* Absent keys keep the built-in value. */
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_NOFILE), SBX_MAX_NOFILE);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_INVALID), 0);
	sbx_config_free(c);
}

static void test_core_config__builtin_values(void **state)
{
	sbx_config *c = parse_ok("{}");

	(void)state;
	assert_int_equal(sbx_config_timeout_ceiling_ms(NULL), SBX_MAX_TIMEOUT_MS);
	assert_int_equal(sbx_config_timeout_ceiling_ms(c), SBX_MAX_TIMEOUT_MS);
	assert_int_equal(sbx_config_limit_ceiling(NULL, SBX_LIMIT_MEMORY), SBX_MAX_MEMORY);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), SBX_MAX_PIDS);
	assert_null(sbx_config_source(NULL));
	sbx_config_free(c);
	sbx_config_free(NULL);
}

static void test_core_config__inline_origin(void **state)
{
	sbx_config *c = NULL;

	(void)state;
	assert_int_equal(sbx_config_parse(&c, "{}", 2, NULL), 0);
	assert_string_equal(sbx_config_source(c), "(inline)");
	sbx_config_free(c);
	assert_int_equal(sbx_config_parse(&c, "{\"x\":1}", 7, NULL), SBX_EINVALID);
	assert_msg("(inline)");
}

static void test_core_config__unknown_keys_refused(void **state)
{
	(void)state;
	parse_bad("{\"ceiling\": {}}", "ceiling");
	parse_bad("{\"defaults\": {\"swap\": \"1g\"}}", "defaults.swap");
	parse_bad("{\"ceilings\": {\"Memory\": \"1g\"}}", "ceilings.Memory");
	parse_bad("{\"egress\": {\"ports\": [80]}}", "egress.ports");
	parse_bad("{\"defaults\": {\"images\": []}}", "defaults.images");
	parse_bad("{\"ceilings\": {\"image\": \"x\"}}", "ceilings.image");
	/* The message lists what is known at that level. */
	parse_bad("{\"defaults\": {\"swap\": \"1g\"}}", "memory");
	parse_bad("{\"secret\": true}", "require_tenant");
}

static void test_core_config__duplicate_keys_refused(void **state)
{
	sbx_config *c = SENTINEL;
	const char *j = "{\"ceilings\": {\"memory\": \"1g\", \"memory\": \"64g\"}}";

	(void)state;
	assert_int_equal(sbx_config_parse(&c, j, strlen(j), ORIGIN), SBX_EINVALID);
	assert_ptr_equal(c, SENTINEL);
	assert_msg("duplicate");
	assert_msg(ORIGIN);
}

static void test_core_config__wrong_types_refused(void **state)
{
	static const struct {
		const char *json, *key;
	} cases[] = {
		{"{\"defaults\": {\"timeout\": \"300\"}}", "defaults.timeout"},
		{"{\"ceilings\": {\"timeout\": true}}", "ceilings.timeout"},
		{"{\"ceilings\": {\"cpus\": \"2\"}}", "ceilings.cpus"},
		{"{\"ceilings\": {\"memory\": 2147483648}}", "ceilings.memory"},
		{"{\"defaults\": {\"disk\": null}}", "defaults.disk"},
		{"{\"ceilings\": {\"pids\": 10.5}}", "ceilings.pids"},
		{"{\"ceilings\": {\"pids\": \"1024\"}}", "ceilings.pids"},
		{"{\"ceilings\": {\"output\": [\"64m\"]}}", "ceilings.output"},
		{"{\"defaults\": {\"image\": 5}}", "defaults.image"},
		{"{\"defaults\": []}", "defaults"},
		{"{\"ceilings\": \"none\"}", "ceilings"},
		{"{\"images\": \"sandboxio/python:3.11\"}", "images"},
		{"{\"images\": [1]}", "images"},
		{"{\"egress\": []}", "egress"},
		{"{\"egress\": {\"cidrs\": \"198.51.100.0/24\"}}", "egress.cidrs"},
		{"{\"egress\": {\"hosts\": [null]}}", "egress.hosts"},
		{"{\"backends\": \"docker\"}", "backends"},
		{"{\"secrets\": \"yes\"}", "secrets"},
		{"{\"secrets\": 1}", "secrets"},
		{"{\"require_tenant\": null}", "require_tenant"},
		{"{\"min_tier\": 1}", "min_tier"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		parse_bad(cases[i].json, cases[i].key);
}

static void test_core_config__unsetting_values_refused(void **state)
{
	static const struct {
		const char *json, *key;
	} cases[] = {
		{"{\"ceilings\": {\"timeout\": 0}}", "ceilings.timeout"},
		{"{\"ceilings\": {\"timeout\": -1}}", "ceilings.timeout"},
		{"{\"ceilings\": {\"timeout\": 0.0}}", "ceilings.timeout"},
		{"{\"defaults\": {\"timeout\": 0}}", "defaults.timeout"},
		{"{\"ceilings\": {\"memory\": \"0\"}}", "ceilings.memory"},
		{"{\"ceilings\": {\"memory\": \"-1g\"}}", "ceilings.memory"},
		{"{\"ceilings\": {\"memory\": \"\"}}", "ceilings.memory"},
		{"{\"ceilings\": {\"memory\": \"unlimited\"}}", "ceilings.memory"},
		{"{\"defaults\": {\"disk\": \"0k\"}}", "defaults.disk"},
		{"{\"ceilings\": {\"output\": \"0\"}}", "ceilings.output"},
		{"{\"ceilings\": {\"cpus\": 0}}", "ceilings.cpus"},
		{"{\"ceilings\": {\"cpus\": -0.5}}", "ceilings.cpus"},
		{"{\"ceilings\": {\"pids\": 0}}", "ceilings.pids"},
		{"{\"ceilings\": {\"pids\": -1}}", "ceilings.pids"},
		{"{\"ceilings\": {\"nofile\": 0}}", "ceilings.nofile"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		parse_bad(cases[i].json, cases[i].key);
	parse_bad("{\"ceilings\": {\"timeout\": 0}}", "unset");
}

static void test_core_config__outside_builtin_range_refused(void **state)
{
	static const struct {
		const char *json, *key;
	} cases[] = {
		{"{\"ceilings\": {\"timeout\": 86401}}", "ceilings.timeout"},
		{"{\"ceilings\": {\"timeout\": 1e300}}", "ceilings.timeout"},
		{"{\"ceilings\": {\"timeout\": 0.0001}}", "ceilings.timeout"},
		{"{\"ceilings\": {\"cpus\": 65}}", "ceilings.cpus"},
		{"{\"ceilings\": {\"cpus\": 0.001}}", "ceilings.cpus"},
		{"{\"ceilings\": {\"memory\": \"65g\"}}", "ceilings.memory"},
		{"{\"ceilings\": {\"memory\": \"1m\"}}", "ceilings.memory"},
		{"{\"ceilings\": {\"pids\": 32769}}", "ceilings.pids"},
		{"{\"ceilings\": {\"pids\": 9223372036854775807}}", "ceilings.pids"},
		{"{\"ceilings\": {\"disk\": \"1t\"}}", "ceilings.disk"},
		{"{\"ceilings\": {\"output\": \"2g\"}}", "ceilings.output"},
		{"{\"defaults\": {\"nofile\": 10}}", "defaults.nofile"},
		{"{\"ceilings\": {\"memory\": \"99999999999999999999\"}}", "ceilings.memory"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		parse_bad(cases[i].json, cases[i].key);
	parse_bad("{\"ceilings\": {\"memory\": \"65g\"}}", "64g");
}

static void test_core_config__fractions_accepted(void **state)
{
	sbx_config *c = parse_ok("{\"ceilings\": {\"timeout\": 1.5, \"cpus\": 0.25}, "
				 "\"defaults\": {\"timeout\": 0.5, \"cpus\": 0.125}}");

	(void)state;
	assert_int_equal(sbx_config_timeout_ceiling_ms(c), 1500);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_CPU_MILLI), 250);
	sbx_config_free(c);
}

static void test_core_config__default_above_ceiling_refused(void **state)
{
	(void)state;
	parse_bad("{\"defaults\": {\"memory\": \"4g\"}, \"ceilings\": {\"memory\": \"2g\"}}",
		  "defaults.memory");
	parse_bad("{\"defaults\": {\"memory\": \"4g\"}, \"ceilings\": {\"memory\": \"2g\"}}",
		  "ceilings.memory");
	parse_bad("{\"defaults\": {\"timeout\": 61}, \"ceilings\": {\"timeout\": 60}}",
		  "defaults.timeout");
	parse_bad("{\"defaults\": {\"cpus\": 2}, \"ceilings\": {\"cpus\": 1.5}}", "defaults.cpus");
	/* A ceiling below a built-in default the file leaves alone. */
	parse_bad("{\"ceilings\": {\"timeout\": 60}}", "built-in default");
	parse_bad("{\"ceilings\": {\"memory\": \"256m\"}}", "defaults.memory");
	parse_bad("{\"ceilings\": {\"pids\": 100}}", "defaults.pids");
	/* Equal is fine. */
	sbx_config_free(parse_ok("{\"defaults\": {\"memory\": \"2g\", \"timeout\": 60}, "
				 "\"ceilings\": {\"memory\": \"2g\", \"timeout\": 60}}"));
}

static void test_core_config__images_rules(void **state)
{
	(void)state;
	parse_bad("{\"images\": []}", "images");
	parse_bad("{\"images\": [\"sandboxio/*\"]}", "images[0]");
	parse_bad("{\"images\": [\"sandboxio/python:3.11\", \"bad image\"]}", "images[1]");
	parse_bad("{\"images\": [\"-x\"]}", "images[0]");
	/* The built-in default image must stay usable, or be replaced. */
	parse_bad("{\"images\": [\"acme/tool:1\"]}", "defaults.image");
	parse_bad("{\"images\": [\"acme/tool:1\"], \"defaults\": {\"image\": \"acme/tool:2\"}}",
		  "defaults.image");
	sbx_config_free(parse_ok(
		"{\"images\": [\"acme/tool:1\"], \"defaults\": {\"image\": \"acme/tool:1\"}}"));
	sbx_config_free(parse_ok("{\"images\": [\"sandboxio/python:3.11\", \"sha256:"
				 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
				 "\"]}"));
}

static void test_core_config__egress_rules(void **state)
{
	static const char *const bad_cidrs[] = {
		"198.51.100.0",	   "198.51.100.7/24", "198.51.100.300/8", "/24",
		"198.51.100.0/33", "198.51.100.0/",   "198.51.100.0/024", "2001:db8::1/32",
		"2001:db8::/129",  "pypi.org/32",     "198.51.100.0/24 ", "",
	};
	static const char *const bad_hosts[] = {
		"*.example.org", "198.51.100.4", "-bad.example", "bad-.example", "a..b", "a.b.", "",
		"a b",		 "x_y.example",	 "2001:db8::1",
	};
	char json[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad_cidrs); i++) {
		snprintf(json, sizeof(json), "{\"egress\": {\"cidrs\": [\"%s\"]}}", bad_cidrs[i]);
		parse_bad(json, "egress.cidrs[0]");
	}
	for (size_t i = 0; i < ARRAY_LEN(bad_hosts); i++) {
		snprintf(json, sizeof(json), "{\"egress\": {\"hosts\": [\"%s\"]}}", bad_hosts[i]);
		parse_bad(json, "egress.hosts[0]");
	}
	sbx_config_free(
		parse_ok("{\"egress\": {\"cidrs\": [\"0.0.0.0/0\", \"2001:db8::/32\", "
			 "\"198.51.100.7/32\"], \"hosts\": [\"PyPI.org\", \"localhost\"]}}"));
	sbx_config_free(parse_ok("{\"egress\": {}}"));
}

static void test_core_config__backends_tier_rules(void **state)
{
	(void)state;
	parse_bad("{\"backends\": []}", "backends");
	parse_bad("{\"backends\": [\"kubernetes\"]}", "backends[0]");
	parse_bad("{\"backends\": [\"Docker\"]}", "backends[0]");
	parse_bad("{\"min_tier\": \"vm\"}", "min_tier");
	sbx_config_free(parse_ok("{\"backends\": [\"docker\", \"e2b\", \"modal\"], "
				 "\"min_tier\": \"gvisor\"}"));
}

static void test_core_config__malformed_refused(void **state)
{
	static const char *const cases[] = {
		"",	    "[]",
		"\"x\"",    "null",
		"{",	    "{}}",
		"{} {}",    "{\"defaults\": {},}",
		"{'a': 1}", "{\"images\": [\"a\\u0000b\"]}",
	};
	sbx_config *c = SENTINEL;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		if (sbx_config_parse(&c, cases[i], strlen(cases[i]), ORIGIN) != SBX_EINVALID)
			fail_msg("'%s' was accepted", cases[i]);
		assert_ptr_equal(c, SENTINEL);
		assert_msg(ORIGIN);
	}
	/* Length is honoured: the text need not be NUL-terminated. */
	assert_int_equal(sbx_config_parse(&c, "{}garbage", 2, ORIGIN), 0);
	sbx_config_free(c);
	assert_int_equal(sbx_config_parse(NULL, "{}", 2, ORIGIN), SBX_EINVALID);
}

static void test_core_config__too_big_refused(void **state)
{
	size_t n = SBX_CONFIG_MAX_BYTES + 1;
	char *big = malloc(n);
	sbx_config *c = SENTINEL;

	(void)state;
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	assert_int_equal(sbx_config_parse(&c, big, n, ORIGIN), SBX_ETOOBIG);
	assert_ptr_equal(c, SENTINEL);
	free(big);
}

/* ===== Precedence ===== */

static void test_core_config__no_config_is_builtin(void **state)
{
	sbx_policy *req = policy(), *eff;

	(void)state;
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_MEMORY, SBX_MAX_MEMORY), 0);
	eff = apply_ok(NULL, req);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_MEMORY), SBX_MAX_MEMORY);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_PIDS), SBX_DEFAULT_PIDS);
	assert_int_equal(sbx_policy_timeout_ms(eff, SBX_TIMEOUT_RUN), SBX_DEFAULT_TIMEOUT_MS);
	sbx_policy_free(eff);
	sbx_policy_free(req);
}

static void test_core_config__operator_defaults_fill_unset(void **state)
{
	sbx_config *c = parse_ok(example);
	sbx_config *d = parse_ok("{\"defaults\": {\"timeout\": 60, \"cpus\": 0.5, \"memory\": "
				 "\"256m\", \"pids\": 64, \"disk\": \"128m\", \"nofile\": 256, "
				 "\"output\": \"1m\", \"image\": \"acme/tool:1\"}}");
	sbx_policy *req = policy(), *eff;

	(void)state;
	eff = apply_ok(d, req);
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++)
		assert_int_equal(sbx_policy_timeout_ms(eff, (sbx_timeout_kind)k), 60000);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_CPU_MILLI), 500);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_MEMORY), 256ll << 20);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_PIDS), 64);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_DISK), 128ll << 20);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_NOFILE), 256);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_OUTPUT), 1ll << 20);
	assert_string_equal(sbx_policy_image(eff), "acme/tool:1");
	/* The request itself is not changed. */
	assert_int_equal(sbx_policy_limit(req, SBX_LIMIT_MEMORY), SBX_DEFAULT_MEMORY);
	sbx_policy_free(eff);
	/* Keys the file leaves out keep the built-in value. */
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_NOFILE), SBX_DEFAULT_NOFILE);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_OUTPUT), SBX_DEFAULT_OUTPUT);
	sbx_policy_free(eff);
	sbx_policy_free(req);
	sbx_config_free(c);
	sbx_config_free(d);
}

static void test_core_config__request_beats_operator_default(void **state)
{
	sbx_config *c = parse_ok("{\"defaults\": {\"memory\": \"1g\", \"timeout\": 600}, "
				 "\"ceilings\": {\"memory\": \"2g\", \"timeout\": 3600}}");
	sbx_policy *req = policy(), *eff;

	(void)state;
	/* Lower than the operator's default, and between default and ceiling. */
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_MEMORY, 128ll << 20), 0);
	assert_int_equal(sbx_policy_set_timeout_ms(req, SBX_TIMEOUT_RUN, 1800000), 0);
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_MEMORY), 128ll << 20);
	assert_int_equal(sbx_policy_timeout_ms(eff, SBX_TIMEOUT_RUN), 1800000);
	/* Only what the request set is the request's. */
	assert_int_equal(sbx_policy_timeout_ms(eff, SBX_TIMEOUT_CREATE), 600000);
	/* A value equal to the built-in default still counts as set. */
	sbx_policy_free(eff);
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_MEMORY, SBX_DEFAULT_MEMORY), 0);
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_MEMORY), SBX_DEFAULT_MEMORY);
	sbx_policy_free(eff);
	/* Applying twice gives the same result. */
	{
		sbx_policy *once = apply_ok(c, req), *twice = apply_ok(c, once);

		assert_int_equal(sbx_policy_limit(twice, SBX_LIMIT_MEMORY),
				 sbx_policy_limit(once, SBX_LIMIT_MEMORY));
		assert_int_equal(sbx_policy_timeout_ms(twice, SBX_TIMEOUT_CREATE), 600000);
		sbx_policy_free(once);
		sbx_policy_free(twice);
	}
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__dup_keeps_set_tracking(void **state)
{
	sbx_config *c = parse_ok("{\"defaults\": {\"pids\": 100}}");
	sbx_policy *req = policy(), *copy = NULL, *eff;

	(void)state;
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_PIDS, 300), 0);
	assert_int_equal(sbx_policy_dup(&copy, req), 0);
	eff = apply_ok(c, copy);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_PIDS), 300);
	sbx_policy_free(eff);
	sbx_policy_free(copy);
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__refused_setter_sets_nothing(void **state)
{
	sbx_config *c = parse_ok("{\"defaults\": {\"pids\": 100}}");
	sbx_policy *req = policy(), *eff;

	(void)state;
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_PIDS, 0), SBX_EINVALID);
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_PIDS), 100);
	sbx_policy_free(eff);
	sbx_policy_free(req);
	sbx_config_free(c);
}

/* ===== Ceilings ===== */

static const struct {
	sbx_limit_kind kind;
	const char *key;
	int64_t ceiling;
} limit_ceilings[] = {
	{SBX_LIMIT_CPU_MILLI, "ceilings.cpus", 2000},
	{SBX_LIMIT_MEMORY, "ceilings.memory", 2ll << 30},
	{SBX_LIMIT_PIDS, "ceilings.pids", 1024},
	{SBX_LIMIT_DISK, "ceilings.disk", 4ll << 30},
	{SBX_LIMIT_NOFILE, "ceilings.nofile", 4096},
	{SBX_LIMIT_OUTPUT, "ceilings.output", 64ll << 20},
};

static void test_core_config__each_limit_ceiling(void **state)
{
	sbx_config *c = parse_ok("{\"ceilings\": {\"cpus\": 2, \"memory\": \"2g\", \"pids\": 1024, "
				 "\"disk\": \"4g\", \"nofile\": 4096, \"output\": \"64m\"}}");

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(limit_ceilings); i++) {
		sbx_policy *req = policy(), *eff;
		sbx_limit_kind k = limit_ceilings[i].kind;
		int64_t ceil = limit_ceilings[i].ceiling;

		/* At the ceiling: accepted and applied. */
		assert_int_equal(sbx_policy_set_limit(req, k, ceil), 0);
		eff = apply_ok(c, req);
		assert_int_equal(sbx_policy_limit(eff, k), ceil);
		sbx_policy_free(eff);
		/* One unit above: refused, naming the ceiling and the file. */
		assert_int_equal(sbx_policy_set_limit(req, k, ceil + 1), 0);
		apply_denied(c, req, limit_ceilings[i].key);
		/* Far above: refused the same way, never clamped. */
		assert_int_equal(sbx_policy_set_limit(req, k, ceil * 4), 0);
		apply_denied(c, req, limit_ceilings[i].key);
		sbx_policy_free(req);
	}
	sbx_config_free(c);
}

static void test_core_config__each_timeout_ceiling(void **state)
{
	sbx_config *c = parse_ok(example);

	(void)state;
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++) {
		sbx_policy *req = policy(), *eff;

		assert_int_equal(sbx_policy_set_timeout_ms(req, (sbx_timeout_kind)k, 3600000), 0);
		eff = apply_ok(c, req);
		assert_int_equal(sbx_policy_timeout_ms(eff, (sbx_timeout_kind)k), 3600000);
		sbx_policy_free(eff);
		assert_int_equal(sbx_policy_set_timeout_ms(req, (sbx_timeout_kind)k, 3600001), 0);
		apply_denied(c, req, "ceilings.timeout");
		assert_int_equal(sbx_policy_set_timeout_ms(req, (sbx_timeout_kind)k, 86400000), 0);
		apply_denied(c, req, "ceilings.timeout");
		sbx_policy_free(req);
	}
	sbx_config_free(c);
}

static void test_core_config__denial_message_names_value_and_ceiling(void **state)
{
	sbx_config *c = parse_ok(example);
	sbx_policy *req = policy();

	(void)state;
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_MEMORY, 64ll << 30), 0);
	apply_denied(c, req, "64g");
	assert_msg("ceilings.memory (2g)");
	assert_msg("in config " ORIGIN);
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__output_ceiling_check(void **state)
{
	sbx_config *c = parse_ok(example);

	(void)state;
	assert_int_equal(sbx__config_check_limit(c, SBX_LIMIT_OUTPUT, 64ll << 20), 0);
	assert_int_equal(sbx__config_check_limit(c, SBX_LIMIT_OUTPUT, (64ll << 20) + 1),
			 SBX_EDENIED);
	assert_msg("ceilings.output");
	assert_int_equal(sbx__config_check_limit(NULL, SBX_LIMIT_OUTPUT, SBX_MAX_OUTPUT), 0);
	sbx_config_free(c);
}

/* ===== Images, backends, tenant, tier ===== */

static void test_core_config__images_permitted(void **state)
{
	static const char digest[] =
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char json[512], ref[256];
	sbx_config *c;
	sbx_policy *req = policy(), *eff;

	(void)state;
	snprintf(json, sizeof(json), "{\"images\": [\"sandboxio/python:3.11\", \"%s\"]}", digest);
	c = parse_ok(json);
	/* The default image is listed; the caller set nothing. */
	eff = apply_ok(c, req);
	sbx_policy_free(eff);
	assert_int_equal(sbx_policy_set_image(req, "attacker/tool"), 0);
	apply_denied(c, req, "attacker/tool");
	assert_msg("images");
	/* A tag is not a prefix match. */
	assert_int_equal(sbx_policy_set_image(req, "sandboxio/python:3.11-evil"), 0);
	apply_denied(c, req, "images");
	assert_int_equal(sbx_policy_set_image(req, "sandboxio/python"), 0);
	apply_denied(c, req, "images");
	/* A listed digest permits that content under any name. */
	assert_int_equal(sbx_policy_set_image(req, digest), 0);
	sbx_policy_free(apply_ok(c, req));
	snprintf(ref, sizeof(ref), "acme/tool@%s", digest);
	assert_int_equal(sbx_policy_set_image(req, ref), 0);
	sbx_policy_free(apply_ok(c, req));
	snprintf(ref, sizeof(ref), "acme/tool@%.70s0", digest);
	assert_int_equal(sbx_policy_set_image(req, ref), 0);
	apply_denied(c, req, "images");
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__backend_permitted(void **state)
{
	sbx_config *c = parse_ok("{\"backends\": [\"e2b\"]}");
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_policy *req = policy(), *eff = SENTINEL;
	sbx_backend *b = SENTINEL;

	(void)state;
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("backends");
	assert_msg(ORIGIN);
	assert_ptr_equal(eff, SENTINEL);
	assert_int_equal(sbx_config_apply(&eff, c, req, NULL), SBX_EDENIED);
	eff = NULL;
	assert_int_equal(sbx_config_apply(&eff, c, req, "e2b"), 0);
	sbx_policy_free(eff);
	/* The backend open itself is refused, before any engine is reached. */
	o.socket_path = "/nonexistent/docker.sock";
	o.config = c;
	assert_int_equal(sbx_backend_open(&b, "docker", &o), SBX_EDENIED);
	assert_ptr_equal(b, SENTINEL);
	assert_msg("backends");
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__tenant_required(void **state)
{
	sbx_config *c = parse_ok("{\"require_tenant\": true}");
	sbx_config *off = parse_ok("{\"require_tenant\": false}");
	sbx_policy *req = policy();

	(void)state;
	apply_denied(c, req, "require_tenant");
	sbx_policy_free(apply_ok(off, req));
	assert_int_equal(sbx_policy_set_tenant(req, "acme"), 0);
	sbx_policy_free(apply_ok(c, req));
	sbx_policy_free(req);
	sbx_config_free(c);
	sbx_config_free(off);
}

static void test_core_config__min_tier_is_a_floor(void **state)
{
	sbx_config *c = parse_ok("{\"min_tier\": \"gvisor\"}");
	sbx_policy *req = policy(), *eff;

	(void)state;
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_min_tier(eff), SBX_TIER_GVISOR);
	sbx_policy_free(eff);
	assert_int_equal(sbx_policy_set_min_tier(req, SBX_TIER_CONTAINER), 0);
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_min_tier(eff), SBX_TIER_GVISOR);
	sbx_policy_free(eff);
	assert_int_equal(sbx_policy_set_min_tier(req, SBX_TIER_MICROVM), 0);
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_min_tier(eff), SBX_TIER_MICROVM);
	sbx_policy_free(eff);
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__secrets_hook(void **state)
{
	sbx_config *no = parse_ok("{\"secrets\": false}");
	sbx_config *yes = parse_ok("{\"secrets\": true}");
	sbx_config *unset = parse_ok("{}");

	(void)state;
	assert_int_equal(sbx__config_check_secrets(no, 0), 0);
	assert_int_equal(sbx__config_check_secrets(no, 1), SBX_EDENIED);
	assert_msg("secrets is false");
	assert_msg(ORIGIN);
	assert_int_equal(sbx__config_check_secrets(yes, 3), 0);
	assert_int_equal(sbx__config_check_secrets(unset, 3), 0);
	assert_int_equal(sbx__config_check_secrets(NULL, 3), 0);
	sbx_config_free(no);
	sbx_config_free(yes);
	sbx_config_free(unset);
}

static void test_core_config__egress_hooks(void **state)
{
	sbx_config *c = parse_ok(example);
	sbx_config *none = parse_ok("{}");
	sbx_config *empty = parse_ok("{\"egress\": {}}");
	sbx_config *v6 = parse_ok("{\"egress\": {\"cidrs\": [\"2001:db8::/32\", \"0.0.0.0/0\"]}}");

	(void)state;
	assert_int_equal(sbx__config_check_egress_host(c, "pypi.org"), 0);
	assert_int_equal(sbx__config_check_egress_host(c, "PyPI.ORG"), 0);
	assert_int_equal(sbx__config_check_egress_host(c, "evil.example"), SBX_EDENIED);
	assert_msg("egress.hosts");
	assert_msg(ORIGIN);
	assert_int_equal(sbx__config_check_egress_host(c, "files.pypi.org"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_cidr(c, "198.51.100.0/24"), 0);
	assert_int_equal(sbx__config_check_egress_cidr(c, "198.51.100.128/25"), 0);
	assert_int_equal(sbx__config_check_egress_cidr(c, "198.51.100.7"), 0);
	assert_int_equal(sbx__config_check_egress_cidr(c, "198.51.100.0/23"), SBX_EDENIED);
	assert_msg("egress.cidrs");
	assert_int_equal(sbx__config_check_egress_cidr(c, "203.0.113.1"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_cidr(c, "0.0.0.0/0"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_cidr(c, "2001:db8::1"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_cidr(c, "not-an-address"), SBX_EINVALID);
	/* A file without "egress", or with an empty one: no network at all. */
	assert_int_equal(sbx__config_check_egress_host(none, "pypi.org"), SBX_EDENIED);
	assert_msg("no call may open the network");
	assert_int_equal(sbx__config_check_egress_cidr(none, "198.51.100.1"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_host(empty, "pypi.org"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_cidr(empty, "198.51.100.1"), SBX_EDENIED);
	/* The built-in config leaves the allowlist to the caller. */
	assert_int_equal(sbx__config_check_egress_host(NULL, "pypi.org"), 0);
	assert_int_equal(sbx__config_check_egress_cidr(NULL, "198.51.100.1/32"), 0);
	assert_int_equal(sbx__config_check_egress_cidr(v6, "2001:db8:1::/48"), 0);
	assert_int_equal(sbx__config_check_egress_cidr(v6, "2001:db9::/32"), SBX_EDENIED);
	assert_int_equal(sbx__config_check_egress_cidr(v6, "203.0.113.9"), 0);
	sbx_config_free(c);
	sbx_config_free(none);
	sbx_config_free(empty);
	sbx_config_free(v6);
}

static void test_core_config__egress_allowlist_checked(void **state)
{
	sbx_config *c = parse_ok(example);
	sbx_config *none = parse_ok("{}");
	sbx_policy *req = policy(), *evil = policy(), *wide = policy();

	(void)state;
	/* No allowlist: nothing to check, whatever the config. */
	sbx_policy_free(apply_ok(none, req));
	assert_int_equal(sbx_policy_allow_host(req, "pypi.org", 443), 0);
	assert_int_equal(sbx_policy_allow_cidr(req, "198.51.100.128/25", 0), 0);
	assert_int_equal(sbx_policy_allow_cidr(req, "198.51.100.7", 443), 0);
	sbx_policy_free(apply_ok(c, req));
	/* A file without "egress" permits no allowlist at all. */
	apply_denied(none, req, "no call may open the network");
	assert_int_equal(sbx_policy_allow_host(evil, "evil.example", 443), 0);
	apply_denied(c, evil, "evil.example");
	assert_msg("egress.hosts");
	assert_int_equal(sbx_policy_allow_cidr(wide, "198.51.100.0/23", 0), 0);
	apply_denied(c, wide, "egress.cidrs");
	/* The built-in config leaves the allowlist to the caller. */
	sbx_policy_free(apply_ok(NULL, evil));
	sbx_policy_free(req);
	sbx_policy_free(evil);
	sbx_policy_free(wide);
	sbx_config_free(c);
	sbx_config_free(none);
}

static void test_core_config__egress_presets_permit_their_names(void **state)
{
	sbx_config *c = parse_ok("{\"egress\": {\"presets\": [\"pypi\", \"github\"]}}");
	sbx_config *hosts = parse_ok("{\"egress\": {\"hosts\": [\"pypi.org\"]}}");
	sbx_policy *pypi = policy(), *gh = policy(), *npm = policy(), *other = policy();

	(void)state;
	assert_int_equal(sbx_policy_allow_preset(pypi, "pypi"), 0);
	assert_int_equal(sbx_policy_allow_preset(gh, "github"), 0);
	assert_int_equal(sbx_policy_allow_host(gh, "objects.githubusercontent.com", 0), 0);
	sbx_policy_free(apply_ok(c, pypi));
	sbx_policy_free(apply_ok(c, gh));
	/* A preset the config does not name, or another name under a wildcard
	 * of one it names, is not permitted. */
	assert_int_equal(sbx_policy_allow_preset(npm, "npm"), 0);
	apply_denied(c, npm, "registry.npmjs.org");
	assert_int_equal(sbx_policy_allow_host(other, "gist.githubusercontent.com", 443), 0);
	apply_denied(c, other, "gist.githubusercontent.com");
	/* egress.hosts with one of pypi's names does not permit the preset. */
	apply_denied(hosts, pypi, "files.pythonhosted.org");
	parse_bad("{\"egress\": {\"presets\": [\"nosuch\"]}}", "egress.presets[0]");
	assert_msg("unknown preset \"nosuch\" (there are: pypi, npm, crates, debian, github)");
	parse_bad("{\"egress\": {\"presets\": \"pypi\"}}", "egress.presets");
	sbx_policy_free(pypi);
	sbx_policy_free(gh);
	sbx_policy_free(npm);
	sbx_policy_free(other);
	sbx_config_free(c);
	sbx_config_free(hosts);
}

/* ===== Describe ===== */

static json_t *describe(const sbx_config *c, const sbx_policy *req)
{
	char *text = NULL;
	json_t *j;

	if (sbx_config_describe(&text, c, req, "docker") != 0)
		fail_msg("describe: %s", sbx_error_last()->message);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	sbx_free(text);
	return j;
}

static const char *jstr(json_t *root, const char *a, const char *b, const char *c)
{
	json_t *v = json_object_get(root, a);

	if (b)
		v = json_object_get(v, b);
	if (c)
		v = json_object_get(v, c);
	if (!json_is_string(v))
		fail_msg("%s.%s.%s is not a string", a, b ? b : "", c ? c : "");
	return json_string_value(v);
}

static void test_core_config__describe_origins(void **state)
{
	sbx_config *c = parse_ok(example);
	sbx_policy *req = policy();
	json_t *j;

	(void)state;
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_PIDS, 512), 0);
	assert_int_equal(sbx_policy_set_env(req, "TOKENISH", "plain-env-value-xyz"), 0);
	assert_int_equal(sbx_policy_allow_host(req, "pypi.org", 443), 0);
	j = describe(c, req);
	{
		json_t *allow = json_object_get(json_object_get(j, "effective"), "allow");

		assert_string_equal(
			json_string_value(json_array_get(json_object_get(allow, "value"), 0)),
			"pypi.org:443");
		assert_string_equal(json_string_value(json_object_get(allow, "origin")), "request");
	}
	assert_string_equal(jstr(j, "source", NULL, NULL), ORIGIN);
	assert_string_equal(jstr(j, "effective", "memory", "value"), "512m");
	assert_string_equal(jstr(j, "effective", "memory", "origin"), ORIGIN);
	assert_string_equal(jstr(j, "effective", "nofile", "origin"), "builtin");
	assert_string_equal(jstr(j, "effective", "pids", "origin"), "request");
	assert_int_equal(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(j, "effective"), "pids"), "value")),
		512);
	assert_string_equal(jstr(json_object_get(j, "effective"), "timeout", "run", "origin"),
			    ORIGIN);
	assert_string_equal(jstr(j, "ceilings", "memory", "value"), "2g");
	assert_string_equal(jstr(j, "ceilings", "memory", "origin"), ORIGIN);
	assert_string_equal(jstr(j, "ceilings", "nofile", "origin"), "builtin");
	assert_string_equal(jstr(j, "images", "origin", NULL), ORIGIN);
	assert_string_equal(jstr(j, "min_tier", "value", NULL), "container");
	assert_true(json_is_true(json_object_get(json_object_get(j, "secrets"), "value")));
	{
		char *text = json_dumps(j, 0);

		assert_null(strstr(text, "plain-env-value-xyz"));
		free(text);
	}
	json_decref(j);
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__describe_builtin_and_refusal(void **state)
{
	sbx_config *none = parse_ok("{}");
	sbx_config *c = parse_ok(example);
	sbx_policy *req = policy();
	char *text = SENTINEL;
	json_t *j;

	(void)state;
	j = describe(NULL, NULL);
	assert_string_equal(jstr(j, "source", NULL, NULL), "builtin");
	assert_string_equal(jstr(j, "egress", "value", NULL), "any");
	assert_string_equal(jstr(j, "images", "value", NULL), "any");
	assert_string_equal(jstr(j, "effective", "memory", "origin"), "builtin");
	json_decref(j);
	/* A file without "egress" permits no network, and says so. */
	j = describe(none, NULL);
	assert_string_equal(jstr(j, "egress", "value", NULL), "none");
	json_decref(j);
	/* A request beyond a ceiling is refused here as at create. */
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_MEMORY, 4ll << 30), 0);
	assert_int_equal(sbx_config_describe(&text, c, req, "docker"), SBX_EDENIED);
	assert_ptr_equal(text, SENTINEL);
	assert_msg("ceilings.memory");
	sbx_policy_free(req);
	sbx_config_free(c);
	sbx_config_free(none);
}

/* ===== Loading ===== */

struct dir {
	char path[64];
};

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int load_setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	snprintf(d->path, sizeof(d->path), "/tmp/sbx-config-XXXXXX");
	if (!mkdtemp(d->path))
		return -1;
	unsetenv(SBX_CONFIG_ENV);
	*state = d;
	return 0;
}

static int load_teardown(void **state)
{
	struct dir *d = *state;
	char cmd[128];

	unsetenv(SBX_CONFIG_ENV);
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", d->path, d->path);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

static const char *in_dir(void **state, const char *name)
{
	static char buf[4][128];
	static int i;
	struct dir *d = *state;
	char *b = buf[i++ % 4];

	snprintf(b, 128, "%s/%s", d->path, name);
	return b;
}

static void test_core_config__load_explicit_path(void **state)
{
	const char *p = in_dir(state, "config.json");
	sbx_config *c = NULL;

	write_file(p, example, 0644);
	assert_int_equal(sbx_config_load(&c, p), 0);
	assert_string_equal(sbx_config_source(c), p);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_MEMORY), 2ll << 30);
	sbx_config_free(c);
}

static void test_core_config__load_errors_name_the_file(void **state)
{
	const char *p = in_dir(state, "bad.json");
	sbx_config *c = SENTINEL;

	write_file(p, "{\"ceilings\": {\"memory\": \"0\"}}", 0600);
	assert_int_equal(sbx_config_load(&c, p), SBX_EINVALID);
	assert_ptr_equal(c, SENTINEL);
	assert_msg(p);
	assert_msg("ceilings.memory");
	write_file(p, "{\n\"defaults\": {\n\"timeout\": 300,\n}}", 0600);
	assert_int_equal(sbx_config_load(&c, p), SBX_EINVALID);
	assert_msg(p);
	assert_msg("line");
}

static void test_core_config__load_missing_explicit_refused(void **state)
{
	sbx_config *c = SENTINEL;

	assert_int_equal(sbx_config_load(&c, in_dir(state, "nope.json")), SBX_ENOTFOUND);
	assert_ptr_equal(c, SENTINEL);
	assert_msg("nope.json");
	setenv(SBX_CONFIG_ENV, in_dir(state, "nope-env.json"), 1);
	assert_int_equal(sbx_config_load(&c, NULL), SBX_ENOTFOUND);
	assert_ptr_equal(c, SENTINEL);
	assert_msg("nope-env.json");
	assert_msg(SBX_CONFIG_ENV);
}

static void test_core_config__load_search_order(void **state)
{
	const char *expl = in_dir(state, "explicit.json");
	const char *env = in_dir(state, "env.json");
	const char *sys = in_dir(state, "system.json");
	sbx_config *c = NULL;

	write_file(expl, "{\"ceilings\": {\"pids\": 1000}}", 0644);
	write_file(env, "{\"ceilings\": {\"pids\": 2000}}", 0644);
	write_file(sys, "{\"ceilings\": {\"pids\": 3000}}", 0644);
	setenv(SBX_CONFIG_ENV, env, 1);
	assert_int_equal(sbx__config_load_search(&c, expl, sys), 0);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 1000);
	sbx_config_free(c);
	assert_int_equal(sbx__config_load_search(&c, NULL, sys), 0);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 2000);
	assert_string_equal(sbx_config_source(c), env);
	sbx_config_free(c);
	/* An empty variable counts as unset. */
	setenv(SBX_CONFIG_ENV, "", 1);
	assert_int_equal(sbx__config_load_search(&c, NULL, sys), 0);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 3000);
	assert_string_equal(sbx_config_source(c), sys);
	sbx_config_free(c);
	unsetenv(SBX_CONFIG_ENV);
	assert_int_equal(sbx__config_load_search(&c, NULL, in_dir(state, "absent.json")), 0);
	assert_null(sbx_config_source(c));
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), SBX_MAX_PIDS);
	sbx_config_free(c);
	assert_int_equal(
		sbx__config_load_search(&c, NULL, in_dir(state, "no-such-dir/config.json")), 0);
	assert_null(sbx_config_source(c));
	sbx_config_free(c);
}

static void test_core_config__load_writable_file_refused(void **state)
{
	static const mode_t bad[] = {0664, 0666, 0646, 0620, 0602};
	const char *p = in_dir(state, "config.json");
	sbx_config *c = SENTINEL;

	write_file(p, "{}", 0644);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		assert_int_equal(chmod(p, bad[i]), 0);
		assert_int_equal(sbx_config_load(&c, p), SBX_EDENIED);
		assert_ptr_equal(c, SENTINEL);
		assert_int_equal(sbx_error_last()->klass, SBX_ERRCLASS_POLICY);
		assert_msg(p);
		assert_msg("writable");
	}
	/* Read-only and owner-only modes are fine. */
	assert_int_equal(chmod(p, 0400), 0);
	assert_int_equal(sbx_config_load(&c, p), 0);
	sbx_config_free(c);
}

static void test_core_config__load_writable_directory_refused(void **state)
{
	struct dir *d = *state;
	const char *sub = in_dir(state, "sub");
	char p[192];
	sbx_config *c = SENTINEL;

	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(p, sizeof(p), "%s/config.json", sub);
	write_file(p, "{}", 0644);
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(sbx_config_load(&c, p), SBX_EDENIED);
	assert_ptr_equal(c, SENTINEL);
	assert_msg(sub);
	assert_msg("directory");
	assert_int_equal(chmod(sub, 0775), 0);
	assert_int_equal(sbx_config_load(&c, p), SBX_EDENIED);
	/* The parent of the parent counts too. */
	assert_int_equal(chmod(sub, 0755), 0);
	assert_int_equal(chmod(d->path, 0757), 0);
	assert_int_equal(sbx_config_load(&c, p), SBX_EDENIED);
	assert_msg(d->path);
	/* A sticky directory (as /tmp, which holds this test's directory) is accepted. */
	assert_int_equal(chmod(d->path, 01777), 0);
	assert_int_equal(sbx_config_load(&c, p), 0);
	sbx_config_free(c);
	assert_int_equal(chmod(d->path, 0700), 0);
	assert_int_equal(sbx_config_load(&c, p), 0);
	sbx_config_free(c);
}

static void test_core_config__load_foreign_owner_refused(void **state)
{
	const char *p = in_dir(state, "config.json");
	sbx_config *c = SENTINEL;

	if (geteuid() != 0)
		skip(); /* chown to another user needs root */
	write_file(p, "{}", 0644);
	assert_int_equal(chown(p, 4242, 4242), 0);
	assert_int_equal(sbx_config_load(&c, p), SBX_EDENIED);
	assert_ptr_equal(c, SENTINEL);
	assert_msg("owned by uid 4242");
	assert_int_equal(chown(p, 0, 4242), 0);
	assert_int_equal(sbx_config_load(&c, p), 0);
	sbx_config_free(c);
	assert_int_equal(chown(p, 0, 0), 0);
	assert_int_equal(chown(((struct dir *)*state)->path, 4242, 0), 0);
	assert_int_equal(sbx_config_load(&c, p), SBX_EDENIED);
	assert_msg("directory");
	assert_int_equal(chown(((struct dir *)*state)->path, 0, 0), 0);
}

static void test_core_config__load_symlink_checks_target(void **state)
{
	const char *sub = in_dir(state, "open");
	const char *link = in_dir(state, "link.json");
	char target[192];
	sbx_config *c = SENTINEL;

	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(target, sizeof(target), "%s/config.json", sub);
	write_file(target, "{\"ceilings\": {\"pids\": 500}}", 0644);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(sbx_config_load(&c, link), 0);
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 500);
	sbx_config_free(c);
	/* The target's directory is what counts. */
	c = SENTINEL;
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(sbx_config_load(&c, link), SBX_EDENIED);
	assert_ptr_equal(c, SENTINEL);
}

static void test_core_config__load_not_regular_refused(void **state)
{
	const char *sub = in_dir(state, "adir");
	const char *fifo = in_dir(state, "fifo");
	const char *big = in_dir(state, "big.json");
	sbx_config *c = SENTINEL;
	FILE *f;

	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(sbx_config_load(&c, sub), SBX_EDENIED);
	assert_msg("regular file");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(sbx_config_load(&c, fifo), SBX_EDENIED);
	assert_msg("regular file");
	f = fopen(big, "w");
	assert_non_null(f);
	fputc('{', f);
	for (unsigned int i = 0; i < SBX_CONFIG_MAX_BYTES; i++)
		fputc(' ', f);
	fputc('}', f);
	fclose(f);
	assert_int_equal(chmod(big, 0644), 0);
	assert_int_equal(sbx_config_load(&c, big), SBX_ETOOBIG);
	assert_ptr_equal(c, SENTINEL);
}

/* ===== Narrowing: the system config bounds a config named by a caller ===== */

/*
 * Writes sys (NULL: no system file) and nar (NULL: no narrowing file) into
 * the test directory and loads the one narrowed by the other, with the test
 * user allowed to own the system file.
 */
static int narrowed(void **state, const char *sys, const char *nar, sbx_config **out)
{
	const char *sp = in_dir(state, "system.json"), *np = in_dir(state, "narrow.json");

	unlink(sp);
	unlink(np);
	if (sys)
		write_file(sp, sys, 0644);
	if (nar)
		write_file(np, nar, 0600);
	return sbx__config_load_narrowed(out, nar ? np : NULL, sp, geteuid());
}

static sbx_config *narrowed_ok(void **state, const char *sys, const char *nar)
{
	sbx_config *c = NULL;

	if (narrowed(state, sys, nar, &c) != 0)
		fail_msg("narrow '%s' by '%s': %s", sys ? sys : "(built-in)", nar ? nar : "(none)",
			 sbx_error_last()->message);
	assert_non_null(c);
	return c;
}

/* Refused with SBX_EDENIED, naming the key, the narrowing file and the system file. */
static void narrowed_refused(void **state, const char *sys, const char *nar, const char *key)
{
	sbx_config *c = SENTINEL;
	int rc = narrowed(state, sys, nar, &c);

	if (rc != SBX_EDENIED)
		fail_msg("narrow '%s' by '%s': got %d (%s), want SBX_EDENIED", sys ? sys : "", nar,
			 rc, sbx_error_last()->message);
	assert_ptr_equal(c, SENTINEL);
	assert_msg(key);
	assert_msg(in_dir(state, "narrow.json"));
	assert_msg(sys ? in_dir(state, "system.json") : "(built-in)");
	assert_msg("may only narrow");
}

static void test_core_config__narrow_none_is_the_system(void **state)
{
	sbx_config *c;

	c = narrowed_ok(state, "{\"ceilings\": {\"pids\": 1000}}", NULL);
	assert_string_equal(sbx_config_source(c), in_dir(state, "system.json"));
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 1000);
	sbx_config_free(c);
	c = narrowed_ok(state, NULL, NULL);
	assert_null(sbx_config_source(c));
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), SBX_MAX_PIDS);
	sbx_config_free(c);
}

static void test_core_config__narrow_ceilings_take_the_smaller(void **state)
{
	const char *sys = "{\"ceilings\": {\"timeout\": 600, \"memory\": \"1g\"}}";
	sbx_policy *req = policy(), *eff = SENTINEL;
	sbx_config *c;

	c = narrowed_ok(state, sys,
			"{\"defaults\": {\"timeout\": 30}, \"ceilings\": {\"timeout\": 60}}");
	assert_int_equal(sbx_config_timeout_ceiling_ms(c), 60000);
	/* A ceiling the narrowing file leaves out stays the system's. */
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_MEMORY), 1ll << 30);
	assert_int_equal(sbx_policy_set_timeout_ms(req, SBX_TIMEOUT_RUN, 61000), 0);
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("ceilings.timeout (60 s)");
	assert_msg(in_dir(state, "narrow.json"));
	assert_int_equal(sbx_policy_set_timeout_ms(req, SBX_TIMEOUT_RUN, 60000), 0);
	sbx_policy_free(apply_ok(c, req));
	/* A request above the system's ceiling names the system file. */
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_MEMORY, 2ll << 30), 0);
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("ceilings.memory (1g)");
	assert_msg(in_dir(state, "system.json"));
	sbx_config_free(c);
	/* Equal is not wider. */
	c = narrowed_ok(state, sys, "{\"ceilings\": {\"timeout\": 600}}");
	assert_int_equal(sbx_config_timeout_ceiling_ms(c), 600000);
	sbx_config_free(c);
	narrowed_refused(state, sys, "{\"ceilings\": {\"timeout\": 601}}", "ceilings.timeout");
	assert_msg("above the system's ceilings.timeout (600 s)");
	narrowed_refused(state, sys, "{\"ceilings\": {\"memory\": \"2g\"}}", "ceilings.memory");
	/* The built-in config bounds as well: its ceilings are the built-in ones. */
	c = narrowed_ok(state, NULL, "{\"ceilings\": {\"pids\": 500}}");
	assert_int_equal(sbx_config_limit_ceiling(c, SBX_LIMIT_PIDS), 500);
	sbx_config_free(c);
	sbx_policy_free(req);
}

static void test_core_config__narrow_defaults_within_system_ceilings(void **state)
{
	const char *sys = "{\"defaults\": {\"timeout\": 300, \"memory\": \"512m\"}, "
			  "\"ceilings\": {\"timeout\": 600, \"memory\": \"1g\"}}";
	sbx_policy *req = policy(), *eff;
	sbx_config *c;

	c = narrowed_ok(state, sys, "{\"defaults\": {\"memory\": \"256m\"}}");
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_limit(eff, SBX_LIMIT_MEMORY), 256ll << 20);
	assert_int_equal(sbx_policy_timeout_ms(eff, SBX_TIMEOUT_RUN), 300000);
	sbx_policy_free(eff);
	sbx_config_free(c);
	/* A default above the system's ceiling, with the narrowing file's own ceiling
	 * raised to match, is refused naming both files. */
	narrowed_refused(state, sys,
			 "{\"defaults\": {\"timeout\": 900}, \"ceilings\": {\"timeout\": 900}}",
			 "ceilings.timeout");
	narrowed_refused(state, sys, "{\"defaults\": {\"memory\": \"2g\"}, \"ceilings\": {}}",
			 "defaults.memory");
	/* The narrowing file's own default above its own ceiling. */
	narrowed_refused(state, NULL,
			 "{\"defaults\": {\"timeout\": 100}, \"ceilings\": {\"timeout\": 60}}",
			 "defaults.timeout");
	/* The system's default above a narrowed ceiling is refused, not clamped. */
	narrowed_refused(state, sys, "{\"ceilings\": {\"timeout\": 100}}", "defaults.timeout");
	c = narrowed_ok(state, sys,
			"{\"defaults\": {\"timeout\": 60}, \"ceilings\": {\"timeout\": 100}}");
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_timeout_ms(eff, SBX_TIMEOUT_RUN), 60000);
	sbx_policy_free(eff);
	sbx_config_free(c);
	sbx_policy_free(req);
}

static void test_core_config__narrow_images_intersect(void **state)
{
	const char *sys = "{\"images\": [\"sandboxio/python:3.11\", \"acme/tool:1\"]}";
	sbx_policy *req = policy(), *eff = SENTINEL;
	sbx_config *c;

	/* Absent: the system's list. */
	c = narrowed_ok(state, sys, "{}");
	assert_int_equal(sbx_policy_set_image(req, "acme/tool:1"), 0);
	sbx_policy_free(apply_ok(c, req));
	sbx_config_free(c);
	c = narrowed_ok(state, sys, "{\"images\": [\"sandboxio/python:3.11\"]}");
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("acme/tool:1");
	assert_msg(in_dir(state, "narrow.json"));
	sbx_config_free(c);
	narrowed_refused(state, sys, "{\"images\": [\"sandboxio/python:3.11\", \"attacker/tool\"]}",
			 "images[1]");
	assert_msg("attacker/tool");
	narrowed_refused(state, sys, "{\"defaults\": {\"image\": \"attacker/tool\"}}",
			 "defaults.image");
	/* Narrowing away the default image would refuse every plain call. */
	narrowed_refused(state, sys, "{\"images\": [\"acme/tool:1\"]}", "defaults.image");
	/* Under the built-in config any image may be listed. */
	c = narrowed_ok(state, NULL, "{\"images\": [\"sandboxio/python:3.11\"]}");
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	sbx_config_free(c);
	sbx_policy_free(req);
}

static void test_core_config__narrow_egress_inside_system(void **state)
{
	const char *sys =
		"{\"egress\": {\"cidrs\": [\"198.51.100.0/24\"], \"hosts\": [\"pypi.org\"]}}";
	sbx_policy *req = policy(), *eff = SENTINEL;
	sbx_config *c;

	c = narrowed_ok(state, sys,
			"{\"egress\": {\"cidrs\": [\"198.51.100.128/25\"], \"hosts\": []}}");
	assert_int_equal(sbx_policy_allow_cidr(req, "198.51.100.200", 443), 0);
	sbx_policy_free(apply_ok(c, req));
	sbx_policy_free(req);
	req = policy();
	assert_int_equal(sbx_policy_allow_cidr(req, "198.51.100.1", 443), 0);
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	sbx_policy_free(req);
	req = policy();
	assert_int_equal(sbx_policy_allow_host(req, "pypi.org", 443), 0);
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("egress.hosts");
	sbx_config_free(c);
	/* Entries outside the system's set are refused, not dropped. */
	narrowed_refused(state, sys, "{\"egress\": {\"cidrs\": [\"198.18.0.0/15\"]}}",
			 "egress.cidrs[0]");
	assert_msg("198.18.0.0/15");
	narrowed_refused(state, sys, "{\"egress\": {\"hosts\": [\"pypi.org\", \"evil.example\"]}}",
			 "egress.hosts[1]");
	assert_msg("evil.example");
	/* A system file without egress permits none. */
	narrowed_refused(state, "{}", "{\"egress\": {\"hosts\": [\"pypi.org\"]}}",
			 "egress.hosts[0]");
	/* A narrowing file without egress permits none, as any file. */
	c = narrowed_ok(state, sys, "{}");
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("no egress key");
	sbx_config_free(c);
	/* The built-in config permits any: a narrowing file may list what it wants. */
	c = narrowed_ok(state, NULL, "{\"egress\": {\"hosts\": [\"pypi.org\"]}}");
	sbx_policy_free(apply_ok(c, req));
	sbx_config_free(c);
	sbx_policy_free(req);
}

static void test_core_config__narrow_backends_intersect(void **state)
{
	sbx_policy *req = policy(), *eff = SENTINEL;
	sbx_config *c;

	c = narrowed_ok(state, "{\"backends\": [\"docker\", \"e2b\"]}",
			"{\"backends\": [\"e2b\"]}");
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("backends");
	assert_msg(in_dir(state, "narrow.json"));
	sbx_config_free(c);
	c = narrowed_ok(state, "{\"backends\": [\"e2b\"]}", "{}");
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg(in_dir(state, "system.json"));
	sbx_config_free(c);
	narrowed_refused(state, "{\"backends\": [\"e2b\"]}",
			 "{\"backends\": [\"e2b\", \"docker\"]}", "backends[1]");
	sbx_policy_free(req);
}

static void test_core_config__narrow_secrets_tenant_tier(void **state)
{
	sbx_policy *req = policy(), *eff;
	sbx_config *c;

	/* Secrets: both must allow. */
	c = narrowed_ok(state, "{\"secrets\": false}", "{\"secrets\": true}");
	assert_int_equal(sbx__config_check_secrets(c, 1), SBX_EDENIED);
	assert_msg(in_dir(state, "system.json"));
	sbx_config_free(c);
	c = narrowed_ok(state, "{\"secrets\": true}", "{\"secrets\": false}");
	assert_int_equal(sbx__config_check_secrets(c, 1), SBX_EDENIED);
	assert_msg(in_dir(state, "narrow.json"));
	sbx_config_free(c);
	c = narrowed_ok(state, NULL, "{}");
	assert_int_equal(sbx__config_check_secrets(c, 1), 0);
	sbx_config_free(c);
	/* A tenant: either may require one. */
	c = narrowed_ok(state, "{\"require_tenant\": true}", "{\"require_tenant\": false}");
	assert_int_equal(sbx_config_apply(&eff, c, req, "docker"), SBX_EDENIED);
	assert_msg("require_tenant");
	assert_msg(in_dir(state, "system.json"));
	sbx_config_free(c);
	c = narrowed_ok(state, "{\"require_tenant\": false}", "{\"require_tenant\": true}");
	apply_denied(c, req, "require_tenant");
	sbx_config_free(c);
	/* min_tier: the higher. */
	c = narrowed_ok(state, "{\"min_tier\": \"gvisor\"}", "{\"min_tier\": \"container\"}");
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_min_tier(eff), SBX_TIER_GVISOR);
	sbx_policy_free(eff);
	sbx_config_free(c);
	c = narrowed_ok(state, "{\"min_tier\": \"gvisor\"}", "{\"min_tier\": \"microvm\"}");
	eff = apply_ok(c, req);
	assert_int_equal(sbx_policy_min_tier(eff), SBX_TIER_MICROVM);
	sbx_policy_free(eff);
	sbx_config_free(c);
	sbx_policy_free(req);
}

static void test_core_config__narrow_by_environment(void **state)
{
	const char *sys = in_dir(state, "system.json"), *env = in_dir(state, "env.json");
	sbx_config *c = SENTINEL;

	write_file(sys, "{\"ceilings\": {\"timeout\": 600}}", 0644);
	write_file(env, "{\"ceilings\": {\"timeout\": 900}}", 0600);
	setenv(SBX_CONFIG_ENV, env, 1);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, geteuid()), SBX_EDENIED);
	assert_ptr_equal(c, SENTINEL);
	assert_msg(env);
	assert_msg(sys);
	assert_msg("ceilings.timeout");
	write_file(env, "{\"defaults\": {\"timeout\": 10}, \"ceilings\": {\"timeout\": 30}}", 0600);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, geteuid()), 0);
	assert_int_equal(sbx_config_timeout_ceiling_ms(c), 30000);
	assert_string_equal(sbx_config_source(c), env);
	sbx_config_free(c);
	/* A missing narrowing file is an error, never the system config alone. */
	setenv(SBX_CONFIG_ENV, in_dir(state, "nope.json"), 1);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, geteuid()), SBX_ENOTFOUND);
	unsetenv(SBX_CONFIG_ENV);
}

static void test_core_config__narrow_system_file_checked(void **state)
{
	const char *sys = in_dir(state, "system.json");
	sbx_config *c = SENTINEL;

	write_file(sys, "{}", 0664);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, geteuid()), SBX_EDENIED);
	assert_msg("writable by its group");
	write_file(sys, "{}", 0646);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, geteuid()), SBX_EDENIED);
	/* The real system file must be owned by root. */
	write_file(sys, "{}", 0644);
	if (geteuid() == 0)
		assert_int_equal(chown(sys, 65534, 65534), 0);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, 0), SBX_EDENIED);
	assert_msg("not root");
	assert_ptr_equal(c, SENTINEL);
	/* A malformed system file is an error, not the built-in config. */
	unlink(sys);
	write_file(sys, "{\"ceilings\": {\"swap\": 1}}", 0644);
	assert_int_equal(sbx__config_load_narrowed(&c, NULL, sys, geteuid()), SBX_EINVALID);
	assert_msg(sys);
}

static void test_core_config__narrow_describe_origins(void **state)
{
	const char *sysp = in_dir(state, "system.json"), *narp = in_dir(state, "narrow.json");
	sbx_policy *req = policy();
	sbx_config *c;
	json_t *j;

	c = narrowed_ok(
		state,
		"{\"defaults\": {\"memory\": \"512m\"}, \"ceilings\": {\"timeout\": 600, "
		"\"memory\": \"1g\"}, \"images\": [\"sandboxio/python:3.11\"], "
		"\"secrets\": false}",
		"{\"defaults\": {\"pids\": 64, \"timeout\": 30}, \"ceilings\": {\"timeout\": "
		"60}}");
	assert_int_equal(sbx_policy_set_limit(req, SBX_LIMIT_CPU_MILLI, 500), 0);
	j = describe(c, req);
	assert_string_equal(jstr(j, "source", NULL, NULL), narp);
	assert_string_equal(jstr(j, "system", NULL, NULL), sysp);
	assert_string_equal(jstr(j, "ceilings", "timeout", "origin"), narp);
	assert_string_equal(jstr(j, "ceilings", "memory", "origin"), sysp);
	assert_string_equal(jstr(j, "ceilings", "pids", "origin"), "builtin");
	assert_string_equal(jstr(j, "effective", "memory", "origin"), sysp);
	assert_string_equal(jstr(j, "effective", "pids", "origin"), narp);
	assert_string_equal(jstr(j, "effective", "cpus", "origin"), "request");
	assert_string_equal(jstr(j, "effective", "disk", "origin"), "builtin");
	assert_string_equal(jstr(j, "images", "origin", NULL), sysp);
	assert_string_equal(jstr(j, "secrets", "origin", NULL), sysp);
	assert_string_equal(jstr(j, "egress", "origin", NULL), narp);
	json_decref(j);
	sbx_config_free(c);
	/* No narrowing file: the system config, named as such. */
	c = narrowed_ok(state, NULL, NULL);
	j = describe(c, NULL);
	assert_string_equal(jstr(j, "system", NULL, NULL), "builtin");
	json_decref(j);
	sbx_config_free(c);
	sbx_policy_free(req);
}

/* ===== The pause ceiling ===== */

/* ceilings.pause: seconds, at most a day; anything else refused naming the key. */
static void test_core_config__pause_ceiling_parse(void **state)
{
	sbx_config *c;

	(void)state;
	assert_int_equal(sbx_config_pause_ceiling_ms(NULL), SBX_PAUSE_MAX_DEFAULT_MS);
	c = parse_ok("{}");
	assert_int_equal(sbx_config_pause_ceiling_ms(c), SBX_PAUSE_MAX_DEFAULT_MS);
	sbx_config_free(c);
	c = parse_ok("{\"ceilings\": {\"pause\": 600.5}}");
	assert_int_equal(sbx_config_pause_ceiling_ms(c), 600500);
	sbx_config_free(c);
	c = parse_ok("{\"ceilings\": {\"pause\": 86400}}");
	assert_int_equal(sbx_config_pause_ceiling_ms(c), SBX_PAUSE_MAX_MS);
	sbx_config_free(c);
	parse_bad("{\"ceilings\": {\"pause\": 86401}}", "ceilings.pause");
	assert_msg("a day");
	parse_bad("{\"ceilings\": {\"pause\": 86400.001}}", "ceilings.pause");
	parse_bad("{\"ceilings\": {\"pause\": 0}}", "ceilings.pause");
	parse_bad("{\"ceilings\": {\"pause\": -5}}", "ceilings.pause");
	parse_bad("{\"ceilings\": {\"pause\": \"1h\"}}", "ceilings.pause");
	parse_bad("{\"ceilings\": {\"pause\": [60]}}", "ceilings.pause");
	/* A ceiling only: there is no default for a caller to leave unset. */
	parse_bad("{\"defaults\": {\"pause\": 60}}", "defaults.pause");
}

/* The merge carries the ceiling into the policy; the check refuses above it. */
static void test_core_config__pause_ceiling_apply(void **state)
{
	sbx_config *c = parse_ok("{\"ceilings\": {\"pause\": 600}}");
	sbx_policy *req = policy(), *eff;

	(void)state;
	/* A policy no config has seen keeps the built-in hour. */
	assert_int_equal(req->pause_max_ms, SBX_PAUSE_MAX_DEFAULT_MS);
	eff = apply_ok(NULL, req);
	assert_int_equal(eff->pause_max_ms, SBX_PAUSE_MAX_DEFAULT_MS);
	sbx_policy_free(eff);
	eff = apply_ok(c, req);
	assert_int_equal(eff->pause_max_ms, 600000);
	assert_int_equal(sbx__config_check_pause(c, eff->pause_max_ms, 600000), 0);
	assert_int_equal(sbx__config_check_pause(c, eff->pause_max_ms, 600001), SBX_EDENIED);
	assert_int_equal(sbx_error_last()->klass, SBX_ERRCLASS_POLICY);
	assert_msg("ceilings.pause (600 s)");
	assert_msg("600.001 s");
	assert_msg(ORIGIN);
	sbx_policy_free(eff);
	/* The built-in ceiling is named as such. */
	assert_int_equal(sbx__config_check_pause(NULL, SBX_PAUSE_MAX_DEFAULT_MS,
						 SBX_PAUSE_MAX_DEFAULT_MS + 1),
			 SBX_EDENIED);
	assert_msg("ceilings.pause (3600 s)");
	assert_msg("(built-in)");
	sbx_policy_free(req);
	sbx_config_free(c);
}

static void test_core_config__pause_ceiling_describe(void **state)
{
	sbx_config *c = parse_ok("{\"ceilings\": {\"pause\": 900}}");
	json_t *j;

	(void)state;
	j = describe(NULL, NULL);
	assert_int_equal(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(j, "ceilings"), "pause"), "value")),
		3600);
	assert_string_equal(jstr(j, "ceilings", "pause", "origin"), "builtin");
	json_decref(j);
	j = describe(c, NULL);
	assert_int_equal(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(j, "ceilings"), "pause"), "value")),
		900);
	assert_string_equal(jstr(j, "ceilings", "pause", "origin"), ORIGIN);
	json_decref(j);
	sbx_config_free(c);
}

/* A narrowing config may lower the pause ceiling, never raise it. */
static void test_core_config__narrow_pause_ceiling(void **state)
{
	const char *sysp = in_dir(state, "system.json"), *narp = in_dir(state, "narrow.json");
	sbx_config *c;
	json_t *j;

	c = narrowed_ok(state, "{\"ceilings\": {\"pause\": 7200}}",
			"{\"ceilings\": {\"pause\": 60}}");
	assert_int_equal(sbx_config_pause_ceiling_ms(c), 60000);
	j = describe(c, NULL);
	assert_string_equal(jstr(j, "ceilings", "pause", "origin"), narp);
	json_decref(j);
	assert_int_equal(sbx__config_check_pause(c, sbx_config_pause_ceiling_ms(c), 61000),
			 SBX_EDENIED);
	assert_msg(narp);
	sbx_config_free(c);
	/* Left out: the system's, named as the system's. */
	c = narrowed_ok(state, "{\"ceilings\": {\"pause\": 7200}}", "{}");
	assert_int_equal(sbx_config_pause_ceiling_ms(c), 7200000);
	j = describe(c, NULL);
	assert_string_equal(jstr(j, "ceilings", "pause", "origin"), sysp);
	json_decref(j);
	sbx_config_free(c);
	c = narrowed_ok(state, "{\"ceilings\": {\"pause\": 7200}}",
			"{\"ceilings\": {\"pause\": 7200}}");
	sbx_config_free(c);
	narrowed_refused(state, "{\"ceilings\": {\"pause\": 7200}}",
			 "{\"ceilings\": {\"pause\": 7201}}", "ceilings.pause");
	assert_msg("above the system's ceilings.pause (7200 s)");
	/* The built-in system config bounds it at its hour. */
	narrowed_refused(state, NULL, "{\"ceilings\": {\"pause\": 3601}}", "ceilings.pause");
	assert_msg("(3600 s)");
	c = narrowed_ok(state, NULL, "{\"ceilings\": {\"pause\": 3600}}");
	sbx_config_free(c);
}

static void test_core_config__load_null_out_refused(void **state)
{
	(void)state;
	assert_int_equal(sbx_config_load(NULL, NULL), SBX_EINVALID);
}

/* ===== The key table and the docs ===== */

static void test_core_config__docs_name_every_key(void **state)
{
	FILE *f = fopen("docs/config.md", "r");
	char *doc;
	long n;

	(void)state;
	if (!f)
		fail_msg("docs/config.md: %s (run from the repository root)", strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	doc = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(doc, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	for (const struct sbx__config_key *k = sbx__config_keys; k->path; k++) {
		char quoted[96];

		snprintf(quoted, sizeof(quoted), "`%s`", k->path);
		if (!strstr(doc, quoted))
			fail_msg("docs/config.md does not document %s", quoted);
	}
	free(doc);
}

static void test_core_config__docs_examples_parse(void **state)
{
	FILE *f = fopen("docs/config.md", "r");
	char *doc, *at;
	int n = 0;
	long len;

	(void)state;
	if (!f)
		fail_msg("docs/config.md: %s (run from the repository root)", strerror(errno));
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	doc = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(doc, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	/* Every ```json block is a config, and a valid one. */
	for (at = strstr(doc, "```json\n"); at; at = strstr(at, "```json\n")) {
		char *start = at + 8, *end = strstr(start, "```");
		sbx_config *c = NULL;

		assert_non_null(end);
		if (sbx_config_parse(&c, start, (size_t)(end - start), "docs/config.md") != 0)
			fail_msg("example %d: %s", n + 1, sbx_error_last()->message);
		sbx_config_free(c);
		n++;
		at = end + 3;
	}
	assert_int_equal(n, 3);
	free(doc);
}

static void test_core_config__refcount(void **state)
{
	sbx_config *c = parse_ok(example);
	sbx_config *r = sbx__config_ref(c);

	(void)state;
	assert_ptr_equal(r, c);
	sbx_config_free(c);
	/* Still alive through the second reference. */
	assert_string_equal(sbx_config_source(r), ORIGIN);
	sbx_config_free(r);
	assert_null(sbx__config_ref(NULL));
}

#define T(name) cmocka_unit_test(test_core_config__##name)
#define L(name) cmocka_unit_test_setup_teardown(test_core_config__##name, load_setup, load_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(example_parses),
		T(builtin_values),
		T(inline_origin),
		T(unknown_keys_refused),
		T(duplicate_keys_refused),
		T(wrong_types_refused),
		T(unsetting_values_refused),
		T(outside_builtin_range_refused),
		T(fractions_accepted),
		T(default_above_ceiling_refused),
		T(images_rules),
		T(egress_rules),
		T(backends_tier_rules),
		T(malformed_refused),
		T(too_big_refused),
		T(no_config_is_builtin),
		T(operator_defaults_fill_unset),
		T(request_beats_operator_default),
		T(dup_keeps_set_tracking),
		T(refused_setter_sets_nothing),
		T(each_limit_ceiling),
		T(each_timeout_ceiling),
		T(denial_message_names_value_and_ceiling),
		T(output_ceiling_check),
		T(images_permitted),
		T(backend_permitted),
		T(tenant_required),
		T(min_tier_is_a_floor),
		T(secrets_hook),
		T(egress_hooks),
		T(egress_allowlist_checked),
		T(egress_presets_permit_their_names),
		T(describe_origins),
		T(describe_builtin_and_refusal),
		L(load_explicit_path),
		L(load_errors_name_the_file),
		L(load_missing_explicit_refused),
		L(load_search_order),
		L(load_writable_file_refused),
		L(load_writable_directory_refused),
		L(load_foreign_owner_refused),
		L(load_symlink_checks_target),
		L(load_not_regular_refused),
		L(narrow_none_is_the_system),
		L(narrow_ceilings_take_the_smaller),
		L(narrow_defaults_within_system_ceilings),
		L(narrow_images_intersect),
		L(narrow_egress_inside_system),
		L(narrow_backends_intersect),
		L(narrow_secrets_tenant_tier),
		L(narrow_by_environment),
		L(narrow_system_file_checked),
		L(narrow_describe_origins),
		T(pause_ceiling_parse),
		T(pause_ceiling_apply),
		T(pause_ceiling_describe),
		L(narrow_pause_ceiling),
		T(load_null_out_refused),
		T(docs_name_every_key),
		T(docs_examples_parse),
		T(refcount),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
