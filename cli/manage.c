/*
 * cli/manage.c: `rm`, `ls` and `reap`, the commands that look after
 * sandboxes made earlier.
 *
 * rm goes through the library (open by id, then close), so it can only
 * remove containers that carry sandboxio's labels: a mistyped id never
 * touches someone else's container. One unknown id does not stop the rest;
 * the exit status says that something failed. ls prints a table for people
 * or, with --json, an array of objects for scripts. reap asks the library's
 * reaper to remove the sandboxes nobody will close (owner gone, deadline
 * passed) and prints one line, or one JSON object, per candidate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/dclient.h"
#include "util/json-text.h"

/* One id's removal, directly (b) or through the daemon; -1 with *code and msg. */
static int remove_one(sbx_backend *b, const char *id, int *code, char *msg, size_t size)
{
	sbx_sandbox *s = NULL;
	const sbx_error *e;

	if (!b)
		return cli_daemon_kill(id, code, msg, size);
	if (sbx_sandbox_open(&s, b, id) == 0 && sbx_sandbox_close(s) == 0)
		return 0;
	e = sbx_error_last();
	*code = e->code;
	snprintf(msg, size, "%s", e->message);
	return -1;
}

int cmd_rm(const struct cli_opts *o)
{
	json_t *removed = json_array(), *errors = json_array();
	sbx_backend *b = NULL;
	int rc, failed = 0, dfd = -1;

	if (o->nargs < 1) {
		cli_print_error(o, SBX_EINVALID, "rm: give at least one sandbox ID");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = cli_daemon_open(o, &dfd);
	if (rc)
		goto out;
	if (dfd >= 0)
		close(dfd); /* each removal is a request of its own */
	else
		rc = cli_backend_open(o, NULL, &b);
	if (rc)
		goto out;
	for (int i = 0; i < o->nargs; i++) {
		const char *id = o->args[i];
		char msg[1024];
		int code;

		if (remove_one(b, id, &code, msg, sizeof(msg)) < 0) {
			fprintf(stderr, "sandboxio: %s\n", msg);
			json_array_append_new(errors, json_pack("{s:s?, s:s?, s:i}", "id", id,
								"error", msg, "code", code));
			failed = 1;
			continue;
		}
		json_array_append_new(removed, json_string(id));
	}
	if (o->json)
		cli_print_json(json_pack("{s:O, s:O}", "removed", removed, "errors", errors));
	rc = failed ? CLI_EXIT_FAIL : 0;
out:
	json_decref(removed);
	json_decref(errors);
	sbx_backend_free(b);
	return rc;
}

/* The tenant of --tenant, checked as a policy would check it. */
static int check_tenant(const struct cli_opts *o)
{
	sbx_policy *p = NULL;
	int bad;

	if (!o->tenant)
		return 0;
	bad = sbx_policy_new(&p) < 0 || sbx_policy_set_tenant(p, o->tenant) < 0;
	if (bad)
		cli_print_lib_error(o);
	sbx_policy_free(p);
	return bad ? CLI_EXIT_FAIL : 0;
}

static int collect(const sbx_sandbox_info *info, void *payload)
{
	json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "id", info->id, "tenant",
				info->tenant, "image", info->image, "state", info->state, "created",
				(json_int_t)info->created, "deadline", (json_int_t)info->deadline);

	/* A label the engine hands back is not necessarily UTF-8: skip, never crash. */
	if (row)
		json_array_append_new(payload, row);
	return 0;
}

/* "45s", "12m", "3h", "2d". */
static void span(char *buf, size_t size, long long secs)
{
	if (secs < 0)
		secs = 0;
	if (secs < 120)
		snprintf(buf, size, "%llds", secs);
	else if (secs < 7200)
		snprintf(buf, size, "%lldm", secs / 60);
	else if (secs < 172800)
		snprintf(buf, size, "%lldh", secs / 3600);
	else
		snprintf(buf, size, "%lldd", secs / 86400);
}

static const char *field(json_t *row, const char *key)
{
	return json_string_value(json_object_get(row, key));
}

static void print_table(json_t *rows)
{
	long long now = (long long)time(NULL);
	int wt = (int)strlen("TENANT"), wi = (int)strlen("IMAGE"), ws = (int)strlen("STATE");
	size_t i;
	json_t *row;

	json_array_foreach(rows, i, row)
	{
		int t = (int)strlen(field(row, "tenant")), im = (int)strlen(field(row, "image")),
		    st = (int)strlen(field(row, "state"));
		wt = t > wt ? t : wt;
		wi = im > wi ? im : wi;
		ws = st > ws ? st : ws;
	}
	printf("%-12s  %-*s  %-*s  %-*s  %-8s  %s\n", "ID", wt, "TENANT", wi, "IMAGE", ws, "STATE",
	       "CREATED", "DEADLINE");
	json_array_foreach(rows, i, row)
	{
		long long created = json_integer_value(json_object_get(row, "created"));
		long long deadline = json_integer_value(json_object_get(row, "deadline"));
		char age[32], in[32], c[40], d[40];

		span(age, sizeof(age), now - created);
		span(in, sizeof(in), deadline - now);
		snprintf(c, sizeof(c), "%s ago", age);
		if (!deadline)
			snprintf(d, sizeof(d), "-");
		else if (deadline <= now)
			snprintf(d, sizeof(d), "passed");
		else
			snprintf(d, sizeof(d), "in %s", in);
		printf("%-12.12s  %-*s  %-*s  %-*s  %-8s  %s\n", field(row, "id"), wt,
		       field(row, "tenant"), wi, field(row, "image"), ws, field(row, "state"),
		       created ? c : "-", d);
	}
	fflush(stdout);
}

int cmd_ls(const struct cli_opts *o)
{
	json_t *rows = json_array();
	sbx_backend *b = NULL;
	int rc, dfd = -1;

	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "ls takes no arguments (got '%.64s')", o->args[0]);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = check_tenant(o);
	if (!rc)
		rc = cli_daemon_open(o, &dfd);
	if (rc)
		goto out;
	if (dfd >= 0) {
		json_decref(rows);
		rows = NULL;
		rc = cli_daemon_list(o, dfd, &rows);
		close(dfd);
		if (rc)
			goto out;
	} else {
		rc = cli_backend_open(o, NULL, &b);
		if (rc)
			goto out;
		if (!rows || sbx_backend_list(b, o->tenant, collect, rows) < 0) {
			cli_print_lib_error(o);
			rc = CLI_EXIT_FAIL;
			goto out;
		}
	}
	if (o->json) {
		rc = cli_print_json(json_incref(rows)) < 0 ? CLI_EXIT_FAIL : 0;
	} else {
		print_table(rows);
	}
out:
	json_decref(rows);
	sbx_backend_free(b);
	return rc;
}

static const char *reason_name(sbx_reap_reason reason)
{
	switch (reason) {
	case SBX_REAP_OWNER_GONE:
		return "owner-gone";
	case SBX_REAP_DEADLINE_PASSED:
		return "deadline-passed";
	case SBX_REAP_OWNER_REBOOTED:
		return "owner-rebooted";
	case SBX_REAP_SKIPPED:
		return "skipped";
	}
	return "unknown";
}

struct reap_ctx {
	json_t *rows;
	int dry_run;
	int failed;
	int skipped;
};

static int collect_reaped(const sbx_reap_info *info, void *payload)
{
	struct reap_ctx *c = payload;
	const char *detail = info->detail ? info->detail : "";
	const char *tenant = info->tenant ? info->tenant : "";
	json_t *row;

	if (info->reason == SBX_REAP_SKIPPED)
		c->skipped++;
	else if (!info->removed && !c->dry_run)
		c->failed++;
	/* Labels and engine messages need not be UTF-8: replace, never drop a row. */
	row = json_pack("{s:o, s:o, s:s, s:b, s:o}", "id",
			sbx__json_text(info->id, strlen(info->id), NULL), "tenant",
			sbx__json_text(tenant, strlen(tenant), NULL), "reason",
			reason_name(info->reason), "removed", info->removed != 0, "detail",
			sbx__json_text(detail, strlen(detail), NULL));
	if (row)
		json_array_append_new(c->rows, row);
	return 0;
}

/* What became of a candidate: removed, would remove, skipped or failed. */
static const char *outcome(json_t *row, int dry_run)
{
	if (strcmp(field(row, "reason"), "skipped") == 0)
		return "skipped";
	if (json_is_true(json_object_get(row, "removed")))
		return "removed";
	return dry_run ? "would remove" : "failed";
}

static void print_reaped(json_t *rows, int dry_run)
{
	int wt = 0;
	size_t i;
	json_t *row;

	json_array_foreach(rows, i, row)
	{
		int t = (int)strlen(field(row, "tenant"));
		wt = t > wt ? t : wt;
	}
	json_array_foreach(rows, i, row)
	{
		const char *detail = field(row, "detail");

		if (*detail)
			printf("%-12s  %-12.12s  %-*s  %-15s  %s\n", outcome(row, dry_run),
			       field(row, "id"), wt, field(row, "tenant"), field(row, "reason"),
			       detail);
		else
			printf("%-12s  %-12.12s  %-*s  %s\n", outcome(row, dry_run),
			       field(row, "id"), wt, field(row, "tenant"), field(row, "reason"));
	}
	fflush(stdout);
}

int cmd_reap(const struct cli_opts *o)
{
	sbx_reap_options ro = SBX_REAP_OPTIONS_INIT;
	struct reap_ctx ctx = {.rows = json_array(), .dry_run = o->dry_run};
	sbx_backend *b = NULL;
	int rc, n;

	if (!ctx.rows) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "reap takes no arguments (got '%.64s')",
				o->args[0]);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = check_tenant(o);
	if (rc)
		goto out;
	rc = cli_backend_open(o, NULL, &b);
	if (rc)
		goto out;
	ro.tenant = o->tenant;
	ro.dry_run = o->dry_run;
	n = sbx_backend_reap(b, &ro, collect_reaped, &ctx);
	if (n < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (o->json)
		rc = cli_print_json(json_incref(ctx.rows)) < 0 ? CLI_EXIT_FAIL : 0;
	else
		print_reaped(ctx.rows, o->dry_run);
	if (ctx.failed)
		cli_warn("reaped %d sandbox%s; %d could not be removed", n, n == 1 ? "" : "es",
			 ctx.failed);
	else
		cli_warn("%s %d sandbox%s", o->dry_run ? "would reap" : "reaped", n,
			 n == 1 ? "" : "es");
	if (ctx.skipped)
		cli_warn("%d sandbox%s skipped: %s labels cannot be judged", ctx.skipped,
			 ctx.skipped == 1 ? "" : "es", ctx.skipped == 1 ? "its" : "their");
	if (ctx.failed && !rc)
		rc = CLI_EXIT_FAIL;
out:
	json_decref(ctx.rows);
	sbx_backend_free(b);
	return rc;
}
