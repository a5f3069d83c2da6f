/*
 * cli/dclient.c: the command's side of the local daemon (cli/daemon.c):
 * whether a command goes through it, and its create, exec, kill and list
 * calls (docs/daemon.md).
 *
 * The route: --no-daemon or SANDBOXIO_DAEMON=none, the direct path. Else
 * --daemon PATH, else $SANDBOXIO_DAEMON, names a daemon, which must answer;
 * else the default socket is tried and, when nothing answers there, the
 * command talks to the engine itself, silently. A command that names a
 * choice the daemon makes for itself at its start (--socket, --config,
 * --hosts-file, --audit-log, another backend, or $DOCKER_HOST,
 * $SANDBOXIO_CONFIG, $SANDBOXIO_HOSTS_FILE, $SANDBOXIO_INIT, $SANDBOXIO_EGRESS) takes the
 * direct path, or, when it names a daemon too, is refused. So are requests
 * the protocol cannot carry (an argument that is not UTF-8) and runs with
 * secrets, whose values never leave the process that read them: those go
 * direct.
 *
 * Every call prints its failure itself, as the direct path would (the
 * daemon's errors are the library's and the command's own messages), and
 * returns an exit status; CLI_DAEMON_INTERRUPTED says that a signal cut it
 * short (the caller reports it as the direct path does).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/dclient.h"

static const char *chosen; /* the daemon's socket once cli_daemon_open() picked it */

int cli_dread_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR) {
			if (cli_signal_pending())
				return -2;
			continue;
		}
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int cli_dsend_frame(int fd, enum cli_dtype type, const void *data, size_t len)
{
	uint8_t hdr[CLI_D_HDR];
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)data, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};

	cli_dframe_header(hdr, type, len);
	while (mh.msg_iovlen) {
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		while (mh.msg_iovlen && (size_t)w >= mh.msg_iov->iov_len) {
			w -= (ssize_t)mh.msg_iov->iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen) {
			mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + w;
			mh.msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* An engine-side choice of this command that only the daemon's own start
 * makes; NULL: none. */
static const char *own_choice(const struct cli_opts *o)
{
	static const char *const vars[] = {"DOCKER_HOST", "SANDBOXIO_CONFIG",
					   "SANDBOXIO_HOSTS_FILE", "SANDBOXIO_INIT",
					   "SANDBOXIO_EGRESS"};

	if (o->socket)
		return "--socket";
	if (o->config)
		return "--config";
	if (o->hosts_file)
		return "--hosts-file";
	if (o->audit_log)
		return "--audit-log";
	if (strcmp(cli_backend_name(o), "docker") != 0)
		return "--backend (or $SANDBOXIO_BACKEND)";
	for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
		const char *v = getenv(vars[k]);

		if (v && *v)
			return vars[k];
	}
	return NULL;
}

static int dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		close(fd);
		return -1;
	}
	return fd;
}

int cli_daemon_open(const struct cli_opts *o, int *fd)
{
	const char *env = getenv("SANDBOXIO_DAEMON"), *why;
	const char *path = o->daemon ? o->daemon : env && *env ? env : NULL;

	*fd = -1;
	if (o->no_daemon || (path && strcmp(path, "none") == 0))
		return 0;
	why = own_choice(o);
	if (why && !path)
		return 0;
	if (why) {
		cli_print_error(o, SBX_EINVALID,
				"%s: the daemon makes this choice itself, at its start; give "
				"--no-daemon (or SANDBOXIO_DAEMON=none) to make it here",
				why);
		return CLI_EXIT_FAIL;
	}
	*fd = dial(path ? path : CLI_DAEMON_SOCKET);
	if (*fd < 0 && path) {
		cli_print_error(o, SBX_EUNAVAILABLE, "the daemon at %.200s does not answer: %s",
				path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (*fd >= 0)
		chosen = path ? path : CLI_DAEMON_SOCKET;
	return 0;
}

static int gone(const struct cli_opts *o, const char *what)
{
	cli_print_error(o, SBX_EUNAVAILABLE, "the daemon at %.200s %s", chosen, what);
	return CLI_EXIT_FAIL;
}

/* Sends the request j (taken). */
static int send_request(const struct cli_opts *o, int fd, json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	int rc;

	json_decref(j);
	if (!text) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	rc = cli_dsend_frame(fd, CLI_D_REQUEST, text, strlen(text));
	free(text);
	return rc < 0 ? gone(o, "went away") : 0;
}

/* One frame from the daemon, its payload in *buf (NUL-terminated, freed by
 * the caller). Returns 0, CLI_DAEMON_INTERRUPTED, or an exit status after
 * printing. */
static int read_frame(const struct cli_opts *o, int fd, enum cli_dtype *t, char **buf, size_t *len)
{
	uint8_t hdr[CLI_D_HDR];
	char err[256];
	int rc;

	*buf = NULL;
	rc = cli_dread_full(fd, hdr, sizeof(hdr));
	if (rc == -2)
		return CLI_DAEMON_INTERRUPTED;
	if (rc < 0)
		return gone(o, "went away before it answered");
	if (cli_dframe_check(hdr, 1, t, len, err, sizeof(err)) < 0) {
		cli_print_error(o, SBX_EENGINE, "the daemon broke its protocol: %s", err);
		return CLI_EXIT_FAIL;
	}
	*buf = malloc(*len + 1);
	if (!*buf) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	rc = cli_dread_full(fd, *buf, *len);
	if (rc < 0) {
		free(*buf);
		*buf = NULL;
		return rc == -2 ? CLI_DAEMON_INTERRUPTED : gone(o, "went away before it answered");
	}
	(*buf)[*len] = '\0';
	return 0;
}

/* The REPLY of a request whose only frame back is its reply. */
static int read_reply(const struct cli_opts *o, int fd, json_t **root)
{
	enum cli_dtype t;
	const char *msg = NULL;
	char *buf, err[256];
	size_t len;
	int rc, code = 0;

	rc = read_frame(o, fd, &t, &buf, &len);
	if (rc)
		return rc;
	if (t != CLI_D_REPLY) {
		free(buf);
		cli_print_error(o, SBX_EENGINE,
				"the daemon broke its protocol: output without a run");
		return CLI_EXIT_FAIL;
	}
	rc = cli_dreply_parse(buf, len, root, &code, &msg, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		cli_print_error(o, SBX_EENGINE, "%s", err);
		return CLI_EXIT_FAIL;
	}
	if (rc > 0) {
		cli_print_error(o, code, "%s", msg);
		json_decref(*root);
		*root = NULL;
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/* A string field, left out when NULL; -1 when s is not UTF-8. */
static int put(json_t *j, const char *key, const char *s)
{
	return !s ? 0 : json_object_set_new(j, key, json_string(s));
}

static json_t *strings(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < n; k++)
		if (json_array_append_new(a, json_string(v[k])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *cli_daemon_create_request(const struct cli_opts *o)
{
	json_t *j = json_pack("{s:s}", "op", "create"), *lim = json_object(), *allow = json_array();
	int bad = !j || !lim || !allow;

	bad = bad || put(j, "image", o->image) || put(j, "timeout", o->timeout) ||
	      put(j, "create_timeout", o->create_timeout) || put(j, "lifetime", o->lifetime) ||
	      put(j, "tier", o->tier) || put(j, "tenant", o->tenant) ||
	      put(j, "workdir", o->workdir);
	for (int k = SBX__LIMIT_FIRST; !bad && k <= SBX__LIMIT_LAST; k++)
		bad = put(lim, sbx__limit_kinds[k].option, o->limit[k]);
	for (size_t k = 0; !bad && k < o->allow_n; k++)
		bad = json_array_append_new(
			allow, o->allow[k].preset
				       ? json_pack("{s:b, s:s, s:b}", "cidr", 0, "spec",
						   o->allow[k].spec, "preset", 1)
				       : json_pack("{s:b, s:s}", "cidr", o->allow[k].cidr, "spec",
						   o->allow[k].spec));
	if (!bad && o->env_n)
		bad = json_object_set_new(j, "env", strings(o->env, o->env_n));
	if (!bad && json_object_size(lim))
		bad = json_object_set(j, "limits", lim);
	if (!bad && o->allow_n)
		bad = json_object_set(j, "allow", allow);
	json_decref(lim);
	json_decref(allow);
	if (bad) {
		json_decref(j);
		return NULL;
	}
	return j;
}

int cli_daemon_create(const struct cli_opts *o, int fd, json_t *req, json_t **reply)
{
	int rc = send_request(o, fd, req);

	return rc ? rc : read_reply(o, fd, reply);
}

json_t *cli_daemon_exec_request(const struct cli_opts *o, uint64_t timeout_ms)
{
	json_t *j = json_pack("{s:s, s:s, s:o, s:I, s:b, s:b}", "op", "exec", "id", o->id, "argv",
			      strings((const char *const *)o->args, (size_t)o->nargs), "timeout_ms",
			      (json_int_t)timeout_ms, "stdin", o->stdin_path != NULL, "raw_output",
			      o->no_redact);

	if (j && (put(j, "workdir", o->workdir) ||
		  (o->env_n && json_object_set_new(j, "env", strings(o->env, o->env_n))))) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* --stdin FILE|- streamed as STDIN frames, then STDIN_EOF. A daemon that
 * stops reading (it refused the input) answers why: not an error here. */
static int send_stdin(const struct cli_opts *o, int fd, int in)
{
	char *buf = malloc(CLI_D_DATA_MAX);

	if (!buf) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (;;) {
		ssize_t r = read(in, buf, CLI_D_DATA_MAX);

		if (r < 0 && errno == EINTR) {
			if (cli_signal_pending()) {
				free(buf);
				return CLI_DAEMON_INTERRUPTED;
			}
			continue;
		}
		if (r < 0) {
			cli_print_error(o, SBX_EINVALID, "%s: %s",
					in == STDIN_FILENO ? "standard input" : o->stdin_path,
					strerror(errno));
			free(buf);
			return CLI_EXIT_FAIL;
		}
		if (cli_dsend_frame(fd, r ? CLI_D_STDIN : CLI_D_STDIN_EOF, buf, (size_t)r) < 0 ||
		    r == 0)
			break;
	}
	free(buf);
	return 0;
}

static int append(char **data, size_t *len, const char *buf, size_t n)
{
	char *grown = realloc(*data, *len + n + 1);

	if (!grown)
		return -1;
	memcpy(grown + *len, buf, n);
	*len += n;
	grown[*len] = '\0';
	*data = grown;
	return 0;
}

int cli_daemon_exec(const struct cli_opts *o,
		    int fd,
		    json_t *req,
		    int in,
		    sbx_output_cb cb,
		    void *payload,
		    sbx_result *r,
		    struct cli_dexec_info *info,
		    json_t **reply)
{
	enum cli_dtype t;
	const char *msg = NULL;
	char *buf, err[256];
	size_t len, *kept;
	int rc, code = 0;

	memset(r, 0, sizeof(*r));
	r->version = 1;
	*reply = NULL;
	rc = send_request(o, fd, req);
	if (!rc && in >= 0)
		rc = send_stdin(o, fd, in);
	while (!rc) {
		rc = read_frame(o, fd, &t, &buf, &len);
		if (rc)
			break;
		if (t == CLI_D_REPLY)
			break;
		/* The kept bytes count in every mode (the truncation message
		 * says how many); they are kept only for --json. */
		kept = t == CLI_D_STDERR ? &r->stderr_len : &r->stdout_len;
		if (!o->json)
			*kept += len;
		if (o->json && append(t == CLI_D_STDERR ? &r->stderr_data : &r->stdout_data, kept,
				      buf, len) < 0) {
			cli_print_error(o, SBX_ENOMEM, "out of memory");
			rc = CLI_EXIT_FAIL;
		} else if (cb(t == CLI_D_STDERR ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT, buf, len,
			      payload)) {
			rc = CLI_DAEMON_CANCELED; /* closing the connection ends the run */
		}
		free(buf);
	}
	if (rc)
		return rc;
	rc = cli_dreply_parse(buf, len, reply, &code, &msg, err, sizeof(err));
	free(buf);
	if (rc > 0) {
		cli_print_error(o, code, "%s", msg);
		return CLI_EXIT_FAIL;
	}
	if (rc < 0 || cli_dreply_exec(*reply, r, info, err, sizeof(err)) < 0) {
		cli_print_error(o, SBX_EENGINE, "%s", err);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

int cli_daemon_kill(const char *id, int *code, char *msg, size_t size)
{
	return cli_daemon_on(id, "kill", 0, code, msg, size);
}

int cli_daemon_on(
	const char *id, const char *op, uint64_t max_ms, int *code, char *msg, size_t size)
{
	json_t *req = json_pack("{s:s, s:s}", "op", op, "id", id), *root = NULL;
	const char *m = NULL;
	enum cli_dtype t;
	char *buf = NULL, err[256];
	size_t len;
	int fd, rc;

	*code = SBX_EUNAVAILABLE;
	if (!req) {
		*code = SBX_EINVALID;
		snprintf(msg, size, "sandbox id is not UTF-8");
		return -1;
	}
	if (max_ms && json_object_set_new(req, "max_ms", json_integer((json_int_t)max_ms)) < 0) {
		*code = SBX_ENOMEM;
		snprintf(msg, size, "out of memory");
		json_decref(req);
		return -1;
	}
	fd = dial(chosen);
	if (fd < 0) {
		snprintf(msg, size, "the daemon at %.200s does not answer: %s", chosen,
			 strerror(errno));
		json_decref(req);
		return -1;
	}
	{
		char *text = json_dumps(req, JSON_COMPACT);

		rc = text ? cli_dsend_frame(fd, CLI_D_REQUEST, text, strlen(text)) : -1;
		free(text);
		json_decref(req);
	}
	if (rc == 0) {
		uint8_t hdr[CLI_D_HDR];

		rc = cli_dread_full(fd, hdr, sizeof(hdr)) < 0 ||
				     cli_dframe_check(hdr, 1, &t, &len, err, sizeof(err)) < 0 ||
				     t != CLI_D_REPLY || !(buf = malloc(len + 1)) ||
				     cli_dread_full(fd, buf, len) < 0
			     ? -1
			     : 0;
	}
	close(fd);
	if (rc < 0) {
		snprintf(msg, size, "the daemon at %.200s went away before it answered", chosen);
		free(buf);
		return -1;
	}
	rc = cli_dreply_parse(buf, len, &root, code, &m, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		*code = SBX_EENGINE;
		snprintf(msg, size, "%s", err);
		return -1;
	}
	if (rc > 0)
		snprintf(msg, size, "%s", m);
	json_decref(root);
	return rc > 0 ? -1 : 0;
}

int cli_daemon_list(const struct cli_opts *o, int fd, json_t **rows)
{
	json_t *req = json_pack("{s:s}", "op", "list"), *root = NULL;
	char err[256];
	int rc;

	if (o->tenant && put(req, "tenant", o->tenant)) {
		json_decref(req);
		cli_print_error(o, SBX_EINVALID, "--tenant is not UTF-8");
		return CLI_EXIT_FAIL;
	}
	rc = send_request(o, fd, req);
	if (!rc)
		rc = read_reply(o, fd, &root);
	if (rc)
		return rc;
	if (cli_dreply_rows(root, rows, err, sizeof(err)) < 0) {
		cli_print_error(o, SBX_EENGINE, "%s", err);
		rc = CLI_EXIT_FAIL;
	}
	json_decref(root);
	return rc;
}
