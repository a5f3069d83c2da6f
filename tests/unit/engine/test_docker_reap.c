/*
 * tests/unit/engine/test_docker_reap.c: the docker backend's halves of the
 * reaper (engine/reap.c) under core's loop (core/reap.c), against a
 * scripted Engine: which containers its labels condemn (the owner judged
 * in the PID namespace that made it), what is skipped and why, the tenant
 * reported, and a removal that fails reported while the next goes on.
 *
 * The sweep after a reap that removes (reap_sweep) reads and changes the
 * host's netfilter rules and disks: it is left out here (the contract
 * tests run it), and so are the labels that make a removal take a link's
 * rules or a disk with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/owner-int.h"
#include "core/reap-int.h"
#include "engine/docker-int.h"
#include "support/fake_engine.h"
#include "util/error-int.h"

/* An owner pid no kernel can give: above PID_MAX_LIMIT (2^22). */
#define NO_SUCH_PID "4194305"

static struct sbx__owner me;
static char list_body[8192];

/* One container of the list: its labels' owner facts (NULL: no label). */
static void add(size_t *off,
		const char *id,
		int managed,
		const char *tenant,
		const char *deadline,
		const char *pid,
		const char *start,
		const char *pidns)
{
	char labels[2048];
	int n = 0;

#define L(k, v)                                                                                    \
	if (v)                                                                                     \
	n += snprintf(labels + n, sizeof(labels) - (size_t)n, "%s\"io.sandboxio." k "\":\"%s\"",   \
		      n ? "," : "", v)
	if (managed)
		L("managed-by", "sandboxio");
	L("tenant", tenant);
	L("deadline", deadline);
	L("owner-host", me.host);
	L("owner-boot", me.boot);
	L("owner-pid", pid);
	L("owner-start", start);
	L("owner-pidns", pidns);
	L("session", "sbx-session");
#undef L
	*off += (size_t)snprintf(list_body + *off, sizeof(list_body) - *off,
				 "%s{\"Id\":\"%s\",\"Labels\":{%s}}", *off > 1 ? "," : "", id,
				 labels);
	assert_true(*off < sizeof(list_body));
}

static int setup(void **state)
{
	char future[32], past[32], pid[32], start[32], ns[32], other_ns[32];
	size_t off = 1;

	(void)state;
	sbx__owner_self(&me, 0);
	if (!me.pidns)
		return -1;
	snprintf(future, sizeof(future), "%lld", (long long)time(NULL) + 3600);
	snprintf(past, sizeof(past), "%lld", (long long)time(NULL) - 10);
	snprintf(pid, sizeof(pid), "%lld", me.pid);
	snprintf(start, sizeof(start), "%llu", me.start);
	snprintf(ns, sizeof(ns), "%llu", me.pidns);
	snprintf(other_ns, sizeof(other_ns), "%llu", me.pidns + 1);
	list_body[0] = '[';
	add(&off, "c1live", 1, "t1", future, pid, start, ns);
	add(&off, "c2dead", 1, "t1", future, NO_SUCH_PID, "5", ns);
	add(&off, "c3otherns", 1, "t1", future, NO_SUCH_PID, "5", other_ns);
	add(&off, "c4nons", 1, "t1", future, NO_SUCH_PID, "5", NULL);
	add(&off, "c5expired", 1, "t2", past, pid, start, ns);
	add(&off, "c6foreign", 0, "t1", past, NO_SUCH_PID, "5", ns);
	add(&off, "c7detached", 1, "t1", future, "0", "0", ns);
	add(&off, "c8garbage", 1, NULL, "soon", pid, start, ns);
	snprintf(list_body + off, sizeof(list_body) - off, "]");
	return 0;
}

struct heard {
	char id[16][32];
	char tenant[16][32];
	char detail[16][512];
	int reason[16];
	int removed[16];
	int n;
};

static int heard_cb(const sbx_reap_info *info, void *payload)
{
	struct heard *h = payload;

	snprintf(h->id[h->n], sizeof(h->id[0]), "%s", info->id);
	snprintf(h->tenant[h->n], sizeof(h->tenant[0]), "%s", info->tenant);
	snprintf(h->detail[h->n], sizeof(h->detail[0]), "%s", info->detail);
	h->reason[h->n] = info->reason;
	h->removed[h->n] = info->removed;
	h->n++;
	return 0;
}

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
	snprintf(f->d.hostname, sizeof(f->d.hostname), "%s", me.host);
	snprintf(f->d.boot_id, sizeof(f->d.boot_id), "%s", me.boot);
}

static void stop(struct fx *f)
{
	sbx__http_done(&f->d.http);
	fake_engine_stop(f->fe);
}

/* What every reap of the list above hears, in its order. */
static void assert_heard(const struct heard *h)
{
	assert_int_equal(h->n, 4);
	assert_string_equal(h->id[0], "c2dead");
	assert_int_equal(h->reason[0], SBX_REAP_OWNER_GONE);
	assert_string_equal(h->tenant[0], "t1");
	assert_string_equal(h->id[1], "c4nons");
	assert_int_equal(h->reason[1], SBX_REAP_SKIPPED);
	assert_non_null(strstr(h->detail[1], "owner-pidns is missing"));
	assert_false(h->removed[1]);
	assert_string_equal(h->id[2], "c5expired");
	assert_int_equal(h->reason[2], SBX_REAP_DEADLINE_PASSED);
	assert_string_equal(h->tenant[2], "t2");
	assert_string_equal(h->id[3], "c8garbage");
	assert_int_equal(h->reason[3], SBX_REAP_SKIPPED);
	assert_string_equal(h->detail[3], "deadline is missing or not a number");
	assert_string_equal(h->tenant[3], "");
	assert_false(h->removed[3]);
}

static void test_docker_reap__dry_run_judges_labels(void **state)
{
	const struct fake_route r[] = {
		{"GET", "/containers/json", 200, list_body},
		{"DELETE", "/containers/", 204, ""},
	};
	struct heard h = {0};
	struct fx f;

	(void)state;
	start(&f, r, 2);
	assert_int_equal(sbx__reap(&sbx__docker_ops, &f.d, NULL, 1, 0, heard_cb, &h), 2);
	assert_heard(&h);
	assert_false(h.removed[0]);
	assert_false(h.removed[2]);
	assert_string_equal(h.detail[0], "");
	assert_int_equal(fake_engine_count(f.fe, "GET", "/containers/json"), 1);
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/"), 0);
	stop(&f);
}

static void test_docker_reap__removal_failure_reported(void **state)
{
	const struct fake_route r[] = {
		{"GET", "/containers/json", 200, list_body},
		{"DELETE", "/containers/c2dead", 500, "{\"message\":\"engine broke\"}"},
		{"DELETE", "/containers/c5expired", 204, ""},
	};
	struct sbx__backend_ops ops = sbx__docker_ops;
	struct heard h = {0};
	struct fx f;

	(void)state;
	ops.reap_sweep = NULL; /* see the file's header */
	start(&f, r, 3);
	assert_int_equal(sbx__reap(&ops, &f.d, NULL, 0, 0, heard_cb, &h), 1);
	assert_heard(&h);
	assert_false(h.removed[0]);
	assert_non_null(strstr(h.detail[0], "engine broke"));
	assert_true(h.removed[2]);
	assert_string_equal(h.detail[2], "");
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/c2dead"), 1);
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/c5expired"), 1);
	assert_int_equal(fake_engine_count(f.fe, "DELETE", "/containers/"), 2);
	stop(&f);
}

static void test_docker_reap__list_error_said(void **state)
{
	const struct fake_route r[] = {
		{"GET", "/containers/json", 500, "{\"message\":\"engine broke\"}"},
	};
	struct fx f;

	(void)state;
	start(&f, r, 1);
	assert_true(sbx__reap(&sbx__docker_ops, &f.d, NULL, 1, 0, NULL, NULL) < 0);
	assert_non_null(strstr(sbx_error_last()->message, "reap: list sandboxes"));
	assert_non_null(strstr(sbx_error_last()->message, "engine broke"));
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_reap__dry_run_judges_labels),
		cmocka_unit_test(test_docker_reap__removal_failure_reported),
		cmocka_unit_test(test_docker_reap__list_error_said),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
