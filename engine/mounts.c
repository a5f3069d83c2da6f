/*
 * engine/mounts.c: what a sandbox may have mounted. An image that declares
 * volumes is refused before create (Docker would give each an anonymous
 * volume on the host's disk, outside the disk cap), and the mounts of the
 * created container are read back and compared with the policy's set.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <sandboxio.h>

#include "engine/docker-int.h"

int sbx__docker_check_image_volumes(json_t *image_inspect,
				    const char *image,
				    char *why,
				    size_t why_len)
{
	json_t *vols = json_object_get(json_object_get(image_inspect, "Config"), "Volumes");
	const char *key;
	json_t *v;

	if (!vols || json_is_null(vols))
		return 0;
	if (!json_is_object(vols)) {
		snprintf(why, why_len, "image %.200s: its config's Volumes is not an object",
			 image);
		return -1;
	}
	json_object_foreach(vols, key, v)
	{
		(void)v;
		snprintf(
			why, why_len,
			"image %.200s declares the volume %.200s (VOLUME in its build): the engine "
			"would put it on the host's disk, outside the sandbox's disk cap; use an "
			"image without VOLUME",
			image, key);
		return -1;
	}
	return 0;
}

int sbx__docker_check_mounts(json_t *mounts,
			     const struct sbx__mount_want *want,
			     size_t want_n,
			     char *why,
			     size_t why_len)
{
	size_t seen = 0, i;
	json_t *m;

	if (mounts && !json_is_null(mounts) && !json_is_array(mounts)) {
		snprintf(why, why_len, "its Mounts is not a list");
		return -1;
	}
	json_array_foreach(mounts, i, m)
	{
		const char *type = json_string_value(json_object_get(m, "Type")) ?: "?";
		const char *src = json_string_value(json_object_get(m, "Source")) ?: "";
		const char *dst = json_string_value(json_object_get(m, "Destination")) ?: "?";
		int rw = json_is_true(json_object_get(m, "RW"));
		size_t w;

		for (w = 0; w < want_n; w++)
			if (strcmp(dst, want[w].destination) == 0)
				break;
		if (w == want_n) {
			snprintf(why, why_len, "an unexpected %.16s mount at %.200s (from %.200s)",
				 type, dst, *src ? src : "an anonymous volume");
			return -1;
		}
		if (strcmp(type, want[w].type) != 0 || strcmp(src, want[w].source) != 0 ||
		    rw != want[w].rw || (seen & (1u << w))) {
			snprintf(why, why_len,
				 "the mount at %.200s is %.16s from %.200s (%s), not %s from "
				 "%.200s (%s)",
				 dst, type, src, rw ? "rw" : "ro", want[w].type, want[w].source,
				 want[w].rw ? "rw" : "ro");
			return -1;
		}
		seen |= 1u << w;
	}
	for (i = 0; i < want_n; i++)
		if (!(seen & (1u << i))) {
			snprintf(why, why_len, "the %s mount at %.200s is missing", want[i].type,
				 want[i].destination);
			return -1;
		}
	return 0;
}
