/*
 * tests/contract/test_docker_shape.c: what a sandbox is made of besides its
 * limits, on a real dockerd: no writable place the policy does not account
 * for (an image's VOLUME is refused), and a uid of its own.
 */
#include <dirent.h>
#include <pthread.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

#define NEED_READY()                                                                               \
	do {                                                                                       \
		if (!t_engine_ready())                                                             \
			skip();                                                                    \
	} while (0)

static int count_tenant(void)
{
	char label[160];

	snprintf(label, sizeof(label), "io.sandboxio.tenant=%s", t_tenant());
	return t_engine_count_label(label);
}

/*
 * Makes a local image FROM the default one with `VOLUME /data`: a container
 * that never starts, committed with that change (no registry, no build
 * context). Returns the image's reference in ref.
 */
static void make_volume_image(char *ref, size_t n)
{
	char path[512];
	json_t *c;
	long st = 0;

	snprintf(ref, n, "sandboxio-test/volume:%ld", (long)getpid());
	c = t_engine_request("POST", "/containers/create",
			     "{\"Image\":\"sandboxio/python:3.11\",\"Cmd\":[\"true\"],"
			     "\"Labels\":{\"io.sandboxio.test\":\"volume-image\"}}",
			     &st);
	assert_int_equal(st, 201);
	snprintf(path, sizeof(path),
		 "/commit?container=%s&repo=sandboxio-test%%2Fvolume&tag=%ld&changes=VOLUME%%20%%"
		 "2Fdata",
		 json_string_value(json_object_get(c, "Id")), (long)getpid());
	json_decref(t_engine_request("POST", path, NULL, &st));
	assert_int_equal(st, 201);
	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1",
		 json_string_value(json_object_get(c, "Id")));
	json_decref(t_engine_request("DELETE", path, NULL, &st));
	json_decref(c);
}

static void remove_image(const char *ref)
{
	char path[512];
	long st = 0;

	snprintf(path, sizeof(path), "/images/sandboxio-test%%2Fvolume:%ld?force=1",
		 (long)getpid());
	(void)ref;
	json_decref(t_engine_request("DELETE", path, NULL, &st));
}

static void test_engine_shape__image_volume_refused(void **state)
{
	char ref[128], path[512], msg[1024];
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s = NULL;
	json_t *img;
	long st = 0;
	int rc, left;

	(void)state;
	NEED_READY();
	make_volume_image(ref, sizeof(ref));
	/* The image does declare the volume (the test means something). */
	snprintf(path, sizeof(path), "/images/sandboxio-test%%2Fvolume:%ld/json", (long)getpid());
	img = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	assert_non_null(json_object_get(json_object_get(json_object_get(img, "Config"), "Volumes"),
					"/data"));
	json_decref(img);

	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_policy_set_image(p, ref), 0);
	rc = sbx_sandbox_create(&s, b, p);
	snprintf(msg, sizeof(msg), "%s", sbx_error_last()->message);
	if (rc == 0)
		sbx_sandbox_close(s);
	left = count_tenant();
	sbx_policy_free(p);
	sbx_backend_free(b);
	remove_image(ref);
	assert_int_equal(rc, SBX_EDENIED);
	assert_non_null(strstr(msg, "/data"));
	assert_non_null(strstr(msg, ref));
	/* Nothing left: no container of this tenant. */
	assert_int_equal(left, 0);
}

/* ===== One uid per live sandbox ===== */

static unsigned long uid_of(sbx_sandbox *s)
{
	sbx_result *r = t_run(s, "id -u", NULL);
	unsigned long uid = 0;

	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(sscanf(r->stdout_data, "%lu", &uid), 1);
	sbx_result_free(r);
	return uid;
}

/* Whether any line of /etc/passwd names uid (read as text, not through NSS). */
static int in_host_passwd(unsigned long uid)
{
	FILE *f = fopen("/etc/passwd", "r");
	char line[1024];
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		const char *c = strchr(line, ':');
		if (c && (c = strchr(c + 1, ':')) && strtoul(c + 1, NULL, 10) == uid)
			found = 1;
	}
	fclose(f);
	return found;
}

static void test_engine_shape__live_sandboxes_have_their_own_uid(void **state)
{
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s1 = NULL, *s2 = NULL;
	unsigned long u1, u2;

	(void)state;
	NEED_READY();
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&s1, b, p), 0);
	assert_int_equal(sbx_sandbox_create(&s2, b, p), 0);
	u1 = uid_of(s1);
	u2 = uid_of(s2);
	assert_int_not_equal(u1, u2);
	assert_int_not_equal(u1, 1000);
	assert_int_not_equal(u2, 1000);
	assert_int_not_equal(u1, 0);
	assert_int_not_equal(u2, 0);
	assert_false(in_host_passwd(u1));
	assert_false(in_host_passwd(u2));
	assert_null(getpwuid((uid_t)u1));
	assert_null(getpwuid((uid_t)u2));
	/* The writable space is the sandbox's own. */
	{
		sbx_result *r = t_run(s1, "stat -c %u /workspace && touch /workspace/x", NULL);
		char want[32];

		snprintf(want, sizeof(want), "%lu\n", u1);
		assert_int_equal(r->exit_code, 0);
		assert_string_equal(r->stdout_data, want);
		sbx_result_free(r);
	}
	assert_int_equal(sbx_sandbox_close(s1), 0);
	assert_int_equal(sbx_sandbox_close(s2), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* Processes of the host running as uid (counted from /proc). */
static int host_procs_of(unsigned long uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "Uid:", 4) == 0) {
				n += strtoul(line + 4, NULL, 10) == uid;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return n;
}

struct holder {
	sbx_sandbox *s;
	sbx_result *r;
};

static void *hold(void *arg)
{
	struct holder *h = arg;
	const char *argv[] = {"sh", "-c", "for i in $(seq 60); do sleep 600 & done; wait", NULL};

	(void)sbx_sandbox_run(&h->r, h->s, argv, NULL);
	return NULL;
}

/*
 * RLIMIT_NPROC counts the processes of a uid across the whole host. With a
 * uid shared between sandboxes, 60 processes in one sandbox would make a
 * fork under `ulimit -u 40` fail in the other; with a uid each, it works.
 */
static void test_engine_shape__nproc_not_shared(void **state)
{
	struct holder h = {0};
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s2 = NULL;
	sbx_result *r;
	pthread_t th;
	unsigned long u1;
	int i;

	(void)state;
	NEED_READY();
	b = t_backend();
	p = t_policy();
	assert_int_equal(sbx_sandbox_create(&h.s, b, p), 0);
	assert_int_equal(sbx_sandbox_create(&s2, b, p), 0);
	u1 = uid_of(h.s);
	assert_int_equal(pthread_create(&th, NULL, hold, &h), 0);
	/* Until the host sees the 60 sleepers (a hang guard, not a speed guess). */
	for (i = 0; i < 6000 && host_procs_of(u1) < 60; i++)
		usleep(10000);
	assert_true(host_procs_of(u1) >= 60);
	r = t_run(s2,
		  "python3 -c \"import os,resource\n"
		  "resource.setrlimit(resource.RLIMIT_NPROC,(40,40))\n"
		  "pid=os.fork()\n"
		  "if pid==0: os._exit(0)\n"
		  "os.waitpid(pid,0); print('forked')\"",
		  NULL);
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(r->stdout_data, "forked\n");
	sbx_result_free(r);
	/* The sleepers end with their sandbox. */
	assert_int_equal(sbx_sandbox_kill(h.s), 0);
	pthread_join(th, NULL);
	sbx_result_free(h.r);
	sbx_sandbox_close(h.s);
	sbx_sandbox_close(s2);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_shape__image_volume_refused),
		cmocka_unit_test(test_engine_shape__live_sandboxes_have_their_own_uid),
		cmocka_unit_test(test_engine_shape__nproc_not_shared),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] shape", tests, NULL, NULL);
}
