/*
 * init/seccomp.c: the extra seccomp layer sbx-init installs on itself before
 * starting untrusted code.
 *
 * Docker's own profile is the first layer. This one stacks on top of it and
 * refuses the kernel interfaces that untrusted code has no business with and
 * that have a history of privilege-escalation bugs (io_uring, bpf,
 * userfaultfd, keyrings, namespaces, mount API, ...), so a profile loosened
 * by an operator, or a container run unconfined, still keeps them closed.
 * Denied calls fail with EPERM rather than killing the caller, so programs
 * that probe for a feature degrade instead of crashing. System calls of any
 * other ABI than the native one (i386 or x32 on an x86_64 kernel) kill the
 * process: those entry points are a classic way around a filter written for
 * the native numbers. This is the only file that uses libseccomp.
 */
#include "init/init.h"

#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/socket.h>

/* Denied outright with EPERM; names this arch does not have are skipped. */
static const char *const denied[] = {
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"userfaultfd",
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"mount",
	"umount",
	"umount2",
	"move_mount",
	"open_tree",
	"fsopen",
	"fsmount",
	"fsconfig",
	"fspick",
	"mount_setattr",
	"pivot_root",
	"chroot",
	"unshare",
	"setns",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"acct",
	"swapon",
	"swapoff",
	"reboot",
	"syslog",
	"quotactl",
	"quotactl_fd",
	"lookup_dcookie",
	"open_by_handle_at",
	"name_to_handle_at",
	"vhangup",
	"iopl",
	"ioperm",
	"uselib",
	"nfsservctl",
	"clock_settime",
	"clock_settime64",
	"settimeofday",
	"clock_adjtime",
	"clock_adjtime64",
	"adjtimex",
	"pidfd_getfd",
};

/*
 * Namespace-creating clone flags. CLONE_NEWTIME is left out on purpose: in
 * clone(2) its bit (0x80) is part of the exit-signal field, and clone3 is
 * refused as a whole below.
 */
static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID,	CLONE_NEWNET,
};

/*
 * socket(2) and socketpair(2) are allowed for AF_UNIX (1), AF_INET (2) and
 * AF_INET6 (10) only: every other family, netlink and packet included, has
 * no use in a sandbox, and many (ALG, VSOCK, TIPC, RDS, CAN, X25, ...) have a
 * record of kernel bugs behind modules the kernel loads on demand. Nothing
 * the image runs needs netlink: glibc's getaddrinfo asks it only to order
 * several answers and assumes both IPv4 and IPv6 when it cannot. As rules
 * are ORed, the refusal is spelled as the complement: 0, 3 to 9, and 11 and
 * above (unsigned, so negative values too).
 */
#define FAMILY_FIRST_GAP 3 /* AF_INET + 1 */
#define FAMILY_LAST_GAP 9  /* AF_INET6 - 1 */
#define FAMILY_ABOVE 11	   /* AF_INET6 + 1 */
_Static_assert(AF_UNIX == 1 && AF_INET == 2 && AF_INET6 == 10, "family numbers");

/* Socket types (the low four bits of the type argument): only stream (1),
 * datagram (2) and seqpacket (5); raw (3), rdm (4) and packet (10, which
 * AF_INET turns into a packet socket) are refused. */
#define SOCK_TYPE_BITS 0xfu
static int socket_type_allowed(unsigned t)
{
	return t == SOCK_STREAM || t == SOCK_DGRAM || t == SOCK_SEQPACKET;
}

/*
 * On s390 the clone(2) flags are the second argument (the stack comes
 * first); everywhere else they are the first.
 */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

/* Adds a rule; a syscall libseccomp cannot map on this arch is skipped. */
static int add_rule(scmp_filter_ctx ctx,
		    uint32_t action,
		    const char *name,
		    unsigned int n,
		    const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);
	int rc;

	if (nr == __NR_SCMP_ERROR)
		return 0;
	rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (rc == 0)
		return 0;
	/* Negative numbers are libseccomp's stand-ins for calls this arch lacks. */
	if (nr < 0)
		return 0;
	sbx_init_msg("seccomp: cannot add a rule for %s: %s", name, strerror(-rc));
	return -1;
}

static int add_rules(scmp_filter_ctx ctx)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp cmp[1];
	size_t i;

	for (i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		if (add_rule(ctx, eperm, denied[i], 0, NULL) != 0)
			return -1;

	/* ENOSYS, not EPERM: libc then falls back to clone(2), which is checked. */
	if (add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL) != 0)
		return -1;

	/* Rules for one syscall are ORed: any namespace bit set is refused. */
	for (i = 0; i < sizeof(clone_ns_flags) / sizeof(clone_ns_flags[0]); i++) {
		cmp[0] = SCMP_CMP64(CLONE_FLAGS_ARG, SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
				    clone_ns_flags[i]);
		if (add_rule(ctx, eperm, "clone", 1, cmp) != 0)
			return -1;
	}

	for (const char *const *call = (const char *const[]){"socket", "socketpair", NULL}; *call;
	     call++) {
		uint32_t fam;
		unsigned t;

		cmp[0] = SCMP_A0_32(SCMP_CMP_EQ, 0);
		if (add_rule(ctx, eperm, *call, 1, cmp) != 0)
			return -1;
		for (fam = FAMILY_FIRST_GAP; fam <= FAMILY_LAST_GAP; fam++) {
			cmp[0] = SCMP_A0_32(SCMP_CMP_EQ, fam);
			if (add_rule(ctx, eperm, *call, 1, cmp) != 0)
				return -1;
		}
		cmp[0] = SCMP_A0_32(SCMP_CMP_GE, FAMILY_ABOVE);
		if (add_rule(ctx, eperm, *call, 1, cmp) != 0)
			return -1;
		for (t = 0; t <= SOCK_TYPE_BITS; t++) {
			if (socket_type_allowed(t))
				continue;
			cmp[0] = SCMP_A1_32(SCMP_CMP_MASKED_EQ, SOCK_TYPE_BITS, t);
			if (add_rule(ctx, eperm, *call, 1, cmp) != 0)
				return -1;
		}
	}

	/*
	 * personality(2) is allowed only to query (0xffffffff) or to ask for
	 * plain PER_LINUX (0); flags such as READ_IMPLIES_EXEC or
	 * ADDR_NO_RANDOMIZE weaken the process's own hardening. libseccomp
	 * cannot test one argument twice in a rule, so "neither all zeros nor
	 * all ones" is spelled as "some bit is 1 and the next bit (cyclically)
	 * is 0", one ORed rule per bit: any other value has such a pair.
	 */
	for (i = 0; i < 32; i++) {
		uint32_t bit = 1u << i, next = 1u << ((i + 1) % 32);

		cmp[0] = SCMP_A0_32(SCMP_CMP_MASKED_EQ, bit | next, bit);
		if (add_rule(ctx, eperm, "personality", 1, cmp) != 0)
			return -1;
	}
	return 0;
}

int sbx_init_seccomp(void)
{
	scmp_filter_ctx ctx;
	int rc;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		sbx_init_msg("seccomp: cannot create a filter");
		return -1;
	}
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	if (rc == 0) {
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
		/* Kernels before 4.14 lack KILL_PROCESS; killing the thread still stops the call. */
		if (rc != 0)
			rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
	}
	if (rc != 0) {
		sbx_init_msg("seccomp: cannot set filter attributes: %s", strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	if (add_rules(ctx) != 0) {
		seccomp_release(ctx);
		return -1;
	}
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		sbx_init_msg("seccomp: cannot load the filter: %s", strerror(-rc));
		return -1;
	}
	return 0;
}
