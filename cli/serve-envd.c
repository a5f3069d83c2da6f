/*
 * cli/serve-envd.c: envd's routes on the E2B-compatible server: /health,
 * the file endpoints (GET /files downloads, POST /files uploads, as
 * multipart/form-data or application/octet-stream) and the dispatch of
 * process.Process calls to cli/serve-process.c; also E2B's paths and user
 * mapped onto the sandbox (its home /home/user is /workspace here, and
 * only its default user exists).
 *
 * The multipart parser is written here: libmicrohttpd's post processor
 * hands file parts over in pieces and says nothing of a part with no bytes,
 * while a whole, bounded body in memory is simple to split exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <microhttpd.h>

#include "cli/serve-e2b-int.h"

/* ===== envd: paths and users ===== */

/*
 * A path in the sandbox: the E2B user's home (/home/user, ~) and relative
 * paths are /workspace here, the sandbox user's home and working
 * directory. The result is cleaned as Go's filepath.Clean does ("." and
 * repeated slashes go, ".." removes a segment and stops at /), so the
 * library, which refuses "..", gets a plain absolute path.
 */
int e2b_map_path(const char *in, char *out, size_t size)
{
	char tmp[PATH_MAX_LEN + 16];
	const char *rest;
	char *save = NULL, *seg;
	size_t o = 0;

	if (!in || !*in || strlen(in) > PATH_MAX_LEN)
		return -1;
	if (in[0] == '~' && (in[1] == '\0' || in[1] == '/'))
		rest = in + 1;
	else if (strncmp(in, "/home/user", 10) == 0 && (in[10] == '\0' || in[10] == '/'))
		rest = in + 10;
	else if (in[0] != '/')
		rest = in;
	else
		rest = NULL;
	snprintf(tmp, sizeof(tmp), "%s%s", rest ? "/workspace/" : "", rest ? rest : in);
	for (seg = strtok_r(tmp, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		size_t l = strlen(seg);

		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			while (o > 0 && out[--o] != '/')
				;
			continue;
		}
		if (o + l + 2 > size)
			return -1;
		out[o++] = '/';
		memcpy(out + o, seg, l);
		o += l;
	}
	if (o == 0) {
		if (size < 2)
			return -1;
		out[o++] = '/';
	}
	out[o] = '\0';
	return 0;
}

/* Only E2B's default user exists here (commands run as the sandbox user). */
int e2b_user_ok(const char *name)
{
	return !name || !*name || strcmp(name, "user") == 0;
}

/* ===== envd: files ===== */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static enum MHD_Result
file_error(struct MHD_Connection *c, int rc, const char *path, const char *msg)
{
	switch (rc) {
	case SBX_ENOTFOUND:
		return e2b_envd_error(c, 404, "path '%.512s' does not exist", path);
	case SBX_EINVALID:
		return e2b_envd_error(c, 400, "path '%.512s': %s", path, msg);
	case SBX_EDENIED:
		return e2b_envd_error(c, 403, "path '%.512s': %s", path, msg);
	case SBX_ETOOBIG:
		return e2b_envd_error(c, 413, "path '%.512s': %s", path, msg);
	default:
		return e2b_envd_error(c, 500, "%s", msg);
	}
}

static enum MHD_Result envd_download(struct MHD_Connection *c, struct req *rq)
{
	const char *given = e2b_query(c, "path");
	char path[PATH_MAX_LEN + 16];
	struct MHD_Response *r;
	void *data = NULL;
	size_t len = 0;
	int rc;

	if (!e2b_user_ok(e2b_query(c, "username")))
		return e2b_envd_error(c, 401, "user '%.64s' is not available on this server",
				      e2b_query(c, "username"));
	if (!given || e2b_map_path(given, path, sizeof(path)) < 0)
		return e2b_envd_error(c, 400, "invalid path '%.512s'", given ? given : "");
	if (e2b_box_acquire(rq->box) < 0)
		return e2b_envd_error(c, 502, "The sandbox was not found");
	rc = sbx_sandbox_read_file(&data, &len, rq->box->s, path, 0);
	if (rc < 0) {
		enum MHD_Result ret = file_error(c, rc, path, sbx_error_last()->message);

		e2b_box_release(rq->box, rc);
		return ret;
	}
	e2b_box_release(rq->box, 0);
	r = MHD_create_response_from_buffer_with_free_callback(len, data, sbx_free);
	if (!r) {
		sbx_free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	return e2b_queue(c, 200, r);
}

struct upload {
	const char *name; /* the form's filename, or NULL */
	size_t name_len;
	const char *data;
	size_t len;
};

/* The value of a Content-Disposition parameter (name="..."), unquoted. */
static int
disposition_param(const char *h, size_t hlen, const char *param, const char **out, size_t *out_len)
{
	size_t pl = strlen(param);

	for (size_t k = 0; k + pl + 2 <= hlen; k++) {
		if ((k == 0 || h[k - 1] == ' ' || h[k - 1] == ';') &&
		    strncasecmp(h + k, param, pl) == 0 && h[k + pl] == '=') {
			const char *v = h + k + pl + 1, *end;

			if (v < h + hlen && *v == '"') {
				v++;
				end = memchr(v, '"', (size_t)(h + hlen - v));
				if (!end)
					return -1;
			} else {
				for (end = v; end < h + hlen && *end != ';'; end++)
					;
			}
			*out = v;
			*out_len = (size_t)(end - v);
			return 0;
		}
	}
	return 1;
}

/*
 * multipart/form-data with "file" parts (RFC 7578), from a whole body in
 * memory. Returns the number of parts in ups (at most max), or -1 with err.
 */
static int parse_multipart(const char *ct,
			   const char *body,
			   size_t len,
			   struct upload *ups,
			   int max,
			   char *err,
			   size_t esize)
{
	char delim[80];
	const char *bnd, *p, *end = body + len;
	size_t blen, dlen;
	int n = 0;

	if (disposition_param(ct, strlen(ct), "boundary", &bnd, &blen) != 0 || blen == 0 ||
	    blen > 70) {
		snprintf(err, esize, "multipart/form-data without a boundary");
		return -1;
	}
	dlen = (size_t)snprintf(delim, sizeof(delim), "--%.*s", (int)blen, bnd);
	p = memmem(body, len, delim, dlen);
	if (!p) {
		snprintf(err, esize, "malformed multipart body");
		return -1;
	}
	for (;;) {
		const char *hdr, *hend, *next, *line;
		const char *name = NULL, *fname = NULL;
		size_t nlen = 0, flen = 0;

		p += dlen;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return n;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			break;
		hdr = p + 2;
		hend = memmem(hdr, (size_t)(end - hdr), "\r\n\r\n", 4);
		if (!hend)
			break;
		for (line = hdr; line < hend;) {
			const char *eol = memmem(line, (size_t)(hend + 2 - line), "\r\n", 2);

			if (!eol)
				eol = hend;
			if ((size_t)(eol - line) > 20 &&
			    strncasecmp(line, "Content-Disposition:", 20) == 0) {
				disposition_param(line + 20, (size_t)(eol - line - 20), "name",
						  &name, &nlen);
				disposition_param(line + 20, (size_t)(eol - line - 20), "filename",
						  &fname, &flen);
			}
			line = eol + 2;
		}
		p = hend + 4;
		next = memmem(p, (size_t)(end - p), delim, dlen);
		if (!next || next - p < 2 || next[-2] != '\r' || next[-1] != '\n')
			break;
		if (!name || nlen != 4 || memcmp(name, "file", 4) != 0) {
			snprintf(err, esize, "unexpected form field '%.*s' (only file)",
				 name ? (int)(nlen > 64 ? 64 : nlen) : 0, name ? name : "");
			return -1;
		}
		if (n == max) {
			snprintf(err, esize, "more than %d files in one upload", max);
			return -1;
		}
		ups[n].name = fname;
		ups[n].name_len = fname ? flen : 0;
		ups[n].data = p;
		ups[n].len = (size_t)(next - 2 - p);
		n++;
		p = next;
	}
	snprintf(err, esize, "malformed multipart body");
	return -1;
}

/*
 * Writes one file, making its directory first when it is missing (envd
 * creates parents). Returns 0, or the library's error code with the
 * message in err.
 */
static int
write_one(sbx_sandbox *s, const char *path, const char *data, size_t len, char *err, size_t esize)
{
	char dir[PATH_MAX_LEN + 16];
	const char *argv[] = {"mkdir", "-p", "--", dir, NULL};
	const char *msg;
	sbx_result *r = NULL;
	char *slash;
	int rc;

	rc = sbx_sandbox_write_file(s, path, data, len, 0644);
	msg = sbx_error_last()->message;
	snprintf(err, esize, "%s", msg);
	if (rc == 0 || (rc != SBX_ENOTFOUND && !(rc == SBX_EENGINE && strstr(msg, "nonexistent"))))
		return rc;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return rc;
	*slash = '\0';
	rc = sbx_sandbox_run(&r, s, argv, NULL);
	if (rc < 0) {
		snprintf(err, esize, "%s", sbx_error_last()->message);
		return rc;
	}
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		snprintf(err, esize, "cannot create directory %.512s: %.400s", dir,
			 r->stderr_data ? r->stderr_data : "");
		sbx_result_free(r);
		return SBX_EDENIED;
	}
	sbx_result_free(r);
	rc = sbx_sandbox_write_file(s, path, data, len, 0644);
	snprintf(err, esize, "%s", sbx_error_last()->message);
	return rc;
}

#define MAX_UPLOADS 64

static enum MHD_Result envd_upload(struct MHD_Connection *c, struct req *rq)
{
	const char *ct = e2b_header(c, "Content-Type"), *given = e2b_query(c, "path");
	const char *ce = e2b_header(c, "Content-Encoding");
	struct upload ups[MAX_UPLOADS];
	char path[PATH_MAX_LEN + 16], name[PATH_MAX_LEN + 16], err[512];
	json_t *out;
	int n, rc = 0;

	if (!e2b_user_ok(e2b_query(c, "username")))
		return e2b_envd_error(c, 401, "user '%.64s' is not available on this server",
				      e2b_query(c, "username"));
	if (ce && strcasecmp(ce, "identity") != 0)
		return e2b_envd_error(
			c, 415, "Content-Encoding '%.32s' is not supported by this server", ce);
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		n = parse_multipart(ct, rq->body ? rq->body : "", rq->len, ups, MAX_UPLOADS, err,
				    sizeof(err));
		if (n < 0)
			return e2b_envd_error(c, 400, "%s", err);
		if (n == 0)
			return e2b_envd_error(c, 400, "no file part in the upload");
		if (given && n > 1)
			return e2b_envd_error(c, 400, "path names one file, and the upload has %d",
					      n);
	} else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
		if (!given)
			return e2b_envd_error(c, 400,
					      "an application/octet-stream upload needs path");
		ups[0] = (struct upload){.data = rq->body ? rq->body : "", .len = rq->len};
		n = 1;
	} else {
		return e2b_envd_error(c, 400,
				      "Content-Type must be multipart/form-data or "
				      "application/octet-stream");
	}
	for (int k = 0; k < n; k++) {
		if (ups[k].len > FILE_MAX)
			return e2b_envd_error(c, 413, "a file is larger than 64 MiB");
		if (!given &&
		    (!ups[k].name || ups[k].name_len == 0 || ups[k].name_len >= sizeof(name)))
			return e2b_envd_error(c, 400, "a file part names no path");
	}
	out = json_array();
	if (e2b_box_acquire(rq->box) < 0) {
		json_decref(out);
		return e2b_envd_error(c, 502, "The sandbox was not found");
	}
	for (int k = 0; k < n && rc == 0; k++) {
		const char *want = given;

		if (!want) {
			memcpy(name, ups[k].name, ups[k].name_len);
			name[ups[k].name_len] = '\0';
			want = name;
		}
		if (e2b_map_path(want, path, sizeof(path)) < 0 || strcmp(path, "/") == 0) {
			e2b_box_release(rq->box, 0);
			json_decref(out);
			return e2b_envd_error(c, 400, "invalid path '%.512s'", want);
		}
		rc = write_one(rq->box->s, path, ups[k].data, ups[k].len, err, sizeof(err));
		if (rc == 0)
			json_array_append_new(out,
					      json_pack("{s:s, s:s, s:s}", "path", path, "name",
							base_name(path), "type", "file"));
	}
	if (rc < 0) {
		enum MHD_Result ret = file_error(c, rc, path, err);

		e2b_box_release(rq->box, rc);
		json_decref(out);
		return ret;
	}
	e2b_box_release(rq->box, 0);
	return e2b_reply_json(c, 200, out);
}

/* ===== envd: routes ===== */

enum MHD_Result e2b_envd(struct cli_e2b *srv,
			 struct MHD_Connection *c,
			 struct req *rq,
			 const char *method,
			 const char *url)
{
	if (strcmp(url, "/health") == 0)
		return strcmp(method, "GET") == 0 ? e2b_reply_empty(c, 204)
						  : e2b_envd_error(c, 405, "method not allowed");
	if (strcmp(url, "/files") == 0) {
		if (strcmp(method, "GET") == 0)
			return envd_download(c, rq);
		if (strcmp(method, "POST") == 0)
			return envd_upload(c, rq);
		return e2b_envd_error(c, 405, "method not allowed");
	}
	if (strncmp(url, "/process.Process/", 17) == 0 && strcmp(method, "POST") == 0) {
		const char *m = url + 17;

		if (strcmp(m, "Start") == 0)
			return e2b_envd_start(srv, c, rq);
		if (strcmp(m, "List") == 0 || strcmp(m, "SendInput") == 0 ||
		    strcmp(m, "CloseStdin") == 0 || strcmp(m, "SendSignal") == 0)
			return e2b_envd_unary(srv, c, rq, m);
	}
	if ((strncmp(url, "/process.Process/", 17) == 0 ||
	     strncmp(url, "/filesystem.Filesystem/", 23) == 0) &&
	    strcmp(method, "POST") == 0) {
		const char *ct = e2b_header(c, "Content-Type");

		if (ct && strncasecmp(ct, "application/connect+", 20) == 0)
			return e2b_stream_error(c, "unimplemented",
						"this method is not supported by this server");
		return e2b_connect_error(c, "unimplemented",
					 "%.128s is not supported by this server", url);
	}
	return e2b_envd_error(c, 404, "%.16s %.128s: not found", method, url);
}
