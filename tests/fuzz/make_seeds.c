/*
 * tests/fuzz/make_seeds.c: writes a few well-formed streams of the run
 * channel and of a docker exec into DIR/host, DIR/init and DIR/docker, so
 * that fuzzing starts from inputs that get past the first checks (they
 * seeded tests/fuzz/corpus/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/frame.h"

static unsigned char buf[1 << 20];
static size_t len;

static void raw(const void *p, size_t n)
{
	if (n)
		memcpy(buf + len, p, n);
	len += n;
}

static void chan(int type, unsigned int id, const void *p, size_t n, int mux)
{
	unsigned char h[SBX_FRAME_HDR];

	if (mux) {
		size_t m = SBX_FRAME_HDR + n;
		unsigned char mh[8] = {1,
				       0,
				       0,
				       0,
				       (unsigned char)(m >> 24),
				       (unsigned char)(m >> 16),
				       (unsigned char)(m >> 8),
				       (unsigned char)m};
		raw(mh, 8);
	}
	sbx__chan_header(h, type, id, (uint32_t)n);
	raw(h, sizeof(h));
	raw(p, n);
}

/* A frame of `sbx-init run`'s single-run stream, in the Engine's stdout. */
static void single(int type, const void *p, size_t n)
{
	size_t m = SBX_FRAME_HDR + n;
	unsigned char mh[8] = {1,
			       0,
			       0,
			       0,
			       (unsigned char)(m >> 24),
			       (unsigned char)(m >> 16),
			       (unsigned char)(m >> 8),
			       (unsigned char)m};
	unsigned char h[SBX_FRAME_HDR];

	raw(mh, 8);
	sbx__frame_header(h, type, (uint32_t)n);
	raw(h, sizeof(h));
	raw(p, n);
}

static void save(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
		exit(1);
	len = 0;
}

int main(int argc, char **argv)
{
	struct sbx__chan_hello hi = {1, SBX_CHAN_RUNS_MAX, SBX_CHAN_WINDOW};
	struct sbx__frame_exit ex = {.status = SBX_FRAME_ST_EXITED, .code = 3};
	struct sbx__chan_open op = {0, 2, 1, 14, 5000};
	unsigned char p[64], credit[4];
	char host[400], init[400], docker[400];

	if (argc != 2)
		return 2;
	snprintf(host, sizeof(host), "%s/host", argv[1]);
	snprintf(init, sizeof(init), "%s/init", argv[1]);
	snprintf(docker, sizeof(docker), "%s/docker", argv[1]);
	mkdir(argv[1], 0755);
	mkdir(host, 0755);
	mkdir(init, 0755);
	mkdir(docker, 0755);

	/* host: run id 1, 4 KiB of stdin sent, no cancel, reads of 64, a run in flight */
	raw((const unsigned char[]){0, 1, 4, 0, 63, 1}, 6);
	sbx__chan_hello_encode(p, &hi);
	chan(SBX_FRAME_HELLO, 0, p, SBX_FRAME_HELLO_LEN, 1);
	chan(SBX_FRAME_STDOUT, 1, "hello\n", 6, 1);
	sbx__chan_credit_encode(credit, 4096);
	chan(SBX_FRAME_CREDIT, 1, credit, 4, 1);
	raw((const unsigned char[]){2, 0, 0, 0, 0, 0, 0, 5}, 8);
	raw("diag\n", 5);
	chan(SBX_FRAME_ERROR, 1, "nope", 4, 1);
	sbx__frame_exit_encode(p, &ex);
	chan(SBX_FRAME_EXIT, 1, p, SBX_FRAME_EXIT_LEN, 1);
	save(host, "run");

	/* init: reads of 41 bytes; OPEN, SPEC, STDIN, EOF for id 7 */
	raw((const unsigned char[]){0, 10}, 2);
	sbx__chan_open_encode(p, &op);
	chan(SBX_FRAME_OPEN, 7, p, SBX_FRAME_OPEN_LEN, 0);
	chan(SBX_FRAME_SPEC, 7, "/w\0sh\0-c\0A=1", 14, 0);
	chan(SBX_FRAME_STDIN, 7, "input", 5, 0);
	chan(SBX_FRAME_STDIN_EOF, 7, NULL, 0, 0);
	save(init, "run");
	/* init: a run with a terminal (OPEN with its size), input, RESIZE, EOF */
	raw((const unsigned char[]){0, 10}, 2);
	op = (struct sbx__chan_open){SBX_CHAN_OPEN_PTY, 2, 1, 14, 5000, 24, 80};
	chan(SBX_FRAME_OPEN, 8, p, sbx__chan_open_encode(p, &op), 0);
	chan(SBX_FRAME_SPEC, 8, "/w\0sh\0-c\0A=1", 14, 0);
	chan(SBX_FRAME_STDIN, 8, "ls\r\003", 4, 0);
	sbx__chan_resize_encode(p, 40, 120);
	chan(SBX_FRAME_RESIZE, 8, p, SBX_FRAME_RESIZE_LEN, 0);
	chan(SBX_FRAME_STDIN_EOF, 8, NULL, 0, 0);
	save(init, "pty");
	raw((const unsigned char[]){0xFF, 2, 1}, 3);
	raw("/w\0sh\0-c\0A=1", 14);
	save(init, "split");

	/* docker: a docker exec's stream (reads of 92): output, diagnostics, exit */
	raw((const unsigned char[]){0x3e}, 1);
	single(SBX_FRAME_STDOUT, "hello\n", 6);
	raw((const unsigned char[]){2, 0, 0, 0, 0, 0, 0, 5}, 8);
	raw("diag\n", 5);
	single(SBX_FRAME_STDERR, "err", 3);
	sbx__frame_exit_encode(p, &ex);
	single(SBX_FRAME_EXIT, p, SBX_FRAME_EXIT_LEN);
	save(docker, "exec");
	return 0;
}
