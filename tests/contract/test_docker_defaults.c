/*
 * tests/contract/test_docker_defaults.c: the secure defaults, checked on a
 * real dockerd. Each case states one claim of docs/threat-model.md and
 * fails if the claim is false: what the Engine holds for the container (read
 * independently, not through the library) and what a program inside sees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
	json_t *inspect;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char path[256];
	long st;

	if (!t_engine_ready()) {
		fprintf(stderr, "contract: dockerd or the default image is missing\n");
		return -1;
	}
	f->b = t_backend();
	f->p = t_policy();
	if (sbx_sandbox_create(&f->s, f->b, f->p) != 0) {
		fprintf(stderr, "create: %s\n", sbx_error_last()->message);
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/%s/json", sbx_sandbox_id(f->s));
	f->inspect = t_engine_get(path, &st);
	if (st != 200)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f) /* the group setup failed before it made the fixture */
		return 0;
	json_decref(f->inspect);
	sbx_sandbox_close(f->s);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	free(f);
	return 0;
}

static json_t *hc(void **state)
{
	return json_object_get(((struct fx *)*state)->inspect, "HostConfig");
}

static const char *hcs(void **state, const char *key)
{
	return json_string_value(json_object_get(hc(state), key));
}

static long long hci(void **state, const char *key)
{
	return json_integer_value(json_object_get(hc(state), key));
}

static sbx_result *run(void **state, const char *line)
{
	return t_run(((struct fx *)*state)->s, line, NULL);
}

static void expect_out(void **state, const char *line, const char *want)
{
	sbx_result *r = run(state, line);

	if (r->status != SBX_RUN_EXITED || r->exit_code != 0)
		fail_msg("'%s': status %s code %d stderr %s", line, sbx_run_status_name(r->status),
			 r->exit_code, r->stderr_data);
	assert_string_equal(r->stdout_data, want);
	sbx_result_free(r);
}

/* ===== Network ===== */

static void test_engine_defaults__network_mode_none(void **state)
{
	assert_string_equal(hcs(state, "NetworkMode"), "none");
}

static void test_engine_defaults__only_loopback_inside(void **state)
{
	/* /proc/net/dev: two header lines, then one line per interface. */
	expect_out(state, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", "lo\n");
}

static void test_engine_defaults__no_route_v4_v6(void **state)
{
	expect_out(state,
		   "tail -n +2 /proc/net/route | wc -l; awk '$NF != \"lo\"' /proc/net/ipv6_route | "
		   "wc -l",
		   "0\n0\n");
}

static void test_engine_defaults__no_resolver(void **state)
{
	expect_out(state, "grep -c '^nameserver' /etc/resolv.conf || true", "0\n");
}

/*
 * The kernel has no route for any destination. A UDP connect() only looks
 * the route up and never sends a packet, whatever the policy: so this asks
 * the routing table without putting traffic on any wire. Whether packets
 * reach real hosts is the canary harness's job (test_docker_egress.c).
 */
static void test_engine_defaults__no_route_to_any_destination(void **state)
{
	expect_out(state,
		   "python3 -c \"import socket,errno\n"
		   "for fam,addr in "
		   "((socket.AF_INET,('198.51.100.7',9)),(socket.AF_INET6,('2001:db8::7',9))):\n"
		   "  s=socket.socket(fam,socket.SOCK_DGRAM)\n"
		   "  try: s.connect(addr); print('routed')\n"
		   "  except OSError as e: print('unreachable' if e.errno in "
		   "(errno.ENETUNREACH,errno.EHOSTUNREACH) else errno.errorcode[e.errno])\"",
		   "unreachable\nunreachable\n");
}

/* ===== Hardening ===== */

static void test_engine_defaults__caps_dropped_and_nnp(void **state)
{
	json_t *drop = json_object_get(hc(state), "CapDrop");
	json_t *opts = json_object_get(hc(state), "SecurityOpt");
	int nnp = 0, seccomp = 0;
	size_t i;
	json_t *o;

	assert_int_equal(json_array_size(drop), 1);
	assert_string_equal(json_string_value(json_array_get(drop, 0)), "ALL");
	assert_null(json_object_get(hc(state), "CapAdd") == json_null()
			    ? NULL
			    : (json_array_size(json_object_get(hc(state), "CapAdd")) ? "x" : NULL));
	json_array_foreach(opts, i, o)
	{
		const char *v = json_string_value(o);
		nnp |= strncmp(v, "no-new-privileges", 17) == 0;
		seccomp |= strncmp(v, "seccomp=", 8) == 0 && strstr(v, "SCMP_ACT_ERRNO");
	}
	assert_true(nnp);
	assert_true(seccomp);
	assert_false(json_is_true(json_object_get(hc(state), "Privileged")));
	assert_true(json_is_true(json_object_get(hc(state), "ReadonlyRootfs")));
	assert_string_equal(hcs(state, "IpcMode"), "private");
	assert_string_equal(hcs(state, "PidMode"), "");
}

static void test_engine_defaults__inside_no_caps_nnp_seccomp(void **state)
{
	/* The status file for the sets and the filter; prctl for no_new_privs
	 * and the ambient set, which gVisor's status file does not list. */
	expect_out(state,
		   "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|Seccomp):' "
		   "/proc/self/status | tr -s '\\t' ' '; python3 -c \"import ctypes\n"
		   "c=ctypes.CDLL(None)\n"
		   "print('nnp', c.prctl(39,0,0,0,0))\n"
		   "print('ambient', sum(c.prctl(47,1,k,0,0)==1 for k in range(41)))\"",
		   "CapInh: 0000000000000000\nCapPrm: 0000000000000000\n"
		   "CapEff: 0000000000000000\nCapBnd: 0000000000000000\n"
		   "Seccomp: 2\nnnp 1\nambient 0\n");
}

static void test_engine_defaults__non_root_user(void **state)
{
	struct fx *f = *state;
	sbx_result *r = run(state, "id -u; id -g");
	unsigned long uid = 0, gid = 1;
	char label[16];

	assert_int_equal(r->status, SBX_RUN_EXITED);
	assert_int_equal(sscanf(r->stdout_data, "%lu\n%lu\n", &uid, &gid), 2);
	sbx_result_free(r);
	/* Its own uid and gid, from the sandbox range, named in its label. */
	assert_int_equal(uid, gid);
	assert_true(uid >= 1500000000ul && uid < 1500000000ul + 65536);
	snprintf(label, sizeof(label), "%lu", uid);
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_object_get(f->inspect, "Config"), "Labels"),
			"io.sandboxio.uid")),
		label);
}

/* /var/tmp is the image's, on the root, and anyone's to write (1777): only
 * the read-only root can refuse the write, with EROFS. */
static void test_engine_defaults__read_only_root(void **state)
{
	expect_out(state,
		   "python3 -c \"import os; print(oct(os.stat('/var/tmp').st_mode))\"; "
		   "touch /var/tmp/x 2>&1 | grep -c 'Read-only file system'",
		   "0o41777\n1\n");
}

static void test_engine_defaults__only_init_mounted_from_host(void **state)
{
	json_t *binds = json_object_get(hc(state), "Binds");
	size_t i;
	json_t *b;

	const char *session = json_string_value(json_object_get(
		json_object_get(json_object_get(((struct fx *)*state)->inspect, "Config"),
				"Labels"),
		"io.sandboxio.session"));
	char disk[128];
	int ro = 0, rw = 0;

	/* The init and resolv.conf read-only; as root, the sandbox's own disk. */
	snprintf(disk, sizeof(disk), "/run/sandboxio/disks/%s:/workspace:rw", session);
	json_array_foreach(binds, i, b)
	{
		const char *v = json_string_value(b);
		size_t n = strlen(v);
		if (strcmp(v, disk) == 0) {
			rw++;
			continue;
		}
		assert_true(n > 3 && strcmp(v + n - 3, ":ro") == 0);
		assert_true(strstr(v, ":/.sbx/init:ro") || strstr(v, ":/etc/resolv.conf:ro"));
		ro++;
	}
	assert_int_equal(ro, 2);
	/* The gvisor tier keeps /workspace a tmpfs (docs/threat-model.md). */
	assert_int_equal(rw, geteuid() == 0 && t_tier() == SBX_TIER_CONTAINER ? 1 : 0);
	assert_int_equal(json_array_size(json_object_get(hc(state), "Mounts")), 0);
	expect_out(state, "ps -o comm= -p 1 2>/dev/null || cat /proc/1/comm", "init\n");
}

/* Each call the seccomp layers refuse, tried from a real program. */
static void test_engine_defaults__seccomp_denies(void **state)
{
	static const char *prog =
		"python3 -c \"import ctypes,os\n"
		"libc=ctypes.CDLL(None,use_errno=True)\n"
		"calls={'unshare':(272,0x10000000),'setns':(308,0,0),'mount':(165,0,0,0,0,0),"
		"'umount2':(166,0,0),'ptrace':(101,0,0,0,0),'bpf':(321,0,0,0),"
		"'perf_event_open':(298,0,0,0,0,0),'userfaultfd':(323,0),"
		"'io_uring_setup':(425,1,0),'keyctl':(250,0,0,0,0,0),'add_key':(248,0,0,0,0,0),"
		"'request_key':(249,0,0,0,0),'kexec_load':(246,0,0,0,0),'init_module':(175,0,0,0),"
		"'pivot_root':(155,0,0),'chroot':(161,0)}\n"
		"bad=[]\n"
		"for n,a in calls.items():\n"
		"  r=libc.syscall(*a); e=ctypes.get_errno()\n"
		"  if not (r==-1 and e in (1,38)): bad.append((n,r,e))\n"
		"print('denied' if not bad else bad)\"";

	expect_out(state, prog, "denied\n");
}

static void test_engine_defaults__clone_namespaces_denied(void **state)
{
	expect_out(state,
		   "python3 -c \"import ctypes,os\n"
		   "libc=ctypes.CDLL(None,use_errno=True)\n"
		   "r=libc.syscall(56,0x10000000|0x40000000|17,0,0,0,0)\n"
		   "if r==0: os._exit(0)\n"
		   "print(ctypes.get_errno() if r==-1 else 'cloned')\n"
		   "print(libc.syscall(435,0,0))\"",
		   "1\n-1\n");
}

/*
 * socket(2) and socketpair(2) for every family but AF_UNIX, AF_INET and
 * AF_INET6, and raw or packet types of those, must fail with EPERM: a
 * refusal by seccomp, not EAFNOSUPPORT because this kernel happens to lack
 * the module (a kernel that has it would load it on demand). The program
 * prints "refused" or what went wrong, and exits 0 only if every case held.
 */
#define SOCKET_FAMILIES_PY                                                                         \
	"python3 -c \"import socket,errno,sys,os\n"                                                \
	"ok=(errno.EPERM,errno.EAFNOSUPPORT,errno.EPROTONOSUPPORT,errno.ESOCKTNOSUPPORT) if "      \
	"os.environ.get('SBX_SENTRY') else "                                                       \
	"(errno.EPERM,)\n"                                                                         \
	"fams={'AF_UNSPEC':0,'AF_AX25':3,'AF_IPX':4,'AF_APPLETALK':5,'AF_X25':9,'AF_KEY':15,"      \
	"'AF_NETLINK':16,'AF_PACKET':17,'AF_RDS':21,'AF_CAN':29,'AF_TIPC':30,"                     \
	"'AF_BLUETOOTH':31,'AF_ALG':38,'AF_VSOCK':40,'AF_SMC':43,'AF_XDP':44,'AF_MCTP':45,"        \
	"'63':63}\n"                                                                               \
	"bad=[]\n"                                                                                 \
	"def refused(what,f):\n"                                                                   \
	"  try: f(); bad.append((what,'opened'))\n"                                                \
	"  except OSError as e:\n"                                                                 \
	"    if e.errno not in ok: bad.append((what,errno.errorcode.get(e.errno,e.errno)))\n"      \
	"for n,fa in fams.items():\n"                                                              \
	"  if os.environ.get('SBX_SENTRY') and n=='AF_NETLINK': continue\n"                        \
	"  for t in (1,2,3,5):\n"                                                                  \
	"    refused((n,t),lambda: socket.socket(fa,t).close())\n"                                 \
	"  refused((n,'pair'),lambda: socket.socketpair(fa,2))\n"                                  \
	"for fa in (2,10):\n"                                                                      \
	"  for t in (3,4,10):\n"                                                                   \
	"    refused((fa,t),lambda: socket.socket(fa,t,1).close())\n"                              \
	"for fa,t in ((1,1),(1,2),(1,5),(2,1),(2,2),(10,1),(10,2)): socket.socket(fa,t).close()\n" \
	"a,b=socket.socketpair(); a.close(); b.close()\n"                                          \
	"print('refused' if not bad else bad); sys.exit(0 if not bad else 3)\""

static void test_engine_defaults__socket_families_refused(void **state)
{
	expect_out(state, SOCKET_FAMILIES_PY, "refused\n");
}

/*
 * The same through the Engine's profile alone: a plain docker exec is not
 * under the init's filter, so this holds only if the Docker layer refuses
 * too. On the gvisor tier runsc does not load the Engine's profile into a
 * docker exec (docs/threat-model.md): what stands there is the Sentry,
 * which serves no family beyond unix, inet, inet6 and its own netlink
 * (EAFNOSUPPORT, or EPROTONOSUPPORT/ESOCKTNOSUPPORT for a type it lacks),
 * and refuses packet sockets without CAP_NET_RAW (EPERM); no other family
 * reaches the host's kernel.
 */
static void test_engine_defaults__socket_families_refused_by_engine_profile(void **state)
{
	struct fx *f = *state;
	json_t *ex, *req, *info;
	char path[256], *body;
	long st = 0;

	req = json_pack("{s:[s,s,s],s:b,s:b,s:[s]}", "Cmd", "/bin/sh", "-c", SOCKET_FAMILIES_PY,
			"AttachStdout", 1, "AttachStderr", 1, "Env",
			t_tier() == SBX_TIER_GVISOR ? "SBX_SENTRY=1" : "SBX_RUNC=1");
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	snprintf(path, sizeof(path), "/containers/%s/exec", sbx_sandbox_id(f->s));
	ex = t_engine_request("POST", path, body, &st);
	free(body);
	assert_int_equal(st, 201);
	snprintf(path, sizeof(path), "/exec/%s/start",
		 json_string_value(json_object_get(ex, "Id")));
	/* Not detached: the answer ends when the program does. */
	json_decref(t_engine_request("POST", path, "{\"Detach\":false,\"Tty\":true}", &st));
	assert_int_equal(st, 200);
	snprintf(path, sizeof(path), "/exec/%s/json", json_string_value(json_object_get(ex, "Id")));
	info = t_engine_get(path, &st);
	assert_int_equal(st, 200);
	assert_false(json_is_true(json_object_get(info, "Running")));
	assert_int_equal(json_integer_value(json_object_get(info, "ExitCode")), 0);
	json_decref(info);
	json_decref(ex);
}

/* ===== Caps ===== */

static void test_engine_defaults__limits_in_host_config(void **state)
{
	json_t *ul = json_object_get(hc(state), "Ulimits");
	int nofile = 0, core = 0, nproc = 0;
	size_t i;
	json_t *u;

	assert_int_equal(hci(state, "Memory"), 512ll << 20);
	assert_int_equal(hci(state, "MemorySwap"), 512ll << 20);
	assert_int_equal(hci(state, "NanoCpus"), 1000000000ll);
	/* On the gvisor tier the cap is the Sentry's RLIMIT_NPROC, and the
	 * host cgroup's has room for the Sentry (engine/tiers.c). */
	assert_int_equal(hci(state, "PidsLimit"),
			 t_tier() == SBX_TIER_GVISOR ? 128 + 8 * 256 : 256);
	json_array_foreach(ul, i, u)
	{
		const char *n = json_string_value(json_object_get(u, "Name"));
		long long soft = json_integer_value(json_object_get(u, "Soft"));
		long long hard = json_integer_value(json_object_get(u, "Hard"));
		if (strcmp(n, "nofile") == 0)
			nofile = soft == 1024 && hard == 1024;
		if (strcmp(n, "core") == 0)
			core = soft == 0 && hard == 0;
		if (strcmp(n, "nproc") == 0)
			nproc = soft == 256 && hard == 256;
	}
	assert_true(nofile);
	assert_true(core);
	assert_int_equal(nproc, t_tier() == SBX_TIER_GVISOR);
}

static void test_engine_defaults__limits_seen_inside(void **state)
{
	expect_out(state, "ulimit -n; ulimit -c; ulimit -Hn", "1024\n0\n1024\n");
}

static void test_engine_defaults__writable_space_bounded(void **state)
{
	/* /workspace + /tmp + /dev/shm add up to the 1 GiB default. */
	expect_out(state,
		   "df -B1 --output=size /workspace /tmp /dev/shm | tail -n +2 | "
		   "awk '{s+=$1} END {print (s <= 1073741824 && s > 1000000000) ? \"ok\" : s}'",
		   "ok\n");
}

/* ===== Tenancy ===== */

static void test_engine_defaults__labelled(void **state)
{
	json_t *l = json_object_get(json_object_get(((struct fx *)*state)->inspect, "Config"),
				    "Labels");
	static const char *keys[] = {"managed-by", "tenant",  "session", "owner-host",
				     "owner-pid",  "created", "deadline"};
	char k[64];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(k, sizeof(k), "io.sandboxio.%s", keys[i]);
		if (!json_string_value(json_object_get(l, k)))
			fail_msg("label %s is missing", k);
	}
	assert_string_equal(json_string_value(json_object_get(l, "io.sandboxio.tenant")),
			    t_tenant());
	assert_string_equal(json_string_value(json_object_get(l, "io.sandboxio.managed-by")),
			    "sandboxio");
}

static void test_engine_defaults__tier_reported(void **state)
{
	assert_int_equal(sbx_sandbox_tier(((struct fx *)*state)->s), t_tier());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_defaults__network_mode_none),
		cmocka_unit_test(test_engine_defaults__only_loopback_inside),
		cmocka_unit_test(test_engine_defaults__no_route_v4_v6),
		cmocka_unit_test(test_engine_defaults__no_resolver),
		cmocka_unit_test(test_engine_defaults__no_route_to_any_destination),
		cmocka_unit_test(test_engine_defaults__caps_dropped_and_nnp),
		cmocka_unit_test(test_engine_defaults__inside_no_caps_nnp_seccomp),
		cmocka_unit_test(test_engine_defaults__non_root_user),
		cmocka_unit_test(test_engine_defaults__read_only_root),
		cmocka_unit_test(test_engine_defaults__only_init_mounted_from_host),
		cmocka_unit_test(test_engine_defaults__seccomp_denies),
		cmocka_unit_test(test_engine_defaults__clone_namespaces_denied),
		cmocka_unit_test(test_engine_defaults__socket_families_refused),
		cmocka_unit_test(test_engine_defaults__socket_families_refused_by_engine_profile),
		cmocka_unit_test(test_engine_defaults__limits_in_host_config),
		cmocka_unit_test(test_engine_defaults__limits_seen_inside),
		cmocka_unit_test(test_engine_defaults__writable_space_bounded),
		cmocka_unit_test(test_engine_defaults__labelled),
		cmocka_unit_test(test_engine_defaults__tier_reported),
	};

	return cmocka_run_group_tests_name("engine_contract[docker] defaults", tests, setup,
					   teardown);
}
