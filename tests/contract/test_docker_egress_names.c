/*
 * tests/contract/test_docker_egress_names.c: an allow_host entry is
 * enforced by the name the sandbox presents (docs/egress-names.md), shown
 * by a canary that serves HTTPS and plain HTTP under two names from one
 * address and records which names it was asked for.
 *
 * The test makes its own CA and a certificate for allowed.canary.test and
 * other.canary.test (openssl), and gives the CA to the probe inside the
 * sandbox. Allowed: TLS with the allowed server name, HTTP with the allowed
 * Host. Reset at once (never a hang), and recorded by the canary as zero
 * requests: the other name (SNI and Host) at the same address and port, a
 * hello without a server name, a request without a Host. UDP (QUIC) to the
 * name's address is refused. With its checker killed, a connection is
 * refused at once (fail closed). A sandbox whose creator was killed keeps
 * its checker, which ends with the sandbox (close, the sandbox killed under
 * the library, the reaper) and leaves nothing: no process, no record, no
 * table.
 *
 * Safety: traffic goes only to the canary's address (canary_start checks
 * its route) and names resolve only from a hosts file this test writes.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "canary/canary.h"
#include "canary/probe.h"
#include "support/engine.h"

#define NAME_OK "allowed.canary.test"
#define NAME_OTHER "other.canary.test"
#define RECORD_DIR "/run/sandboxio/egress"

/* A probe over TLS and HTTP: CA, then MODE ADDR PORT NAME quadruples. tls:
 * TLS with server name NAME ("-": none), then an HTTP/1.1 GET with Host
 * NAME; http: a plain GET with Host NAME ("-": HTTP/1.0 with no Host). One
 * line per quadruple: "ok <answer>" or what failed. */
static const char tls_py[] =
	"import socket,ssl,sys,errno\n"
	"ca=sys.argv[1]; a=sys.argv[2:]\n"
	"for i in range(0,len(a),4):\n"
	"  m,h,p,n=a[i],a[i+1],int(a[i+2]),a[i+3]; r='?'\n"
	"  try:\n"
	"    s=socket.create_connection((h,p),timeout=10)\n"
	"    if m=='tls':\n"
	"      c=ssl.create_default_context(cadata=ca)\n"
	"      if n=='-': c.check_hostname=False; c.verify_mode=ssl.CERT_NONE\n"
	"      s=c.wrap_socket(s,server_hostname=None if n=='-' else n)\n"
	"    v=b'1.0' if n=='-' else b'1.1'\n"
	"    hd=b'' if n=='-' else b'Host: '+n.encode()+b'\\r\\n'\n"
	"    s.sendall(b'GET / HTTP/'+v+b'\\r\\n'+hd+b'Connection: close\\r\\n\\r\\n'); d=b''\n"
	"    while True:\n"
	"      x=s.recv(4096)\n"
	"      if not x: break\n"
	"      d+=x\n"
	"    r='ok '+' '.join(d.decode(errors='replace').split())\n"
	"  except socket.timeout: r='timeout'\n"
	"  except ssl.SSLError as e: r='ssl '+str(e.reason)\n"
	"  except OSError as e: r=errno.errorcode.get(e.errno,str(e))\n"
	"  print(m,h,p,n,r,flush=True)\n";

/* What a refused connection looks like inside: a reset, at once. */
#define REFUSED "ECONNRESET|ECONNREFUSED|EPIPE|ssl None|ssl UNEXPECTED_EOF_WHILE_READING"

static char dir[64], hosts_path[128], cert_path[128], key_path[128], audit_path[128];
static char www[128];
static int have_index; /* the package index was built */

/* The package the pip test installs, and the image with pip (the default
 * image has none; `sandboxio/e2b-base:2`, the E2B server's, has pip 23). */
#define PKG "sbxcanarypkg"
#define PIP_IMAGE "sandboxio/e2b-base:2"

/*
 * A PyPI-style simple index (PEP 503) under DIR with one pure-Python wheel
 * built here, written by the host's python3 (zipfile, hashlib: the standard
 * library only).
 */
static const char index_py[] =
	"import hashlib,base64,os,sys,zipfile\n"
	"d=sys.argv[1]; n='" PKG "'; w=n+'-1.0-py3-none-any.whl'\n"
	"os.makedirs(d+'/packages'); os.makedirs(d+'/simple/'+n)\n"
	"files={n+'/__init__.py':b'def hello():\\n    return \\'" PKG " says hello\\'\\n',\n"
	" n+'-1.0.dist-info/METADATA':b'Metadata-Version: 2.1\\nName: " PKG "\\nVersion: 1.0\\n',\n"
	" n+'-1.0.dist-info/WHEEL':b'Wheel-Version: 1.0\\nGenerator: canary\\n"
	"Root-Is-Purelib: true\\nTag: py3-none-any\\n'}\n"
	"rec=''\n"
	"for k,v in files.items():\n"
	"  h=base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()\n"
	"  rec+='%s,sha256=%s,%d\\n'%(k,h,len(v))\n"
	"rec+=n+'-1.0.dist-info/RECORD,,\\n'\n"
	"with zipfile.ZipFile(d+'/packages/'+w,'w') as z:\n"
	"  for k,v in files.items(): z.writestr(k,v)\n"
	"  z.writestr(n+'-1.0.dist-info/RECORD',rec)\n"
	"h=hashlib.sha256(open(d+'/packages/'+w,'rb').read()).hexdigest()\n"
	"open(d+'/simple/'+n+'/index.html','w').write("
	"'<html><body><a href=\"../../packages/%s#sha256=%s\">%s</a></body></html>'%(w,h,w))\n"
	"open(d+'/simple/index.html','w').write("
	"'<html><body><a href=\"'+n+'/\">'+n+'</a></body></html>')\n";
static char *ca_pem;

struct fx {
	struct canary_set *c;
	sbx_backend *b;
	sbx_sandbox *s;
};

static int ready(void)
{
	return canary_supported() && t_engine_ready();
}

#define NEED_READY()                                                                               \
	do {                                                                                       \
		if (!ready())                                                                      \
			skip();                                                                    \
	} while (0)

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, 16384);
	size_t n;

	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, 16383, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int run(const char *const *argv)
{
	return canary_spawn(argv, NULL, 0) == 0 ? 0 : -1;
}

/* A CA, and a certificate it signed for both names. */
static int make_certs(void)
{
	char ca[128], cakey[128], csr[128], ext[128];
	FILE *f;

	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cakey, sizeof(cakey), "%s/ca.key", dir);
	snprintf(csr, sizeof(csr), "%s/srv.csr", dir);
	snprintf(ext, sizeof(ext), "%s/ext.cnf", dir);
	snprintf(cert_path, sizeof(cert_path), "%s/srv.pem", dir);
	snprintf(key_path, sizeof(key_path), "%s/srv.key", dir);
	f = fopen(ext, "we");
	if (!f)
		return -1;
	fprintf(f, "subjectAltName=DNS:" NAME_OK ",DNS:" NAME_OTHER "\n"
		   "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
	fclose(f);
	{
		const char *const a1[] = {"openssl",
					  "req",
					  "-x509",
					  "-newkey",
					  "ec",
					  "-pkeyopt",
					  "ec_paramgen_curve:prime256v1",
					  "-nodes",
					  "-keyout",
					  cakey,
					  "-out",
					  ca,
					  "-subj",
					  "/CN=sandboxio test CA",
					  "-days",
					  "2",
					  NULL};
		const char *const a2[] = {
			"openssl",	"req",	    "-newkey",
			"ec",		"-pkeyopt", "ec_paramgen_curve:prime256v1",
			"-nodes",	"-keyout",  key_path,
			"-out",		csr,	    "-subj",
			"/CN=" NAME_OK, NULL};
		const char *const a3[] = {"openssl", "x509",	"-req",	  "-in", csr,
					  "-CA",     ca,	"-CAkey", cakey, "-CAcreateserial",
					  "-out",    cert_path, "-days",  "2",	 "-extfile",
					  ext,	     NULL};
		if (run(a1) < 0 || run(a2) < 0 || run(a3) < 0)
			return -1;
	}
	ca_pem = slurp(ca);
	return ca_pem ? 0 : -1;
}

static sbx_backend *backend(void)
{
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;

	o.hosts_file = hosts_path;
	o.audit_path = audit_path;
	o.no_reap_at_open = 1;
	if (sbx_backend_open(&b, "docker", &o) != 0)
		fail_msg("backend_open: %s", sbx_error_last()->message);
	return b;
}

static sbx_policy *names_policy(void)
{
	sbx_policy *p = t_policy();

	/* Every port of the name: 443 and 80 both go through the checker. */
	if (sbx_policy_allow_host_spec(p, NAME_OK) != 0)
		fail_msg("allow: %s", sbx_error_last()->message);
	return p;
}

static sbx_sandbox *names_sandbox(sbx_backend *b)
{
	sbx_policy *p = names_policy();
	sbx_sandbox *s = NULL;

	if (sbx_sandbox_create(&s, b, p) != 0)
		fail_msg("create: %s", sbx_error_last()->message);
	sbx_policy_free(p);
	return s;
}

static int group_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char extra[256];
	int fd;

	*state = f;
	if (!ready())
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/sbx-names-XXXXXX");
	if (!mkdtemp(dir) || make_certs() < 0) {
		fprintf(stderr, "setup: cannot make the test's certificates with openssl\n");
		return -1;
	}
	canary_tls_files(cert_path, key_path);
	snprintf(www, sizeof(www), "%s/www", dir);
	{
		const char *const argv[] = {"python3", "-c", index_py, www, NULL};
		have_index = canary_spawn(argv, NULL, 0) == 0;
	}
	canary_tls_docroot(www);
	if (canary_start(&f->c, 1) != 0)
		return -1;
	snprintf(hosts_path, sizeof(hosts_path), "%s/hosts", dir);
	snprintf(audit_path, sizeof(audit_path), "%s/audit.log", dir);
	fd = open(hosts_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(extra, sizeof(extra), "%s " NAME_OK "\n%s " NAME_OTHER "\n",
		 canary_get(f->c, 0)->addr4, canary_get(f->c, 0)->addr4);
	if (canary_write_hosts(f->c, hosts_path, extra) != 0)
		return -1;
	f->b = backend();
	f->s = names_sandbox(f->b);
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *f = *state;
	const char *const rm[] = {"rm", "-rf", dir, NULL};

	sbx_sandbox_close(f->s);
	sbx_backend_free(f->b);
	canary_stop(f->c);
	if (dir[0])
		canary_spawn(rm, NULL, 0);
	free(ca_pem);
	free(f);
	return 0;
}

/* Runs the TLS/HTTP probe in s on NULL-terminated quadruples; free() it. */
static char *tls_probe(sbx_sandbox *s, const char *const *q)
{
	const char *argv[64] = {"python3", "-c", tls_py, ca_pem};
	int n = 4;

	for (; *q && n < 62; q++)
		argv[n++] = *q;
	argv[n] = NULL;
	return t_run_ok(s, argv);
}

/* The answer to "MODE ADDR PORT NAME" in a probe's output. */
static const char *got_for(const char *out, const char *key, char *dst, size_t len)
{
	char k[256];

	snprintf(k, sizeof(k), "%s ", key);
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, k, strlen(k)) == 0) {
			size_t n = strcspn(p + strlen(k), "\n");
			snprintf(dst, len, "%.*s", (int)(n < len ? n : len - 1), p + strlen(k));
			return dst;
		}
	fail_msg("no answer for '%s' in:\n%s", key, out);
	return NULL;
}

static void expect_refused(const char *out, const char *key)
{
	char got[512], w[256], *save = NULL;

	got_for(out, key, got, sizeof(got));
	snprintf(w, sizeof(w), "%s", REFUSED);
	for (char *t = strtok_r(w, "|", &save); t; t = strtok_r(NULL, "|", &save))
		if (strcmp(got, t) == 0)
			return;
	fail_msg("%s: got '%s', want a reset (%s)", key, got, REFUSED);
}

static void expect_ok(const char *out, const char *key, const char *want)
{
	char got[512];

	got_for(out, key, got, sizeof(got));
	if (strncmp(got, "ok HTTP/1.", 10) != 0 || !strstr(got, " 200 OK") || !strstr(got, want))
		fail_msg("%s: got '%s', want a 200 with '%s'", key, got, want);
}

/* The name of a sandbox's table and checker record (sbx + its session's hex). */
static void np_name(sbx_sandbox *s, char *name, size_t len)
{
	char path[256];
	long st = 0;
	json_t *info;

	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(s));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	snprintf(name, len, "sbx%s",
		 json_string_value(
			 json_object_get(json_object_get(json_object_get(info, "Config"), "Labels"),
					 "io.sandboxio.session")) +
			 4);
	json_decref(info);
}

/* The checker's pid recorded for table name; 0 when none. */
static int checker_pid(const char *name)
{
	char path[128], buf[64] = "";
	int fd, pid = 0;
	ssize_t n;

	snprintf(path, sizeof(path), RECORD_DIR "/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return sscanf(buf, "%d", &pid) == 1 ? pid : 0;
}

/* Whether pid is a running sbx-egress (a zombie waiting for its reaper
 * is gone already: its sockets are closed). */
static int is_checker(int pid)
{
	char path[64], stat[512] = "";
	int fd;
	ssize_t n;
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	stat[n > 0 ? n : 0] = '\0';
	p = strrchr(stat, ')');
	return strstr(stat, " (sbx-egress) ") && p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Waits (hang guard only) for the process behind pidfd to end. */
static int wait_gone(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	int r;

	while ((r = poll(&p, 1, 60000)) < 0 && errno == EINTR)
		;
	return r == 1 ? 0 : -1;
}

static int table_exists(const char *name)
{
	const char *const argv[] = {"nft", "list", "table", "inet", name, NULL};

	return canary_spawn(argv, NULL, 0) == 0;
}

/* The socket inodes among pid's descriptors (at most max, into ino), and
 * whether one of them is the file at path. */
static int checker_fds(int pid, const char *path, unsigned long *ino, int max, int *n)
{
	char dpath[64], lpath[320], link[256];
	struct dirent *e;
	DIR *d;
	int holds = 0;

	*n = 0;
	snprintf(dpath, sizeof(dpath), "/proc/%d/fd", pid);
	d = opendir(dpath);
	assert_non_null(d);
	while ((e = readdir(d))) {
		ssize_t l;

		if (e->d_name[0] == '.')
			continue;
		snprintf(lpath, sizeof(lpath), "%s/%s", dpath, e->d_name);
		l = readlink(lpath, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (strcmp(link, path) == 0)
			holds = 1;
		if (strncmp(link, "socket:[", 8) == 0 && *n < max)
			ino[(*n)++] = strtoul(link + 8, NULL, 10);
	}
	closedir(d);
	return holds;
}

/* The port of the listener on 127.0.0.1 among the sockets ino (this host's
 * /proc/net/tcp); 0 when none. */
static int listen_port4(const unsigned long *ino, int n)
{
	char line[512];
	FILE *f = fopen("/proc/net/tcp", "re");
	int port = 0;

	while (f && !port && fgets(line, sizeof(line), f)) {
		unsigned long addr, inode;
		unsigned lport, st;

		if (sscanf(line, " %*d: %lx:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u %*d %lu", &addr,
			   &lport, &st, &inode) != 4)
			continue;
		for (int i = 0; i < n; i++)
			if (inode == ino[i] && st == 0x0A && addr == 0x0100007FUL)
				port = (int)lport;
	}
	if (f)
		fclose(f);
	return port;
}

/* Whether /proc/PID/status has the line want. */
static int status_has(int pid, const char *want)
{
	char path[64], *text;
	int has;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	text = slurp(path);
	assert_non_null(text);
	has = strstr(text, want) != NULL;
	free(text);
	return has;
}

/* Nothing of name is left: no checker process, no record, no table. */
static void expect_nothing_left(const char *name, int pid)
{
	char path[128];

	snprintf(path, sizeof(path), RECORD_DIR "/%s", name);
	assert_int_equal(access(path, F_OK), -1);
	assert_false(is_checker(pid));
	assert_false(table_exists(name));
}

/* The egress.connection events of sandbox id in the audit log (a JSON
 * array; decref it). */
static json_t *egress_events(const char *id)
{
	json_t *all = json_array();
	char line[8192];
	FILE *f = fopen(audit_path, "re");

	while (f && fgets(line, sizeof(line), f)) {
		json_t *ev = json_loads(line, 0, NULL);
		const char *e = json_string_value(json_object_get(ev, "event"));
		const char *sid = json_string_value(json_object_get(ev, "sandbox_id"));

		if (e && sid && strcmp(e, "egress.connection") == 0 && strcmp(sid, id) == 0)
			json_array_append(all, ev);
		json_decref(ev);
	}
	if (f)
		fclose(f);
	return all;
}

/* Waits for n events of sandbox id: each is written when its connection has
 * ended on the checker's side, which may be just after the client saw it
 * end. A hang guard only. */
static json_t *wait_egress_events(const char *id, size_t n)
{
	for (int i = 0; i < 6000; i++) {
		json_t *v = egress_events(id);

		if (json_array_size(v) >= n)
			return v;
		json_decref(v);
		usleep(10000);
	}
	return egress_events(id);
}

/* The one event for port and verdict/reason, checked; fails if not one. */
static json_t *event_for(json_t *evs, unsigned port, const char *verdict, const char *reason)
{
	json_t *found = NULL, *ev;
	size_t i;

	json_array_foreach(evs, i, ev)
	{
		const char *r = json_string_value(json_object_get(ev, "reason"));

		if (json_integer_value(json_object_get(ev, "port")) != port ||
		    strcmp(json_string_value(json_object_get(ev, "verdict")), verdict) != 0 ||
		    (reason ? !r || strcmp(r, reason) != 0 : r != NULL))
			continue;
		if (found)
			fail_msg("two events for port %u %s %s", port, verdict,
				 reason ? reason : "");
		found = ev;
	}
	if (!found)
		fail_msg("no event for port %u %s %s", port, verdict, reason ? reason : "");
	return found;
}

/* ===== The name presented ===== */

static void test_egress_names__allowed_name_passes_other_names_reset(void **state)
{
	struct fx *f = *state;
	const struct canary *c;
	char k[8][128], want[128], *out;
	unsigned tcp0;

	NEED_READY();
	c = canary_get(f->c, 0);
	tcp0 = canary_arrivals(f->c, 0, CANARY_TCP);
	{
		const char *q[] = {"tls",    c->addr4, "443",	   NAME_OK,  "tls",
				   c->addr4, "443",    NAME_OTHER, "tls",    c->addr4,
				   "443",    "-",      "http",	   c->addr4, "80",
				   NAME_OK,  "http",   c->addr4,   "80",     NAME_OTHER,
				   "http",   c->addr4, "80",	   "-",	     NULL};
		out = tls_probe(f->s, q);
	}
	snprintf(k[0], sizeof(k[0]), "tls %s 443 " NAME_OK, c->addr4);
	snprintf(k[1], sizeof(k[1]), "tls %s 443 " NAME_OTHER, c->addr4);
	snprintf(k[2], sizeof(k[2]), "tls %s 443 -", c->addr4);
	snprintf(k[3], sizeof(k[3]), "http %s 80 " NAME_OK, c->addr4);
	snprintf(k[4], sizeof(k[4]), "http %s 80 " NAME_OTHER, c->addr4);
	snprintf(k[5], sizeof(k[5]), "http %s 80 -", c->addr4);
	snprintf(want, sizeof(want), "canary-tls %s " NAME_OK, c->name);
	expect_ok(out, k[0], want);
	snprintf(want, sizeof(want), "canary %s", c->name);
	expect_ok(out, k[3], want);
	expect_refused(out, k[1]);
	expect_refused(out, k[2]);
	expect_refused(out, k[4]);
	expect_refused(out, k[5]);
	free(out);
	/* The canary's own record: the allowed name twice (TLS, HTTP), the
	 * other name never, and no connection beyond the two allowed. */
	assert_int_equal(canary_wait(f->c, 0, CANARY_TCP, tcp0 + 2, 10000), tcp0 + 2);
	assert_int_equal(canary_name_arrivals(f->c, 0, "sni:" NAME_OK), 1);
	assert_int_equal(canary_name_arrivals(f->c, 0, "host:" NAME_OK), 2);
	assert_int_equal(canary_name_arrivals(f->c, 0, "sni:" NAME_OTHER), 0);
	assert_int_equal(canary_name_arrivals(f->c, 0, "host:" NAME_OTHER), 0);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_TCP), tcp0 + 2);
}

/*
 * One audit event per connection, written by the checker: verdict, reason,
 * the name (only when an entry allows it), address, port, bytes each way,
 * duration, with the sandbox's tenant and id.
 */
static void test_egress_names__one_audit_event_per_connection(void **state)
{
	struct fx *f = *state;
	const struct canary *c;
	json_t *evs, *ev;
	char *out;
	sbx_sandbox *s;

	NEED_READY();
	c = canary_get(f->c, 0);
	s = names_sandbox(f->b);
	{
		const char *q[] = {"tls",  c->addr4,   "443", NAME_OK,	"tls", c->addr4,
				   "443",  NAME_OTHER, "tls", c->addr4, "443", "-",
				   "http", c->addr4,   "80",  "-",	NULL};
		out = tls_probe(s, q);
	}
	free(out);
	evs = wait_egress_events(sbx_sandbox_id(s), 4);
	assert_int_equal(json_array_size(evs), 4);
	ev = event_for(evs, 443, "allowed", NULL);
	assert_string_equal(json_string_value(json_object_get(ev, "name")), NAME_OK);
	assert_string_equal(json_string_value(json_object_get(ev, "address")), c->addr4);
	assert_string_equal(json_string_value(json_object_get(ev, "tenant")), t_tenant());
	assert_true(json_integer_value(json_object_get(ev, "bytes_up")) > 100);
	assert_true(json_integer_value(json_object_get(ev, "bytes_down")) > 100);
	assert_true(json_is_integer(json_object_get(ev, "duration_ms")));
	/* A name no entry allows is not written, only its length. */
	ev = event_for(evs, 443, "refused", "name");
	assert_true(json_is_null(json_object_get(ev, "name")));
	assert_int_equal(json_integer_value(json_object_get(ev, "name_len")), strlen(NAME_OTHER));
	assert_int_equal(json_integer_value(json_object_get(ev, "bytes_down")), 0);
	event_for(evs, 443, "refused", "no-sni");
	event_for(evs, 80, "refused", "no-host");
	{
		char *text = json_dumps(evs, 0);

		assert_null(strstr(text, NAME_OTHER));
		free(text);
	}
	json_decref(evs);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/*
 * A server that answers the first ClientHello with a HelloRetryRequest gets
 * a second hello, which could present another name than the first: the
 * checker resets the connection as the retry comes, and the audit says so.
 * The canary's CANARY_HTTPS_RETRY_PORT accepts only P-256, so the client's
 * first hello (its X25519 key share) is answered with a retry; without the
 * check the handshake would go on and the probe would get the page.
 */
static void test_egress_names__hello_retry_reset(void **state)
{
	struct fx *f = *state;
	const struct canary *c;
	char port[16], key[160];
	json_t *evs;
	char *out;
	sbx_sandbox *s;

	NEED_READY();
	c = canary_get(f->c, 0);
	s = names_sandbox(f->b);
	snprintf(port, sizeof(port), "%d", CANARY_HTTPS_RETRY_PORT);
	{
		const char *q[] = {"tls", c->addr4, port, NAME_OK, NULL};
		out = tls_probe(s, q);
	}
	snprintf(key, sizeof(key), "tls %s %s " NAME_OK, c->addr4, port);
	expect_refused(out, key);
	free(out);
	evs = wait_egress_events(sbx_sandbox_id(s), 1);
	event_for(evs, CANARY_HTTPS_RETRY_PORT, "refused", "hello-retry");
	json_decref(evs);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/*
 * The checker holds only what it needs: no descriptor its starter left open
 * (a file this test opened without close-on-exec, the library's Engine
 * connections), no capability and no way back to one; and a connection a
 * process of this host makes straight to its listener on 127.0.0.1 is reset
 * without an audit event, so that no local user can write the sandbox's
 * audit or take its connection slots.
 */
static void test_egress_names__checker_holds_only_its_own(void **state)
{
	struct fx *f = *state;
	const struct canary *c;
	static const char req[] = "GET / HTTP/1.1\r\nHost: " NAME_OK "\r\n\r\n";
	struct sockaddr_in a = {.sin_family = AF_INET};
	char name[32], marker[128], key[128], want[128], buf[64], *out;
	unsigned long ino[16];
	int pid, mfd, n_ino = 0, sfd;
	sbx_sandbox *s;
	json_t *evs;

	NEED_READY();
	c = canary_get(f->c, 0);
	snprintf(marker, sizeof(marker), "%s/inherited", dir);
	mfd = open(marker, O_WRONLY | O_CREAT, 0600); /* no O_CLOEXEC, on purpose */
	assert_true(mfd >= 0);
	s = names_sandbox(f->b);
	close(mfd);
	np_name(s, name, sizeof(name));
	pid = checker_pid(name);
	assert_true(is_checker(pid));
	/* Its sockets are its listeners (127.0.0.1, and [::1] when the host has it). */
	assert_false(checker_fds(pid, marker, ino, 16, &n_ino));
	if (n_ino < 1 || n_ino > 2)
		fail_msg("the checker holds %d sockets, want its 1 or 2 listeners", n_ino);
	assert_true(status_has(pid, "CapPrm:\t0000000000000000\n"));
	assert_true(status_has(pid, "CapEff:\t0000000000000000\n"));
	assert_true(status_has(pid, "CapBnd:\t0000000000000000\n"));
	assert_true(status_has(pid, "NoNewPrivs:\t1\n"));
	a.sin_port = htons((uint16_t)listen_port4(ino, n_ino));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(a.sin_port != 0);
	sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(sfd >= 0);
	assert_int_equal(connect(sfd, (struct sockaddr *)&a, sizeof(a)), 0);
	(void)send(sfd, req, sizeof(req) - 1, MSG_NOSIGNAL);
	assert_true(recv(sfd, buf, sizeof(buf), 0) <= 0);
	close(sfd);
	/* Then one connection of the sandbox: its event is the only one. */
	{
		const char *q[] = {"http", c->addr4, "80", NAME_OK, NULL};
		out = tls_probe(s, q);
	}
	snprintf(key, sizeof(key), "http %s 80 " NAME_OK, c->addr4);
	snprintf(want, sizeof(want), "canary %s", c->name);
	expect_ok(out, key, want);
	free(out);
	evs = wait_egress_events(sbx_sandbox_id(s), 1);
	if (json_array_size(evs) != 1) {
		char *text = json_dumps(evs, 0);
		fail_msg("want the sandbox's one event, got: %s", text);
	}
	assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "address")),
			    c->addr4);
	json_decref(evs);
	assert_int_equal(sbx_sandbox_close(s), 0);
}

/*
 * The PyPI case, through the CLI: `sandboxio run --allow-host NAME -- pip
 * install --index-url https://NAME/simple PKG` installs from the canary's
 * index and the package imports; the canary's CA goes in with --env. The
 * same index under the other name (the same address) fails, and the canary
 * records no request for it.
 */
static void test_egress_names__pip_installs_from_the_allowed_index(void **state)
{
	struct fx *f = *state;
	const char *cli = getenv("SBX_CLI");
	char env_ca[8192], out[8192] = "";
	long st = 0;
	json_t *img;
	int rc;

	NEED_READY();
	img = t_engine_get("/images/" PIP_IMAGE "/json", &st);
	json_decref(img);
	if (!cli || !have_index || st != 200)
		skip(); /* no CLI, no python3 on the host, or no image with pip */
	snprintf(env_ca, sizeof(env_ca), "CA=%s", ca_pem);
	{
		/* The CLI's and pip's complaints go into the output, for the message. */
		const char *const argv[] = {
			"sh",
			"-c",
			"exec \"$0\" \"$@\" 2>&1",
			cli,
			"run",
			"--image",
			PIP_IMAGE,
			"--tenant",
			t_tenant(),
			"--hosts-file",
			hosts_path,
			"--allow-host",
			NAME_OK ":443",
			"--env",
			env_ca,
			"--",
			"sh",
			"-c",
			"printf '%s' \"$CA\" >/tmp/ca.pem && "
			"pip install -q --disable-pip-version-check --retries 0 --timeout 20 "
			"--cert /tmp/ca.pem --target /tmp/site --index-url https://" NAME_OK
			"/simple " PKG " && PYTHONPATH=/tmp/site python3 -c 'import " PKG
			"; print(" PKG ".hello())' && "
			"if pip download -q --disable-pip-version-check --retries 0 --timeout 20 "
			"--cert /tmp/ca.pem --no-deps -d /tmp/dl --index-url https://" NAME_OTHER
			"/simple " PKG " 2>/dev/null; then echo other-name-reached; fi",
			NULL};
		rc = canary_spawn(argv, out, sizeof(out));
	}
	if (rc != 0 || !strstr(out, PKG " says hello"))
		fail_msg("pip install through the allowed name: exit %d, output:\n%s", rc, out);
	assert_null(strstr(out, "other-name-reached"));
	assert_true(canary_name_arrivals(f->c, 0, "host:" NAME_OK) >= 2); /* index, wheel */
	assert_int_equal(canary_name_arrivals(f->c, 0, "sni:" NAME_OTHER), 0);
	assert_int_equal(canary_name_arrivals(f->c, 0, "host:" NAME_OTHER), 0);
}

/* UDP to a name's address (QUIC) is refused: only TCP is checked by name. */
static void test_egress_names__udp_to_a_name_refused(void **state)
{
	struct fx *f = *state;
	const char *argv[8] = {"python3", "-c", CANARY_PROBE_PY, "udp", NULL, "7", NULL};
	sbx_result *r = NULL;
	unsigned udp0;

	NEED_READY();
	argv[4] = canary_get(f->c, 0)->addr4;
	udp0 = canary_arrivals(f->c, 0, CANARY_UDP);
	assert_int_equal(sbx_sandbox_run(&r, f->s, argv, NULL), 0);
	assert_int_equal(r->exit_code, 0);
	if (strncmp(r->stdout_data, "udp ", 4) != 0 || strstr(r->stdout_data, " ok "))
		fail_msg("udp to the name's address: %s", r->stdout_data);
	sbx_result_free(r);
	/* Refused by the host's rules with an ICMP answer: nothing reaches it. */
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_UDP), udp0);
}

/* ===== Fail closed, lifetime, nothing left ===== */

static void test_egress_names__checker_killed_refuses_at_once(void **state)
{
	struct fx *f = *state;
	const struct canary *c;
	char name[32], key[128], *out;
	sbx_sandbox *s;
	unsigned tcp0;
	int pid, pidfd;

	NEED_READY();
	c = canary_get(f->c, 0);
	s = names_sandbox(f->b);
	np_name(s, name, sizeof(name));
	pid = checker_pid(name);
	assert_true(pid > 1);
	assert_true(is_checker(pid));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(wait_gone(pidfd), 0);
	close(pidfd);
	tcp0 = canary_arrivals(f->c, 0, CANARY_TCP);
	{
		const char *q[] = {"tls", c->addr4, "443", NAME_OK, NULL};
		out = tls_probe(s, q);
	}
	snprintf(key, sizeof(key), "tls %s 443 " NAME_OK, c->addr4);
	got_for(out, key, key, sizeof(key));
	/* The host's reset, before any byte: refused, not a timeout. */
	assert_string_equal(key, "ECONNREFUSED");
	free(out);
	assert_int_equal(canary_arrivals(f->c, 0, CANARY_TCP), tcp0);
	assert_int_equal(sbx_sandbox_close(s), 0);
	expect_nothing_left(name, pid);
}

/* A process creates a sandbox and is killed (SIGKILL): the checker is not
 * its child and keeps enforcing; closing the sandbox ends it. */
static void test_egress_names__creator_killed_checker_stays_until_close(void **state)
{
	struct fx *f = *state;
	const struct canary *c;
	char id[128] = "", name[32], k1[128], k2[128], want[128], *out;
	int fds[2], status = 0, pid;
	sbx_sandbox *s = NULL;
	pid_t child;

	NEED_READY();
	c = canary_get(f->c, 0);
	(void)t_tenant(); /* fixed before the fork: the child shares the tenant */
	assert_int_equal(pipe(fds), 0);
	child = fork();
	if (child == 0) {
		sbx_backend *b = backend();
		sbx_policy *p = names_policy();

		if (sbx_policy_set_detached(p, 1) || sbx_sandbox_create(&s, b, p) ||
		    write(fds[1], sbx_sandbox_id(s), strlen(sbx_sandbox_id(s))) < 0)
			_exit(1);
		close(fds[1]);
		raise(SIGKILL);
		_exit(1);
	}
	close(fds[1]);
	assert_true(read(fds[0], id, sizeof(id) - 1) > 0);
	close(fds[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(sbx_sandbox_open(&s, f->b, id), 0);
	np_name(s, name, sizeof(name));
	pid = checker_pid(name);
	assert_true(is_checker(pid));
	{
		const char *q[] = {"tls",    c->addr4, "443",	   NAME_OK, "tls",
				   c->addr4, "443",    NAME_OTHER, NULL};
		out = tls_probe(s, q);
	}
	snprintf(k1, sizeof(k1), "tls %s 443 " NAME_OK, c->addr4);
	snprintf(k2, sizeof(k2), "tls %s 443 " NAME_OTHER, c->addr4);
	snprintf(want, sizeof(want), "canary-tls %s " NAME_OK, c->name);
	expect_ok(out, k1, want);
	expect_refused(out, k2);
	free(out);
	assert_int_equal(canary_name_arrivals(f->c, 0, "sni:" NAME_OTHER), 0);
	assert_int_equal(sbx_sandbox_close(s), 0);
	expect_nothing_left(name, pid);
}

static int count_removed(const sbx_reap_info *info, void *payload)
{
	struct {
		const char *id;
		int removed;
	} *want = payload;

	if (strcmp(info->id, want->id) == 0)
		want->removed += info->removed;
	return 0;
}

/* A process creates a sandbox (owned, not detached) and is killed: the
 * reaper removes the sandbox, and its checker with it. */
static void test_egress_names__reaper_ends_the_checker(void **state)
{
	struct fx *f = *state;
	sbx_reap_options o = SBX_REAP_OPTIONS_INIT;
	struct {
		const char *id;
		int removed;
	} want = {0};
	char id[128] = "", name[32];
	int fds[2], status = 0, pid, pidfd;
	sbx_sandbox *s = NULL;
	pid_t child;

	NEED_READY();
	(void)t_tenant(); /* fixed before the fork: the child shares the tenant */
	assert_int_equal(pipe(fds), 0);
	child = fork();
	if (child == 0) {
		sbx_backend *b = backend();
		sbx_policy *p = names_policy();

		if (sbx_sandbox_create(&s, b, p) ||
		    write(fds[1], sbx_sandbox_id(s), strlen(sbx_sandbox_id(s))) < 0)
			_exit(1);
		close(fds[1]);
		raise(SIGKILL);
		_exit(1);
	}
	close(fds[1]);
	assert_true(read(fds[0], id, sizeof(id) - 1) > 0);
	close(fds[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(sbx_sandbox_open(&s, f->b, id), 0);
	np_name(s, name, sizeof(name));
	sbx_sandbox_detach(s);
	pid = checker_pid(name);
	assert_true(is_checker(pid));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	want.id = id;
	o.tenant = t_tenant();
	assert_true(sbx_backend_reap(f->b, &o, count_removed, &want) >= 1);
	assert_int_equal(want.removed, 1);
	assert_int_equal(wait_gone(pidfd), 0);
	close(pidfd);
	expect_nothing_left(name, pid);
}

/* The sandbox killed under the library (its container stopped by the
 * Engine): the checker ends by itself, on its pidfd. */
static void test_egress_names__checker_ends_with_its_sandbox(void **state)
{
	struct fx *f = *state;
	char name[32], path[256];
	sbx_sandbox *s;
	long st = 0;
	int pid, pidfd;

	NEED_READY();
	s = names_sandbox(f->b);
	np_name(s, name, sizeof(name));
	pid = checker_pid(name);
	assert_true(is_checker(pid));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	snprintf(path, sizeof(path), "/containers/%s/kill", sbx_sandbox_id(s));
	json_decref(t_engine_request("POST", path, NULL, &st));
	assert_int_equal(st, 204);
	assert_int_equal(wait_gone(pidfd), 0);
	close(pidfd);
	assert_false(is_checker(pid));
	assert_int_equal(sbx_sandbox_close(s), 0);
	expect_nothing_left(name, pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_egress_names__allowed_name_passes_other_names_reset),
		cmocka_unit_test(test_egress_names__one_audit_event_per_connection),
		cmocka_unit_test(test_egress_names__hello_retry_reset),
		cmocka_unit_test(test_egress_names__checker_holds_only_its_own),
		cmocka_unit_test(test_egress_names__udp_to_a_name_refused),
		cmocka_unit_test(test_egress_names__pip_installs_from_the_allowed_index),
		cmocka_unit_test(test_egress_names__checker_killed_refuses_at_once),
		cmocka_unit_test(test_egress_names__creator_killed_checker_stays_until_close),
		cmocka_unit_test(test_egress_names__checker_ends_with_its_sandbox),
		cmocka_unit_test(test_egress_names__reaper_ends_the_checker),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
