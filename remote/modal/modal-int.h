/*
 * remote/modal/modal-int.h: the names the modal backend (remote/modal/modal.c)
 * puts on the wire, shared with its tests: gRPC method paths, the app every
 * sandbox lives in, the headers every control-plane call carries.
 */
#ifndef SBX_REMOTE_MODAL_MODAL_INT_H
#define SBX_REMOTE_MODAL_MODAL_INT_H

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

#endif
