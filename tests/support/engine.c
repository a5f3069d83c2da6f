/*
 * tests/support/engine.c: independent Engine look-ups for the contract
 * tests (see engine.h). Written against libcurl and jansson directly, not
 * through the library under test.
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
#include <curl/curl.h>

#include "support/engine.h"

struct body {
	char *p;
	size_t n;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *arg)
{
	struct body *b = arg;
	char *g = realloc(b->p, b->n + sz * nm + 1);

	if (!g)
		return 0;
	b->p = g;
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

/* The engine the library under test talks to: DOCKER_HOST's unix socket
 * (tests/contract/run-podman.sh points it at Podman), else dockerd's. */
const char *t_engine_socket(void)
{
	const char *h = getenv("DOCKER_HOST");

	return h && strncmp(h, "unix://", 7) == 0 && h[7] ? h + 7 : "/var/run/docker.sock";
}

json_t *t_engine_get(const char *path, long *status)
{
	return t_engine_request("GET", path, NULL, status);
}

json_t *t_engine_request(const char *method, const char *path, const char *body, long *status)
{
	struct curl_slist *hdr = NULL;
	struct body b = {0};
	char url[2048];
	json_t *j = NULL;
	CURL *c = curl_easy_init();

	*status = 0;
	snprintf(url, sizeof(url), "http://localhost/v1.41%s", path);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, t_engine_socket());
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	if (curl_easy_perform(c) == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		if (b.p)
			j = json_loads(b.p, JSON_ALLOW_NUL, NULL);
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	free(b.p);
	return j;
}

char *t_engine_text(const char *method, const char *path, long *status)
{
	struct body b = {0};
	char url[2048];
	CURL *c = curl_easy_init();
	CURLcode cc;

	*status = 0;
	snprintf(url, sizeof(url), "http://localhost/v1.41%s", path);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, t_engine_socket());
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	if (cc != CURLE_OK) {
		free(b.p);
		return NULL;
	}
	return b.p ? b.p : calloc(1, 1);
}

int t_engine_count_label(const char *label)
{
	char filt[512], path[1024];
	char *esc;
	long st;
	json_t *j;
	int n;

	snprintf(filt, sizeof(filt), "{\"label\":[\"%s\"]}", label);
	esc = curl_easy_escape(NULL, filt, 0);
	snprintf(path, sizeof(path), "/containers/json?all=1&filters=%s", esc);
	curl_free(esc);
	j = t_engine_get(path, &st);
	n = j && st == 200 ? (int)json_array_size(j) : -1;
	json_decref(j);
	return n;
}

int t_engine_ready(void)
{
	long st = 0;
	json_t *j = t_engine_get("/images/sandboxio%2Fpython:3.11/json", &st);

	json_decref(j);
	return st == 200;
}

sbx_backend *t_backend(void)
{
	sbx_backend *b = NULL;

	if (sbx_backend_open(&b, "docker", NULL) != 0)
		fail_msg("backend_open: %s", sbx_error_last()->message);
	return b;
}

const char *t_tenant(void)
{
	static char t[64];

	if (!t[0])
		snprintf(t, sizeof(t), "contract-%ld", (long)getpid());
	return t;
}

sbx_tier t_tier(void)
{
	const char *tier = getenv("SBX_TEST_TIER");
	sbx_tier t = SBX_TIER_CONTAINER;

	if (tier && *tier && sbx_tier_parse(&t, tier) != 0)
		fail_msg("SBX_TEST_TIER=%s: not a tier", tier);
	return t;
}

sbx_policy *t_policy(void)
{
	const char *tier = getenv("SBX_TEST_TIER");
	sbx_policy *p = NULL;
	sbx_tier t;

	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_set_tenant(p, t_tenant()), 0);
	/* SBX_TEST_TIER=gvisor: the suite's sandboxes at that tier. */
	if (tier && *tier) {
		if (sbx_tier_parse(&t, tier) != 0)
			fail_msg("SBX_TEST_TIER=%s: not a tier", tier);
		assert_int_equal(sbx_policy_set_min_tier(p, t), 0);
	}
	return p;
}

sbx_result *t_run(sbx_sandbox *s, const char *shell_line, const sbx_run_options *o)
{
	const char *argv[] = {"sh", "-c", shell_line, NULL};
	sbx_result *r = NULL;

	if (sbx_sandbox_run(&r, s, argv, o) != 0)
		fail_msg("run '%s': %s", shell_line, sbx_error_last()->message);
	return r;
}

int t_make(sbx_backend *b, sbx_policy *p, sbx_sandbox **s, sbx_sandbox **x)
{
	if (sbx_sandbox_create(s, b, p) != 0 ||
	    (x && sbx_sandbox_open(x, b, sbx_sandbox_id(*s)) != 0)) {
		fprintf(stderr, "setup: %s\n", sbx_error_last()->message);
		return -1;
	}
	return 0;
}

void t_unmake(sbx_backend *b, sbx_policy *p, sbx_sandbox *s, sbx_sandbox *x)
{
	if (x)
		sbx_sandbox_detach(x);
	if (s)
		sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

char *t_run_ok(sbx_sandbox *s, const char *const *argv)
{
	sbx_result *r = NULL;
	char *out;

	if (sbx_sandbox_run(&r, s, argv, NULL) != 0)
		fail_msg("%s: %s", argv[0], sbx_error_last()->message);
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		fail_msg("%s: status %s code %d: %s", argv[0], sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	out = strdup(r->stdout_data);
	sbx_result_free(r);
	return out;
}
