/*
 * core/port.c: sbx_sandbox_connect_port(), one TCP connection to a port of
 * the sandbox's own loopback, carried over the caller's socket.
 *
 * The connection is a run of the init's relay (`/.sbx/init connect PORT`,
 * init/connect.c) whose stdin is the caller's socket (the run's streamed
 * stdin) and whose stdout is written back to it as it comes; the sandbox's
 * network is not touched (with network "none" it has its loopback only).
 * Why a run and not a stream kind of the init's channel: see
 * init/connect.c. Only a backend with streamed stdin (the docker one,
 * which mounts the init at /.sbx/init in every sandbox) can carry it; the
 * others refuse with SBX_EUNSUPPORTED when the run is asked for.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sandboxio.h>

#include "core/sandbox-int.h"
#include "util/error-int.h"

/* The init's mount in a docker sandbox (engine/docker-int.h, SBX_INIT_MOUNT)
 * and its relay's exit when nothing listens (init/init.h). */
#define RELAY_PROG "/.sbx/init"
#define RELAY_EXIT_REFUSED 122

struct port_out {
	int fd;
	int gone; /* a write failed: the rest is dropped */
};

/* Writes the relay's stdout to the caller's socket; never cancels the run
 * (a cancel kills the sandbox): a caller gone drops the rest, and the
 * end of its input ends the relay. */
static int port_output(int stream, const char *data, size_t len, void *payload)
{
	struct port_out *po = payload;

	if (stream != SBX_STREAM_STDOUT || po->gone)
		return 0;
	while (len) {
		ssize_t n = send(po->fd, data, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(po->fd, data, len);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = po->fd, .events = POLLOUT};

			if (poll(&p, 1, -1) < 0 && errno != EINTR) {
				po->gone = 1;
				return 0;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			po->gone = 1;
			return 0;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The relay's own message (stderr, its "sbx-init: " prefix and line end
 * taken off), or what. */
static const char *relay_says(const sbx_result *r, char *buf, size_t size, const char *what)
{
	const char *m = r->stderr_data;
	size_t n = r->stderr_len;

	if (!m || n == 0)
		return what;
	if (n >= 10 && memcmp(m, "sbx-init: ", 10) == 0) {
		m += 10;
		n -= 10;
	}
	while (n && (m[n - 1] == '\n' || m[n - 1] == '\r'))
		n--;
	snprintf(buf, size, "%.*s", (int)(n < 512 ? n : 512), m);
	return buf;
}

int sbx_sandbox_connect_port(sbx_sandbox *s, unsigned int port, int fd, uint64_t timeout_ms)
{
	char ps[8], msg[600];
	const char *argv[] = {RELAY_PROG, "connect", ps, NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	struct port_out po = {.fd = fd};
	sbx_result *r = NULL;
	int rc;

	sbx__error_clear();
	if (!s)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "connect_port: no sandbox given");
	if (port < 1 || port > 65535)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "connect_port: port %u is outside 1..65535", port);
	if (fd < 0)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "connect_port: fd %d is not a descriptor", fd);
	snprintf(ps, sizeof(ps), "%u", port);
	o.timeout_ms = timeout_ms;
	o.stream_stdin = 1;
	o.stdin_fd = fd;
	o.raw_output = 1; /* the bytes of a protocol, passed as they are */
	o.on_output = port_output;
	o.payload = &po;
	rc = sbx__sandbox_run_kind(&r, s, argv, &o, SBX_TIMEOUT_RUN, "connect", NULL);
	if (rc < 0)
		return rc;
	if (r->stdout_truncated)
		rc = sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
				    "connect_port: what the server on port %u said passed the "
				    "sandbox's output cap of %llu bytes; the rest was dropped",
				    port, (unsigned long long)r->stdout_len);
	else if (r->status == SBX_RUN_EXITED && r->exit_code == 0)
		rc = 0;
	else if (r->status == SBX_RUN_EXITED && r->exit_code == RELAY_EXIT_REFUSED &&
		 r->stdout_total == 0)
		rc = sbx__error_set(SBX_ENOTFOUND, SBX_ERRCLASS_CORE, "connect_port: %s",
				    relay_says(r, msg, sizeof(msg), "nothing listens on the port"));
	else if (r->status == SBX_RUN_TIMEOUT)
		rc = sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_CORE,
				    "connect_port: the connection to port %u ran past its deadline",
				    port);
	else
		rc = sbx__error_set(SBX_ERROR, SBX_ERRCLASS_CORE,
				    "connect_port: the relay of port %u ended %s (code %d): %s",
				    port, sbx_run_status_name(r->status), r->exit_code,
				    relay_says(r, msg, sizeof(msg), "no message"));
	sbx_result_free(r);
	return rc;
}
