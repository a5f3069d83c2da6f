/*
 * server/paths.c: E2B's paths and user mapped onto a sandbox here, for
 * envd's file endpoints (server/envd.c) and its process service
 * (server/process.c): E2B's home /home/user is /workspace here (in the e2b
 * flavour's image /workspace is a link to /home/user, so both name one
 * place), and only its default user exists, with root for the commands of
 * the e2b flavour (serve --e2b-image).
 */
#include <stdio.h>
#include <stdlib.h>
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

int sbxs_run_user(const struct sbxs_box *b, const char *name, int *as_root, char *err, size_t esize)
{
	*as_root = 0;
	if (sbxs_user_ok(name))
		return 0;
	if (strcmp(name, "root") != 0) {
		snprintf(err, esize,
			 "user '%.64s' is not available on this server: commands run as the "
			 "sandbox user",
			 name);
		return -1;
	}
	if (!b->flavour) {
		snprintf(err, esize,
			 "user 'root' is not available in this sandbox: commands run as the "
			 "sandbox user; root runs are for template base of a server started "
			 "with --e2b-image");
		return -1;
	}
	if (b->srv->no_root) {
		snprintf(err, esize,
			 "user 'root' is refused by this server (serve --no-e2b-root): commands "
			 "run as the sandbox user");
		return -1;
	}
	*as_root = 1;
	return 0;
}

/* Whether env (NAME=VALUE, NULL-terminated) sets name. */
static int env_has(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return 1;
	return 0;
}

int sbxs_user_defaults(const struct sbxs_box *b, struct sbxs_proc *pr)
{
	const char *user = pr->as_root ? "root" : "user";
	const char *const vars[][2] = {
		{"HOME", pr->as_root ? "/root" : "/home/user"}, {"USER", user}, {"LOGNAME", user}};
	size_t n = 0;
	char **env;

	if (!b->flavour)
		return 0;
	if (pr->as_root && !pr->cwd && !(pr->cwd = strdup("/root")))
		return -1;
	while (pr->env && pr->env[n])
		n++;
	env = realloc(pr->env, (n + 4) * sizeof(*env));
	if (!env)
		return -1;
	pr->env = env;
	for (size_t i = 0; i < 3; i++) {
		if (env_has(env, vars[i][0]))
			continue;
		env[n + 1] = NULL;
		if (asprintf(&env[n], "%s=%s", vars[i][0], vars[i][1]) < 0) {
			env[n] = NULL;
			return -1;
		}
		n++;
	}
	env[n] = NULL;
	return 0;
}
