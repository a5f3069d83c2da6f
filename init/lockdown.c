/*
 * init/lockdown.c: what every mode of sbx-init applies before it runs
 * anything of the sandbox's: no_new_privs, the capability drop
 * (init/caps.c) and the extra seccomp layer (init/seccomp.c).
 */
#include "init/init.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

int sbx_init_lockdown(void)
{
	/*
	 * Set explicitly even though the container has no-new-privileges and
	 * the seccomp filter sets it too: a setuid binary in the image must
	 * never gain privileges, whatever the engine was told.
	 */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		sbx_init_msg("cannot set no_new_privs: %s", strerror(errno));
		return -1;
	}
	if (sbx_init_drop_caps() != 0)
		return -1;
	if (sbx_init_seccomp() != 0)
		return -1;
	return 0;
}
