/*
 * tests/fuzz/fuzz_preset.c: libFuzzer target for the reader of egress
 * presets (netpolicy/preset.c), share/sandboxio/presets/egress.conf's
 * format, and through it the egress name validator (netpolicy/names.c).
 *
 * The input is the file's text. Invariants checked besides the
 * sanitizers': what is accepted stays within the limits, every name in it
 * is canonical (the validator gives it back unchanged), every pinned name
 * matches its wildcard and is not one, and the accepted presets written
 * back as text parse again to the same presets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy/names-int.h"
#include "netpolicy/preset-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void canonical(const char *name, int want_wild)
{
	char c[SBX_NAME_BUF];
	int w = -1;

	if (sbx__names_parse_entry(c, &w, "fuzz", name, strlen(name)) != 0 ||
	    strcmp(c, name) != 0 || w != want_wild)
		abort();
}

static size_t emit(const struct sbx__presets *ps, char *t, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < ps->n; i++) {
		o += (size_t)snprintf(t + o, cap - o, "[%s]\n", ps->p[i].name);
		for (size_t j = 0; j < ps->p[i].n; j++) {
			const struct sbx__preset_entry *e = &ps->p[i].e[j];

			o += (size_t)snprintf(t + o, cap - o, "%s", e->name);
			if (e->port)
				o += (size_t)snprintf(t + o, cap - o, ":%u", e->port);
			if (e->pins_n)
				o += (size_t)snprintf(t + o, cap - o, " =");
			for (size_t k = 0; k < e->pins_n; k++)
				o += (size_t)snprintf(t + o, cap - o, " %s", e->pins[k]);
			o += (size_t)snprintf(t + o, cap - o, "\n");
		}
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__presets ps = {0}, again = {0};
	size_t cap = 4 * SBX_PRESET_TEXT_MAX, n;
	char *text;

	if (sbx__presets_parse(&ps, (const char *)data, size, "fuzz") != 0)
		return 0;
	if (ps.n > SBX_PRESETS_MAX)
		abort();
	for (size_t i = 0; i < ps.n; i++) {
		const struct sbx__preset *p = &ps.p[i];

		if (p->n == 0 || p->n > SBX_PRESET_ENTRIES_MAX || !p->name[0] ||
		    sbx__presets_find(&ps, p->name) != p)
			abort();
		for (size_t j = 0; j < p->n; j++) {
			const struct sbx__preset_entry *e = &p->e[j];

			canonical(e->name, e->wildcard);
			if (e->wildcard != (e->pins_n > 0) || e->pins_n > SBX_PRESET_PINS_MAX)
				abort();
			for (size_t k = 0; k < e->pins_n; k++) {
				canonical(e->pins[k], 0);
				if (!sbx__names_match(e->name, e->pins[k], strlen(e->pins[k])))
					abort();
			}
		}
	}
	text = malloc(cap);
	if (!text)
		abort();
	n = emit(&ps, text, cap);
	if (n >= cap ||
	    (n <= SBX_PRESET_TEXT_MAX && sbx__presets_parse(&again, text, n, "again") != 0))
		abort();
	if (n <= SBX_PRESET_TEXT_MAX) {
		if (again.n != ps.n)
			abort();
		for (size_t i = 0; i < ps.n; i++)
			if (strcmp(again.p[i].name, ps.p[i].name) != 0 || again.p[i].n != ps.p[i].n)
				abort();
	}
	sbx__presets_clear(&again);
	sbx__presets_clear(&ps);
	free(text);
	return 0;
}
