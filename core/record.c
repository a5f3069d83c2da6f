/*
 * core/record.c: what every record passes through when it is closed (see
 * record-int.h).
 *
 * A record is redacted with the process's own values and those of the
 * scope the calling thread entered for the sandbox whose operation closes
 * it (util/redact-int.h): never with another sandbox's. A record closed
 * outside any sandbox's operation is redacted with every live value.
 *
 * Redaction works on the strings of a record before it is encoded, not on
 * the encoded text: JSON escaping would hide a value holding '"', '\' or a
 * control character from a search of the text, and a search of the text
 * could cut through the encoding itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/record-int.h"
#include "util/redact-int.h"

static int redact_string(json_t *v)
{
	size_t n = json_string_length(v), cap = 4 * n + 64;
	char *buf = malloc(cap);
	int rc;

	if (!buf) {
		json_string_set(v, SBX_REDACTED);
		return -1;
	}
	/* A NUL inside the string ends it here: what follows is dropped. */
	memcpy(buf, json_string_value(v), n);
	buf[n] = '\0';
	sbx__redact_inplace(buf, cap);
	rc = json_string_set(v, buf) < 0 ? -1 : 0;
	if (rc < 0)
		json_string_set(v, SBX_REDACTED);
	explicit_bzero(buf, n);
	free(buf);
	return rc;
}

int sbx__record_redact(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;
	int rc = 0;

	/* The process's values and those of the sandbox whose operation closes it. */
	if (!sbx__redact_current_any())
		return 0;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return redact_string(v);
	case JSON_OBJECT:
		json_object_foreach(v, key, item) if (sbx__record_redact(item) < 0) rc = -1;
		return rc;
	case JSON_ARRAY:
		json_array_foreach(v, i, item) if (sbx__record_redact(item) < 0) rc = -1;
		return rc;
	case JSON_INTEGER:
	case JSON_REAL:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		return 0;
	}
	return 0;
}

json_t *sbx__record_string(const char *s)
{
	json_t *v = json_string(s ? s : "");

	if (!v)
		v = json_string("<not UTF-8>");
	if (v)
		sbx__record_redact(v);
	return v;
}

void sbx__record_random_hex(char *dst, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[32];
	int zero = 1;

	if (n > sizeof(b))
		n = sizeof(b);
	while (zero) {
		if (getrandom(b, n, 0) != (ssize_t)n) {
			/* No entropy source: still unique enough within a process. */
			uint64_t t = sbx__record_now_ns() ^ (uint64_t)(uintptr_t)dst;

			for (size_t i = 0; i < n; i++)
				b[i] = (unsigned char)(t >> (8 * (i % 8))) ^ (unsigned char)i;
		}
		for (size_t i = 0; i < n; i++)
			zero &= b[i] == 0;
		zero = zero && n > 0;
	}
	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = hex[b[i] >> 4];
		dst[2 * i + 1] = hex[b[i] & 15];
	}
	dst[2 * n] = '\0';
}

uint64_t sbx__record_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sbx__record_time(char dst[32], uint64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;
	char base[24];

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(dst, 32, "%s.%06uZ", base, (unsigned)(ns % 1000000000u / 1000u));
}
