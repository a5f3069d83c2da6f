/*
 * util/redact.c: sets of secret values, the scopes that gather them, and
 * the in-place redactor that records pass through when they are closed.
 *
 * A set is a small mutex-protected table with a bound of its own (a
 * secrets object's, or the process's): the number of live secrets is
 * small, and records are short, so a plain search per value is cheap and
 * obviously right. Each value is held with its encoded forms
 * (util/redact-forms.c) in one locked, undumpable mapping of its own
 * (util/secmem.c). Sets are shared by reference: the secrets object owns
 * one, and each sandbox it was given to keeps a reference in its scope
 * until the sandbox's handle is freed; clearing a set (the object freed)
 * wipes its values at once, whoever still refers to it. The streaming
 * redactor for run output (util/redact-stream.c) marks with the same
 * sbx__redact_mark().
 *
 * Only complete occurrences are marked. An earlier rule also marked a
 * trailing prefix of a value at the end of a record; since a sandbox
 * controls how its output ends, that rule told it whether a guessed prefix
 * was right, so it is gone: a record's last bytes are redacted exactly as
 * any others.
 *
 * A record closed outside any sandbox's operation (an error about the
 * caller's own arguments, say) belongs to no sandbox: it is redacted with
 * every live value, as no sandbox's output reaches it.
 *
 * Encoded forms (base64, hex) are searched in a copy of the text with line
 * breaks taken out (runs of at most SBX_REDACT_BREAK_MAX CR/LF bytes; a
 * longer run stays as one LF, which no encoded form holds, so no match
 * crosses it), and each match is mapped back to the bytes it spans, breaks
 * included.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/redact-int.h"
#include "util/secmem.h"

struct value {
	int id;
	unsigned char *mem; /* the forms, back to back: locked, not dumped */
	size_t mem_len;
	size_t nforms; /* form[0] is the value itself */
	struct sbx__redact_form form[SBX_REDACT_MAX_FORMS];
};

struct sbx_redact_set {
	struct sbx_redact_set *next; /* every live set but the process's, under sets_lock */
	pthread_mutex_t lock;
	int refs;    /* under lock */
	int cleared; /* the owner let go: nothing is added or looked for again */
	int next_id;
	size_t n, max;
	struct value *v; /* max slots; id 0 is free */
};

/* Live values in every set: for sbx__redact_count(). */
static int live;

static struct value process_values[SBX_REDACT_PROCESS_MAX];
static struct sbx_redact_set process = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.refs = 1,
	.next_id = 1,
	.max = SBX_REDACT_PROCESS_MAX,
	.v = process_values,
};

static __thread struct sbx__redact_scope *current;

/* Every other live set, for records that belong to no sandbox. */
static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sbx_redact_set *sets;

/* ===== Sets ===== */

struct sbx_redact_set *sbx__redact_set_new(size_t max)
{
	struct sbx_redact_set *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->v = calloc(max ? max : 1, sizeof(*s->v));
	if (!s->v) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->refs = 1;
	s->next_id = 1;
	s->max = max;
	pthread_mutex_lock(&sets_lock);
	s->next = sets;
	sets = s;
	pthread_mutex_unlock(&sets_lock);
	return s;
}

static void value_free(struct value *v)
{
	sbx__secmem_free(v->mem, v->mem_len);
	*v = (struct value){0};
	__atomic_sub_fetch(&live, 1, __ATOMIC_SEQ_CST);
}

int sbx__redact_set_add(struct sbx_redact_set *s, const void *value, size_t len)
{
	struct value v = {0};
	int id = -1, e = ENOSPC;

	if (!s || !value || len == 0 || len > SBX_REDACT_VALUE_MAX) {
		errno = EINVAL;
		return -1;
	}
	v.mem_len = sbx__redact_forms_size(len);
	v.mem = sbx__secmem_alloc(v.mem_len);
	if (!v.mem)
		return -1;
	v.nforms = sbx__redact_forms(v.mem, value, len, v.form, SBX_REDACT_MAX_FORMS);
	pthread_mutex_lock(&s->lock);
	if (s->cleared)
		e = EINVAL;
	for (size_t i = 0; !s->cleared && i < s->max; i++) {
		if (s->v[i].id)
			continue;
		v.id = id = s->next_id++;
		s->v[i] = v;
		s->n++;
		__atomic_add_fetch(&live, 1, __ATOMIC_SEQ_CST);
		break;
	}
	pthread_mutex_unlock(&s->lock);
	if (id < 0) {
		sbx__secmem_free(v.mem, v.mem_len);
		errno = e;
	}
	return id;
}

void sbx__redact_set_remove(struct sbx_redact_set *s, int id)
{
	if (!s || id <= 0)
		return;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->max; i++) {
		if (s->v[i].id != id)
			continue;
		value_free(&s->v[i]);
		s->n--;
		break;
	}
	pthread_mutex_unlock(&s->lock);
}

void sbx__redact_set_clear(struct sbx_redact_set *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->max; i++)
		if (s->v[i].id)
			value_free(&s->v[i]);
	s->n = 0;
	s->cleared = 1;
	pthread_mutex_unlock(&s->lock);
}

static void set_ref(struct sbx_redact_set *s)
{
	pthread_mutex_lock(&s->lock);
	s->refs++;
	pthread_mutex_unlock(&s->lock);
}

void sbx__redact_set_unref(struct sbx_redact_set *s)
{
	int left;

	if (!s || s == &process)
		return;
	pthread_mutex_lock(&s->lock);
	left = --s->refs;
	pthread_mutex_unlock(&s->lock);
	if (left > 0)
		return;
	pthread_mutex_lock(&sets_lock);
	for (struct sbx_redact_set **p = &sets; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&sets_lock);
	sbx__redact_set_clear(s);
	pthread_mutex_destroy(&s->lock);
	free(s->v);
	free(s);
}

static int set_cleared(struct sbx_redact_set *s)
{
	int c;

	pthread_mutex_lock(&s->lock);
	c = s->cleared;
	pthread_mutex_unlock(&s->lock);
	return c;
}

int sbx__redact_register(const void *value, size_t len)
{
	return sbx__redact_set_add(&process, value, len);
}

void sbx__redact_unregister(int id)
{
	sbx__redact_set_remove(&process, id);
}

int sbx__redact_count(void)
{
	return __atomic_load_n(&live, __ATOMIC_SEQ_CST);
}

/* ===== Scopes ===== */

void sbx__redact_scope_init(struct sbx__redact_scope *sc)
{
	memset(sc, 0, sizeof(*sc));
	pthread_mutex_init(&sc->lock, NULL);
}

int sbx__redact_scope_add(struct sbx__redact_scope *sc, struct sbx_redact_set *s)
{
	size_t k = 0;
	int rc = 0, have = 0;

	if (!sc || !s)
		return 0;
	pthread_mutex_lock(&sc->lock);
	/* Sets whose owner let go hold nothing: drop them. */
	for (size_t i = 0; i < sc->n; i++) {
		if (sc->set[i] != s && set_cleared(sc->set[i])) {
			sbx__redact_set_unref(sc->set[i]);
			continue;
		}
		have |= sc->set[i] == s;
		sc->set[k++] = sc->set[i];
	}
	sc->n = k;
	if (!have) {
		if (sc->n == sc->alloc) {
			size_t na = sc->alloc ? 2 * sc->alloc : 4;
			struct sbx_redact_set **p = realloc(sc->set, na * sizeof(*p));

			if (!p)
				rc = -1;
			else
				sc->set = p, sc->alloc = na;
		}
		if (rc == 0) {
			set_ref(s);
			sc->set[sc->n++] = s;
		}
	}
	pthread_mutex_unlock(&sc->lock);
	return rc;
}

void sbx__redact_scope_done(struct sbx__redact_scope *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->n; i++)
		sbx__redact_set_unref(sc->set[i]);
	free(sc->set);
	pthread_mutex_destroy(&sc->lock);
	memset(sc, 0, sizeof(*sc));
}

struct sbx__redact_scope *sbx__redact_scope_enter(struct sbx__redact_scope *sc)
{
	struct sbx__redact_scope *prev = current;

	current = sc;
	return prev;
}

void sbx__redact_scope_leave(struct sbx__redact_scope *prev)
{
	current = prev;
}

struct sbx__redact_scope *sbx__redact_scope_current(void)
{
	return current;
}

static size_t set_count(struct sbx_redact_set *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

int sbx__redact_any(struct sbx__redact_scope *sc)
{
	int any = set_count(&process) > 0;

	if (any || !sc)
		return any;
	pthread_mutex_lock(&sc->lock);
	for (size_t i = 0; i < sc->n && !any; i++)
		any = set_count(sc->set[i]) > 0;
	pthread_mutex_unlock(&sc->lock);
	return any;
}

/* ===== Marking ===== */

/*
 * The text with line breaks taken out, for the encoded forms (and, with a
 * terminal's breaks alone, for the value itself): c holds the
 * bytes, and each segment of it that was contiguous in the text says where
 * it began there, so a match maps back by a search of the segments.
 */
struct segment {
	size_t c0, s0; /* c[c0] is s[s0], and so on to the next segment */
};

struct unwrapped {
	unsigned char *c;
	size_t n;
	struct segment *seg;
	size_t nseg, seg_alloc;
};

/*
 * Whether s[j] is part of a break. Encoded forms (tty 0): CR and LF. The
 * value itself (tty 1): only a space and the CR after it, which bash's line
 * editor writes where a line typed key by key reaches the terminal's width,
 * so a terminal's echo of a typed value is cut there (and is drawn whole).
 */
static int is_break(const unsigned char *s, size_t n, size_t j, int tty)
{
	if (tty)
		return (s[j] == ' ' && j + 1 < n && s[j + 1] == '\r') ||
		       (s[j] == '\r' && j > 0 && s[j - 1] == ' ');
	return s[j] == '\r' || s[j] == '\n';
}

static int add_segment(struct unwrapped *u, size_t c0, size_t s0)
{
	if (u->nseg == u->seg_alloc) {
		size_t na = u->seg_alloc ? 2 * u->seg_alloc : 16;
		struct segment *p = realloc(u->seg, na * sizeof(*p));

		if (!p)
			return -1;
		u->seg = p;
		u->seg_alloc = na;
	}
	u->seg[u->nseg++] = (struct segment){c0, s0};
	return 0;
}

static int unwrap(struct unwrapped *u, const unsigned char *s, size_t n, int tty)
{
	size_t i = 0;

	u->c = malloc(n ? n : 1);
	if (!u->c)
		return -1;
	while (i < n) {
		size_t j = i, run = 0;

		while (j < n && !is_break(s, n, j, tty))
			j++;
		if (j > i) {
			if (add_segment(u, u->n, i) < 0)
				return -1;
			memcpy(u->c + u->n, s + i, j - i);
			u->n += j - i;
		}
		while (j + run < n && is_break(s, n, j + run, tty))
			run++;
		if (run > SBX_REDACT_BREAK_MAX) {
			/* A blank line or more: no encoded form runs across it. */
			if (add_segment(u, u->n, j) < 0)
				return -1;
			u->c[u->n++] = '\n';
		}
		i = j + run;
	}
	return 0;
}

/* Where c[k] lies in the text. */
static size_t unwrapped_pos(const struct unwrapped *u, size_t k)
{
	size_t lo = 0, hi = u->nseg;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->seg[mid].c0 <= k)
			lo = mid;
		else
			hi = mid;
	}
	return u->seg[lo].s0 + (k - u->seg[lo].c0);
}

static void unwrapped_free(struct unwrapped *u)
{
	if (u->c)
		explicit_bzero(u->c, u->n);
	free(u->c);
	free(u->seg);
}

/* Marks every occurrence of v in s, overlapping occurrences included. */
static void
mark_plain(const unsigned char *s, size_t n, unsigned char *m, const unsigned char *v, size_t vlen)
{
	const unsigned char *p = s, *q;
	size_t left = n;

	while (left >= vlen && (q = memmem(p, left, v, vlen))) {
		memset(m + (q - s), 1, vlen);
		left -= (size_t)(q - p) + 1;
		p = q + 1;
	}
}

/* Marks every occurrence of v in the unwrapped text, breaks within it too. */
static void
mark_wrapped(const struct unwrapped *u, unsigned char *m, const unsigned char *v, size_t vlen)
{
	const unsigned char *p = u->c, *q;
	size_t left = u->n;

	while (left >= vlen && (q = memmem(p, left, v, vlen))) {
		size_t j = (size_t)(q - u->c), a = unwrapped_pos(u, j),
		       b = unwrapped_pos(u, j + vlen - 1);

		memset(m + a, 1, b - a + 1);
		left -= (size_t)(q - p) + 1;
		p = q + 1;
	}
}

static void mark_set(struct sbx_redact_set *set,
		     const unsigned char *s,
		     size_t n,
		     unsigned char *m,
		     const struct unwrapped *u,
		     const struct unwrapped *ut,
		     struct sbx__redact_longest *l)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->max; i++) {
		const struct value *v = &set->v[i];

		if (!v->id)
			continue;
		for (size_t f = 0; f < v->nforms; f++) {
			const struct sbx__redact_form *fm = &v->form[f];

			if (fm->wrapped) {
				if (u && n)
					mark_wrapped(u, m, v->mem + fm->off, fm->len);
				if (fm->len > l->wrapped)
					l->wrapped = fm->len;
			} else {
				if (n)
					mark_plain(s, n, m, v->mem + fm->off, fm->len);
				/* The value itself across a terminal's " \r" too. The
				 * stream holds enough back for it: its hex form
				 * (util/redact-forms.c) is held to 2 x len - 1
				 * characters, a space counted as one, which covers
				 * len bytes with a " \r" between any two. */
				if (f == 0 && ut && n)
					mark_wrapped(ut, m, v->mem + fm->off, fm->len);
				if (fm->len > l->plain)
					l->plain = fm->len;
			}
		}
	}
	pthread_mutex_unlock(&set->lock);
}

/* Marks with the process's values and sc's, or with every live set (all). */
static int mark_with(struct sbx__redact_scope *sc,
		     int all,
		     const void *s,
		     size_t n,
		     unsigned char *m,
		     struct sbx__redact_longest *longest)
{
	struct sbx__redact_longest l = {0};
	struct unwrapped u = {0}, ut = {0};
	const struct unwrapped *pu = NULL, *put = NULL;

	if (n) {
		if (unwrap(&u, s, n, 0) < 0) {
			unwrapped_free(&u);
			return -1;
		}
		pu = &u;
		/* The terminal's view only where it differs. */
		if (memmem(s, n, " \r", 2)) {
			if (unwrap(&ut, s, n, 1) < 0) {
				unwrapped_free(&u);
				unwrapped_free(&ut);
				return -1;
			}
			put = &ut;
		}
	}
	mark_set(&process, s, n, m, pu, put, &l);
	if (all) {
		pthread_mutex_lock(&sets_lock);
		for (struct sbx_redact_set *p = sets; p; p = p->next)
			mark_set(p, s, n, m, pu, put, &l);
		pthread_mutex_unlock(&sets_lock);
	} else if (sc) {
		pthread_mutex_lock(&sc->lock);
		for (size_t i = 0; i < sc->n; i++)
			mark_set(sc->set[i], s, n, m, pu, put, &l);
		pthread_mutex_unlock(&sc->lock);
	}
	if (pu)
		unwrapped_free(&u);
	if (put)
		unwrapped_free(&ut);
	if (longest)
		*longest = l;
	return 0;
}

int sbx__redact_mark(struct sbx__redact_scope *sc,
		     const void *s,
		     size_t n,
		     unsigned char *m,
		     struct sbx__redact_longest *longest)
{
	return mark_with(sc, 0, s, n, m, longest);
}

/* ===== Records ===== */

static void inplace(struct sbx__redact_scope *sc, int all, char *s, size_t cap)
{
	size_t n, o = 0, mlen = strlen(SBX_REDACTED);
	unsigned char *m;
	char *out;

	if (!s || cap == 0)
		return;
	n = strnlen(s, cap - 1);
	s[n] = '\0';
	if (n == 0 || (all ? sbx__redact_count() == 0 : !sbx__redact_any(sc)))
		return;
	m = calloc(n, 1);
	out = malloc(n * (mlen + 1) + 1);
	if (!m || !out || mark_with(sc, all, s, n, m, NULL) < 0) {
		/* Out of memory: fail closed, keep nothing. */
		free(m);
		free(out);
		snprintf(s, cap, "%s", SBX_REDACTED);
		return;
	}
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

void sbx__redact_inplace_scope(struct sbx__redact_scope *sc, char *s, size_t cap)
{
	inplace(sc, 0, s, cap);
}

void sbx__redact_inplace(char *s, size_t cap)
{
	inplace(current, current == NULL, s, cap);
}

int sbx__redact_current_any(void)
{
	return current ? sbx__redact_any(current) : sbx__redact_count() > 0;
}
