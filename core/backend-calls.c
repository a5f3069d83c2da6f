/*
 * core/backend-calls.c: the calls of a backend that need no sandbox: the
 * list of its sandboxes, and whether an image is there and its import.
 * Each checks its arguments and hands over to the backend's vtable.
 */
#include <stddef.h>

#include <sandboxio.h>

#include "core/backend-int.h"
#include "core/sandbox-int.h"
#include "util/error-int.h"

int sbx_backend_list(sbx_backend *b, const char *tenant, sbx_list_cb cb, void *payload)
{
	sbx__error_clear();
	if (!b || !cb)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE, "list: NULL argument");
	return b->ops->list(b->state, tenant, cb, payload);
}

int sbx_backend_image_exists(sbx_backend *b, const char *ref)
{
	sbx__error_clear();
	if (!b || !ref)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "image_exists: NULL argument");
	return b->ops->image_exists(b->state, ref);
}

int sbx_backend_import_image(sbx_backend *b, const char *tar_path, const char *ref)
{
	sbx__error_clear();
	if (!b || !tar_path || !ref)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_CORE,
				      "import_image: NULL argument");
	if (!b->ops->import_image)
		return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_CORE,
				      "backend %s cannot import images", b->ops->name);
	return b->ops->import_image(b->state, tar_path, ref);
}
