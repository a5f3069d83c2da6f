/*
 * engine/http.c: HTTP to the Docker Engine over its unix socket, with libcurl.
 *
 * Plain requests use libcurl end to end. Attach/exec streams need the
 * connection after the response headers (the Engine "hijacks" it), which
 * libcurl does not expose for HTTP/1.1; for those, libcurl opens the socket
 * (CONNECT_ONLY) and this file writes the request and parses the status line
 * and headers itself, strictly and with a bound.
 */
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <sandboxio/errors.h>

#include "engine/http-int.h"
#include "util/error-int.h"
#include "util/time.h"

#define RESP_CAP (16u << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	curl_global_init(CURL_GLOBAL_NOTHING);
}

int sbx__http_init(struct sbx__http *h, const char *sock, long timeout_ms)
{
	if (strlen(sock) > SBX_UNIX_PATH_MAX)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE,
				      "docker socket path is %zu bytes; a unix socket path holds "
				      "at most %d",
				      strlen(sock), SBX_UNIX_PATH_MAX);
	pthread_once(&curl_once, curl_global);
	h->sock = strdup(sock);
	if (!h->sock)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	h->timeout_ms = timeout_ms;
	return 0;
}

void sbx__http_done(struct sbx__http *h)
{
	free(h->sock);
	h->sock = NULL;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct sbx__buf *b = arg;

	if (sbx__buf_append(b, p, size * n) < 0)
		return 0;
	return size * n;
}

static CURL *easy(struct sbx__http *h, const char *method, const char *path, long timeout_ms)
{
	char url[2048];
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	snprintf(url, sizeof(url), "http://localhost/" SBX_DOCKER_API "%s", path);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, h->sock);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms ? timeout_ms : h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	return c;
}

static int transport_error(struct sbx__http *h, CURLcode cc, const char *method, const char *path)
{
	if (cc == CURLE_COULDNT_CONNECT)
		return sbx__error_set(
			SBX_EUNAVAILABLE, SBX_ERRCLASS_ENGINE,
			"cannot connect to the Docker daemon at unix://%s: is dockerd "
			"running, and may this user use its socket?",
			h->sock);
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_ENGINE,
				      "%s %s: the Docker daemon did not answer in time", method,
				      path);
	return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "%s %s: %s", method, path,
			      curl_easy_strerror(cc));
}

int sbx__http_call(struct sbx__http *h,
		   const char *method,
		   const char *path,
		   const char *body,
		   long timeout_ms,
		   long *status,
		   struct sbx__buf *resp)
{
	struct curl_slist *hdr = NULL;
	CURLcode cc;
	CURL *c;

	c = easy(h, method, path, timeout_ms);
	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "curl_easy_init failed");
	resp->cap = RESP_CAP;
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	}
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (cc != CURLE_OK)
		return transport_error(h, cc, method, path);
	return 0;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	return fread(p, size, n, arg);
}

int sbx__http_upload(struct sbx__http *h,
		     const char *path,
		     const char *file,
		     long timeout_ms,
		     long *status,
		     struct sbx__buf *resp)
{
	struct curl_slist *hdr = NULL;
	CURLcode cc;
	FILE *f;
	CURL *c;
	long sz;

	f = fopen(file, "rbe");
	if (!f)
		return sbx__error_os(errno == ENOENT ? SBX_ENOTFOUND : SBX_EINVALID, errno,
				     "open %s", file);
	if (fseek(f, 0, SEEK_END) < 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return sbx__error_os(SBX_EINVALID, errno, "seek %s", file);
	}
	c = easy(h, "POST", path, timeout_ms);
	if (!c) {
		fclose(f);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "curl_easy_init failed");
	}
	resp->cap = RESP_CAP;
	hdr = curl_slist_append(hdr, "Content-Type: application/x-tar");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, f);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)sz);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	fclose(f);
	if (cc != CURLE_OK)
		return transport_error(h, cc, "POST", path);
	return 0;
}

static int send_all(int fd, const char *p, size_t n, long deadline)
{
	while (n) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		long left = deadline - (long)sbx__mono_ms();
		ssize_t w;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int sbx__http_hijack(struct sbx__http *h,
		     const char *path,
		     const char *body,
		     long timeout_ms,
		     struct sbx__hijack *out)
{
	char req[4096], head[SBX_HIJACK_HEAD_MAX];
	size_t hlen = 0;
	long deadline = (long)sbx__mono_ms() + (timeout_ms ? timeout_ms : h->timeout_ms),
	     status = 0;
	curl_socket_t fd = CURL_SOCKET_BAD;
	char *end = NULL;
	CURLcode cc;
	CURL *c;
	int n, rc;

	c = easy(h, "POST", path, timeout_ms);
	if (!c)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "curl_easy_init failed");
	curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		cc = curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &fd);
	if (cc != CURLE_OK || fd == CURL_SOCKET_BAD) {
		curl_easy_cleanup(c);
		return transport_error(h, cc, "POST", path);
	}
	n = snprintf(req, sizeof(req),
		     "POST /" SBX_DOCKER_API "%s HTTP/1.1\r\nHost: localhost\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		     "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
		     path, strlen(body));
	if (n < 0 || (size_t)n >= sizeof(req)) {
		curl_easy_cleanup(c);
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_ENGINE, "request path too long");
	}
	rc = send_all(fd, req, (size_t)n, deadline);
	if (rc == 0)
		rc = send_all(fd, body, strlen(body), deadline);
	/* Read until the end of the headers; what follows belongs to the stream. */
	while (rc == 0 && !end) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long left = deadline - (long)sbx__mono_ms();
		ssize_t r;

		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (hlen == sizeof(head) - 1) {
			rc = -E2BIG;
			break;
		}
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		r = recv(fd, head + hlen, sizeof(head) - 1 - hlen, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0) {
			rc = -ECONNRESET;
			break;
		}
		hlen += (size_t)r;
		head[hlen] = '\0';
		/* memmem: a NUL the peer sends must not hide the end of the headers. */
		end = memmem(head, hlen, "\r\n\r\n", 4);
	}
	if (rc < 0) {
		curl_easy_cleanup(c);
		if (rc == -ETIMEDOUT)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_ENGINE,
					      "POST %s: the Docker daemon did not answer in time",
					      path);
		if (rc == -E2BIG)
			return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE,
					      "POST %s: the Docker daemon's response headers are "
					      "longer than %zu bytes",
					      path, sizeof(head) - 1);
		return sbx__error_os(SBX_EENGINE, -rc, "POST %s", path);
	}
	if (sscanf(head, "HTTP/1.%*1[01] %ld", &status) != 1 || (status != 101 && status != 200)) {
		char msg[512];
		const char *body_start = end + 4;
		struct sbx__buf b = {0};

		sbx__buf_append(&b, body_start, hlen - (size_t)(body_start - head));
		sbx__http_message(&b, msg, sizeof(msg));
		sbx__buf_clear(&b);
		curl_easy_cleanup(c);
		sbx__error_set(status == 404 ? SBX_ENOTFOUND : SBX_EENGINE, SBX_ERRCLASS_ENGINE,
			       "POST %s: HTTP %ld: %s", path, status, msg);
		sbx__error_http(status);
		return status == 404 ? SBX_ENOTFOUND : SBX_EENGINE;
	}
	/*
	 * What followed the headers in the same reads belongs to the stream.
	 * Its length comes from the peer; it is below sizeof(head), and pre
	 * is as large, but the bound is checked here, where it is used.
	 */
	_Static_assert(sizeof(out->pre) >= sizeof(head), "pre holds any early bytes");
	out->pre_len = hlen - (size_t)(end + 4 - head);
	if (out->pre_len > sizeof(out->pre)) {
		out->pre_len = 0;
		curl_easy_cleanup(c);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE,
				      "POST %s: more stream bytes with the headers than the "
				      "connection can hold",
				      path);
	}
	memcpy(out->pre, end + 4, out->pre_len);
	out->curl = c;
	out->fd = fd;
	return 0;
}

void sbx__hijack_close(struct sbx__hijack *hj)
{
	if (hj->curl)
		curl_easy_cleanup(hj->curl);
	hj->curl = NULL;
	hj->fd = -1;
}

const char *sbx__http_message(const struct sbx__buf *resp, char *dst, size_t dst_len)
{
	json_t *root = NULL, *m;

	dst[0] = '\0';
	if (resp->data && resp->len) {
		root = json_loadb(resp->data, resp->len, 0, NULL);
		m = root ? json_object_get(root, "message") : NULL;
		if (json_is_string(m))
			snprintf(dst, dst_len, "%s", json_string_value(m));
		else
			snprintf(dst, dst_len, "%.*s", (int)(resp->len > 200 ? 200 : resp->len),
				 resp->data);
		json_decref(root);
	}
	/* Trim a trailing newline the Engine sometimes sends. */
	for (size_t n = strlen(dst); n && (dst[n - 1] == '\n' || dst[n - 1] == '\r'); n--)
		dst[n - 1] = '\0';
	return dst;
}
