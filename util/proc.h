/*
 * util/proc.h: what /proc/PID/stat says of a process: its start time
 * (field 22, in clock ticks since boot), which with the pid names one
 * process for good, and its name (comm).
 */
#ifndef SBX_UTIL_PROC_H
#define SBX_UTIL_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Reads pid's start time into *start and, when comm is not NULL, its name
 * (at most comm_len - 1 bytes). Returns 0, or -errno (-ENOENT: gone;
 * -EINVAL: a line this reader does not understand). */
int sbx__proc_stat(pid_t pid, unsigned long long *start, char *comm, size_t comm_len);

/* sbx__proc_stat() without the name. */
int sbx__proc_start_time(pid_t pid, unsigned long long *start);

#endif
