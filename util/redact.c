/*
 * util/redact.c: the process-wide set of secret values, and the in-place
 * redactor that records pass through when they are closed.
 *
 * A small mutex-protected table: the number of live secrets is small, and
 * records are short, so a plain search per value is cheap and obviously
 * right. Each value is held with its encoded forms (util/redact-forms.c) in
 * one locked, undumpable mapping of its own (util/secmem.c). The streaming
 * redactor for run output (util/redact-stream.c) marks through the same
 * table with sbx__redact_mark().
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/redact-int.h"
#include "util/secmem.h"

#define MAX_VALUES 256

struct value {
	int id;
	unsigned char *mem; /* the forms, back to back: locked, not dumped */
	size_t mem_len;
	size_t nforms; /* form[0] is the value itself */
	struct sbx_redact_form form[SBX_REDACT_MAX_FORMS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct value values[MAX_VALUES];
static int next_id = 1;
static int count;

int sbx__redact_register(const void *value, size_t len)
{
	struct value v = {0};
	int id = -1;

	if (!value || len == 0 || len > SBX_REDACT_VALUE_MAX)
		return -1;
	v.mem_len = sbx__redact_forms_size(len);
	v.mem = sbx__secmem_alloc(v.mem_len);
	if (!v.mem)
		return -1;
	v.nforms = sbx__redact_forms(v.mem, value, len, v.form, SBX_REDACT_MAX_FORMS);
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_VALUES; i++) {
		if (values[i].id)
			continue;
		v.id = id = next_id++;
		values[i] = v;
		count++;
		break;
	}
	pthread_mutex_unlock(&lock);
	if (id < 0) {
		sbx__secmem_free(v.mem, v.mem_len);
		errno = ENOSPC; /* the table is full */
	}
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
		sbx__secmem_free(values[i].mem, values[i].mem_len);
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
 * occurrences included, and with tail, a prefix of v (at least
 * SBX_REDACT_TAIL_MIN bytes) that ends the string: a value cut off by
 * truncation is still a value.
 */
static void mark(const unsigned char *s,
		 size_t n,
		 unsigned char *m,
		 const unsigned char *v,
		 size_t vlen,
		 int tail)
{
	const unsigned char *p = s, *q;
	size_t left = n;

	while (left >= vlen && (q = memmem(p, left, v, vlen))) {
		memset(m + (q - s), 1, vlen);
		left -= (size_t)(q - p) + 1;
		p = q + 1;
	}
	if (!tail)
		return;
	for (size_t k = vlen - 1; k >= SBX_REDACT_TAIL_MIN && k > 0; k--)
		if (k <= n && memcmp(s + n - k, v, k) == 0) {
			memset(m + n - k, 1, k);
			break;
		}
}

size_t sbx__redact_mark(const void *s, size_t n, unsigned char *m, int tail)
{
	size_t longest = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_VALUES; i++) {
		if (!values[i].id)
			continue;
		for (size_t f = 0; f < values[i].nforms; f++) {
			const struct sbx_redact_form *fm = &values[i].form[f];

			if (n)
				mark(s, n, m, values[i].mem + fm->off, fm->len, tail);
			if (fm->len > longest)
				longest = fm->len;
		}
	}
	pthread_mutex_unlock(&lock);
	return longest;
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
	if (sbx__redact_count() == 0 || n == 0)
		return;
	m = calloc(n, 1);
	out = malloc(n * (mlen + 1) + 1);
	if (!m || !out) {
		/* Out of memory: fail closed, keep nothing. */
		free(m);
		free(out);
		snprintf(s, cap, "%s", SBX_REDACTED);
		return;
	}
	sbx__redact_mark(s, n, m, 1);
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
