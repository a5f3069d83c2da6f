/*
 * tests/unit/core/test_reap.c: the reap loop, once for every backend
 * (core/reap.c), driven through a scripted backend ops table: a list of
 * sandboxes with the owner facts a backend records, and a remove that logs
 * (and fails where the script says). A live owner's sandbox is kept, a dead
 * owner's and an expired one removed, a detached one kept, facts that
 * cannot be read skipped with a reason; a dry run removes nothing and
 * sweeps nothing; a removal that fails is reported with its error and the
 * loop goes on; the backend's bound on the condemned, its errors and its
 * extra facts are kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/owner-int.h"
#include "core/reap-int.h"
#include "util/error-int.h"

#define MAX_ITEMS 64

/* The scripted backend. */
struct script {
	struct sbx__owner self;
	struct sbx__reap_item items[MAX_ITEMS];
	size_t n;
	const char *fail_id; /* reap_remove fails for this id */
	int list_rc;	     /* reap_list's error, after listing every item */
	/* What the loop did. */
	char removed[MAX_ITEMS][32];
	char removed_extra[MAX_ITEMS][32];
	unsigned int removed_flags[MAX_ITEMS];
	size_t n_removed;
	int sweeps;
	int list_only_local;
	const char *list_tenant;
	size_t listed; /* items handed to fn before it stopped the listing */
	int fn_rc;     /* fn's last answer */
};

static struct script S;

static int s_reap_list(void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg)
{
	struct script *s = state;

	s->list_tenant = tenant;
	s->list_only_local = only_local;
	for (size_t i = 0; i < s->n; i++) {
		s->listed++;
		s->fn_rc = fn(arg, &s->items[i]);
		if (s->fn_rc == SBX_ENOMEM)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE,
					      "scripted: out of memory");
		if (s->fn_rc != 0)
			break;
	}
	if (s->list_rc < 0)
		return sbx__error_set(s->list_rc, SBX_ERRCLASS_CORE, "scripted: list failed");
	return 0;
}

static int s_reap_remove(void *state, const struct sbx__reap_item *item)
{
	struct script *s = state;

	if (s->fail_id && strcmp(item->id, s->fail_id) == 0)
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_CORE, "scripted: cannot remove %s",
				      item->id);
	snprintf(s->removed[s->n_removed], sizeof(s->removed[0]), "%s", item->id);
	snprintf(s->removed_extra[s->n_removed], sizeof(s->removed_extra[0]), "%s",
		 item->extra ? item->extra : "(null)");
	s->removed_flags[s->n_removed] = item->extra_flags;
	s->n_removed++;
	return 0;
}

static void s_reap_sweep(void *state)
{
	((struct script *)state)->sweeps++;
}

static struct sbx__backend_ops ops = {
	.version = SBX_BACKEND_OPS_VERSION,
	.name = "scripted",
	.reap_list = s_reap_list,
	.reap_remove = s_reap_remove,
	.reap_sweep = s_reap_sweep,
};

/* What the caller's callback heard. */
struct heard {
	char id[MAX_ITEMS][32];
	char tenant[MAX_ITEMS][32];
	char detail[MAX_ITEMS][256];
	int reason[MAX_ITEMS];
	int removed[MAX_ITEMS];
	size_t n;
	size_t stop_after; /* non-zero: return 1 after this many */
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
	return h->stop_after && h->n >= h->stop_after;
}

static char future[32], past[32], my_pid[32], my_start[32], other_start[32];

/* An owner pid no kernel can give: above PID_MAX_LIMIT (2^22). */
#define NO_SUCH_PID "4194305"

static void add(const char *id,
		const char *tenant,
		const char *deadline,
		const char *host,
		const char *pid,
		const char *start)
{
	assert_true(S.n < MAX_ITEMS);
	S.items[S.n++] = (struct sbx__reap_item){
		.id = id,
		.tenant = tenant,
		.self = &S.self,
		.deadline = deadline,
		.host = host,
		.boot = S.self.boot,
		.pid = pid,
		.start = start,
	};
}

static int setup(void **state)
{
	(void)state;
	memset(&S, 0, sizeof(S));
	sbx__owner_self(&S.self, 0);
	snprintf(future, sizeof(future), "%lld", (long long)time(NULL) + 3600);
	snprintf(past, sizeof(past), "%lld", (long long)time(NULL) - 10);
	snprintf(my_pid, sizeof(my_pid), "%lld", S.self.pid);
	snprintf(my_start, sizeof(my_start), "%llu", S.self.start);
	snprintf(other_start, sizeof(other_start), "%llu", S.self.start + 1);
	sbx__error_clear();
	return 0;
}

/* The script every case but the last ones reaps. */
static void script_mixed(void)
{
	add("live", "t1", future, S.self.host, my_pid, my_start);
	add("dead", "t1", future, S.self.host, NO_SUCH_PID, "5");
	add("reused", "t2", future, S.self.host, my_pid, other_start);
	add("detached", "t1", future, S.self.host, "0", "0");
	add("expired", "t2", past, S.self.host, my_pid, my_start);
	add("elsewhere", "t1", future, "another-host", NO_SUCH_PID, "5");
	add("garbage", NULL, "soon", S.self.host, my_pid, my_start);
}

static void test_reap__owner_judged(void **state)
{
	struct heard h = {0};
	int n;

	(void)state;
	script_mixed();
	n = sbx__reap(&ops, &S, "t9", 0, 1, heard_cb, &h);
	assert_int_equal(n, 3);
	assert_string_equal(S.list_tenant, "t9");
	assert_int_equal(S.list_only_local, 1);
	/* A live owner's, a detached and another host's are kept and not heard of. */
	assert_int_equal(S.n_removed, 3);
	assert_string_equal(S.removed[0], "dead");
	assert_string_equal(S.removed[1], "reused");
	assert_string_equal(S.removed[2], "expired");
	assert_int_equal(h.n, 4);
	assert_string_equal(h.id[0], "dead");
	assert_int_equal(h.reason[0], SBX_REAP_OWNER_GONE);
	assert_true(h.removed[0]);
	assert_string_equal(h.detail[0], "");
	assert_string_equal(h.tenant[0], "t1");
	assert_string_equal(h.id[1], "reused");
	assert_int_equal(h.reason[1], SBX_REAP_OWNER_GONE);
	assert_string_equal(h.tenant[1], "t2");
	assert_string_equal(h.id[2], "expired");
	assert_int_equal(h.reason[2], SBX_REAP_DEADLINE_PASSED);
	assert_true(h.removed[2]);
	/* Facts that cannot be read: reported, with the reason, never removed. */
	assert_string_equal(h.id[3], "garbage");
	assert_int_equal(h.reason[3], SBX_REAP_SKIPPED);
	assert_false(h.removed[3]);
	assert_string_equal(h.detail[3], "deadline is missing or not a number");
	assert_string_equal(h.tenant[3], "");
	assert_int_equal(S.sweeps, 1);
}

static void test_reap__dry_run_removes_nothing(void **state)
{
	struct heard h = {0};

	(void)state;
	script_mixed();
	assert_int_equal(sbx__reap(&ops, &S, NULL, 1, 0, heard_cb, &h), 3);
	assert_null(S.list_tenant);
	assert_int_equal(S.list_only_local, 0);
	assert_int_equal(S.n_removed, 0);
	assert_int_equal(S.sweeps, 0);
	assert_int_equal(h.n, 4);
	for (size_t i = 0; i < h.n; i++)
		assert_false(h.removed[i]);
	assert_int_equal(h.reason[2], SBX_REAP_DEADLINE_PASSED);
	/* No callback: the count alone. */
	assert_int_equal(sbx__reap(&ops, &S, NULL, 1, 0, NULL, NULL), 3);
	assert_int_equal(S.n_removed, 0);
}

static void test_reap__remove_failure_reported_and_loop_goes_on(void **state)
{
	struct heard h = {0};

	(void)state;
	script_mixed();
	S.fail_id = "reused";
	assert_int_equal(sbx__reap(&ops, &S, NULL, 0, 0, heard_cb, &h), 2);
	assert_int_equal(h.n, 4);
	assert_string_equal(h.id[1], "reused");
	assert_false(h.removed[1]);
	assert_int_equal(h.reason[1], SBX_REAP_OWNER_GONE);
	assert_string_equal(h.detail[1], "scripted: cannot remove reused");
	/* The error is the report's, not the reap's. */
	assert_int_equal(sbx_error_last()->code, SBX_OK);
	assert_string_equal(h.id[2], "expired");
	assert_true(h.removed[2]);
	assert_int_equal(S.n_removed, 2);
	assert_string_equal(S.removed[1], "expired");
	assert_int_equal(S.sweeps, 1);
}

static void test_reap__callback_stops(void **state)
{
	struct heard h = {.stop_after = 1};

	(void)state;
	script_mixed();
	assert_int_equal(sbx__reap(&ops, &S, NULL, 0, 0, heard_cb, &h), 1);
	assert_int_equal(h.n, 1);
	assert_int_equal(S.n_removed, 1);
	/* The whole list was judged before any removal. */
	assert_int_equal(S.listed, S.n);
	/* What removed sandboxes left is swept all the same. */
	assert_int_equal(S.sweeps, 1);
}

static void test_reap__pid_namespace_and_extra(void **state)
{
	struct heard h = {0};
	char other_ns[32], my_ns[32];

	(void)state;
	if (!S.self.pidns)
		skip();
	snprintf(my_ns, sizeof(my_ns), "%llu", S.self.pidns);
	snprintf(other_ns, sizeof(other_ns), "%llu", S.self.pidns + 1);
	add("ns-dead", "t1", future, S.self.host, NO_SUCH_PID, "5");
	S.items[0].has_pidns = 1;
	S.items[0].pidns = my_ns;
	S.items[0].extra = "sbx-session-1";
	S.items[0].extra_flags = 3;
	/* Another namespace's owner is left to its deadline. */
	add("ns-other", "t1", future, S.self.host, NO_SUCH_PID, "5");
	S.items[1].has_pidns = 1;
	S.items[1].pidns = other_ns;
	/* Without the namespace it is skipped, saying why. */
	add("ns-none", "t1", future, S.self.host, NO_SUCH_PID, "5");
	S.items[2].has_pidns = 1;
	assert_int_equal(sbx__reap(&ops, &S, NULL, 0, 0, heard_cb, &h), 1);
	assert_int_equal(h.n, 2);
	assert_string_equal(h.id[0], "ns-dead");
	assert_true(h.removed[0]);
	assert_string_equal(S.removed_extra[0], "sbx-session-1");
	assert_int_equal(S.removed_flags[0], 3);
	assert_string_equal(h.id[1], "ns-none");
	assert_int_equal(h.reason[1], SBX_REAP_SKIPPED);
	assert_non_null(strstr(h.detail[1], "owner-pidns"));
}

static void test_reap__bound_on_condemned(void **state)
{
	struct sbx__backend_ops bounded = ops;

	(void)state;
	for (int i = 0; i < 40; i++)
		add("expired", "t1", past, S.self.host, my_pid, my_start);
	/* 16, then 32: the next size, 64, passes 40, so the listing stops at 32. */
	bounded.reap_max = 40;
	assert_int_equal(sbx__reap(&bounded, &S, NULL, 1, 0, NULL, NULL), 32);
	assert_int_equal(S.listed, 33);
	assert_int_equal(S.fn_rc, 1);
	S.listed = 0;
	assert_int_equal(sbx__reap(&ops, &S, NULL, 1, 0, NULL, NULL), 40);
	assert_int_equal(S.listed, 40);
}

static void test_reap__list_error_returned(void **state)
{
	struct heard h = {0};

	(void)state;
	script_mixed();
	S.list_rc = SBX_EUNAVAILABLE;
	assert_int_equal(sbx__reap(&ops, &S, NULL, 0, 0, heard_cb, &h), SBX_EUNAVAILABLE);
	assert_string_equal(sbx_error_last()->message, "scripted: list failed");
	assert_int_equal(h.n, 0);
	assert_int_equal(S.n_removed, 0);
	assert_int_equal(S.sweeps, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_reap__owner_judged, setup),
		cmocka_unit_test_setup(test_reap__dry_run_removes_nothing, setup),
		cmocka_unit_test_setup(test_reap__remove_failure_reported_and_loop_goes_on, setup),
		cmocka_unit_test_setup(test_reap__callback_stops, setup),
		cmocka_unit_test_setup(test_reap__pid_namespace_and_extra, setup),
		cmocka_unit_test_setup(test_reap__bound_on_condemned, setup),
		cmocka_unit_test_setup(test_reap__list_error_returned, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
