/*
 * tests/unit/netpolicy/test_names.c: the one validator and matcher of
 * egress host names (netpolicy/names.c): entries accepted and refused with
 * a message naming the problem, and the names an attacker would present
 * (suffix and prefix tricks, A-label tricks, case and trailing dots, a NUL
 * inside a length-counted name).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sandboxio.h>

#include "netpolicy/names-int.h"

static void accept_entry(const char *in, const char *canon, int wild)
{
	char out[SBX_NAME_BUF];
	int w = -1;

	if (sbx__names_parse_entry(out, &w, "allow_host", in, strlen(in)) != 0)
		fail_msg("'%s' refused: %s", in, sbx_error_last()->message);
	assert_string_equal(out, canon);
	assert_int_equal(w, wild);
}

static void refuse_entry(const char *in, size_t len, const char *why)
{
	char out[SBX_NAME_BUF] = "untouched";

	assert_int_equal(sbx__names_parse_entry(out, NULL, "allow_host", in, len), SBX_EINVALID);
	assert_string_equal(out, "untouched");
	if (!strstr(sbx_error_last()->message, why))
		fail_msg("'%.*s': message '%s' does not say '%s'", (int)len, in,
			 sbx_error_last()->message, why);
}

#define REFUSE(s, why) refuse_entry(s, strlen(s), why)

static int match(const char *entry, const char *name)
{
	char e[SBX_NAME_BUF];

	if (sbx__names_parse_entry(e, NULL, "t", entry, strlen(entry)) != 0)
		fail_msg("entry '%s' refused: %s", entry, sbx_error_last()->message);
	return sbx__names_match(e, name, strlen(name));
}

static void test_netpolicy_names__entries_accepted_canonical(void **state)
{
	(void)state;
	accept_entry("API.Example.ORG.", "api.example.org", 0);
	accept_entry("pypi.org", "pypi.org", 0);
	accept_entry("*.pythonhosted.org", "*.pythonhosted.org", 1);
	accept_entry("*.Example.Org.", "*.example.org", 1);
	accept_entry("xn--bcher-kva.example", "xn--bcher-kva.example", 0);
	accept_entry("XN--BCHER-KVA.example", "xn--bcher-kva.example", 0);
	accept_entry("*.xn--p1ai.xn--80ak6aa92e", "*.xn--p1ai.xn--80ak6aa92e", 1);
	accept_entry("a-b.c0.example", "a-b.c0.example", 0);
	accept_entry("*.githubusercontent.com", "*.githubusercontent.com", 1);
	accept_entry("*.example.co.uk", "*.example.co.uk", 1);
}

static void test_netpolicy_names__entries_refused_name_the_problem(void **state)
{
	char label[80], name[300];

	(void)state;
	REFUSE("", "empty");
	REFUSE(".", "1 to 253");
	REFUSE("example.org..", "empty label");
	REFUSE("*", "'*' alone");
	REFUSE("*.", "'*' alone");
	REFUSE("*.com", "public suffix");
	REFUSE("*.org.", "public suffix");
	REFUSE("*.co.uk", "public suffix");
	REFUSE("*.CO.UK", "public suffix");
	REFUSE("*.github.io", "public suffix");
	REFUSE("*.cloudfront.net", "public suffix");
	REFUSE("*.internal", "public suffix"); /* any single label */
	REFUSE("a.*.example.org", "whole first label");
	REFUSE("*a.example.org", "whole first label");
	REFUSE("a*.example.org", "whole first label");
	REFUSE("*.*.example.org", "whole first label");
	REFUSE("example.*", "whole first label");
	REFUSE("**.example.org", "whole first label");
	REFUSE("a..example", "empty label");
	REFUSE(".example.org", "empty label");
	REFUSE("-a.example", "start with '-'");
	REFUSE("a-.example", "ending in '-'");
	REFUSE("exa mple.com", "not allowed");
	REFUSE("under_score.example", "not allowed");
	REFUSE("host.123", "all digits");
	REFUSE("b\xc3\xbc"
	       "cher.example",
	       "A-label");
	REFUSE("*.b\xc3\xbc"
	       "cher.example",
	       "A-label");
	REFUSE("xn--.example", "nothing after it");
	REFUSE("ab--cd.example", "reserved for A-labels");
	refuse_entry("example.org\0.evil", 17, "NUL");
	memset(label, 'a', 64);
	strcpy(label + 64, ".example");
	REFUSE(label, "at most 63");
	label[63] = '\0';
	accept_entry(label, label, 0); /* 63 is fine */
	for (int i = 0; i < 250; i += 2)
		name[i] = 'a', name[i + 1] = '.';
	strcpy(name + 250, "abcd"); /* 254 bytes */
	REFUSE(name, "1 to 253");
	name[253] = '\0'; /* 253 bytes */
	accept_entry(name, name, 0);
	strcat(name, "."); /* 253 and a trailing dot */
	{
		char canon[SBX_NAME_BUF];
		memcpy(canon, name, 253);
		canon[253] = '\0';
		accept_entry(name, canon, 0);
	}
}

static void test_netpolicy_names__exact_matches_only_itself(void **state)
{
	(void)state;
	assert_true(match("example.org", "example.org"));
	assert_true(match("example.org", "EXAMPLE.ORG."));
	assert_true(match("example.org.", "Example.Org"));
	assert_false(match("example.org", "example.org.."));
	assert_false(match("example.org", "a.example.org"));
	assert_false(match("example.org", "evil.example.org.attacker"));
	assert_false(match("example.org", "example.org.evil"));
	assert_false(match("example.org", "evilexample.org"));
	assert_false(match("example.org", "example.orgevil"));
	assert_false(match("example.org", "example.or"));
	assert_false(match("example.org", ""));
	assert_false(match("example.org", "*.org"));
	assert_false(match("example.org", "example.org:443"));
	assert_false(match("example.org", "example.org/"));
	assert_false(match("example.org", " example.org"));
	assert_false(match("example.org", "example\\.org"));
	/* A NUL inside the presented name never truncates it to a match. */
	assert_false(sbx__names_match("example.org", "example.org\0.evil", 17));
	assert_false(sbx__names_match("example.org", "example.org\0", 12));
	assert_true(sbx__names_match("example.org", "example.org.evil", 11));
	/* A-labels compare as given: no Unicode folding, no decoding. */
	assert_true(match("xn--bcher-kva.example", "XN--BCHER-KVA.example"));
	assert_false(match("xn--bcher-kva.example", "b\xc3\xbc"
						    "cher.example"));
	assert_false(match("xn--bcher-kva.example", "xn--bcher-kvb.example"));
	assert_false(match("bucher.example", "xn--bcher-kva.example"));
	assert_false(match("xn--bcher-kva.example", "xn--.example"));
}

static void test_netpolicy_names__wildcard_labels_under_never_apex(void **state)
{
	(void)state;
	assert_true(match("*.example.org", "a.example.org"));
	assert_true(match("*.example.org", "a.b.c.example.org"));
	assert_true(match("*.example.org", "A.EXAMPLE.ORG."));
	assert_true(match("*.example.org", "xn--bcher-kva.example.org"));
	assert_false(match("*.example.org", "example.org"));
	assert_false(match("*.example.org", "example.org."));
	assert_false(match("*.example.org", ".example.org"));
	assert_false(match("*.example.org", "..example.org"));
	assert_false(match("*.example.org", "evilexample.org"));
	assert_false(match("*.example.org", "evil.example.org.attacker"));
	assert_false(match("*.example.org", "a.example.org.evil"));
	assert_false(match("*.example.org", "a.example.orga"));
	assert_false(match("*.example.org", "*.example.org"));
	assert_false(match("*.example.org", "a.*.example.org"));
	assert_false(match("*.example.org", "-a.example.org"));
	assert_false(match("*.example.org", "a_b.example.org"));
	assert_false(sbx__names_match("*.example.org", "a\0.example.org", 15));
	assert_false(sbx__names_match("*.example.org", "a.example.org\0", 14));
	assert_false(match("*.example.org", "b\xc3\xbc"
					    "cher.example.org"));
	/* A name over 253 bytes matches nothing, even under a wildcard. */
	{
		char big[300];
		memset(big, 'a', 260);
		for (int i = 60; i < 240; i += 60)
			big[i] = '.';
		strcpy(big + 260, ".example.org");
		assert_false(match("*.example.org", big));
	}
}

static void test_netpolicy_names__public_suffix_list(void **state)
{
	(void)state;
	assert_true(sbx__names_is_public_suffix("com"));
	assert_true(sbx__names_is_public_suffix("co.uk"));
	assert_true(sbx__names_is_public_suffix("github.io"));
	assert_false(sbx__names_is_public_suffix("example.org"));
	assert_false(sbx__names_is_public_suffix("pythonhosted.org"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netpolicy_names__entries_accepted_canonical),
		cmocka_unit_test(test_netpolicy_names__entries_refused_name_the_problem),
		cmocka_unit_test(test_netpolicy_names__exact_matches_only_itself),
		cmocka_unit_test(test_netpolicy_names__wildcard_labels_under_never_apex),
		cmocka_unit_test(test_netpolicy_names__public_suffix_list),
	};

	return cmocka_run_group_tests_name("netpolicy_names", tests, NULL, NULL);
}
