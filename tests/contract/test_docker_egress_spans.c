/*
 * tests/contract/test_docker_egress_spans.c: each connection the name
 * checker (sbx-egress) decides is also a span, exported to the local OTLP
 * receiver (tests/support/otlp_receiver.c, 127.0.0.1 only) with the
 * creator's exporter settings, as a child of the sandbox's span
 * (docs/tracing.md, docs/egress-names.md).
 *
 * A sandbox with one name entry makes two plain HTTP connections to a
 * canary: one with the allowed Host, one with a Host no entry allows. The
 * receiver gets exactly two sandboxio.egress.connection spans with the
 * sandbox span's trace id and its span id as parent, the attributes of the
 * audit event (verdict, reason, name or only its length, address, port,
 * bytes, duration), start before end, the creator's service name and
 * header; the refused name is in no payload. Without tracing the checker
 * gets no settings (no --otlp on its command line).
 *
 * Safety: traffic goes only to the canary's address (canary_start checks
 * its route) and to the receiver on 127.0.0.1.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "canary/canary.h"
#include "support/engine.h"
#include "support/otlp_receiver.h"

#define NAME_OK "allowed.canary.test"
#define NAME_LEAK "l3ak-q7zv.canary.test"
#define HEADER_VALUE "Egr3ssCollectorKey"

/* Hang guard of a wait for an event: far above any plausible duration. */
#define WAIT_MS 120000

/* A plain HTTP GET to ADDR:80 with Host NAME for each NAME, given in hex
 * (so that the names are not in the run's own span, process.command_args);
 * one line each: "NAME ok <status line>" or "NAME <errno name>". */
static const char http_py[] = "import socket,sys,errno\n"
			      "h=sys.argv[1]\n"
			      "for n in [bytes.fromhex(x).decode() for x in sys.argv[2:]]:\n"
			      "  try:\n"
			      "    s=socket.create_connection((h,80),timeout=10)\n"
			      "    s.sendall(b'GET / HTTP/1.1\\r\\nHost: "
			      "'+n.encode()+b'\\r\\nConnection: close\\r\\n\\r\\n')\n"
			      "    d=b''\n"
			      "    while True:\n"
			      "      x=s.recv(4096)\n"
			      "      if not x: break\n"
			      "      d+=x\n"
			      "    r='ok '+d.split(b'\\r\\n')[0].decode(errors='replace')\n"
			      "  except socket.timeout: r='timeout'\n"
			      "  except OSError as e: r=errno.errorcode.get(e.errno,str(e))\n"
			      "  print(n,r,flush=True)\n";

static char dir[64], hosts_path[128];

static int ready(void)
{
	return canary_supported() && t_engine_ready();
}

static sbx_backend *backend(const char *url)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	if (url) {
		setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
		setenv("OTEL_SERVICE_NAME", "sandboxio-egress-contract", 1);
		setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-key=" HEADER_VALUE, 1);
	}
	o.hosts_file = hosts_path;
	o.no_reap_at_open = 1;
	if (sbx_backend_open(&b, "docker", &o) != 0)
		fail_msg("backend_open: %s", sbx_error_last()->message);
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_SERVICE_NAME");
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	return b;
}

static sbx_sandbox *names_sandbox(sbx_backend *b)
{
	sbx_policy *p = t_policy();
	sbx_sandbox *s = NULL;

	if (sbx_policy_allow_host_spec(p, NAME_OK) != 0)
		fail_msg("allow: %s", sbx_error_last()->message);
	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	sbx_policy_free(p);
	return s;
}

static char *probe(sbx_sandbox *s, const char *addr)
{
	char hex[2][2 * sizeof(NAME_LEAK) + 2 * sizeof(NAME_OK)];
	const char *names[] = {NAME_OK, NAME_LEAK};
	const char *argv[] = {"python3", "-c", http_py, addr, hex[0], hex[1], NULL};

	for (int i = 0; i < 2; i++)
		for (size_t k = 0; names[i][k]; k++)
			snprintf(hex[i] + 2 * k, 3, "%02x", (unsigned char)names[i][k]);

	return t_run_ok(s, argv);
}

static const char *sget(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));

	if (!v)
		fail_msg("no string %s", k);
	return v;
}

/* The value object of span's attribute key; NULL when it has none. */
static json_t *attr(json_t *span, const char *key)
{
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(span, "attributes"), i, a)
	{
		if (strcmp(sget(a, "key"), key) == 0)
			return json_object_get(a, "value");
	}
	return NULL;
}

static const char *attr_s(json_t *span, const char *key)
{
	json_t *v = attr(span, key);

	if (!v || !json_string_value(json_object_get(v, "stringValue")))
		fail_msg("span has no string attribute %s", key);
	return json_string_value(json_object_get(v, "stringValue"));
}

static long long attr_i(json_t *span, const char *key)
{
	json_t *v = attr(span, key);

	if (!v || !json_string_value(json_object_get(v, "intValue")))
		fail_msg("span has no int attribute %s", key);
	return strtoll(json_string_value(json_object_get(v, "intValue")), NULL, 10);
}

/* The egress spans of spans, by verdict. */
static json_t *egress_span(json_t *spans, const char *verdict, int *count)
{
	json_t *s, *found = NULL;
	size_t i;

	json_array_foreach(spans, i, s)
	{
		if (strcmp(sget(s, "name"), "sandboxio.egress.connection") != 0)
			continue;
		(*count)++;
		if (strcmp(attr_s(s, "sandboxio.egress.verdict"), verdict) == 0)
			found = s;
	}
	return found;
}

static json_t *span_named(json_t *spans, const char *name)
{
	json_t *s;
	size_t i;

	json_array_foreach(spans, i, s)
	{
		if (strcmp(sget(s, "name"), name) == 0)
			return s;
	}
	fail_msg("no span named %s", name);
	return NULL;
}

/* The number of spans named name in spans. */
static int count_named(json_t *spans, const char *name)
{
	json_t *s;
	size_t i;
	int n = 0;

	json_array_foreach(spans, i, s)
	{
		n += strcmp(sget(s, "name"), name) == 0;
	}
	return n;
}

/* The receiver's spans once it holds n egress spans and, with box, the
 * sandbox's span. */
static json_t *wait_spans(struct otlp_receiver *r, int n, int box)
{
	for (int have = 0;;) {
		json_t *spans;

		/* Each wait returns at a new span, or at the hang guard. */
		if (otlp_receiver_wait(r, have + 1, WAIT_MS) < have + 1)
			fail_msg("the receiver has %d spans, not the ones awaited", have);
		spans = otlp_receiver_spans(r);
		have = (int)json_array_size(spans);
		if (count_named(spans, "sandboxio.egress.connection") >= n &&
		    (!box || count_named(spans, "sandboxio.sandbox") > 0))
			return spans;
		json_decref(spans);
	}
}

static void test_egress_spans__one_span_per_connection(void **state)
{
	struct canary_set *c = *state;
	struct otlp_receiver *r;
	const struct canary *cn;
	sbx_backend *b;
	sbx_sandbox *s;
	json_t *spans, *box, *ok, *refused;
	char *out, *bodies, *svc, *hdr;
	int count = 0;

	if (!ready())
		skip();
	cn = canary_get(c, 0);
	r = otlp_receiver_start(0, 0);
	assert_non_null(r);
	b = backend(otlp_receiver_url(r));
	s = names_sandbox(b);
	out = probe(s, cn->addr4);
	if (!strstr(out, NAME_OK " ok HTTP/1."))
		fail_msg("the allowed name did not pass: %s", out);
	if (!strstr(out, NAME_LEAK " ECONNRESET") && !strstr(out, NAME_LEAK " EPIPE"))
		fail_msg("the other name was not reset: %s", out);
	free(out);
	/* Both spans come while the sandbox lives (the checker's own export),
	 * then the sandbox's span when it is closed. */
	json_decref(wait_spans(r, 2, 0));
	assert_int_equal(sbx_sandbox_close(s), 0);
	spans = wait_spans(r, 2, 1);
	assert_int_equal(count_named(spans, "sandboxio.egress.connection"), 2);
	box = span_named(spans, "sandboxio.sandbox");
	ok = egress_span(spans, "allowed", &count);
	refused = egress_span(spans, "refused", &count);
	assert_non_null(ok);
	assert_non_null(refused);
	for (int i = 0; i < 2; i++) {
		json_t *e = i ? refused : ok;

		/* A child of the sandbox's span: its trace, its span id. */
		assert_string_equal(sget(e, "traceId"), sget(box, "traceId"));
		assert_string_equal(sget(e, "parentSpanId"), sget(box, "spanId"));
		assert_string_equal(attr_s(e, "sandboxio.sandbox.id"),
				    attr_s(box, "sandboxio.sandbox.id"));
		assert_string_equal(attr_s(e, "sandboxio.egress.address"), cn->addr4);
		assert_int_equal(attr_i(e, "sandboxio.egress.port"), 80);
		assert_true(attr_i(e, "sandboxio.egress.duration_ms") >= 0);
		assert_true(strtoull(sget(e, "startTimeUnixNano"), NULL, 10) <=
			    strtoull(sget(e, "endTimeUnixNano"), NULL, 10));
		assert_true(strtoull(sget(e, "startTimeUnixNano"), NULL, 10) >=
			    strtoull(sget(box, "startTimeUnixNano"), NULL, 10));
		assert_true(strtoull(sget(e, "endTimeUnixNano"), NULL, 10) <=
			    strtoull(sget(box, "endTimeUnixNano"), NULL, 10));
	}
	assert_string_equal(attr_s(ok, "sandboxio.egress.name"), NAME_OK);
	assert_int_equal(attr_i(ok, "sandboxio.egress.name_len"), strlen(NAME_OK));
	assert_null(attr(ok, "sandboxio.egress.reason"));
	assert_true(attr_i(ok, "sandboxio.egress.bytes_up") > 20);
	assert_true(attr_i(ok, "sandboxio.egress.bytes_down") > 20);
	assert_int_equal(attr_i(ok, "sandboxio.egress.spans_dropped"), 0);
	/* A name no entry allows: only its length. */
	assert_string_equal(attr_s(refused, "sandboxio.egress.reason"), "name");
	assert_null(attr(refused, "sandboxio.egress.name"));
	assert_int_equal(attr_i(refused, "sandboxio.egress.name_len"), strlen(NAME_LEAK));
	assert_int_equal(attr_i(refused, "sandboxio.egress.bytes_down"), 0);
	json_decref(spans);
	bodies = otlp_receiver_bodies(r);
	assert_null(strstr(bodies, NAME_LEAK));
	assert_null(strstr(bodies, HEADER_VALUE));
	free(bodies);
	/* The creator's settings: its service name and its header. */
	svc = otlp_receiver_service(r);
	assert_string_equal(svc, "sandboxio-egress-contract");
	free(svc);
	hdr = otlp_receiver_header(r, "x-collector-key");
	assert_non_null(hdr);
	assert_string_equal(hdr, HEADER_VALUE);
	free(hdr);
	sbx_backend_free(b);
	otlp_receiver_stop(r);
}

/* What the command line of sandbox id's checker says of tracing: 0 no
 * --otlp, 1 --otlp 5 only, 2 the collector's URL or header itself; -1 no
 * checker found. */
static int checker_otlp(const char *id)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int got = -1;

	while (d && got < 0 && (de = readdir(d))) {
		char path[280], buf[4096] = "";
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0 || strcmp(buf, "sbx-egress") != 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n] = '\0';
		if (strstr(buf, id))
			got = strstr(buf, "http://") || strstr(buf, HEADER_VALUE) ? 2
			      : strstr(buf, " --otlp 5 ")			  ? 1
										  : 0;
	}
	if (d)
		closedir(d);
	return got;
}

/* Without tracing, nothing changes: the checker gets no settings. With
 * tracing, the settings come on a descriptor, never on the command line. */
static void test_egress_spans__settings_only_when_tracing(void **state)
{
	struct otlp_receiver *r;
	sbx_backend *b;
	sbx_sandbox *s;

	(void)state;
	if (!ready())
		skip();
	b = backend(NULL);
	s = names_sandbox(b);
	assert_int_equal(checker_otlp(sbx_sandbox_id(s)), 0);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_backend_free(b);
	r = otlp_receiver_start(0, 0);
	b = backend(otlp_receiver_url(r));
	s = names_sandbox(b);
	assert_int_equal(checker_otlp(sbx_sandbox_id(s)), 1);
	assert_int_equal(sbx_sandbox_close(s), 0);
	sbx_backend_free(b);
	otlp_receiver_stop(r);
}

static int group_setup(void **state)
{
	struct canary_set *c = NULL;
	char extra[256];
	int fd;

	*state = NULL;
	if (!ready())
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/sbx-espans-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	if (canary_start(&c, 1) != 0)
		return -1;
	*state = c;
	snprintf(hosts_path, sizeof(hosts_path), "%s/hosts", dir);
	fd = open(hosts_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(extra, sizeof(extra), "%s " NAME_OK "\n%s " NAME_LEAK "\n",
		 canary_get(c, 0)->addr4, canary_get(c, 0)->addr4);
	return canary_write_hosts(c, hosts_path, extra) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	const char *const rm[] = {"rm", "-rf", dir, NULL};

	if (*state)
		canary_stop(*state);
	if (dir[0])
		canary_spawn(rm, NULL, 0);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_egress_spans__one_span_per_connection),
		cmocka_unit_test(test_egress_spans__settings_only_when_tracing),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
