/*
 * tests/contract/test_docker_audit.c: audit events against the real dockerd.
 *
 * A backend opened with an audit file and callback records each sandbox's
 * life: sandbox.create with tenant, image, tier and the policy's limits,
 * run.start with argv after redaction and the names (only) of secrets,
 * run.end with status, exit code, duration, usage and bytes out, for runs,
 * run_code and file transfers, and sandbox.destroy with its reason (closed,
 * killed, timeout, reaped); a refused create is a policy.refused event. The
 * events of a run are in the file when the run returns, the secret is in
 * none of them, and an event that cannot be written fails its operation
 * closed: no result is handed out, and no sandbox is left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

#define SECRET "Aud1t-S3cret/Value+42"

struct fx {
	char dir[64];
	char path[128];
	sbx_backend *b;
	sbx_policy *p;
	sbx_secrets *sec;
	const char *refuse; /* the callback refuses this event */
	int events;
};

static int on_event(const char *line, size_t len, void *payload)
{
	struct fx *f = payload;
	char want[64];

	f->events++;
	if (memmem(line, len, SECRET, strlen(SECRET)))
		return 1;
	snprintf(want, sizeof(want), "\"event\":\"%s\"", f->refuse ? f->refuse : "-");
	return f->refuse && memmem(line, len, want, strlen(want)) ? 1 : 0;
}

static int setup(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || !t_engine_ready())
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sbx-audit-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/audit.jsonl", f->dir);
	o.audit_path = f->path;
	o.audit_cb = on_event;
	o.audit_payload = f;
	o.no_reap_at_open = 1;
	if (sbx_backend_open(&f->b, "docker", &o) != 0 || sbx_secrets_new(&f->sec) != 0 ||
	    sbx_secrets_add(f->sec, "TOKEN", SECRET, strlen(SECRET)) != 0) {
		fprintf(stderr, "setup: %s\n", sbx_error_last()->message);
		return -1;
	}
	f->p = t_policy();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	sbx_secrets_free(f->sec);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* The clock the library judges a sandbox's deadline by. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The events in the file so far, as a JSON array; every line must parse. */
static json_t *events(struct fx *f)
{
	json_t *all = json_array();
	FILE *fp = fopen(f->path, "r");
	char line[1 << 16];

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		json_t *ev = json_loads(line, 0, NULL);

		assert_true(strlen(line) > 0 && line[strlen(line) - 1] == '\n');
		if (!ev)
			fail_msg("not JSON: %s", line);
		if (strstr(line, SECRET))
			fail_msg("the secret is in the audit log: %s", line);
		json_array_append_new(all, ev);
	}
	fclose(fp);
	return all;
}

/* The last event named name about sandbox id (NULL: any), or NULL. */
static json_t *last(json_t *all, const char *name, const char *id)
{
	json_t *found = NULL;

	for (size_t i = 0; i < json_array_size(all); i++) {
		json_t *ev = json_array_get(all, i);
		const char *sid = json_string_value(json_object_get(ev, "sandbox_id"));

		if (strcmp(json_string_value(json_object_get(ev, "event")), name) == 0 &&
		    (!id || (sid && strcmp(sid, id) == 0)))
			found = ev;
	}
	return found;
}

static const char *str(json_t *ev, const char *key)
{
	const char *v = json_string_value(json_object_get(ev, key));

	if (!v)
		fail_msg("event has no string '%s'", key);
	return v;
}

static sbx_sandbox *create(struct fx *f, sbx_policy *p)
{
	sbx_sandbox *s = NULL;

	if (sbx_sandbox_create(&s, f->b, p ? p : f->p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	return s;
}

static void test_engine_audit__life_of_a_sandbox(void **state)
{
	struct fx *f = *state;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	const char *argv[] = {"sh", "-c", "printf %s \"$TOKEN\"; echo " SECRET " >&2; exit 3",
			      NULL};
	sbx_sandbox *s = create(f, NULL);
	char id[128];
	sbx_result *r = NULL;
	json_t *all, *ev, *pol;
	void *data = NULL;
	size_t len = 0;

	snprintf(id, sizeof(id), "%s", sbx_sandbox_id(s));
	o.secrets = f->sec;
	assert_int_equal(sbx_sandbox_run(&r, s, argv, &o), 0);
	/* Before anything else: the run's events are in the file already. */
	all = events(f);
	ev = last(all, "run.end", id);
	assert_non_null(ev);
	assert_string_equal(str(ev, "status"), "exited");
	assert_int_equal(json_integer_value(json_object_get(ev, "exit_code")), 3);
	assert_string_equal(str(ev, "outcome"), "ok");
	assert_true(json_is_integer(json_object_get(ev, "duration_ms")));
	assert_true(json_is_integer(json_object_get(json_object_get(ev, "usage"), "cpu_user_us")));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(ev, "output"), "stdout_bytes")),
		strlen(SECRET));
	ev = last(all, "run.start", id);
	assert_non_null(ev);
	assert_string_equal(str(ev, "kind"), "run");
	assert_string_equal(json_string_value(json_array_get(json_object_get(ev, "argv"), 2)),
			    "printf %s \"$TOKEN\"; echo <redacted> >&2; exit 3");
	assert_string_equal(
		json_string_value(json_array_get(json_object_get(ev, "secret_names"), 0)), "TOKEN");
	assert_string_equal(str(ev, "run_id"), str(last(all, "run.end", id), "run_id"));
	json_decref(all);
	sbx_result_free(r);

	assert_int_equal(sbx_sandbox_run_code(&r, s, "python", "print(1)\n", 9, NULL), 0);
	sbx_result_free(r);
	assert_int_equal(sbx_sandbox_write_file(s, "/workspace/a.txt", "hello", 5, 0600), 0);
	assert_int_equal(sbx_sandbox_read_file(&data, &len, s, "/workspace/a.txt", 0), 0);
	sbx_free(data);
	assert_int_equal(sbx_sandbox_close(s), 0);

	all = events(f);
	ev = last(all, "sandbox.create", id);
	assert_non_null(ev);
	assert_string_equal(str(ev, "tenant"), t_tenant());
	assert_string_equal(str(ev, "image"), sbx_policy_image(f->p));
	assert_string_equal(str(ev, "tier"), "container");
	assert_string_equal(str(ev, "backend"), "docker");
	pol = json_object_get(ev, "policy");
	assert_string_equal(str(pol, "network"), "none");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(pol, "limits"), "memory")),
		sbx_policy_limit(f->p, SBX_LIMIT_MEMORY));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(pol, "timeouts_ms"), "run")),
		sbx_policy_timeout_ms(f->p, SBX_TIMEOUT_RUN));
	ev = last(all, "run.start", id);
	assert_string_equal(str(ev, "kind"), "read_file");
	assert_non_null(last(all, "run.end", id));
	{
		int kinds = 0;

		for (size_t i = 0; i < json_array_size(all); i++) {
			json_t *e = json_array_get(all, i);
			const char *k = json_string_value(json_object_get(e, "kind"));

			if (k && strcmp(str(e, "event"), "run.end") == 0 &&
			    (strcmp(k, "run_code") == 0 || strcmp(k, "write_file") == 0))
				kinds++;
		}
		assert_int_equal(kinds, 2);
	}
	ev = last(all, "sandbox.destroy", id);
	assert_non_null(ev);
	assert_string_equal(str(ev, "reason"), "closed");
	/* Sequence numbers rise, one per event. */
	for (size_t i = 1; i < json_array_size(all); i++)
		assert_int_equal(
			json_integer_value(json_object_get(json_array_get(all, i), "seq")),
			json_integer_value(json_object_get(json_array_get(all, i - 1), "seq")) + 1);
	json_decref(all);
}

static void test_engine_audit__destroy_reasons(void **state)
{
	struct fx *f = *state;
	sbx_policy *p = NULL;
	sbx_sandbox *s = create(f, NULL);
	char killed[128], timed[128], path[256];
	uint64_t created, dl;
	long st = 200;
	json_t *all;

	snprintf(killed, sizeof(killed), "%s", sbx_sandbox_id(s));
	assert_int_equal(sbx_sandbox_kill(s), 0);
	sbx_sandbox_close(s);
	assert_int_equal(sbx_policy_dup(&p, f->p), 0);
	/*
	 * A deadline that ran out before the create was done (the init ended
	 * first: exit code 124) proves nothing: again with twice the deadline.
	 */
	for (dl = 5000, s = NULL; !s; dl *= 2) {
		assert_true(dl <= 320000);
		assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, dl), 0);
		if (sbx_sandbox_create(&s, f->b, p) != 0 &&
		    !strstr(sbx_error_last()->message, "exit code 124"))
			fail_msg("create: %s", sbx_error_last()->message);
	}
	created = now_ns();
	dl /= 2;
	snprintf(timed, sizeof(timed), "%s", sbx_sandbox_id(s));
	/* The init ends the sandbox at its deadline: wait for it to be gone (a hang guard). */
	snprintf(path, sizeof(path), "/containers/%s/json", timed);
	for (uint64_t i = 0; i < 1200 + dl / 100 && st != 404; i++) {
		json_decref(t_engine_get(path, &st));
		if (st != 404)
			usleep(100000);
	}
	assert_int_equal(st, 404);
	/*
	 * The init's deadline is in whole seconds, so it may strike before the
	 * library's own (create's start + dl), which judges the reason: wait
	 * for that one too, on the same clock.
	 */
	while (now_ns() < created + dl * 1000000ull)
		usleep(10000);
	sbx_sandbox_close(s);
	all = events(f);
	assert_string_equal(str(last(all, "sandbox.destroy", killed), "reason"), "killed");
	assert_string_equal(str(last(all, "sandbox.destroy", timed), "reason"), "timeout");
	json_decref(all);
	sbx_policy_free(p);
}

static void test_engine_audit__reaped_orphan(void **state)
{
	struct fx *f = *state;
	sbx_reap_options ro = SBX_REAP_OPTIONS_INIT;
	char id[128] = "";
	int fds[2], status;
	json_t *all, *ev;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* An owner that dies without closing its sandbox. */
		sbx_backend *b = NULL;
		sbx_sandbox *s = NULL;

		if (sbx_backend_open(&b, "docker", NULL) != 0 ||
		    sbx_sandbox_create(&s, b, f->p) != 0)
			_exit(1);
		if (write(fds[1], sbx_sandbox_id(s), strlen(sbx_sandbox_id(s))) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	assert_true(read(fds[0], id, sizeof(id) - 1) > 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	ro.tenant = t_tenant();
	assert_true(sbx_backend_reap(f->b, &ro, NULL, NULL) >= 1);
	all = events(f);
	ev = last(all, "sandbox.destroy", id);
	assert_non_null(ev);
	assert_string_equal(str(ev, "reason"), "reaped");
	json_decref(all);
}

static void test_engine_audit__refusal_recorded(void **state)
{
	struct fx *f = *state;
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;
	json_t *all, *ev;

	assert_int_equal(sbx_policy_dup(&p, f->p), 0);
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_MICROVM), 0);
	assert_int_equal(sbx_sandbox_create(&s, f->b, p), SBX_EUNSUPPORTED);
	all = events(f);
	ev = last(all, "policy.refused", NULL);
	assert_non_null(ev);
	assert_string_equal(str(ev, "op"), "create");
	assert_string_equal(str(ev, "code"), "EUNSUPPORTED");
	assert_non_null(strstr(str(ev, "message"), "microvm"));
	ev = last(all, "sandbox.create", NULL);
	assert_string_equal(str(ev, "outcome"), "error");
	assert_string_equal(str(json_object_get(ev, "error"), "code"), "EUNSUPPORTED");
	json_decref(all);
	sbx_policy_free(p);
}

static void test_engine_audit__unwritable_event_fails_closed(void **state)
{
	struct fx *f = *state;
	const char *argv[] = {"echo", "hi", NULL};
	char label[256], tenant[64];
	sbx_policy *p = NULL;
	sbx_sandbox *s = create(f, NULL);
	sbx_result *r = NULL;

	/* No result without its run.end on record. */
	f->refuse = "run.end";
	assert_true(sbx_sandbox_run(&r, s, argv, NULL) < 0);
	assert_null(r);
	assert_non_null(strstr(sbx_error_last()->message, "withheld"));
	/* No run without its run.start on record. */
	f->refuse = "run.start";
	assert_true(sbx_sandbox_run(&r, s, argv, NULL) < 0);
	assert_non_null(strstr(sbx_error_last()->message, "not started"));
	f->refuse = NULL;
	sbx_sandbox_close(s);
	/* No sandbox without its sandbox.create on record, and none left behind. */
	snprintf(tenant, sizeof(tenant), "%s-unaudited", t_tenant());
	assert_int_equal(sbx_policy_dup(&p, f->p), 0);
	assert_int_equal(sbx_policy_set_tenant(p, tenant), 0);
	f->refuse = "sandbox.create";
	s = NULL;
	assert_true(sbx_sandbox_create(&s, f->b, p) < 0);
	assert_null(s);
	f->refuse = NULL;
	snprintf(label, sizeof(label), "io.sandboxio.tenant=%s", tenant);
	assert_int_equal(t_engine_count_label(label), 0);
	sbx_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_audit__life_of_a_sandbox),
		cmocka_unit_test(test_engine_audit__destroy_reasons),
		cmocka_unit_test(test_engine_audit__reaped_orphan),
		cmocka_unit_test(test_engine_audit__refusal_recorded),
		cmocka_unit_test(test_engine_audit__unwritable_event_fails_closed),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] audit", tests, setup, teardown);
}
