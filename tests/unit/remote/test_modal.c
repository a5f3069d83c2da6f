/*
 * tests/unit/remote/test_modal.c: the modal backend (remote/modal/)
 * through the public API, against a scripted control plane and command
 * router (tests/support/h2_peer.c; both on one loopback peer, the router
 * announced as https:// and dialed without TLS because the server URL is
 * loopback, as the official SDK does).
 *
 * Covers: open without the token pair; expired credentials at AuthTokenGet
 * and at AppGetOrCreate (SBX_EDENIED, "credentials rejected"); the headers
 * of control-plane and router calls (no token pair sent to the router);
 * the exact SandboxCreate definition and tags (BLOCKED without an
 * allowlist, ALLOWLIST with its CIDRs, timeout_secs and memory rounded up,
 * CPU and memory as request and limit, no entrypoint) and the image
 * request; check() refusals (host, CIDR with a port, disk cap, microvm);
 * the announced tier, and a tier below the demanded one terminating the
 * sandbox; an image that fails to build; a sandbox that ended before it
 * was scheduled; run mapping (exit code, signal, timeout) with the
 * prlimit-wrapped argv, timeout, workdir and env of TaskExecStart; secrets
 * only in TaskExecStart.env and in no other request; stdin with eof; a
 * stream cut mid-message, an oversize message and a cancel by the output
 * callback each terminating the sandbox; an output stream resumed at its
 * offset after a retryable break; sbx_sandbox_kill() ending a run in
 * flight; the host's backstop past a run's deadline; a router JWT refreshed on
 * UNAUTHENTICATED; list and reap by tags with paging; open_box; destroy
 * with NOT_FOUND; image_exists.
 */
#include <pthread.h>
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

#include "remote/modal/modal-int.h"
#include "remote/modal/modal.pb-c.h"
#include "remote/modal/task_command_router.pb-c.h"
#include "support/h2_peer.h"

#define SANDBOX_ID "sb-AbCdEfGhIjKlMnOpQrStUv"
#define TASK_ID "ta-01TESTTASK"
#define IMAGE_ID "im-01TESTIMAGE"
#define APP_ID "ap-01TESTAPP"
#define ROUTER_JWT "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjk5OTk5OTk5OTl9.router-sig"
#define SECRET_VALUE "s3cr3t-VALUE-9f2c"

struct listed {
	const char *id;
	double created;
	const char *tenant, *host, *boot, *pid, *start;
	char deadline[32];
};

struct fake {
	struct h2_peer *peer;
	char router_url[64];
	char auth_token[256];
	/* behaviour */
	int auth_unauth, app_unauth;
	const char *tier;
	int image_pending, image_fail;
	int task_result;
	int exec_unauth_once;
	int wait_code, wait_signal, wait_delay_ms;
	const char *out, *err;
	int out_mode; /* 0 whole, 1 cut mid-message, 2 oversize, 3 UNAVAILABLE after 3 bytes */
	int terminate_not_found;
	struct listed list[4];
	int list_n;
};

static struct fake F;

static void send_msg(struct h2_resp *r, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(n + 1);

	assert_non_null(b);
	protobuf_c_message_pack(m, b);
	h2_resp_ok(r, b, n);
	free(b);
}

static void answer_stdio(struct h2_resp *r, const char *text, int mode)
{
	Modal__TaskCommandRouter__TaskExecStdioReadResponse m =
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_READ_RESPONSE__INIT;
	uint8_t pb[256], wire[300];
	size_t n;

	h2_resp_headers(r, 200, NULL);
	if (text && *text) {
		m.data.data = (uint8_t *)text;
		m.data.len = strlen(text);
		n = modal__task_command_router__task_exec_stdio_read_response__pack(&m, pb);
		/* mode 2 declares 2 GiB - 1 for a short message */
		wire[0] = 0;
		wire[1] = (uint8_t)(mode == 2 ? 0x7f : 0);
		wire[2] = (uint8_t)(mode == 2 ? 0xff : 0);
		wire[3] = (uint8_t)(mode == 2 ? 0xff : 0);
		wire[4] = (uint8_t)(mode == 2 ? 0xff : n);
		memcpy(wire + 5, pb, n);
		if (mode == 1) {
			h2_resp_data(r, wire, 5 + n / 2);
			h2_resp_delay(r, 500);
			h2_resp_reset(r);
			return;
		}
		h2_resp_data(r, wire, 5 + n);
	}
	h2_resp_trailers(r, 0, NULL, NULL);
}

static void handler(void *arg, const struct h2_req *q, struct h2_resp *r)
{
	const char *p = q->path;

	(void)arg;
	if (!strcmp(p, SBX_MODAL_AUTH_TOKEN_GET)) {
		Modal__Client__AuthTokenGetResponse m =
			MODAL__CLIENT__AUTH_TOKEN_GET_RESPONSE__INIT;

		if (F.auth_unauth) {
			h2_resp_trailers_only(r, 16, "token%20expired", NULL);
			return;
		}
		m.token = F.auth_token;
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_APP_GET_OR_CREATE)) {
		Modal__Client__AppGetOrCreateResponse m =
			MODAL__CLIENT__APP_GET_OR_CREATE_RESPONSE__INIT;

		if (F.app_unauth) {
			h2_resp_trailers_only(r, 16, "Token%20has%20expired", NULL);
			return;
		}
		m.app_id = (char *)APP_ID;
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_IMAGE_GET_OR_CREATE)) {
		Modal__Client__ImageGetOrCreateResponse m =
			MODAL__CLIENT__IMAGE_GET_OR_CREATE_RESPONSE__INIT;
		Modal__Client__GenericResult res = MODAL__CLIENT__GENERIC_RESULT__INIT;

		m.image_id = (char *)IMAGE_ID;
		if (!F.image_pending) {
			res.status =
				MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_SUCCESS;
			m.result = &res;
		}
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_IMAGE_JOIN_STREAMING)) {
		Modal__Client__ImageJoinStreamingResponse m =
			MODAL__CLIENT__IMAGE_JOIN_STREAMING_RESPONSE__INIT;
		Modal__Client__GenericResult res = MODAL__CLIENT__GENERIC_RESULT__INIT;

		res.status =
			F.image_fail
				? MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_FAILURE
				: MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_SUCCESS;
		res.exception = (char *)"pull access denied for nosuch/image";
		m.result = &res;
		m.entry_id = (char *)"1-0";
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_SANDBOX_CREATE)) {
		Modal__Client__SandboxCreateResponse m =
			MODAL__CLIENT__SANDBOX_CREATE_RESPONSE__INIT;
		char extra[64];
		size_t n;
		uint8_t pb[128];

		m.sandbox_id = (char *)SANDBOX_ID;
		n = modal__client__sandbox_create_response__pack(&m, pb);
		snprintf(extra, sizeof(extra), "%s: %s\n", SBX_MODAL_TIER_HEADER,
			 F.tier ? F.tier : "");
		h2_resp_headers(r, 200, F.tier ? extra : NULL);
		h2_resp_message(r, pb, n);
		h2_resp_trailers(r, 0, NULL, NULL);
	} else if (!strcmp(p, SBX_MODAL_SANDBOX_GET_TASK_ID)) {
		Modal__Client__SandboxGetTaskIdResponse m =
			MODAL__CLIENT__SANDBOX_GET_TASK_ID_RESPONSE__INIT;
		Modal__Client__GenericResult res = MODAL__CLIENT__GENERIC_RESULT__INIT;

		if (F.task_result) {
			res.status =
				MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_INIT_FAILURE;
			res.exception = (char *)"container exited at start";
			m.task_result = &res;
		} else {
			m.task_id = (char *)TASK_ID;
		}
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_TASK_GET_ROUTER_ACCESS)) {
		Modal__Client__TaskGetCommandRouterAccessResponse m =
			MODAL__CLIENT__TASK_GET_COMMAND_ROUTER_ACCESS_RESPONSE__INIT;

		m.jwt = (char *)ROUTER_JWT;
		m.url = F.router_url;
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_SANDBOX_TERMINATE)) {
		Modal__Client__SandboxTerminateResponse m =
			MODAL__CLIENT__SANDBOX_TERMINATE_RESPONSE__INIT;

		if (F.terminate_not_found) {
			h2_resp_trailers_only(r, 5, "no%20such%20sandbox", NULL);
			return;
		}
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_SANDBOX_LIST)) {
		Modal__Client__SandboxListResponse m = MODAL__CLIENT__SANDBOX_LIST_RESPONSE__INIT;
		Modal__Client__SandboxListRequest *lq;
		Modal__Client__SandboxInfo infos[4], *infop[4];
		Modal__Client__SandboxTag tags[4][7], *tagp[4][7];
		const uint8_t *msg;
		size_t n = 0;

		msg = h2_req_message(q, &n);
		lq = modal__client__sandbox_list_request__unpack(NULL, n, msg);
		assert_non_null(lq);
		if (lq->before_timestamp == 0) {
			for (int i = 0; i < F.list_n; i++) {
				const struct listed *l = &F.list[i];
				const char *kv[7][2] = {{"io.sandboxio.managed-by", "sandboxio"},
							{"io.sandboxio.tenant", l->tenant},
							{"io.sandboxio.deadline", l->deadline},
							{"io.sandboxio.owner-host", l->host},
							{"io.sandboxio.owner-boot", l->boot},
							{"io.sandboxio.owner-pid", l->pid},
							{"io.sandboxio.owner-start", l->start}};

				modal__client__sandbox_info__init(&infos[i]);
				infos[i].id = (char *)l->id;
				infos[i].created_at = l->created;
				infos[i].app_id = (char *)APP_ID;
				for (int k = 0; k < 7; k++) {
					modal__client__sandbox_tag__init(&tags[i][k]);
					tags[i][k].tag_name = (char *)kv[k][0];
					tags[i][k].tag_value = (char *)kv[k][1];
					tagp[i][k] = &tags[i][k];
				}
				infos[i].n_tags = 7;
				infos[i].tags = tagp[i];
				infop[i] = &infos[i];
			}
			m.n_sandboxes = (size_t)F.list_n;
			m.sandboxes = infop;
		}
		modal__client__sandbox_list_request__free_unpacked(lq, NULL);
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_EXEC_START)) {
		Modal__TaskCommandRouter__TaskExecStartResponse m =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_START_RESPONSE__INIT;

		if (F.exec_unauth_once) {
			F.exec_unauth_once = 0;
			h2_resp_trailers_only(r, 16, "jwt%20expired", NULL);
			return;
		}
		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_EXEC_STDIO_READ)) {
		Modal__TaskCommandRouter__TaskExecStdioReadRequest *sq;
		const uint8_t *msg;
		size_t n = 0;
		int fd;

		msg = h2_req_message(q, &n);
		sq = modal__task_command_router__task_exec_stdio_read_request__unpack(NULL, n, msg);
		assert_non_null(sq);
		fd = (int)sq->file_descriptor;
		if (fd == 0 && F.out_mode == 3) {
			/* The stream breaks retryably after 3 bytes; it resumes at the offset. */
			Modal__TaskCommandRouter__TaskExecStdioReadResponse m =
				MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIO_READ_RESPONSE__INIT;
			uint8_t pb[64];

			m.data.data = (uint8_t *)F.out + sq->offset;
			m.data.len = sq->offset ? strlen(F.out) - sq->offset : 3;
			n = modal__task_command_router__task_exec_stdio_read_response__pack(&m, pb);
			h2_resp_headers(r, 200, NULL);
			h2_resp_message(r, pb, n);
			h2_resp_trailers(r, sq->offset ? 0 : 14,
					 sq->offset ? NULL : "worker%20moved", NULL);
		} else {
			answer_stdio(r, fd == 0 ? F.out : F.err, fd == 0 ? F.out_mode : 0);
		}
		modal__task_command_router__task_exec_stdio_read_request__free_unpacked(sq, NULL);
	} else if (!strcmp(p, SBX_MODAL_EXEC_STDIN_WRITE)) {
		Modal__TaskCommandRouter__TaskExecStdinWriteResponse m =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDIN_WRITE_RESPONSE__INIT;

		send_msg(r, &m.base);
	} else if (!strcmp(p, SBX_MODAL_EXEC_WAIT)) {
		Modal__TaskCommandRouter__TaskExecWaitResponse m =
			MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__INIT;
		size_t n;
		uint8_t pb[32];

		if (F.wait_signal) {
			m.exit_status_case =
				MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL;
			m.signal = F.wait_signal;
		} else {
			m.exit_status_case =
				MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_CODE;
			m.code = F.wait_code;
		}
		n = modal__task_command_router__task_exec_wait_response__pack(&m, pb);
		h2_resp_headers(r, 200, NULL);
		if (F.wait_delay_ms)
			h2_resp_delay(r, F.wait_delay_ms);
		h2_resp_message(r, pb, n);
		h2_resp_trailers(r, 0, NULL, NULL);
	} else {
		h2_resp_trailers_only(r, 12, "unimplemented", NULL);
	}
}

static int setup(void **state)
{
	char b64[128], payload[64];

	(void)state;
	memset(&F, 0, sizeof(F));
	F.peer = h2_peer_start(handler, NULL);
	assert_non_null(F.peer);
	snprintf(F.router_url, sizeof(F.router_url), "https://127.0.0.1:%d", h2_peer_port(F.peer));
	snprintf(payload, sizeof(payload), "{\"exp\":%lld}", (long long)time(NULL) + 3600);
	h2_base64(b64, sizeof(b64), payload, strlen(payload));
	snprintf(F.auth_token, sizeof(F.auth_token), "eyJhbGciOiJub25lIn0.%s.sig", b64);
	F.out = "hello\n";
	F.err = "warn\n";
	setenv("MODAL_SERVER_URL", h2_peer_url(F.peer), 1);
	setenv("MODAL_TOKEN_ID", "ak-test", 1);
	setenv("MODAL_TOKEN_SECRET", "as-TOKENSECRET", 1);
	setenv("MODAL_ENVIRONMENT", "testenv", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	h2_peer_stop(F.peer);
	F.peer = NULL;
	return 0;
}

static sbx_backend *open_modal(void)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	o.no_reap_at_open = 1;
	if (sbx_backend_open(&b, "modal", &o) != 0)
		fail_msg("open: %s", sbx_error_last()->message);
	return b;
}

static sbx_policy *policy(void)
{
	sbx_policy *p = NULL;

	assert_int_equal(sbx_policy_new(&p), 0);
	return p;
}

static sbx_sandbox *create(sbx_backend *b, sbx_policy *p)
{
	sbx_sandbox *s = NULL;

	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	return s;
}

static void assert_msg(const char *word)
{
	const char *m = sbx_error_last()->message;

	if (!strstr(m, word))
		fail_msg("error message '%s' does not name '%s'", m, word);
}

#define UNPACK_REQ(type, fn, path, nth)                                                            \
	({                                                                                         \
		const struct h2_req *_q = h2_peer_req(F.peer, path, nth);                          \
		const uint8_t *_m;                                                                 \
		size_t _n = 0;                                                                     \
		assert_non_null(_q);                                                               \
		_m = h2_req_message(_q, &_n);                                                      \
		assert_non_null(_m);                                                               \
		type *_r = fn(NULL, _n, _m);                                                       \
		assert_non_null(_r);                                                               \
		_r;                                                                                \
	})

static const char *tag_value(const Modal__Client__SandboxCreateRequest *q, const char *k)
{
	for (size_t i = 0; i < q->n_tags; i++)
		if (!strcmp(q->tags[i]->tag_name, k))
			return q->tags[i]->tag_value;
	return NULL;
}

/* ===== Open and credentials ===== */

static void test_remote_modal__open_needs_token_pair(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	unsetenv("MODAL_TOKEN_SECRET");
	o.no_reap_at_open = 1;
	assert_int_equal(sbx_backend_open(&b, "modal", &o), SBX_EDENIED);
	assert_msg("MODAL_TOKEN_ID");
	assert_msg("MODAL_TOKEN_SECRET");
	assert_null(b);
	assert_int_equal(h2_peer_count(F.peer, NULL), 0);
}

static void test_remote_modal__expired_credentials_at_auth(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	F.auth_unauth = 1;
	o.no_reap_at_open = 1;
	assert_int_equal(sbx_backend_open(&b, "modal", &o), SBX_EDENIED);
	assert_msg("modal: credentials rejected: token expired");
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_AUTH_TOKEN_GET), 1);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_APP_GET_OR_CREATE), 0);
	/* The secret is never in a message. */
	assert_null(strstr(sbx_error_last()->message, "as-TOKENSECRET"));
}

static void test_remote_modal__expired_credentials_at_app(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	F.app_unauth = 1;
	o.no_reap_at_open = 1;
	assert_int_equal(sbx_backend_open(&b, "modal", &o), SBX_EDENIED);
	assert_msg("modal: credentials rejected: Token has expired");
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_APP_GET_OR_CREATE), 1);
}

static void test_remote_modal__open_headers_and_app(void **state)
{
	Modal__Client__AppGetOrCreateRequest *q;
	const struct h2_req *auth, *app;
	sbx_backend *b;

	(void)state;
	b = open_modal();
	auth = h2_peer_req(F.peer, SBX_MODAL_AUTH_TOKEN_GET, 0);
	app = h2_peer_req(F.peer, SBX_MODAL_APP_GET_OR_CREATE, 0);
	assert_non_null(auth);
	assert_non_null(app);
	assert_true(auth->stream_id < app->stream_id || auth->conn < app->conn);
	assert_null(h2_req_header(auth, "x-modal-auth-token"));
	assert_string_equal(h2_req_header(app, "x-modal-client-type"), "8");
	assert_string_equal(h2_req_header(app, "x-modal-client-version"), "1.0.0");
	assert_string_equal(h2_req_header(app, "x-modal-libmodal-version"), "sandboxio/0.1.0");
	assert_string_equal(h2_req_header(app, "x-modal-token-id"), "ak-test");
	assert_string_equal(h2_req_header(app, "x-modal-token-secret"), "as-TOKENSECRET");
	assert_string_equal(h2_req_header(app, "x-modal-auth-token"), F.auth_token);
	q = UNPACK_REQ(Modal__Client__AppGetOrCreateRequest,
		       modal__client__app_get_or_create_request__unpack,
		       SBX_MODAL_APP_GET_OR_CREATE, 0);
	assert_string_equal(q->app_name, "sandboxio");
	assert_string_equal(q->environment_name, "testenv");
	assert_int_equal(
		q->object_creation_type,
		MODAL__CLIENT__OBJECT_CREATION_TYPE__OBJECT_CREATION_TYPE_CREATE_IF_MISSING);
	modal__client__app_get_or_create_request__free_unpacked(q, NULL);
	assert_string_equal(sbx_backend_name(b), "modal");
	sbx_backend_free(b);
	/* The token was fetched once and reused. */
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_AUTH_TOKEN_GET), 1);
}

static void test_remote_modal__plaintext_only_to_loopback(void **state)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	(void)state;
	setenv("MODAL_SERVER_URL", "http://198.51.100.7:8080", 1);
	o.no_reap_at_open = 1;
	assert_int_equal(sbx_backend_open(&b, "modal", &o), SBX_EINVALID);
	assert_msg("loopback");
	assert_int_equal(h2_peer_count(F.peer, NULL), 0);
}

/* ===== Create ===== */

static void test_remote_modal__create_definition_blocked(void **state)
{
	Modal__Client__SandboxCreateRequest *q;
	Modal__Client__ImageGetOrCreateRequest *iq;
	Modal__Client__Sandbox *d;
	sbx_backend *b;
	sbx_policy *p = policy();
	sbx_sandbox *s;
	char host[256] = "", pid[32];
	long long dl, before;

	(void)state;
	assert_int_equal(sbx_policy_set_timeout_ms(p, SBX_TIMEOUT_SANDBOX, 1500), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_CPU_MILLI, 1500), 0);
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_MEMORY, (100ll << 20) + 1), 0);
	assert_int_equal(sbx_policy_set_tenant(p, "acme"), 0);
	assert_int_equal(sbx_policy_set_workdir(p, "/work/dir"), 0);
	b = open_modal();
	before = (long long)time(NULL);
	s = create(b, p);
	assert_string_equal(sbx_sandbox_id(s), SANDBOX_ID);
	assert_int_equal(sbx_sandbox_tier(s), SBX_TIER_GVISOR);

	iq = UNPACK_REQ(Modal__Client__ImageGetOrCreateRequest,
			modal__client__image_get_or_create_request__unpack,
			SBX_MODAL_IMAGE_GET_OR_CREATE, 0);
	assert_string_equal(iq->app_id, APP_ID);
	assert_string_equal(iq->builder_version, "2024.10");
	assert_int_equal(iq->image->n_dockerfile_commands, 1);
	assert_string_equal(iq->image->dockerfile_commands[0], "FROM sandboxio/python:3.11");
	modal__client__image_get_or_create_request__free_unpacked(iq, NULL);

	q = UNPACK_REQ(Modal__Client__SandboxCreateRequest,
		       modal__client__sandbox_create_request__unpack, SBX_MODAL_SANDBOX_CREATE, 0);
	d = q->definition;
	assert_string_equal(q->app_id, APP_ID);
	assert_non_null(d);
	assert_string_equal(d->image_id, IMAGE_ID);
	assert_int_equal(d->timeout_secs, 2); /* 1.5 s, rounded up */
	assert_string_equal(d->workdir, "/work/dir");
	assert_int_equal(d->n_entrypoint_args, 0);
	assert_non_null(d->resources);
	assert_int_equal(d->resources->milli_cpu, 1500);
	assert_int_equal(d->resources->milli_cpu_max, 1500);
	assert_int_equal(d->resources->memory_mb, 101); /* rounded up */
	assert_int_equal(d->resources->memory_mb_max, 101);
	assert_non_null(d->network_access);
	assert_int_equal(d->network_access->network_access_type,
			 MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__BLOCKED);
	assert_int_equal(d->network_access->n_allowed_cidrs, 0);
	/* Exactly the owner keys. */
	assert_int_equal(q->n_tags, 7);
	for (size_t i = 0; i < q->n_tags; i++)
		assert_int_equal(strncmp(q->tags[i]->tag_name, "io.sandboxio.", 13), 0);
	assert_string_equal(tag_value(q, "io.sandboxio.managed-by"), "sandboxio");
	assert_string_equal(tag_value(q, "io.sandboxio.tenant"), "acme");
	gethostname(host, sizeof(host) - 1);
	assert_string_equal(tag_value(q, "io.sandboxio.owner-host"), host);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	assert_string_equal(tag_value(q, "io.sandboxio.owner-pid"), pid);
	assert_non_null(tag_value(q, "io.sandboxio.owner-boot"));
	assert_non_null(tag_value(q, "io.sandboxio.owner-start"));
	dl = atoll(tag_value(q, "io.sandboxio.deadline"));
	/* The create's time plus its 2 s (1.5 s rounded up), however long the create took. */
	assert_true(dl >= before + 2 && dl <= (long long)time(NULL) + 2);
	modal__client__sandbox_create_request__free_unpacked(q, NULL);

	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_GET_TASK_ID), 1);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_TASK_GET_ROUTER_ACCESS), 1);
	assert_int_equal(sbx_sandbox_close(s), 0);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_remote_modal__create_definition_allowlist(void **state)
{
	Modal__Client__SandboxCreateRequest *q;
	Modal__Client__NetworkAccess *n;
	sbx_backend *b;
	sbx_policy *p = policy();
	sbx_sandbox *s;

	(void)state;
	assert_int_equal(sbx_policy_allow_cidr(p, "198.51.100.0/24", 0), 0);
	assert_int_equal(sbx_policy_allow_cidr(p, "2001:db8::/32", 0), 0);
	b = open_modal();
	s = create(b, p);
	q = UNPACK_REQ(Modal__Client__SandboxCreateRequest,
		       modal__client__sandbox_create_request__unpack, SBX_MODAL_SANDBOX_CREATE, 0);
	n = q->definition->network_access;
	assert_int_equal(n->network_access_type,
			 MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__ALLOWLIST);
	assert_int_equal(n->n_allowed_cidrs, 2);
	assert_string_equal(n->allowed_cidrs[0], "198.51.100.0/24");
	assert_string_equal(n->allowed_cidrs[1], "2001:db8::/32");
	assert_int_equal(q->definition->timeout_secs, 300);
	assert_int_equal(q->definition->resources->memory_mb, 512);
	modal__client__sandbox_create_request__free_unpacked(q, NULL);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_remote_modal__check_refusals(void **state)
{
	sbx_backend *b;
	sbx_sandbox *s = NULL;
	sbx_policy *p;

	(void)state;
	b = open_modal();

	p = policy();
	assert_int_equal(sbx_policy_allow_host(p, "example.org", 443), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_msg("allow_cidr");
	assert_msg("DNS");
	sbx_policy_free(p);

	p = policy();
	assert_int_equal(sbx_policy_allow_cidr(p, "198.51.100.0/24", 443), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_msg("every port and protocol");
	sbx_policy_free(p);

	p = policy();
	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_DISK, 2ll << 30), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_msg("disk");
	sbx_policy_free(p);

	p = policy();
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_MICROVM), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_msg("microvm");
	sbx_policy_free(p);

	assert_null(s);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_IMAGE_GET_OR_CREATE), 0);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_CREATE), 0);
	sbx_backend_free(b);
}

static void test_remote_modal__announced_tier(void **state)
{
	sbx_backend *b;
	sbx_sandbox *s = NULL;
	sbx_policy *p = policy();

	(void)state;
	F.tier = "container";
	b = open_modal();
	s = create(b, p);
	assert_int_equal(sbx_sandbox_tier(s), SBX_TIER_CONTAINER);
	sbx_sandbox_close(s);
	s = NULL;
	/* A demanded tier above the one given: refused, and the sandbox terminated. */
	assert_int_equal(sbx_policy_set_min_tier(p, SBX_TIER_GVISOR), 0);
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EUNSUPPORTED);
	assert_msg("container");
	assert_msg("terminated");
	assert_null(s);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_CREATE), 2);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 2);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_remote_modal__image_build_fails(void **state)
{
	sbx_backend *b;
	sbx_sandbox *s = NULL;
	sbx_policy *p = policy();

	(void)state;
	F.image_pending = 1;
	F.image_fail = 1;
	assert_int_equal(sbx_policy_set_image(p, "nosuch/image:1"), 0);
	b = open_modal();
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_ENOTFOUND);
	assert_msg("nosuch/image:1");
	assert_msg("pull access denied");
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_IMAGE_JOIN_STREAMING), 1);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_CREATE), 0);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_remote_modal__image_joined_then_created(void **state)
{
	Modal__Client__ImageJoinStreamingRequest *jq;
	sbx_backend *b;
	sbx_policy *p = policy();
	sbx_sandbox *s;

	(void)state;
	F.image_pending = 1;
	b = open_modal();
	s = create(b, p);
	jq = UNPACK_REQ(Modal__Client__ImageJoinStreamingRequest,
			modal__client__image_join_streaming_request__unpack,
			SBX_MODAL_IMAGE_JOIN_STREAMING, 0);
	assert_string_equal(jq->image_id, IMAGE_ID);
	assert_true(jq->timeout > 0 && jq->timeout <= 55);
	modal__client__image_join_streaming_request__free_unpacked(jq, NULL);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

static void test_remote_modal__sandbox_ended_before_task(void **state)
{
	sbx_backend *b;
	sbx_sandbox *s = NULL;
	sbx_policy *p = policy();

	(void)state;
	F.task_result = 1;
	b = open_modal();
	assert_int_equal(sbx_sandbox_create(&s, b, p), SBX_EENGINE);
	assert_msg("already ended");
	assert_msg("container exited at start");
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	sbx_policy_free(p);
	sbx_backend_free(b);
}

/* ===== Runs ===== */

struct env {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
};

static void env_up(struct env *e)
{
	e->b = open_modal();
	e->p = policy();
	e->s = create(e->b, e->p);
}

static void env_down(struct env *e)
{
	sbx_sandbox_close(e->s);
	sbx_policy_free(e->p);
	sbx_backend_free(e->b);
}

static sbx_result *run(struct env *e, const sbx_run_options *o, int want_rc)
{
	static const char *const argv[] = {"python3", "-c", "print(1)", NULL};
	sbx_result *r = NULL;
	int rc = sbx_sandbox_run(&r, e->s, argv, o);

	if (rc != want_rc)
		fail_msg("run: rc %d, want %d: %s", rc, want_rc, sbx_error_last()->message);
	return r;
}

static void test_remote_modal__run_exit_code(void **state)
{
	Modal__TaskCommandRouter__TaskExecStartRequest *q;
	Modal__TaskCommandRouter__TaskExecWaitRequest *wq;
	const struct h2_req *start, *out, *err;
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct env e;
	sbx_result *r;
	size_t i;

	(void)state;
	F.wait_code = 3;
	env_up(&e);
	o.timeout_ms = 2500;
	o.workdir = "/tmp";
	r = run(&e, &o, 0);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(r->exit_code, 3);
	assert_string_equal(r->stdout_data, "hello\n");
	assert_string_equal(r->stderr_data, "warn\n");
	sbx_result_free(r);

	q = UNPACK_REQ(Modal__TaskCommandRouter__TaskExecStartRequest,
		       modal__task_command_router__task_exec_start_request__unpack,
		       SBX_MODAL_EXEC_START, 0);
	assert_string_equal(q->task_id, TASK_ID);
	assert_int_equal(strlen(q->exec_id), 36);
	assert_int_equal(q->timeout_secs, 3); /* 2.5 s, rounded up */
	assert_string_equal(q->workdir, "/tmp");
	assert_int_equal(
		q->stdout_config,
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDOUT_CONFIG__TASK_EXEC_STDOUT_CONFIG_PIPE);
	assert_int_equal(
		q->stderr_config,
		MODAL__TASK_COMMAND_ROUTER__TASK_EXEC_STDERR_CONFIG__TASK_EXEC_STDERR_CONFIG_PIPE);
	/* The per-run caps wrap argv; the program follows "--" as given. */
	assert_true(q->n_command_args >= 4);
	assert_string_equal(q->command_args[0], "prlimit");
	for (i = 0; i < q->n_command_args && strcmp(q->command_args[i], "--"); i++)
		;
	assert_true(i + 3 < q->n_command_args);
	assert_string_equal(q->command_args[i + 1], "python3");
	assert_string_equal(q->command_args[i + 3], "print(1)");
	wq = UNPACK_REQ(Modal__TaskCommandRouter__TaskExecWaitRequest,
			modal__task_command_router__task_exec_wait_request__unpack,
			SBX_MODAL_EXEC_WAIT, 0);
	assert_string_equal(wq->exec_id, q->exec_id);
	modal__task_command_router__task_exec_wait_request__free_unpacked(wq, NULL);
	modal__task_command_router__task_exec_start_request__free_unpacked(q, NULL);

	/* The router gets the JWT, never the token pair. */
	start = h2_peer_req(F.peer, SBX_MODAL_EXEC_START, 0);
	assert_string_equal(h2_req_header(start, "authorization"), "Bearer " ROUTER_JWT);
	assert_null(h2_req_header(start, "x-modal-token-secret"));
	assert_null(h2_req_header(start, "x-modal-token-id"));
	/* stdout and stderr were read at once, over one connection. */
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_EXEC_STDIO_READ), 2);
	out = h2_peer_req(F.peer, SBX_MODAL_EXEC_STDIO_READ, 0);
	err = h2_peer_req(F.peer, SBX_MODAL_EXEC_STDIO_READ, 1);
	assert_int_equal(out->conn, err->conn);
	/* Empty stdin is still closed. */
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_EXEC_STDIN_WRITE), 1);
	env_down(&e);
}

static void test_remote_modal__run_signal(void **state)
{
	struct env e;
	sbx_result *r;

	(void)state;
	F.wait_signal = 9;
	env_up(&e);
	r = run(&e, NULL, 0);
	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->exit_code, 137);
	assert_int_equal(r->term_signal, 9);
	assert_false(r->limits_hit & SBX_HIT_TIMEOUT);
	sbx_result_free(r);
	env_down(&e);
}

static void test_remote_modal__run_timeout(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct env e;
	sbx_result *r;

	(void)state;
	F.wait_signal = 9;
	F.wait_delay_ms = 1300; /* the exec is killed after its 1 s deadline */
	env_up(&e);
	o.timeout_ms = 1000;
	r = run(&e, &o, 0);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	sbx_result_free(r);
	/* The exec's own timeout did it: the sandbox lives on. */
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 0);
	env_down(&e);
}

static int memfind(const void *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);

	for (size_t i = 0; hay && i + k <= n; i++)
		if (!memcmp((const char *)hay + i, needle, k))
			return 1;
	return 0;
}

static void test_remote_modal__secrets_only_in_exec_env(void **state)
{
	Modal__TaskCommandRouter__TaskExecStartRequest *q;
	static const char *const plain[] = {"PLAIN=visible", NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_secrets *sec = NULL;
	struct env e;
	sbx_result *r;
	int in_start = 0, found = 0;

	(void)state;
	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "API_KEY", SECRET_VALUE, strlen(SECRET_VALUE)), 0);
	env_up(&e);
	o.secrets = sec;
	o.env = plain;
	o.stdin_data = "input-bytes";
	o.stdin_len = 11;
	r = run(&e, &o, 0);
	sbx_result_free(r);

	q = UNPACK_REQ(Modal__TaskCommandRouter__TaskExecStartRequest,
		       modal__task_command_router__task_exec_start_request__unpack,
		       SBX_MODAL_EXEC_START, 0);
	for (size_t i = 0; i < q->n_env; i++) {
		if (!strcmp(q->env[i]->key, "API_KEY")) {
			assert_string_equal(q->env[i]->value, SECRET_VALUE);
			found |= 1;
		}
		if (!strcmp(q->env[i]->key, "PLAIN")) {
			assert_string_equal(q->env[i]->value, "visible");
			found |= 2;
		}
	}
	assert_int_equal(found, 3);
	for (size_t i = 0; i < q->n_command_args; i++)
		assert_null(strstr(q->command_args[i], SECRET_VALUE));
	modal__task_command_router__task_exec_start_request__free_unpacked(q, NULL);

	/* No other request, body or header, carries it. */
	for (int i = 0; i < h2_peer_count(F.peer, NULL); i++) {
		const struct h2_req *x = h2_peer_req(F.peer, NULL, i);
		int has = memfind(x->body, x->body_len, SECRET_VALUE) ||
			  memfind(x->headers, strlen(x->headers), SECRET_VALUE);

		if (!strcmp(x->path, SBX_MODAL_EXEC_START))
			in_start += has;
		else if (has)
			fail_msg("the secret reached %s", x->path);
	}
	assert_int_equal(in_start, 1);
	/* The first stdin write came before any output or the exit was asked for. */
	{
		int first_in = -1, first_other = -1;

		for (int i = 0; i < h2_peer_count(F.peer, NULL); i++) {
			const char *path = h2_peer_req(F.peer, NULL, i)->path;

			if (first_in < 0 && !strcmp(path, SBX_MODAL_EXEC_STDIN_WRITE))
				first_in = i;
			if (first_other < 0 && (!strcmp(path, SBX_MODAL_EXEC_STDIO_READ) ||
						!strcmp(path, SBX_MODAL_EXEC_WAIT)))
				first_other = i;
		}
		assert_true(first_in >= 0 && first_other > first_in);
	}
	/* stdin went in one write, with eof. */
	{
		Modal__TaskCommandRouter__TaskExecStdinWriteRequest *w = UNPACK_REQ(
			Modal__TaskCommandRouter__TaskExecStdinWriteRequest,
			modal__task_command_router__task_exec_stdin_write_request__unpack,
			SBX_MODAL_EXEC_STDIN_WRITE, 0);

		assert_int_equal(w->offset, 0);
		assert_int_equal(w->data.len, 11);
		assert_memory_equal(w->data.data, "input-bytes", 11);
		assert_true(w->eof);
		modal__task_command_router__task_exec_stdin_write_request__free_unpacked(w, NULL);
	}
	env_down(&e);
	sbx_secrets_free(sec);
}

static void test_remote_modal__cut_stream_terminates(void **state)
{
	struct env e;
	sbx_result *r;

	(void)state;
	F.out = "a longer line of output that will be cut\n";
	F.out_mode = 1;
	env_up(&e);
	r = run(&e, NULL, SBX_EENGINE);
	assert_null(r);
	assert_msg("broke the run protocol");
	assert_msg("got ");
	assert_msg(SANDBOX_ID);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	env_down(&e);
}

static void test_remote_modal__oversize_message_terminates(void **state)
{
	struct env e;
	sbx_result *r;

	(void)state;
	F.out_mode = 2;
	env_up(&e);
	r = run(&e, NULL, SBX_EENGINE);
	assert_null(r);
	assert_msg("over the limit");
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	env_down(&e);
}

static int cancel_cb(int stream, const char *data, size_t len, void *payload)
{
	(void)stream;
	(void)data;
	(void)len;
	(void)payload;
	return 1;
}

static void test_remote_modal__cancel_terminates(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct env e;
	sbx_result *r;

	(void)state;
	env_up(&e);
	o.on_output = cancel_cb;
	r = run(&e, &o, SBX_ECANCELED);
	assert_null(r);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	env_down(&e);
}

static void test_remote_modal__stream_resumes_at_offset(void **state)
{
	Modal__TaskCommandRouter__TaskExecStdioReadRequest *q;
	struct env e;
	sbx_result *r;
	int resumed = 0;

	(void)state;
	F.out_mode = 3;
	env_up(&e);
	r = run(&e, NULL, 0);
	assert_string_equal(r->stdout_data, "hello\n");
	sbx_result_free(r);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_EXEC_STDIO_READ), 3);
	for (int i = 0; i < 3; i++) {
		q = UNPACK_REQ(Modal__TaskCommandRouter__TaskExecStdioReadRequest,
			       modal__task_command_router__task_exec_stdio_read_request__unpack,
			       SBX_MODAL_EXEC_STDIO_READ, i);
		if (q->file_descriptor == 0 && q->offset == 3)
			resumed++;
		modal__task_command_router__task_exec_stdio_read_request__free_unpacked(q, NULL);
	}
	assert_int_equal(resumed, 1);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 0);
	env_down(&e);
}

static void *kill_when_waiting(void *arg)
{
	struct env *e = arg;
	struct timespec ts = {0, 20 * 1000000L};

	/* Hang guard: 120 s; a run that never waits then fails its assertions. */
	for (int i = 0; i < 6000 && h2_peer_count(F.peer, SBX_MODAL_EXEC_WAIT) == 0; i++)
		nanosleep(&ts, NULL);
	sbx_sandbox_kill(e->s);
	return NULL;
}

static void test_remote_modal__kill_aborts_run(void **state)
{
	struct env e;
	sbx_result *r;
	pthread_t th;

	(void)state;
	F.wait_delay_ms = 60000; /* only the kill ends this run early */
	F.wait_code = 0;
	env_up(&e);
	assert_int_equal(pthread_create(&th, NULL, kill_when_waiting, &e), 0);
	r = run(&e, NULL, 0);
	pthread_join(th, NULL);
	assert_int_equal(r->status, SBX_RUN_KILLED);
	assert_int_equal(r->exit_code, 137);
	sbx_result_free(r);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	/* A killed sandbox takes no more runs. */
	assert_null(run(&e, NULL, SBX_ENOTFOUND));
	env_down(&e);
}

static void test_remote_modal__host_backstop(void **state)
{
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct env e;
	sbx_result *r;

	(void)state;
	F.wait_delay_ms = 60000; /* the router never ends the run */
	env_up(&e);
	o.timeout_ms = 1000;
	r = run(&e, &o, 0);
	assert_int_equal(r->status, SBX_RUN_TIMEOUT);
	assert_int_equal(r->exit_code, 124);
	assert_true(r->limits_hit & SBX_HIT_TIMEOUT);
	sbx_result_free(r);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 1);
	env_down(&e);
}

static void test_remote_modal__router_jwt_refreshed(void **state)
{
	struct env e;
	sbx_result *r;

	(void)state;
	F.exec_unauth_once = 1;
	env_up(&e);
	r = run(&e, NULL, 0);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	sbx_result_free(r);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_EXEC_START), 2);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_TASK_GET_ROUTER_ACCESS), 2);
	env_down(&e);
}

/* ===== List, reap, open ===== */

static void boot_id(char *dst, size_t n)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	dst[0] = '\0';
	if (f) {
		if (fgets(dst, (int)n, f))
			dst[strcspn(dst, "\n")] = '\0';
		fclose(f);
	}
}

static char host_name[256], boot[64], my_pid[32], my_start[32];

static void list_setup(void)
{
	unsigned long long st = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	gethostname(host_name, sizeof(host_name) - 1);
	boot_id(boot, sizeof(boot));
	snprintf(my_pid, sizeof(my_pid), "%ld", (long)getpid());
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)getpid());
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	assert_non_null(p);
	sscanf(p, " %llu", &st);
	snprintf(my_start, sizeof(my_start), "%llu", st);
	F.list[0] = (struct listed){
		"sb-expired000000000000001", 1000.5, "t1", host_name, boot, my_pid, my_start};
	snprintf(F.list[0].deadline, 32, "%lld", (long long)time(NULL) - 10);
	F.list[1] = (struct listed){
		"sb-mine00000000000000001", 900.25, "t1", host_name, boot, my_pid, my_start};
	snprintf(F.list[1].deadline, 32, "%lld", (long long)time(NULL) + 3600);
	F.list[2] = (struct listed){
		"sb-ownergone0000000000001", 800.0, "t2", host_name, boot, "2147483000", "5"};
	snprintf(F.list[2].deadline, 32, "%lld", (long long)time(NULL) + 3600);
	F.list[3] = (struct listed){
		"sb-otherhost000000000001", 700.0, "t2", "another-host", "x", "1", "1"};
	snprintf(F.list[3].deadline, 32, "%lld", (long long)time(NULL) + 3600);
	F.list_n = 4;
}

struct seen {
	char ids[8][64];
	int n;
	int reasons[8];
	int removed[8];
};

static int list_cb(const sbx_sandbox_info *info, void *payload)
{
	struct seen *s = payload;

	snprintf(s->ids[s->n++], 64, "%s", info->id);
	return 0;
}

static int reap_cb(const sbx_reap_info *info, void *payload)
{
	struct seen *s = payload;

	s->reasons[s->n] = info->reason;
	s->removed[s->n] = info->removed;
	snprintf(s->ids[s->n++], 64, "%s", info->id);
	return 0;
}

static void test_remote_modal__list_pages_by_tags(void **state)
{
	Modal__Client__SandboxListRequest *q;
	struct seen seen = {0};
	sbx_backend *b;

	(void)state;
	list_setup();
	b = open_modal();
	assert_int_equal(sbx_backend_list(b, "t1", list_cb, &seen), 0);
	assert_int_equal(seen.n, 4);
	assert_string_equal(seen.ids[0], "sb-expired000000000000001");
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_LIST), 2);
	q = UNPACK_REQ(Modal__Client__SandboxListRequest,
		       modal__client__sandbox_list_request__unpack, SBX_MODAL_SANDBOX_LIST, 0);
	assert_string_equal(q->app_id, APP_ID);
	assert_string_equal(q->environment_name, "testenv");
	assert_false(q->include_finished);
	assert_true(q->before_timestamp == 0);
	assert_int_equal(q->n_tags, 2);
	assert_string_equal(q->tags[0]->tag_name, "io.sandboxio.managed-by");
	assert_string_equal(q->tags[0]->tag_value, "sandboxio");
	assert_string_equal(q->tags[1]->tag_name, "io.sandboxio.tenant");
	assert_string_equal(q->tags[1]->tag_value, "t1");
	modal__client__sandbox_list_request__free_unpacked(q, NULL);
	/* The next page starts before the oldest one seen. */
	q = UNPACK_REQ(Modal__Client__SandboxListRequest,
		       modal__client__sandbox_list_request__unpack, SBX_MODAL_SANDBOX_LIST, 1);
	assert_true(q->before_timestamp == 700.0);
	modal__client__sandbox_list_request__free_unpacked(q, NULL);
	sbx_backend_free(b);
}

static void test_remote_modal__reap_by_owner(void **state)
{
	Modal__Client__SandboxTerminateRequest *t;
	sbx_reap_options ro = SBX_REAP_OPTIONS_INIT;
	struct seen seen = {0};
	sbx_backend *b;
	int n;

	(void)state;
	list_setup();
	b = open_modal();
	n = sbx_backend_reap(b, &ro, reap_cb, &seen);
	assert_int_equal(n, 2);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.ids[0], "sb-expired000000000000001");
	assert_int_equal(seen.reasons[0], SBX_REAP_DEADLINE_PASSED);
	assert_true(seen.removed[0]);
	assert_string_equal(seen.ids[1], "sb-ownergone0000000000001");
	assert_int_equal(seen.reasons[1], SBX_REAP_OWNER_GONE);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 2);
	t = UNPACK_REQ(Modal__Client__SandboxTerminateRequest,
		       modal__client__sandbox_terminate_request__unpack,
		       SBX_MODAL_SANDBOX_TERMINATE, 0);
	assert_string_equal(t->sandbox_id, "sb-expired000000000000001");
	modal__client__sandbox_terminate_request__free_unpacked(t, NULL);
	/* A dry run terminates nothing. */
	ro.dry_run = 1;
	assert_int_equal(sbx_backend_reap(b, &ro, NULL, NULL), 2);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 2);
	sbx_backend_free(b);
}

static void test_remote_modal__reap_at_open_is_local(void **state)
{
	Modal__Client__SandboxListRequest *q;
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	int host_tag = 0;

	(void)state;
	list_setup();
	assert_int_equal(sbx_backend_open(&b, "modal", &o), 0);
	q = UNPACK_REQ(Modal__Client__SandboxListRequest,
		       modal__client__sandbox_list_request__unpack, SBX_MODAL_SANDBOX_LIST, 0);
	for (size_t i = 0; i < q->n_tags; i++)
		if (!strcmp(q->tags[i]->tag_name, "io.sandboxio.owner-host") &&
		    !strcmp(q->tags[i]->tag_value, host_name))
			host_tag = 1;
	assert_true(host_tag);
	modal__client__sandbox_list_request__free_unpacked(q, NULL);
	sbx_backend_free(b);
}

static void test_remote_modal__open_box(void **state)
{
	sbx_backend *b;
	sbx_sandbox *s = NULL;
	sbx_result *r = NULL;
	static const char *const argv[] = {"true", NULL};

	(void)state;
	list_setup();
	b = open_modal();
	assert_int_equal(sbx_sandbox_open(&s, b, "sb-mine00000000000000001"), 0);
	assert_string_equal(sbx_policy_tenant(sbx_sandbox_policy(s)), "t1");
	assert_int_equal(sbx_sandbox_run(&r, s, argv, NULL), 0);
	assert_int_equal(r->status, SBX_RUN_EXITED);
	sbx_result_free(r);
	sbx_sandbox_detach(s);
	s = NULL;
	assert_int_equal(sbx_sandbox_open(&s, b, "sb-notours00000000000001"), SBX_ENOTFOUND);
	assert_int_equal(sbx_sandbox_open(&s, b, "sb-bad/id"), SBX_EINVALID);
	assert_null(s);
	assert_int_equal(h2_peer_count(F.peer, SBX_MODAL_SANDBOX_TERMINATE), 0);
	sbx_backend_free(b);
}

static void test_remote_modal__destroy_gone_and_images(void **state)
{
	sbx_backend *b;
	sbx_policy *p = policy();
	sbx_sandbox *s;

	(void)state;
	b = open_modal();
	s = create(b, p);
	F.terminate_not_found = 1;
	assert_int_equal(sbx_sandbox_close(s), 0); /* gone already counts as gone */
	assert_int_equal(sbx_backend_image_exists(b, "sandboxio/python:3.11"), SBX_EUNSUPPORTED);
	assert_msg("built at create");
	sbx_policy_free(p);
	sbx_backend_free(b);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_remote_modal__open_needs_token_pair),
		T(test_remote_modal__expired_credentials_at_auth),
		T(test_remote_modal__expired_credentials_at_app),
		T(test_remote_modal__open_headers_and_app),
		T(test_remote_modal__plaintext_only_to_loopback),
		T(test_remote_modal__create_definition_blocked),
		T(test_remote_modal__create_definition_allowlist),
		T(test_remote_modal__check_refusals),
		T(test_remote_modal__announced_tier),
		T(test_remote_modal__image_build_fails),
		T(test_remote_modal__image_joined_then_created),
		T(test_remote_modal__sandbox_ended_before_task),
		T(test_remote_modal__run_exit_code),
		T(test_remote_modal__run_signal),
		T(test_remote_modal__run_timeout),
		T(test_remote_modal__secrets_only_in_exec_env),
		T(test_remote_modal__cut_stream_terminates),
		T(test_remote_modal__oversize_message_terminates),
		T(test_remote_modal__cancel_terminates),
		T(test_remote_modal__stream_resumes_at_offset),
		T(test_remote_modal__kill_aborts_run),
		T(test_remote_modal__host_backstop),
		T(test_remote_modal__router_jwt_refreshed),
		T(test_remote_modal__list_pages_by_tags),
		T(test_remote_modal__reap_by_owner),
		T(test_remote_modal__reap_at_open_is_local),
		T(test_remote_modal__open_box),
		T(test_remote_modal__destroy_gone_and_images),
	};

	return cmocka_run_group_tests_name("remote_modal", tests, NULL, NULL);
}
