/*
 * server/rest-json.c: a sandbox as E2B's REST control plane shows it:
 * Sandbox (the answer of create and connect), ListedSandbox and
 * SandboxDetail, and the RFC 3339 times in them.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "server/server-int.h"

#define ENVD_VERSION "0.5.7" /* >= 0.5.7: octet-stream uploads; < 0.6.2: no file metadata */
#define CLIENT_ID "6532622b"

/* Unix ms as RFC 3339 in UTC, to the millisecond. */
json_t *sbxs_rfc3339(int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[48];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03dZ", (int)(ms % 1000));
	return json_string(buf);
}

static int64_t end_wall(const struct sbxs_box *b)
{
	return b->started_wall + (int64_t)(b->end_mono - b->started_mono);
}

/* Sandbox (create, connect). */
json_t *sbxs_box_sandbox_json(const struct sbxs_box *b)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:n}", "templateID", b->template_id,
			      "alias", b->template_id, "sandboxID", b->id, "clientID", CLIENT_ID,
			      "envdVersion", ENVD_VERSION, "domain", "trafficAccessToken");

	if (j && b->secure) {
		json_object_set_new(j, "envdAccessToken", json_string(b->token));
		/* The token of the sandbox's ports (server/port.c), which the
		 * code interpreter's SDK also sends to port 49999 with every
		 * call (server/interp.c). */
		json_object_set_new(j, "trafficAccessToken", json_string(b->traffic));
	}
	return j;
}

/* ListedSandbox, or SandboxDetail with detail (mu held). */
json_t *sbxs_box_listed_json(const struct sbxs_box *b, int detail)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:O, s:s, s:s}",
			      "templateID", b->template_id, "alias", b->template_id, "sandboxID",
			      b->id, "clientID", CLIENT_ID, "startedAt",
			      sbxs_rfc3339(b->started_wall), "endAt", sbxs_rfc3339(end_wall(b)),
			      "cpuCount", (json_int_t)((b->cpu_milli + 999) / 1000), "memoryMB",
			      (json_int_t)(b->memory >> 20), "diskSizeMB",
			      (json_int_t)(b->disk >> 20), "metadata", b->metadata, "state",
			      b->paused ? "paused" : "running", "envdVersion", ENVD_VERSION);

	if (!j || !detail)
		return j;
	if (b->secure)
		json_object_set_new(j, "envdAccessToken", json_string(b->token));
	json_object_set_new(j, "allowInternetAccess",
			    b->internet < 0 ? json_null() : json_boolean(b->internet));
	json_object_set_new(j, "domain", json_null());
	json_object_set_new(j, "network", json_deep_copy(b->network));
	json_object_set_new(j, "lifecycle",
			    json_pack("{s:b, s:s}", "autoResume", 0, "onTimeout",
				      b->auto_pause ? "pause" : "kill"));
	return j;
}
