/*
 * tests/fuzz/sock_server.h: a one-thread server on a unix socket for the
 * fuzz targets of the Engine's client (fuzz_http.c, fuzz_docker.c). Each
 * connection gets the bytes the current input set, then the end of the
 * server's side of the stream, and is read until the client closes it, so
 * the client sees exactly those bytes as the Engine's answer. The socket
 * lives in a private temporary directory made once per process; nothing
 * leaves the machine, and the directory is removed at exit.
 */
#ifndef SBX_FUZZ_SOCK_SERVER_H
#define SBX_FUZZ_SOCK_SERVER_H

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct {
	pthread_mutex_t mu;
	const uint8_t *resp;
	size_t len;
	char dir[64];
	char path[128];
	int lfd;
} fz_srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .lfd = -1};

static void *fz_srv_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(fz_srv.lfd, NULL, NULL);
		uint8_t *copy;
		size_t len, off = 0;
		char sink[4096];

		if (fd < 0)
			continue;
		pthread_mutex_lock(&fz_srv.mu);
		len = fz_srv.len;
		copy = malloc(len ? len : 1);
		if (!copy)
			abort();
		if (len)
			memcpy(copy, fz_srv.resp, len);
		pthread_mutex_unlock(&fz_srv.mu);
		while (off < len) {
			ssize_t w = send(fd, copy + off, len - off, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		free(copy);
		shutdown(fd, SHUT_WR);
		while (recv(fd, sink, sizeof(sink), 0) > 0)
			;
		close(fd);
	}
	return NULL;
}

/* Removes the directory and the files in it (the socket, a target's own). */
static void fz_srv_cleanup(void)
{
	DIR *d = opendir(fz_srv.dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(fz_srv.dir);
}

/* Starts the server once; returns the socket's path. */
static const char *fz_srv_start(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pthread_t t;

	if (fz_srv.lfd >= 0)
		return fz_srv.path;
	snprintf(fz_srv.dir, sizeof(fz_srv.dir), "%s/sbx-fuzz-sock-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(fz_srv.dir))
		abort();
	snprintf(fz_srv.path, sizeof(fz_srv.path), "%s/engine.sock", fz_srv.dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fz_srv.path);
	fz_srv.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fz_srv.lfd < 0 || bind(fz_srv.lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fz_srv.lfd, 8) < 0 || pthread_create(&t, NULL, fz_srv_main, NULL) != 0)
		abort();
	pthread_detach(t);
	atexit(fz_srv_cleanup);
	return fz_srv.path;
}

/* What every connection gets until the next call (p must outlive the calls). */
static void fz_srv_answer(const uint8_t *p, size_t n)
{
	pthread_mutex_lock(&fz_srv.mu);
	fz_srv.resp = p;
	fz_srv.len = n;
	pthread_mutex_unlock(&fz_srv.mu);
}

#endif
