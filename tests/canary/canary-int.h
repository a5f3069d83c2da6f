/*
 * tests/canary/canary-int.h: between the canary's own files.
 */
#ifndef SBX_TESTS_CANARY_INT_H
#define SBX_TESTS_CANARY_INT_H

#include <stddef.h>

/* 1 when canary_tls_files() was given and loads, 0 when not given, -1 when
 * they do not load. Called in the canary's process. */
int canary__tls_ready(void);
/* Serves one HTTPS request on accepted fd; fills the server name and Host
 * it saw ("" when none). 0, or -1 when the handshake failed. */
int canary__tls_serve(int fd, const char *canary_name, char *sni, size_t sl, char *host, size_t hl);
/* The same on CANARY_HTTPS_RETRY_PORT: P-256 only, so that a client with
 * another key share is asked for a second hello. */
int canary__tls_serve_retry(
	int fd, const char *canary_name, char *sni, size_t sl, char *host, size_t hl);
/* The Host header's name (without a port) of an HTTP request head. */
void canary__http_host(const char *req, char *host, size_t len);

#endif
