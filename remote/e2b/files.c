/*
 * remote/e2b/files.c: files written into and read from an E2B sandbox
 * through envd's /files endpoint, as the user envd runs processes as. envd
 * writes 0644; another mode is set by a run of chmod (run.c).
 */
#include <stdio.h>
#include <string.h>

#include <sandboxio.h>

#include "remote/e2b/e2b-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

/* ===== Files ===== */

static char *files_url(struct sbx__e2b_box *b, const char *path)
{
	char *esc = curl_easy_escape(NULL, path, 0), *url = NULL;

	if (esc &&
	    asprintf(&url, "%s/files?path=%s&username=%s", b->envd_url, esc, SBX_E2B_USER) < 0)
		url = NULL;
	curl_free(esc);
	return url;
}

/* Collects a helper run's stderr. */
static int collect_sink(void *arg, int stream, const void *data, size_t len)
{
	if (stream == SBX_STREAM_STDERR && sbx__buf_append(arg, data, len) < 0)
		return -2;
	return 0;
}

int sbx__e2b_op_write_file(
	void *state, void *box, const char *path, const void *data, size_t len, unsigned int mode)
{
	struct sbx__e2b *e = state;
	struct sbx__e2b_box *b = box;
	_sbx_cleanup_free_ char *url = files_url(b, path);
	char what[320];
	struct sbx__e2b_req rq = {.method = "POST",
				  .url = url,
				  .box = b,
				  .content_type = "application/octet-stream",
				  .body = data,
				  .body_len = len,
				  .timeout_ms = e->api_timeout_ms,
				  .max = 65536};
	struct sbx__e2b_resp rs;
	int rc;

	if (!url)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s was deleted; files are refused", b->id);
	snprintf(what, sizeof(what), "write file %.256s", path);
	rc = sbx__e2b_http(e, &rq, &rs);
	if (rc == 0 && rs.status != 200)
		rc = sbx__e2b_status_error(e, what, b->id, &rs);
	sbx__e2b_resp_clear(&rs);
	if (rc < 0 || mode == 0644)
		return rc;
	{
		/* envd writes 0644 (umask 022); other bits are set by a run of chmod. */
		char m[16];
		char *const argv[] = {"chmod", m, "--", (char *)path, NULL};
		struct sbx__buf err = {.cap = 4096};
		int ended = SBX__ENDED_NO;
		const struct sbx__run_req req = {
			.argv = (const char *const *)argv,
			.workdir = "/",
			.timeout_ms = (uint64_t)e->api_timeout_ms,
			.sink = collect_sink,
			.sink_arg = &err,
			.ended = &ended,
		};
		sbx_result res = {0};

		snprintf(m, sizeof(m), "%o", mode);
		rc = sbx__e2b_proc_run(e, b, &req, argv, &res);
		if (rc == 0 && (res.status != SBX_RUN_EXITED || res.exit_code != 0))
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					    "e2b: chmod %o %.256s: %s %d: %.300s", mode, path,
					    sbx_run_status_name(res.status), res.exit_code,
					    err.data ? err.data : "");
		sbx__buf_clear(&err);
	}
	return rc;
}

int sbx__e2b_op_read_file(
	void *state, void *box, const char *path, size_t max, char **out, size_t *len)
{
	struct sbx__e2b *e = state;
	struct sbx__e2b_box *b = box;
	_sbx_cleanup_free_ char *url = files_url(b, path);
	char what[320];
	struct sbx__e2b_req rq = {.method = "GET",
				  .url = url,
				  .box = b,
				  .timeout_ms = e->api_timeout_ms,
				  .max = max ? max : 1};
	struct sbx__e2b_resp rs;
	int rc;

	if (!url)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	if (__atomic_load_n(&b->dead, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "e2b: sandbox %s was deleted; files are refused", b->id);
	snprintf(what, sizeof(what), "read file %.256s", path);
	rc = sbx__e2b_http(e, &rq, &rs);
	if (rc == SBX_ETOOBIG && rs.status == 200) {
		sbx__e2b_resp_clear(&rs);
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_REMOTE,
				      "e2b: read file %.256s: larger than %zu bytes", path, max);
	}
	if (rc == SBX_ETOOBIG)
		rc = 0; /* an error answer longer than max: its status says enough */
	if (rc == 0 && rs.status != 200)
		rc = sbx__e2b_status_error(e, what, b->id, &rs);
	if (rc == 0) {
		size_t n = rs.body.len;
		char *data = sbx__buf_steal(&rs.body);

		if (!data) {
			rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
		} else {
			*len = n;
			*out = data;
		}
	}
	sbx__e2b_resp_clear(&rs);
	return rc;
}
