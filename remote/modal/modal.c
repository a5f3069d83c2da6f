/*
 * remote/modal/modal.c: the modal backend (sbx__modal_ops): a policy mapped
 * onto a Modal Sandbox, over Modal's gRPC API (remote/modal/grpc.c).
 *
 * The sandbox definition is built from the policy alone: network BLOCKED,
 * or ALLOWLIST with the policy's CIDRs; timeout_secs from the lifetime;
 * CPU and memory as both request and limit; the policy's working
 * directory; no entrypoint (as the official SDK sends for a sandbox made
 * without a command); tags that are exactly the io.sandboxio.* owner keys.
 * What Modal cannot enforce is refused in check(): names in the allowlist,
 * a CIDR with a port, an explicit disk cap, a tier above gVisor. The
 * per-process caps Modal has no control for (open files, processes, core
 * dumps, file size) wrap each run's argv in prlimit (remote/wrap.c).
 *
 * Runs go through the task command router, a second gRPC host reached with
 * a JWT from TaskGetCommandRouterAccess, as the current SDKs do (the
 * control-plane exec RPCs are no longer used by any SDK). A run's start,
 * stdout and stderr reads, stdin writes and wait share one HTTP/2
 * connection (one call set). Secrets travel only in TaskExecStart.env, in
 * a request buffer of locked memory wiped after it is sent; never in the
 * definition, tags, or a Modal Secret object. Any failure after
 * SandboxCreate, and any break of the run protocol, terminates the
 * sandbox before returning.
 *
 * Every control-plane call carries x-modal-client-type 8 (the libmodal JS
 * client): Modal's enum has no C client, and this backend keeps the
 * libmodal contract (remote/modal/modal-int.h says why that one).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/owner-int.h"
#include "core/policy-int.h"
#include "remote/modal/grpc-int.h"
#include "remote/modal/modal-int.h"
#include "remote/modal/modal.pb-c.h"
#include "remote/modal/task_command_router.pb-c.h"
#include "remote/remote-int.h"
#include "util/base64.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/secmem.h"

#define DEFAULT_API_TIMEOUT_MS 30000u
#define RUN_GRACE_MS 5000u	/* host backstop past a run's deadline */
#define DRAIN_IDLE_MS 5000u	/* a stream silent this long after the exit is ended */
#define STDIN_CHUNK (1u << 20)	/* bytes per TaskExecStdinWrite */
#define STDIN_FIRST (64u << 10) /* the first write: what a pipe takes without blocking */
#define STDIO_RETRIES 10	/* reopenings of a broken output stream, as the SDKs */
#define ID_MAX 128		/* longest sandbox, task, app or image id accepted */
#define TOKEN_MAX 16384		/* longest auth token or JWT accepted */
#define LIST_PAGES_MAX 1000	/* pages of SandboxList read before giving up */
#define REAP_MAX 10000		/* sandboxes judged by one reap */
#define TOKEN_DEFAULT_LIFE 1200 /* seconds, for a token without exp (as the SDKs) */
#define STEP_MS 50

struct modal {
	struct sbx__grpc_chan *cp;
	char *server_url;
	int loopback;
	char *token_id;
	char *token_secret;
	char *env_name;
	char app_id[ID_MAX + 1];
	uint64_t api_timeout_ms;
	uint64_t max_throttle_ms;
	pthread_mutex_t lock; /* the auth token */
	char *auth_token;
	time_t auth_refresh_at;
};

struct mbox {
	char *id;
	char *task_id;
	sbx_policy *policy; /* the per-run caps */
	pthread_mutex_t lock;
	char *jwt;
	struct sbx__grpc_chan *router;
	int killed;
};

/* ===== Small helpers ===== */

static char *wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
	return NULL;
}

static int valid_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return 0;
	return 1;
}

static int nomem(void)
{
	return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
}

/* A message packed after the gRPC prefix; in locked memory when secret. */
static uint8_t *pack(const ProtobufCMessage *msg, size_t *len, int secret)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *b =
		secret ? sbx__secmem_alloc(SBX__GRPC_PREFIX + n) : malloc(SBX__GRPC_PREFIX + n);

	if (!b)
		return NULL;
	protobuf_c_message_pack(msg, b + SBX__GRPC_PREFIX);
	*len = SBX__GRPC_PREFIX + n;
	return b;
}

static const char *status_name(int st)
{
	switch (st) {
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_SUCCESS:
		return "success";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_FAILURE:
		return "failure";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_TERMINATED:
		return "terminated";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_TIMEOUT:
		return "timeout";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_INIT_FAILURE:
		return "init failure";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_INTERNAL_FAILURE:
		return "internal failure";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_IDLE_TIMEOUT:
		return "idle timeout";
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_MEMORY_MANAGER_EVICTION:
		return "evicted";
	default:
		return "unknown";
	}
}

/* "localhost", "127.0.0.1" or "::1" as the host of scheme://host[:port]. */
static int url_is_loopback(const char *url)
{
	const char *h = strstr(url, "://"), *end;
	size_t n;

	if (!h)
		return 0;
	h += 3;
	if (*h == '[') {
		end = strchr(h, ']');
		h++;
	} else {
		end = h + strcspn(h, ":/");
	}
	if (!end)
		return 0;
	n = (size_t)(end - h);
	return (n == 9 && strncasecmp(h, "localhost", 9) == 0) ||
	       (n == 9 && strncmp(h, "127.0.0.1", 9) == 0) || (n == 3 && strncmp(h, "::1", 3) == 0);
}

static uint64_t deadline_in(uint64_t ms)
{
	return sbx__grpc_now_ms() + ms;
}

/* ===== The control plane ===== */

/* The exp claim of a JWT (no signature check: only when to refresh). */
static long long jwt_exp(const char *jwt)
{
	const char *a = strchr(jwt, '.'), *b = a ? strchr(a + 1, '.') : NULL;
	uint8_t buf[4096];
	size_t n;
	json_t *o, *e;
	long long exp = 0;

	/* A JWT's parts are unpadded base64url. */
	if (!b || sbx__base64_decoded_max((size_t)(b - a - 1)) > sizeof(buf) ||
	    sbx__base64_decode(buf, &n, a + 1, (size_t)(b - a - 1),
			       SBX__BASE64_URL | SBX__BASE64_NOPAD) < 0 ||
	    n == 0)
		return 0;
	o = json_loadb((const char *)buf, n, 0, NULL);
	e = json_object_get(o, "exp");
	if (json_is_number(e) && json_number_value(e) > 0 && json_number_value(e) < 1e12)
		exp = (long long)json_number_value(e);
	json_decref(o);
	return exp;
}

static int cp_call_raw(struct modal *m,
		       const char *method,
		       const ProtobufCMessage *req,
		       uint64_t deadline,
		       const char *auth,
		       const char *capture,
		       uint8_t **resp,
		       size_t *resp_len,
		       struct sbx__grpc_status *st);

/* The x-modal-auth-token to send, fetched or refreshed at half its life. */
static int auth_token(struct modal *m, uint64_t deadline, char **out)
{
	Modal__Client__AuthTokenGetRequest req = MODAL__CLIENT__AUTH_TOKEN_GET_REQUEST__INIT;
	Modal__Client__AuthTokenGetResponse *r = NULL;
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;
	time_t now = time(NULL);
	long long exp;
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	if (m->auth_token && now < m->auth_refresh_at)
		goto done;
	rc = cp_call_raw(m, SBX_MODAL_AUTH_TOKEN_GET, &req.base, deadline, NULL, NULL, &resp, &len,
			 &st);
	if (rc < 0) {
		/* A token still valid keeps working through a failed refresh. */
		if (m->auth_token && st.code != SBX__GRPC_UNAUTHENTICATED) {
			sbx__error_clear();
			rc = 0;
		}
		goto done;
	}
	r = modal__client__auth_token_get_response__unpack(NULL, len, resp);
	free(resp);
	if (!r || !r->token || !r->token[0] || strlen(r->token) > TOKEN_MAX) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: AuthTokenGet answered without a usable token");
		goto done;
	}
	m->auth_token = wipe_free(m->auth_token);
	m->auth_token = strdup(r->token);
	if (!m->auth_token) {
		rc = nomem();
		goto done;
	}
	exp = jwt_exp(r->token);
	if (exp <= (long long)now)
		exp = (long long)now + TOKEN_DEFAULT_LIFE;
	m->auth_refresh_at = now + (time_t)((exp - (long long)now) / 2);
done:
	if (r) {
		explicit_bzero(r->token, strlen(r->token));
		modal__client__auth_token_get_response__free_unpacked(r, NULL);
	}
	if (rc == 0 && !(*out = strdup(m->auth_token)))
		rc = nomem();
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int cp_call_raw(struct modal *m,
		       const char *method,
		       const ProtobufCMessage *req,
		       uint64_t deadline,
		       const char *auth,
		       const char *capture,
		       uint8_t **resp,
		       size_t *resp_len,
		       struct sbx__grpc_status *st)
{
	struct sbx__grpc_md md[] = {
		{"x-modal-client-type", SBX_MODAL_CLIENT_TYPE},
		{"x-modal-client-version", SBX_MODAL_CLIENT_VERSION},
		{"x-modal-libmodal-version", "sandboxio/" SBX_VERSION_STRING},
		{"x-modal-token-id", m->token_id},
		{"x-modal-token-secret", m->token_secret},
		{"x-modal-auth-token", auth},
	};
	struct sbx__grpc_opts o = {
		.deadline_ms = deadline,
		.md = md,
		.md_n = auth ? 6 : 5,
		.retries = -1,
		.max_throttle_ms = m->max_throttle_ms,
		.capture = capture,
	};
	_sbx_cleanup_free_ uint8_t *framed = NULL;
	size_t len = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	st->retry_after = -1;
	framed = pack(req, &len, 0);
	if (!framed)
		return nomem();
	rc = sbx__grpc_unary(m->cp, method, framed, len, &o, resp, resp_len, st);
	if (rc < 0 && st->code == SBX__GRPC_UNAUTHENTICATED)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "modal: credentials rejected: %s",
				      st->message[0] ? st->message : "(no message)");
	return rc;
}

/* One control-plane call with the auth token. st is always filled. */
static int cp_call(struct modal *m,
		   const char *method,
		   const ProtobufCMessage *req,
		   uint64_t deadline,
		   const char *capture,
		   uint8_t **resp,
		   size_t *resp_len,
		   struct sbx__grpc_status *st)
{
	char *tok = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	st->retry_after = -1;
	rc = auth_token(m, deadline, &tok);
	if (rc == 0)
		rc = cp_call_raw(m, method, req, deadline, tok, capture, resp, resp_len, st);
	wipe_free(tok);
	return rc;
}

/* Unpacks a response or records that it could not be read. */
#define UNPACK(type, fn, resp, len, method)                                                        \
	({                                                                                         \
		type *_r = fn(NULL, len, resp);                                                    \
		free(resp);                                                                        \
		if (!_r)                                                                           \
			sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,                           \
				       "modal: %s: the answer is not a valid message", method);    \
		_r;                                                                                \
	})

static int terminate(struct modal *m, const char *sandbox_id)
{
	Modal__Client__SandboxTerminateRequest req = MODAL__CLIENT__SANDBOX_TERMINATE_REQUEST__INIT;
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	req.sandbox_id = (char *)sandbox_id;
	rc = cp_call(m, SBX_MODAL_SANDBOX_TERMINATE, &req.base, deadline_in(m->api_timeout_ms),
		     NULL, &resp, &len, &st);
	free(resp);
	if (rc < 0 && st.code == SBX__GRPC_NOT_FOUND) {
		sbx__error_clear(); /* gone already */
		return 0;
	}
	if (rc < 0)
		return sbx__error_wrap("modal: terminate sandbox %s", sandbox_id);
	return 0;
}

/* Terminates after a failure, keeping the failure as the error. */
static int terminate_keep(struct modal *m, const char *sandbox_id, int rc)
{
	const sbx_error *e = sbx_error_last();
	char msg[SBX_ERROR_MSG_MAX];
	sbx_error_class klass = e->klass;

	snprintf(msg, sizeof(msg), "%s", e->message);
	if (terminate(m, sandbox_id) < 0)
		return sbx__error_set(rc, klass, "%s; terminating sandbox %s failed too: %s", msg,
				      sandbox_id, sbx_error_last()->message);
	return sbx__error_set(rc, klass, "%s; sandbox %s was terminated", msg, sandbox_id);
}

/* ===== open / free / check ===== */

static void m_free(void *state)
{
	struct modal *m = state;

	if (!m)
		return;
	sbx__grpc_chan_free(m->cp);
	free(m->server_url);
	wipe_free(m->token_id);
	wipe_free(m->token_secret);
	wipe_free(m->auth_token);
	free(m->env_name);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static int m_open(void **state, const sbx_backend_options *opts)
{
	Modal__Client__AppGetOrCreateRequest req = MODAL__CLIENT__APP_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__AppGetOrCreateResponse *r;
	const char *id = secure_getenv("MODAL_TOKEN_ID");
	const char *secret = secure_getenv("MODAL_TOKEN_SECRET");
	const char *url = secure_getenv("MODAL_SERVER_URL");
	const char *env = secure_getenv("MODAL_ENVIRONMENT");
	const char *thr = secure_getenv("MODAL_MAX_THROTTLE_WAIT");
	struct sbx__grpc_status st;
	struct modal *m;
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	if (!id || !*id || !secret || !*secret)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "modal: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET must both be "
				      "set (a token pair from the Modal dashboard)");
	if (!url || !*url)
		url = SBX_MODAL_DEFAULT_SERVER;
	m = calloc(1, sizeof(*m));
	if (!m)
		return nomem();
	pthread_mutex_init(&m->lock, NULL);
	m->api_timeout_ms =
		opts && opts->api_timeout_ms ? opts->api_timeout_ms : DEFAULT_API_TIMEOUT_MS;
	m->loopback = url_is_loopback(url);
	m->token_id = strdup(id);
	m->token_secret = strdup(secret);
	m->server_url = strdup(url);
	m->env_name = strdup(env ? env : "");
	if (!m->token_id || !m->token_secret || !m->server_url || !m->env_name) {
		m_free(m);
		return nomem();
	}
	if (thr && *thr) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(thr, &end, 10);
		/* 0 turns throttle waits off, as in the SDKs; junk is ignored, as there. */
		if (!errno && !*end && thr[0] != '-')
			m->max_throttle_ms = v == 0	 ? UINT64_MAX
					     : v > 86400 ? 86400000u
							 : (uint64_t)v * 1000u;
	}
	if (strncmp(url, "http://", 7) == 0 && !m->loopback) {
		m_free(m);
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "modal: MODAL_SERVER_URL '%.200s' has no TLS; http:// is "
				      "only allowed to a loopback host (the token pair would cross "
				      "the network in clear)",
				      url);
	}
	rc = sbx__grpc_chan_new(&m->cp, url);
	if (rc < 0) {
		m_free(m);
		return sbx__error_wrap("modal: MODAL_SERVER_URL");
	}
	/* AuthTokenGet, then the app: both prove the credentials. */
	req.app_name = (char *)SBX_MODAL_APP_NAME;
	req.environment_name = m->env_name;
	req.object_creation_type =
		MODAL__CLIENT__OBJECT_CREATION_TYPE__OBJECT_CREATION_TYPE_CREATE_IF_MISSING;
	rc = cp_call(m, SBX_MODAL_APP_GET_OR_CREATE, &req.base, deadline_in(m->api_timeout_ms),
		     NULL, &resp, &len, &st);
	if (rc < 0) {
		m_free(m);
		return sbx__error_code() == SBX_EDENIED
			       ? rc
			       : sbx__error_wrap("modal: open app '%s'", SBX_MODAL_APP_NAME);
	}
	r = UNPACK(Modal__Client__AppGetOrCreateResponse,
		   modal__client__app_get_or_create_response__unpack, resp, len, "AppGetOrCreate");
	if (!r) {
		m_free(m);
		return SBX_EENGINE;
	}
	if (!valid_id(r->app_id)) {
		modal__client__app_get_or_create_response__free_unpacked(r, NULL);
		m_free(m);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "modal: AppGetOrCreate answered without a valid app id");
	}
	snprintf(m->app_id, sizeof(m->app_id), "%s", r->app_id);
	modal__client__app_get_or_create_response__free_unpacked(r, NULL);
	*state = m;
	return 0;
}

static int m_check(void *state, const sbx_policy *p)
{
	(void)state;
	if (p->min_tier > SBX_TIER_GVISOR)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				      "modal: sandboxes run on gVisor; the policy asks for the %s "
				      "tier",
				      sbx_tier_name(p->min_tier) ?: "unknown");
	for (size_t i = 0; i < p->allow_n; i++) {
		const struct sbx_allow *a = &p->allow[i];

		if (a->kind != SBX_ALLOW_CIDR)
			return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
					      "modal: cannot allow host '%s': Modal's domain "
					      "allowlist admits only "
					      "TLS on port 443 by name and leaves DNS open, which "
					      "is weaker than the "
					      "policy's meaning; allow addresses with allow_cidr",
					      a->name);
		if (a->port)
			return sbx__error_set(
				SBX_EUNSUPPORTED, SBX_ERRCLASS_NETPOLICY,
				"modal: cannot allow %s port %u only: Modal's CIDR allowlist is "
				"per "
				"destination address for every port and protocol; allow the "
				"address without a port",
				a->name, (unsigned)a->port);
	}
	if (p->set & SBX__SET_LIMIT(SBX_LIMIT_DISK))
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				      "modal: Modal sandboxes have no ephemeral-disk control, so "
				      "a disk cap cannot be enforced; leave it unset (each run's "
				      "file size is still capped)");
	return 0;
}

/* ===== Create ===== */

struct join {
	char entry_id[ID_MAX + 1];
	int bad;
	int status;
	char exception[512];
};

static int join_cb(void *arg, const uint8_t *msg, size_t len)
{
	struct join *j = arg;
	Modal__Client__ImageJoinStreamingResponse *r =
		modal__client__image_join_streaming_response__unpack(NULL, len, msg);

	if (!r) {
		j->bad = 1;
		return -1;
	}
	if (r->entry_id && r->entry_id[0] && strlen(r->entry_id) <= ID_MAX)
		snprintf(j->entry_id, sizeof(j->entry_id), "%s", r->entry_id);
	if (r->result && r->result->status) {
		j->status = r->result->status;
		snprintf(j->exception, sizeof(j->exception), "%s", r->result->exception ?: "");
	}
	modal__client__image_join_streaming_response__free_unpacked(r, NULL);
	return j->status ? 1 : 0; /* a result ends the wait */
}

static int image_result(const char *image, int status, const char *exception)
{
	if (status == MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_SUCCESS)
		return 0;
	/* A one-line "FROM" build fails when the image cannot be pulled. */
	return sbx__error_set(
		status == MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_FAILURE
			? SBX_ENOTFOUND
			: SBX_EENGINE,
		SBX_ERRCLASS_REMOTE, "modal: image '%s' could not be built (%s): %.400s", image,
		status_name(status), exception && *exception ? exception : "");
}

static int image_build(struct modal *m, const char *image, uint64_t deadline, char *image_id)
{
	Modal__Client__ImageGetOrCreateRequest req =
		MODAL__CLIENT__IMAGE_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__Image img = MODAL__CLIENT__IMAGE__INIT;
	Modal__Client__ImageGetOrCreateResponse *r;
	struct sbx__grpc_status st;
	char from[300], *cmds[1] = {from};
	struct join j = {0};
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	snprintf(from, sizeof(from), "FROM %s", image);
	img.n_dockerfile_commands = 1;
	img.dockerfile_commands = cmds;
	req.image = &img;
	req.app_id = m->app_id;
	req.builder_version = (char *)SBX_MODAL_BUILDER_VERSION;
	rc = cp_call(m, SBX_MODAL_IMAGE_GET_OR_CREATE, &req.base, deadline, NULL, &resp, &len, &st);
	if (rc < 0)
		return sbx__error_wrap("modal: image '%s'", image);
	r = UNPACK(Modal__Client__ImageGetOrCreateResponse,
		   modal__client__image_get_or_create_response__unpack, resp, len,
		   "ImageGetOrCreate");
	if (!r)
		return SBX_EENGINE;
	if (!valid_id(r->image_id)) {
		modal__client__image_get_or_create_response__free_unpacked(r, NULL);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "modal: ImageGetOrCreate answered without a valid image id");
	}
	snprintf(image_id, ID_MAX + 1, "%s", r->image_id);
	if (r->result && r->result->status) {
		j.status = r->result->status;
		snprintf(j.exception, sizeof(j.exception), "%s", r->result->exception ?: "");
	}
	modal__client__image_get_or_create_response__free_unpacked(r, NULL);
	/* Not built yet: follow the build until a result, reconnecting as needed. */
	while (!j.status) {
		Modal__Client__ImageJoinStreamingRequest jr =
			MODAL__CLIENT__IMAGE_JOIN_STREAMING_REQUEST__INIT;
		struct sbx__grpc_opts o = {.deadline_ms = deadline, .max_throttle_ms = 0};
		_sbx_cleanup_free_ uint8_t *framed = NULL;
		char *tok = NULL;
		struct sbx__grpc_md md[6];
		uint64_t now = sbx__grpc_now_ms();

		if (now >= deadline)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_REMOTE,
					      "modal: image '%s' was not built by the create "
					      "deadline",
					      image);
		jr.image_id = image_id;
		jr.timeout =
			(float)((deadline - now) / 1000.0 > 55 ? 55 : (deadline - now) / 1000.0);
		jr.last_entry_id = j.entry_id;
		framed = pack(&jr.base, &len, 0);
		if (!framed)
			return nomem();
		rc = auth_token(m, deadline, &tok);
		if (rc < 0)
			return rc;
		md[0] = (struct sbx__grpc_md){"x-modal-client-type", SBX_MODAL_CLIENT_TYPE};
		md[1] = (struct sbx__grpc_md){"x-modal-client-version", SBX_MODAL_CLIENT_VERSION};
		md[2] = (struct sbx__grpc_md){"x-modal-libmodal-version",
					      "sandboxio/" SBX_VERSION_STRING};
		md[3] = (struct sbx__grpc_md){"x-modal-token-id", m->token_id};
		md[4] = (struct sbx__grpc_md){"x-modal-token-secret", m->token_secret};
		md[5] = (struct sbx__grpc_md){"x-modal-auth-token", tok};
		o.md = md;
		o.md_n = 6;
		rc = sbx__grpc_stream(m->cp, SBX_MODAL_IMAGE_JOIN_STREAMING, framed, len, &o,
				      join_cb, &j, &st);
		wipe_free(tok);
		if (j.bad)
			return sbx__error_set(
				SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				"modal: image '%s': ImageJoinStreaming answered a message "
				"that is not an ImageJoinStreamingResponse",
				image);
		if (rc < 0 && st.cb_rc == 1) {
			sbx__error_clear(); /* stopped at the result */
			rc = 0;
		}
		if (rc < 0 && !st.broken && sbx__grpc_retryable(st.code) &&
		    sbx__grpc_now_ms() + 100 < deadline) {
			sbx__error_clear();
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		if (rc < 0)
			return sbx__error_wrap("modal: image '%s'", image);
	}
	return image_result(image, j.status, j.exception);
}

/* The task of a sandbox, once it is scheduled. */
static int task_id_of(struct modal *m, const char *sandbox_id, uint64_t deadline, char *task_id)
{
	for (;;) {
		Modal__Client__SandboxGetTaskIdRequest req =
			MODAL__CLIENT__SANDBOX_GET_TASK_ID_REQUEST__INIT;
		Modal__Client__SandboxGetTaskIdResponse *r;
		struct sbx__grpc_status st;
		uint8_t *resp = NULL;
		size_t len = 0;
		uint64_t now = sbx__grpc_now_ms();
		double left = deadline > now ? (double)(deadline - now) / 1000.0 : 0;
		int rc;

		if (left <= 0.05)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_REMOTE,
					      "modal: sandbox %s was not scheduled by the deadline",
					      sandbox_id);
		req.sandbox_id = (char *)sandbox_id;
		req.timeout = (float)(left > 10.5 ? 10 : left - 0.5 > 0.05 ? left - 0.5 : 0.05);
		rc = cp_call(m, SBX_MODAL_SANDBOX_GET_TASK_ID, &req.base, deadline, NULL, &resp,
			     &len, &st);
		if (rc < 0)
			return sbx__error_wrap("modal: sandbox %s: get its task", sandbox_id);
		r = UNPACK(Modal__Client__SandboxGetTaskIdResponse,
			   modal__client__sandbox_get_task_id_response__unpack, resp, len,
			   "SandboxGetTaskId");
		if (!r)
			return SBX_EENGINE;
		if (r->task_result) {
			rc = sbx__error_set(
				SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				"modal: sandbox %s already ended (%s)%s%.400s", sandbox_id,
				status_name(r->task_result->status),
				r->task_result->exception && *r->task_result->exception ? ": " : "",
				r->task_result->exception ?: "");
			modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
			return rc;
		}
		if (r->task_id && r->task_id[0]) {
			rc = valid_id(r->task_id)
				     ? 0
				     : sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
						      "modal: SandboxGetTaskId answered "
						      "an invalid task id");
			if (rc == 0)
				snprintf(task_id, ID_MAX + 1, "%s", r->task_id);
			modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
			return rc;
		}
		modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
		{
			struct timespec ts = {0, 250 * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
}

/*
 * The router's address and JWT. The URL must be https://HOST[:PORT]; when
 * the server URL is on loopback (a local double), the router is dialed
 * without TLS, as the official SDK does, and must be on loopback too.
 */
static int router_access(struct modal *m,
			 const char *task_id,
			 uint64_t deadline,
			 char **jwt,
			 struct sbx__grpc_chan **chan)
{
	Modal__Client__TaskGetCommandRouterAccessRequest req =
		MODAL__CLIENT__TASK_GET_COMMAND_ROUTER_ACCESS_REQUEST__INIT;
	Modal__Client__TaskGetCommandRouterAccessResponse *r;
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;
	char url[300];
	int rc;

	req.task_id = (char *)task_id;
	rc = cp_call(m, SBX_MODAL_TASK_GET_ROUTER_ACCESS, &req.base, deadline, NULL, &resp, &len,
		     &st);
	if (rc < 0)
		return sbx__error_wrap("modal: task %s: command router access", task_id);
	r = UNPACK(Modal__Client__TaskGetCommandRouterAccessResponse,
		   modal__client__task_get_command_router_access_response__unpack, resp, len,
		   "TaskGetCommandRouterAccess");
	if (!r)
		return SBX_EENGINE;
	if (!r->jwt || !r->jwt[0] || strlen(r->jwt) > TOKEN_MAX || !r->url ||
	    strncmp(r->url, "https://", 8) != 0 || strlen(r->url) > 255) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: task %s: the command router URL must be https:// "
				    "and come with a JWT (got '%.100s')",
				    task_id, r->url ? r->url : "");
		goto out;
	}
	if (m->loopback) {
		snprintf(url, sizeof(url), "http://%s", r->url + 8);
		if (!url_is_loopback(url)) {
			rc = sbx__error_set(
				SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				"modal: the command router '%.100s' is not on loopback, "
				"so it is not dialed without TLS",
				r->url);
			goto out;
		}
	} else {
		snprintf(url, sizeof(url), "%s", r->url);
	}
	if (chan) {
		rc = sbx__grpc_chan_new(chan, url);
		if (rc < 0) {
			sbx__error_wrap("modal: task %s: command router", task_id);
			goto out;
		}
	}
	*jwt = strdup(r->jwt);
	if (!*jwt) {
		if (chan) {
			sbx__grpc_chan_free(*chan);
			*chan = NULL;
		}
		rc = nomem();
	}
out:
	if (r->jwt)
		explicit_bzero(r->jwt, strlen(r->jwt));
	modal__client__task_get_command_router_access_response__free_unpacked(r, NULL);
	return rc;
}

static void box_free(struct mbox *b)
{
	if (!b)
		return;
	free(b->id);
	free(b->task_id);
	sbx_policy_free(b->policy);
	wipe_free(b->jwt);
	sbx__grpc_chan_free(b->router);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* Task, router access and a box for a sandbox that exists. */
static int box_attach(struct modal *m,
		      const char *sandbox_id,
		      const sbx_policy *p,
		      uint64_t deadline,
		      struct mbox **out)
{
	char task_id[ID_MAX + 1];
	struct mbox *b;
	int rc;

	rc = task_id_of(m, sandbox_id, deadline, task_id);
	if (rc < 0)
		return rc;
	b = calloc(1, sizeof(*b));
	if (!b)
		return nomem();
	pthread_mutex_init(&b->lock, NULL);
	if (!(b->id = strdup(sandbox_id)) || !(b->task_id = strdup(task_id)) ||
	    sbx_policy_dup(&b->policy, p) < 0) {
		box_free(b);
		return nomem();
	}
	rc = router_access(m, task_id, deadline, &b->jwt, &b->router);
	if (rc < 0) {
		box_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

static Modal__Client__SandboxTag *tag(Modal__Client__SandboxTag *t, const char *k, const char *v)
{
	modal__client__sandbox_tag__init(t);
	t->tag_name = (char *)k;
	t->tag_value = (char *)v;
	return t;
}

static int
m_create(void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out)
{
	struct modal *m = state;
	Modal__Client__SandboxCreateRequest req = MODAL__CLIENT__SANDBOX_CREATE_REQUEST__INIT;
	Modal__Client__Sandbox def = MODAL__CLIENT__SANDBOX__INIT;
	Modal__Client__Resources res = MODAL__CLIENT__RESOURCES__INIT;
	Modal__Client__NetworkAccess net = MODAL__CLIENT__NETWORK_ACCESS__INIT;
	Modal__Client__SandboxTag tags[7], *tagp[7];
	Modal__Client__SandboxCreateResponse *r;
	_sbx_cleanup_free_ char **cidrs = NULL;
	struct sbx__owner own;
	struct sbx__grpc_status st;
	char image_id[ID_MAX + 1], sandbox_id[ID_MAX + 1];
	char dl[32], pid[32], start[32];
	uint64_t deadline = deadline_in(p->timeout_ms[SBX_TIMEOUT_CREATE]);
	uint64_t secs = (p->timeout_ms[SBX_TIMEOUT_SANDBOX] + 999u) / 1000u;
	uint64_t mib = ((uint64_t)p->limit[SBX_LIMIT_MEMORY] + (1u << 20) - 1) >> 20;
	sbx_tier tier = SBX_TIER_GVISOR;
	struct mbox *b = NULL;
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	rc = image_build(m, p->image, deadline, image_id);
	if (rc < 0)
		return rc;
	res.milli_cpu = res.milli_cpu_max = (uint32_t)p->limit[SBX_LIMIT_CPU_MILLI];
	res.memory_mb = res.memory_mb_max = (uint32_t)mib;
	if (p->allow_n == 0) {
		net.network_access_type =
			MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__BLOCKED;
	} else {
		cidrs = calloc(p->allow_n, sizeof(*cidrs));
		if (!cidrs)
			return nomem();
		for (size_t i = 0; i < p->allow_n; i++)
			cidrs[i] = p->allow[i].name;
		net.network_access_type =
			MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__ALLOWLIST;
		net.n_allowed_cidrs = p->allow_n;
		net.allowed_cidrs = cidrs;
	}
	def.image_id = image_id;
	def.resources = &res;
	def.timeout_secs = (uint32_t)secs;
	def.workdir = p->workdir;
	def.network_access = &net;
	/* No entrypoint: the official SDK sends [] for a sandbox made without a command. */
	def.n_entrypoint_args = 0;
	sbx__owner_self(&own, p->detached);
	snprintf(dl, sizeof(dl), "%lld", (long long)time(NULL) + (long long)secs);
	snprintf(pid, sizeof(pid), "%lld", own.pid);
	snprintf(start, sizeof(start), "%llu", own.start);
	tagp[0] = tag(&tags[0], SBX_OWNER_KEY_MANAGED, SBX_OWNER_MANAGED_VALUE);
	tagp[1] = tag(&tags[1], SBX_OWNER_KEY_PREFIX "tenant", p->tenant);
	tagp[2] = tag(&tags[2], SBX_OWNER_KEY_PREFIX "deadline", dl);
	tagp[3] = tag(&tags[3], SBX_OWNER_KEY_PREFIX "owner-host", own.host);
	tagp[4] = tag(&tags[4], SBX_OWNER_KEY_PREFIX "owner-boot", own.boot);
	tagp[5] = tag(&tags[5], SBX_OWNER_KEY_PREFIX "owner-pid", pid);
	tagp[6] = tag(&tags[6], SBX_OWNER_KEY_PREFIX "owner-start", start);
	req.app_id = m->app_id;
	req.definition = &def;
	req.n_tags = 7;
	req.tags = tagp;
	rc = cp_call(m, SBX_MODAL_SANDBOX_CREATE, &req.base, deadline, SBX_MODAL_TIER_HEADER, &resp,
		     &len, &st);
	if (rc < 0)
		return sbx__error_wrap("modal: create sandbox");
	r = UNPACK(Modal__Client__SandboxCreateResponse,
		   modal__client__sandbox_create_response__unpack, resp, len, "SandboxCreate");
	if (!r)
		return SBX_EENGINE;
	if (!valid_id(r->sandbox_id)) {
		modal__client__sandbox_create_response__free_unpacked(r, NULL);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "modal: SandboxCreate answered without a valid sandbox id");
	}
	snprintf(sandbox_id, sizeof(sandbox_id), "%s", r->sandbox_id);
	modal__client__sandbox_create_response__free_unpacked(r, NULL);
	/* From here on, every failure terminates the sandbox. */
	if (st.captured[0] && sbx_tier_parse(&tier, st.captured) < 0) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: the server announced an unknown tier '%s'",
				    st.captured);
		return terminate_keep(m, sandbox_id, rc);
	}
	if (p->min_tier > tier) {
		rc = sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
				    "modal: the server gives the %s tier, below the %s tier the "
				    "policy demands",
				    sbx_tier_name(tier), sbx_tier_name(p->min_tier));
		return terminate_keep(m, sandbox_id, rc);
	}
	rc = box_attach(m, sandbox_id, p, deadline, &b);
	if (rc < 0)
		return terminate_keep(m, sandbox_id, rc);
	*id_out = strdup(sandbox_id);
	if (!*id_out) {
		box_free(b);
		return terminate_keep(m, sandbox_id, nomem());
	}
	*box_out = b;
	*tier_out = tier;
	return 0;
}

/* ===== Listing ===== */

static const char *tag_of(const Modal__Client__SandboxInfo *s, const char *key)
{
	for (size_t i = 0; i < s->n_tags; i++)
		if (s->tags[i]->tag_name && strcmp(s->tags[i]->tag_name, key) == 0)
			return s->tags[i]->tag_value;
	return NULL;
}

static int ours(const Modal__Client__SandboxInfo *s)
{
	const char *v = tag_of(s, SBX_OWNER_KEY_MANAGED);

	return valid_id(s->id) && v && strcmp(v, SBX_OWNER_MANAGED_VALUE) == 0;
}

/* Calls fn for each running sandbox of ours, newest first; fn returns non-zero to stop. */
static int each_sandbox(struct modal *m,
			const char *tenant,
			const char *host,
			int (*fn)(void *arg, const Modal__Client__SandboxInfo *s),
			void *arg)
{
	Modal__Client__SandboxTag tags[3], *tagp[3];
	double before = 0;
	size_t nt = 0;

	tagp[nt] = tag(&tags[nt], SBX_OWNER_KEY_MANAGED, SBX_OWNER_MANAGED_VALUE);
	nt++;
	if (tenant) {
		tagp[nt] = tag(&tags[nt], SBX_OWNER_KEY_PREFIX "tenant", tenant);
		nt++;
	}
	if (host) {
		tagp[nt] = tag(&tags[nt], SBX_OWNER_KEY_PREFIX "owner-host", host);
		nt++;
	}
	for (int page = 0; page < LIST_PAGES_MAX; page++) {
		Modal__Client__SandboxListRequest req = MODAL__CLIENT__SANDBOX_LIST_REQUEST__INIT;
		Modal__Client__SandboxListResponse *r;
		struct sbx__grpc_status st;
		uint8_t *resp = NULL;
		size_t len = 0;
		double oldest = before;
		int rc, stop = 0;

		req.app_id = m->app_id;
		req.before_timestamp = before;
		req.environment_name = m->env_name;
		req.include_finished = 0;
		req.n_tags = nt;
		req.tags = tagp;
		rc = cp_call(m, SBX_MODAL_SANDBOX_LIST, &req.base, deadline_in(m->api_timeout_ms),
			     NULL, &resp, &len, &st);
		if (rc < 0)
			return sbx__error_wrap("modal: list sandboxes");
		r = UNPACK(Modal__Client__SandboxListResponse,
			   modal__client__sandbox_list_response__unpack, resp, len, "SandboxList");
		if (!r)
			return SBX_EENGINE;
		if (r->n_sandboxes == 0) {
			modal__client__sandbox_list_response__free_unpacked(r, NULL);
			return 0;
		}
		for (size_t i = 0; i < r->n_sandboxes && !stop; i++) {
			const Modal__Client__SandboxInfo *s = r->sandboxes[i];

			if (s->created_at > 0 && (oldest == before || s->created_at < oldest))
				oldest = s->created_at;
			if (ours(s))
				stop = fn(arg, s);
		}
		modal__client__sandbox_list_response__free_unpacked(r, NULL);
		/* Pages go back in time; a server that does not is not followed. */
		if (stop || !(oldest > 0) || (before > 0 && oldest >= before))
			return 0;
		before = oldest;
	}
	return 0;
}

struct list_arg {
	sbx_list_cb cb;
	void *payload;
};

static long long num_or_zero(const char *s)
{
	char *end;
	long long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	return errno || *end ? 0 : v;
}

static int list_one(void *arg, const Modal__Client__SandboxInfo *s)
{
	struct list_arg *la = arg;
	const char *tenant = tag_of(s, SBX_OWNER_KEY_PREFIX "tenant");
	const char *state = "pending";
	sbx_sandbox_info info;

	if (!tenant)
		return 0;
	if (s->task_info && s->task_info->result && s->task_info->result->status)
		state = "finished";
	else if (s->task_info && s->task_info->started_at > 0)
		state = "running";
	info = (sbx_sandbox_info){
		.id = s->id,
		.tenant = tenant,
		.image = s->image_id ? s->image_id : "",
		.state = state,
		.created = (int64_t)s->created_at,
		.deadline = num_or_zero(tag_of(s, SBX_OWNER_KEY_PREFIX "deadline")),
	};
	return la->cb(&info, la->payload);
}

static int m_list(void *state, const char *tenant, sbx_list_cb cb, void *payload)
{
	struct list_arg la = {cb, payload};

	return each_sandbox(state, tenant, NULL, list_one, &la);
}

/* ===== Reaping ===== */

struct condemned {
	char id[ID_MAX + 1];
	char tenant[64];
	sbx_reap_reason reason;
	const char *why;
};

struct reap_arg {
	struct sbx__owner self;
	struct condemned *v;
	size_t n, cap;
	int oom;
};

static int reap_judge(void *arg, const Modal__Client__SandboxInfo *s)
{
	struct reap_arg *ra = arg;
	const char *why = "";
	int reason;

	reason = sbx__owner_judge(&ra->self, tag_of(s, SBX_OWNER_KEY_PREFIX "deadline"),
				  tag_of(s, SBX_OWNER_KEY_PREFIX "owner-host"),
				  tag_of(s, SBX_OWNER_KEY_PREFIX "owner-boot"),
				  tag_of(s, SBX_OWNER_KEY_PREFIX "owner-pid"),
				  tag_of(s, SBX_OWNER_KEY_PREFIX "owner-start"), &why);
	if (!reason)
		return 0;
	if (ra->n == ra->cap) {
		size_t cap = ra->cap ? ra->cap * 2 : 16;
		struct condemned *v;

		if (cap > REAP_MAX)
			return 1;
		v = realloc(ra->v, cap * sizeof(*v));
		if (!v) {
			ra->oom = 1;
			return 1;
		}
		ra->v = v;
		ra->cap = cap;
	}
	snprintf(ra->v[ra->n].id, sizeof(ra->v[ra->n].id), "%s", s->id);
	snprintf(ra->v[ra->n].tenant, sizeof(ra->v[ra->n].tenant), "%s",
		 tag_of(s, SBX_OWNER_KEY_PREFIX "tenant") ?: "");
	ra->v[ra->n].reason = (sbx_reap_reason)reason;
	ra->v[ra->n].why = why;
	ra->n++;
	return 0;
}

static int
m_reap(void *state, const char *tenant, int dry_run, int only_local, sbx_reap_cb cb, void *payload)
{
	struct modal *m = state;
	struct reap_arg ra = {0};
	int rc, count = 0;

	sbx__owner_self(&ra.self, 0);
	/* Judge the whole list first: terminating changes what later pages hold. */
	rc = each_sandbox(m, tenant, only_local ? ra.self.host : NULL, reap_judge, &ra);
	if (rc == 0 && ra.oom)
		rc = nomem();
	if (rc < 0) {
		free(ra.v);
		return sbx__error_wrap("reap");
	}
	for (size_t i = 0; i < ra.n; i++) {
		struct condemned *c = &ra.v[i];
		char detail[SBX_ERROR_MSG_MAX] = "";
		sbx_reap_info info = {
			.id = c->id, .tenant = c->tenant, .reason = c->reason, .detail = c->why};

		if (c->reason != SBX_REAP_SKIPPED && !dry_run) {
			if (terminate(m, c->id) == 0) {
				info.removed = 1;
				count++;
			} else {
				snprintf(detail, sizeof(detail), "%s", sbx_error_last()->message);
				info.detail = detail;
				sbx__error_clear();
			}
		} else if (c->reason != SBX_REAP_SKIPPED) {
			count++;
		}
		if (cb && cb(&info, payload) != 0)
			break;
	}
	free(ra.v);
	return count;
}

/* ===== Open, destroy, kill ===== */

struct find_arg {
	const char *id;
	long long deadline, created;
	char tenant[64];
	int found, detached;
	uint32_t timeout_secs;
};

static int find_one(void *arg, const Modal__Client__SandboxInfo *s)
{
	struct find_arg *fa = arg;
	const char *t = tag_of(s, SBX_OWNER_KEY_PREFIX "tenant");
	const char *pid = tag_of(s, SBX_OWNER_KEY_PREFIX "owner-pid");

	if (strcmp(s->id, fa->id) != 0)
		return 0;
	fa->found = 1;
	snprintf(fa->tenant, sizeof(fa->tenant), "%s", t ? t : "");
	fa->deadline = num_or_zero(tag_of(s, SBX_OWNER_KEY_PREFIX "deadline"));
	fa->created = (long long)s->created_at;
	fa->detached = pid && strcmp(pid, "0") == 0;
	fa->timeout_secs = s->timeout_secs;
	return 1;
}

static int
m_open_box(void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out)
{
	struct modal *m = state;
	struct find_arg fa = {.id = id};
	struct mbox *b = NULL;
	uint64_t life_ms = 0;
	int rc;

	if (!valid_id(id))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "modal: '%.64s' is not a sandbox id", id);
	rc = each_sandbox(m, NULL, NULL, find_one, &fa);
	if (rc < 0)
		return rc;
	if (!fa.found)
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "modal: no running sandboxio sandbox '%s' in app '%s'", id,
				      SBX_MODAL_APP_NAME);
	if (sbx_policy_set_tenant(p, fa.tenant) < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "modal: sandbox %s has a bad tenant tag", id);
	if (fa.timeout_secs)
		life_ms = (uint64_t)fa.timeout_secs * 1000u;
	else if (fa.deadline > fa.created && fa.created > 0)
		life_ms = (uint64_t)(fa.deadline - fa.created) * 1000u;
	if (life_ms)
		sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, life_ms);
	sbx_policy_set_detached(p, fa.detached);
	sbx__error_clear();
	rc = box_attach(m, id, p, deadline_in(m->api_timeout_ms), &b);
	if (rc < 0)
		return rc;
	*box_out = b;
	*tier_out = SBX_TIER_GVISOR;
	return 0;
}

static void m_release(void *state, void *box)
{
	(void)state;
	box_free(box);
}

static int m_destroy(void *state, void *box)
{
	struct mbox *b = box;
	int rc;

	if (!b)
		return 0;
	rc = terminate(state, b->id);
	box_free(b);
	return rc;
}

static int m_kill(void *state, void *box)
{
	struct mbox *b = box;

	__atomic_store_n(&b->killed, 1, __ATOMIC_SEQ_CST);
	return terminate(state, b->id);
}

static int m_image_exists(void *state, const char *ref)
{
	(void)state;
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
			      "modal: images are built at create; '%.200s' cannot be checked "
			      "beforehand",
			      ref);
}

/* ===== Runs ===== */

enum { CALL_OUT, CALL_ERR, CALL_IN, CALL_WAIT, CALL_N };

struct rcall {
	struct sbx__grpc_call *call;
	uint8_t *framed;
	size_t len;
	uint64_t retry_at; /* 0: not waiting to start */
	uint64_t delay;
	int tries;
	int done;
};

struct run {
	struct modal *m;
	struct mbox *b;
	const struct sbx_run_req *req;
	struct sbx__grpc_set *set;
	char exec_id[37];
	struct rcall c[CALL_N];
	uint64_t offset[2]; /* stdout, stderr bytes received */
	uint64_t in_off;    /* stdin bytes acknowledged */
	size_t in_chunk;    /* bytes in the write in flight */
	int in_first;	    /* the first stdin write has ended */
	int have_exit, code, signal, exit_case;
	int sink_rc;
	const char *bad; /* why a message of the router could not be read */
	int auth_retried;
	int start_broken;
	uint64_t exec_deadline;
	uint64_t drain_until; /* after the exit: when silent streams are ended */
	char auth[TOKEN_MAX + 16];
	struct sbx__grpc_md md[1];
};

static int run_opts(struct run *r, uint64_t deadline, struct sbx__grpc_opts *o)
{
	pthread_mutex_lock(&r->b->lock);
	snprintf(r->auth, sizeof(r->auth), "Bearer %s", r->b->jwt);
	pthread_mutex_unlock(&r->b->lock);
	r->md[0] = (struct sbx__grpc_md){"authorization", r->auth};
	*o = (struct sbx__grpc_opts){.deadline_ms = deadline,
				     .md = r->md,
				     .md_n = 1,
				     .retries = -1,
				     .kill = &r->b->killed,
				     .max_throttle_ms = r->m->max_throttle_ms};
	return 0;
}

/* A new JWT for the router (it answered UNAUTHENTICATED). */
static int refresh_router(struct modal *m, struct mbox *b)
{
	char *jwt = NULL;
	int rc = router_access(m, b->task_id, deadline_in(m->api_timeout_ms), &jwt, NULL);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&b->lock);
	wipe_free(b->jwt);
	b->jwt = jwt;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

static int stdio_cb(void *arg, const uint8_t *msg, size_t len, int which);

static int out_cb(void *arg, const uint8_t *msg, size_t len)
{
	return stdio_cb(arg, msg, len, 0);
}

static int err_cb(void *arg, const uint8_t *msg, size_t len)
{
	return stdio_cb(arg, msg, len, 1);
}

static int stdio_cb(void *arg, const uint8_t *msg, size_t len, int which)
{
	struct run *r = arg;
	Modal__TaskCommandRouter__TaskExecStdioReadResponse *m =
		modal__task_command_router__task_exec_stdio_read_response__unpack(NULL, len, msg);
	int rc = 0;

	if (!m) {
		r->bad = "TaskExecStdioRead answered a message that is not a "
			 "TaskExecStdioReadResponse";
		return -1;
	}
	if (m->data.len) {
		r->offset[which] += m->data.len;
		rc = r->req->sink(r->req->sink_arg, which ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT,
				  m->data.data, m->data.len);
		if (r->drain_until)
			r->drain_until = sbx__grpc_now_ms() + DRAIN_IDLE_MS;
	}
	modal__task_command_router__task_exec_stdio_read_response__free_unpacked(m, NULL);
	if (rc) {
		r->sink_rc = rc;
		return rc;
	}
	return 0;
}

static int wait_cb(void *arg, const uint8_t *msg, size_t len)
{
	struct run *r = arg;
	Modal__TaskCommandRouter__TaskExecWaitResponse *m =
		modal__task_command_router__task_exec_wait_response__unpack(NULL, len, msg);

	if (!m) {
		r->bad = "TaskExecWait answered a message that is not a TaskExecWaitResponse";
		return -1;
	}
	r->exit_case = (int)m->exit_status_case;
	if (m->exit_status_case ==
	    MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_CODE)
		r->code = m->code;
	else if (m->exit_status_case ==
		 MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL)
		r->signal = m->signal;
	modal__task_command_router__task_exec_wait_response__free_unpacked(m, NULL);
	return 0;
}

/* (Re)starts one of the run's calls, building its request. */
static int start_call(struct run *r, int which, uint64_t deadline)
{
	static const sbx__grpc_msg_cb cbs[CALL_N] = {out_cb, err_cb, NULL, wait_cb};
	static const char *const methods[CALL_N] = {
		SBX_MODAL_EXEC_STDIO_READ, SBX_MODAL_EXEC_STDIO_READ, SBX_MODAL_EXEC_STDIN_WRITE,
		SBX_MODAL_EXEC_WAIT};
	struct rcall *c = &r->c[which];
	struct sbx__grpc_opts o;

	free(c->framed);
	c->framed = NULL;
	if (which == CALL_OUT || which == CALL_ERR) {
		Modal__TaskCommandRouter__TaskExecStdioReadRequest q =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_READ_REQUEST__INIT;

		q.task_id = r->b->task_id;
		q.exec_id = r->exec_id;
		q.offset = r->offset[which];
		q.file_descriptor =
			which == CALL_OUT
				? MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_FILE_DESCRIPTOR__TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT
				: MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_FILE_DESCRIPTOR__TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR;
		c->framed = pack(&q.base, &c->len, 0);
	} else if (which == CALL_IN) {
		Modal__TaskCommandRouter__TaskExecStdinWriteRequest q =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIN_WRITE_REQUEST__INIT;
		size_t left = r->req->stdin_len - (size_t)r->in_off;

		size_t most = r->in_off ? STDIN_CHUNK : STDIN_FIRST;

		r->in_chunk = left > most ? most : left;
		q.task_id = r->b->task_id;
		q.exec_id = r->exec_id;
		q.offset = r->in_off;
		q.data.data = r->in_chunk ? (uint8_t *)r->req->stdin_data + r->in_off : NULL;
		q.data.len = r->in_chunk;
		q.eof = r->in_off + r->in_chunk == r->req->stdin_len;
		c->framed = pack(&q.base, &c->len, 0);
	} else {
		Modal__TaskCommandRouter__TaskExecWaitRequest q =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_REQUEST__INIT;

		q.task_id = r->b->task_id;
		q.exec_id = r->exec_id;
		c->framed = pack(&q.base, &c->len, 0);
	}
	if (!c->framed)
		return nomem();
	run_opts(r, deadline, &o);
	o.unary = which == CALL_IN || which == CALL_WAIT;
	c->retry_at = 0;
	return sbx__grpc_start(r->set, &c->call, methods[which], c->framed, c->len, &o, cbs[which],
			       r);
}

/* Starts the exec: TaskExecStart, its env (secrets included) in wiped memory. */
static int exec_start(struct run *r, char **argv)
{
	const struct sbx_run_req *req = r->req;
	Modal__TaskCommandRouter__TaskExecStartRequest q =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_START_REQUEST__INIT;
	Modal__TaskCommandRouter__TaskExecStartRequest__EnvEntry *ents = NULL, **entp = NULL;
	char **names = NULL;
	size_t n_env = 0, argc = 0, len = 0;
	struct sbx__grpc_status st = {0};
	struct sbx__grpc_opts o;
	uint8_t *framed = NULL, *resp = NULL;
	size_t resp_len = 0;
	int rc = 0;

	while (argv[argc])
		argc++;
	while (req->env && req->env[n_env])
		n_env++;
	ents = calloc(n_env + 1, sizeof(*ents));
	entp = calloc(n_env + 1, sizeof(*entp));
	names = calloc(n_env + 1, sizeof(*names));
	if (!ents || !entp || !names) {
		rc = nomem();
		goto out;
	}
	for (size_t i = 0; i < n_env; i++) {
		const char *eq = strchr(req->env[i], '=');

		if (!eq) {
			rc = sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					    "modal: run environment entry %zu has no '='", i);
			goto out;
		}
		/* Names are not secret; values stay where core keeps them. */
		names[i] = strndup(req->env[i], (size_t)(eq - req->env[i]));
		if (!names[i]) {
			rc = nomem();
			goto out;
		}
		modal__task_command_router__task_exec_start_request__env_entry__init(&ents[i]);
		ents[i].key = names[i];
		ents[i].value = (char *)eq + 1;
		entp[i] = &ents[i];
	}
	q.task_id = r->b->task_id;
	q.exec_id = r->exec_id;
	q.n_command_args = argc;
	q.command_args = argv;
	q.stdout_config =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDOUT_CONFIG__TASK_EXEC_STDOUT_CONFIG_PIPE;
	q.stderr_config =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDERR_CONFIG__TASK_EXEC_STDERR_CONFIG_PIPE;
	q.timeout_secs = (uint32_t)((req->timeout_ms + 999u) / 1000u);
	q.workdir = (char *)req->workdir;
	q.n_env = n_env;
	q.env = entp;
	/* A packed request with secrets lives in locked memory, wiped when freed. */
	framed = pack(&q.base, &len, req->has_secrets);
	if (!framed) {
		rc = sbx__error_os(SBX_ENOMEM, errno, "modal: locked memory for the run request");
		goto out;
	}
	for (int attempt = 0;; attempt++) {
		run_opts(r, deadline_in(r->m->api_timeout_ms), &o);
		/* Retried with the same exec_id, which makes the start idempotent. */
		rc = sbx__grpc_unary(r->b->router, SBX_MODAL_EXEC_START, framed, len, &o, &resp,
				     &resp_len, &st);
		free(resp);
		resp = NULL;
		if (rc < 0 && st.code == SBX__GRPC_UNAUTHENTICATED && attempt == 0 &&
		    !r->auth_retried) {
			r->auth_retried = 1;
			rc = refresh_router(r->m, r->b);
			if (rc < 0)
				break;
			continue;
		}
		break;
	}
	r->start_broken = rc < 0 && st.broken;
	if (rc < 0)
		sbx__error_wrap("modal: sandbox %s: start the run", r->b->id);
out:
	if (framed && req->has_secrets) {
		sbx__secmem_free(framed, len);
	} else if (framed) {
		explicit_bzero(framed, len);
		free(framed);
	}
	for (size_t i = 0; names && i < n_env; i++)
		free(names[i]);
	free(names);
	free(ents);
	free(entp);
	return rc;
}

static void fill_exit(struct run *r, sbx_result *res, uint64_t exec_deadline)
{
	int past = sbx__grpc_now_ms() >= exec_deadline;

	if (r->exit_case ==
	    MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL) {
		res->term_signal = r->signal;
		if (past) {
			res->status = SBX_RUN_TIMEOUT;
			res->exit_code = 124;
		} else {
			res->status = SBX_RUN_KILLED;
			res->exit_code = 128 + r->signal;
		}
	} else if (r->code >= 0 && r->code <= 255) {
		res->status = SBX_RUN_EXITED;
		res->exit_code = r->code;
	} else {
		/* Out of range past the deadline (on_end refused it before): a timeout. */
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
	}
	if (res->status == SBX_RUN_TIMEOUT)
		res->limits_hit |= SBX_HIT_TIMEOUT;
}

static void run_done(struct run *r)
{
	if (r->set)
		sbx__grpc_set_free(r->set); /* ends the calls still open */
	for (int i = 0; i < CALL_N; i++)
		free(r->c[i].framed);
	explicit_bzero(r->auth, sizeof(r->auth));
}

/* What to do with a call that ended; 0 to go on, or <0 to end the run. */
enum {
	END_OK = 0,
	END_BREAK = -100,    /* the router broke the protocol */
	END_CANCEL = -101,   /* the sink canceled (or ran out of memory) */
	END_KILLED = -102,   /* sbx_sandbox_kill() */
	END_ERROR = -103,    /* a call failed for good */
	END_BACKSTOP = -104, /* the host's deadline passed */
};

static int
on_end_call(struct run *r, int which, int rc, const struct sbx__grpc_status *st, uint64_t now);

static int on_end(struct run *r, int which, int rc, const struct sbx__grpc_status *st, uint64_t now)
{
	struct rcall *c = &r->c[which];

	c->call = NULL;
	rc = on_end_call(r, which, rc, st, now);
	if (which == CALL_IN && !r->in_first && (r->in_off > 0 || c->done)) {
		/* The first stdin write is in (or dropped): output and exit may be asked. */
		r->in_first = 1;
		for (int i = 0; i < CALL_N; i++)
			if (i != CALL_IN)
				r->c[i].retry_at = now;
	}
	return rc;
}

static int
on_end_call(struct run *r, int which, int rc, const struct sbx__grpc_status *st, uint64_t now)
{
	struct rcall *c = &r->c[which];

	if (rc == 0) {
		if (which == CALL_IN) {
			r->in_off += r->in_chunk;
			if (r->in_off < r->req->stdin_len) {
				c->retry_at = now; /* the next chunk */
				c->delay = 0;
				c->tries = 0;
				return 0;
			}
		}
		if (which == CALL_WAIT) {
			if (r->exit_case == 0 ||
			    (r->exit_case ==
				     MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL &&
			     (r->signal <= 0 || r->signal > 64))) {
				sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					       "TaskExecWait answered neither an exit code nor a "
					       "signal");
				return END_BREAK;
			}
			if (r->exit_case ==
				    MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_CODE &&
			    (r->code < 0 || r->code > 255) && now < r->exec_deadline) {
				sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
					       "TaskExecWait answered exit code %d", r->code);
				return END_BREAK;
			}
			r->have_exit = 1;
			r->drain_until = now + DRAIN_IDLE_MS;
		}
		c->done = 1;
		return 0;
	}
	if (st->cb_rc && r->sink_rc)
		return END_CANCEL;
	if (st->cb_rc) {
		sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE, "%s",
			       r->bad ? r->bad : "an unreadable message");
		return END_BREAK;
	}
	if (st->canceled)
		return END_KILLED;
	if (st->broken)
		return END_BREAK;
	if (st->code == SBX__GRPC_UNAUTHENTICATED && !r->auth_retried) {
		r->auth_retried = 1;
		if (refresh_router(r->m, r->b) < 0)
			return END_ERROR;
		sbx__error_clear();
		c->retry_at = now;
		return 0;
	}
	if (which == CALL_IN && !sbx__grpc_retryable(st->code)) {
		/* The program stopped taking input (it exited, or closed stdin): drop the rest. */
		sbx__error_clear();
		c->done = 1;
		return 0;
	}
	if (sbx__grpc_retryable(st->code) && (which == CALL_WAIT || c->tries < STDIO_RETRIES)) {
		sbx__error_clear();
		c->tries++;
		c->delay = which == CALL_WAIT ? 1000 : c->delay ? c->delay * 2 : 100;
		if (c->delay > 1000)
			c->delay = 1000;
		c->retry_at = now + c->delay;
		return 0;
	}
	return END_ERROR;
}

static int m_run(void *state, void *box, const struct sbx_run_req *req, sbx_result *res)
{
	struct modal *m = state;
	struct mbox *b = box;
	struct run *r = NULL;
	char **argv = NULL;
	uint64_t start, exec_deadline, backstop;
	int rc, end = 0;

	if (__atomic_load_n(&b->killed, __ATOMIC_SEQ_CST))
		return sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_REMOTE,
				      "modal: sandbox %s was terminated by an earlier kill", b->id);
	rc = sbx__remote_argv(&argv, b->policy, req->argv);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		sbx__remote_argv_free(argv);
		return nomem();
	}
	r->m = m;
	r->b = b;
	r->req = req;
	sbx__grpc_uuid4(r->exec_id);
	start = sbx__grpc_now_ms();
	rc = exec_start(r, argv);
	sbx__remote_argv_free(argv);
	if (rc < 0 && r->start_broken) {
		/* A protocol violation: the sandbox is not trusted any further. */
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		rc = terminate_keep(m, b->id, SBX_EENGINE);
	}
	if (rc < 0)
		goto out;
	exec_deadline = start + req->timeout_ms;
	r->exec_deadline = exec_deadline;
	backstop = exec_deadline + RUN_GRACE_MS;
	rc = sbx__grpc_set_new(&r->set, b->router);
	/*
	 * The first stdin write (at most what a pipe holds, and eof when that
	 * is all) goes before the reads and the wait: a server may start the
	 * program, or hand it its input, as soon as its output is asked for
	 * (Modal's local double does), and on the real service the order
	 * costs one round trip. The rest of stdin flows alongside the output.
	 */
	for (int i = 0; i < CALL_N; i++)
		r->c[i].retry_at = UINT64_MAX;
	if (rc == 0)
		rc = start_call(r, CALL_IN, backstop);
	while (rc == 0) {
		struct sbx__grpc_call *done = NULL;
		uint64_t now = sbx__grpc_now_ms();

		if (r->c[CALL_OUT].done && r->c[CALL_ERR].done && r->have_exit)
			break;
		if (__atomic_load_n(&b->killed, __ATOMIC_SEQ_CST)) {
			end = END_KILLED;
			break;
		}
		if (now >= backstop) {
			end = END_BACKSTOP;
			break;
		}
		if (r->have_exit && now >= r->drain_until)
			break; /* the program is gone; a silent stream keeps nothing back */
		for (int i = 0; rc == 0 && i < CALL_N; i++)
			if (!r->c[i].done && !r->c[i].call && r->c[i].retry_at &&
			    now >= r->c[i].retry_at)
				rc = start_call(r, i, backstop);
		if (rc < 0)
			break;
		rc = sbx__grpc_set_step(r->set, STEP_MS, &done);
		if (rc < 0 || !done)
			continue;
		for (int i = 0; i < CALL_N; i++) {
			if (r->c[i].call == done) {
				struct sbx__grpc_status st;
				int crc = sbx__grpc_call_end(done, &st);

				end = on_end(r, i, crc, &st, sbx__grpc_now_ms());
				break;
			}
		}
		if (end)
			break;
	}
	res->duration_ms = sbx__grpc_now_ms() - start;
	if (rc < 0 && !end) {
		end = END_ERROR;
	}
	if (end == END_BACKSTOP) {
		/* The router did not end the run by its deadline: end the sandbox. */
		terminate(m, b->id);
		sbx__error_clear();
		if (req->ended)
			*req->ended = SBX__ENDED_TIMEOUT;
		res->status = SBX_RUN_TIMEOUT;
		res->exit_code = 124;
		res->term_signal = 9;
		res->limits_hit |= SBX_HIT_TIMEOUT;
		rc = 0;
	} else if (end == END_KILLED) {
		/* Killed through sbx_sandbox_kill() while the run was in flight. */
		sbx__error_clear();
		res->status = SBX_RUN_KILLED;
		res->exit_code = 137;
		res->term_signal = 9;
		rc = 0;
	} else if (end == END_CANCEL && r->sink_rc == 1) {
		terminate(m, b->id);
		if (req->ended)
			*req->ended = SBX__ENDED_KILLED;
		rc = sbx__error_set(SBX_ECANCELED, SBX_ERRCLASS_REMOTE,
				    "modal: run canceled by the output callback; sandbox %s was "
				    "terminated",
				    b->id);
	} else if (end == END_CANCEL) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory for output");
	} else if (end == END_BREAK) {
		char why[SBX_ERROR_MSG_MAX];

		/* A protocol violation: the sandbox is not trusted any further. */
		snprintf(why, sizeof(why), "%s", sbx_error_last()->message);
		terminate(m, b->id);
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: sandbox %s broke the run protocol (%s), so it was "
				    "terminated",
				    b->id, why);
	} else if (end == END_ERROR) {
		int code = sbx__error_code() ? sbx__error_code() : SBX_EENGINE;

		/* The run's state is unknown: end the sandbox rather than leave it running. */
		if (req->ended)
			*req->ended = SBX__ENDED_ERROR;
		rc = terminate_keep(m, b->id, code);
	} else {
		fill_exit(r, res, exec_deadline);
		rc = 0;
	}
out:
	run_done(r);
	free(r);
	return rc;
}

const struct sbx_backend_ops sbx__modal_ops = {
	.version = SBX_BACKEND_OPS_VERSION,
	.name = "modal",
	.open = m_open,
	.free = m_free,
	.check = m_check,
	.create = m_create,
	.open_box = m_open_box,
	.run = m_run,
	.destroy = m_destroy,
	.kill = m_kill,
	.release = m_release,
	.list = m_list,
	.reap = m_reap,
	.image_exists = m_image_exists,
	.import_image = NULL,
	.write_file = NULL,
	.read_file = NULL,
};
