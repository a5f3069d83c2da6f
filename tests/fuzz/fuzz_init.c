/*
 * tests/fuzz/fuzz_init.c: libFuzzer target for the init's parser of the
 * host's requests (init/request.c) and for the spec splitter a spare
 * supervisor runs on what PID 1 hands it.
 *
 * The first byte chooses the target and how the stream is cut into reads;
 * between reads the scripted PID 1 consumes stdin and finishes runs as the
 * next bytes say, so the parser's run table is driven through its states.
 * Invariants checked besides the sanitizers': a violation is sticky and
 * says why, no run gets more unconsumed stdin than the window, no more
 * runs are in flight than the bound, and every started spec is whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "init/init.h"
#include "util/frame.h"

struct sim {
	unsigned int live[SBX_CHAN_RUNS_MAX * 4];
	size_t nlive;
	size_t starts;
};

static void on_start(void *arg, struct sbx_init_spec *s)
{
	struct sim *m = arg;
	size_t argc = 0, envc = 0;

	while (s->argv[argc])
		argc++;
	while (s->env[envc])
		envc++;
	if (!s->cwd || s->cwd[0] != '/' || !s->argv[0][0] || argc != s->argc || envc != s->envc)
		abort();
	for (size_t i = 0; i < envc; i++)
		if (!strchr(s->env[i], '=') || s->env[i][0] == '=')
			abort();
	if (s->pty && (s->rows < 1 || s->rows > SBX_CHAN_WINSZ_MAX || s->cols < 1 ||
		       s->cols > SBX_CHAN_WINSZ_MAX))
		abort();
	if (m->nlive < sizeof(m->live) / sizeof(m->live[0]))
		m->live[m->nlive++] = s->id;
	m->starts++;
	sbx_init_spec_free(s);
}

static void on_stdin(void *arg, unsigned int id, const unsigned char *p, size_t n)
{
	(void)arg;
	(void)id;
	if (!p || n == 0 || n > SBX_FRAME_MAX)
		abort();
}

static void on_eof(void *arg, unsigned int id)
{
	(void)arg;
	(void)id;
}

static void on_resize(void *arg, unsigned int id, uint16_t rows, uint16_t cols)
{
	(void)arg;
	if (id == 0 || rows < 1 || rows > SBX_CHAN_WINSZ_MAX || cols < 1 ||
	    cols > SBX_CHAN_WINSZ_MAX)
		abort();
}

static const struct sbx_init_req_ops ops = {on_start, on_stdin, on_eof, on_resize};

static void check(const struct sbx_init_req *r)
{
	size_t used = 0;

	for (size_t i = 0; i < SBX_CHAN_RUNS_MAX; i++) {
		if (!r->slot[i].used)
			continue;
		used++;
		if (r->slot[i].unacked > SBX_CHAN_WINDOW || r->slot[i].id == 0)
			abort();
	}
	if (used > SBX_CHAN_RUNS_MAX)
		abort();
}

static void fuzz_split(const uint8_t *data, size_t size)
{
	struct sbx_init_spec *s;
	const char *why = NULL;
	unsigned char *blob;

	if (size < 3)
		return;
	blob = malloc(size - 2);
	if (!blob)
		abort();
	memcpy(blob, data + 2, size - 2);
	s = sbx_init_spec_split(blob, (uint32_t)(size - 2), data[0] % 8, data[1] % 8, &why);
	if (s) {
		if (s->argc != data[0] % 8 || s->envc != data[1] % 8)
			abort();
		sbx_init_spec_free(s);
	} else {
		if (!why)
			abort();
		free(blob);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_init_req *r;
	struct sim m = {0};
	size_t off = 2, chunk;
	int failed = 0;

	if (size < off)
		return 0;
	if (data[0] == 0xFF) {
		fuzz_split(data + 1, size - 1);
		return 0;
	}
	chunk = (size_t)data[1] * 4 + 1;
	r = malloc(sizeof(*r));
	if (!r)
		abort();
	sbx_init_req_init(r, &ops, &m);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		int rc = sbx_init_req_feed(r, data + off, n);

		if (failed && rc != -1)
			abort(); /* not sticky */
		if (rc != 0) {
			failed = 1;
			if (!r->why)
				abort();
		}
		check(r);
		/* PID 1's side, driven by the byte after the read. */
		if (m.nlive && off + n < size) {
			uint8_t op = data[off + n - 1];
			size_t k = op % m.nlive;
			unsigned int id = m.live[k];

			if (op & 0x40)
				sbx_init_req_consumed(r, id, (uint32_t)(op & 0x3f) * 4096);
			if (op & 0x80) {
				sbx_init_req_finished(r, id);
				/* k first: the index and the decrement in one
				 * expression would be unsequenced. */
				m.nlive--;
				m.live[k] = m.live[m.nlive];
			}
		}
		off += n;
	}
	sbx_init_req_done(r);
	free(r);
	return 0;
}
