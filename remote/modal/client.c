/*
 * remote/modal/client.c: the modal backend's control-plane client: every
 * call with the token pair and an x-modal-auth-token fetched by
 * AuthTokenGet and refreshed at half its life, a sandbox's terminate, and
 * the small helpers the backend's other files share.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>
#include <sandboxio.h>

#include "remote/modal/grpc-int.h"
#include "remote/modal/modal-int.h"
#include "remote/modal/modal.pb-c.h"
#include "util/base64.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/secmem.h"

#define TOKEN_DEFAULT_LIFE 1200 /* seconds, for a token without exp (as the SDKs) */

/* ===== Small helpers ===== */

char *sbx__modal_wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
	return NULL;
}

int sbx__modal_valid_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > SBX_MODAL_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return 0;
	return 1;
}

int sbx__modal_nomem(void)
{
	return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
}

/* A message packed after the gRPC prefix; in locked memory when secret. */
uint8_t *sbx__modal_pack(const ProtobufCMessage *msg, size_t *len, int secret)
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

const char *sbx__modal_status_name(int st)
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
int sbx__modal_url_is_loopback(const char *url)
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

uint64_t sbx__modal_deadline_in(uint64_t ms)
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

static int cp_call_raw(struct sbx__modal *m,
		       const char *method,
		       const ProtobufCMessage *req,
		       uint64_t deadline,
		       const char *auth,
		       const char *capture,
		       uint8_t **resp,
		       size_t *resp_len,
		       struct sbx__grpc_status *st);

/* The x-modal-auth-token to send, fetched or refreshed at half its life. */
int sbx__modal_auth_token(struct sbx__modal *m, uint64_t deadline, char **out)
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
	if (!r || !r->token || !r->token[0] || strlen(r->token) > SBX_MODAL_TOKEN_MAX) {
		rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				    "modal: AuthTokenGet answered without a usable token");
		goto done;
	}
	m->auth_token = sbx__modal_wipe_free(m->auth_token);
	m->auth_token = strdup(r->token);
	if (!m->auth_token) {
		rc = sbx__modal_nomem();
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
		rc = sbx__modal_nomem();
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int cp_call_raw(struct sbx__modal *m,
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
	framed = sbx__modal_pack(req, &len, 0);
	if (!framed)
		return sbx__modal_nomem();
	rc = sbx__grpc_unary(m->cp, method, framed, len, &o, resp, resp_len, st);
	if (rc < 0 && st->code == SBX__GRPC_UNAUTHENTICATED)
		return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_REMOTE,
				      "modal: credentials rejected: %s",
				      st->message[0] ? st->message : "(no message)");
	return rc;
}

/* One control-plane call with the auth token. st is always filled. */
int sbx__modal_cp_call(struct sbx__modal *m,
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
	rc = sbx__modal_auth_token(m, deadline, &tok);
	if (rc == 0)
		rc = cp_call_raw(m, method, req, deadline, tok, capture, resp, resp_len, st);
	sbx__modal_wipe_free(tok);
	return rc;
}

int sbx__modal_terminate(struct sbx__modal *m, const char *sandbox_id)
{
	Modal__Client__SandboxTerminateRequest req = MODAL__CLIENT__SANDBOX_TERMINATE_REQUEST__INIT;
	struct sbx__grpc_status st;
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	req.sandbox_id = (char *)sandbox_id;
	rc = sbx__modal_cp_call(m, SBX_MODAL_SANDBOX_TERMINATE, &req.base,
				sbx__modal_deadline_in(m->api_timeout_ms), NULL, &resp, &len, &st);
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
int sbx__modal_terminate_keep(struct sbx__modal *m, const char *sandbox_id, int rc)
{
	const sbx_error *e = sbx_error_last();
	char msg[SBX_ERROR_MSG_MAX];
	sbx_error_class klass = e->klass;

	snprintf(msg, sizeof(msg), "%s", e->message);
	if (sbx__modal_terminate(m, sandbox_id) < 0)
		return sbx__error_set(rc, klass, "%s; terminating sandbox %s failed too: %s", msg,
				      sandbox_id, sbx_error_last()->message);
	return sbx__error_set(rc, klass, "%s; sandbox %s was terminated", msg, sandbox_id);
}
