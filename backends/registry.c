/*
 * backends/registry.c: the one table of backends this build has, and the
 * public entry that opens one by name (sbx_backend_open()).
 *
 * Above core and the backends: core/ defines the vtable
 * (core/backend-int.h) and opens a handle on the backend found here
 * (sbx__backend_open()), naming no backend; each backend implements the
 * vtable. Here too the OTLP exporter (remote/otlp.c) is plugged into core's
 * span sink (core/trace-int.h).
 */
#include <stdio.h>
#include <string.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/sandbox-int.h"
#include "core/trace-int.h"
#include "engine/docker-int.h"
#include "remote/otlp-int.h"
#include "remote/remote-int.h"
#include "util/cleanup.h"
#include "util/error-int.h"

static const struct sbx__backend_ops *const backends[] = {
	&sbx__docker_ops,
	&sbx__e2b_ops,
	&sbx__modal_ops,
};

int sbx_backend_open(sbx_backend **out, const char *name, const sbx_backend_options *opts)
{
	const struct sbx__backend_ops *ops = NULL;

	sbx__error_clear();
	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "backend_open: out is NULL");
	if (opts && (opts->version == 0 || opts->version > SBX_BACKEND_OPTIONS_VERSION))
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "backend options version %u is not known (1..%u)",
				      opts->version, SBX_BACKEND_OPTIONS_VERSION);
	if (!name)
		name = "docker";
	for (size_t i = 0; i < SBX_ARRAY_SIZE(backends); i++)
		if (strcmp(backends[i]->name, name) == 0)
			ops = backends[i];
	if (!ops) {
		char names[128] = "";

		for (size_t i = 0, o = 0; i < SBX_ARRAY_SIZE(backends) && o < sizeof(names); i++)
			o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "",
					      backends[i]->name);
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "unknown backend '%.32s' (this build has: %s)", name, names);
	}
	return sbx__backend_open(out, ops, opts, &sbx__otlp_sink);
}
