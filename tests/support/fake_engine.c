/*
 * tests/support/fake_engine.c: see fake_engine.h. libmicrohttpd serves a
 * listening unix socket handed to it, one thread, and each request is
 * answered from the route table (404 when none matches). With raw routes
 * the engine accepts connections itself: it peeks at each request line,
 * answers a raw route's requests on its own, and hands the others to
 * libmicrohttpd (MHD_add_connection), which reads them from the start.
 */
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "support/fake_engine.h"

#define LOG_MAX 256
/* A held connection's wait for the client's end: a hang guard of 60 s. */
#define HOLD_SPINS_MAX 600

struct fake_engine {
	struct MHD_Daemon *mhd;
	char sock[108];
	const struct fake_route *routes;
	int n;
	pthread_mutex_t lock;
	char *log[LOG_MAX];
	int logged;
	int lfd; /* with raw routes: the listening socket the acceptor serves */
	pthread_t acceptor;
};

static const char *strip_version(const char *url)
{
	/* "/v1.41/containers/create" -> "/containers/create" */
	if (strncmp(url, "/v", 2) == 0) {
		const char *s = strchr(url + 1, '/');
		if (s)
			return s;
	}
	return url;
}

static void log_request(struct fake_engine *f, const char *method, const char *path)
{
	char *entry = NULL;

	if (asprintf(&entry, "%s %s", method, path) < 0)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->logged < LOG_MAX)
		f->log[f->logged++] = entry;
	else
		free(entry);
	pthread_mutex_unlock(&f->lock);
}

static const struct fake_route *route(struct fake_engine *f, const char *method, const char *path)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->routes[i].method, method) == 0 &&
		    strncmp(path, f->routes[i].path_prefix, strlen(f->routes[i].path_prefix)) == 0)
			return &f->routes[i];
	return NULL;
}

static enum MHD_Result answer(void *cls,
			      struct MHD_Connection *c,
			      const char *url,
			      const char *method,
			      const char *version,
			      const char *upload,
			      size_t *upload_size,
			      void **con_cls)
{
	struct fake_engine *f = cls;
	const char *path = strip_version(url);
	const struct fake_route *r = NULL;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	if (*con_cls == NULL) {
		*con_cls = f; /* first call: headers only */
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* body consumed, not needed */
		return MHD_YES;
	}
	log_request(f, method, path);
	r = route(f, method, path);
	resp = MHD_create_response_from_buffer(r ? strlen(r->body) : 20,
					       (void *)(r ? r->body : "{\"message\":\"nope\"}\n"),
					       MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(c, r ? r->status : 404, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * The request line ("METHOD /v1.41/path HTTP/1.1") without consuming it:
 * libmicrohttpd reads the request from its start when it gets the socket.
 */
static int peek_line(int fd, char *buf, size_t cap)
{
	for (;;) {
		ssize_t n = recv(fd, buf, cap - 1, MSG_PEEK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf[n] = '\0';
		if (strstr(buf, "\r\n"))
			return 0;
		if ((size_t)n == cap - 1)
			return -1;
		/* Part of the line is in: a peek would return at once, so yield. */
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

/* Consumes the whole request (head, then Content-Length bytes of body). */
static int read_request(int fd)
{
	char head[16384];
	size_t len = 0, body = 0, have;
	char *end = NULL, *cl;

	while (!end) {
		ssize_t r = recv(fd, head + len, sizeof(head) - 1 - len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (len += (size_t)r) == sizeof(head) - 1)
			return -1;
		head[len] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	cl = strcasestr(head, "\r\nContent-Length:");
	if (cl && cl < end)
		body = strtoul(cl + 17, NULL, 10);
	have = len - (size_t)(end + 4 - head);
	while (have < body) {
		ssize_t r = recv(fd, head, sizeof(head), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		have += (size_t)r;
	}
	return 0;
}

/* Reads (and drops) what the client sends until its end of input; logs
 * whether it still reads then (POLLHUP: both ways closed). Bounded. */
static void hold_until_eof(struct fake_engine *f, int fd)
{
	char buf[4096];

	for (int spins = 0; spins < HOLD_SPINS_MAX; spins++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n > 0)
			continue;
		p = (struct pollfd){.fd = fd, .events = POLLOUT};
		log_request(f, "EOF",
			    poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) ? "full" : "half");
		return;
	}
	log_request(f, "EOF", "none");
}

static void serve_raw(struct fake_engine *f, int fd, const struct fake_route *r)
{
	size_t off = 0;

	if (read_request(fd) < 0)
		return;
	while (off < r->raw_len) {
		ssize_t w = send(fd, (const char *)r->raw + off, r->raw_len - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
	if (r->hold)
		hold_until_eof(f, fd);
}

static void *acceptor(void *arg)
{
	struct fake_engine *f = arg;

	for (;;) {
		struct sockaddr_un peer;
		socklen_t plen = sizeof(peer);
		char line[1024], method[16], url[512];
		const struct fake_route *r = NULL;
		int fd = accept4(f->lfd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL; /* the socket was shut down: stop */
		}
		if (peek_line(fd, line, sizeof(line)) == 0 &&
		    sscanf(line, "%15s %511s", method, url) == 2)
			r = route(f, method, strip_version(url));
		if (r && r->raw) {
			log_request(f, method, strip_version(url));
			serve_raw(f, fd, r);
			/* Queued bytes stay readable by the peer after the close. */
			close(fd);
			continue;
		}
		if (MHD_add_connection(f->mhd, fd, (struct sockaddr *)&peer, plen) != MHD_YES)
			close(fd);
	}
}

static int has_raw(const struct fake_route *routes, int n)
{
	for (int i = 0; i < n; i++)
		if (routes[i].raw)
			return 1;
	return 0;
}

struct fake_engine *fake_engine_start(const struct fake_route *routes, int n)
{
	struct fake_engine *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	snprintf(f->sock, sizeof(f->sock), "/tmp/sbx-fake-%ld-%p.sock", (long)getpid(), (void *)f);
	memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1);
	unlink(f->sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		free(f);
		return NULL;
	}
	f->routes = routes;
	f->n = n;
	f->lfd = -1;
	pthread_mutex_init(&f->lock, NULL);
	if (has_raw(routes, n)) {
		f->lfd = fd;
		f->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
						  MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
					  0, NULL, NULL, answer, f, MHD_OPTION_END);
		if (f->mhd && pthread_create(&f->acceptor, NULL, acceptor, f) != 0) {
			MHD_stop_daemon(f->mhd);
			f->mhd = NULL;
		}
	} else {
		f->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, f,
					  MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_END);
	}
	if (!f->mhd) {
		close(fd);
		unlink(f->sock);
		free(f);
		return NULL;
	}
	return f;
}

const char *fake_engine_socket(const struct fake_engine *f)
{
	return f->sock;
}

int fake_engine_count(struct fake_engine *f, const char *method, const char *path_prefix)
{
	size_t ml = strlen(method), pl = strlen(path_prefix);
	int n = 0;

	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < f->logged; i++)
		if (strncmp(f->log[i], method, ml) == 0 && f->log[i][ml] == ' ' &&
		    strncmp(f->log[i] + ml + 1, path_prefix, pl) == 0)
			n++;
	pthread_mutex_unlock(&f->lock);
	return n;
}

void fake_engine_stop(struct fake_engine *f)
{
	if (!f)
		return;
	if (f->lfd >= 0) {
		/* Wakes the acceptor's accept() with an error, and it returns. */
		shutdown(f->lfd, SHUT_RDWR);
		pthread_join(f->acceptor, NULL);
		close(f->lfd);
	}
	MHD_stop_daemon(f->mhd);
	unlink(f->sock);
	for (int i = 0; i < f->logged; i++)
		free(f->log[i]);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
