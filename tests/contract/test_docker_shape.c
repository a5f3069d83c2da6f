/*
 * tests/contract/test_docker_shape.c: what a sandbox is made of besides its
 * limits, on a real dockerd: no writable place the policy does not account
 * for (an image's VOLUME is refused), and a uid of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		 "/commit?container=%s&repo=sandboxio-test%%2Fvolume&tag=%ld&changes=VOLUME%%20%%2Fdata",
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

	snprintf(path, sizeof(path), "/images/sandboxio-test%%2Fvolume:%ld?force=1", (long)getpid());
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_shape__image_volume_refused),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] shape", tests, NULL, NULL);
}
