/*
 * core/secret.c: the secrets object (sandboxio/secret.h).
 *
 * Each secret is kept as one "NAME=value\0" string in a locked, undumpable
 * mapping of its own (util/secmem.c), which is exactly the environment
 * entry a run hands to the engine, so delivering it makes no other copy in
 * the library. Its values are held by the object's own redaction set
 * (util/redact-int.h) for as long as the object lives: records of the
 * sandboxes it is given to are redacted with them, and no others are. The
 * set's bound is the object's (SBX_SECRETS_MAX), so one object full leaves
 * every other untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sandboxio.h>

#include "core/policy-int.h"
#include "core/secret-int.h"
#include "util/error-int.h"
#include "util/redact-int.h"
#include "util/secmem.h"

#define NAME_MAX_LEN 255

struct secret {
	char *name;	/* not secret: plain heap */
	char *kv;	/* "NAME=value\0", locked */
	size_t kv_size; /* bytes allocated for kv */
	int redact_id;
};

struct sbx_secrets {
	struct secret item[SBX_SECRETS_MAX];
	size_t n;
	struct sbx_redact_set *set; /* its values' forms, shared with the sandboxes given it */
};

int sbx_secrets_new(sbx_secrets **out)
{
	sbx_secrets *s;

	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "secrets_new: out is NULL");
	s = calloc(1, sizeof(*s));
	if (s)
		s->set = sbx__redact_set_new(SBX_SECRETS_MAX);
	if (!s || !s->set) {
		free(s);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
	}
	*out = s;
	return 0;
}

static void secret_clear(sbx_secrets *s, struct secret *it)
{
	sbx__redact_set_remove(s->set, it->redact_id);
	sbx__secmem_free(it->kv, it->kv_size);
	free(it->name);
	memset(it, 0, sizeof(*it));
}

void sbx_secrets_free(sbx_secrets *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		secret_clear(s, &s->item[i]);
	/* Sandboxes may still refer to the set: it stops redacting these now. */
	sbx__redact_set_clear(s->set);
	sbx__redact_set_unref(s->set);
	free(s);
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static int valid_utf8(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = p[i];
		size_t k;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			k = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			k = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			k = 3, cp = c & 0x07, min = 0x10000;
		else
			return 0;
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n || (p[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k + 1;
	}
	return 1;
}

static int check_name(const sbx_secrets *s, const char *name)
{
	size_t n;

	if (!name)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "secret name is NULL");
	n = strnlen(name, NAME_MAX_LEN + 1);
	if (n > NAME_MAX_LEN || !sbx__valid_env_name(name, n))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "secret name '%.64s' is not an environment variable name "
				      "([A-Za-z_][A-Za-z0-9_]*, at most %d bytes)",
				      name, NAME_MAX_LEN);
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->item[i].name, name) == 0)
			return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
					      "secret %s is already in this object", name);
	if (s->n >= SBX_SECRETS_MAX)
		return sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
				      "at most %d secrets in one object", SBX_SECRETS_MAX);
	return 0;
}

/* Takes kv ("NAME=value\0" in a locked block of kv_size bytes) into s. */
static int take(sbx_secrets *s, const char *name, char *kv, size_t kv_size)
{
	struct secret *it = &s->item[s->n];
	size_t nlen = strlen(name), vlen = strlen(kv) - nlen - 1;

	if (vlen < SBX_SECRET_MIN_LEN || vlen > SBX_SECRET_MAX_LEN) {
		sbx__secmem_free(kv, kv_size);
		return sbx__error_set(vlen > SBX_SECRET_MAX_LEN ? SBX_ETOOBIG : SBX_EINVALID,
				      SBX_ERRCLASS_CORE,
				      "secret %s: a value is %d to %d bytes, this one is %zu", name,
				      SBX_SECRET_MIN_LEN, SBX_SECRET_MAX_LEN, vlen);
	}
	if (!valid_utf8((const unsigned char *)kv + nlen + 1, vlen)) {
		sbx__secmem_free(kv, kv_size);
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "secret %s: the value is not UTF-8 text; encode binary "
				      "values (base64) first",
				      name);
	}
	it->name = strdup(name);
	it->redact_id = it->name ? sbx__redact_set_add(s->set, kv + nlen + 1, vlen) : -1;
	if (it->redact_id <= 0) {
		int e = errno;

		free(it->name);
		it->name = NULL;
		sbx__secmem_free(kv, kv_size);
		if (e == EPERM || e == EAGAIN)
			return sbx__error_os(SBX_EDENIED, e,
					     "secret %s: cannot lock the redactor's copy in memory "
					     "(raise RLIMIT_MEMLOCK)",
					     name);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE,
				      "secret %s: the redactor cannot hold another value", name);
	}
	it->kv = kv;
	it->kv_size = kv_size;
	s->n++;
	return 0;
}

static char *kv_alloc(const char *name, size_t vlen, size_t *size_out, int *rc)
{
	size_t nlen = strlen(name);
	char *kv;

	*size_out = nlen + 1 + vlen + 1;
	kv = sbx__secmem_alloc(*size_out);
	if (!kv) {
		if (errno == EPERM || errno == EAGAIN)
			*rc = sbx__error_os(SBX_EDENIED, errno,
					    "secret %s: cannot lock memory for it (raise "
					    "RLIMIT_MEMLOCK)",
					    name);
		else
			*rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_CORE, "out of memory");
		return NULL;
	}
	memcpy(kv, name, nlen);
	kv[nlen] = '=';
	return kv;
}

int sbx_secrets_add(sbx_secrets *s, const char *name, const void *value, size_t len)
{
	size_t size, nlen;
	char *kv;
	int rc;

	sbx__error_clear();
	if (!s || (!value && len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "secrets_add: NULL argument");
	rc = check_name(s, name);
	if (rc < 0)
		return rc;
	if (len < SBX_SECRET_MIN_LEN || len > SBX_SECRET_MAX_LEN)
		return sbx__error_set(len > SBX_SECRET_MAX_LEN ? SBX_ETOOBIG : SBX_EINVALID,
				      SBX_ERRCLASS_CORE,
				      "secret %s: a value is %d to %d bytes, this one is %zu", name,
				      SBX_SECRET_MIN_LEN, SBX_SECRET_MAX_LEN, len);
	if (memchr(value, '\0', len))
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "secret %s: the value holds a NUL byte, which an environment "
				      "variable cannot carry",
				      name);
	kv = kv_alloc(name, len, &size, &rc);
	if (!kv)
		return rc;
	nlen = strlen(name);
	memcpy(kv + nlen + 1, value, len);
	return take(s, name, kv, size);
}

int sbx_secrets_add_file(sbx_secrets *s, const char *name, const char *path)
{
	const size_t max = SBX_SECRET_MAX_LEN + 2; /* room for "\r\n" */
	size_t size, nlen, got = 0;
	struct stat st;
	char *kv, *v;
	int fd, rc;

	sbx__error_clear();
	if (!s || !path)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "secrets_add_file: NULL argument");
	rc = check_name(s, name);
	if (rc < 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sbx__error_os(errno == ENOENT ? SBX_ENOTFOUND : SBX_EDENIED, errno,
				     "secret %s: open %.256s", name, path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "secret %s: %.256s is not a regular file", name, path);
	}
	kv = kv_alloc(name, max + 1, &size, &rc);
	if (!kv) {
		close(fd);
		return rc;
	}
	nlen = strlen(name);
	v = kv + nlen + 1;
	/* Read one byte past the bound to tell "too big" from "exactly full". */
	while (got < max + 1) {
		ssize_t r = read(fd, v + got, max + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = sbx__error_os(SBX_EDENIED, errno, "secret %s: read %.256s", name,
					   path);
			break;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (rc == 0 && got > max)
		rc = sbx__error_set(SBX_ETOOBIG, SBX_ERRCLASS_CORE,
				    "secret %s: %.256s is larger than %d bytes", name, path,
				    SBX_SECRET_MAX_LEN);
	if (rc == 0 && got && v[got - 1] == '\n') {
		v[--got] = '\0';
		if (got && v[got - 1] == '\r')
			v[--got] = '\0';
	}
	if (rc == 0 && memchr(v, '\0', got))
		rc = sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				    "secret %s: the file holds a NUL byte, which an environment "
				    "variable cannot carry",
				    name);
	if (rc < 0) {
		sbx__secmem_free(kv, size);
		return rc;
	}
	return take(s, name, kv, size);
}

size_t sbx_secrets_count(const sbx_secrets *s)
{
	return s ? s->n : 0;
}

const char *sbx_secrets_name(const sbx_secrets *s, size_t i)
{
	return s && i < s->n ? s->item[i].name : NULL;
}

const char *sbx__secret_expose_env(const sbx_secrets *s, size_t i)
{
	return s && i < s->n ? s->item[i].kv : NULL;
}

struct sbx_redact_set *sbx__secrets_redact_set(const sbx_secrets *s)
{
	return s ? s->set : NULL;
}
