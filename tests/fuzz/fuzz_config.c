/*
 * tests/fuzz/fuzz_config.c: libFuzzer target for the config file parser
 * (core/config-file.c): sbx_config_parse() on the input as the file's text, and
 * on a config it accepts, the readers a backend opens with: the ceilings,
 * sbx_config_describe() (which merges it with a request and renders it)
 * and the egress checks.
 *
 * Invariants besides the sanitizers': a refused config records an error
 * that names the origin, and an accepted one describes as JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sandboxio.h>

#include "core/config-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_config *c = NULL;
	char *text = NULL;
	int rc;

	rc = sbx_config_parse(&c, (const char *)data, size, "fuzz.json");
	if (rc != 0) {
		if (c || !strstr(sbx_error_last()->message, "fuzz.json"))
			abort();
		sbx_error_clear();
		return 0;
	}
	(void)sbx_config_timeout_ceiling_ms(c);
	for (int k = SBX_LIMIT_CPU_MILLI; k <= SBX_LIMIT_OUTPUT; k++)
		(void)sbx_config_limit_ceiling(c, (sbx_limit_kind)k);
	if (sbx_config_describe(&text, c, NULL, "docker") == 0) {
		json_t *j = json_loads(text, 0, NULL);

		if (!j)
			abort();
		json_decref(j);
		sbx_free(text);
	}
	(void)sbx__config_check_backend(c, "docker");
	(void)sbx__config_check_egress_host(c, "api.example.com");
	(void)sbx__config_check_egress_cidr(c, "198.51.100.0/24");
	(void)sbx__config_check_secrets(c, 3);
	sbx_config_free(c);
	sbx_error_clear();
	return 0;
}
