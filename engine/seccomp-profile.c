/*
 * engine/seccomp-profile.c: the seccomp profile every docker sandbox gets.
 *
 * An allowlist (default action: EPERM) that is a subset of what Docker's
 * default profile allows an unprivileged container, minus the calls this
 * project refuses outright: io_uring, userfaultfd, keyrings, bpf,
 * perf_event_open, ptrace and process_vm_*, every mount call, setns,
 * unshare of anything but a user namespace alone, and namespace flags on
 * clone (clone3 answers ENOSYS so that libc falls back to clone, where the
 * flags can be checked). unshare(CLONE_NEWUSER) is the init's, for a root
 * run (init/userns.c): every run is under the init's own filter by then,
 * which refuses unshare whatever its flags. socket(2) and
 * socketpair(2) are allowed for AF_UNIX, AF_INET and AF_INET6 only, and only
 * for stream, datagram and seqpacket types: every other family (netlink,
 * packet, and the rarely used ones whose modules a kernel may load on
 * demand: TIPC, RDS, CAN, X25, ...) and raw or packet types get EPERM. The
 * in-sandbox init adds a second, independent layer (init/seccomp.c).
 */
#include <sched.h>
#include <sys/socket.h>

#include <jansson.h>

#include "engine/docker-int.h"

static const char *const allowed[] = {
	"accept",
	"accept4",
	"access",
	"alarm",
	"arch_prctl",
	"bind",
	"brk",
	"capget",
	"capset",
	"chdir",
	"chmod",
	"chown",
	"clock_getres",
	"clock_gettime",
	"clock_nanosleep",
	"close",
	"close_range",
	"connect",
	"copy_file_range",
	"creat",
	"dup",
	"dup2",
	"dup3",
	"epoll_create",
	"epoll_create1",
	"epoll_ctl",
	"epoll_pwait",
	"epoll_pwait2",
	"epoll_wait",
	"eventfd",
	"eventfd2",
	"execve",
	"execveat",
	"exit",
	"exit_group",
	"faccessat",
	"faccessat2",
	"fadvise64",
	"fallocate",
	"fchdir",
	"fchmod",
	"fchmodat",
	"fchown",
	"fchownat",
	"fcntl",
	"fdatasync",
	"fgetxattr",
	"flistxattr",
	"flock",
	"fork",
	"fremovexattr",
	"fsetxattr",
	"fstat",
	"fstatfs",
	"fsync",
	"ftruncate",
	"futex",
	"futex_waitv",
	"futimesat",
	"get_robust_list",
	"getcpu",
	"getcwd",
	"getdents",
	"getdents64",
	"getegid",
	"geteuid",
	"getgid",
	"getgroups",
	"getitimer",
	"getpeername",
	"getpgid",
	"getpgrp",
	"getpid",
	"getppid",
	"getpriority",
	"getrandom",
	"getresgid",
	"getresuid",
	"getrlimit",
	"getrusage",
	"getsid",
	"getsockname",
	"getsockopt",
	"gettid",
	"gettimeofday",
	"getuid",
	"getxattr",
	"inotify_add_watch",
	"inotify_init",
	"inotify_init1",
	"inotify_rm_watch",
	"io_cancel",
	"io_destroy",
	"io_getevents",
	"io_setup",
	"io_submit",
	"ioctl",
	"ioprio_get",
	"ioprio_set",
	"kill",
	"lchown",
	"lgetxattr",
	"link",
	"linkat",
	"listen",
	"listxattr",
	"llistxattr",
	"lremovexattr",
	"lseek",
	"lsetxattr",
	"lstat",
	"madvise",
	"membarrier",
	"memfd_create",
	"mincore",
	"mkdir",
	"mkdirat",
	"mknod",
	"mknodat",
	"mlock",
	"mlock2",
	"mlockall",
	"mmap",
	"mprotect",
	"mq_getsetattr",
	"mq_notify",
	"mq_open",
	"mq_timedreceive",
	"mq_timedsend",
	"mq_unlink",
	"mremap",
	"msgctl",
	"msgget",
	"msgrcv",
	"msgsnd",
	"msync",
	"munlock",
	"munlockall",
	"munmap",
	"nanosleep",
	"newfstatat",
	"open",
	"openat",
	"openat2",
	"pause",
	"pidfd_open",
	"pidfd_send_signal",
	"pipe",
	"pipe2",
	"poll",
	"ppoll",
	"prctl",
	"pread64",
	"preadv",
	"preadv2",
	"prlimit64",
	"pselect6",
	"pwrite64",
	"pwritev",
	"pwritev2",
	"read",
	"readahead",
	"readlink",
	"readlinkat",
	"readv",
	"recvfrom",
	"recvmmsg",
	"recvmsg",
	"remap_file_pages",
	"removexattr",
	"rename",
	"renameat",
	"renameat2",
	"restart_syscall",
	"rmdir",
	"rseq",
	"rt_sigaction",
	"rt_sigpending",
	"rt_sigprocmask",
	"rt_sigqueueinfo",
	"rt_sigreturn",
	"rt_sigsuspend",
	"rt_sigtimedwait",
	"rt_tgsigqueueinfo",
	"sched_get_priority_max",
	"sched_get_priority_min",
	"sched_getaffinity",
	"sched_getattr",
	"sched_getparam",
	"sched_getscheduler",
	"sched_rr_get_interval",
	"sched_setaffinity",
	"sched_setattr",
	"sched_setparam",
	"sched_setscheduler",
	"sched_yield",
	"select",
	"semctl",
	"semget",
	"semop",
	"semtimedop",
	"sendfile",
	"sendmmsg",
	"sendmsg",
	"sendto",
	"set_robust_list",
	"set_tid_address",
	"setfsgid",
	"setfsuid",
	"setgid",
	"setgroups",
	"setitimer",
	"setpgid",
	"setpriority",
	"setregid",
	"setresgid",
	"setresuid",
	"setreuid",
	"setrlimit",
	"setsid",
	"setsockopt",
	"setuid",
	"setxattr",
	"shmat",
	"shmctl",
	"shmdt",
	"shmget",
	"shutdown",
	"sigaltstack",
	"signalfd",
	"signalfd4",
	"splice",
	"stat",
	"statfs",
	"statx",
	"symlink",
	"symlinkat",
	"sync",
	"sync_file_range",
	"syncfs",
	"sysinfo",
	"tee",
	"tgkill",
	"time",
	"timer_create",
	"timer_delete",
	"timer_getoverrun",
	"timer_gettime",
	"timer_settime",
	"timerfd_create",
	"timerfd_gettime",
	"timerfd_settime",
	"times",
	"tkill",
	"truncate",
	"umask",
	"uname",
	"unlink",
	"unlinkat",
	"utime",
	"utimensat",
	"utimes",
	"vfork",
	"wait4",
	"waitid",
	"write",
	"writev",
};

/* The families and types (the low four bits of the type argument) a sandbox may open. */
static const int socket_families[] = {AF_UNIX, AF_INET, AF_INET6};
static const int socket_types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};
#define SOCK_TYPE_BITS 0xf

/* Namespace bits of clone(2)'s flags: CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET. */
#define CLONE_NS_MASK 0x7E020000ull

#if defined(__x86_64__)
#define NATIVE_ARCH "SCMP_ARCH_X86_64"
#elif defined(__aarch64__)
#define NATIVE_ARCH "SCMP_ARCH_AARCH64"
#else
#error "add this architecture's seccomp name"
#endif

char *sbx__seccomp_profile_json(void)
{
	json_t *root, *rules, *names;
	char *out;

	names = json_array();
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		json_array_append_new(names, json_string(allowed[i]));
	rules = json_array();
	json_array_append_new(rules,
			      json_pack("{s:o,s:s}", "names", names, "action", "SCMP_ACT_ALLOW"));
	/* clone without namespace flags only. */
	json_array_append_new(rules, json_pack("{s:[s],s:s,s:[{s:i,s:I,s:I,s:s}]}", "names",
					       "clone", "action", "SCMP_ACT_ALLOW", "args", "index",
					       0, "value", (json_int_t)CLONE_NS_MASK, "valueTwo",
					       (json_int_t)0, "op", "SCMP_CMP_MASKED_EQ"));
	/* unshare of a user namespace alone: a root run's (init/userns.c). */
	json_array_append_new(rules,
			      json_pack("{s:[s],s:s,s:[{s:i,s:I,s:s}]}", "names", "unshare",
					"action", "SCMP_ACT_ALLOW", "args", "index", 0, "value",
					(json_int_t)CLONE_NEWUSER, "op", "SCMP_CMP_EQ"));
	/* socket and socketpair: one rule per allowed (family, type); the
	 * arguments of one rule must all match. Anything else gets the default. */
	for (size_t f = 0; f < sizeof(socket_families) / sizeof(socket_families[0]); f++)
		for (size_t t = 0; t < sizeof(socket_types) / sizeof(socket_types[0]); t++)
			json_array_append_new(
				rules,
				json_pack("{s:[s,s],s:s,s:[{s:i,s:I,s:s},{s:i,s:I,s:I,s:s}]}",
					  "names", "socket", "socketpair", "action",
					  "SCMP_ACT_ALLOW", "args", "index", 0, "value",
					  (json_int_t)socket_families[f], "op", "SCMP_CMP_EQ",
					  "index", 1, "value", (json_int_t)SOCK_TYPE_BITS,
					  "valueTwo", (json_int_t)socket_types[t], "op",
					  "SCMP_CMP_MASKED_EQ"));
	/* clone3 cannot be argument-checked (its flags are behind a pointer). */
	json_array_append_new(rules, json_pack("{s:[s],s:s,s:i}", "names", "clone3", "action",
					       "SCMP_ACT_ERRNO", "errnoRet", 38));
	/* personality: only the queries and the plain Linux personality. */
	{
		static const json_int_t ok[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			json_array_append_new(
				rules, json_pack("{s:[s],s:s,s:[{s:i,s:I,s:s}]}", "names",
						 "personality", "action", "SCMP_ACT_ALLOW", "args",
						 "index", 0, "value", ok[i], "op", "SCMP_CMP_EQ"));
	}
	/* Only the native architecture: a compat entry point (int 0x80, x32) is
	 * not in the list and so gets the default action. */
	root = json_pack("{s:s,s:i,s:[s],s:o}", "defaultAction", "SCMP_ACT_ERRNO",
			 "defaultErrnoRet", 1, "architectures", NATIVE_ARCH, "syscalls", rules);
	if (!root)
		return NULL;
	out = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return out;
}
