/*
 * tests/unit/netpolicy/test_preset.c: egress presets (netpolicy/preset.c):
 * the shipped file parses and holds what each registry needs, every
 * refusal of the parser names its line and problem, and
 * sbx_policy_allow_preset() adds a preset's names as allow_host entries
 * (wildcards by their pinned names), all or none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sandboxio.h>

#include "core/policy-int.h"
#include "netpolicy/preset-int.h"

#define SHIPPED "share/sandboxio/presets/egress.conf"

static int has(const struct sbx__preset *p, const char *name, uint16_t port)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->e[i].name, name) == 0 && p->e[i].port == port)
			return 1;
	return 0;
}

static void test_netpolicy_preset__shipped_file_is_the_built_in(void **state)
{
	const struct sbx__presets *b;
	struct sbx__presets f = {0};
	const struct sbx__preset *p;
	char *text = malloc(SBX_PRESET_TEXT_MAX + 1);
	FILE *fp = fopen(SHIPPED, "r");
	size_t n;

	(void)state;
	assert_non_null(fp);
	n = fread(text, 1, SBX_PRESET_TEXT_MAX + 1, fp);
	fclose(fp);
	assert_true(n <= SBX_PRESET_TEXT_MAX);
	if (sbx__presets_parse(&f, text, n, SHIPPED) != 0)
		fail_msg("%s", sbx_error_last()->message);
	assert_int_equal(sbx__presets_builtin(&b), 0);
	assert_int_equal(b->n, f.n);
	for (size_t i = 0; i < f.n; i++) {
		assert_string_equal(b->p[i].name, f.p[i].name);
		assert_int_equal(b->p[i].n, f.p[i].n);
	}
	assert_non_null(p = sbx__presets_find(b, "pypi"));
	assert_true(has(p, "pypi.org", 443) && has(p, "files.pythonhosted.org", 443));
	assert_non_null(p = sbx__presets_find(b, "npm"));
	assert_true(has(p, "registry.npmjs.org", 443));
	assert_non_null(p = sbx__presets_find(b, "crates"));
	assert_true(has(p, "index.crates.io", 443) && has(p, "static.crates.io", 443));
	assert_non_null(p = sbx__presets_find(b, "debian"));
	assert_true(has(p, "deb.debian.org", 80) && has(p, "deb.debian.org", 443));
	assert_non_null(p = sbx__presets_find(b, "github"));
	assert_true(has(p, "github.com", 443) && has(p, "*.githubusercontent.com", 443));
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].wildcard)
			assert_true(p->e[i].pins_n >= 2);
	assert_null(sbx__presets_find(b, "PyPI"));
	assert_null(sbx__presets_find(b, "nosuch"));
	sbx__presets_clear(&f);
	free(text);
}

static void refuse(const char *text, int code, const char *why)
{
	struct sbx__presets ps = {(void *)1, 7};

	assert_int_equal(sbx__presets_parse(&ps, text, strlen(text), "t.conf"), code);
	assert_ptr_equal(ps.p, (void *)1); /* untouched */
	if (!strstr(sbx_error_last()->message, why))
		fail_msg("'%s': message '%s' does not say '%s'", text, sbx_error_last()->message,
			 why);
}

static void test_netpolicy_preset__refusals_name_the_line(void **state)
{
	char *big;

	(void)state;
	refuse("pypi.org\n", SBX_EINVALID, "line 1: an entry before any [NAME]");
	refuse("[a]\n[a]\nx.example\n", SBX_EINVALID, "line 2: preset [a] has no entries");
	refuse("[a]\nx.example\n[a]\ny.example\n", SBX_EINVALID,
	       "line 3: preset [a] appears twice");
	refuse("[a]\n", SBX_EINVALID, "has no entries");
	refuse("[A]\nx.example\n", SBX_EINVALID, "lower-case");
	refuse("[]\nx.example\n", SBX_EINVALID, "1 to 32");
	refuse("[a\nx.example\n", SBX_EINVALID, "[NAME]");
	refuse("[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\nx.example\n", SBX_EINVALID, "1 to 32");
	refuse("[a]\nx..example\n", SBX_EINVALID, "line 2: entry 'x..example': empty label");
	refuse("[a]\nx.example:0\n", SBX_EINVALID, "1..65535");
	refuse("[a]\nx.example:65536\n", SBX_EINVALID, "1..65535");
	refuse("[a]\nx.example:\n", SBX_EINVALID, "1..65535");
	refuse("[a]\nx.example:4a3\n", SBX_EINVALID, "1..65535");
	refuse("[a]\n*.example.org\n", SBX_EINVALID, "needs '= NAME...'");
	refuse("[a]\n*.example.org =\n", SBX_EINVALID, "no names after it");
	refuse("[a]\n*.example.org = example.org\n", SBX_EINVALID, "does not match");
	refuse("[a]\n*.example.org = a.example.org.evil\n", SBX_EINVALID, "does not match");
	refuse("[a]\n*.example.org = *.b.example.org\n", SBX_EINVALID, "exact, not a wildcard");
	refuse("[a]\n*.com = a.com\n", SBX_EINVALID, "public suffix");
	refuse("[a]\n*\n", SBX_EINVALID, "'*' alone");
	refuse("[a]\nx.example = y.example\n", SBX_EINVALID, "only a wildcard");
	refuse("[a]\nx.example y.example\n", SBX_EINVALID, "expected '= NAME...'");
	refuse("[a]\nx.example:443\nX.Example.:443\n", SBX_EINVALID, "appears twice");
	refuse("[a]\nb\xc3\xbc"
	       "cher.example\n",
	       SBX_EINVALID, "A-label");
	refuse("[a]\n*.e.org = a.e.org b.e.org c.e.org d.e.org e.e.org f.e.org g.e.org h.e.org "
	       "i.e.org j.e.org k.e.org l.e.org m.e.org n.e.org o.e.org p.e.org q.e.org\n",
	       SBX_ETOOBIG, "more than 16 names");
	big = malloc(SBX_PRESET_TEXT_MAX + 2);
	memset(big, '#', SBX_PRESET_TEXT_MAX + 1);
	big[SBX_PRESET_TEXT_MAX + 1] = '\0';
	refuse(big, SBX_ETOOBIG, "over 65536 bytes");
	memset(big, ' ', 2000);
	strcpy(big + 2000, "\n");
	refuse(big, SBX_EINVALID, "line 1: longer than 1024 bytes");
	{
		size_t o = (size_t)sprintf(big, "[a]\n");
		for (int i = 0; i < 65; i++)
			o += (size_t)sprintf(big + o, "h%d.example\n", i);
		refuse(big, SBX_ETOOBIG, "more than 64 entries");
		o = 0;
		for (int i = 0; i < 65; i++)
			o += (size_t)sprintf(big + o, "[p%d]\nx.example\n", i);
		refuse(big, SBX_ETOOBIG, "more than 64 presets");
	}
	free(big);
	{
		struct sbx__presets ps = {0};

		assert_int_equal(sbx__presets_parse(&ps, "[a]\nx.example\0[b]\n", 18, "t"),
				 SBX_EINVALID);
		assert_non_null(strstr(sbx_error_last()->message, "NUL"));
	}
}

static void test_netpolicy_preset__forms_accepted(void **state)
{
	static const char text[] =
		"# c\r\n\r\n  [my-reg2]  # trailing comment\r\n"
		"\tA.Example.ORG.:8443  \r\n"
		"*.cdn.example.org:443 = x.cdn.example.org   y.z.cdn.example.org\n"
		"x.example.org\n"
		"x.example.org:443";
	struct sbx__presets ps = {0};
	const struct sbx__preset *p;

	(void)state;
	if (sbx__presets_parse(&ps, text, strlen(text), "t") != 0)
		fail_msg("%s", sbx_error_last()->message);
	assert_int_equal(ps.n, 1);
	assert_non_null(p = sbx__presets_find(&ps, "my-reg2"));
	assert_int_equal(p->n, 4);
	assert_string_equal(p->e[0].name, "a.example.org");
	assert_int_equal(p->e[0].port, 8443);
	assert_true(p->e[1].wildcard);
	assert_int_equal(p->e[1].pins_n, 2);
	assert_string_equal(p->e[1].pins[1], "y.z.cdn.example.org");
	assert_int_equal(p->e[2].port, 0);
	assert_int_equal(p->e[3].port, 443);
	sbx__presets_clear(&ps);
	assert_int_equal(sbx__presets_parse(&ps, "", 0, "t"), 0);
	assert_int_equal(ps.n, 0);
}

static void test_netpolicy_preset__policy_adds_all_or_none(void **state)
{
	sbx_policy *p = NULL;
	char buf[64];

	(void)state;
	assert_int_equal(sbx_policy_new(&p), 0);
	assert_int_equal(sbx_policy_allow_preset(p, "github"), 0);
	/* github: three exact names and the wildcard's three pinned names. */
	assert_int_equal(sbx_policy_allow_count(p), 6);
	assert_int_equal(sbx_policy_allow_preset(p, "github"), 0); /* a repeat adds nothing */
	assert_int_equal(sbx_policy_allow_count(p), 6);
	assert_int_equal(sbx_policy_allow_host(p, "pypi.org", 443), 0);
	assert_int_equal(sbx_policy_allow_preset(p, "pypi"), 0); /* pypi.org:443 already there */
	assert_int_equal(sbx_policy_allow_count(p), 8);
	assert_int_equal(p->allow[7].port, 443);
	assert_string_equal(p->allow[7].name, "files.pythonhosted.org");
	assert_int_equal(sbx_policy_allow_preset(p, "nosuch"), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "there are: pypi, npm"));
	assert_int_equal(sbx_policy_allow_preset(p, NULL), SBX_EINVALID);
	assert_int_equal(sbx_policy_allow_preset(NULL, "pypi"), SBX_EINVALID);
	/* Full up to one short of the limit: debian's four do not fit, none is added. */
	for (int i = 0; sbx_policy_allow_count(p) < 63; i++) {
		snprintf(buf, sizeof(buf), "h%d.canary.test", i);
		assert_int_equal(sbx_policy_allow_host(p, buf, 0), 0);
	}
	assert_int_equal(sbx_policy_allow_preset(p, "debian"), SBX_ETOOBIG);
	assert_int_equal(sbx_policy_allow_count(p), 63);
	assert_int_equal(sbx_policy_allow_preset(p, "npm"), 0);
	assert_int_equal(sbx_policy_allow_count(p), 64);
	sbx_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netpolicy_preset__shipped_file_is_the_built_in),
		cmocka_unit_test(test_netpolicy_preset__refusals_name_the_line),
		cmocka_unit_test(test_netpolicy_preset__forms_accepted),
		cmocka_unit_test(test_netpolicy_preset__policy_adds_all_or_none),
	};

	return cmocka_run_group_tests_name("netpolicy_preset", tests, NULL, NULL);
}
