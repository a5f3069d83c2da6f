/*
 * engine/paused.c: the host's record of a paused sandbox, free of I/O so
 * that it can be fuzzed alone (tests/fuzz/fuzz_paused.c).
 *
 * A container's labels cannot change once it exists, so the deadline label
 * the reaper reads stays where create put it. What a pause changes lives in
 * a record beside it, /run/sandboxio/paused/<container id>, one line:
 *
 *	sandboxio-paused 1 at=<unix s> bound=<unix s> deadline=<unix s>
 *
 * at is when it was paused (0: running again), bound when a paused sandbox
 * is reaped (at + its pause bound), deadline the init's deadline (while
 * paused: the one the init kept when it was frozen; once resumed: the one
 * it was moved to). The reaper judges a sandbox with a record by bound
 * while it is paused and by deadline once it runs again, never by its label.
 */
#include <stdio.h>
#include <string.h>

#include "engine/docker-int.h"

/* Reads "<key>=<decimal>" at *p, then one separator sep; advances *p. */
static int field(const char **p, const char *end, const char *key, char sep, uint64_t *out)
{
	size_t kl = strlen(key);
	uint64_t v = 0;
	int digits = 0;

	if ((size_t)(end - *p) < kl + 1 || memcmp(*p, key, kl) != 0 || (*p)[kl] != '=')
		return -1;
	*p += kl + 1;
	while (*p < end && **p >= '0' && **p <= '9') {
		if (++digits > 11)
			return -1;
		v = v * 10 + (uint64_t)(**p - '0');
		(*p)++;
	}
	if (!digits || (digits > 1 && v == 0) || *p >= end || **p != sep)
		return -1;
	/* One zero is "0"; a leading zero otherwise is not the writer's. */
	if (digits > 1 && (*p)[-digits] == '0')
		return -1;
	(*p)++;
	if (v > SBX_PAUSED_TIME_MAX)
		return -1;
	*out = v;
	return 0;
}

int sbx__paused_parse(struct sbx__paused *out, const char *text, size_t len)
{
	static const char magic[] = "sandboxio-paused 1 ";
	const char *p = text, *end = text + len;
	struct sbx__paused r;

	if (!text || len < sizeof(magic) - 1 || memcmp(p, magic, sizeof(magic) - 1) != 0)
		return -1;
	p += sizeof(magic) - 1;
	if (field(&p, end, "at", ' ', &r.at) || field(&p, end, "bound", ' ', &r.bound) ||
	    field(&p, end, "deadline", '\n', &r.deadline) || p != end)
		return -1;
	/* Paused: bound after at; running: no bound. Always a deadline. */
	if (!r.deadline || (r.at && r.bound <= r.at) || (!r.at && r.bound))
		return -1;
	*out = r;
	return 0;
}

int sbx__paused_format(char *buf, size_t len, const struct sbx__paused *r)
{
	int n = snprintf(buf, len, "sandboxio-paused 1 at=%llu bound=%llu deadline=%llu\n",
			 (unsigned long long)r->at, (unsigned long long)r->bound,
			 (unsigned long long)r->deadline);

	return n < 0 || (size_t)n >= len ? -1 : n;
}

uint64_t sbx__paused_reap_at(const struct sbx__paused *r)
{
	return r->at ? r->bound : r->deadline;
}
