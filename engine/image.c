/*
 * engine/image.c: the docker backend's images: whether one is present, and
 * the import of a root filesystem's tarball as one (`sandboxio image
 * build`), with the image's user and working directory set as every
 * sandbox expects them. The same requests serve dockerd and Podman.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sandboxio.h>

#include "engine/docker-int.h"
#include "engine/http-int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error-int.h"

int sbx__docker_image_exists(void *state, const char *ref)
{
	_sbx_cleanup_free_ char *esc = sbx__url_escape(ref);
	char path[512];
	long status = 0;
	int rc;

	if (!esc)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	snprintf(path, sizeof(path), "/images/%s/json", esc);
	rc = sbx__docker_call(state, "GET", path, NULL, 0, &status, NULL);
	if (rc == SBX_ENOTFOUND) {
		sbx__error_clear();
		return 0;
	}
	return rc < 0 ? rc : 1;
}

int sbx__docker_import_image(void *state, const char *tar_path, const char *ref)
{
	struct sbx__docker *d = state;
	_sbx_cleanup_free_ char *repo = NULL, *erepo = NULL, *etag = NULL, *c1 = NULL, *c2 = NULL;
	struct sbx__buf resp = {0};
	char path[1024], *colon, *line, *save = NULL;
	long status = 0;
	int rc;

	repo = strdup(ref);
	if (!repo)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	colon = strrchr(repo, ':');
	if (colon && !strchr(colon, '/'))
		*colon++ = '\0';
	else
		colon = (char *)"latest";
	erepo = sbx__url_escape(repo);
	etag = sbx__url_escape(colon);
	c1 = sbx__url_escape("USER " SBX_SANDBOX_USER);
	c2 = sbx__url_escape("WORKDIR /workspace");
	if (!erepo || !etag || !c1 || !c2)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	snprintf(path, sizeof(path),
		 "/images/create?fromSrc=-&repo=%s&tag=%s&changes=%s&changes=%s", erepo, etag, c1,
		 c2);
	rc = sbx__http_upload(&d->http, path, tar_path, 600000, &status, &resp);
	if (rc < 0) {
		sbx__buf_clear(&resp);
		return rc;
	}
	if (status != 200) {
		char msg[512];
		sbx__http_message(&resp, msg, sizeof(msg));
		sbx__buf_clear(&resp);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "import %s: HTTP %ld: %s",
				      ref, status, msg);
	}
	/* The answer is a stream of JSON progress objects; any "error" fails it.
	 * An empty answer holds none (and no buffer to split). */
	for (line = resp.data ? strtok_r(resp.data, "\r\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\r\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		const char *err = json_string_value(json_object_get(o, "error"));
		if (err)
			rc = sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE, "import %s: %s", ref,
					    err);
		json_decref(o);
	}
	sbx__buf_clear(&resp);
	return rc;
}
