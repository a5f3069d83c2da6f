/*
 * core/config-describe.c: `config --effective`. What the one merge
 * (sbx__config_merge()) makes of a request under a config, each value with
 * where it came from, and the config's own ceilings and permitted sets, as
 * JSON. Going through the merge is what keeps the description true to what
 * a create does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <sandboxio/config.h>

#include "core/config-impl.h"
#include "core/config-int.h"
#include "core/limit-kinds.h"
#include "util/error-int.h"

/* ===== Describing ===== */

static const char *origin_name(const sbx_config *c, enum sbx__origin o, unsigned char from)
{
	switch (o) {
	case SBX__ORIGIN_BUILTIN:
		return "builtin";
	case SBX__ORIGIN_FILE:
		return sbx__config_from_name(c, from, "builtin");
	case SBX__ORIGIN_REQUEST:
		return "request";
	}
	return "builtin";
}

static json_t *slot_json(int slot, int64_t v)
{
	char buf[32];

	if (slot != 0 && sbx__limit_kinds[slot].unit == SBX__LIMIT_UNIT_SIZE)
		return json_string(sbx__config_fmt_size(buf, sizeof(buf), v));
	if (slot == 0 || sbx__limit_kinds[slot].unit == SBX__LIMIT_UNIT_MILLI) {
		if (v % 1000 == 0)
			return json_integer(v / 1000);
		return json_real((double)v / 1000.0);
	}
	return json_integer(v);
}

/* {"value": v, "origin": o}; steals v. NULL when out of memory. */
static json_t *entry(json_t *v, const char *origin)
{
	if (!v)
		return NULL;
	return json_pack("{s:o, s:s}", "value", v, "origin", origin);
}

static json_t *list_json(char **list, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(list[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The allowlist as "name" or "name:port" (IPv6 prefixes: "[addr/len]:port"). */
static json_t *allow_json(const sbx_policy *p)
{
	json_t *a = json_array();
	char buf[300];

	for (size_t i = 0; a && i < p->allow_n; i++) {
		const struct sbx__allow *e = &p->allow[i];

		if (!e->port)
			snprintf(buf, sizeof(buf), "%s", e->name);
		else if (strchr(e->name, ':'))
			snprintf(buf, sizeof(buf), "[%s]:%u", e->name, (unsigned)e->port);
		else
			snprintf(buf, sizeof(buf), "%s:%u", e->name, (unsigned)e->port);
		if (json_array_append_new(a, json_string(buf)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static void set_new(json_t *obj, const char *key, json_t *v, int *bad)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		*bad = 1;
}

/*
 * One function on purpose (some 120 lines): it writes one JSON document
 * from top to bottom in the order it is printed, a few set_new() lines per
 * key, and every part shares the same objects and the one "bad" flag.
 */
int sbx_config_describe(char **out,
			const sbx_config *c,
			const sbx_policy *request,
			const char *backend)
{
	struct sbx__config_origins o;
	sbx_policy *req = NULL, *eff = NULL;
	json_t *root = NULL, *e = NULL, *t = NULL, *ceil = NULL, *egress = NULL;
	const char *file;
	char *text = NULL;
	int rc, bad = 0;

	sbx__error_clear();
	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_describe: out is NULL");
	if (!c)
		c = &sbx__config_builtin;
	if (!backend)
		backend = "docker";
	if (!request) {
		rc = sbx_policy_new(&req);
		if (rc < 0)
			return rc;
		request = req;
	}
	rc = sbx__config_merge(&eff, c, request, backend, &o);
	sbx_policy_free(req);
	if (rc < 0)
		return rc;
	file = c->source ? c->source : "builtin";

	root = json_object();
	e = json_object();
	t = json_object();
	ceil = json_object();
	if (!root || !e || !t || !ceil) {
		bad = 1;
		goto done;
	}
	set_new(root, "source", json_string(c->source ? c->source : "builtin"), &bad);
	if (c->layered)
		set_new(root, "system", json_string(c->sys_source ? c->sys_source : "builtin"),
			&bad);
	else if (c->is_system)
		set_new(root, "system", json_string(c->source ? c->source : "builtin"), &bad);
	set_new(root, "backend", json_string(backend), &bad);
	for (int k = SBX_TIMEOUT_CREATE; k <= SBX_TIMEOUT_SANDBOX; k++) {
		static const char *const names[] = {
			[SBX_TIMEOUT_CREATE] = "create",
			[SBX_TIMEOUT_RUN] = "run",
			[SBX_TIMEOUT_RUN_CODE] = "run_code",
			[SBX_TIMEOUT_SANDBOX] = "sandbox",
		};
		set_new(t, names[k],
			entry(slot_json(0, (int64_t)eff->timeout_ms[k]),
			      origin_name(c, o.timeout[k], c->from_bound[0][0])),
			&bad);
	}
	set_new(e, "timeout", json_incref(t), &bad);
	for (int s = SBX__LIMIT_FIRST; s <= SBX__LIMIT_LAST; s++)
		set_new(e, slot_name(s),
			entry(slot_json(s, eff->limit[s]),
			      origin_name(c, o.limit[s], c->from_bound[0][s])),
			&bad);
	set_new(e, "image", entry(json_string(eff->image), origin_name(c, o.image, c->from_image)),
		&bad);
	set_new(e, "tenant", entry(json_string(eff->tenant), origin_name(c, o.tenant, 0)), &bad);
	set_new(e, "min_tier",
		entry(json_string(sbx_tier_name(eff->min_tier)),
		      origin_name(c, o.min_tier, c->from_tier)),
		&bad);
	set_new(e, "allow", entry(allow_json(eff), eff->allow_n ? "request" : "builtin"), &bad);
	set_new(root, "effective", json_incref(e), &bad);
	for (int s = 0; s < NSLOT; s++)
		set_new(ceil, slot_name(s),
			entry(slot_json(s, c->bound[1][s] ? c->bound[1][s] : slot_max(s)),
			      c->bound[1][s] ? sbx__config_from_name(c, c->from_bound[1][s], file)
					     : "builtin"),
			&bad);
	set_new(ceil, "pause",
		entry(slot_json(0, (int64_t)sbx_config_pause_ceiling_ms(c)),
		      c->pause_ceil ? sbx__config_from_name(c, c->from_pause, file) : "builtin"),
		&bad);
	set_new(root, "ceilings", json_incref(ceil), &bad);
	set_new(root, "images",
		entry(c->images_set ? list_json(c->images, c->images_n) : json_string("any"),
		      c->images_set ? sbx__config_from_name(c, c->from_images, file) : "builtin"),
		&bad);
	if (c->egress_set)
		egress = json_pack("{s:o, s:o}", "cidrs", list_json(c->cidr_text, c->cidrs_n),
				   "hosts", list_json(c->hosts, c->hosts_n));
	else
		egress = json_string(c->is_file ? "none" : "any");
	set_new(root, "egress",
		entry(egress,
		      c->is_file ? sbx__config_from_name(c, c->from_egress, file) : "builtin"),
		&bad);
	set_new(root, "backends",
		entry(c->backends_set ? list_json(c->backends, c->backends_n) : json_string("any"),
		      c->backends_set ? sbx__config_from_name(c, c->from_backends, file)
				      : "builtin"),
		&bad);
	set_new(root, "secrets",
		entry(json_boolean(c->secrets_set ? c->secrets : 1),
		      c->secrets_set ? sbx__config_from_name(c, c->from_secrets, file) : "builtin"),
		&bad);
	set_new(root, "require_tenant",
		entry(json_boolean(c->require_tenant_set && c->require_tenant),
		      c->require_tenant_set ? sbx__config_from_name(c, c->from_tenant, file)
					    : "builtin"),
		&bad);
	set_new(root, "min_tier",
		entry(json_string(
			      sbx_tier_name(c->min_tier_set ? c->min_tier : SBX_TIER_CONTAINER)),
		      c->min_tier_set ? sbx__config_from_name(c, c->from_tier, file) : "builtin"),
		&bad);
	if (!bad)
		text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
done:
	json_decref(t);
	json_decref(e);
	json_decref(ceil);
	json_decref(root);
	sbx_policy_free(eff);
	if (bad || !text) {
		free(text);
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
				      "config_describe: out of memory");
	}
	*out = text;
	return 0;
}
