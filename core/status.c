/*
 * core/status.c: the name of a run's status, as results, audit events,
 * spans and the CLI print it. Below the sandbox API (core/sandbox.c) and
 * the audit log (core/audit.c), which both name statuses.
 */
#include <sandboxio.h>

const char *sbx_run_status_name(sbx_run_status st)
{
	switch (st) {
	case SBX_RUN_EXITED:
		return "exited";
	case SBX_RUN_TIMEOUT:
		return "timeout";
	case SBX_RUN_OOM:
		return "oom";
	case SBX_RUN_KILLED:
		return "killed";
	case SBX_RUN_ERROR:
		return "error";
	}
	return "unknown";
}
