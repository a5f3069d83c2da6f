/*
 * remote/e2b/start.c: the Start request of a run in an E2B sandbox: one
 * Connect envelope holding process.Process/Start's JSON (the command, its
 * arguments, environment and working directory). The environment may hold
 * secrets, so the JSON is escaped by hand straight into a buffer that is
 * wiped when freed (locked memory when the run has secrets) and never
 * passes through jansson's copies; for the same reason the strings' UTF-8
 * is checked here by hand.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "remote/e2b/e2b-int.h"
#include "util/error-int.h"
#include "util/secmem.h"

/* Whether s[0..len) is valid UTF-8 (envd takes JSON strings). By hand, not
 * jansson's check: the strings may be secrets, which must not be copied
 * into memory that is not wiped. */
static int utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (size_t k = 1; k <= n; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

/* A JSON writer that counts first (p NULL) and writes second. */
struct jw {
	char *p;
	size_t o;
};

static void jw_raw(struct jw *w, const char *s)
{
	size_t n = strlen(s);

	if (w->p)
		memcpy(w->p + w->o, s, n);
	w->o += n;
}

static void jw_str(struct jw *w, const char *s, size_t n)
{
	if (w->p) {
		w->p[w->o] = '"';
		w->o += 1 + sbx__json_escape(w->p + w->o + 1, s, n);
		w->p[w->o++] = '"';
	} else {
		w->o += 2 + sbx__json_escaped_len(s, n);
	}
}

/* Whether env entry i's name appears again later (the later one wins). */
static int env_overridden(const char *const *env, size_t i)
{
	size_t nl = strcspn(env[i], "=");

	for (size_t k = i + 1; env[k]; k++)
		if (strncmp(env[k], env[i], nl) == 0 && env[k][nl] == '=')
			return 1;
	return 0;
}

static void start_json(struct jw *w, const struct sbx__run_req *req, char *const *argv)
{
	int first = 1;

	jw_raw(w, "{\"process\":{\"cmd\":");
	jw_str(w, argv[0], strlen(argv[0]));
	jw_raw(w, ",\"args\":[");
	for (size_t i = 1; argv[i]; i++) {
		if (i > 1)
			jw_raw(w, ",");
		jw_str(w, argv[i], strlen(argv[i]));
	}
	jw_raw(w, "],\"envs\":{");
	for (size_t i = 0; req->env && req->env[i]; i++) {
		size_t nl = strcspn(req->env[i], "=");

		if (!req->env[i][nl] || env_overridden(req->env, i))
			continue;
		if (!first)
			jw_raw(w, ",");
		first = 0;
		jw_str(w, req->env[i], nl);
		jw_raw(w, ":");
		jw_str(w, req->env[i] + nl + 1, strlen(req->env[i] + nl + 1));
	}
	jw_raw(w, "}");
	if (req->workdir) {
		jw_raw(w, ",\"cwd\":");
		jw_str(w, req->workdir, strlen(req->workdir));
	}
	jw_raw(w, req->stdin_len ? "},\"stdin\":true}" : "},\"stdin\":false}");
}

void sbx__e2b_body_free(struct sbx__e2b_body *b)
{
	if (!b->p)
		return;
	if (b->locked) {
		sbx__secmem_free(b->p, b->size);
	} else {
		explicit_bzero(b->p, b->size);
		free(b->p);
	}
	b->p = NULL;
}

int sbx__e2b_start_body(struct sbx__e2b_body *out,
			const struct sbx__run_req *req,
			char *const *argv)
{
	struct jw w = {0};
	size_t json_len;

	for (size_t i = 0; argv[i]; i++)
		if (!utf8_ok(argv[i], strlen(argv[i])))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "e2b: argument %zu is not valid UTF-8; envd takes "
					      "JSON strings",
					      i);
	for (size_t i = 0; req->env && req->env[i]; i++)
		if (!utf8_ok(req->env[i], strlen(req->env[i])))
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
					      "e2b: environment entry %zu is not valid UTF-8; "
					      "envd takes JSON strings",
					      i);
	if (req->workdir && !utf8_ok(req->workdir, strlen(req->workdir)))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_REMOTE,
				      "e2b: the working directory is not valid UTF-8");
	start_json(&w, req, argv);
	json_len = w.o;
	if (json_len > SBX_E2B_FRAME_MAX)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_REMOTE,
				      "e2b: the run's request is %zu bytes, over the %u-byte "
				      "limit",
				      json_len, SBX_E2B_FRAME_MAX);
	out->size = SBX_CONNECT_HDR + json_len + 1;
	out->locked = req->has_secrets;
	out->p = out->locked ? sbx__secmem_alloc(out->size) : calloc(1, out->size);
	if (!out->p)
		return out->locked
			       ? sbx__error_os(SBX_EDENIED, errno,
					       "cannot lock memory for the run's environment "
					       "(RLIMIT_MEMLOCK)")
			       : sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_REMOTE, "out of memory");
	sbx__connect_prefix((unsigned char *)out->p, 0, (uint32_t)json_len);
	w = (struct jw){.p = out->p + SBX_CONNECT_HDR};
	start_json(&w, req, argv);
	out->len = SBX_CONNECT_HDR + w.o;
	return 0;
}
