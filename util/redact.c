/*
 * util/redact.c: the process-wide set of secret values, and the in-place
 * redactor that records pass through when they are closed.
 *
 * A small mutex-protected table: the number of live secrets is small, and
 * records are short, so a plain search per value is cheap and obviously
 * right.
 */
#include <pthread.h>
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

static void replace_all(char *s, size_t cap, const unsigned char *v, size_t vlen)
{
	size_t mark = strlen(SBX_REDACTED);
	char *p = s;

	while ((p = memmem(p, strlen(p), v, vlen)) != NULL) {
		size_t tail = strlen(p + vlen);
		size_t room = cap - (size_t)(p - s) - 1;
		size_t keep = mark + tail <= room ? tail : (room > mark ? room - mark : 0);

		memmove(p + (mark <= room ? mark : room), p + vlen, keep);
		memcpy(p, SBX_REDACTED, mark <= room ? mark : room);
		p[(mark <= room ? mark : room) + keep] = '\0';
		p += mark <= room ? mark : room;
		if (mark > room)
			break;
	}
}

void sbx__redact_inplace(char *s, size_t cap)
{
	if (!s || cap == 0)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_VALUES; i++)
		if (values[i].id)
			replace_all(s, cap, values[i].bytes, values[i].len);
	pthread_mutex_unlock(&lock);
}
