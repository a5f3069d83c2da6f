/*
 * tests/contract/test_docker_config.c: the operator config on a real
 * dockerd. A request at a ceiling is created and the Engine holds exactly
 * that value (read back independently); a request one step above is refused
 * and leaves no container; the operator's defaults are what the Engine holds
 * when the caller sets nothing; an unsafe config file is never used. Config
 * files are written under a mkdtemp directory and loaded from there, so each
 * case goes through the same search and permission check as the CLI.
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

#include "core/config-int.h"
#include "support/engine.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Ceilings at values a test can create on a 2-core host, with defaults under them. */
static const char ceilings_json[] =
	"{\"ceilings\": {\"timeout\": 600, \"cpus\": 2, \"memory\": \"768m\", \"pids\": 300, "
	"\"disk\": \"512m\", \"nofile\": 2048, \"output\": \"1m\"},\n"
	" \"defaults\": {\"disk\": \"256m\", \"output\": \"64k\"},\n"
	" \"images\": [\"sandboxio/python:3.11\"]}\n";

static const char defaults_json[] =
	"{\"defaults\": {\"timeout\": 120, \"cpus\": 0.5, \"memory\": \"384m\", \"pids\": 128, "
	"\"disk\": \"256m\", \"nofile\": 512}}\n";

static char tmpdir[64];

static void assert_msg(const char *needle)
{
	const char *m = sbx_error_last()->message;

	if (!strstr(m, needle))
		fail_msg("error message '%s' does not mention '%s'", m, needle);
}

static void assert_none_left(void)
{
	char lab[128];

	snprintf(lab, sizeof(lab), "io.sandboxio.tenant=%s", t_tenant());
	assert_int_equal(t_engine_count_label(lab), 0);
}

/* Writes name under the test directory with mode; returns its path (static). */
static const char *write_config(const char *name, const char *text, mode_t mode)
{
	static char path[4][128];
	static int n;
	char *p = path[n++ % 4];
	FILE *f;

	snprintf(p, 128, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
	return p;
}

static sbx_config *load(const char *path)
{
	sbx_config *c = NULL;

	if (sbx_config_load(&c, path) != 0)
		fail_msg("config_load %s: %s", path, sbx_error_last()->message);
	return c;
}

/* The docker backend bound by c; the backend keeps its own reference. */
static sbx_backend *backend_with(sbx_config *c)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	o.config = c;
	if (sbx_backend_open(&b, "docker", &o) != 0)
		fail_msg("backend_open: %s", sbx_error_last()->message);
	sbx_config_free(c);
	return b;
}

static json_t *inspect(sbx_sandbox *s)
{
	char path[256];
	long st = 0;
	json_t *j;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	j = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	return j;
}

static long long hci(json_t *j, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(j, "HostConfig"), key));
}

/* The deadline label is taken a moment before the created label, so the two
 * may straddle a second. */
static long long label_ll(json_t *j, const char *key)
{
	json_t *l = json_object_get(json_object_get(j, "Config"), "Labels");

	return atoll(json_string_value(json_object_get(l, key)));
}

static long long ulimit_nofile(json_t *j)
{
	json_t *ul = json_object_get(json_object_get(j, "HostConfig"), "Ulimits");
	size_t i;
	json_t *u;

	json_array_foreach(ul, i, u)
	{
		if (strcmp(json_string_value(json_object_get(u, "Name")), "nofile") == 0)
			return json_integer_value(json_object_get(u, "Soft"));
	}
	return -1;
}

static long long tmpfs_size(json_t *j, const char *mount)
{
	json_t *t = json_object_get(json_object_get(j, "HostConfig"), "Tmpfs");
	const char *opts = json_string_value(json_object_get(t, mount));
	const char *sz = opts ? strstr(opts, "size=") : NULL;
	const char *session = json_string_value(json_object_get(
		json_object_get(json_object_get(j, "Config"), "Labels"), "io.sandboxio.session"));
	char path[256];
	struct stat st;

	if (sz)
		return atoll(sz + 5);
	/* /workspace as a disk of its own (engine/disk.c): the size of its file. */
	snprintf(path, sizeof(path), "/var/lib/sandboxio/disks/%s.img", session ? session : "");
	return strcmp(mount, "/workspace") == 0 && stat(path, &st) == 0 ? (long long)st.st_size
									: -1;
}

static int setup(void **state)
{
	(void)state;
	if (!t_engine_ready()) {
		fprintf(stderr, "contract: dockerd or the default image is missing\n");
		return -1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sbx-config-contract-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	unsetenv(SBX_CONFIG_ENV);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ===== Ceilings ===== */

static void test_engine_config__at_ceiling_applied(void **state)
{
	sbx_backend *b = backend_with(load(write_config("ceil.json", ceilings_json, 0644)));
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	sbx_result *r;
	void *data = NULL;
	size_t len = 0;
	json_t *j;

	(void)state;
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++)
		assert_int_equal(sbx_policy_set_timeout_ms(p, (sbx_timeout_kind)k, 600000), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_CPU_MILLI, 2000), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, 768ll << 20), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 300), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_DISK, 512ll << 20), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_NOFILE, 2048), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_OUTPUT, 1ll << 20), 0);
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create at the ceilings: %s", sbx_error_last()->message);
	j = inspect(s);
	assert_int_equal(hci(j, "Memory"), 768ll << 20);
	assert_int_equal(hci(j, "MemorySwap"), 768ll << 20);
	assert_int_equal(hci(j, "NanoCpus"), 2000000000ll);
	assert_int_equal(hci(j, "PidsLimit"), 300);
	assert_int_equal(ulimit_nofile(j), 2048);
	/* The writable mounts add up to the disk ceiling. */
	assert_int_equal(tmpfs_size(j, "/workspace") + tmpfs_size(j, "/tmp") + hci(j, "ShmSize"),
			 512ll << 20);
	assert_in_range(label_ll(j, "io.sandboxio.deadline") - label_ll(j, "io.sandboxio.created"),
			599, 600);
	json_decref(j);
	/* The output ceiling is what a run captures. */
	r = t_run(s, "head -c 2000000 /dev/zero", NULL);
	assert_int_equal(r->stdout_len, 1u << 20);
	assert_true(r->stdout_truncated);
	sbx_result_free(r);
	/* A file read is bounded by it too: at it accepted, above it refused. */
	r = t_run(s, "head -c 1000 /dev/zero > /workspace/f", NULL);
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_read_file(&data, &len, s, "/workspace/f", 1u << 20), 0);
	assert_int_equal(len, 1000);
	sbx_free(data);
	data = NULL;
	assert_int_equal(sbx_sandbox_read_file(&data, &len, s, "/workspace/f", (1u << 20) + 1),
			 SBX_EDENIED);
	assert_msg("ceilings.output");
	assert_null(data);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_config__above_ceiling_refused_nothing_left(void **state)
{
	static const struct {
		sbx_limit_kind kind;
		int64_t value;
		const char *ceiling;
	} limits[] = {
		{SBX_LIMIT_CPU_MILLI, 2001, "ceilings.cpus"},
		{SBX_LIMIT_MEMORY, (768ll << 20) + 1, "ceilings.memory"},
		{SBX_LIMIT_PIDS, 301, "ceilings.pids"},
		{SBX_LIMIT_DISK, (512ll << 20) + 1, "ceilings.disk"},
		{SBX_LIMIT_NOFILE, 2049, "ceilings.nofile"},
		{SBX_LIMIT_OUTPUT, (1ll << 20) + 1, "ceilings.output"},
		{SBX_LIMIT_MEMORY, 64ll << 30, "ceilings.memory"},
	};
	const char *path = write_config("ceil.json", ceilings_json, 0644);
	sbx_backend *b = backend_with(load(path));

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(limits); i++) {
		sbx_policy *p = t_policy();
		sbx_sandbox *s = NULL;

		assert_int_equal(sbx_policy_set_limit(p, limits[i].kind, limits[i].value), 0);
		assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EDENIED);
		assert_null(s);
		assert_msg(limits[i].ceiling);
		assert_msg(path);
		sbx_policy_free(p);
	}
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++) {
		sbx_policy *p = t_policy();
		sbx_sandbox *s = NULL;

		assert_int_equal(sbx_policy_set_timeout_ms(p, (sbx_timeout_kind)k, 601000), 0);
		assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EDENIED);
		assert_null(s);
		assert_msg("ceilings.timeout");
		assert_msg(path);
		sbx_policy_free(p);
	}
	assert_none_left();
	sbx_backend_free(b);
}

static void test_engine_config__image_not_permitted_refused(void **state)
{
	const char *path = write_config("ceil.json", ceilings_json, 0644);
	sbx_backend *b = backend_with(load(path));
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	(void)state;
	assert_int_equal(sbx_policy_set_image(p, "attacker/tool:latest"), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EDENIED);
	assert_null(s);
	assert_msg("attacker/tool:latest");
	assert_msg(path);
	assert_none_left();
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* ===== Precedence ===== */

static void test_engine_config__operator_defaults_apply(void **state)
{
	sbx_backend *b = backend_with(load(write_config("defaults.json", defaults_json, 0600)));
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	json_t *j;

	(void)state;
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	j = inspect(s);
	assert_int_equal(hci(j, "Memory"), 384ll << 20);
	assert_int_equal(hci(j, "MemorySwap"), 384ll << 20);
	assert_int_equal(hci(j, "NanoCpus"), 500000000ll);
	assert_int_equal(hci(j, "PidsLimit"), 128);
	assert_int_equal(ulimit_nofile(j), 512);
	assert_int_equal(tmpfs_size(j, "/workspace") + tmpfs_size(j, "/tmp") + hci(j, "ShmSize"),
			 256ll << 20);
	assert_in_range(label_ll(j, "io.sandboxio.deadline") - label_ll(j, "io.sandboxio.created"),
			119, 120);
	json_decref(j);
	/* What the sandbox reports is the merged policy. */
	assert_int_equal(sbx_policy_limit(sbx_sandbox_policy(s), SBX_LIMIT_PIDS), 128);
	assert_int_equal(sbx_policy_timeout_ms(sbx_sandbox_policy(s), SBX_TIMEOUT_RUN), 120000);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_config__request_beats_operator_default(void **state)
{
	sbx_backend *b = backend_with(load(write_config("defaults.json", defaults_json, 0600)));
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	json_t *j;

	(void)state;
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, 256ll << 20), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 512), 0);
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	j = inspect(s);
	assert_int_equal(hci(j, "Memory"), 256ll << 20);
	assert_int_equal(hci(j, "PidsLimit"), 512);
	/* What the request left alone still comes from the operator. */
	assert_int_equal(hci(j, "NanoCpus"), 500000000ll);
	json_decref(j);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_engine_config__no_config_is_builtin(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	json_t *j;

	(void)state;
	assert_int_equal(sbx_backend_open(&b, "docker", &o), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_PIDS, 2000), 0);
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	j = inspect(s);
	assert_int_equal(hci(j, "PidsLimit"), 2000);
	assert_int_equal(hci(j, "Memory"), 512ll << 20);
	json_decref(j);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* ===== Backends, tiers ===== */

static void test_engine_config__backend_not_permitted_refused(void **state)
{
	const char *path = write_config("e2b.json", "{\"backends\": [\"e2b\"]}", 0644);
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_config *c = load(path);
	sbx_backend *b = NULL;

	(void)state;
	o.config = c;
	assert_int_equal(sbx_backend_open(&b, "docker", &o), SBX_EDENIED);
	assert_null(b);
	assert_msg("backends");
	assert_msg(path);
	sbx_config_free(c);
}

static void test_engine_config__min_tier_floor(void **state)
{
	sbx_backend *b =
		backend_with(load(write_config("tier.json", "{\"min_tier\": \"gvisor\"}", 0644)));
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;
	json_t *info, *runtimes;
	long st = 0;
	int has_runsc;

	(void)state;
	info = t_engine_get("/info", &st);
	assert_int_equal(st, 200);
	runtimes = json_object_get(info, "Runtimes");
	has_runsc = json_object_get(runtimes, "runsc") != NULL;
	json_decref(info);
	/* The caller asks for the weakest tier; the operator's floor wins. */
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_CONTAINER), 0);
	if (!has_runsc) {
		assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
		assert_null(s);
		assert_msg("gvisor");
		assert_none_left();
	} else {
		if (sbx_sandbox_create(&s, b, p) != 0)
			fail_msg("create: %s", sbx_error_last()->message);
		assert_int_equal(sbx_sandbox_tier(s), SBX_TIER_GVISOR);
		assert_int_equal(sbx_sandbox_close(s), 0);
	}
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* ===== Egress ===== */

static void test_engine_config__egress_outside_refused(void **state)
{
	const char *path = write_config("egress.json",
					"{\"egress\": {\"cidrs\": [\"198.51.100.0/24\"], "
					"\"hosts\": [\"pypi.org\"]}}",
					0644);
	const char *closed = write_config("closed.json", "{}", 0644);
	sbx_backend *b = backend_with(load(path));
	sbx_backend *bc = backend_with(load(closed));
	sbx_policy *host = t_policy(), *cidr = t_policy(), *inside = t_policy();
	sbx_sandbox *s = NULL;

	(void)state;
	assert_int_equal(sbx_policy_allow_host(host, "evil.example", 443), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, host), SBX_EDENIED);
	assert_null(s);
	assert_msg("egress.hosts");
	assert_msg(path);
	assert_int_equal(sbx_policy_allow_cidr(cidr, "203.0.113.0/24", 0), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, cidr), SBX_EDENIED);
	assert_null(s);
	assert_msg("egress.cidrs");
	/* A config without "egress": not even a permitted-looking entry. */
	assert_int_equal(sbx_policy_allow_cidr(inside, "198.51.100.0/24", 0), 0);
	assert_int_equal(sbx_sandbox_create(&s, bc, inside), SBX_EDENIED);
	assert_null(s);
	assert_msg("no call may open the network");
	assert_msg(closed);
	assert_none_left();
	sbx_policy_free(host);
	sbx_policy_free(cidr);
	sbx_policy_free(inside);
	sbx_backend_free(b);
	sbx_backend_free(bc);
}

/* ===== Secrets ===== */

static void test_engine_config__secrets_refused(void **state)
{
	const char *path = write_config("nosecrets.json", "{\"secrets\": false}", 0644);
	sbx_backend *b = backend_with(load(path));
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"sh", "-c", "echo ran", NULL};
	sbx_policy *p = t_policy();
	sbx_secrets *sec = NULL;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;

	(void)state;
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "API_TOKEN", "tok-7f3a9c", 10), 0);
	ro.secrets = sec;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), SBX_EDENIED);
	assert_null(r);
	assert_msg("secrets is false");
	assert_msg(path);
	/* The same run without secrets goes ahead. */
	ro.secrets = NULL;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &ro), 0);
	assert_string_equal(r->stdout_data, "ran\n");
	sbx_result_free(r);
	sbx_secrets_free(sec);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* ===== The file ===== */

static void test_engine_config__unsafe_file_refused(void **state)
{
	static const mode_t bad[] = {0666, 0664, 0646};
	const char *path = write_config("wide.json", "{}", 0644);
	sbx_config *c = NULL;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		assert_int_equal(chmod(path, bad[i]), 0);
		assert_int_equal(sbx_config_load(&c, path), SBX_EDENIED);
		assert_null(c);
		assert_msg(path);
		assert_msg("writable");
		/* The same file named by the environment is refused the same way. */
		setenv(SBX_CONFIG_ENV, path, 1);
		assert_int_equal(sbx_config_load(&c, NULL), SBX_EDENIED);
		assert_null(c);
		unsetenv(SBX_CONFIG_ENV);
	}
}

static void test_engine_config__env_config_binds(void **state)
{
	const char *path = write_config("env.json", ceilings_json, 0644);
	sbx_config *c = NULL;
	sbx_backend *b;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	(void)state;
	setenv(SBX_CONFIG_ENV, path, 1);
	assert_int_equal(sbx_config_load(&c, NULL), 0);
	unsetenv(SBX_CONFIG_ENV);
	assert_string_equal(sbx_config_source(c), path);
	b = backend_with(c);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, 1ll << 30), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EDENIED);
	assert_msg("ceilings.memory");
	assert_none_left();
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* ===== What the system config takes from the caller ===== */

/* Loads sys_path as the system config (owner: this user, as root owns it). */
static sbx_config *load_system(const char *sys_path, const char *narrowing)
{
	sbx_config *c = NULL;

	if (sbx__config_load_narrowed(&c, narrowing, sys_path, getuid()) != 0)
		fail_msg("load system config %s: %s", sys_path, sbx_error_last()->message);
	return c;
}

/* Opens docker bound by c with the init given explicitly (the program's
 * choice), and the caller's hosts file and audit log; returns the code. */
static int
open_bound(sbx_backend **b, sbx_config *c, const char *init, const char *hosts, const char *audit)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;

	o.config = c;
	o.init_path = init;
	o.hosts_file = hosts;
	o.audit_path = audit;
	*b = NULL;
	return sbx_backend_open(b, "docker", &o);
}

/*
 * Under the system config, allowed names resolve where the operator says
 * (egress.hosts_file here): a caller's --hosts-file, $SANDBOXIO_HOSTS_FILE,
 * $SANDBOXIO_INIT and $SANDBOXIO_EGRESS are refused naming the system
 * config, and the name
 * is pinned to the operator's address, not the caller's. The addresses are
 * only pinned, never contacted.
 */
static void test_engine_config__system_config_owns_resolution_and_init(void **state)
{
	char op_hosts[160], caller_hosts[160], text[512], init[512];
	const char *sys_path, *env_init = getenv("SANDBOXIO_INIT");
	sbx_config *c;
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	json_t *j, *pins;

	(void)state;
	snprintf(init, sizeof(init), "%s", env_init ? env_init : SBX_LIBEXECDIR "/sbx-init");
	snprintf(op_hosts, sizeof(op_hosts), "%s",
		 write_config("op-hosts", "198.51.100.7 canary-a.test\n", 0644));
	snprintf(caller_hosts, sizeof(caller_hosts), "%s",
		 write_config("caller-hosts", "203.0.113.9 canary-a.test\n", 0644));
	snprintf(text, sizeof(text),
		 "{\"egress\": {\"hosts\": [\"canary-a.test\"], \"hosts_file\": \"%s\"}}\n",
		 op_hosts);
	sys_path = write_config("system.json", text, 0644);
	c = load_system(sys_path, NULL);
	assert_true(sbx__config_operator_bound(c));
	unsetenv("SANDBOXIO_INIT");

	assert_int_equal(open_bound(&b, c, init, caller_hosts, NULL), SBX_EDENIED);
	assert_msg("--hosts-file");
	assert_msg(sys_path);
	setenv("SANDBOXIO_HOSTS_FILE", caller_hosts, 1);
	assert_int_equal(open_bound(&b, c, init, NULL, NULL), SBX_EDENIED);
	assert_msg("$SANDBOXIO_HOSTS_FILE");
	unsetenv("SANDBOXIO_HOSTS_FILE");
	setenv("SANDBOXIO_INIT", init, 1);
	assert_int_equal(open_bound(&b, c, init, NULL, NULL), SBX_EDENIED);
	assert_msg("$SANDBOXIO_INIT");
	unsetenv("SANDBOXIO_INIT");
	setenv("SANDBOXIO_EGRESS", "/bin/true", 1);
	assert_int_equal(open_bound(&b, c, init, NULL, NULL), SBX_EDENIED);
	assert_msg("$SANDBOXIO_EGRESS");
	unsetenv("SANDBOXIO_EGRESS");

	assert_int_equal(open_bound(&b, c, init, NULL, NULL), 0);
	p = t_policy();
	assert_int_equal(sbx_policy_allow_host(p, "canary-a.test", 80), 0);
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	j = inspect(s);
	pins = json_object_get(json_object_get(j, "HostConfig"), "ExtraHosts");
	assert_int_equal(json_array_size(pins), 1);
	assert_string_equal(json_string_value(json_array_get(pins, 0)),
			    "canary-a.test:198.51.100.7");
	json_decref(j);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
	sbx_config_free(c);
	if (env_init)
		setenv("SANDBOXIO_INIT", env_init, 1);
}

/* Counts the lines of path that hold needle. */
/*
 * The lines of an audit log that hold needle and are of this test's tenant:
 * opening a backend reaps the host's orphans and audits their removal too,
 * and another process's orphans (a concurrent suite's) are not this test's.
 */
static int count_lines(const char *path, const char *needle)
{
	char line[8192], tenant[128];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	snprintf(tenant, sizeof(tenant), "\"tenant\":\"%s\"", t_tenant());
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL && strstr(line, tenant) != NULL;
	fclose(f);
	return n;
}

/*
 * The system config's audit.path is written whatever the call says: a
 * call with its own audit log writes both, a call with none still writes
 * the operator's, and a narrowing config cannot name another.
 */
static void test_engine_config__system_audit_required(void **state)
{
	char op_log[160], caller_log[160], text[512], init[512];
	const char *sys_path, *env_init = getenv("SANDBOXIO_INIT"), *nar;
	sbx_config *c, *bad = NULL;
	sbx_backend *b;
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	(void)state;
	snprintf(init, sizeof(init), "%s", env_init ? env_init : SBX_LIBEXECDIR "/sbx-init");
	snprintf(op_log, sizeof(op_log), "%s/op-audit.log", tmpdir);
	snprintf(caller_log, sizeof(caller_log), "%s/caller-audit.log", tmpdir);
	snprintf(text, sizeof(text), "{\"audit\": {\"path\": \"%s\"}}\n", op_log);
	sys_path = write_config("audit-system.json", text, 0644);
	c = load_system(sys_path, NULL);
	unsetenv("SANDBOXIO_INIT");

	assert_int_equal(open_bound(&b, c, init, NULL, caller_log), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_backend_free(b);
	assert_int_equal(count_lines(op_log, "\"event\":\"sandbox.create\""), 1);
	assert_int_equal(count_lines(caller_log, "\"event\":\"sandbox.create\""), 1);
	assert_int_equal(count_lines(op_log, "\"event\":\"sandbox.destroy\""), 1);

	/* No audit log of the call's own: the operator's is still written. */
	assert_int_equal(open_bound(&b, c, init, NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_backend_free(b);
	assert_int_equal(count_lines(op_log, "\"event\":\"sandbox.create\""), 2);
	assert_int_equal(count_lines(caller_log, "\"event\":\"sandbox.create\""), 1);

	/* The same file named by the call is written once per event. */
	assert_int_equal(open_bound(&b, c, init, NULL, op_log), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), 0);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_backend_free(b);
	assert_int_equal(count_lines(op_log, "\"event\":\"sandbox.create\""), 3);

	snprintf(text, sizeof(text), "{\"audit\": {\"path\": \"%s\"}}\n", caller_log);
	nar = write_config("audit-narrow.json", text, 0644);
	assert_int_equal(sbx__config_load_narrowed(&bad, nar, sys_path, getuid()), SBX_EDENIED);
	assert_msg("audit.path");
	assert_null(bad);
	sbx_config_free(c);
	sbx_policy_free(p);
	if (env_init)
		setenv("SANDBOXIO_INIT", env_init, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_config__at_ceiling_applied),
		cmocka_unit_test(test_engine_config__above_ceiling_refused_nothing_left),
		cmocka_unit_test(test_engine_config__image_not_permitted_refused),
		cmocka_unit_test(test_engine_config__operator_defaults_apply),
		cmocka_unit_test(test_engine_config__request_beats_operator_default),
		cmocka_unit_test(test_engine_config__no_config_is_builtin),
		cmocka_unit_test(test_engine_config__backend_not_permitted_refused),
		cmocka_unit_test(test_engine_config__min_tier_floor),
		cmocka_unit_test(test_engine_config__egress_outside_refused),
		cmocka_unit_test(test_engine_config__secrets_refused),
		cmocka_unit_test(test_engine_config__unsafe_file_refused),
		cmocka_unit_test(test_engine_config__env_config_binds),
		cmocka_unit_test(test_engine_config__system_config_owns_resolution_and_init),
		cmocka_unit_test(test_engine_config__system_audit_required),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] config", tests, setup,
					   teardown);
}
