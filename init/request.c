/*
 * init/request.c: the init's parser of the host's run requests on the
 * channel (util/frame.h, docs/protocol.md), kept free of I/O so that it can
 * be fuzzed on its own.
 *
 * The host is the more trusted end, but the init still takes nothing on
 * faith: a malformed request, a frame out of order, an unknown or reused
 * run id, a spec whose strings do not add up, or stdin past the window is
 * a violation, after which the parser accepts nothing more and the channel
 * is closed. Memory is bounded by the protocol's limits: one spec being
 * received (at most SBX_CHAN_SPEC_MAX bytes) and SBX_CHAN_RUNS_MAX slots.
 */
#include "init/init.h"

#include <stdlib.h>
#include <string.h>

/* Longest working directory accepted (PATH_MAX with its NUL). */
#define CWD_MAX 4095

void sbx_init_spec_free(struct sbx_init_spec *s)
{
	if (!s)
		return;
	/* The environment may hold secrets. */
	if (s->blob)
		explicit_bzero(s->blob, s->len);
	free(s->blob);
	free(s->vec);
	free(s);
}

void sbx_init_req_init(struct sbx_init_req *r, const struct sbx_init_req_ops *ops, void *arg)
{
	memset(r, 0, sizeof(*r));
	sbx__chan_decoder_init(&r->dec, SBX_CHAN_TO_INIT);
	r->ops = ops;
	r->arg = arg;
}

void sbx_init_req_done(struct sbx_init_req *r)
{
	if (r->blob)
		explicit_bzero(r->blob, r->pend.spec_len);
	free(r->blob);
	r->blob = NULL;
	r->pend_id = 0;
}

static struct sbx_init_slot *slot_of(struct sbx_init_req *r, unsigned int id)
{
	size_t i;

	for (i = 0; i < SBX_CHAN_RUNS_MAX; i++)
		if (r->slot[i].used && r->slot[i].id == id)
			return &r->slot[i];
	return NULL;
}

static int violation(struct sbx_init_req *r, const char *why)
{
	if (!r->why)
		r->why = why;
	return -1;
}

struct sbx_init_spec *sbx_init_spec_split(
	unsigned char *blob, uint32_t len, uint32_t argc, uint32_t envc, const char **why)
{
	size_t nstr = 1 + (size_t)argc + envc, k = 0, i;
	const char *p = (const char *)blob, *end = p + len;
	struct sbx_init_spec *s;
	char **vec;

	if (len == 0 || blob[len - 1] != '\0') {
		*why = "the spec does not end with a NUL";
		return NULL;
	}
	if (argc < 1 || argc > SBX_CHAN_ARGC_MAX || envc > SBX_CHAN_ENVC_MAX) {
		*why = "the spec's counts are out of bounds";
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	vec = calloc(nstr + 2, sizeof(char *));
	if (!s || !vec) {
		free(s);
		free(vec);
		*why = "out of memory for a run request";
		return NULL;
	}
	/* vec: cwd, argv[0..argc-1], NULL, env[0..envc-1], NULL */
	while (p < end) {
		size_t n = strlen(p);

		if (k == nstr) {
			*why = "the spec holds more strings than OPEN announced";
			goto bad;
		}
		vec[k < 1 + argc ? k : k + 1] = (char *)p;
		k++;
		p += n + 1;
	}
	if (k != nstr) {
		*why = "the spec holds fewer strings than OPEN announced";
		goto bad;
	}
	if (vec[0][0] != '/' || strlen(vec[0]) > CWD_MAX) {
		*why = "the working directory is not an absolute path";
		goto bad;
	}
	if (!vec[1][0]) {
		*why = "the program name is empty";
		goto bad;
	}
	for (i = 0; i < envc; i++) {
		const char *e = vec[2 + argc + i];
		const char *eq = strchr(e, '=');

		if (!eq || eq == e) {
			*why = "an environment entry is not NAME=VALUE";
			goto bad;
		}
	}
	s->cwd = vec[0];
	s->argv = vec + 1;
	s->env = vec + 2 + argc;
	s->argc = argc;
	s->envc = envc;
	s->len = len;
	s->vec = vec;
	s->blob = blob;
	return s;
bad:
	free(vec);
	free(s);
	return NULL;
}

static int on_open(struct sbx_init_req *r, unsigned int id, const unsigned char *p, size_t len)
{
	size_t i;

	if (r->pend_id)
		return violation(r, "OPEN before the previous request's spec was complete");
	if (slot_of(r, id))
		return violation(r, "OPEN reuses a run id that is still in use");
	for (i = 0; i < SBX_CHAN_RUNS_MAX && r->slot[i].used; i++)
		;
	if (i == SBX_CHAN_RUNS_MAX)
		return violation(r, "OPEN with the most runs already in flight");
	if (sbx__chan_open_decode(&r->pend, p, len) != 0)
		return violation(r, "malformed OPEN");
	r->blob = malloc(r->pend.spec_len);
	if (!r->blob)
		return violation(r, "out of memory for a run request");
	r->have = 0;
	r->pend_id = id;
	return 0;
}

static int on_spec(struct sbx_init_req *r, unsigned int id, const unsigned char *p, size_t len)
{
	struct sbx_init_spec *s;
	const char *why = NULL;
	size_t i;

	if (!r->pend_id || id != r->pend_id)
		return violation(r, "SPEC that does not follow its OPEN");
	if (len > r->pend.spec_len - r->have)
		return violation(r, "SPEC longer than OPEN announced");
	memcpy(r->blob + r->have, p, len);
	r->have += (uint32_t)len;
	if (r->have < r->pend.spec_len)
		return 0;
	s = sbx_init_spec_split(r->blob, r->pend.spec_len, r->pend.argc, r->pend.envc, &why);
	if (!s)
		return violation(r, why);
	r->blob = NULL;
	s->id = id;
	s->deadline_ms = (long long)r->pend.deadline_ms;
	s->pty = (r->pend.flags & SBX_CHAN_OPEN_PTY) != 0;
	s->rows = r->pend.rows;
	s->cols = r->pend.cols;
	/* on_open saw a free slot, and no OPEN can come while a spec is pending. */
	for (i = 0; i < SBX_CHAN_RUNS_MAX && r->slot[i].used; i++)
		;
	if (i == SBX_CHAN_RUNS_MAX) {
		sbx_init_spec_free(s);
		return violation(r, "no slot for a run");
	}
	r->slot[i] = (struct sbx_init_slot){.id = id, .used = 1, .pty = s->pty};
	r->pend_id = 0;
	r->ops->start(r->arg, s);
	return 0;
}

static int on_stdin(struct sbx_init_req *r, unsigned int id, const unsigned char *p, size_t len)
{
	struct sbx_init_slot *s = slot_of(r, id);

	if (!s || r->pend_id == id)
		return violation(r, "STDIN for a run that is not open");
	if (s->eof)
		return violation(r, "STDIN after STDIN_EOF");
	if (s->finished)
		return 0; /* the run is over: its input goes nowhere */
	if (len > SBX_CHAN_WINDOW - s->unacked)
		return violation(r, "STDIN past the window");
	s->unacked += (uint32_t)len;
	r->ops->stdin_data(r->arg, id, p, len);
	return 0;
}

static int on_eof(struct sbx_init_req *r, unsigned int id)
{
	struct sbx_init_slot *s = slot_of(r, id);

	if (!s || r->pend_id == id)
		return violation(r, "STDIN_EOF for a run that is not open");
	if (s->eof)
		return violation(r, "a second STDIN_EOF");
	s->eof = 1;
	if (s->finished) {
		memset(s, 0, sizeof(*s));
		return 0;
	}
	r->ops->stdin_eof(r->arg, id);
	return 0;
}

static int on_resize(struct sbx_init_req *r, unsigned int id, const unsigned char *p, size_t len)
{
	struct sbx_init_slot *s = slot_of(r, id);
	uint16_t rows, cols;

	if (!s || r->pend_id == id)
		return violation(r, "RESIZE for a run that is not open");
	if (!s->pty)
		return violation(r, "RESIZE for a run without a terminal");
	if (sbx__chan_resize_decode(p, len, &rows, &cols) != 0)
		return violation(r, "malformed RESIZE");
	if (s->finished)
		return 0; /* the run is over: nobody to tell */
	r->ops->resize(r->arg, id, rows, cols);
	return 0;
}

static int on_deadline(struct sbx_init_req *r, const unsigned char *p, size_t len)
{
	uint64_t v;

	if (sbx__chan_deadline_decode(p, len, 1, &v) != 0)
		return violation(r, "malformed DEADLINE");
	if (r->ops->deadline)
		r->ops->deadline(r->arg, v);
	return 0;
}

static int on_frame(int type, unsigned int id, const unsigned char *p, size_t len, void *arg)
{
	struct sbx_init_req *r = arg;

	/* Between OPEN and the end of its spec nothing else may come. */
	if (r->pend_id && type != SBX_FRAME_SPEC)
		return violation(r, "a frame between OPEN and the end of its spec");
	switch (type) {
	case SBX_FRAME_OPEN:
		return on_open(r, id, p, len);
	case SBX_FRAME_SPEC:
		return on_spec(r, id, p, len);
	case SBX_FRAME_STDIN:
		return on_stdin(r, id, p, len);
	case SBX_FRAME_STDIN_EOF:
		return on_eof(r, id);
	case SBX_FRAME_RESIZE:
		return on_resize(r, id, p, len);
	case SBX_FRAME_DEADLINE:
		return on_deadline(r, p, len);
	default:
		return violation(r, "a frame type the host may not send");
	}
}

int sbx_init_req_feed(struct sbx_init_req *r, const unsigned char *p, size_t n)
{
	int rc;

	if (r->why)
		return -1;
	rc = sbx__chan_feed(&r->dec, p, n, on_frame, r);
	/* What the decoder holds beyond a partial frame is spent request bytes. */
	explicit_bzero(r->dec.buf + r->dec.have, sizeof(r->dec.buf) - r->dec.have);
	if (rc != 0) {
		violation(r, "a malformed frame (magic, type, run id or length)");
		sbx_init_req_done(r);
		return -1;
	}
	return 0;
}

void sbx_init_req_consumed(struct sbx_init_req *r, unsigned int id, uint32_t n)
{
	struct sbx_init_slot *s = slot_of(r, id);

	if (s)
		s->unacked = n > s->unacked ? 0 : s->unacked - n;
}

void sbx_init_req_finished(struct sbx_init_req *r, unsigned int id)
{
	struct sbx_init_slot *s = slot_of(r, id);

	if (!s)
		return;
	if (s->eof)
		memset(s, 0, sizeof(*s));
	else
		s->finished = 1;
}
