/*
 * tests/fuzz/fuzz_docker.c: libFuzzer target for the docker backend's
 * reading of the Engine's JSON (engine/docker.c, engine/reap.c): the
 * container inspect read back after a start (check_readback()), the
 * inspect and labels a sandbox is reopened from (d_open_box()), the
 * container list (d_list()) and the reaper's reading of each container's
 * labels and owner (sbx__docker_reap_list() judged by core's sbx__reap(),
 * dry run), exec inspect's exit code
 * (exec_exit_code()) and the daemon's /info (refuse_debug_daemon()), in
 * engine/exec.c, the engine's flavour from /info and /version
 * (sbx__engine_describe() over sbx__engine_flavour(), engine/podman.c), an
 * image import's progress stream (sbx__docker_import_image() in
 * engine/image.c, which uploads a small temporary file), all through
 * sbx__docker_call()'s JSON decoding; and the
 * Engine's multiplexed stream of a docker exec with the init's frames in
 * it (demux() in engine/exec.c).
 *
 * docker.c and exec.c are included so that their static readers are
 * reached without changing them. The input's first byte chooses the
 * reader; the rest is the JSON body of a 200 answer, served over a unix
 * socket in a temporary directory (sock_server.h), or the exec stream, cut
 * into reads of a size the first byte also chooses. Every input is also
 * read as an /events answer (sbx__docker_events_oom() in engine/call.c).
 * check_readback() reads the host's own cgroup files for the pid the
 * answer names (read only).
 * The create answer's Warnings are read inline in d_create() between
 * other Engine calls and host changes, and are not reached here.
 */
#include "core/reap-int.h"
#include "engine/docker.c"
#include "engine/exec.c"
#include "sock_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sbx__docker dk;
static uint8_t answer[1 << 20];
static char tar[80];

static int list_cb(const sbx_sandbox_info *info, void *arg)
{
	(void)arg;
	if (!info->id || !info->tenant || !info->image || !info->state)
		abort();
	return 0;
}

static int reap_cb(const sbx_reap_info *info, void *arg)
{
	(void)arg;
	if (info->removed)
		abort(); /* a dry run */
	return 0;
}

static int exec_sink(void *arg, int stream, const void *p, size_t n)
{
	(void)arg;
	if ((stream != SBX_STREAM_STDOUT && stream != SBX_STREAM_STDERR) || (n && !p))
		abort();
	return 0;
}

/* A docker exec's stream, as sbx__docker_exec() reads it. Invariants: the
 * init's diagnostics stay within their cap, and an exit taken is valid. */
static void exec_stream(const uint8_t *p, size_t n, size_t chunk)
{
	struct sbx__run_req req = {.sink = exec_sink};
	struct run_io *io = calloc(1, sizeof(*io));

	if (!io)
		abort();
	io->req = &req;
	io->diag.cap = INIT_DIAG_MAX;
	sbx__frame_decoder_init(&io->dec);
	for (size_t off = 0; off < n;) {
		size_t k = n - off < chunk ? n - off : chunk;

		if (demux(io, p + off, k) != 0)
			break;
		if (io->diag.len > INIT_DIAG_MAX)
			abort();
		off += k;
	}
	if (io->have_exit) {
		unsigned char e[SBX_FRAME_EXIT_LEN];

		sbx__frame_exit_encode(e, &io->exit);
		if (sbx__frame_exit_decode(NULL, e, sizeof(e)) != 0)
			abort();
	}
	sbx__buf_clear(&io->diag);
	free(io);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_policy *p = NULL;
	size_t n;
	int hl;

	if (!dk.http.sock) {
		if (sbx__http_init(&dk.http, fz_srv_start(), 10000) != 0)
			abort();
		dk.init_path = (char *)"/usr/libexec/sandboxio/sbx-init";
		snprintf(dk.hostname, sizeof(dk.hostname), "fuzzhost");
		snprintf(dk.boot_id, sizeof(dk.boot_id), "00000000-0000-4000-8000-000000000000");
		snprintf(tar, sizeof(tar), "%s/image.tar", fz_srv.dir);
		FILE *f = fopen(tar, "we");
		if (!f || fputs("not a tar: the Engine's answer is what is read\n", f) < 0 ||
		    fclose(f) != 0)
			abort();
	}
	if (size < 1 || size - 1 > sizeof(answer) - 256)
		return 0;
	/* The Engine's /events answer read after a lost run channel
	 * (engine/call.c), pure: every input is one. */
	(void)sbx__docker_events_oom((const char *)data + 1, size - 1, "0123456789ab");
	if (data[0] % 7 == 6) {
		exec_stream(data + 1, size - 1, (size_t)(data[0] >> 3) * 13 + 1);
		return 0;
	}
	hl = snprintf((char *)answer, 256,
		      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		      "Content-Length: %zu\r\n\r\n",
		      size - 1);
	memcpy(answer + hl, data + 1, size - 1);
	n = (size_t)hl + size - 1;
	fz_srv_answer(answer, n);
	if (sbx_policy_new(&p) < 0)
		abort();
	switch (data[0] % 7 == 5 && data[0] & 0x80 ? 7 : data[0] % 7) {
	case 0: {
		pid_t pid = 0;

		(void)check_readback(&dk, "0123456789ab", "sbx-000000000000", 0, p, 0, &pid);
		break;
	}
	case 1: {
		void *box = NULL;
		sbx_tier tier;

		if (d_open_box(&dk, "0123456789ab", &box, p, &tier) == 0) {
			if (!box || (tier != SBX_TIER_GVISOR && tier != SBX_TIER_CONTAINER))
				abort();
			d_release(&dk, box);
		}
		break;
	}
	case 2:
		(void)d_list(&dk, data[0] & 0x10 ? "t1" : NULL, list_cb, NULL);
		break;
	case 3:
		(void)sbx__reap(&sbx__docker_ops, &dk, data[0] & 0x10 ? "t1" : NULL, 1,
				(data[0] & 0x20) != 0, reap_cb, NULL);
		break;
	case 4:
		(void)exec_exit_code(&dk, "0123456789ab");
		break;
	case 5:
		if (data[0] & 0x40) {
			char out[160];

			/* The same answer read as /info and as /version. */
			if (sbx__engine_describe(dk.http.sock, out, sizeof(out)) == 0 &&
			    !memchr(out, '\0', sizeof(out)))
				abort();
		} else {
			(void)refuse_debug_daemon(&dk);
		}
		break;
	default:
		(void)sbx__docker_import_image(&dk, tar, "sandboxio/fuzz:1");
		break;
	}
	sbx_policy_free(p);
	sbx_error_clear();
	return 0;
}
