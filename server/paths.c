/*
 * server/paths.c: E2B's paths and user mapped onto a sandbox here, for
 * envd's file endpoints (server/envd.c) and its process service
 * (server/process.c): E2B's home /home/user is /workspace here, and only
 * its default user exists.
 */
#include <stdio.h>
#include <string.h>

#include "server/server-int.h"

/*
 * A path in the sandbox: the E2B user's home (/home/user, ~) and relative
 * paths are /workspace here, the sandbox user's home and working
 * directory. The result is cleaned as Go's filepath.Clean does ("." and
 * repeated slashes go, ".." removes a segment and stops at /), so the
 * library, which refuses "..", gets a plain absolute path.
 */
int sbxs_map_path(const char *in, char *out, size_t size)
{
	char tmp[PATH_MAX_LEN + 16];
	const char *rest;
	char *save = NULL, *seg;
	size_t o = 0;

	if (!in || !*in || strlen(in) > PATH_MAX_LEN)
		return -1;
	if (in[0] == '~' && (in[1] == '\0' || in[1] == '/'))
		rest = in + 1;
	else if (strncmp(in, "/home/user", 10) == 0 && (in[10] == '\0' || in[10] == '/'))
		rest = in + 10;
	else if (in[0] != '/')
		rest = in;
	else
		rest = NULL;
	snprintf(tmp, sizeof(tmp), "%s%s", rest ? "/workspace/" : "", rest ? rest : in);
	for (seg = strtok_r(tmp, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		size_t l = strlen(seg);

		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			while (o > 0 && out[--o] != '/')
				;
			continue;
		}
		if (o + l + 2 > size)
			return -1;
		out[o++] = '/';
		memcpy(out + o, seg, l);
		o += l;
	}
	if (o == 0) {
		if (size < 2)
			return -1;
		out[o++] = '/';
	}
	out[o] = '\0';
	return 0;
}

/* Only E2B's default user exists here (commands run as the sandbox user). */
int sbxs_user_ok(const char *name)
{
	return !name || !*name || strcmp(name, "user") == 0;
}
