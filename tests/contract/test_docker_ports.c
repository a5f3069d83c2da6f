/*
 * tests/contract/test_docker_ports.c: sbx_sandbox_connect_port() against
 * the real dockerd: a python3 http.server inside a sandbox with network
 * "none" answers through it, over a socketpair of the test's; a port where
 * nothing listens is SBX_ENOTFOUND naming the port; ports 0 and 65536 are
 * refused before anything runs; the end of the caller's input ends the
 * connection; the sandbox's network is still "none" (the Engine says
 * so); and a server that says more than the output cap gets SBX_ETOOBIG.
 *
 * The server runs on the creating handle (the init's channel) in a thread
 * of its own for the whole group; the connections go through a handle from
 * sbx_sandbox_open() (docker exec), beside it. The group starts once the
 * server says it is serving (its own line on stdout, unbuffered), never
 * after a sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

#define PORT 8000
#define FILE_TEXT "served from inside a sandbox without a network\n"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s; /* created: runs the server */
	sbx_sandbox *x; /* opened: carries the connections */
	pthread_t server;
	int server_rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int serving, server_done;
	const char *const *argv; /* the server's; NULL: the http.server */
	const char *ready;	 /* its line once it listens; NULL: "Serving HTTP" */
	char seen[4096];
	size_t len;
};

static int on_server_out(int stream, const char *data, size_t len, void *payload)
{
	struct fx *f = payload;

	(void)stream;
	pthread_mutex_lock(&f->mu);
	if (f->len + len < sizeof(f->seen)) {
		memcpy(f->seen + f->len, data, len);
		f->len += len;
		f->seen[f->len] = '\0';
	}
	if (strstr(f->seen, f->ready ? f->ready : "Serving HTTP"))
		f->serving = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static void *server_main(void *arg)
{
	struct fx *f = arg;
	const char *argv[] = {"python3", "-u",	      "-m", "http.server", "8000",
			      "--bind",	 "127.0.0.1", "-d", "/tmp/www",	   NULL};
	sbx_run_options o = SBX_RUN_OPTIONS_INIT;
	sbx_result *r = NULL;

	o.on_output = on_server_out;
	o.payload = f;
	f->server_rc = sbx_sandbox_run(&r, f->s, f->argv ? f->argv : argv, &o);
	sbx_result_free(r);
	pthread_mutex_lock(&f->mu);
	f->server_done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	sbx_result *r;

	if (!f || !t_engine_ready())
		return -1;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->b = t_backend();
	f->p = t_policy();
	if (sbx_sandbox_create(&f->s, f->b, f->p) != 0 ||
	    sbx_sandbox_open(&f->x, f->b, sbx_sandbox_id(f->s)) != 0) {
		fprintf(stderr, "setup: %s\n", sbx_error_last()->message);
		return -1;
	}
	r = t_run(f->s, "mkdir -p /tmp/www && printf '" FILE_TEXT "' >/tmp/www/hello.txt", NULL);
	assert_int_equal(r->exit_code, 0);
	sbx_result_free(r);
	assert_int_equal(pthread_create(&f->server, NULL, server_main, f), 0);
	/* Bounded by the server's run: it says it serves, or it ends. */
	pthread_mutex_lock(&f->mu);
	while (!f->serving && !f->server_done)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	if (!f->serving) {
		fprintf(stderr, "setup: the server did not start: %s\n", f->seen);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	sbx_sandbox_kill(f->s);
	pthread_join(f->server, NULL);
	sbx_sandbox_detach(f->x);
	sbx_sandbox_close(f->s);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return 0;
}

/* Everything sv has until its end (the library has returned: no writer). */
static size_t drain(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len < cap - 1 && (n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

static void test_docker_ports__http_server_answers(void **state)
{
	struct fx *f = *state;
	static const char req[] = "GET /hello.txt HTTP/1.0\r\nHost: sandbox\r\n\r\n";
	char buf[8192];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[0], req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	/* HTTP/1.0: the server closes after its answer, which ends the call. */
	if (sbx_sandbox_connect_port(f->x, PORT, sv[1], 0) != 0)
		fail_msg("connect_port: %s", sbx_error_last()->message);
	close(sv[1]);
	drain(sv[0], buf, sizeof(buf));
	close(sv[0]);
	assert_true(strncmp(buf, "HTTP/1.0 200 ", 13) == 0);
	assert_non_null(strstr(buf, "\r\n\r\n" FILE_TEXT));
}

static void test_docker_ports__closed_port(void **state)
{
	struct fx *f = *state;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(sbx_sandbox_connect_port(f->x, 8001, sv[1], 0), SBX_ENOTFOUND);
	assert_non_null(strstr(sbx_error_last()->message, "nothing listens on port 8001"));
	close(sv[0]);
	close(sv[1]);
}

static void test_docker_ports__out_of_range(void **state)
{
	struct fx *f = *state;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(sbx_sandbox_connect_port(f->x, 0, sv[1], 0), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "port 0 is outside 1..65535"));
	assert_int_equal(sbx_sandbox_connect_port(f->x, 65536, sv[1], 0), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "port 65536 is outside 1..65535"));
	assert_int_equal(sbx_sandbox_connect_port(f->x, PORT, -1, 0), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_connect_port(NULL, PORT, sv[1], 0), SBX_EINVALID);
	close(sv[0]);
	close(sv[1]);
}

/* The caller's end of input ends the connection at once (no answer asked
 * for: without it the call would last until the run's deadline). */
static void test_docker_ports__input_end_ends_it(void **state)
{
	struct fx *f = *state;
	char buf[64];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(shutdown(sv[0], SHUT_WR), 0);
	if (sbx_sandbox_connect_port(f->x, PORT, sv[1], 0) != 0)
		fail_msg("connect_port: %s", sbx_error_last()->message);
	assert_int_equal(drain(sv[0], buf, sizeof(buf)), 0);
	close(sv[0]);
	close(sv[1]);
}

/* The sandbox that served all this has no network: the Engine says so. */
static void test_docker_ports__network_still_none(void **state)
{
	struct fx *f = *state;
	char path[128];
	long st = 0;
	json_t *j, *hc;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(f->s));
	j = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	hc = json_object_get(j, "HostConfig");
	assert_string_equal(json_string_value(json_object_get(hc, "NetworkMode")), "none");
	json_decref(j);
}

/* A server that says more than the sandbox's output cap (64 KiB here, in
 * a sandbox of its own): the call says SBX_ETOOBIG, and the caller gets
 * exactly what passed the cap. */
static void test_docker_ports__past_the_output_cap(void **state)
{
	static const char *const argv[] = {"python3", "-u", "-c",
					   "import socket\n"
					   "l = socket.socket()\n"
					   "l.bind(('127.0.0.1', 8002))\n"
					   "l.listen()\n"
					   "print('one-shot ready')\n"
					   "c, _ = l.accept()\n"
					   "c.sendall(b'x' * 100000)\n"
					   "c.close()\n",
					   NULL};
	struct fx *f = calloc(1, sizeof(*f));
	char *buf = malloc(200000);
	int sv[2];
	size_t got;

	(void)state;
	assert_non_null(f);
	assert_non_null(buf);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->argv = argv;
	f->ready = "one-shot ready";
	f->b = t_backend();
	f->p = t_policy();
	assert_int_equal(sbx_policy_set_limit(f->p, SBX_LIMIT_OUTPUT, 65536), 0);
	if (sbx_sandbox_create(&f->s, f->b, f->p) != 0 ||
	    sbx_sandbox_open(&f->x, f->b, sbx_sandbox_id(f->s)) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	assert_int_equal(pthread_create(&f->server, NULL, server_main, f), 0);
	pthread_mutex_lock(&f->mu);
	while (!f->serving && !f->server_done)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	assert_true(f->serving);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(sbx_sandbox_connect_port(f->x, 8002, sv[1], 0), SBX_ETOOBIG);
	assert_non_null(strstr(sbx_error_last()->message, "output cap of 65536 bytes"));
	close(sv[1]);
	got = drain(sv[0], buf, 200000);
	close(sv[0]);
	assert_int_equal(got, 65536);
	pthread_join(f->server, NULL);
	sbx_sandbox_detach(f->x);
	sbx_sandbox_close(f->s);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_ports__http_server_answers),
		cmocka_unit_test(test_docker_ports__closed_port),
		cmocka_unit_test(test_docker_ports__out_of_range),
		cmocka_unit_test(test_docker_ports__input_end_ends_it),
		cmocka_unit_test(test_docker_ports__network_still_none),
		cmocka_unit_test(test_docker_ports__past_the_output_cap),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
