/*
 * cli/pause.c: `pause` and `resume`, which freeze a sandbox and thaw it
 * (sbx_sandbox_pause(), sbx_sandbox_resume()).
 *
 * Only the handle that created a sandbox holds the run channel through
 * which its init's deadline is moved at the resume, so the command goes
 * through the daemon, which holds the sandboxes it created. Without a
 * daemon the sandbox is opened by id, and the library refuses the pause
 * of such a handle, saying why: nothing is frozen that could not be
 * thawed with its lifetime kept.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/dclient.h"

int cmd_pause(const struct cli_opts *o)
{
	const char *what = o->cmd == CMD_PAUSE ? "pause" : "resume";
	sbx_backend *b = NULL;
	sbx_sandbox *s = NULL;
	uint64_t max_ms = 0;
	char msg[1024];
	int rc, code = 0, dfd = -1;

	if (o->nargs != 1) {
		cli_print_error(o, SBX_EINVALID, "%s: give one sandbox ID", what);
		return CLI_EXIT_FAIL;
	}
	if (o->pause_max && (sbx_parse_duration_ms(&max_ms, o->pause_max) < 0 || max_ms == 0)) {
		cli_print_error(o, SBX_EINVALID,
				"pause: --max '%.32s': expected a duration such as 30m or 2h",
				o->pause_max);
		return CLI_EXIT_FAIL;
	}
	rc = cli_daemon_open(o, &dfd);
	if (rc)
		return rc;
	if (dfd >= 0) {
		close(dfd); /* the request goes on a connection of its own */
		if (cli_daemon_on(o->args[0], what, max_ms, &code, msg, sizeof(msg)) < 0) {
			cli_print_error(o, code, "%s: %s", what, msg);
			return CLI_EXIT_FAIL;
		}
	} else {
		rc = cli_backend_open(o, NULL, &b);
		if (rc)
			return rc;
		rc = sbx_sandbox_open(&s, b, o->args[0]);
		if (rc == 0)
			rc = o->cmd == CMD_PAUSE ? sbx_sandbox_pause(s, max_ms)
						 : sbx_sandbox_resume(s);
		if (rc < 0) {
			cli_print_error(o, rc, "%s: %s", what, sbx_error_last()->message);
			sbx_sandbox_detach(s);
			sbx_backend_free(b);
			return CLI_EXIT_FAIL;
		}
		sbx_sandbox_detach(s);
		sbx_backend_free(b);
	}
	if (o->json)
		cli_print_json(json_pack("{s:s, s:s}", "id", o->args[0], what, "ok"));
	return 0;
}
