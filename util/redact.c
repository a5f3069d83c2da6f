/*
 * util/redact.c: the process-wide set of secret values, and the in-place
 * redactor that records pass through when they are closed.
 *
 * A small mutex-protected table: the number of live secrets is small, and
 * records are short, so a plain search per value is cheap and obviously
 * right.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/redact-int.h"

#define MAX_VALUES 256

struct value {
	int id;
	size_t len;
	unsigned char *bytes; /* mlock'ed, excluded from core dumps */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct value values[MAX_VALUES];
static int next_id = 1;
static int count;

int sbx__redact_register(const void *value, size_t len)
{
	int id = -1;

	if (!value || len == 0)
		return -1;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_VALUES; i++) {
		if (values[i].id)
			continue;
		values[i].bytes = malloc(len);
		if (!values[i].bytes)
			break;
		mlock(values[i].bytes, len);
		madvise(values[i].bytes, len, MADV_DONTDUMP);
		memcpy(values[i].bytes, value, len);
		values[i].len = len;
		values[i].id = id = next_id++;
		count++;
		break;
	}
	pthread_mutex_unlock(&lock);
	return id;
}

void sbx__redact_unregister(int id)
{
	if (id <= 0)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_VALUES; i++) {
		if (values[i].id != id)
			continue;
		explicit_bzero(values[i].bytes, values[i].len);
		munlock(values[i].bytes, values[i].len);
		free(values[i].bytes);
		values[i] = (struct value){0};
		count--;
		break;
	}
	pthread_mutex_unlock(&lock);
}

int sbx__redact_count(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = count;
	pthread_mutex_unlock(&lock);
	return n;
}

/*
 * Marks every byte of s that belongs to an occurrence of v, overlapping
 * occurrences included, and a prefix of v (at least SBX_REDACT_TAIL_MIN
 * bytes) that ends the string: a value cut off by truncation is still a
 * value.
 */
#define SBX_REDACT_TAIL_MIN 4

static void mark(const char *s, size_t n, unsigned char *m, const unsigned char *v, size_t vlen)
{
	for (size_t i = 0; i + vlen <= n; i++)
		if (memcmp(s + i, v, vlen) == 0)
			memset(m + i, 1, vlen);
	for (size_t k = vlen - 1; k >= SBX_REDACT_TAIL_MIN && k > 0; k--)
		if (k <= n && memcmp(s + n - k, v, k) == 0) {
			memset(m + n - k, 1, k);
			break;
		}
}

void sbx__redact_inplace(char *s, size_t cap)
{
	size_t n, o = 0, mlen = strlen(SBX_REDACTED);
	unsigned char *m;
	char *out;

	if (!s || cap == 0)
		return;
	n = strnlen(s, cap - 1);
	s[n] = '\0';
	pthread_mutex_lock(&lock);
	if (count == 0 || n == 0) {
		pthread_mutex_unlock(&lock);
		return;
	}
	m = calloc(n, 1);
	out = malloc(n * (mlen + 1) + 1);
	if (!m || !out) {
		/* Out of memory: fail closed, keep nothing. */
		pthread_mutex_unlock(&lock);
		free(m);
		free(out);
		snprintf(s, cap, "%s", SBX_REDACTED);
		return;
	}
	for (int i = 0; i < MAX_VALUES; i++)
		if (values[i].id)
			mark(s, n, m, values[i].bytes, values[i].len);
	pthread_mutex_unlock(&lock);
	/* Each run of marked bytes becomes one marker. */
	for (size_t i = 0; i < n; i++) {
		if (!m[i]) {
			out[o++] = s[i];
		} else if (i == 0 || !m[i - 1]) {
			memcpy(out + o, SBX_REDACTED, mlen);
			o += mlen;
		}
	}
	out[o] = '\0';
	snprintf(s, cap, "%s", out);
	explicit_bzero(out, o);
	free(out);
	free(m);
}
