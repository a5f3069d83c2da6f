/*
 * sandboxio/sandbox.h: backends, sandboxes, runs and files.
 *
 * A backend is opened once ("docker", the local Docker Engine, is the
 * default); each sandbox belongs to one tenant-run and is closed with
 * sbx_sandbox_close(), which kills and removes it. Distinct sandboxes may be
 * used from distinct threads at once; one sandbox is used by one thread at a
 * time. A backend handle may be shared by threads.
 */
#ifndef SANDBOXIO_SANDBOX_H
#define SANDBOXIO_SANDBOX_H

#include "common.h"
#include "config.h"
#include "policy.h"
#include "secret.h"

SBX_BEGIN_DECL

typedef struct sbx_backend sbx_backend;
typedef struct sbx_sandbox sbx_sandbox;

/* ===== Backends ===== */

/*
 * The environment. The library reads these variables with secure_getenv(),
 * so a setuid or setgid program reads none of them, and an empty value
 * counts as unset. Each is read when it is used: at sbx_backend_open(),
 * and SANDBOXIO_CONFIG when a config is loaded.
 *
 * docker:
 *   DOCKER_HOST           the Engine's socket when opts->socket_path is
 *                         NULL. Only unix://PATH is taken: another scheme
 *                         (tcp://, ssh://) refuses the open with
 *                         SBX_EUNSUPPORTED.
 *   SANDBOXIO_INIT        the sbx-init binary when opts->init_path is NULL.
 *   SANDBOXIO_HOSTS_FILE  the hosts file that resolves allowlist names when
 *                         opts->hosts_file is NULL.
 *                         ^When opts->config is bound by a system config
 *                         file (sandboxio/config.h), SANDBOXIO_INIT and
 *                         SANDBOXIO_HOSTS_FILE refuse the open with
 *                         SBX_EDENIED (unset them): the installed init, and
 *                         the config's hosts file or the host's resolver,
 *                         are then the only ones.
 * e2b:
 *   E2B_API_KEY           the API key. ^Unset, it refuses the open with
 *                         SBX_EDENIED. A key with a space, a control or
 *                         non-ASCII byte, or over 512 bytes is SBX_EINVALID.
 *   E2B_DOMAIN            the domain of the API and of the sandboxes
 *                         (default "e2b.app"); not a domain name:
 *                         SBX_EINVALID.
 *   E2B_API_URL           the API's base URL, instead of https://api.DOMAIN.
 *   E2B_SANDBOX_URL       one base URL for every sandbox's envd, instead of
 *                         https://49983-ID.DOMAIN (a local server; each
 *                         request then names its sandbox in headers).
 *                         ^Both URLs must be https://, or http:// to a
 *                         loopback host, with no user, query or fragment:
 *                         else SBX_EINVALID.
 *   E2B_TEMPLATE          the template of a sandbox whose policy names no
 *                         image (default "base"); not a template name or
 *                         id: SBX_EINVALID.
 * modal:
 *   MODAL_TOKEN_ID, MODAL_TOKEN_SECRET
 *                         the token pair; ^unless both are set the open is
 *                         refused with SBX_EDENIED.
 *   MODAL_SERVER_URL      the API (default https://api.modal.com:443);
 *                         ^http:// is refused with SBX_EINVALID unless the
 *                         host is loopback.
 *   MODAL_ENVIRONMENT     the Modal environment (default: the account's).
 *   MODAL_MAX_THROTTLE_WAIT
 *                         seconds a server's throttle may delay one call
 *                         (default 60, at most 86400); 0: never wait, the
 *                         call fails. A value that is not a decimal number
 *                         is ignored.
 * every backend (docs/tracing.md):
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT
 *                         where spans go; ^without one (an http:// or
 *                         https:// URL) there are no spans.
 *   OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS,
 *   OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
 *   OTEL_SERVICE_NAME, OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER
 *                         the export's headers (redacted from every record),
 *                         its deadline, the service name, and off switches.
 *                         ^A malformed value turns tracing off or is
 *                         skipped; it never fails an operation.
 *                         OTEL_EXPORTER_OTLP_PROTOCOL is ignored: the body
 *                         is always JSON.
 * SANDBOXIO_CONFIG        the operator config of sbx_config_load() and
 *                         sbx_config_load_narrowed() when they are given no
 *                         path (sandboxio/config.h).
 *
 * The library reads no other variable. TRACEPARENT is not read: a caller
 * passes its value as opts->traceparent (the sandboxio command does), and
 * SANDBOXIO_BACKEND is the command's, never the library's. libcurl reads its
 * own proxy variables (https_proxy, ALL_PROXY and the like): e2b's and the
 * exporter's connections to a host other than loopback, and modal's
 * https:// ones, may go through such a proxy.
 */

/**
 * Receives one audit event (docs/audit.md): a JSON object on one line,
 * without the newline, already redacted. Called on the thread of the
 * operation it records, before that operation returns; return 0 when the
 * event is safe, non-zero to fail the operation closed (see
 * sbx_backend_options.audit_path).
 */
typedef int (*sbx_audit_cb)(const char *line, size_t len, void *payload);

typedef struct {
	unsigned int version;
	/** docker: the Engine's unix socket; NULL: $DOCKER_HOST if it is
	 *  unix://PATH, else /var/run/docker.sock. At most 107 bytes. Copied. */
	const char *socket_path;
	/** docker: host path of the sbx-init binary mounted into every sandbox;
	 *  NULL: $SANDBOXIO_INIT, else the installed default. Copied. */
	const char *init_path;
	/** Deadline of each single Engine API call that is not a run; 0: 30000. */
	uint32_t api_timeout_ms;
	/** Non-zero: do not reap this host's orphaned sandboxes at open. */
	int no_reap_at_open;
	/** Version 2. The operator config every sandbox of this backend is
	 *  merged with and bounded by (sandboxio/config.h); NULL: the built-in
	 *  config. ^The backend keeps its own reference. */
	const sbx_config *config;
	/** Version 3. Audit events (docs/audit.md) of this backend's sandboxes
	 *  are appended to this file, one JSON object per line; NULL: none.
	 *  ^It is opened O_APPEND and created 0600; ^an existing file that is
	 *  not a regular file of the effective user, or that grants group or
	 *  others any permission, refuses the open with SBX_EDENIED. ^Each
	 *  event is written whole with one write(2) and synced (fdatasync)
	 *  before the operation it records returns; ^when it cannot be, the
	 *  operation fails closed: a create removes its sandbox, a run returns
	 *  an error instead of its result. Copied. */
	const char *audit_path;
	/** Version 3. Audit events are also given to this callback; NULL: none. */
	sbx_audit_cb audit_cb;
	void *audit_payload;
	/** Version 3. A W3C traceparent ("00-<trace id>-<span id>-<flags>") that
	 *  every sandbox span of this backend becomes a child of, so that the
	 *  work joins the caller's trace (docs/tracing.md); NULL: a new trace
	 *  per sandbox. ^A malformed value is ignored, never an error. Spans
	 *  exist only when OTEL_EXPORTER_OTLP_ENDPOINT or
	 *  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. Copied. */
	const char *traceparent;
	/** Version 4. docker: a hosts(5)-format file ("ADDRESS NAME...") that
	 *  resolves the names of egress allowlists (sbx_policy_allow_host()) at
	 *  create instead of the host's resolver; ^when one is set, no name is
	 *  looked up anywhere else. NULL: $SANDBOXIO_HOSTS_FILE when set, else
	 *  the host's resolver (getaddrinfo). Copied. */
	const char *hosts_file;
} sbx_backend_options;

#define SBX_BACKEND_OPTIONS_VERSION 4
#define SBX_BACKEND_OPTIONS_INIT                                                                   \
	{                                                                                          \
		.version = SBX_BACKEND_OPTIONS_VERSION                                             \
	}

/** Fills opts with defaults. Returns: 0, SBX_EINVALID, SBX_EVERSION. */
SBX_EXTERN int sbx_backend_options_init(sbx_backend_options *opts, unsigned int version);

/**
 * Opens a backend by name: "docker" (NULL means "docker"), "e2b" or
 * "modal"; ^another name is SBX_EUNSUPPORTED, with a message listing the
 * names this build has. What each needs (the environment above):
 *  - "docker": the local Docker Engine over its unix socket, and, to
 *    create, the sandbox init (sbx-init); images are local
 *    (sbx_backend_import_image()); tier container, or gvisor where the
 *    engine has runsc.
 *  - "e2b": E2B's API and each sandbox's envd over HTTPS, with
 *    E2B_API_KEY; the policy's image names a template; tier microvm.
 *  - "modal": Modal's gRPC API, with MODAL_TOKEN_ID and
 *    MODAL_TOKEN_SECRET; the policy's image is a registry tag; tier gvisor.
 * opts->socket_path, init_path and hosts_file are docker's; e2b and modal
 * do not read them. docs/backends.md maps every policy field on each.
 *
 * ^Checks that the engine answers; a daemon that is down or a wrong socket
 * path gives SBX_EUNAVAILABLE with a message naming the socket. ^Then reaps
 * this host's orphans (sandboxes whose owner process is gone, or whose
 * deadline passed), unless opts->no_reap_at_open is set; a failure to reap
 * does not fail the open. ^A config (opts->config) whose "backends" does
 * not list this backend refuses the open with SBX_EDENIED.
 * @param[out] out written only on success.
 * Ownership: free with sbx_backend_free() after every sandbox is closed.
 * Returns: 0, SBX_EINVALID, SBX_EVERSION, SBX_EUNSUPPORTED (unknown name),
 * SBX_ENOTFOUND (the docker backend's init binary), SBX_EDENIED,
 * SBX_EUNAVAILABLE, SBX_EENGINE, SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG,
 * SBX_ENOMEM.
 */
SBX_EXTERN int
sbx_backend_open(sbx_backend **out, const char *name, const sbx_backend_options *opts);

/** Frees a backend handle. ^NULL is a harmless no-op. */
SBX_EXTERN void sbx_backend_free(sbx_backend *b);

/** The backend's name ("docker"). Lent for the handle's lifetime. */
SBX_EXTERN const char *sbx_backend_name(const sbx_backend *b);

/**
 * How many spans this backend could not export so far: the exporter's
 * queue was full, the collector did not take them, or they were still
 * queued when the backend was freed. ^Export never fails and never blocks
 * a sandbox operation; this counter is where its failures show. 0 when
 * tracing is off.
 */
SBX_EXTERN uint64_t sbx_backend_spans_dropped(const sbx_backend *b);

/* ===== Sandboxes ===== */

/**
 * Creates and starts a sandbox under a policy.
 *
 * The policy is first merged with the backend's operator config
 * (sbx_config_apply()): ^a value the policy set beyond a ceiling, an image,
 * backend or egress entry the config does not permit, or a missing tenant
 * id the config requires is refused with SBX_EDENIED naming the ceiling and
 * the config file, and nothing is created. The backend then checks that
 * it can enforce every control the merged policy asks for, and ^refuses
 * with SBX_EUNSUPPORTED what it cannot (it never accepts and ignores).
 * ^If the engine reports that it could not apply a limit, the sandbox is
 * removed and the call fails with SBX_EDENIED naming the limit. ^On any
 * failure nothing is left behind. The policy is copied.
 *
 * @param[out] out written only on success.
 * Ownership: close with sbx_sandbox_close() (kills and removes) or
 * sbx_sandbox_detach() (frees the handle and leaves the sandbox running
 * until its deadline).
 * Returns: 0, SBX_EINVALID, SBX_EUNSUPPORTED, SBX_ENOTFOUND (image, or the
 * docker backend's init binary),
 * SBX_EDENIED, SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED,
 * SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_create(sbx_sandbox **out, sbx_backend *b, const sbx_policy *p);

/**
 * Opens a handle on a sandbox that this library created earlier (from
 * sbx_sandbox_id()). ^A container not labelled as a sandboxio sandbox is
 * SBX_ENOTFOUND. Runs use the limits recorded in its labels. ^Runs on such a
 * handle go through docker exec (sbx_result.path says so): only the handle
 * that created a sandbox holds its init's run channel.
 * Returns: 0, SBX_EINVALID, SBX_ENOTFOUND, SBX_EDENIED, SBX_EENGINE,
 * SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_open(sbx_sandbox **out, sbx_backend *b, const char *id);

/** The sandbox id. Lent for the handle's lifetime. */
SBX_EXTERN const char *sbx_sandbox_id(const sbx_sandbox *s);

/** The isolation tier the sandbox actually runs at. */
SBX_EXTERN sbx_tier sbx_sandbox_tier(const sbx_sandbox *s);

/**
 * Kills and removes the sandbox and everything created for it on the host,
 * then frees the handle. ^NULL is a harmless no-op. ^The handle is freed even
 * when removal fails; the error is returned and the reaper finds what is left.
 * Returns: 0, SBX_EINVALID, SBX_ENOTFOUND, SBX_EDENIED, SBX_EUNSUPPORTED,
 * SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG,
 * SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_close(sbx_sandbox *s);

/** Frees the handle and leaves the sandbox to live until its deadline. */
SBX_EXTERN void sbx_sandbox_detach(sbx_sandbox *s);

/**
 * The policy the sandbox runs under (for an opened sandbox: as recorded in
 * its labels). Lent for the handle's lifetime.
 */
SBX_EXTERN const sbx_policy *sbx_sandbox_policy(const sbx_sandbox *s);

/**
 * Kills the sandbox now, from any thread, while another thread may be in
 * sbx_sandbox_run() on it: ^that run then returns promptly (with status
 * killed or an error) and later runs fail. The handle must still be closed.
 * This is how a caller cancels a run that prints nothing.
 * Returns: 0, SBX_EINVALID, SBX_ENOTFOUND, SBX_EDENIED, SBX_EENGINE,
 * SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_sandbox_kill(sbx_sandbox *s);

/* ===== Runs ===== */

typedef enum {
	SBX_RUN_EXITED = 0,  /* the program exited; exit_code holds its status */
	SBX_RUN_TIMEOUT = 1, /* the deadline passed; the whole process tree was killed */
	SBX_RUN_OOM = 2,     /* killed by the memory cap */
	SBX_RUN_KILLED = 3,  /* killed by a signal (term_signal) */
	SBX_RUN_ERROR = 4    /* the program could not be started (exit_code 126/127) */
} sbx_run_status;

/** Names a status: "exited", "timeout", "oom", "killed", "error". */
SBX_EXTERN const char *sbx_run_status_name(sbx_run_status st);

#define SBX_STREAM_STDOUT 1
#define SBX_STREAM_STDERR 2

/**
 * Receives output as it arrives, up to the output cap (^bytes past the cap
 * are counted but reach neither the callback nor the result). Return 0 to
 * go on, non-zero to cancel the run: ^the sandbox is killed (Docker cannot
 * kill one exec) and the run returns SBX_ECANCELED.
 *
 * ^The callback sees output already redacted (unless raw_output is set),
 * exactly the bytes the result keeps. While the sandbox has a live secret,
 * up to one window of output (the longest encoded form of one, hex at
 * twice its length, with the line breaks an encoder may put in it) is held
 * back until more arrives, so that a secret split across two chunks is
 * still caught; the rest comes at the end of the run, as it was written
 * unless it holds a whole secret.
 */
typedef int (*sbx_output_cb)(int stream, const char *data, size_t len, void *payload);

typedef struct {
	unsigned int version;
	/** Extra plain environment, "NAME=VALUE" strings, NULL-terminated; added
	 *  to the policy's. Copied. */
	const char *const *env;
	/** Working directory; NULL: the policy's. */
	const char *workdir;
	/** Bytes for the program's standard input; NULL: empty input. */
	const void *stdin_data;
	size_t stdin_len;
	/** This run's deadline; 0: the policy's run (or run_code) timeout. ^Above
	 *  the policy's value it is refused: a run can only narrow it. */
	uint64_t timeout_ms;
	/** Streaming callback, called on the calling thread; NULL: none. */
	sbx_output_cb on_output;
	void *payload;
	/** Version 2. Secrets given to this run's program as environment
	 *  variables (sandboxio/secret.h); NULL: none. Lent: must outlive the
	 *  call. ^A name that is also a plain variable of the run is refused. */
	const sbx_secrets *secrets;
	/** Version 2. Non-zero: stdout and stderr (result and callback) are
	 *  not redacted. ^By default every secret given to this sandbox's runs,
	 *  and its base64, hex and percent-encoded forms, is replaced by
	 *  "<redacted>" in them. Records (errors, audit events, spans) are
	 *  redacted regardless. */
	int raw_output;
	/** Version 2. A W3C traceparent whose span this run's span becomes a
	 *  child of (an agent's tool call, say); NULL: the sandbox's span.
	 *  ^A malformed value is ignored. Copied. */
	const char *traceparent;
	/** Version 3. Non-zero: the program runs under a pseudo-terminal in the
	 *  sandbox, in a new session whose controlling terminal it is (stdin,
	 *  stdout and stderr). ^Everything the program writes comes on stdout,
	 *  as the terminal shows it (CR LF line ends); stderr is empty. ^Input
	 *  passes the terminal's line discipline: byte 3 (^C) sends SIGINT to
	 *  its foreground process group. ^A backend other than docker refuses it
	 *  with SBX_EUNSUPPORTED. */
	int pty;
	/** Version 3. The terminal's rows and columns; 0: 24 and 80. ^Past 4096
	 *  is SBX_EINVALID, and so is either without pty. */
	unsigned int pty_rows, pty_cols;
	/** Version 3. Non-zero: the program's stdin is read from stdin_fd as it
	 *  comes (a pipe, a terminal, a socket: any fd poll(2) works on), until
	 *  its end of file or the run's end, instead of from stdin_data, which
	 *  must then be empty (^else SBX_EINVALID). The fd is lent: never
	 *  closed, and its file status flags are left as they were. ^A backend
	 *  other than docker refuses it with SBX_EUNSUPPORTED. */
	int stream_stdin;
	int stdin_fd;
	/** Version 4. Non-zero: the program runs as uid 0 and gid 0 of a
	 *  user namespace whose only uid and gid are the sandbox's own, and
	 *  nothing else changes: ^root there is the sandbox user under another
	 *  name, never the host's root; it holds no capability (all five sets
	 *  empty), runs under the same seccomp filters, with no_new_privs set,
	 *  in the same read-only root, cgroup and namespaces. The image's files
	 *  are nobody's to it; the sandbox user's files are its own. It cannot
	 *  mount, write the image or become another uid: docs/threat-model.md.
	 *  ^Its working directory is / unless workdir names one. ^A backend
	 *  other than docker refuses it with SBX_EUNSUPPORTED. */
	int as_root;
} sbx_run_options;

#define SBX_RUN_OPTIONS_VERSION 4
#define SBX_RUN_OPTIONS_INIT                                                                       \
	{                                                                                          \
		.version = SBX_RUN_OPTIONS_VERSION                                                 \
	}

/** Fills opts with defaults. Returns: 0, SBX_EINVALID, SBX_EVERSION. */
SBX_EXTERN int sbx_run_options_init(sbx_run_options *opts, unsigned int version);

/** What a run produced. Read-only for the caller; free with sbx_result_free(). */
typedef struct {
	unsigned int version;
	sbx_run_status status;
	int exit_code;	   /* exit status, or 128+signal when killed, 124 on timeout */
	int term_signal;   /* the signal that ended it, or 0 */
	char *stdout_data; /* NUL-terminated for convenience; may hold other NULs */
	size_t stdout_len;
	char *stderr_data;
	size_t stderr_len;
	int stdout_truncated; /* non-zero when more than the output cap was produced */
	int stderr_truncated;
	uint64_t stdout_total; /* bytes produced, captured or not */
	uint64_t stderr_total;
	uint64_t duration_ms;
	uint64_t cpu_user_us; /* CPU time of the run's process tree */
	uint64_t cpu_system_us;
	uint64_t max_rss_kb;	 /* largest resident set of a process in the tree */
	unsigned int limits_hit; /* SBX_HIT_* bits: which caps the run ran into */
	/** How the run reached the sandbox: an SBX_RUN_PATH_* value. ^A docker
	 *  sandbox this handle created runs over the init's channel; ^a handle
	 *  from sbx_sandbox_open(), a channel that is gone, busy (another thread
	 *  in a run) or broken, or a request past the channel's bounds uses
	 *  docker exec, and this says so. */
	unsigned int path;
} sbx_result;

#define SBX_RUN_PATH_UNKNOWN 0u /* a backend that does not say */
#define SBX_RUN_PATH_CHANNEL 1u /* the init's run channel on the attached stdio */
#define SBX_RUN_PATH_EXEC 2u	/* docker exec of the init's run mode */

#define SBX_HIT_MEMORY 1u  /* the memory cgroup killed a process (OOM) */
#define SBX_HIT_PIDS 2u	   /* a fork or thread creation was refused by the pids cap */
#define SBX_HIT_OUTPUT 4u  /* output past the cap was dropped */
#define SBX_HIT_TIMEOUT 8u /* the deadline passed */
#define SBX_HIT_DISK 16u   /* the writable space was full when the run ended */

/** Frees a result. ^NULL is a harmless no-op. */
SBX_EXTERN void sbx_result_free(sbx_result *r);

/**
 * Runs argv in the sandbox and waits for it.
 *
 * argv[0] is looked up in the sandbox's PATH. ^At the deadline the run's
 * whole process tree is killed and the status is SBX_RUN_TIMEOUT. ^Output
 * past the cap is counted and dropped, never held in memory. A run that
 * started returns 0 whatever its own status; the status is in the result.
 *
 * @param[out] out written only on success.
 * Returns: 0, SBX_EINVALID (empty argv, over 1 MiB of arguments), SBX_EVERSION
 * (the options' version), SBX_EDENIED (a secret the config does not permit),
 * SBX_ENOTFOUND, SBX_EUNSUPPORTED, SBX_ECANCELED, SBX_EENGINE,
 * SBX_EUNAVAILABLE, SBX_ETIMEOUT (the engine itself did not answer by the
 * deadline; the sandbox is then killed), SBX_ETOOBIG, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_run(sbx_result **out,
			       sbx_sandbox *s,
			       const char *const *argv,
			       const sbx_run_options *opts);

/**
 * Sets the window size of the terminal of the run in flight on s (one
 * started with sbx_run_options.pty), from any thread, while that run goes
 * on: ^the terminal takes the size and its foreground process group gets
 * SIGWINCH. A size set between runs is lost (the next run starts with its
 * own pty_rows and pty_cols).
 * Returns: 0, SBX_EINVALID (s NULL, rows or cols outside 1..4096),
 * SBX_ENOTFOUND (no run with a terminal is in flight on s), SBX_EUNSUPPORTED
 * (a backend without terminals), SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_sandbox_resize(sbx_sandbox *s, unsigned int rows, unsigned int cols);

/** What a sandbox uses now, read back from the host (sbx_sandbox_usage()).
 *  ^A field the backend cannot read is -1. */
typedef struct {
	unsigned int version;	    /* SBX_USAGE_VERSION, set by the caller */
	int64_t cpu_used_us;	    /* CPU time of all its processes since it started */
	int64_t memory_bytes;	    /* memory charged to it now (page cache included) */
	int64_t memory_peak_bytes;  /* the highest memory_bytes has been */
	int64_t memory_limit_bytes; /* its memory cap; -1 also when it has none */
	int64_t disk_used_bytes;    /* of its writable space, /workspace */
	int64_t disk_total_bytes;
} sbx_usage;

#define SBX_USAGE_VERSION 1u
#define SBX_USAGE_INIT                                                                             \
	{                                                                                          \
		.version = SBX_USAGE_VERSION                                                       \
	}

/**
 * Reads what sandbox s uses now into out, from any thread, runs in flight
 * or not. ^On the docker backend the CPU time and memory are the
 * container's cgroup (v2: cpu.stat usage_usec, memory.current, memory.peak,
 * memory.max; v1: cpuacct.usage, memory.usage_in_bytes,
 * memory.max_usage_in_bytes, memory.limit_in_bytes), read on the host and
 * never from inside the sandbox; the disk is its /workspace filesystem when
 * that is a disk of its own (statvfs on the host), else -1.
 *
 * @param[in,out] out its version set by the caller (SBX_USAGE_INIT);
 * written only on success.
 * Returns: 0, SBX_EINVALID (s or out NULL), SBX_EVERSION (out's version),
 * SBX_EUNSUPPORTED (a backend that does not read usage back, or a sandbox
 * whose init's host pid is unknown), SBX_ENOTFOUND (the sandbox's processes
 * are gone), SBX_ERROR (the cgroup could not be read).
 */
SBX_EXTERN int sbx_sandbox_usage(sbx_sandbox *s, sbx_usage *out);

/**
 * Runs source code: language "python" or "bash". The code is passed on
 * standard input, so the options' stdin must be empty.
 * Returns: as sbx_sandbox_run(), and SBX_EUNSUPPORTED for another language.
 */
SBX_EXTERN int sbx_sandbox_run_code(sbx_result **out,
				    sbx_sandbox *s,
				    const char *language,
				    const char *code,
				    size_t code_len,
				    const sbx_run_options *opts);

/* ===== Pause and resume ===== */

/** How long a sandbox may stay paused: the built-in ceiling (the operator
 * config's "ceilings.pause" replaces it), and the most any config may set. */
#define SBX_PAUSE_MAX_DEFAULT_MS 3600000ULL
#define SBX_PAUSE_MAX_MS 86400000ULL

/**
 * Pauses sandbox s: every one of its processes is frozen where it is (on
 * the docker backend, the Engine's pause: the cgroup freezer, or runsc's
 * own on the gvisor tier); its memory, files and processes are kept.
 * ^While it is paused, a run, a file transfer or a port connection on it
 * fails at once with SBX_EPAUSED, and its deadline does not count, for at
 * most max_ms in all over its life: ^the time of earlier pauses counts
 * against the bound, so pause after pause never keeps it past its
 * lifetime plus max_ms, and a pause with none left is refused with
 * SBX_EDENIED. ^Once the bound passes paused, the reaper removes it (a
 * frozen sandbox cannot end itself), and never earlier; ^its owner's
 * death still gets it reaped as any other sandbox. A run in flight keeps
 * its own deadline, which counts while the sandbox is paused.
 * ^The docker backend needs the handle that created the sandbox (it holds
 * the run channel to the init, which alone can move the sandbox's
 * deadline at the resume); another handle is refused with
 * SBX_EUNSUPPORTED. docs/backends.md says what a pause survives.
 *
 * @param max_ms the bound; 0: the sandbox's pause ceiling, the operator
 *   config's "ceilings.pause" it was created under (sbx_config_pause_ceiling_ms(),
 *   SBX_PAUSE_MAX_DEFAULT_MS, one hour, without a config); ^above
 *   SBX_PAUSE_MAX_MS (a day) is SBX_EINVALID; ^above the ceiling is
 *   SBX_EDENIED naming ceilings.pause and the config file, nothing frozen.
 * Returns: 0, SBX_EINVALID, SBX_EPAUSED (already paused), SBX_ENOTFOUND
 * (gone, or at its deadline), SBX_EUNSUPPORTED (a backend or handle that
 * cannot pause), SBX_EDENIED (above the ceiling, the bound used up, or the
 * host's record cannot be written), SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ECANCELED, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_pause(sbx_sandbox *s, uint64_t max_ms);

/**
 * Resumes a paused sandbox: its processes go on where they were, and ^its
 * deadline is moved by the time it was paused, so the life it had left at
 * the pause is what it has left now. ^A sandbox paused past its bound is
 * SBX_ENOTFOUND (the reaper removes it), one that is not paused
 * SBX_EINVALID.
 * Returns: 0, SBX_EINVALID, SBX_ENOTFOUND, SBX_EUNSUPPORTED, SBX_EDENIED,
 * SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT (a run in flight held the
 * init's channel), SBX_ECANCELED, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_resume(sbx_sandbox *s);

/**
 * The deadline sandbox s keeps now, as the sandbox itself says it (the
 * docker backend asks its init), in unix seconds.
 * @param[out] out written only on success.
 * Returns: 0, SBX_EINVALID, SBX_EPAUSED (a paused init cannot answer),
 * SBX_EUNSUPPORTED (a backend, or a handle, that cannot ask), SBX_ENOTFOUND,
 * SBX_EDENIED, SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED,
 * SBX_ENOMEM.
 */
SBX_EXTERN int sbx_sandbox_deadline(sbx_sandbox *s, int64_t *out);

/* ===== Ports ===== */

/**
 * Carries one TCP connection to a port of the sandbox's own loopback over
 * fd, and returns when it has ended (docs/protocol.md, "A port of the
 * sandbox").
 *
 * The connection is made inside the sandbox, to 127.0.0.1:port (or
 * [::1]:port when nothing listens on the first), never to another address,
 * and the sandbox's network is left as its policy made it: ^with network
 * "none" a server listening in the sandbox is reached, the sandbox still
 * reaches nothing. ^It is a run of the init's relay in the sandbox (audited
 * and traced as a run of kind "connect"), so it holds the calling thread
 * and the handle for the connection's life, under the run's deadline and
 * the sandbox's output cap.
 *
 * @param port 1..65535.
 * @param fd lent, never closed: a connected stream socket (socketpair(2)
 *   or TCP). ^What the caller writes to it goes to the server; ^what the
 *   server answers is written to it as it comes (blocking until the
 *   caller reads). ^The end of the caller's input (shutdown or close of
 *   its end) ends the connection at once; there is no half-close. ^The
 *   server's close ends it once what the server said is written out.
 *   ^Bytes past the sandbox's output cap are dropped (and the call says
 *   SBX_ETOOBIG); a write to fd that fails drops the rest.
 * @param timeout_ms the connection's deadline; 0: the policy's run timeout;
 *   ^above it is SBX_EINVALID.
 * Returns: 0 (the connection was made and has ended), SBX_EINVALID (port
 * outside 1..65535, fd negative, a deadline above the policy's),
 * SBX_ENOTFOUND (nothing listens on the port), SBX_ETOOBIG (the server
 * said more than the output cap: the rest was dropped), SBX_ETIMEOUT (the
 * deadline ended it), SBX_EUNSUPPORTED (a backend without streamed stdin),
 * SBX_ERROR (the relay ended otherwise), and sbx_sandbox_run()'s errors.
 */
SBX_EXTERN int
sbx_sandbox_connect_port(sbx_sandbox *s, unsigned int port, int fd, uint64_t timeout_ms);

/* ===== Files ===== */

/**
 * Writes a file inside the sandbox (creating or replacing it) with the given
 * permission bits. Files are moved through the sandbox's own process, so
 * the path must be writable by the sandbox user (under /workspace or /tmp).
 * Returns: 0, SBX_EINVALID, SBX_EDENIED, SBX_ENOTFOUND (no such directory),
 * SBX_ETOOBIG (no space left), SBX_EUNSUPPORTED, SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ECANCELED, SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int sbx_sandbox_write_file(
	sbx_sandbox *s, const char *path, const void *data, size_t len, unsigned int mode);

/**
 * Reads a file from the sandbox, at most max bytes (0: 64 MiB). Like run
 * output, the bytes pass the redactor: while a secret given to the
 * sandbox's runs is alive, its value and encoded forms in the file come
 * back as "<redacted>" (read a file raw with sbx_sandbox_run() of cat and
 * raw_output).
 * @param[out] out the bytes, NUL-terminated; free with sbx_free().
 * @param[out] len_out its length.
 * Returns: 0, SBX_EINVALID, SBX_ENOTFOUND, SBX_EDENIED, SBX_ETOOBIG,
 * SBX_EUNSUPPORTED, SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED,
 * SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int
sbx_sandbox_read_file(void **out, size_t *len_out, sbx_sandbox *s, const char *path, size_t max);

/* ===== Images ===== */

/**
 * Tells whether an image is present in the engine.
 * Returns: 1 present, 0 absent, or SBX_EINVALID, SBX_EUNSUPPORTED (e2b and
 * modal: their images are checked at create), SBX_EENGINE, SBX_EUNAVAILABLE,
 * SBX_ETIMEOUT, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_backend_image_exists(sbx_backend *b, const char *ref);

/**
 * Imports a root filesystem tarball as image ref (the Engine's image import;
 * no registry is involved), with the sandbox user (1000:1000) and /workspace
 * set in its config. Returns: 0, SBX_EINVALID, SBX_ENOTFOUND (no such file),
 * SBX_EENGINE, SBX_EUNAVAILABLE, SBX_EUNSUPPORTED (not the docker backend),
 * SBX_ETIMEOUT, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_backend_import_image(sbx_backend *b, const char *tar_path, const char *ref);

/* ===== Listing ===== */

typedef struct {
	const char *id;
	const char *tenant;
	const char *image;
	const char *state; /* the engine's word: "running", "exited", ... */
	int64_t created;   /* unix seconds */
	int64_t deadline;  /* unix seconds */
} sbx_sandbox_info;

/** Called once per sandbox; return non-zero to stop the listing. */
typedef int (*sbx_list_cb)(const sbx_sandbox_info *info, void *payload);

/**
 * Lists this library's sandboxes (by label), of one tenant or all (NULL).
 * ^Containers not labelled as sandboxio's are never listed.
 * Returns: 0, SBX_EINVALID, SBX_ENOTFOUND, SBX_EDENIED, SBX_EENGINE,
 * SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_backend_list(sbx_backend *b, const char *tenant, sbx_list_cb cb, void *payload);

/* ===== Reaping ===== */

typedef enum {
	SBX_REAP_OWNER_GONE = 1,      /* its owning process (same host and boot) has exited */
	SBX_REAP_DEADLINE_PASSED = 2, /* its deadline is in the past */
	SBX_REAP_OWNER_REBOOTED = 3,  /* made on this host before the last boot */
	SBX_REAP_SKIPPED = 4	      /* ours, but its labels cannot be judged: left alone */
} sbx_reap_reason;

typedef struct {
	const char *id;
	const char *tenant;
	sbx_reap_reason reason;
	int removed;	    /* 1 when removed now; 0 for a dry run, a skip or a failure */
	const char *detail; /* why it was skipped or why removal failed, else "" */
} sbx_reap_info;

typedef int (*sbx_reap_cb)(const sbx_reap_info *info, void *payload);

typedef struct {
	unsigned int version;
	const char *tenant; /* NULL: every tenant */
	int dry_run;	    /* non-zero: report, remove nothing */
} sbx_reap_options;

#define SBX_REAP_OPTIONS_VERSION 1
#define SBX_REAP_OPTIONS_INIT                                                                      \
	{                                                                                          \
		.version = SBX_REAP_OPTIONS_VERSION                                                \
	}

/**
 * Removes this library's sandboxes that nobody will close: ^those whose
 * owner process is gone (same host and boot; the owner's start time is
 * checked, so a reused pid is not mistaken for the owner), and ^those whose
 * deadline has passed. ^It never removes a sandbox that is alive and owned,
 * a detached sandbox before its deadline, or a container not labelled as
 * sandboxio's. cb (may be NULL) hears about every candidate and skip. A
 * container that vanished between the list and the removal counts as
 * removed.
 * Returns: the number removed (or, in a dry run, that would be), or
 * SBX_EINVALID, SBX_EVERSION, SBX_ENOTFOUND, SBX_EDENIED, SBX_EUNSUPPORTED,
 * SBX_EENGINE, SBX_EUNAVAILABLE, SBX_ETIMEOUT, SBX_ECANCELED, SBX_ETOOBIG,
 * SBX_ENOMEM, SBX_ERROR.
 */
SBX_EXTERN int
sbx_backend_reap(sbx_backend *b, const sbx_reap_options *opts, sbx_reap_cb cb, void *payload);

SBX_END_DECL

#endif
