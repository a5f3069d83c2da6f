/*
 * netpolicy/names.c: the one validator and matcher of egress host names
 * (netpolicy/names-int.h). Entries are checked here when they are accepted,
 * and the names a client presents are checked here at connection time, so
 * the two can never disagree.
 *
 * Hand-written: the rules are a few lines of RFC 1035/5890 LDH syntax plus
 * the wildcard policy, and input is length-counted (a name from the wire may
 * hold a NUL); libidn2 would convert U-labels, which this code refuses on
 * purpose (names are compared as given, A-labels only).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sandboxio/errors.h>

#include "netpolicy/names-int.h"
#include "util/error-int.h"

/*
 * Suffixes under which anyone can hold a name: a wildcard over one of them
 * would allow names the operator never meant. Single labels (every TLD) are
 * refused by their count; these are the common multi-part ones: country
 * second levels and shared hosting. Not the Public Suffix List.
 */
static const char *const public_suffixes[] = {
	"ac.jp",
	"ac.uk",
	"amazonaws.com",
	"appspot.com",
	"azurewebsites.net",
	"blob.core.windows.net",
	"blogspot.com",
	"cloudfront.net",
	"co.id",
	"co.il",
	"co.in",
	"co.jp",
	"co.kr",
	"co.nz",
	"co.th",
	"co.uk",
	"co.za",
	"com.ar",
	"com.au",
	"com.br",
	"com.cn",
	"com.eg",
	"com.hk",
	"com.mx",
	"com.my",
	"com.ng",
	"com.pk",
	"com.ph",
	"com.pl",
	"com.sa",
	"com.sg",
	"com.tr",
	"com.tw",
	"com.ua",
	"com.vn",
	"edu.au",
	"eu.org",
	"firebaseapp.com",
	"fly.dev",
	"github.io",
	"gitlab.io",
	"go.jp",
	"gov.au",
	"gov.uk",
	"herokuapp.com",
	"ltd.uk",
	"me.uk",
	"ne.jp",
	"net.au",
	"net.br",
	"net.cn",
	"net.in",
	"net.nz",
	"net.uk",
	"netlify.app",
	"or.jp",
	"or.kr",
	"org.au",
	"org.br",
	"org.cn",
	"org.in",
	"org.nz",
	"org.uk",
	"pages.dev",
	"plc.uk",
	"s3.amazonaws.com",
	"vercel.app",
	"web.app",
	"workers.dev",
};

int sbx__names_is_public_suffix(const char *name)
{
	if (!strchr(name, '.'))
		return 1;
	for (size_t i = 0; i < sizeof(public_suffixes) / sizeof(public_suffixes[0]); i++)
		if (strcmp(name, public_suffixes[i]) == 0)
			return 1;
	return 0;
}

/* A printable copy of untrusted bytes for a message: \xNN for the rest. */
static void show(char *dst, size_t cap, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\'')
			dst[o++] = (char)c;
		else
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
	}
	if (o + 5 >= cap && len)
		o += (size_t)snprintf(dst + o, cap - o, "...");
	dst[o < cap ? o : cap - 1] = '\0';
}

static int bad(int quiet, const char *what, const char *name, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int bad(int quiet, const char *what, const char *name, size_t len, const char *fmt, ...)
{
	char shown[300], why[256];
	va_list ap;

	if (quiet)
		return -1;
	show(shown, sizeof(shown), name, len);
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return sbx__error_set(SBX_EINVALID, SBX_ERRCLASS_NETPOLICY, "%s '%s': %s", what, shown,
			      why);
}

static int is_ldh(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Checks one label s[0..n) (canonical lower case). */
static int
check_label(int quiet, const char *what, const char *name, size_t len, const char *s, size_t n)
{
	if (n == 0)
		return bad(quiet, what, name, len, "empty label");
	if (n > SBX_LABEL_MAX)
		return bad(quiet, what, name, len, "a label is at most 63 characters");
	if (s[0] == '-')
		return bad(quiet, what, name, len, "a label may not start with '-'");
	if (n >= 4 && s[2] == '-' && s[3] == '-') {
		if (s[0] != 'x' || s[1] != 'n')
			return bad(quiet, what, name, len,
				   "'--' in the third and fourth place is reserved for "
				   "A-labels (xn--)");
		if (n == 4)
			return bad(quiet, what, name, len,
				   "an A-label 'xn--' with nothing after it");
	}
	if (s[n - 1] == '-')
		return bad(quiet, what, name, len, "a label ending in '-'");
	return 0;
}

/*
 * The shared syntax check: canonical copy into dst, *wild set when the first
 * label is '*' (only when wild is not NULL). quiet: no message, -1.
 */
static int
parse(char dst[SBX_NAME_BUF], int *wild, int quiet, const char *what, const char *name, size_t len)
{
	size_t n = len, start = 0, o = 0;
	int digits_only = 1, rc;

	if (!name || len == 0)
		return bad(quiet, what, "", 0, "empty: name a host such as api.example.com");
	if (memchr(name, '\0', len))
		return bad(quiet, what, name, len, "holds a NUL byte");
	if (name[n - 1] == '.')
		n--; /* one trailing dot: the absolute form of the same name */
	if (n == 0 || n > SBX_NAME_MAX)
		return bad(quiet, what, name, len, "a host name is 1 to 253 characters");
	if (wild)
		*wild = 0;
	if (name[0] == '*') {
		if (!wild)
			return bad(quiet, what, name, len, "a wildcard is not a host name");
		if (n == 1)
			return bad(quiet, what, name, len,
				   "'*' alone would allow every name; name the domain "
				   "('*.example.org')");
		if (name[1] != '.')
			return bad(quiet, what, name, len,
				   "'*' may only be the whole first label ('*.example.org')");
		*wild = 1;
		dst[o++] = '*';
		dst[o++] = '.';
		start = 2;
	}
	for (size_t i = start; i <= n; i++) {
		unsigned char c = i < n ? (unsigned char)name[i] : '.';

		if (c == '.') {
			if ((rc = check_label(quiet, what, name, len, dst + o - (i - start),
					      i - start)) < 0)
				return rc;
			digits_only = 1;
			for (size_t k = start; k < i; k++)
				if (!(name[k] >= '0' && name[k] <= '9'))
					digits_only = 0;
			if (i < n)
				dst[o++] = '.';
			start = i + 1;
			continue;
		}
		if (c == '*')
			return bad(quiet, what, name, len,
				   "'*' may only be the whole first label ('*.example.org')");
		if (c >= 0x80)
			return bad(quiet, what, name, len,
				   "byte 0x%02x: give an internationalised name as its A-label "
				   "(xn--...), not in Unicode",
				   c);
		if (!is_ldh(c))
			return bad(quiet, what, name, len,
				   "character 0x%02x is not allowed in a host name (letters, "
				   "digits, '-' and '.')",
				   c);
		dst[o++] = lower((char)c);
	}
	dst[o] = '\0';
	if (digits_only)
		return bad(quiet, what, name, len, "the last label must not be all digits");
	if (wild && *wild && sbx__names_is_public_suffix(dst + 2))
		return bad(quiet, what, name, len,
			   "'%s' is a public suffix: a wildcard over it would allow names "
			   "anyone can register",
			   dst + 2);
	return 0;
}

int sbx__names_parse_entry(
	char dst[SBX_NAME_BUF], int *wildcard, const char *what, const char *name, size_t len)
{
	char tmp[SBX_NAME_BUF];
	int w = 0, rc = parse(tmp, &w, 0, what ? what : "host", name, len);

	if (rc < 0)
		return rc;
	memcpy(dst, tmp, strlen(tmp) + 1);
	if (wildcard)
		*wildcard = w;
	return 0;
}

int sbx__names_canon(char dst[SBX_NAME_BUF], const char *name, size_t len)
{
	return parse(dst, NULL, 1, "", name, len);
}

int sbx__names_match(const char *entry, const char *name, size_t len)
{
	char got[SBX_NAME_BUF];
	size_t el, gl;

	if (!entry || sbx__names_canon(got, name, len) < 0)
		return 0;
	if (entry[0] != '*')
		return strcmp(entry, got) == 0;
	/* "*.rest": got is "LABELS.rest" with at least one whole label. */
	el = strlen(entry + 1); /* ".rest" */
	gl = strlen(got);
	return gl > el && memcmp(got + gl - el, entry + 1, el) == 0;
}
