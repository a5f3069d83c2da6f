/*
 * cli/manage.c: `rm` and `ls`, the commands that look after sandboxes made
 * earlier by `create`.
 *
 * rm goes through the library (open by id, then close), so it can only
 * remove containers that carry sandboxio's labels: a mistyped id never
 * touches someone else's container. One unknown id does not stop the rest;
 * the exit status says that something failed. ls prints a table for people
 * or, with --json, an array of objects for scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/cli.h"

int cmd_rm(const struct cli_opts *o)
{
	json_t *removed = json_array(), *errors = json_array();
	sbx_backend *b = NULL;
	int rc, failed = 0;

	if (o->nargs < 1) {
		cli_print_error(o, SBX_EINVALID, "rm: give at least one sandbox ID");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = cli_backend_open(o, &b);
	if (rc)
		goto out;
	for (int i = 0; i < o->nargs; i++) {
		const char *id = o->args[i];
		sbx_sandbox *s = NULL;

		if (sbx_sandbox_open(&s, b, id) < 0 || sbx_sandbox_close(s) < 0) {
			const sbx_error *e = sbx_error_last();

			fprintf(stderr, "sandboxio: %s\n", e->message);
			json_array_append_new(errors,
					      json_pack("{s:s?, s:s?, s:i}", "id", id, "error",
							e->message, "code", e->code));
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
	int rc;

	if (o->nargs > 0) {
		cli_print_error(o, SBX_EINVALID, "ls takes no arguments (got '%.64s')", o->args[0]);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (o->tenant) {
		/* The tenant is checked as a policy would check it. */
		sbx_policy *p = NULL;

		rc = sbx_policy_new(&p) < 0 || sbx_policy_set_tenant(p, o->tenant) < 0;
		if (rc)
			cli_print_lib_error(o);
		sbx_policy_free(p);
		if (rc) {
			rc = CLI_EXIT_FAIL;
			goto out;
		}
	}
	rc = cli_backend_open(o, &b);
	if (rc)
		goto out;
	if (!rows || sbx_backend_list(b, o->tenant, collect, rows) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
		goto out;
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
