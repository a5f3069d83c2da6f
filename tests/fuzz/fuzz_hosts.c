/*
 * tests/fuzz/fuzz_hosts.c: libFuzzer target for the hosts-file parser of the
 * egress allowlist (lookup_file() in netpolicy/allow.c), reached through
 * sbx__netpolicy_plan(), which resolves allow_host names in the file given
 * as the backend's hosts file.
 *
 * The first byte chooses whether IPv6 can be enforced; the rest is written
 * to a temporary file (made once per process, removed at exit) as the
 * hosts file, and two names are planned from it: "api.example.com" (port
 * 443) and "pkg.example.org". Invariants besides the sanitizers': a plan opens only
 * routable addresses that are not this host's own (198.51.100.1 here), and
 * IPv6 only when it can be enforced; it pins only the names asked.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sandboxio.h>

#include "netpolicy/allow-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char file[64];

static void cleanup(void)
{
	unlink(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx__host_addr self = {.family = AF_INET, .plen = 32};
	struct sbx__allow allow[2] = {0};
	struct sbx__np_plan plan = {0};
	FILE *f;
	int v6_ok;

	if (!file[0]) {
		int fd;

		snprintf(file, sizeof(file), "%s/sbx-fuzz-hosts-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		fd = mkstemp(file);
		if (fd < 0)
			abort();
		close(fd);
		atexit(cleanup);
	}
	if (size < 1)
		return 0;
	v6_ok = data[0] & 1;
	f = fopen(file, "we");
	if (!f || (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) || fclose(f) != 0)
		abort();
	inet_pton(AF_INET, "198.51.100.1", self.addr);
	if (sbx__allow_parse_host_spec(&allow[0], "api.example.com:443") < 0 ||
	    sbx__allow_parse_host_spec(&allow[1], "pkg.example.org") < 0)
		abort();
	if (sbx__netpolicy_plan(&plan, allow, 2, file, v6_ok, &self, 1) == 0) {
		for (size_t i = 0; i < plan.pins_n; i++)
			if (strncmp(plan.pins[i], "api.example.com:", 16) != 0 &&
			    strncmp(plan.pins[i], "pkg.example.org:", 16) != 0)
				abort();
		for (size_t i = 0; i < plan.n; i++) {
			const struct sbx__np_rule *r = &plan.rules[i];

			if (sbx__special_overlap(r->family, r->addr, r->plen, &self, 1, NULL, 0) ==
				    SBX_SPECIAL_INSIDE ||
			    (r->family == AF_INET && memcmp(r->addr, self.addr, 4) == 0) ||
			    (r->family == AF_INET6 && !v6_ok) ||
			    (r->family != AF_INET && r->family != AF_INET6))
				abort();
		}
		sbx__netpolicy_plan_clear(&plan);
	}
	sbx__allow_clear(&allow[0]);
	sbx__allow_clear(&allow[1]);
	sbx_error_clear();
	return 0;
}
