/*
 * tests/canary/tls.c: the canaries' HTTPS responder (canary.h,
 * canary_tls_files): a TLS server on CANARY_HTTPS_PORT with the certificate
 * and key the test made (OpenSSL), which answers one HTTP request per
 * connection (a file of the test's docroot when one is given and holds the
 * target, else "canary-tls NAME SNI") and tells its canary the server name
 * and Host it was given, so that a test counts the requests each name
 * received.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "canary/canary-int.h"
#include "canary/canary.h"

static char cert_path[512], key_path[512], docroot[512];
static SSL_CTX *ctx, *ctx_retry;

void canary_tls_docroot(const char *dir)
{
	snprintf(docroot, sizeof(docroot), "%s", dir ? dir : "");
}

/* The file of docroot a request's target names ("/simple/x/" is
 * simple/x/index.html), or -1 with no docroot, a ".." or no such file. */
static int open_target(const char *req, char *type, size_t tl)
{
	char target[512], path[1200];
	size_t n;
	const char *sp;

	if (!docroot[0] || strncmp(req, "GET /", 5) != 0 || !(sp = strchr(req + 4, ' ')))
		return -1;
	n = (size_t)(sp - (req + 4));
	if (n >= sizeof(target))
		return -1;
	memcpy(target, req + 4, n);
	target[n] = '\0';
	target[strcspn(target, "?#")] = '\0';
	if (strstr(target, ".."))
		return -1;
	n = strlen(target);
	snprintf(path, sizeof(path), "%s%s%s", docroot, target,
		 n && target[n - 1] == '/' ? "index.html" : "");
	snprintf(type, tl, "%s", strstr(path, ".html") ? "text/html" : "application/octet-stream");
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* Answers with the file fd (closed here). */
static void send_file(SSL *ssl, int fd, const char *type)
{
	struct stat st;
	char head[256], buf[16384];
	ssize_t n;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\n"
		 "Connection: close\r\n\r\n",
		 type, (long long)st.st_size);
	SSL_write(ssl, head, (int)strlen(head));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (SSL_write(ssl, buf, (int)n) <= 0)
			break;
	close(fd);
}

void canary_tls_files(const char *cert, const char *key)
{
	snprintf(cert_path, sizeof(cert_path), "%s", cert ? cert : "");
	snprintf(key_path, sizeof(key_path), "%s", key ? key : "");
}

int canary__tls_ready(void)
{
	if (!cert_path[0])
		return 0;
	if (ctx)
		return 1;
	ctx = SSL_CTX_new(TLS_server_method());
	ctx_retry = SSL_CTX_new(TLS_server_method());
	if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1 || !ctx_retry ||
	    SSL_CTX_use_certificate_chain_file(ctx_retry, cert_path) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx_retry, key_path, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_set1_groups_list(ctx_retry, "P-256") != 1)
		return -1;
	return 1;
}

void canary__http_host(const char *req, char *host, size_t len)
{
	const char *p = req;

	host[0] = '\0';
	while ((p = strchr(p, '\n'))) {
		p++;
		if (strncasecmp(p, "Host:", 5) == 0) {
			size_t n;

			p += 5;
			while (*p == ' ' || *p == '\t')
				p++;
			n = strcspn(p, ":\r\n");
			snprintf(host, len, "%.*s", (int)(n < len ? n : len - 1), p);
			return;
		}
	}
}

static int tls_serve(SSL_CTX *with,
		     int fd,
		     const char *canary_name,
		     char *sni,
		     size_t sl,
		     char *host,
		     size_t hl);

int canary__tls_serve(int fd, const char *canary_name, char *sni, size_t sl, char *host, size_t hl)
{
	return tls_serve(ctx, fd, canary_name, sni, sl, host, hl);
}

int canary__tls_serve_retry(
	int fd, const char *canary_name, char *sni, size_t sl, char *host, size_t hl)
{
	return tls_serve(ctx_retry, fd, canary_name, sni, sl, host, hl);
}

static int tls_serve(
	SSL_CTX *with, int fd, const char *canary_name, char *sni, size_t sl, char *host, size_t hl)
{
	struct timeval tv = {.tv_sec = 5};
	char req[4096], resp[512];
	const char *sn;
	size_t got = 0;
	SSL *ssl;
	int body, n;

	sni[0] = host[0] = '\0';
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	ssl = SSL_new(with);
	if (!ssl)
		return -1;
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		return -1;
	}
	sn = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	snprintf(sni, sl, "%s", sn ? sn : "");
	while (got < sizeof(req) - 1 &&
	       (n = SSL_read(ssl, req + got, (int)(sizeof(req) - 1 - got))) > 0) {
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[got] = '\0';
	canary__http_host(req, host, hl);
	{
		char type[64];
		int file = open_target(req, type, sizeof(type));

		if (file >= 0) {
			send_file(ssl, file, type);
			SSL_shutdown(ssl);
			SSL_free(ssl);
			ERR_clear_error();
			return 0;
		}
	}
	body = (int)strlen(canary_name) + (int)strlen(sni) + 13;
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
		 "canary-tls %s %s\n",
		 body, canary_name, sni);
	SSL_write(ssl, resp, (int)strlen(resp));
	SSL_shutdown(ssl);
	SSL_free(ssl);
	ERR_clear_error();
	return 0;
}
