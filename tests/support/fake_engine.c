/*
 * tests/support/fake_engine.c: see fake_engine.h. libmicrohttpd serves a
 * listening unix socket handed to it, one thread, and each request is
 * answered from the route table (404 when none matches).
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "support/fake_engine.h"

#define LOG_MAX 256

struct fake_engine {
	struct MHD_Daemon *mhd;
	char sock[108];
	const struct fake_route *routes;
	int n;
	pthread_mutex_t lock;
	char *log[LOG_MAX];
	int logged;
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
	char *entry = NULL;

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
	if (asprintf(&entry, "%s %s", method, path) >= 0) {
		pthread_mutex_lock(&f->lock);
		if (f->logged < LOG_MAX)
			f->log[f->logged++] = entry;
		else
			free(entry);
		pthread_mutex_unlock(&f->lock);
	}
	for (int i = 0; i < f->n && !r; i++)
		if (strcmp(f->routes[i].method, method) == 0 &&
		    strncmp(path, f->routes[i].path_prefix, strlen(f->routes[i].path_prefix)) == 0)
			r = &f->routes[i];
	resp = MHD_create_response_from_buffer(r ? strlen(r->body) : 20,
					       (void *)(r ? r->body : "{\"message\":\"nope\"}\n"),
					       MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(c, r ? r->status : 404, resp);
	MHD_destroy_response(resp);
	return ret;
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
	pthread_mutex_init(&f->lock, NULL);
	f->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, f,
				  MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_END);
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
	MHD_stop_daemon(f->mhd);
	unlink(f->sock);
	for (int i = 0; i < f->logged; i++)
		free(f->log[i]);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
