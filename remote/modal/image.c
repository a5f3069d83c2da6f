/*
 * remote/modal/image.c: a sandbox's image, built by Modal from a one-line
 * Dockerfile ("FROM <image>") at create: ImageGetOrCreate, then
 * ImageJoinStreaming followed to its result within the create deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sandboxio.h>

#include "remote/modal/grpc-int.h"
#include "remote/modal/modal-int.h"
#include "remote/modal/modal.pb-c.h"
#include "util/cleanup.h"
#include "util/error-int.h"

/* ===== Images ===== */

struct join {
	char entry_id[SBX_MODAL_ID_MAX + 1];
	int bad;
	int status;
	char exception[512];
};

static int join_cb(void *arg, const uint8_t *msg, size_t len)
{
	struct join *j = arg;
	Modal__Client__ImageJoinStreamingResponse *r =
		modal__client__image_join_streaming_response__unpack(NULL, len, msg);

	if (!r) {
		j->bad = 1;
		return -1;
	}
	if (r->entry_id && r->entry_id[0] && strlen(r->entry_id) <= SBX_MODAL_ID_MAX)
		snprintf(j->entry_id, sizeof(j->entry_id), "%s", r->entry_id);
	if (r->result && r->result->status) {
		j->status = r->result->status;
		snprintf(j->exception, sizeof(j->exception), "%s", r->result->exception ?: "");
	}
	modal__client__image_join_streaming_response__free_unpacked(r, NULL);
	return j->status ? 1 : 0; /* a result ends the wait */
}

static int image_result(const char *image, int status, const char *exception)
{
	if (status == MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_SUCCESS)
		return 0;
	/* A one-line "FROM" build fails when the image cannot be pulled. */
	return sbx__error_set(
		status == MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_FAILURE
			? SBX_ENOTFOUND
			: SBX_EENGINE,
		SBX_ERRCLASS_REMOTE, "modal: image '%s' could not be built (%s): %.400s", image,
		sbx__modal_status_name(status), exception && *exception ? exception : "");
}

int sbx__modal_image_build(struct sbx__modal *m,
			   const char *image,
			   uint64_t deadline,
			   char *image_id)
{
	Modal__Client__ImageGetOrCreateRequest req =
		MODAL__CLIENT__IMAGE_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__Image img = MODAL__CLIENT__IMAGE__INIT;
	Modal__Client__ImageGetOrCreateResponse *r;
	struct sbx__grpc_status st;
	char from[300], *cmds[1] = {from};
	struct join j = {0};
	uint8_t *resp = NULL;
	size_t len = 0;
	int rc;

	snprintf(from, sizeof(from), "FROM %s", image);
	img.n_dockerfile_commands = 1;
	img.dockerfile_commands = cmds;
	req.image = &img;
	req.app_id = m->app_id;
	req.builder_version = (char *)SBX_MODAL_BUILDER_VERSION;
	rc = sbx__modal_cp_call(m, SBX_MODAL_IMAGE_GET_OR_CREATE, &req.base, deadline, NULL, &resp,
				&len, &st);
	if (rc < 0)
		return sbx__error_wrap("modal: image '%s'", image);
	r = SBX_MODAL_UNPACK(Modal__Client__ImageGetOrCreateResponse,
			     modal__client__image_get_or_create_response__unpack, resp, len,
			     "ImageGetOrCreate");
	if (!r)
		return SBX_EENGINE;
	if (!sbx__modal_valid_id(r->image_id)) {
		modal__client__image_get_or_create_response__free_unpacked(r, NULL);
		return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				      "modal: ImageGetOrCreate answered without a valid image id");
	}
	snprintf(image_id, SBX_MODAL_ID_MAX + 1, "%s", r->image_id);
	if (r->result && r->result->status) {
		j.status = r->result->status;
		snprintf(j.exception, sizeof(j.exception), "%s", r->result->exception ?: "");
	}
	modal__client__image_get_or_create_response__free_unpacked(r, NULL);
	/* Not built yet: follow the build until a result, reconnecting as needed. */
	while (!j.status) {
		Modal__Client__ImageJoinStreamingRequest jr =
			MODAL__CLIENT__IMAGE_JOIN_STREAMING_REQUEST__INIT;
		struct sbx__grpc_opts o = {.deadline_ms = deadline, .max_throttle_ms = 0};
		_sbx_cleanup_free_ uint8_t *framed = NULL;
		char *tok = NULL;
		struct sbx__grpc_md md[6];
		uint64_t now = sbx__grpc_now_ms();

		if (now >= deadline)
			return sbx__error_set(SBX_ETIMEOUT, SBX_ERRCLASS_REMOTE,
					      "modal: image '%s' was not built by the create "
					      "deadline",
					      image);
		jr.image_id = image_id;
		jr.timeout =
			(float)((deadline - now) / 1000.0 > 55 ? 55 : (deadline - now) / 1000.0);
		jr.last_entry_id = j.entry_id;
		framed = sbx__modal_pack(&jr.base, &len, 0);
		if (!framed)
			return sbx__modal_nomem();
		rc = sbx__modal_auth_token(m, deadline, &tok);
		if (rc < 0)
			return rc;
		md[0] = (struct sbx__grpc_md){"x-modal-client-type", SBX_MODAL_CLIENT_TYPE};
		md[1] = (struct sbx__grpc_md){"x-modal-client-version", SBX_MODAL_CLIENT_VERSION};
		md[2] = (struct sbx__grpc_md){"x-modal-libmodal-version",
					      "sandboxio/" SBX_VERSION_STRING};
		md[3] = (struct sbx__grpc_md){"x-modal-token-id", m->token_id};
		md[4] = (struct sbx__grpc_md){"x-modal-token-secret", m->token_secret};
		md[5] = (struct sbx__grpc_md){"x-modal-auth-token", tok};
		o.md = md;
		o.md_n = 6;
		rc = sbx__grpc_stream(m->cp, SBX_MODAL_IMAGE_JOIN_STREAMING, framed, len, &o,
				      join_cb, &j, &st);
		sbx__modal_wipe_free(tok);
		if (j.bad)
			return sbx__error_set(
				SBX_EENGINE, SBX_ERRCLASS_REMOTE,
				"modal: image '%s': ImageJoinStreaming answered a message "
				"that is not an ImageJoinStreamingResponse",
				image);
		if (rc < 0 && st.cb_rc == 1) {
			sbx__error_clear(); /* stopped at the result */
			rc = 0;
		}
		if (rc < 0 && !st.broken && sbx__grpc_retryable(st.code) &&
		    sbx__grpc_now_ms() + 100 < deadline) {
			sbx__error_clear();
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		if (rc < 0)
			return sbx__error_wrap("modal: image '%s'", image);
	}
	return image_result(image, j.status, j.exception);
}

int sbx__modal_op_image_exists(void *state, const char *ref)
{
	(void)state;
	return sbx__error_set(SBX_EUNSUPPORTED, SBX_ERRCLASS_REMOTE,
			      "modal: images are built at create; '%.200s' cannot be checked "
			      "beforehand",
			      ref);
}
