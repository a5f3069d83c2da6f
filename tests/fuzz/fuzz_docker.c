/*
 * tests/fuzz/fuzz_docker.c: libFuzzer target for the docker backend's
 * reading of the Engine's JSON (engine/docker.c, engine/reap.c): the
 * container inspect read back after a start (check_readback()), the
 * inspect and labels a sandbox is reopened from (d_open_box()), the
 * container list (d_list()) and the reaper's reading of each container's
 * labels and owner (sbx__docker_reap(), dry run), through
 * sbx__docker_call()'s JSON decoding.
 *
 * docker.c is included so that its static readers are reached without
 * changing it. The input's first byte chooses the reader; the rest is the
 * JSON body of a 200 answer, served over a unix socket in a temporary
 * directory (sock_server.h). check_readback() reads the host's own cgroup
 * files for the pid the answer names (read only). The create answer's
 * Warnings and exec inspect are read inline in d_create() and engine/exec.c
 * between other Engine calls and host changes, and are not reached here.
 */
#include "engine/docker.c"
#include "sock_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct docker dk;
static uint8_t answer[1 << 20];

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
	}
	if (size < 1 || size - 1 > sizeof(answer) - 256)
		return 0;
	hl = snprintf((char *)answer, 256,
		      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		      "Content-Length: %zu\r\n\r\n",
		      size - 1);
	memcpy(answer + hl, data + 1, size - 1);
	n = (size_t)hl + size - 1;
	fz_srv_answer(answer, n);
	if (sbx_policy_new(&p) < 0)
		abort();
	switch (data[0] & 3) {
	case 0: {
		pid_t pid = 0;

		(void)check_readback(&dk, "0123456789ab", p, 0, &pid);
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
		(void)d_list(&dk, data[0] & 4 ? "t1" : NULL, list_cb, NULL);
		break;
	default:
		(void)sbx__docker_reap(&dk, data[0] & 4 ? "t1" : NULL, 1, (data[0] & 8) != 0,
				       reap_cb, NULL);
		break;
	}
	sbx_policy_free(p);
	sbx_error_clear();
	return 0;
}
