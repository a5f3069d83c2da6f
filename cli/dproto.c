/*
 * cli/dproto.c: the local daemon's frames, requests and replies
 * (cli/dproto.h; docs/protocol.md, "The local daemon's protocol").
 *
 * Hand-written because the format is five bytes of header and a JSON
 * object: the JSON itself is jansson's. Every check is strict: a header is
 * judged before its payload is read (so a huge length costs nothing), a
 * request names every field it may carry and no other, each with its type,
 * and strings with a NUL byte inside are refused (jansson keeps them; the
 * library would read them cut short).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/dproto.h"

void cli_dframe_header(uint8_t hdr[CLI_D_HDR], enum cli_dtype type, size_t len)
{
	hdr[0] = (uint8_t)type;
	hdr[1] = (uint8_t)(len >> 24);
	hdr[2] = (uint8_t)(len >> 16);
	hdr[3] = (uint8_t)(len >> 8);
	hdr[4] = (uint8_t)len;
}

int cli_dframe_check(const uint8_t hdr[CLI_D_HDR],
		     int from_daemon,
		     enum cli_dtype *type,
		     size_t *len,
		     char *err,
		     size_t esize)
{
	size_t n = (size_t)hdr[1] << 24 | (size_t)hdr[2] << 16 | (size_t)hdr[3] << 8 | hdr[4];
	size_t min = 1, max = CLI_D_DATA_MAX;

	switch (hdr[0]) {
	case CLI_D_REQUEST:
	case CLI_D_REPLY:
		max = CLI_D_JSON_MAX;
		break;
	case CLI_D_STDIN_EOF:
		min = max = 0;
		break;
	case CLI_D_STDIN:
	case CLI_D_STDOUT:
	case CLI_D_STDERR:
		break;
	default:
		snprintf(err, esize, "unknown frame type 0x%02x", hdr[0]);
		return -1;
	}
	if ((hdr[0] >= CLI_D_STDOUT) != (from_daemon != 0)) {
		snprintf(err, esize, "frame type 0x%02x is not the %s's to send", hdr[0],
			 from_daemon ? "daemon" : "client");
		return -1;
	}
	if (n < min || n > max) {
		snprintf(err, esize, "frame of type 0x%02x with %zu bytes (expected %zu to %zu)",
			 hdr[0], n, min, max);
		return -1;
	}
	*type = (enum cli_dtype)hdr[0];
	*len = n;
	return 0;
}

/* A string without NUL bytes, or NULL. */
static const char *text(json_t *v)
{
	const char *s = json_string_value(v);

	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* An array of strings as a NULL-terminated vector pointing into it. */
static int string_vec(json_t *a, const char ***out, size_t *n, int nonempty)
{
	size_t k, len = json_array_size(a);
	const char **v;
	json_t *e;

	if (!json_is_array(a) || len > CLI_D_ARGS_MAX || (nonempty && len == 0))
		return -1;
	v = calloc(len + 1, sizeof(*v));
	if (!v)
		return -1;
	json_array_foreach(a, k, e)
	{
		v[k] = text(e);
		if (!v[k]) {
			free(v);
			return -1;
		}
	}
	*out = v;
	if (n)
		*n = len;
	return 0;
}

static int limits(json_t *o, struct cli_dreq *rq)
{
	const char *key;
	json_t *v;

	if (!json_is_object(o))
		return -1;
	json_object_foreach(o, key, v)
	{
		int k;

		for (k = SBX__LIMIT_FIRST; k <= SBX__LIMIT_LAST; k++)
			if (strcmp(key, sbx__limit_kinds[k].option) == 0)
				break;
		if (k > SBX__LIMIT_LAST || !(rq->limit[k] = text(v)))
			return -1;
	}
	return 0;
}

static int allows(json_t *a, struct cli_dreq *rq)
{
	size_t k;
	json_t *e;

	if (!json_is_array(a) || json_array_size(a) > CLI_D_ARGS_MAX)
		return -1;
	rq->allow = calloc(json_array_size(a) + 1, sizeof(*rq->allow));
	if (!rq->allow)
		return -1;
	json_array_foreach(a, k, e)
	{
		json_t *cidr = json_object_get(e, "cidr"), *preset = json_object_get(e, "preset");
		const char *spec = text(json_object_get(e, "spec"));

		if (!json_is_object(e) || json_object_size(e) != 2u + (preset != NULL) ||
		    !json_is_boolean(cidr) || !spec || (preset && !json_is_boolean(preset)) ||
		    (json_is_true(cidr) && json_is_true(preset)))
			return -1;
		rq->allow[k].cidr = json_is_true(cidr);
		rq->allow[k].preset = json_is_true(preset);
		rq->allow[k].spec = spec;
	}
	rq->allow_n = json_array_size(a);
	return 0;
}

/* One field of a request; -1: not this op's, or of the wrong type. */
static int field(struct cli_dreq *rq, const char *key, json_t *v)
{
	int ex = rq->op == CLI_DOP_EXEC, cr = rq->op == CLI_DOP_CREATE;
	const char **str = NULL;

	if (strcmp(key, "op") == 0)
		return 0;
	if (strcmp(key, "id") == 0 &&
	    (ex || rq->op == CLI_DOP_KILL || rq->op == CLI_DOP_PAUSE || rq->op == CLI_DOP_RESUME))
		str = &rq->id;
	else if (strcmp(key, "tenant") == 0 && (cr || rq->op == CLI_DOP_LIST))
		str = &rq->tenant;
	else if (strcmp(key, "workdir") == 0 && (ex || cr))
		str = &rq->workdir;
	else if (cr && strcmp(key, "image") == 0)
		str = &rq->image;
	else if (cr && strcmp(key, "timeout") == 0)
		str = &rq->timeout;
	else if (cr && strcmp(key, "create_timeout") == 0)
		str = &rq->create_timeout;
	else if (cr && strcmp(key, "lifetime") == 0)
		str = &rq->lifetime;
	else if (cr && strcmp(key, "tier") == 0)
		str = &rq->tier;
	if (str)
		return (*str = text(v)) ? 0 : -1;
	if (ex && strcmp(key, "argv") == 0)
		return string_vec(v, &rq->argv, NULL, 1);
	if ((ex || cr) && strcmp(key, "env") == 0)
		return string_vec(v, &rq->env, &rq->env_n, 0);
	if (ex && strcmp(key, "timeout_ms") == 0) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return -1;
		rq->timeout_ms = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (rq->op == CLI_DOP_PAUSE && strcmp(key, "max_ms") == 0) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return -1;
		rq->max_ms = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (ex && (strcmp(key, "stdin") == 0 || strcmp(key, "raw_output") == 0)) {
		if (!json_is_boolean(v))
			return -1;
		*(key[0] == 's' ? &rq->want_stdin : &rq->raw_output) = json_is_true(v);
		return 0;
	}
	if (cr && strcmp(key, "limits") == 0)
		return limits(v, rq);
	if (cr && strcmp(key, "allow") == 0)
		return allows(v, rq);
	return -1;
}

int cli_dreq_parse(const char *json, size_t len, struct cli_dreq *rq, char *err, size_t esize)
{
	static const char *const ops[] = {NULL,	  "create", "exec",  "kill",
					  "list", "pause",  "resume"};
	json_error_t je;
	const char *op, *key;
	json_t *v;

	memset(rq, 0, sizeof(*rq));
	rq->root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(rq->root)) {
		snprintf(err, esize, "the request is not a JSON object%s%.100s",
			 rq->root ? "" : ": ", rq->root ? "" : je.text);
		goto fail;
	}
	op = text(json_object_get(rq->root, "op"));
	for (int k = 1; op && k < 7; k++)
		if (strcmp(op, ops[k]) == 0)
			rq->op = (enum cli_dop)k;
	if (!rq->op) {
		snprintf(err, esize,
			 "the request's \"op\" is not create, exec, kill, list, pause or resume");
		goto fail;
	}
	json_object_foreach(rq->root, key, v)
	{
		if (field(rq, key, v) < 0) {
			snprintf(err, esize, "%s request: field \"%.64s\" is unknown or malformed",
				 ops[rq->op], key);
			goto fail;
		}
	}
	if ((rq->op == CLI_DOP_EXEC && (!rq->id || !rq->argv)) ||
	    (rq->op >= CLI_DOP_KILL && rq->op != CLI_DOP_LIST && !rq->id)) {
		snprintf(err, esize, "%s request: \"id\"%s missing", ops[rq->op],
			 rq->op == CLI_DOP_EXEC ? " or \"argv\"" : "");
		goto fail;
	}
	return 0;
fail:
	cli_dreq_free(rq);
	return -1;
}

void cli_dreq_free(struct cli_dreq *rq)
{
	free(rq->argv);
	free(rq->env);
	free(rq->allow);
	json_decref(rq->root);
	memset(rq, 0, sizeof(*rq));
}

int cli_dreply_parse(const char *json,
		     size_t len,
		     json_t **root,
		     int *code,
		     const char **msg,
		     char *err,
		     size_t esize)
{
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *ok = json_object_get(j, "ok");

	*root = NULL;
	if (!json_is_object(j) || !json_is_boolean(ok)) {
		snprintf(err, esize, "the daemon's reply is not a JSON object with \"ok\"");
		json_decref(j);
		return -1;
	}
	*root = j;
	if (json_is_true(ok))
		return 0;
	*code = (int)json_integer_value(json_object_get(j, "code"));
	*msg = text(json_object_get(j, "error"));
	if (*code >= 0 || *code < -100 || !*msg) {
		snprintf(err, esize, "the daemon's error reply has no valid code and message");
		json_decref(j);
		*root = NULL;
		return -1;
	}
	return 1;
}

static int get_u64(json_t *root, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(root, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int cli_dreply_exec(
	json_t *root, sbx_result *r, struct cli_dexec_info *info, char *err, size_t esize)
{
	uint64_t status, code, sig, hit, path, ocap, mcap;

	memset(info, 0, sizeof(*info));
	info->backend = text(json_object_get(root, "backend"));
	info->tier = text(json_object_get(root, "tier"));
	if (!info->backend || !info->tier || get_u64(root, "status", &status) < 0 ||
	    status > SBX_RUN_ERROR || get_u64(root, "exit_code", &code) < 0 || code > 255 ||
	    get_u64(root, "signal", &sig) < 0 || sig > 64 ||
	    get_u64(root, "limits_hit", &hit) < 0 || hit > 0xffff ||
	    get_u64(root, "path", &path) < 0 || path > SBX_RUN_PATH_EXEC ||
	    get_u64(root, "stdout_bytes", &r->stdout_total) < 0 ||
	    get_u64(root, "stderr_bytes", &r->stderr_total) < 0 ||
	    get_u64(root, "duration_ms", &r->duration_ms) < 0 ||
	    get_u64(root, "cpu_user_us", &r->cpu_user_us) < 0 ||
	    get_u64(root, "cpu_system_us", &r->cpu_system_us) < 0 ||
	    get_u64(root, "max_rss_kb", &r->max_rss_kb) < 0 ||
	    get_u64(root, "memory_cap", &mcap) < 0 || get_u64(root, "output_cap", &ocap) < 0 ||
	    mcap > INT64_MAX || ocap > INT64_MAX ||
	    get_u64(root, "timeout_ms", &info->timeout_ms) < 0 ||
	    get_u64(root, "spans_dropped", &info->spans_dropped) < 0 ||
	    !json_is_boolean(json_object_get(root, "stdout_truncated")) ||
	    !json_is_boolean(json_object_get(root, "stderr_truncated"))) {
		snprintf(err, esize, "the daemon's exec reply is malformed");
		return -1;
	}
	r->status = (sbx_run_status)status;
	r->exit_code = (int)code;
	r->term_signal = (int)sig;
	r->limits_hit = (unsigned)hit;
	r->path = (unsigned)path;
	r->stdout_truncated = json_is_true(json_object_get(root, "stdout_truncated"));
	r->stderr_truncated = json_is_true(json_object_get(root, "stderr_truncated"));
	info->memory_cap = (int64_t)mcap;
	info->output_cap = (int64_t)ocap;
	return 0;
}

int cli_dreply_rows(json_t *root, json_t **rows, char *err, size_t esize)
{
	json_t *a = json_object_get(root, "sandboxes"), *row;
	size_t k;

	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, k, row)
	{
		if (!text(json_object_get(row, "id")) || !text(json_object_get(row, "tenant")) ||
		    !text(json_object_get(row, "image")) || !text(json_object_get(row, "state")) ||
		    !json_is_integer(json_object_get(row, "created")) ||
		    !json_is_integer(json_object_get(row, "deadline")))
			goto bad;
	}
	*rows = json_incref(a);
	return 0;
bad:
	snprintf(err, esize, "the daemon's list reply is malformed");
	return -1;
}

int cli_dreply_create(json_t *root, struct cli_dcreate_info *info, char *err, size_t esize)
{
	info->id = text(json_object_get(root, "sandbox_id"));
	info->backend = text(json_object_get(root, "backend"));
	info->tier = text(json_object_get(root, "tier"));
	info->tenant = text(json_object_get(root, "tenant"));
	if (!info->id || !info->id[0] || !info->backend || !info->tier || !info->tenant ||
	    get_u64(root, "spans_dropped", &info->spans_dropped) < 0) {
		snprintf(err, esize, "the daemon's create reply is malformed");
		return -1;
	}
	return 0;
}
