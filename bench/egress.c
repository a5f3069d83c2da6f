/*
 * bench/egress.c: what the name check of an allow_host entry costs per
 * connection and per byte (docs/egress-names.md). The peer is a CIDR entry
 * for the same address, whose connections go straight through the host's
 * table; a name entry's go through the sandbox's checker (sbx-egress),
 * which reads the ClientHello and relays. One canary (tests/canary/) serves
 * HTTPS on its own link with a certificate made here; nothing is sent
 * anywhere else.
 *
 * In each of two sandboxes (the name, the CIDR) one python3 process times,
 * alternating rounds: CONNS connections of TCP connect + TLS handshake +
 * GET of a small file + close (per connection, median ms), and MIB_RUNS
 * downloads of a BIG_MIB MiB file over one connection each (per byte,
 * median MiB/s). Prints both, the difference and the ratio (name / cidr).
 * Needs root (the canary and the allowlist), python3 in the default image,
 * openssl on the host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sandboxio.h>

#include "canary/canary.h"

#define NAME "bench.canary.test"
#define BIG_MIB 32

static const char client_py[] =
	"import socket,ssl,sys,time,statistics\n"
	"h,n,conns,runs=sys.argv[1],sys.argv[2],int(sys.argv[3]),int(sys.argv[4])\n"
	"c=ssl.create_default_context(); c.check_hostname=False; c.verify_mode=ssl.CERT_NONE\n"
	"def get(path):\n"
	"  s=c.wrap_socket(socket.create_connection((h,443),timeout=60),server_hostname=n)\n"
	"  s.sendall(('GET %s HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n'"
	"%(path,n)).encode())\n"
	"  got=0\n"
	"  while True:\n"
	"    x=s.recv(262144)\n"
	"    if not x: break\n"
	"    got+=len(x)\n"
	"  s.close(); return got\n"
	"t=[]\n"
	"for i in range(conns):\n"
	"  t0=time.perf_counter(); get('/small'); t.append((time.perf_counter()-t0)*1e3)\n"
	"r=[]\n"
	"for i in range(runs):\n"
	"  t0=time.perf_counter(); b=get('/big'); r.append(b/1048576/(time.perf_counter()-t0))\n"
	"print('%.3f %.1f'%(statistics.median(t),statistics.median(r)))\n";

static int sh(const char *const *argv)
{
	return canary_spawn(argv, NULL, 0) == 0 ? 0 : -1;
}

/* A self-signed certificate for NAME, and the two files the canary serves. */
static int prepare(const char *dir, char *cert, char *key, char *www)
{
	char path[256];
	FILE *f;

	sprintf(cert, "%s/cert.pem", dir);
	sprintf(key, "%s/key.pem", dir);
	sprintf(www, "%s/www", dir);
	{
		const char *const a[] = {"openssl",
					 "req",
					 "-x509",
					 "-newkey",
					 "ec",
					 "-pkeyopt",
					 "ec_paramgen_curve:prime256v1",
					 "-nodes",
					 "-keyout",
					 key,
					 "-out",
					 cert,
					 "-subj",
					 "/CN=" NAME,
					 "-addext",
					 "subjectAltName=DNS:" NAME,
					 "-days",
					 "2",
					 NULL};
		const char *const m[] = {"mkdir", "-p", www, NULL};

		if (sh(a) < 0 || sh(m) < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "%s/small", www);
	if (!(f = fopen(path, "we")))
		return -1;
	fputs("small\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/big", www);
	if (!(f = fopen(path, "we")))
		return -1;
	{
		static char block[1 << 20];

		memset(block, 'x', sizeof(block));
		for (int i = 0; i < BIG_MIB; i++)
			fwrite(block, 1, sizeof(block), f);
	}
	return fclose(f);
}

static sbx_sandbox *sandbox(sbx_backend *b, int by_name, const char *cidr)
{
	sbx_policy *p = NULL;
	sbx_sandbox *s = NULL;

	if (sbx_policy_new(&p) ||
	    (by_name ? sbx_policy_allow_host(p, NAME, 443) : sbx_policy_allow_cidr(p, cidr, 443)) ||
	    sbx_sandbox_create(&s, b, p)) {
		fprintf(stderr, "bench: %s\n", sbx_error_last()->message);
		s = NULL;
	}
	sbx_policy_free(p);
	return s;
}

/* One round in s: per-connection ms and MiB/s, medians of the round. */
static int round_in(sbx_sandbox *s, const char *addr, int conns, int runs, double *ms, double *mibs)
{
	char c[16], r[16];
	const char *argv[] = {"python3", "-c", client_py, addr, NAME, c, r, NULL};
	sbx_result *res = NULL;
	int rc;

	snprintf(c, sizeof(c), "%d", conns);
	snprintf(r, sizeof(r), "%d", runs);
	if (sbx_sandbox_run(&res, s, argv, NULL) != 0) {
		fprintf(stderr, "bench: run: %s\n", sbx_error_last()->message);
		return -1;
	}
	rc = res->exit_code == 0 && sscanf(res->stdout_data, "%lf %lf", ms, mibs) == 2 ? 0 : -1;
	if (rc < 0)
		fprintf(stderr, "bench: client in %s: %s%s\n", sbx_sandbox_id(s), res->stdout_data,
			res->stderr_data);
	sbx_result_free(res);
	return rc;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, conns = argc > 2 ? atoi(argv[2]) : 50,
	    runs = argc > 3 ? atoi(argv[3]) : 3, rc = 1;
	char dir[] = "/tmp/sbx-bench-egress-XXXXXX", cert[128], key[128], www[128];
	char hosts[160], line[160], cidr[32];
	double ms[2][64], mib[2][64];
	struct canary_set *cs = NULL;
	sbx_backend_options o = SBX_BACKEND_OPTIONS_INIT;
	sbx_backend *b = NULL;
	sbx_sandbox *s[2] = {NULL, NULL};
	const struct canary *c;

	if (rounds < 1 || rounds > 64 || conns < 1 || runs < 1) {
		fprintf(stderr, "usage: egress [ROUNDS (1..64)] [CONNS] [RUNS]\n");
		return 2;
	}
	if (!canary_supported() || !mkdtemp(dir) || prepare(dir, cert, key, www) < 0) {
		fprintf(stderr, "bench: needs root, a writable /tmp and openssl\n");
		return 1;
	}
	canary_tls_files(cert, key);
	canary_tls_docroot(www);
	if (canary_start(&cs, 1) != 0)
		goto out;
	c = canary_get(cs, 0);
	snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
	snprintf(line, sizeof(line), "%s " NAME "\n", c->addr4);
	snprintf(cidr, sizeof(cidr), "%s/32", c->addr4);
	if (canary_write_hosts(cs, hosts, line) != 0)
		goto out;
	o.hosts_file = hosts;
	if (sbx_backend_open(&b, "docker", &o) != 0) {
		fprintf(stderr, "bench: %s\n", sbx_error_last()->message);
		goto out;
	}
	if (!(s[0] = sandbox(b, 1, NULL)) || !(s[1] = sandbox(b, 0, cidr)))
		goto out;
	for (int i = 0; i < rounds; i++)
		for (int k = 0; k < 2; k++)
			if (round_in(s[k], c->addr4, conns, runs, &ms[k][i], &mib[k][i]) < 0)
				goto out;
	{
		double nm = median(ms[0], rounds), cm = median(ms[1], rounds);
		double nb = median(mib[0], rounds), cb = median(mib[1], rounds);

		printf("(m) per connection  name %7.3f ms  cidr %7.3f ms  +%.3f ms  ratio %.2f\n",
		       nm, cm, nm - cm, nm / cm);
		printf("(m) per byte        name %7.1f MiB/s  cidr %7.1f MiB/s  ratio %.2f "
		       "(time per byte: %.2f)\n",
		       nb, cb, nb / cb, cb / nb);
	}
	rc = 0;
out:
	sbx_sandbox_close(s[0]);
	sbx_sandbox_close(s[1]);
	sbx_backend_free(b);
	canary_stop(cs);
	{
		const char *const rm[] = {"rm", "-rf", dir, NULL};
		sh(rm);
	}
	return rc;
}
