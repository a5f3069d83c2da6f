/*
 * tests/fuzz/fuzz_modal.c: libFuzzer target for how the modal backend
 * (remote/modal/) reads Modal's response messages: the protobuf decoding
 * (protobuf-c, with the project's messages of remote/modal/modal.proto) of
 * every response it takes, and its own readers of them: the image build
 * stream (join_cb() in image.c), a run's output and its exit from the
 * command router (stdio_cb(), wait_cb() in run.c), the ids it accepts
 * (sbx__modal_valid_id()) and the expiry of the auth token's JWT
 * (jwt_exp() in client.c: base64url and JSON).
 *
 * client.c, image.c and run.c are included so that their static readers are
 * reached without changing them; nothing here opens a connection. The first
 * byte chooses the reader; the rest is one response message (or the token's
 * text). Invariants besides the sanitizers': output reaches the sink whole
 * and is counted, and a JWT's expiry is 0 or within the range jwt_exp()
 * accepts.
 */
#include "remote/modal/client.c"
#include "remote/modal/image.c"
#include "remote/modal/run.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink_state {
	uint64_t bytes;
};

static int sink(void *arg, int stream, const void *p, size_t n)
{
	struct sink_state *s = arg;

	if ((stream != SBX_STREAM_STDOUT && stream != SBX_STREAM_STDERR) || (n && !p))
		abort();
	s->bytes += n;
	return 0;
}

/* One unary response, decoded as the backend does (UNPACK frees the copy), its ids checked. */
static void unary(int which, const uint8_t *msg, size_t len)
{
	switch (which) {
	case 0: {
		uint8_t *copy = malloc(len ? len : 1);
		Modal__Client__AppGetOrCreateResponse *r;

		memcpy(copy, msg, len);
		r = SBX_MODAL_UNPACK(Modal__Client__AppGetOrCreateResponse,
				     modal__client__app_get_or_create_response__unpack, copy, len,
				     "A");
		if (r) {
			(void)sbx__modal_valid_id(r->app_id);
			modal__client__app_get_or_create_response__free_unpacked(r, NULL);
		}
		break;
	}
	case 1: {
		uint8_t *copy = malloc(len ? len : 1);
		Modal__Client__ImageGetOrCreateResponse *r;

		memcpy(copy, msg, len);
		r = SBX_MODAL_UNPACK(Modal__Client__ImageGetOrCreateResponse,
				     modal__client__image_get_or_create_response__unpack, copy, len,
				     "I");
		if (r) {
			(void)sbx__modal_valid_id(r->image_id);
			if (r->result)
				(void)sbx__modal_status_name(r->result->status);
			modal__client__image_get_or_create_response__free_unpacked(r, NULL);
		}
		break;
	}
	case 2: {
		uint8_t *copy = malloc(len ? len : 1);
		Modal__Client__SandboxCreateResponse *r;

		memcpy(copy, msg, len);
		r = SBX_MODAL_UNPACK(Modal__Client__SandboxCreateResponse,
				     modal__client__sandbox_create_response__unpack, copy, len,
				     "C");
		if (r) {
			(void)sbx__modal_valid_id(r->sandbox_id);
			modal__client__sandbox_create_response__free_unpacked(r, NULL);
		}
		break;
	}
	case 3: {
		uint8_t *copy = malloc(len ? len : 1);
		Modal__Client__SandboxGetTaskIdResponse *r;

		memcpy(copy, msg, len);
		r = SBX_MODAL_UNPACK(Modal__Client__SandboxGetTaskIdResponse,
				     modal__client__sandbox_get_task_id_response__unpack, copy, len,
				     "T");
		if (r) {
			(void)sbx__modal_valid_id(r->task_id);
			modal__client__sandbox_get_task_id_response__free_unpacked(r, NULL);
		}
		break;
	}
	case 4: {
		uint8_t *copy = malloc(len ? len : 1);
		Modal__Client__TaskGetCommandRouterAccessResponse *r;

		memcpy(copy, msg, len);
		r = SBX_MODAL_UNPACK(Modal__Client__TaskGetCommandRouterAccessResponse,
				     modal__client__task_get_command_router_access_response__unpack,
				     copy, len, "R");
		if (r) {
			if (r->jwt)
				(void)jwt_exp(r->jwt);
			modal__client__task_get_command_router_access_response__free_unpacked(r,
											      NULL);
		}
		break;
	}
	default: {
		uint8_t *copy = malloc(len ? len : 1);
		Modal__Client__SandboxListResponse *r;

		memcpy(copy, msg, len);
		r = SBX_MODAL_UNPACK(Modal__Client__SandboxListResponse,
				     modal__client__sandbox_list_response__unpack, copy, len, "L");
		if (r) {
			for (size_t i = 0; i < r->n_sandboxes; i++)
				(void)sbx__modal_valid_id(r->sandboxes[i]->id);
			modal__client__sandbox_list_response__free_unpacked(r, NULL);
		}
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sink_state ss = {0};
	struct sbx__run_req req = {.sink = sink, .sink_arg = &ss};
	struct run r = {.req = &req};
	struct join j = {0};
	const uint8_t *msg = data + 1;
	size_t len = size - 1;

	if (size < 1)
		return 0;
	switch (data[0] % 10) {
	case 0:
		(void)join_cb(&j, msg, len);
		if (memchr(j.entry_id, '\0', sizeof(j.entry_id)) == NULL)
			abort();
		break;
	case 1:
	case 2:
		(void)stdio_cb(&r, msg, len, data[0] % 10 == 2);
		if (ss.bytes != r.offset[0] + r.offset[1])
			abort();
		break;
	case 3:
		(void)wait_cb(&r, msg, len);
		break;
	case 4: {
		char *s = strndup((const char *)msg, len);
		long long exp;

		if (!s)
			abort();
		exp = jwt_exp(s);
		if (exp < 0 || exp >= 1000000000000LL)
			abort();
		free(s);
		break;
	}
	default:
		unary(data[0] % 10 - 5, msg, len);
		break;
	}
	sbx__error_clear();
	return 0;
}
