/*
 * core/config-narrow.c: a config named by the caller (--config,
 * $SANDBOXIO_CONFIG) under the system's. The system config is the bound; the
 * caller's may only narrow it, and whatever it asks for beyond it is
 * refused naming the key and both files, never dropped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sandboxio/config.h>

#include "core/config-impl.h"
#include "core/config-int.h"
#include "util/error-int.h"

/* ===== Narrowing ===== */

static int in_list(char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

static int copy_list(char ***dst, size_t *dn, char *const *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = sbx__config_push(dst, dn, src[i]);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
nrefuse(const sbx_config *sys, const sbx_config *nar, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* SBX_EDENIED naming the key, the narrowing file and the system config. */
static int
nrefuse(const sbx_config *sys, const sbx_config *nar, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sbx__error_set(SBX_EDENIED, SBX_ERRCLASS_POLICY,
			      "config %s: refused: %s: %s; the system config %s is the bound, "
			      "and a config named by --config or $" SBX_CONFIG_ENV
			      " may only narrow it",
			      sbx__config_source_name(nar), key, msg, sbx__config_source_name(sys));
}

static int narrow_bounds(sbx_config *m, const sbx_config *sys, const sbx_config *nar)
{
	char a[32], b[32], key[32];

	for (int s = 0; s < NSLOT; s++) {
		int64_t sc = sys->bound[1][s] ? sys->bound[1][s] : slot_max(s);
		int64_t def, ceil;

		if (nar->bound[1][s] > sc) {
			snprintf(key, sizeof(key), "ceilings.%s", slot_name(s));
			return nrefuse(sys, nar, key, "%s is above the system's ceilings.%s (%s)",
				       sbx__config_fmt_slot(a, sizeof(a), s, nar->bound[1][s]),
				       slot_name(s), sbx__config_fmt_slot(b, sizeof(b), s, sc));
		}
		m->bound[1][s] = nar->bound[1][s] ? nar->bound[1][s] : sys->bound[1][s];
		m->from_bound[1][s] = nar->bound[1][s] ? FROM_NARROW : FROM_SYSTEM;
		snprintf(key, sizeof(key), "defaults.%s", slot_name(s));
		if (nar->bound[0][s] > sc)
			return nrefuse(sys, nar, key, "%s is above the system's ceilings.%s (%s)",
				       sbx__config_fmt_slot(a, sizeof(a), s, nar->bound[0][s]),
				       slot_name(s), sbx__config_fmt_slot(b, sizeof(b), s, sc));
		m->bound[0][s] = nar->bound[0][s] ? nar->bound[0][s] : sys->bound[0][s];
		m->from_bound[0][s] = nar->bound[0][s] ? FROM_NARROW : FROM_SYSTEM;
		def = m->bound[0][s] ? m->bound[0][s] : slot_def(s);
		ceil = m->bound[1][s] ? m->bound[1][s] : slot_max(s);
		if (def > ceil)
			return nrefuse(
				sys, nar, key,
				"the default %s (%s) is above ceilings.%s (%s, %s); set %s at "
				"or below the ceiling",
				sbx__config_fmt_slot(a, sizeof(a), s, def),
				m->bound[0][s]
					? sbx__config_from_name(m, m->from_bound[0][s], "built-in")
					: "built-in",
				slot_name(s), sbx__config_fmt_slot(b, sizeof(b), s, ceil),
				m->bound[1][s]
					? sbx__config_from_name(m, m->from_bound[1][s], "built-in")
					: "built-in",
				key);
	}
	if (nar->pause_ceil && (uint64_t)nar->pause_ceil > sbx_config_pause_ceiling_ms(sys))
		return nrefuse(sys, nar, "ceilings.pause",
			       "%s is above the system's ceilings.pause (%s)",
			       sbx__config_fmt_slot(a, sizeof(a), 0, nar->pause_ceil),
			       sbx__config_fmt_slot(b, sizeof(b), 0,
						    (int64_t)sbx_config_pause_ceiling_ms(sys)));
	m->pause_ceil = nar->pause_ceil ? nar->pause_ceil : sys->pause_ceil;
	m->from_pause = nar->pause_ceil ? FROM_NARROW : FROM_SYSTEM;
	return 0;
}

static int narrow_lists(sbx_config *m, const sbx_config *sys, const sbx_config *nar)
{
	const sbx_config *src;
	const char *def;
	char key[48];
	int rc;

	if (nar->def_image && !sbx__config_image_permitted(sys, nar->def_image))
		return nrefuse(sys, nar, "defaults.image",
			       "\"%.255s\" is not in the system's images", nar->def_image);
	src = nar->def_image ? nar : sys;
	m->from_image = nar->def_image ? FROM_NARROW : FROM_SYSTEM;
	if (src->def_image && !(m->def_image = strdup(src->def_image)))
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");

	for (size_t i = 0; nar->images_set && i < nar->images_n; i++) {
		snprintf(key, sizeof(key), "images[%zu]", i);
		if (!sbx__config_image_permitted(sys, nar->images[i]))
			return nrefuse(sys, nar, key, "\"%.255s\" is not in the system's images",
				       nar->images[i]);
	}
	src = nar->images_set ? nar : sys;
	m->images_set = src->images_set;
	m->from_images = nar->images_set ? FROM_NARROW : FROM_SYSTEM;
	rc = copy_list(&m->images, &m->images_n, src->images, src->images_n);
	if (rc < 0)
		return rc;
	def = m->def_image ? m->def_image : SBX_DEFAULT_IMAGE;
	if (!sbx__config_image_permitted(m, def))
		return nrefuse(sys, nar, "defaults.image",
			       "the default image \"%.255s\" is not in images; a call that sets no "
			       "image would be refused",
			       def);

	/* A file's egress: absent means none, so the narrowing file decides. */
	for (size_t i = 0; nar->egress_set && i < nar->cidrs_n; i++) {
		snprintf(key, sizeof(key), "egress.cidrs[%zu]", i);
		if ((sys->is_file || sys->egress_set) &&
		    !sbx__config_cidr_inside(sys, &nar->cidrs[i]))
			return nrefuse(sys, nar, key, "%.64s is not inside the system's %s",
				       nar->cidr_text[i],
				       sys->egress_set ? "egress.cidrs"
						       : "egress (it has none: no network)");
	}
	for (size_t i = 0; nar->egress_set && i < nar->hosts_n; i++) {
		snprintf(key, sizeof(key), "egress.hosts[%zu]", i);
		if ((sys->is_file || sys->egress_set) &&
		    !in_list(sys->hosts, sys->hosts_n, nar->hosts[i]))
			return nrefuse(sys, nar, key, "\"%.253s\" is not in the system's %s",
				       nar->hosts[i],
				       sys->egress_set ? "egress.hosts"
						       : "egress (it has none: no network)");
	}
	m->egress_set = nar->egress_set;
	m->from_egress = FROM_NARROW;
	if (nar->cidrs_n) {
		m->cidrs = malloc(nar->cidrs_n * sizeof(*m->cidrs));
		if (!m->cidrs)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					      "config: out of memory");
		memcpy(m->cidrs, nar->cidrs, nar->cidrs_n * sizeof(*m->cidrs));
	}
	rc = copy_list(&m->cidr_text, &m->cidrs_n, nar->cidr_text, nar->cidrs_n);
	if (rc == 0)
		rc = copy_list(&m->hosts, &m->hosts_n, nar->hosts, nar->hosts_n);
	if (rc < 0)
		return rc;

	for (size_t i = 0; nar->backends_set && i < nar->backends_n; i++) {
		snprintf(key, sizeof(key), "backends[%zu]", i);
		if (sys->backends_set && !in_list(sys->backends, sys->backends_n, nar->backends[i]))
			return nrefuse(sys, nar, key, "\"%.32s\" is not in the system's backends",
				       nar->backends[i]);
	}
	src = nar->backends_set ? nar : sys;
	m->backends_set = src->backends_set;
	m->from_backends = nar->backends_set ? FROM_NARROW : FROM_SYSTEM;
	return copy_list(&m->backends, &m->backends_n, src->backends, src->backends_n);
}

/*
 * The system config sys narrowed by nar: each ceiling the smaller, each
 * default nar's (within sys's ceilings), each permitted set the
 * intersection, secrets only if both allow them, a tenant required if
 * either requires one, the higher min_tier. Whatever nar asks for beyond
 * sys is refused, never dropped.
 */
static int narrow(sbx_config **out, const sbx_config *sys, const sbx_config *nar)
{
	sbx_config *m = calloc(1, sizeof(*m));
	int sys_secrets = sys->secrets_set ? sys->secrets : 1;
	int rc;

	if (!m)
		return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	m->refs = 1;
	m->layered = 1;
	m->is_file = 1;
	if (!(m->source = strdup(sbx__config_source_name(nar))) ||
	    (sys->source && !(m->sys_source = strdup(sys->source)))) {
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
		goto fail;
	}
	rc = narrow_bounds(m, sys, nar);
	if (rc == 0)
		rc = narrow_lists(m, sys, nar);
	if (rc == 0 && nar->hosts_file)
		rc = nrefuse(sys, nar, "egress.hosts_file",
			     "only the system config says how allowed names resolve");
	if (rc == 0 && nar->audit_path)
		rc = nrefuse(sys, nar, "audit.path",
			     "only the system config requires an audit log; a call adds one "
			     "with --audit-log (sbx_backend_options.audit_path)");
	if (rc == 0 && ((sys->hosts_file && !(m->hosts_file = strdup(sys->hosts_file))) ||
			(sys->audit_path && !(m->audit_path = strdup(sys->audit_path)))))
		rc = sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY, "config: out of memory");
	if (rc < 0)
		goto fail;

	m->secrets_set = sys->secrets_set || nar->secrets_set;
	m->secrets = sys_secrets && (nar->secrets_set ? nar->secrets : 1);
	m->from_secrets = !sys_secrets || !nar->secrets_set ? FROM_SYSTEM : FROM_NARROW;
	m->require_tenant_set = sys->require_tenant_set || nar->require_tenant_set;
	m->require_tenant = sys->require_tenant || nar->require_tenant;
	m->from_tenant =
		sys->require_tenant || !nar->require_tenant_set ? FROM_SYSTEM : FROM_NARROW;
	m->min_tier_set = sys->min_tier_set || nar->min_tier_set;
	m->min_tier = sys->min_tier;
	m->from_tier = FROM_SYSTEM;
	if (nar->min_tier_set && (!sys->min_tier_set || nar->min_tier > sys->min_tier)) {
		m->min_tier = nar->min_tier;
		m->from_tier = FROM_NARROW;
	}
	*out = m;
	return 0;
fail:
	sbx_config_free(m);
	return rc;
}

int sbx__config_load_narrowed(sbx_config **out,
			      const char *path,
			      const char *system_path,
			      uid_t system_owner)
{
	const char *named_by = "given explicitly", *env;
	sbx_config *sys = NULL, *nar = NULL;
	int rc;

	if (!out)
		return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_POLICY,
				      "config_load_narrowed: out is NULL");
	rc = sbx__config_load_file(&sys, system_path, 0, "the system config", system_owner, 1);
	if (rc < 0)
		return rc;
	if (rc == SBX__CONFIG_NOT_FOUND) {
		sys = calloc(1, sizeof(*sys));
		if (!sys)
			return sbx__error_set(SBX_ENOMEM, SBX_ERRCLASS_POLICY,
					      "config: out of memory");
		sys->refs = 1;
	}
	sys->is_system = 1;
	if (!path) {
		env = secure_getenv(SBX_CONFIG_ENV);
		if (env && *env) {
			path = env;
			named_by = "named by $" SBX_CONFIG_ENV;
		}
	}
	if (!path) {
		*out = sys;
		return 0;
	}
	rc = sbx__config_load_file(&nar, path, 1, named_by, geteuid(), 0);
	if (rc == 0)
		rc = narrow(out, sys, nar);
	sbx_config_free(nar);
	sbx_config_free(sys);
	return rc;
}

int sbx_config_load_narrowed(sbx_config **out, const char *path)
{
	sbx__error_clear();
	return sbx__config_load_narrowed(out, path, SBX_CONFIG_SYSTEM_PATH, 0);
}
