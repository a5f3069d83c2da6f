/*
 * remote/e2b/e2b-int.h: internals of the e2b backend shared between its
 * files: the backend's state and a sandbox's box, the ops of the table in
 * open.c (a sandbox's life in sandbox.c, runs in run.c and their Start
 * request in start.c, files in files.c), the HTTP transport and the
 * control plane (rest.c), and the Connect envelope decoder of the process
 * stream (connect.c).
 *
 * Every byte from E2B's API, its edge proxy and envd is untrusted input:
 * answers are read into capped buffers, parsed strictly, and a stream that
 * breaks the protocol ends the sandbox.
 */
#ifndef SBX_REMOTE_E2B_INT_H
#define SBX_REMOTE_E2B_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "core/backend-int.h"
#include "core/owner-int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error-int.h"

#define SBX_E2B_ENVD_PORT 49983
#define SBX_E2B_DEFAULT_DOMAIN "e2b.app"
#define SBX_E2B_DEFAULT_TEMPLATE "base"
#define SBX_E2B_DEFAULT_API_TIMEOUT_MS 30000L
/* The largest Connect envelope taken from envd (output comes in chunks of at
 * most 32 KiB, so a real one is far below this). */
#define SBX_E2B_FRAME_MAX (4u << 20)
/* The largest JSON answer taken from the control plane or envd. */
#define SBX_E2B_JSON_MAX (8u << 20)
/* stdin goes to envd in SendInput calls of at most this many bytes. */
#define SBX_E2B_STDIN_CHUNK (64u << 10)
/* How long a process stream may outlive its own deadline before the host
 * ends the sandbox itself. */
#define SBX_E2B_GRACE_MS 5000u
/* The user envd runs processes and file operations as. */
#define SBX_E2B_USER "user"
#define SBX_E2B_MSG_MAX 300 /* most bytes of a provider's message quoted */

struct sbx__e2b {
	char *api_url;	     /* E2B_API_URL or https://api.<domain>; no trailing '/' */
	char *domain;	     /* E2B_DOMAIN or e2b.app */
	char *sandbox_url;   /* E2B_SANDBOX_URL; NULL: per-sandbox host names */
	char *template_name; /* E2B_TEMPLATE or "base" */
	char *api_key;	     /* E2B_API_KEY; wiped on free */
	long api_timeout_ms;
	struct sbx__owner self; /* host and boot, for the reaper */
	/* Connections, TLS sessions and DNS answers shared by every call. */
	CURLSH *share;
	pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
};

struct sbx__e2b_box {
	char *id;
	char *envd_url;	    /* no trailing '/' */
	char *token;	    /* envdAccessToken; NULL: none; wiped on free */
	sbx_policy *policy; /* what runs are wrapped with (caps E2B has no control for) */
	int dead;	    /* atomic: deleted by the host; runs are refused */
	/* The multi handle of the run in flight, woken by a kill from another
	 * thread; NULL: none. */
	pthread_mutex_t lock;
	CURLM *wake;
};

/* ===== Transport (rest.c) ===== */

/* One HTTP exchange. */
struct sbx__e2b_req {
	const char *method;
	const char *url;		/* full URL */
	const struct sbx__e2b_box *box; /* set: an envd call (routing headers, access token) */
	int api;			/* non-zero: a control plane call (X-API-Key) */
	const char *content_type;	/* NULL: no body */
	const void *body;
	size_t body_len;
	long timeout_ms;
	size_t max;		  /* most answer bytes taken; 0: SBX_E2B_JSON_MAX. More: too_big */
	const char *const *extra; /* more "Name: value" headers (no credentials); NULL: none */
};

struct sbx__e2b_resp {
	long status;
	struct sbx__buf body;
	char next_token[512]; /* X-Next-Token */
	char tier[32];	      /* Sandboxio-Tier */
	int too_big;	      /* the answer was longer than max: the transfer was stopped */
	char errbuf[CURL_ERROR_SIZE];
};

/*
 * Performs one request. Returns 0 when an answer arrived (whatever its
 * status), or SBX_EUNAVAILABLE / SBX_ETIMEOUT naming the URL, SBX_ETOOBIG
 * (over max), SBX_ENOMEM. rs is filled either way; release it with
 * sbx__e2b_resp_clear().
 */
int sbx__e2b_http(struct sbx__e2b *e, const struct sbx__e2b_req *rq, struct sbx__e2b_resp *rs);
void sbx__e2b_resp_clear(struct sbx__e2b_resp *rs);
/* The parts of sbx__e2b_http(), for a transfer driven by a multi handle: a
 * handle ready to perform (rq and rs must outlive it; free *h_out with
 * sbx__e2b_headers_free() after it), and the outcome of its transfer. */
CURL *sbx__e2b_prepare(struct sbx__e2b *e,
		       const struct sbx__e2b_req *rq,
		       struct sbx__e2b_resp *rs,
		       struct curl_slist **h_out);
int sbx__e2b_finish(CURL *c, CURLcode cc, const struct sbx__e2b_req *rq, struct sbx__e2b_resp *rs);

/* A configured easy handle for url (share, protocols, TLS, no redirects,
 * signals off); timeout_ms 0: no overall timeout. NULL when out of memory. */
CURL *sbx__e2b_easy(struct sbx__e2b *e, const char *url, long timeout_ms);
/* The request headers of an envd (box set) or control plane (api) call;
 * values that are credentials are wiped by sbx__e2b_headers_free(). */
struct curl_slist *sbx__e2b_headers(struct sbx__e2b *e,
				    const struct sbx__e2b_box *box,
				    int api,
				    const char *content_type);
void sbx__e2b_headers_free(struct curl_slist *h);

/*
 * Records the error of a non-2xx answer: E2B's {"code","message"} (the
 * message quoted, sanitized and shortened), mapped onto a code: 401/403
 * SBX_EDENIED, 404 SBX_ENOTFOUND, 400 SBX_EINVALID, 429 and 502-504
 * SBX_EUNAVAILABLE, 507 SBX_ETOOBIG, else SBX_EENGINE. The edge proxy's
 * 502 "sandbox not found" is SBX_ENOTFOUND "e2b: sandbox <id> is gone".
 * Returns the code.
 */
int sbx__e2b_status_error(struct sbx__e2b *e,
			  const char *what,
			  const char *sandbox_id,
			  const struct sbx__e2b_resp *rs);
/* Copies untrusted text into dst: printable ASCII only, shortened, and with
 * the API key and any given token replaced. */
void sbx__e2b_sanitize(
	struct sbx__e2b *e, char *dst, size_t n, const char *src, size_t len, const char *token);

/* ===== Control plane (rest.c) ===== */

/* A control plane call: body is JSON text (NULL: none); a 2xx answer with
 * a JSON body is parsed into *out (when out is non-NULL). what names the
 * operation in errors. rs (may be NULL) receives the headers. */
int sbx__e2b_api(struct sbx__e2b *e,
		 const char *method,
		 const char *path,
		 const char *body,
		 long timeout_ms,
		 const char *what,
		 const char *sandbox_id,
		 json_t **out,
		 struct sbx__e2b_resp *rs_out);
/* DELETE /sandboxes/{id}; a sandbox already gone counts as deleted. */
int sbx__e2b_delete(struct sbx__e2b *e, const char *id, long timeout_ms);
/* GET /sandboxes/{id}. */
int sbx__e2b_get(struct sbx__e2b *e,
		 const char *id,
		 long timeout_ms,
		 json_t **out,
		 struct sbx__e2b_resp *rs);

/*
 * Lists running sandboxes whose metadata holds managed-by=sandboxio (and
 * tenant, and owner-host, when given), page by page; cb gets each one the
 * server returned (check its metadata again) and returns non-zero to stop.
 */
int sbx__e2b_list(struct sbx__e2b *e,
		  const char *tenant,
		  const char *owner_host,
		  int (*cb)(json_t *item, void *arg),
		  void *arg);

/* Whether id is a plausible sandbox id: 1 to 64 of [A-Za-z0-9_-]. */
int sbx__e2b_valid_id(const char *id);
/* Monotonic milliseconds. */
uint64_t sbx__e2b_now_ms(void);

/* ===== Connect envelopes (connect.c) ===== */

#define SBX_CONNECT_HDR 5
#define SBX_CONNECT_FLAG_COMPRESSED 0x01u
#define SBX_CONNECT_FLAG_END 0x02u

enum sbx__connect_kind {
	SBX_CONNECT_MESSAGE = 0,
	SBX_CONNECT_END = 1, /* the end-of-stream frame */
};

/* Called with each whole envelope's JSON (not NUL-terminated); returns 0 to
 * go on, any other value to stop (sbx__connect_feed() returns it). */
typedef int (*sbx__connect_cb)(int kind, const char *json, size_t len, void *arg);

struct sbx__connect_dec {
	unsigned char hdr[SBX_CONNECT_HDR];
	size_t hdr_have;
	int in_body;
	unsigned int flags;
	uint32_t len;
	char *buf; /* a body split over chunks */
	size_t have;
	size_t max;
	int ended; /* the end-of-stream frame was seen */
	uint64_t frames;
};

void sbx__connect_init(struct sbx__connect_dec *d, size_t max);
/* Feeds any chunk of the stream. Returns 0, the callback's non-zero value,
 * SBX_EENGINE (a protocol break, recorded: compressed or unknown flags, an
 * envelope over max, bytes after the end-of-stream frame) or SBX_ENOMEM. */
int sbx__connect_feed(
	struct sbx__connect_dec *d, const void *data, size_t n, sbx__connect_cb cb, void *arg);
/* At the end of the stream: 0 when it ended after its end-of-stream frame,
 * else SBX_EENGINE recorded ("ended mid-frame (got N of M bytes)", or
 * without its end-of-stream frame). */
int sbx__connect_finish(const struct sbx__connect_dec *d);
void sbx__connect_done(struct sbx__connect_dec *d);
/* Writes the 5-byte envelope prefix. */
void sbx__connect_prefix(unsigned char out[SBX_CONNECT_HDR], unsigned int flags, uint32_t len);

/* ===== The backend's ops and what its files share ===== */

/* sandbox.c: small helpers. */
void sbx__e2b_wipe_free(char *s);
/* Whether d is a plausible domain name (configured, or answered by E2B). */
int sbx__e2b_valid_domain(const char *d);
/* Marks the box dead and wakes a run in flight on it. */
void sbx__e2b_mark_dead(struct sbx__e2b_box *b);

/* sandbox.c: a sandbox's life, listing and reaping. */
int sbx__e2b_op_create(
	void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out);
int sbx__e2b_op_open_box(
	void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out);
void sbx__e2b_op_release(void *state, void *box);
int sbx__e2b_op_destroy(void *state, void *box);
int sbx__e2b_op_kill(void *state, void *box);
int sbx__e2b_op_list(void *state, const char *tenant, sbx_list_cb cb, void *payload);
int sbx__e2b_op_reap_list(
	void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg);
int sbx__e2b_op_reap_remove(void *state, const struct sbx__reap_item *item);

/*
 * start.c: the Start request: one envelope. Its envs may hold secrets, so
 * the JSON is escaped straight into a buffer that is wiped when freed
 * (locked memory when the run has secrets) and never passes through
 * jansson's copies.
 */
struct sbx__e2b_body {
	char *p;
	size_t len, size;
	int locked;
};

/* Checks argv, the environment and the working directory, and writes the
 * request into out; free it with sbx__e2b_body_free(). */
int sbx__e2b_start_body(struct sbx__e2b_body *out,
			const struct sbx__run_req *req,
			char *const *argv);
void sbx__e2b_body_free(struct sbx__e2b_body *b);

/* run.c: runs. */
/*
 * Starts argv (final: already wrapped) in the sandbox and streams it to its
 * end. Fills res's status fields; output goes to req->sink.
 */
int sbx__e2b_proc_run(struct sbx__e2b *e,
		      struct sbx__e2b_box *b,
		      const struct sbx__run_req *req,
		      char *const *argv,
		      sbx_result *res);
int sbx__e2b_op_run(void *state, void *box, const struct sbx__run_req *req, sbx_result *res);

/* files.c: files. */
int sbx__e2b_op_write_file(
	void *state, void *box, const char *path, const void *data, size_t len, unsigned int mode);
int sbx__e2b_op_read_file(
	void *state, void *box, const char *path, size_t max, char **out, size_t *len);

#endif
