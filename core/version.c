/*
 * core/version.c: the library's version, its free(), and the initialisers
 * of the versioned option structs.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sandboxio.h>

#include "util/error-int.h"

const char *sbx_version(void)
{
	return SBX_VERSION_STRING;
}

void sbx_free(void *p)
{
	free(p);
}

int sbx_backend_options_init(sbx_backend_options *opts, unsigned int version)
{
	if (!opts)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "options are NULL");
	if (version == 0 || version > SBX_BACKEND_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "backend options version %u is not known (1..%u)", version,
				      SBX_BACKEND_OPTIONS_VERSION);
	/* A caller built against an older header has an older, smaller
	 * struct: only that version's fields are written. */
	memset(opts, 0,
	       version == 1   ? offsetof(sbx_backend_options, config)
	       : version == 2 ? offsetof(sbx_backend_options, audit_path)
	       : version == 3 ? offsetof(sbx_backend_options, hosts_file)
			      : sizeof(*opts));
	opts->version = version;
	return 0;
}

int sbx_run_options_init(sbx_run_options *opts, unsigned int version)
{
	if (!opts)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "options are NULL");
	if (version == 0 || version > SBX_RUN_OPTIONS_VERSION)
		return sbx__error_set(SBX_EVERSION, SBX_ERRCLASS_CORE,
				      "run options version %u is not known (1..%u)", version,
				      SBX_RUN_OPTIONS_VERSION);
	/* As above: a struct of version 1 to 3 ends before the fields of the next. */
	memset(opts, 0,
	       version == 1   ? offsetof(sbx_run_options, secrets)
	       : version == 2 ? offsetof(sbx_run_options, pty)
	       : version == 3 ? offsetof(sbx_run_options, as_root)
			      : sizeof(*opts));
	opts->version = version;
	return 0;
}
