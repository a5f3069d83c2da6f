/*
 * remote/modal/modal-int.h: the names the modal backend (remote/modal/)
 * puts on the wire, shared with its tests: gRPC method paths, the app every
 * sandbox lives in, the headers every control-plane call carries; and what
 * the backend's files share: its state and a sandbox's box, the
 * control-plane client (client.c), the image build (image.c), a sandbox's
 * life (sandbox.c) and runs (run.c), whose ops open.c's table holds.
 */
#ifndef SBX_REMOTE_MODAL_MODAL_INT_H
#define SBX_REMOTE_MODAL_MODAL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <protobuf-c/protobuf-c.h>
#include <sandboxio.h>

#include "core/backend-int.h"
#include "remote/modal/grpc-int.h"

#define SBX_MODAL_CP "/modal.client.ModalClient/"
#define SBX_MODAL_TCR "/modal.task_command_router.TaskCommandRouter/"

#define SBX_MODAL_AUTH_TOKEN_GET SBX_MODAL_CP "AuthTokenGet"
#define SBX_MODAL_APP_GET_OR_CREATE SBX_MODAL_CP "AppGetOrCreate"
#define SBX_MODAL_IMAGE_GET_OR_CREATE SBX_MODAL_CP "ImageGetOrCreate"
#define SBX_MODAL_IMAGE_JOIN_STREAMING SBX_MODAL_CP "ImageJoinStreaming"
#define SBX_MODAL_SANDBOX_CREATE SBX_MODAL_CP "SandboxCreate"
#define SBX_MODAL_SANDBOX_GET_TASK_ID SBX_MODAL_CP "SandboxGetTaskId"
#define SBX_MODAL_SANDBOX_TERMINATE SBX_MODAL_CP "SandboxTerminate"
#define SBX_MODAL_SANDBOX_LIST SBX_MODAL_CP "SandboxList"
#define SBX_MODAL_TASK_GET_ROUTER_ACCESS SBX_MODAL_CP "TaskGetCommandRouterAccess"

#define SBX_MODAL_EXEC_START SBX_MODAL_TCR "TaskExecStart"
#define SBX_MODAL_EXEC_STDIO_READ SBX_MODAL_TCR "TaskExecStdioRead"
#define SBX_MODAL_EXEC_STDIN_WRITE SBX_MODAL_TCR "TaskExecStdinWrite"
#define SBX_MODAL_EXEC_WAIT SBX_MODAL_TCR "TaskExecWait"

#define SBX_MODAL_APP_NAME "sandboxio"
#define SBX_MODAL_BUILDER_VERSION "2024.10"
#define SBX_MODAL_DEFAULT_SERVER "https://api.modal.com:443"

/*
 * x-modal-client-type: Modal's ClientType enum has no value for a C client.
 * 8 is CLIENT_TYPE_LIBMODAL_JS: this backend follows the contract of the
 * libmodal clients, not the Python one (the token pair and an
 * x-modal-auth-token on every call, exec only through the task command
 * router, x-modal-libmodal-version naming the client), and of the two it
 * was the JavaScript SDK (pinned in tests/sdk) whose behaviour was read
 * and matched. x-modal-libmodal-version ("sandboxio/<version>") tells the
 * service which client it really is.
 */
#define SBX_MODAL_CLIENT_TYPE "8"
#define SBX_MODAL_CLIENT_VERSION "1.0.0"

/* The initial metadata of SandboxCreate in which a compatible server of
 * ours announces the tier it really gives (real Modal: gVisor). */
#define SBX_MODAL_TIER_HEADER "sandboxio-tier"

/* ===== What the backend's files share ===== */

#define SBX_MODAL_ID_MAX 128	  /* longest sandbox, task, app or image id accepted */
#define SBX_MODAL_TOKEN_MAX 16384 /* longest auth token or JWT accepted */

struct sbx__modal {
	struct sbx__grpc_chan *cp;
	char *server_url;
	int loopback;
	char *token_id;
	char *token_secret;
	char *env_name;
	char app_id[SBX_MODAL_ID_MAX + 1];
	uint64_t api_timeout_ms;
	uint64_t max_throttle_ms;
	pthread_mutex_t lock; /* the auth token */
	char *auth_token;
	time_t auth_refresh_at;
};

struct sbx__modal_box {
	char *id;
	char *task_id;
	sbx_policy *policy; /* the per-run caps */
	pthread_mutex_t lock;
	char *jwt;
	struct sbx__grpc_chan *router;
	int killed;
};

/* Unpacks a response or records that it could not be read. */
#define SBX_MODAL_UNPACK(type, fn, resp, len, method)                                              \
	({                                                                                         \
		type *_r = fn(NULL, len, resp);                                                    \
		free(resp);                                                                        \
		if (!_r)                                                                           \
			sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,                           \
				       "modal: %s: the answer is not a valid message", method);    \
		_r;                                                                                \
	})

/* client.c: small helpers. */
/* Wipes and frees s; returns NULL. */
char *sbx__modal_wipe_free(char *s);
int sbx__modal_valid_id(const char *s);
/* Records "out of memory"; returns SBX_ENOMEM. */
int sbx__modal_nomem(void);
/* A message packed after the gRPC prefix; in locked memory when secret. */
uint8_t *sbx__modal_pack(const ProtobufCMessage *msg, size_t *len, int secret);
const char *sbx__modal_status_name(int st);
/* "localhost", "127.0.0.1" or "::1" as the host of scheme://host[:port]. */
int sbx__modal_url_is_loopback(const char *url);
uint64_t sbx__modal_deadline_in(uint64_t ms);

/* client.c: the control plane. */
/* The x-modal-auth-token to send, fetched or refreshed at half its life. */
int sbx__modal_auth_token(struct sbx__modal *m, uint64_t deadline, char **out);
/* One control-plane call with the auth token. st is always filled. */
int sbx__modal_cp_call(struct sbx__modal *m,
		       const char *method,
		       const ProtobufCMessage *req,
		       uint64_t deadline,
		       const char *capture,
		       uint8_t **resp,
		       size_t *resp_len,
		       struct sbx__grpc_status *st);
/* SandboxTerminate; a sandbox already gone counts as terminated. */
int sbx__modal_terminate(struct sbx__modal *m, const char *sandbox_id);
/* Terminates after a failure, keeping the failure as the error. */
int sbx__modal_terminate_keep(struct sbx__modal *m, const char *sandbox_id, int rc);

/* image.c: the image of a sandbox, built from "FROM <image>". */
int sbx__modal_image_build(struct sbx__modal *m,
			   const char *image,
			   uint64_t deadline,
			   char *image_id);
int sbx__modal_op_image_exists(void *state, const char *ref);

/* sandbox.c: a sandbox's life, listing and reaping. */
/* The router's address and JWT (and a channel to it when chan is set). */
int sbx__modal_router_access(struct sbx__modal *m,
			     const char *task_id,
			     uint64_t deadline,
			     char **jwt,
			     struct sbx__grpc_chan **chan);
int sbx__modal_op_create(
	void *state, const sbx_policy *p, void **box_out, char **id_out, sbx_tier *tier_out);
int sbx__modal_op_open_box(
	void *state, const char *id, void **box_out, sbx_policy *p, sbx_tier *tier_out);
void sbx__modal_op_release(void *state, void *box);
int sbx__modal_op_destroy(void *state, void *box);
int sbx__modal_op_kill(void *state, void *box);
int sbx__modal_op_list(void *state, const char *tenant, sbx_list_cb cb, void *payload);
int sbx__modal_op_reap_list(
	void *state, const char *tenant, int only_local, sbx__reap_fn fn, void *arg);
int sbx__modal_op_reap_remove(void *state, const struct sbx__reap_item *item);

/* run.c: runs. */
int sbx__modal_op_run(void *state, void *box, const struct sbx__run_req *req, sbx_result *res);

#endif
