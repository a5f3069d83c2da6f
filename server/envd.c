/*
 * server/envd.c: envd's routes on the E2B-compatible server: /health,
 * the file endpoints (GET /files downloads, POST /files uploads, as
 * multipart/form-data or application/octet-stream, plain or gzip) and the
 * dispatch of
 * process.Process calls to server/process.c. E2B's paths and user are
 * mapped onto the sandbox by server/paths.c.
 *
 * The multipart parser is written here: libmicrohttpd's post processor
 * hands file parts over in pieces and says nothing of a part with no bytes,
 * while a whole, bounded body in memory is simple to split exactly.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

/* ===== envd: files ===== */

/*
 * A file moves through a program in the sandbox, run by the library like
 * any command, with a deadline of its own (--transfer-timeout, within the
 * sandbox's life): sbx-init kills the program at that deadline, which ends
 * only the transfer, never the sandbox, and frees the busy slot. The
 * program checks the file's type first and answers in its exit status, so
 * that errors are the server's words and never the sandbox's stderr:
 * special files (devices, FIFOs, sockets) are refused, and a read is
 * `head -c` of at most the bound plus one byte, which ends the program at
 * the bound instead of reading on. A read moves at most the sandbox's
 * output cap per run, so a larger file comes in slices, each a run of its
 * own; between slices a client that went away stops the download.
 */
#define X_NOENT 90
#define X_ISDIR 91
#define X_DANGLING 92
#define X_SPECIAL 93
#define X_DENIED 94
#define X_MKDIR 95

static const char read_script[] =
	"p=$1\n"
	"[ -d \"$p\" ] && exit 91\n"
	"if [ ! -e \"$p\" ]; then [ -L \"$p\" ] && exit 92; exit 90; fi\n"
	"[ -f \"$p\" ] || exit 93\n"
	"[ -r \"$p\" ] || exit 94\n"
	"if [ \"$2\" = 0 ]; then exec head -c \"$3\" -- \"$p\" 2>/dev/null; fi\n"
	"tail -c +\"$(($2 + 1))\" -- \"$p\" 2>/dev/null | head -c \"$3\"\n";

static const char write_script[] =
	"p=$1; d=${p%/*}\n"
	"if [ -e \"$p\" ] || [ -L \"$p\" ]; then\n"
	"  [ -d \"$p\" ] && exit 91\n"
	"  [ -f \"$p\" ] || exit 93\n"
	"fi\n"
	"if [ -n \"$d\" ] && [ ! -d \"$d\" ]; then mkdir -p -- \"$d\" 2>/dev/null || exit 95; fi\n"
	"umask 022\n"
	"true 2>/dev/null >\"$p\" || exit 94\n"
	"exec cat >\"$p\"\n";

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Whether every name in path fits NAME_MAX (255 bytes). */
static int names_fit(const char *path)
{
	size_t run = 0;

	for (; *path; path++) {
		run = *path == '/' ? 0 : run + 1;
		if (run > 255)
			return 0;
	}
	return 1;
}

/* A transfer that has no answer yet: its deadline and what it hit. */
struct xfer {
	uint64_t deadline; /* monotonic ms */
	int fd;		   /* the client's socket */
};

static void xfer_begin(struct xfer *x, struct sbxs_server *srv, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	x->deadline = sbx__mono_ms() + srv->transfer_ms;
	x->fd = ci ? ci->connect_fd : -1;
}

/* Takes the slot within the transfer's deadline; a reply when it cannot. */
static enum MHD_Result
xfer_acquire(struct MHD_Connection *c, struct sbxs_box *b, struct xfer *x, int *ok)
{
	int rc = sbxs_box_acquire(b, x->deadline);

	*ok = rc == 0;
	if (rc == -2)
		return sbxs_envd_error(c, 503,
				       "the sandbox stayed busy with another command past the "
				       "transfer's deadline (%llu s)",
				       (unsigned long long)(b->srv->transfer_ms / 1000));
	if (rc < 0)
		return sbxs_envd_error(c, 502, "The sandbox was not found");
	return MHD_YES;
}

/*
 * One program of a transfer, bounded by the transfer's deadline (and the
 * sandbox's run timeout and life). Returns the library's code; *timed_out
 * when the deadline ended it.
 */
static int xfer_run(struct sbxs_box *b,
		    const struct xfer *x,
		    const char *const *argv,
		    const void *in,
		    size_t in_len,
		    sbx_result **r,
		    int *timed_out)
{
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	uint64_t now = sbx__mono_ms(), t;
	int rc;

	*r = NULL;
	*timed_out = 0;
	if (now >= x->deadline) {
		*timed_out = 1;
		return 0;
	}
	t = x->deadline - now;
	if (b->run_timeout_ms && t > b->run_timeout_ms)
		t = b->run_timeout_ms;
	if (b->end_mono <= now)
		return SBX_ETIMEOUT;
	if (t > b->end_mono - now)
		t = b->end_mono - now;
	ro.timeout_ms = t;
	ro.stdin_data = in;
	ro.stdin_len = in_len;
	rc = sbx_sandbox_run(r, b->s, argv, &ro);
	if (rc == 0 && (*r)->status == SBX_RUN_TIMEOUT)
		*timed_out = 1;
	return rc;
}

/* The reply to a transfer program that did not succeed. */
static enum MHD_Result xfer_failed(struct MHD_Connection *c,
				   struct sbxs_server *srv,
				   const char *path,
				   int rc,
				   const sbx_result *r,
				   int timed_out,
				   int writing)
{
	if (timed_out)
		return sbxs_envd_error(c, 504,
				       "the %s of '%.512s' did not finish within the transfer's "
				       "deadline (%llu s); it was stopped",
				       writing ? "upload" : "download", path,
				       (unsigned long long)(srv->transfer_ms / 1000));
	if (rc < 0)
		return sbxs_envd_error(c, rc == SBX_ECANCELED || rc == SBX_ETIMEOUT ? 502 : 500,
				       "the sandbox could not %s the file (%s)",
				       writing ? "write" : "read", sbx_strerror(rc));
	if (r->status != SBX_RUN_EXITED)
		return sbxs_envd_error(c, 500, "the %s of '%.512s' was ended (%s)",
				       writing ? "upload" : "download", path,
				       sbx_run_status_name(r->status));
	switch (r->exit_code) {
	case X_NOENT:
		return sbxs_envd_error(c, 404, "path '%.512s' does not exist", path);
	case X_ISDIR:
		return sbxs_envd_error(c, 400, "path '%.512s' is a directory", path);
	case X_DANGLING:
		return sbxs_envd_error(c, 400,
				       "path '%.512s' is a symbolic link that leads nowhere (a "
				       "missing target or a loop)",
				       path);
	case X_SPECIAL:
		return sbxs_envd_error(c, 400,
				       "path '%.512s' is not a regular file (a device, FIFO or "
				       "socket); only regular files are transferred",
				       path);
	case X_DENIED:
		return sbxs_envd_error(c, 403, "path '%.512s' cannot be %s by the sandbox user",
				       path, writing ? "written" : "read");
	case X_MKDIR:
		return sbxs_envd_error(c, 403, "the directory of '%.512s' cannot be created", path);
	case 127:
	case 126:
		return sbxs_envd_error(c, 500,
				       "the sandbox's image lacks the shell tools files move "
				       "through (sh, head, tail, cat)");
	default:
		if (writing && r->stderr_data && strstr(r->stderr_data, "No space left"))
			return sbxs_envd_error(c, 507, "no space left in the sandbox for '%.512s'",
					       path);
		return sbxs_envd_error(c, 400, "path '%.512s' could not be %s as a file", path,
				       writing ? "written" : "read");
	}
}

static int client_left(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP));
}

static enum MHD_Result
envd_download(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	const char *given = sbxs_query(c, "path");
	const char *argv[] = {"sh", "-c", read_script, "sbx-read", NULL, NULL, NULL, NULL};
	char path[PATH_MAX_LEN + 16], off_s[24], n_s[24];
	struct sbxs_box *b = rq->box;
	struct MHD_Response *resp;
	struct xfer x;
	char *data = NULL;
	size_t len = 0, slice;
	int64_t cap;
	enum MHD_Result ret;
	int ok, rc = 0, timed_out = 0, left = 0, redacted = 0;
	sbx_result *r = NULL;

	if (!sbxs_user_ok(sbxs_query(c, "username")))
		return sbxs_envd_error(c, 401, "user '%.64s' is not available on this server",
				       sbxs_query(c, "username"));
	if (!given || sbxs_map_path(given, path, sizeof(path)) < 0)
		return sbxs_envd_error(c, 400, "invalid path '%.512s'", given ? given : "");
	if (!names_fit(path))
		return sbxs_envd_error(c, 400, "path '%.512s' has a name longer than 255 bytes",
				       path);
	/* A slice is what one run may return: the sandbox's output cap. */
	cap = sbx_policy_limit(sbx_sandbox_policy(b->s), SBX_LIMIT_OUTPUT);
	slice = cap > 0 && (uint64_t)cap < FILE_MAX + 1 ? (size_t)cap : FILE_MAX + 1;
	xfer_begin(&x, srv, c);
	ret = xfer_acquire(c, b, &x, &ok);
	if (!ok)
		return ret;
	argv[4] = path;
	argv[5] = off_s;
	argv[6] = n_s;
	for (;;) {
		size_t want = FILE_MAX + 1 - len < slice ? FILE_MAX + 1 - len : slice;
		char *grown;

		snprintf(off_s, sizeof(off_s), "%zu", len);
		snprintf(n_s, sizeof(n_s), "%zu", want);
		rc = xfer_run(b, &x, argv, NULL, 0, &r, &timed_out);
		if (rc < 0 || timed_out || r->status != SBX_RUN_EXITED || r->exit_code != 0)
			break;
		/* The slice passed the redactor: if it changed a byte count, the
		 * file holds a value that is never given out, and a file with
		 * holes or repeats is no answer either. */
		if (!r->stdout_truncated && r->stdout_total != r->stdout_len) {
			redacted = 1;
			break;
		}
		if (r->stdout_len) {
			grown = realloc(data, len + r->stdout_len + 1);
			if (!grown) {
				rc = SBX_ENOMEM;
				break;
			}
			data = grown;
			memcpy(data + len, r->stdout_data, r->stdout_len);
			len += r->stdout_len;
		}
		/* A short slice is the end of the file; a full one may not be. */
		if (r->stdout_len < want || len > FILE_MAX || r->stdout_truncated)
			break;
		sbx_result_free(r);
		r = NULL;
		if (client_left(x.fd)) {
			left = 1;
			break;
		}
	}
	sbxs_box_release(b, rc);
	if (left) {
		free(data);
		return MHD_NO; /* the client went away between slices */
	}
	if (redacted) {
		sbx_result_free(r);
		free(data);
		return sbxs_envd_error(
			c, 403, "path '%.512s' holds a secret value, which is never given out",
			path);
	}
	if (rc < 0 || timed_out || r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		ret = xfer_failed(c, srv, path, rc, r, timed_out, 0);
		sbx_result_free(r);
		free(data);
		return ret;
	}
	sbx_result_free(r);
	if (len > FILE_MAX) {
		free(data);
		return sbxs_envd_error(c, 413, "path '%.512s' is larger than 64 MiB", path);
	}
	resp = MHD_create_response_from_buffer(len, data ? data : (void *)"",
					       data ? MHD_RESPMEM_MUST_FREE
						    : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	return sbxs_queue(c, 200, resp);
}

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
 * The next delimiter at or after p: CRLF "--" boundary followed by CRLF or
 * "--" (RFC 2046 5.1.1: a delimiter starts a line, so "--boundary" inside
 * content is content). Returns the CRLF's position or NULL.
 */
static const char *next_delimiter(const char *p, const char *end, const char *delim, size_t dlen)
{
	while (p < end) {
		const char *hit = memmem(p, (size_t)(end - p), delim, dlen);
		const char *after;

		if (!hit)
			return NULL;
		after = hit + dlen;
		if (end - after >= 2 && ((after[0] == '\r' && after[1] == '\n') ||
					 (after[0] == '-' && after[1] == '-')))
			return hit;
		p = hit + 1;
	}
	return NULL;
}

int sbxs_parse_multipart(const char *ct,
			 const char *body,
			 size_t len,
			 struct sbxs_upload *ups,
			 int max,
			 char *err,
			 size_t esize)
{
	char delim[80]; /* CRLF "--" boundary */
	const char *bnd, *p, *end = body + len;
	size_t blen, dlen;
	int n = 0;

	if (!ct || disposition_param(ct, strlen(ct), "boundary", &bnd, &blen) != 0 || blen == 0 ||
	    blen > 70) {
		snprintf(err, esize, "multipart/form-data without a boundary");
		return -1;
	}
	dlen = (size_t)snprintf(delim, sizeof(delim), "\r\n--%.*s", (int)blen, bnd);
	/* p: just past a delimiter. The first may open the body (no
	 * preamble, so no CRLF before it). */
	if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0) {
		p = body + dlen - 2;
	} else {
		p = next_delimiter(body, end, delim, dlen);
		if (!p) {
			snprintf(err, esize, "malformed multipart body");
			return -1;
		}
		p += dlen;
	}
	for (;;) {
		const char *hdr, *hend, *next, *line;
		const char *name = NULL, *fname = NULL;
		size_t nlen = 0, flen = 0;

		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return n;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			break;
		hdr = p + 2;
		/* A part with no headers at all: its blank line follows at once. */
		if (end - hdr >= 2 && hdr[0] == '\r' && hdr[1] == '\n')
			hend = p;
		else
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
		next = next_delimiter(p, end, delim, dlen);
		if (!next)
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
		ups[n].len = (size_t)(next - p);
		n++;
		p = next + dlen;
	}
	snprintf(err, esize, "malformed multipart body");
	return -1;
}

#define MAX_UPLOADS 64

/*
 * The files of an upload's body, inflated first when gz: *n parts in ups
 * (pointing into rq->body), or *n = -1 and the refusal's reply.
 */
static enum MHD_Result upload_parts(struct MHD_Connection *c,
				    struct sbxs_req *rq,
				    const char *given,
				    int gz,
				    struct sbxs_upload *ups,
				    int *n)
{
	const char *ct = sbxs_header(c, "Content-Type");
	char err[512];

	*n = -1;
	if (gz) {
		/* Inflated whole, at most the bound of a plain body. */
		char *plain;
		size_t plen;
		int zr = sbxs_gunzip(rq->body ? rq->body : "", rq->len, FILE_BODY_MAX, &plain,
				     &plen);

		if (zr == -2)
			return sbxs_envd_error(
				c, 413, "the upload is larger than 64 MiB once decompressed");
		if (zr == -3)
			return sbxs_envd_error(c, 500, "out of memory");
		if (zr < 0)
			return sbxs_envd_error(c, 400, "the gzip body is malformed or truncated");
		if (rq->body) {
			explicit_bzero(rq->body, rq->len);
			free(rq->body);
		}
		rq->body = plain;
		rq->len = plen;
		rq->cap = plen + 1;
	}
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		int k = sbxs_parse_multipart(ct, rq->body ? rq->body : "", rq->len, ups,
					     MAX_UPLOADS, err, sizeof(err));

		if (k < 0)
			return sbxs_envd_error(c, 400, "%s", err);
		if (k == 0)
			return sbxs_envd_error(c, 400, "no file part in the upload");
		if (given && k > 1)
			return sbxs_envd_error(c, 400, "path names one file, and the upload has %d",
					       k);
		*n = k;
	} else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
		if (!given)
			return sbxs_envd_error(c, 400,
					       "an application/octet-stream upload needs path");
		ups[0] = (struct sbxs_upload){.data = rq->body ? rq->body : "", .len = rq->len};
		*n = 1;
	} else {
		return sbxs_envd_error(c, 400,
				       "Content-Type must be multipart/form-data or "
				       "application/octet-stream");
	}
	for (int k = 0; k < *n; k++) {
		if (ups[k].len > FILE_MAX) {
			*n = -1;
			return sbxs_envd_error(c, 413, "a file is larger than 64 MiB");
		}
		if (!given && (!ups[k].name || ups[k].name_len == 0 ||
			       ups[k].name_len >= PATH_MAX_LEN + 16)) {
			*n = -1;
			return sbxs_envd_error(c, 400, "a file part names no path");
		}
	}
	return MHD_YES;
}

/*
 * POST /files. A gzip body is inflated only once the busy slot is the
 * upload's, so uploads that wait their turn hold their compressed bodies
 * alone, never up to 64 MiB each inflated.
 */
static enum MHD_Result
envd_upload(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	const char *given = sbxs_query(c, "path");
	const char *ce = sbxs_header(c, "Content-Encoding");
	const char *argv[] = {"sh", "-c", write_script, "sbx-write", NULL, NULL};
	struct sbxs_upload ups[MAX_UPLOADS];
	char path[PATH_MAX_LEN + 16], name[PATH_MAX_LEN + 16];
	struct sbxs_box *b = rq->box;
	struct xfer x;
	sbx_result *r = NULL;
	enum MHD_Result ret;
	json_t *out;
	int n, rc = 0, ok, timed_out = 0, failed = 0, gz;

	if (!sbxs_user_ok(sbxs_query(c, "username")))
		return sbxs_envd_error(c, 401, "user '%.64s' is not available on this server",
				       sbxs_query(c, "username"));
	if (ce && strcasecmp(ce, "identity") != 0 && strcasecmp(ce, "gzip") != 0)
		return sbxs_envd_error(
			c, 415,
			"Content-Encoding '%.32s' is not supported by this server (gzip is)", ce);
	gz = ce && strcasecmp(ce, "gzip") == 0;
	xfer_begin(&x, srv, c);
	if (!gz) {
		ret = upload_parts(c, rq, given, 0, ups, &n);
		if (n < 0)
			return ret;
	}
	ret = xfer_acquire(c, b, &x, &ok);
	if (!ok)
		return ret;
	if (gz) {
		ret = upload_parts(c, rq, given, 1, ups, &n);
		if (n < 0) {
			sbxs_box_release(b, 0);
			return ret;
		}
	}
	out = json_array();
	argv[4] = path;
	for (int k = 0; k < n && !failed; k++) {
		const char *want = given;

		if (!want) {
			memcpy(name, ups[k].name, ups[k].name_len);
			name[ups[k].name_len] = '\0';
			want = name;
		}
		if (sbxs_map_path(want, path, sizeof(path)) < 0 || strcmp(path, "/") == 0) {
			sbxs_box_release(b, 0);
			json_decref(out);
			return sbxs_envd_error(c, 400, "invalid path '%.512s'", want);
		}
		if (!names_fit(path)) {
			sbxs_box_release(b, 0);
			json_decref(out);
			return sbxs_envd_error(
				c, 400, "path '%.512s' has a name longer than 255 bytes", path);
		}
		rc = xfer_run(b, &x, argv, ups[k].data, ups[k].len, &r, &timed_out);
		failed = rc < 0 || timed_out || r->status != SBX_RUN_EXITED || r->exit_code != 0;
		if (!failed) {
			json_array_append_new(out,
					      json_pack("{s:s, s:s, s:s}", "path", path, "name",
							base_name(path), "type", "file"));
			sbx_result_free(r);
			r = NULL;
		}
	}
	sbxs_box_release(b, rc);
	if (failed) {
		ret = xfer_failed(c, srv, path, rc, r, timed_out, 1);
		sbx_result_free(r);
		json_decref(out);
		return ret;
	}
	return sbxs_reply_json(c, 200, out);
}

/* ===== envd: routes ===== */

enum MHD_Result sbxs_envd(struct sbxs_server *srv,
			  struct MHD_Connection *c,
			  struct sbxs_req *rq,
			  const char *method,
			  const char *url)
{
	if (strcmp(url, "/health") == 0)
		return strcmp(method, "GET") == 0 ? sbxs_reply_empty(c, 204)
						  : sbxs_envd_error(c, 405, "method not allowed");
	if (strcmp(url, "/files") == 0) {
		if (strcmp(method, "GET") == 0)
			return envd_download(srv, c, rq);
		if (strcmp(method, "POST") == 0)
			return envd_upload(srv, c, rq);
		return sbxs_envd_error(c, 405, "method not allowed");
	}
	if (strncmp(url, "/process.Process/", 17) == 0 && strcmp(method, "POST") == 0) {
		const char *m = url + 17;

		if (strcmp(m, "Start") == 0)
			return sbxs_envd_start(srv, c, rq);
		if (strcmp(m, "Connect") == 0)
			return sbxs_envd_connect(srv, c, rq);
		if (strcmp(m, "List") == 0 || strcmp(m, "SendInput") == 0 ||
		    strcmp(m, "CloseStdin") == 0 || strcmp(m, "SendSignal") == 0 ||
		    strcmp(m, "Update") == 0)
			return sbxs_envd_unary(srv, c, rq, m);
	}
	if (strncmp(url, "/filesystem.Filesystem/", 23) == 0 && strcmp(method, "POST") == 0) {
		const char *m = url + 23;

		if (strcmp(m, "WatchDir") == 0)
			return sbxs_envd_watch(srv, c, rq);
		if (strcmp(m, "Stat") == 0 || strcmp(m, "ListDir") == 0 ||
		    strcmp(m, "MakeDir") == 0 || strcmp(m, "Move") == 0 || strcmp(m, "Remove") == 0)
			return sbxs_envd_fs(srv, c, rq, m);
	}
	if ((strncmp(url, "/process.Process/", 17) == 0 ||
	     strncmp(url, "/filesystem.Filesystem/", 23) == 0) &&
	    strcmp(method, "POST") == 0) {
		const char *ct = sbxs_header(c, "Content-Type");

		if (ct && strncasecmp(ct, "application/connect+", 20) == 0)
			return sbxs_stream_error(c, "unimplemented",
						 "this method is not supported by this server");
		return sbxs_connect_error(c, "unimplemented",
					  "%.128s is not supported by this server", url);
	}
	return sbxs_envd_error(c, 404, "%.16s %.128s: not found", method, url);
}
