/*
 * server/server-int.h: what the files of the E2B-compatible server of
 * `sandboxio serve --api e2b` share: its state, and the functions one file
 * offers the others (named sbxs_*; everything else is static). What the
 * command (cli/serve.c) uses of the server is server/server.h.
 *
 * The server gives E2B's REST control plane and envd's process and file
 * endpoints on one libmicrohttpd listener, backed by the Docker engine
 * through the public API alone (sbx_sandbox_create/run/close,
 * write_file/read_file). Wire facts follow E2B's spec, its infra and the JS
 * SDK (e2b 2.51.0); each route says where it differs. One job a file, each
 * using only the files listed below it:
 *   server.c         the server's life (socket, start, sweeps, stop) and
 *                    its routes: routing, auth and body bounds of a request
 *   rest.c           E2B's REST control plane: its routes, one sandbox
 *   rest-create.c    REST: a NewSandbox and its creation
 *   rest-list.c      REST: listing, E2B's filters and pages
 *   rest-json.c      REST: how a sandbox is shown
 *   rest-metrics.c   REST: a sandbox's metrics, from the library's usage
 *   rest-net.c       E2B's network fields as the library's allowlist
 *   envd.c           envd's routes: health, files, and process calls
 *   fs.c             envd's filesystem service
 *   watch.c          envd's filesystem service: WatchDir
 *   process.c        envd's process service: the requests
 *   run.c            envd's process service: a command's run and stream
 *   stdin.c          envd's process service: stdin streamed to a command
 *   pty.c            envd's process service: a command's terminal
 *   interp.c         the code interpreter's API (port 49999): its
 *                    routes and code contexts
 *   interp-cell.c    the code interpreter: a cell streamed as JSON lines
 *   port.c           every other port of a sandbox, proxied over the
 *                    library's sbx_sandbox_connect_port()
 *   port-http.c      the proxy's readers of a response (port-int.h)
 *   paths.c          E2B's paths and user mapped onto a sandbox
 *   sign.c           signed /files URLs, and gzip bodies
 *   box.c            the sandboxes ("boxes"): registry, references,
 *                    retirement, the busy slot, the timeout sweep
 *   http.c           the transport: the daemon, connections, each
 *                    request's body, and the replies both APIs use; it
 *                    knows no route (server.c gives it sbxs_handlers)
 *   clock.c          timed waits on the monotonic clock
 *
 * Threads: libmicrohttpd runs a thread per connection, so a handler may
 * block (a create takes a second or two; a stream waits for output), and
 * each command runs on a worker thread of its own. The state of the server
 * (the sandboxes, their processes, every queue) is guarded by one mutex,
 * srv->mu, never held across a library call; a function named *_locked
 * expects it held. The library's util/ helpers (util/base64.h,
 * util/json-text.h) are shared with the command; its other internals are
 * not.
 */
#ifndef SBX_SERVER_SERVER_INT_H
#define SBX_SERVER_SERVER_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <microhttpd.h>

#include <sandboxio.h>

#include "util/time.h" /* sbx__mono_ms(), the clock of every deadline */

#define ENVD_PORT 49983
#define INTERP_PORT 49999 /* the code interpreter's API (server/interp.c) */
#define MAX_BOXES 128
#define REST_BODY_MAX (64u << 10)
#define START_BODY_MAX ((1u << 20) + 5)
#define UNARY_BODY_MAX (23u << 20) /* one SendInput of the whole stdin, base64 */
#define EXEC_BODY_MAX (1u << 20)   /* one /execute of the code interpreter */
#define ISECRETS_MAX 64		   /* cells of a box given env_vars (server/interp-cell.c) */
#define IVALS_MAX 256		   /* env_vars values a box keeps (server/interp-cell.c) */
#define ICTX_MAX 32		   /* contexts a box keeps handles of (server/interp.c) */
#define FILE_MAX (64u << 20)
#define FILE_BODY_MAX (FILE_MAX + (64u << 10))
#define CHUNK_MAX (32u << 10) /* output per data event, and per write of a stream */
#define PATH_MAX_LEN 4096
#define DISCARD_MAX (1u << 20) /* body bytes read and dropped after a refusal */
#define URI_MAX 8192	       /* a request target kept as sent (http.c) */

/* ===== State ===== */

/* A Connect frame: flags, uint32 BE length, JSON. */
struct sbxs_frame {
	struct sbxs_frame *next;
	size_t len;
	char data[];
};

enum sbxs_cancel { SBXS_CANCEL_NONE = 0, SBXS_CANCEL_GONE, SBXS_CANCEL_SIGNAL };

struct sbxs_box;

/* One Process.Start: its request, its run, and the frames for its client. */
struct sbxs_proc {
	struct sbxs_proc *next; /* in box->procs while it waits or runs */
	struct sbxs_box *box;	/* a reference */
	int refs;		/* the worker's and the response's */
	unsigned pid;
	char *tag;
	json_t *config; /* ProcessConfig as given, for List */
	char **argv, **env;
	char *cwd;
	int as_root; /* envd's user "root": a run as the sandbox's root */
	int want_stdin, stdin_closed;
	/* A terminal (server/pty.c): its size (the latest asked), one asked
	 * while the run was opening (applied at its first output), and the
	 * socket pair of its input: [0] the run's streamed stdin, [1] what
	 * SendInput writes (made when pty_open); resizing counts resizes
	 * under way, which the run's end waits for (so none lands on a later
	 * run of the sandbox). */
	int pty, resize_pending, pty_open, resizing;
	unsigned rows, cols;
	int pty_fd[2];
	char *in; /* stdin sent before the command started */
	size_t in_len;
	char fifo[40];	   /* the input FIFO in the sandbox (server/stdin.c) */
	int fifo_ready;	   /* made: later input goes through it */
	int in_busy;	   /* a write to the FIFO is under way */
	uint64_t deadline; /* monotonic ms; 0: none given */
	uint64_t run_end;  /* monotonic ms: the run's own deadline, once started */
	size_t dropped;	   /* output bytes dropped past run_end (server/run.c) */
	uint64_t keepalive_ms;
	int fd; /* the client's socket, to notice it going away */
	pthread_cond_t cv;
	struct sbxs_frame *qh, *qt, *cur;
	size_t qbytes, cur_off;
	uint64_t last_sent;
	int started, run_done, eos, reader_done;
	enum sbxs_cancel cancel;
	/* Process.Connect: a follower is a stream of another process's events
	 * from its connect on (leader: a reference; not in box->procs); a
	 * process lists its followers (weak: each unlinks itself). */
	struct sbxs_proc *leader, *followers, *next_follower;
};

/* A code context's handle a box keeps (server/interp.c). */
struct sbxs_ictx {
	struct sbxs_ictx *next;
	sbx_context *h;
	char *cwd; /* as created here; NULL: not known */
};

struct sbxs_box {
	struct sbxs_server *srv;
	int refs, retired, busy;
	pthread_cond_t cv; /* busy, stdin and retire changes */
	sbx_sandbox *s;
	char id[21];
	char token[65];
	char traffic[65];   /* the traffic access token of its ports (server/port.c) */
	int public_traffic; /* network.allowPublicTraffic true: no traffic token */
	int secure;
	int flavour; /* made from the server's e2b_image (user `user`, root on request) */
	char *template_id;
	json_t *metadata, *network;
	int internet; /* allow_internet_access: -1 not given */
	/* Paused (server/pause.c): the pause holds the busy slot, end_mono is
	 * the pause bound, and left_ms the timeout it has once resumed (a
	 * timeout set while paused moves that, never the bound); paused_ms is
	 * the time paused over its life, which the bound counts, as the
	 * library's does. */
	int paused, auto_pause;
	uint64_t paused_mono, left_ms, paused_ms;
	int64_t started_wall;
	uint64_t started_mono, end_mono, life_mono; /* ms */
	uint64_t run_timeout_ms;
	int64_t cpu_milli, memory, disk;
	const char *tier;
	unsigned next_pid;
	struct sbxs_proc *procs;
	int watches; /* WatchDir streams running (server/watch.c) */
	/* the CPU time read at the last metrics request, and when (rest-metrics.c) */
	int64_t metrics_cpu_us;
	uint64_t metrics_mono;
	struct sbxs_ictx *ictxs;	     /* code contexts' handles (server/interp.c) */
	sbx_secrets *isecrets[ISECRETS_MAX]; /* cells' env_vars, redacted while it lives */
	size_t n_isecrets;
	char *ivals[IVALS_MAX]; /* their values, for the stream's joins */
	size_t ival_len[IVALS_MAX];
	size_t n_ivals;
};

struct sbxs_handlers;

struct sbxs_server {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* workers and live counts */
	sbx_backend *b;
	char *default_image;
	char *e2b_image; /* NULL: none (struct sbxs_config) */
	int no_root;
	char *key;
	size_t key_len;
	uint64_t max_timeout_s;
	uint64_t pause_max_ms; /* how long a sandbox may stay paused */
	sbx_tier min_tier;
	unsigned idle_timeout_s, auth_timeout_s;
	uint64_t transfer_ms; /* deadline of one file transfer */
	void (*warn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	struct sbxs_conn *conns; /* every connection (http.c) */
	struct MHD_Daemon *mhd;
	const struct sbxs_handlers *handlers; /* the routes (http.c calls them) */
	struct sbxs_box *boxes[MAX_BOXES];
	size_t nboxes;
	int creating, stopping, workers, live;
};

enum sbxs_route { SBXS_ROUTE_REST = 1, SBXS_ROUTE_ENVD, SBXS_ROUTE_INTERP, SBXS_ROUTE_PORT };

/* One HTTP request, from its headers to its completion. */
struct sbxs_req {
	enum sbxs_route route;
	const char *method;   /* libmicrohttpd's, for the request's life */
	struct sbxs_box *box; /* envd: a reference */
	char *body;
	size_t len, cap, limit, discarded;
	int too_big, answered;
	char *uri;     /* the request target as sent (http.c; NULL: none kept) */
	int stream;    /* the body goes to handlers->body as it comes */
	unsigned port; /* a sandbox port's route (server/port.c) */
	void *conn;    /* its connection into the sandbox (server/port.c) */
};

/* A NewSandbox as parsed (its values point into the request's JSON). */
struct sbxs_create_req {
	const char *template_id;
	json_int_t timeout;
	int has_timeout;
	json_t *metadata, *env;
	int secure, internet, public_traffic;
	int auto_pause; /* autoPause true: paused, not killed, at its timeout */
	json_t *allow_out, *deny_out;
};

/* ===== clock.c: timed waits ===== */

/* A condition variable that waits on the monotonic clock. */
void sbxs_cond_init(pthread_cond_t *cv);
void sbxs_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t until_ms);

/* ===== http.c: the transport, requests and replies ===== */

const char *sbxs_header(struct MHD_Connection *c, const char *name);
const char *sbxs_query(struct MHD_Connection *c, const char *name);
/* A JSON string of any bytes (the messages quote untrusted input). */
json_t *sbxs_jtext(const char *s);
/* Queues r (NULL: MHD_NO) with status and drops the caller's reference. */
enum MHD_Result sbxs_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r);
struct MHD_Response *sbxs_json_response(json_t *j);
enum MHD_Result sbxs_reply_json(struct MHD_Connection *c, unsigned status, json_t *j);
enum MHD_Result sbxs_reply_empty(struct MHD_Connection *c, unsigned status);
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...);
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_envd_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...);
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_connect_error(struct MHD_Connection *c, const char *code, const char *fmt, ...);
struct sbxs_frame *sbxs_frame_raw(int flags, const char *json, size_t n);
struct sbxs_frame *sbxs_frame_json(int flags, json_t *j);
struct sbxs_frame *sbxs_frame_eos(const char *code, const char *msg);
enum MHD_Result sbxs_stream_error(struct MHD_Connection *c, const char *code, const char *msg);
/* Whether v is an object of strings; an array of strings. */
int sbxs_string_map(json_t *v);
int sbxs_string_array(json_t *v);

/* What the transport asks of the routes above it (server.c), which it
 * calls through these pointers and knows nothing else of. */
struct sbxs_handlers {
	/* A request's headers are in: route it, authenticate it and bound
	 * its body (rq->limit); a reply queued already sets rq->answered. */
	enum MHD_Result (*headers)(struct sbxs_server *srv,
				   struct MHD_Connection *c,
				   struct sbxs_req *rq,
				   const char *url);
	/* A piece of the body of a request whose route set rq->stream
	 * (within its bound): handed on, not kept. */
	enum MHD_Result (*body)(struct sbxs_server *srv,
				struct MHD_Connection *c,
				struct sbxs_req *rq,
				const char *data,
				size_t len);
	/* Its body is in (rq->too_big: it passed its bound): the reply. */
	enum MHD_Result (*request)(struct sbxs_server *srv,
				   struct MHD_Connection *c,
				   struct sbxs_req *rq,
				   const char *method,
				   const char *url);
	/* It is done with: what the routes hold of it goes (before its body
	 * is wiped and freed). */
	void (*done)(struct sbxs_req *rq);
};

/* Starts libmicrohttpd on listen_fd (an AF_INET6 socket with ipv6) with
 * the routes h (which outlive it): a thread per connection, at most
 * max_conns connections and max_client from one address, and the short
 * timeout of the unauthenticated (auth_timeout_s). -1 when it cannot. */
int sbxs_http_start(struct sbxs_server *srv,
		    const struct sbxs_handlers *h,
		    int listen_fd,
		    int ipv6,
		    unsigned max_conns,
		    unsigned max_client,
		    unsigned auth_timeout_s);
/* Stops it, joining every connection thread. */
void sbxs_http_stop(struct sbxs_server *srv);
/* A connection that has sent one authenticated request gets the long idle
 * timeout and leaves the sweep below. */
void sbxs_http_authenticated(struct sbxs_server *srv, struct MHD_Connection *c);
/* Shuts down the connections that sent no authenticated request within
 * --auth-timeout of their accept; called with each sweep. */
void sbxs_conns_sweep(struct sbxs_server *srv);

/* ===== box.c: sandboxes and their ids ===== */

int sbxs_random_hex(char *out, size_t bytes);
struct sbxs_box *sbxs_box_new(struct sbxs_server *srv);
/* Registers b (mu held) under a fresh id; -1: no free id. */
int sbxs_register_locked(struct sbxs_server *srv, struct sbxs_box *b);
void sbxs_box_free(struct sbxs_box *b);
/* Drops a reference; the last one closes the sandbox (mu not held). */
void sbxs_box_unref(struct sbxs_box *b);
/* The box with this id, with a reference for the caller; NULL: none. */
struct sbxs_box *sbxs_box_get(struct sbxs_server *srv, const char *id);
/* Takes b out of the registry (mu held); see box.c for *kill and the
 * reference the caller then drops. */
int sbxs_retire_locked(struct sbxs_box *b, int *kill);
void sbxs_retire(struct sbxs_box *b);
/* The busy slot: taken (0), the box ended first (-1) or until (monotonic
 * ms, 0: none) passed first (-2); given back with the library's result,
 * which retires a box the library killed. */
int sbxs_box_acquire(struct sbxs_box *b, uint64_t until);
void sbxs_box_release(struct sbxs_box *b, int rc);
/* Retires the boxes whose timeout has passed; called with each sweep. */
void sbxs_boxes_sweep(struct sbxs_server *srv);

/* ===== pause.c: pause and resume ===== */

/* Pauses box b (its caller holds a reference). Returns 0, or an HTTP
 * status (404, 409 paused already or a command in flight, 500) with err. */
int sbxs_box_pause(struct sbxs_box *b, char *err, size_t esize);
/* Resumes b if it is paused (else does nothing). Returns 0, or 404 (past
 * its bound: retired) or 500 with err. */
int sbxs_box_resume(struct sbxs_box *b, char *err, size_t esize);
/* The sweep's pause of a box made with autoPause; 1 when it was paused. */
int sbxs_box_auto_pause(struct sbxs_box *b);
/* Marks the server stopping and retires every box. */
void sbxs_boxes_stop(struct sbxs_server *srv);

/* ===== rest*.c: the REST control plane ===== */

enum MHD_Result sbxs_rest(struct sbxs_server *srv,
			  struct MHD_Connection *c,
			  struct sbxs_req *rq,
			  const char *method,
			  const char *url);
/* POST /sandboxes; GET /sandboxes (v2: /v2/sandboxes, its query). */
enum MHD_Result
sbxs_rest_create(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq);
enum MHD_Result sbxs_rest_list(struct sbxs_server *srv, struct MHD_Connection *c, int v2);
/* GET /sandboxes/{id}/metrics (rest-metrics.c). */
enum MHD_Result
sbxs_rest_metrics(struct sbxs_server *srv, struct MHD_Connection *c, const char *id);
/* Unix ms as an RFC 3339 JSON string. */
json_t *sbxs_rfc3339(int64_t ms);
/* A box as Sandbox (create, connect); as ListedSandbox, or SandboxDetail
 * with detail (mu held). */
json_t *sbxs_box_sandbox_json(const struct sbxs_box *b);
json_t *sbxs_box_listed_json(const struct sbxs_box *b, int detail);
/* Whether ref is an image reference of the Engine's grammar; -1 with why. */
int sbxs_image_ref_ok(const char *ref, char *why, size_t wsize);
/* Appends a name to the list of NewSandbox fields this server cannot honour. */
void sbxs_add_bad(char *bad, size_t size, const char *what);
/* NewSandbox.network into cr: a wrong type is -1 with err; a field that
 * cannot be honoured is named in bad. */
int sbxs_parse_network(
	json_t *net, struct sbxs_create_req *cr, char *bad, size_t bsize, char *err, size_t esize);
/* cr's network as p's allowlist, and *echo the network a GET shows; -1 with
 * err when it cannot be expressed. */
int sbxs_apply_network(
	const struct sbxs_create_req *cr, sbx_policy *p, json_t **echo, char *err, size_t esize);

/* ===== interp.c, interp-cell.c: the code interpreter (port 49999) ===== */

/* The body bound of a request to url. */
size_t sbxs_interp_limit(const char *url);
enum MHD_Result sbxs_interp(struct sbxs_server *srv,
			    struct MHD_Connection *c,
			    struct sbxs_req *rq,
			    const char *method,
			    const char *url);
/* interp-cell.c: POST /execute, a cell and its stream. */
enum MHD_Result
sbxs_interp_execute(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq);
/* Its errors: plain text, as the code interpreter's own server sends. */
enum MHD_Result __attribute__((format(printf, 3, 4)))
sbxs_interp_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...);
/* The HTTP status of a library code; the 502 of a box that ended before
 * its busy slot came free. */
unsigned sbxs_interp_status(int rc);
enum MHD_Result sbxs_interp_slot_refused(struct MHD_Connection *c, struct sbxs_box *b);
/* E2B's language names as the library's ("python", "bash"; NULL: not
 * served); whether s[0..n) is a context id of the library's form. */
const char *sbxs_interp_language(const char *s);
int sbxs_interp_id_ok(const char *s, size_t n);
/* The box's handles of contexts (mu held for the _locked ones). */
struct sbxs_ictx *sbxs_ictx_find_locked(struct sbxs_box *b, const char *name);
int sbxs_ictx_count_locked(struct sbxs_box *b);
void sbxs_ictx_free(struct sbxs_ictx *x);
/* The handle of context name (in the busy slot): the box's, or opened, or
 * with lang a default one created. 0 (the box keeps it), 1 (past ICTX_MAX:
 * the caller frees it), or a library code. */
int sbxs_ictx_get(struct sbxs_box *b, const char *name, const char *lang, sbx_context **out);

/* ===== port.c: the sandbox's other ports, proxied ===== */

/* A port in plain digits, 1..65535; 0: not one. */
unsigned sbxs_port_parse(const char *s);
/* Routes a request to port of rq->box: its access and its bounds. */
enum MHD_Result sbxs_port_headers(struct sbxs_server *srv,
				  struct MHD_Connection *c,
				  struct sbxs_req *rq,
				  unsigned port);
/* A piece of its body, sent on as it comes. */
enum MHD_Result sbxs_port_body(struct sbxs_server *srv,
			       struct MHD_Connection *c,
			       struct sbxs_req *rq,
			       const char *data,
			       size_t len);
/* The whole request is in: the response. */
enum MHD_Result
sbxs_port_request(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq);
/* The request is done with: its connection goes. */
void sbxs_port_done(struct sbxs_req *rq);
/* The 413 of a body past its bound. */
enum MHD_Result sbxs_port_too_big(struct MHD_Connection *c, struct sbxs_req *rq);

/* ===== paths.c: E2B's paths and user ===== */

/* E2B's path in the sandbox as a clean absolute path here; -1: unusable. */
int sbxs_map_path(const char *in, char *out, size_t size);
/* Whether a user name is E2B's default one (or none): the only one of
 * envd's file endpoints here. */
int sbxs_user_ok(const char *name);
/* The user a command of box b runs as: E2B's default (or none), or "root"
 * in a sandbox of the e2b flavour unless the server refuses root
 * (*as_root set). -1 with err, naming what would allow it, for any other. */
int sbxs_run_user(
	const struct sbxs_box *b, const char *name, int *as_root, char *err, size_t esize);
/* In the e2b flavour, what envd gives a command of its user: HOME, USER and
 * LOGNAME, where the request sets none of them, and for root the working
 * directory /root where it names none. 0, or -1 when memory ran out. */
int sbxs_user_defaults(const struct sbxs_box *b, struct sbxs_proc *pr);

/* ===== sign.c: signed URLs and gzip bodies ===== */

/*
 * Whether sig signs a /files request (path and user as given in its query,
 * op "read" or "write") with token, unexpired at now_s when exp (unix
 * seconds, as given) is set; an empty path signs nothing. 0, or -1 with err.
 */
int sbxs_signature_check(const char *path,
			 const char *op,
			 const char *user,
			 const char *token,
			 const char *sig,
			 const char *exp,
			 int64_t now_s,
			 char *err,
			 size_t esize);
/* Inflates one gzip member in[0..len) into *out (malloc'd, NUL-terminated)
 * of at most max bytes. 0; -1 malformed, truncated or trailed by more;
 * -2 larger than max; -3 out of memory. */
int sbxs_gunzip(const char *in, size_t len, size_t max, char **out, size_t *out_len);

/* ===== envd.c, process.c, run.c: envd ===== */

/* One file part of a multipart/form-data body (pointers into the body). */
struct sbxs_upload {
	const char *name; /* the form's filename, or NULL */
	size_t name_len;
	const char *data;
	size_t len;
};

/*
 * multipart/form-data with "file" parts (RFC 7578) from a whole body in
 * memory; content_type is the request's header (its boundary parameter).
 * Pure: bytes in, parts out. Returns the number of parts in ups (at most
 * max), or -1 with err.
 */
int sbxs_parse_multipart(const char *content_type,
			 const char *body,
			 size_t len,
			 struct sbxs_upload *ups,
			 int max,
			 char *err,
			 size_t esize);

enum MHD_Result sbxs_envd(struct sbxs_server *srv,
			  struct MHD_Connection *c,
			  struct sbxs_req *rq,
			  const char *method,
			  const char *url);
/* The user of an "Authorization: Basic base64(user:)" header into out
 * (empty when none); -1 for a malformed header. */
int sbxs_basic_user(struct MHD_Connection *c, char *out, size_t size);
/* The first key of obj not in allowed (NULL-terminated), or NULL. */
const char *sbxs_unknown_key(json_t *obj, const char *const *allowed);
/* filesystem.Filesystem's unary calls (server/fs.c). */
enum MHD_Result sbxs_envd_fs(struct sbxs_server *srv,
			     struct MHD_Connection *c,
			     struct sbxs_req *rq,
			     const char *method);
/* filesystem.Filesystem/WatchDir, a server stream (server/watch.c). */
enum MHD_Result
sbxs_envd_watch(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq);
enum MHD_Result
sbxs_envd_start(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq);
/* process.Process/Connect: a stream of a running process's events. */
enum MHD_Result
sbxs_envd_connect(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq);
enum MHD_Result sbxs_envd_unary(struct sbxs_server *srv,
				struct MHD_Connection *c,
				struct sbxs_req *rq,
				const char *method);
void sbxs_proc_free(struct sbxs_proc *pr);
void sbxs_proc_unref(struct sbxs_proc *pr);
/* Queues a frame for the client and a copy for each follower (mu held);
 * NULL is a no-op. */
void sbxs_push_locked(struct sbxs_proc *pr, struct sbxs_frame *f);
/* Ends the streams of a process's followers (mu held). */
void sbxs_followers_end_locked(struct sbxs_proc *pr);
/* Stops a process: a waiting one is dropped, a running one killed. */
void sbxs_cancel_proc(struct sbxs_proc *pr, enum sbxs_cancel why);
/* stdin.c: the wrapper a command with streamed stdin runs under; the
 * FIFOs made for it (in the busy slot: 0, or -1 / a library code); one
 * write of input, or the end of it (mu not held; 0, or -1 with err). */
extern const char sbxs_stdin_wrap[];
int sbxs_stdin_prepare(struct sbxs_proc *pr, uint64_t timeout_ms);
int sbxs_stdin_write(
	struct sbxs_proc *pr, const void *data, size_t n, int close, char *err, size_t esize);
/* pty.c: a command's terminal. PTY ({"size":{"cols","rows"}}) into rows
 * and cols (0: the default, 24 by 80); UpdateRequest's keys and its pty
 * (1: given, 0: none); ProcessInput, exactly one of stdin and pty, its
 * bytes decoded into *out (malloc'd, at most max; *is_pty says which).
 * Pure; -1 with err. */
int sbxs_pty_parse(json_t *v, unsigned *rows, unsigned *cols, char *err, size_t esize);
int sbxs_pty_parse_update(json_t *j, unsigned *rows, unsigned *cols, char *err, size_t esize);
int sbxs_pty_parse_input(json_t *in,
			 size_t max,
			 unsigned char **out,
			 size_t *n,
			 int *is_pty,
			 char *err,
			 size_t esize);
/* The socket pair of a terminal's input (at Start): 0, or -1. */
int sbxs_pty_open(struct sbxs_proc *pr);
/* Bytes to the terminal, in order, one write at a time per process, within
 * the transfer's deadline (mu not held): 0, or -1 with err and *code. */
int sbxs_pty_write(struct sbxs_proc *pr,
		   const void *data,
		   size_t n,
		   const char **code,
		   char *err,
		   size_t esize);
/* A new size of the terminal (mu not held): 0, or -1 with err. */
int sbxs_pty_resize(struct sbxs_proc *pr, unsigned rows, unsigned cols, char *err, size_t esize);
/* From the run's output callback (mu not held): a size asked while the
 * run was opening is set now. */
void sbxs_pty_resize_pending(struct sbxs_proc *pr);
/* Whether the client's side of socket fd looks closed: 2 surely (an error
 * or hang-up), 1 it stopped sending (FIN, or a half-close), 0 not. */
int sbxs_client_gone(int fd);
/* The thread of one process (its argument): waits its turn, runs, frames. */
void *sbxs_worker_main(void *arg);
/* The content reader and its completion of a Start response (cls: the proc). */
ssize_t sbxs_stream_read(void *cls, uint64_t pos, char *buf, size_t max);
void sbxs_stream_done(void *cls);

#endif
