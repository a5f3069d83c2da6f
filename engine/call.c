/*
 * engine/call.c: the Engine requests every file of the docker backend
 * makes: a call with a JSON body and answer, and the few container
 * operations the lifecycle (engine/docker.c), the run paths
 * (engine/attach.c, engine/exec.c) and the reaper (engine/reap.c) share.
 * Below all of them: it calls none of them back.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sandboxio.h>

#include "engine/docker-int.h"
#include "engine/http-int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error-int.h"
#include "util/frame.h"

/* ===== Small helpers over the transport ===== */

/* Performs a request and decodes a JSON answer (if wanted). Non-2xx is an error
 * carrying the Engine's message, except statuses listed in ok_also. */
int sbx__docker_call(struct sbx__docker *d,
		     const char *method,
		     const char *path,
		     json_t *body,
		     long timeout_ms,
		     long *status_out,
		     json_t **out)
{
	char *text = NULL;
	int rc;

	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "encode request");
	}
	rc = sbx__docker_call_text(d, method, path, text, timeout_ms, status_out, out);
	free(text);
	return rc;
}

int sbx__docker_call_text(struct sbx__docker *d,
			  const char *method,
			  const char *path,
			  const char *text,
			  long timeout_ms,
			  long *status_out,
			  json_t **out)
{
	struct sbx__buf resp = {0};
	char msg[512];
	long status = 0;
	int rc;

	rc = sbx__http_call(&d->http, method, path, text, timeout_ms, &status, &resp);
	if (rc < 0) {
		sbx__buf_clear(&resp);
		return rc;
	}
	*status_out = status;
	if (status >= 200 && status < 300) {
		if (out) {
			*out = resp.len ? json_loadb(resp.data, resp.len, JSON_ALLOW_NUL, NULL)
					: json_object();
			if (!*out) {
				sbx__buf_clear(&resp);
				return sbx__error_set(SBX_EENGINE, SBX_ERRCLASS_ENGINE,
						      "%s %s: the Engine's answer is not JSON",
						      method, path);
			}
		}
		sbx__buf_clear(&resp);
		return 0;
	}
	sbx__http_message(&resp, msg, sizeof(msg));
	sbx__buf_clear(&resp);
	rc = sbx__error_set(status == 404 ? SBX_ENOTFOUND : SBX_EENGINE, SBX_ERRCLASS_ENGINE,
			    "%s %s: HTTP %ld: %s", method, path, status, msg);
	sbx__error_http(status);
	return rc;
}

int sbx__label_is(json_t *labels, const char *key, const char *value)
{
	json_t *v = json_object_get(labels, key);

	/* Length too: a value with a NUL inside is not the value. */
	return json_is_string(v) && json_string_length(v) == strlen(value) &&
	       strcmp(json_string_value(v), value) == 0;
}

char *sbx__url_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *r;

	if (!e)
		return NULL;
	r = strdup(e);
	curl_free(e);
	return r;
}

int sbx__docker_kill_op(void *state, void *box)
{
	int rc = sbx__docker_kill(state, box);

	/* Gone already is as dead as it gets. */
	if (rc == SBX_ENOTFOUND) {
		sbx__error_clear();
		return 0;
	}
	return rc;
}

/* Thaws a paused container (POST /containers/{id}/unpause), before its
 * kill or removal; an error is of no matter there (it may be running). */
void sbx__paused_thaw(struct sbx__docker *d, const char *id)
{
	char path[256];
	long status = 0;

	snprintf(path, sizeof(path), "/containers/%s/unpause", id);
	(void)sbx__docker_call(d, "POST", path, NULL, 0, &status, NULL);
	sbx__error_clear();
}

/* The removal itself; gone already counts as removed. */
static int remove_container(struct sbx__docker *d, const char *id)
{
	char path[256];
	long status = 0;
	int rc;

	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", id);
	rc = sbx__docker_call(d, "DELETE", path, NULL, 0, &status, NULL);
	if (rc < 0 && status == 500 &&
	    strstr(sbx_error_last()->message, "container state improper")) {
		/* Podman, for a frozen container: the force stopped it, then
		 * refused to remove it "stopped". Once more, now that it is. */
		sbx__error_clear();
		rc = sbx__docker_call(d, "DELETE", path, NULL, 0, &status, NULL);
	}
	if (rc == SBX_ENOTFOUND) { /* gone already (AutoRemove at the init's deadline) */
		sbx__error_clear();
		return 0;
	}
	if (rc < 0 && status == 409) {
		/* Being removed by someone else (AutoRemove after a kill): the
		 * container still exists until the Engine is done, so wait for
		 * that before saying it is gone. 404 here means it already is. */
		sbx__error_clear();
		snprintf(path, sizeof(path), "/containers/%s/wait?condition=removed", id);
		rc = sbx__docker_call(d, "POST", path, NULL, 0, &status, NULL);
		if (rc == SBX_ENOTFOUND) {
			sbx__error_clear();
			return 0;
		}
	}
	return rc;
}

int sbx__docker_remove(struct sbx__docker *d, const char *id)
{
	struct sbx__paused pr;
	int rc, rec = sbx__paused_read(id, &pr);

	/* A paused sandbox is thawed first (some runtimes kill none frozen),
	 * and its record goes with it (engine/pause.c). */
	if (rec != 0)
		sbx__paused_thaw(d, id);
	rc = remove_container(d, id);
	if (rc == 0 && rec != 0)
		sbx__paused_remove(id);
	return rc;
}

int sbx__docker_kill(struct sbx__docker *d, struct sbx__docker_box *b)
{
	return sbx__docker_kill_why(d, b, SBX__DEAD_KILLED);
}

int sbx__docker_kill_why(struct sbx__docker *d, struct sbx__docker_box *b, int why)
{
	char path[256];
	long status = 0;

	__atomic_store_n(&b->dead, why, __ATOMIC_SEQ_CST);
	snprintf(path, sizeof(path), "/containers/%s/kill?signal=SIGKILL", b->id);
	return sbx__docker_call(d, "POST", path, NULL, 0, &status, NULL);
}

int sbx__docker_list_ours(struct sbx__docker *d, const char *tenant, int only_local, json_t **out)
{
	_cleanup_json_ json_t *filters = NULL;
	_sbx_cleanup_free_ char *ftext = NULL, *fesc = NULL;
	char path[1024], lab[160];
	long status = 0;

	filters = json_pack("{s:[s]}", "label", SBX_LABEL_MANAGED "=" SBX_LABEL_MANAGED_VALUE);
	if (!filters)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	if (tenant) {
		snprintf(lab, sizeof(lab), SBX_LABEL_PREFIX "tenant=%.63s", tenant);
		json_array_append_new(json_object_get(filters, "label"), json_string(lab));
	}
	if (only_local) {
		snprintf(lab, sizeof(lab), SBX_LABEL_PREFIX "owner-host=%.64s", d->hostname);
		json_array_append_new(json_object_get(filters, "label"), json_string(lab));
	}
	ftext = json_dumps(filters, JSON_COMPACT);
	fesc = ftext ? sbx__url_escape(ftext) : NULL;
	if (!fesc)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_ENGINE, "out of memory");
	snprintf(path, sizeof(path), "/containers/json?all=1&filters=%s", fesc);
	return sbx__docker_call(d, "GET", path, NULL, 0, &status, out);
}

/* ===== Did the Engine see the sandbox's memory cap end it? ===== */

int sbx__docker_events_oom(const char *data, size_t len, const char *id)
{
	size_t pos = 0;

	/* One JSON object per line; anything else in the answer is skipped. */
	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (data + pos)) : len - pos;
		_cleanup_json_ json_t *ev = json_loadb(data + pos, n, JSON_REJECT_DUPLICATES, NULL);
		json_t *actor = json_object_get(ev, "Actor");

		pos += n + (nl != NULL);
		if (json_is_object(ev) &&
		    strcmp(json_string_value(json_object_get(ev, "Action")) ?: "", "oom") == 0 &&
		    strcmp(json_string_value(json_object_get(actor, "ID")) ?: "", id) == 0)
			return 1;
	}
	return 0;
}

/* How long to follow the Engine's events for the "oom" of a sandbox that
 * a SIGKILL ended (see below): a bound on a wait that ends at the event. */
#define OOM_FOLLOW_S 5

/* Whether the Engine logged an "oom" of container id from since until
 * until_ns (unix ns; past: its log answers at once; future: the answer is
 * streamed until then). */
static int oom_logged(struct sbx__docker *d, const char *id, long long since, int64_t until_ns)
{
	_sbx_cleanup_free_ char *filt = NULL;
	struct sbx__buf resp = {0};
	char path[512], filters[256];
	long status = 0;
	int rc;

	snprintf(filters, sizeof(filters),
		 "{\"container\":[\"%s\"],\"event\":[\"oom\"],\"type\":[\"container\"]}", id);
	filt = sbx__url_escape(filters);
	if (!filt)
		return 0;
	snprintf(path, sizeof(path), "/events?since=%lld&until=%lld.%09lld&filters=%s", since,
		 (long long)(until_ns / 1000000000), (long long)(until_ns % 1000000000), filt);
	rc = sbx__http_call(&d->http, "GET", path, NULL, (OOM_FOLLOW_S + 10) * 1000L, &status,
			    &resp);
	sbx__error_clear();
	rc = rc == 0 && status == 200 && sbx__docker_events_oom(resp.data, resp.len, id);
	sbx__buf_clear(&resp);
	return rc;
}

void sbx__docker_box_memcg(struct sbx__docker_box *b, const char *full_id, pid_t pid)
{
	char dir[PATH_MAX];
	int version;

	/* The cgroup must be the container's own (docker/<id> or
	 * docker-<id>.scope): a pid that ended and was reused is not. */
	if (pid > 0 && full_id && strlen(full_id) == 64 &&
	    sbx__cgroup_memory_dir(dir, &version, "/sys/fs/cgroup", "/proc", pid) == 0 &&
	    version == 1 && strstr(dir, full_id))
		b->memcg = strdup(dir);
}

void sbx__docker_run_witness(const struct sbx__docker_box *b, struct sbx__cgroup_oom_watch *w)
{
	memset(w, 0, sizeof(*w));
	if (b->memcg)
		(void)sbx__cgroup_oom_watch(w, b->memcg);
}

void sbx__docker_oom_end(struct sbx__docker_box *b,
			 const struct sbx__run_req *req,
			 struct sbx__frame_exit *exit)
{
	__atomic_store_n(&b->dead, SBX__DEAD_OOM, __ATOMIC_SEQ_CST);
	if (req->ended)
		*req->ended = SBX__ENDED_OOM;
	*exit = (struct sbx__frame_exit){.status = SBX_FRAME_ST_SIGNALED,
					 .flags = SBX_FRAME_F_OOM,
					 .code = 137,
					 .signal = 9};
}

int sbx__docker_box_ended_by_oom(struct sbx__docker *d,
				 struct sbx__docker_box *b,
				 struct sbx__cgroup_oom_watch *w,
				 long long since)
{
	/* The witness counts the kernel's own signals, so it holds in the
	 * order that loses the Engine's event: the cgroup gone first. */
	int seen = sbx__cgroup_oom_poll(w, OOM_WITNESS_WAIT_MS);

	if (seen >= 0)
		return seen == SBX_CGROUP_OOM_YES;
	return sbx__docker_ended_by_oom(d, b->id, since);
}

int sbx__docker_ended_by_oom(struct sbx__docker *d, const char *id, long long since)
{
	_cleanup_json_ json_t *waited = NULL;
	struct timespec now;
	char path[512];
	long status = 0;
	int rc;

	/* Once the container is no longer running (or already removed by
	 * AutoRemove), the Engine has logged its end. */
	snprintf(path, sizeof(path), "/containers/%s/wait?condition=not-running", id);
	rc = sbx__docker_call(d, "POST", path, NULL, 0, &status, &waited);
	sbx__error_clear();
	if (rc < 0 && rc != SBX_ENOTFOUND)
		return 0;
	/* until is now, to the nanosecond: a past until answers at once
	 * from the Engine's log of recent events. */
	clock_gettime(CLOCK_REALTIME, &now);
	if (oom_logged(d, id, since, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec))
		return 1;
	/*
	 * The runtime reports the OOM and the end it caused on two paths, and
	 * on a loaded host the end can reach the Engine's log first. So a
	 * sandbox that a SIGKILL ended (137), or that is gone already, has its
	 * log followed until the event, for at most OOM_FOLLOW_S; any other end
	 * was not the OOM killer's.
	 */
	if (rc == 0 && json_integer_value(json_object_get(waited, "StatusCode")) != 128 + 9)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	return oom_logged(d, id, since,
			  ((int64_t)now.tv_sec + OOM_FOLLOW_S) * 1000000000 + now.tv_nsec);
}
