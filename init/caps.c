/*
 * init/caps.c: make sure sbx-init and everything it starts hold no
 * capabilities at all.
 *
 * The container is created with CapDrop ALL and a non-root user, so normally
 * every set is already empty and this file only verifies that. It still
 * drops whatever it finds, because a misconfigured engine (or a host-side
 * test run as root) must not hand a capability to untrusted code. Any
 * capability that cannot be removed is fatal: the init fails closed rather
 * than run code with privileges it was promised not to have. This is the only
 * file that uses libcap.
 */
#include "init/init.h"

#include <errno.h>
#include <string.h>
#include <sys/capability.h>

/* Capability numbers are below 64 for as long as the kernel ABI is 2x32 bits. */
#define CAP_SCAN_LIMIT 64

static int bounding_drop(void)
{
	cap_value_t c;

	for (c = 0; c < CAP_SCAN_LIMIT; c++) {
		int r = cap_get_bound(c);

		/* -1 means this kernel does not know the capability: nothing to drop. */
		if (r <= 0)
			continue;
		if (cap_drop_bound(c) != 0) {
			char *name = cap_to_name(c);

			sbx_init_msg("cannot drop capability %s from the bounding set: %s "
				     "(start the container with CapDrop ALL)",
				     name ? name : "?", strerror(errno));
			cap_free(name);
			return -1;
		}
		if (cap_get_bound(c) > 0) {
			sbx_init_msg("capability %d is still in the bounding set after a drop", c);
			return -1;
		}
	}
	return 0;
}

static int proc_set_empty(cap_t caps, int *empty)
{
	static const cap_flag_t flags[] = {CAP_EFFECTIVE, CAP_PERMITTED, CAP_INHERITABLE};
	cap_value_t c;
	size_t i;

	*empty = 1;
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		for (c = 0; c < CAP_SCAN_LIMIT; c++) {
			cap_flag_value_t v = CAP_CLEAR;

			if (!CAP_IS_SUPPORTED(c))
				continue;
			if (cap_get_flag(caps, c, flags[i], &v) != 0)
				return -1;
			if (v != CAP_CLEAR)
				*empty = 0;
		}
	}
	return 0;
}

static int ambient_empty(void)
{
	cap_value_t c;

	for (c = 0; c < CAP_SCAN_LIMIT; c++)
		if (cap_get_ambient(c) > 0)
			return 0;
	return 1;
}

int sbx_init_drop_caps(void)
{
	cap_t caps;
	int empty = 0;

	/* The bounding set first: dropping it needs CAP_SETPCAP, if we have it. */
	if (bounding_drop() != 0)
		return -1;

	/* The ambient set is absent on kernels before 4.3; then it is empty. */
	if (CAP_AMBIENT_SUPPORTED() && !ambient_empty()) {
		if (cap_reset_ambient() != 0 || !ambient_empty()) {
			sbx_init_msg("cannot clear the ambient capability set: %s",
				     strerror(errno));
			return -1;
		}
	}

	caps = cap_get_proc();
	if (!caps) {
		sbx_init_msg("cannot read process capabilities: %s", strerror(errno));
		return -1;
	}
	if (proc_set_empty(caps, &empty) != 0) {
		sbx_init_msg("cannot inspect process capabilities: %s", strerror(errno));
		cap_free(caps);
		return -1;
	}
	if (!empty) {
		/* Lowering our own sets never needs a privilege. */
		if (cap_clear(caps) != 0 || cap_set_proc(caps) != 0) {
			sbx_init_msg("cannot clear process capabilities: %s", strerror(errno));
			cap_free(caps);
			return -1;
		}
		cap_free(caps);
		caps = cap_get_proc();
		if (!caps || proc_set_empty(caps, &empty) != 0 || !empty) {
			sbx_init_msg("process capabilities are still not empty after clearing");
			if (caps)
				cap_free(caps);
			return -1;
		}
	}
	cap_free(caps);
	return 0;
}
