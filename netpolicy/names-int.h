/*
 * netpolicy/names-int.h: host names of egress entries and the names a
 * sandbox presents (TLS server name, HTTP Host): one validator and one
 * matcher, used when an entry is accepted and when a connection is checked.
 */
#ifndef SBX_NETPOLICY_NAMES_INT_H
#define SBX_NETPOLICY_NAMES_INT_H

#include <stddef.h>

#define SBX_NAME_MAX 253		/* bytes, without a trailing dot */
#define SBX_NAME_BUF (SBX_NAME_MAX + 1) /* with its NUL */
#define SBX_LABEL_MAX 63

/*
 * Validates an entry: an exact host name, or "*.NAME" (one or more labels
 * under NAME, never NAME itself). name is len bytes (no NUL needed; an
 * embedded NUL is refused). ASCII letters, digits and '-' in labels of 1 to
 * 63 bytes, no label starting or ending with '-', 253 bytes at most, one
 * trailing dot ignored, an all-digit last label refused; internationalised
 * labels only as A-labels ("xn--" and at least one more byte; '-' in the
 * third and fourth place of any other label is refused, RFC 5891 4.2.3.1);
 * a byte above 0x7f (a U-label) is refused with a message saying to give the
 * A-label. Wildcards: '*' only as the whole first label; "*" alone and a
 * wildcard over a public suffix (any single label, or a suffix of the
 * built-in list: multi-part country suffixes such as co.uk and shared
 * hosting suffixes such as github.io, where anyone can hold a name) are
 * refused. The built-in list is not the Public Suffix List: it holds the
 * common ones only; a single-label rest is refused whatever it is.
 * On success dst receives the canonical form (lower case, no trailing dot)
 * and *wildcard whether it is one (wildcard may be NULL). what starts the
 * message ("allow_host"). Returns 0, or SBX_EINVALID naming the problem.
 */
int sbx__names_parse_entry(
	char dst[SBX_NAME_BUF], int *wildcard, const char *what, const char *name, size_t len);

/*
 * Canonicalises a name presented by a client: the rules of an exact entry,
 * with no wildcard and no message (a name that fails them matches nothing).
 * Returns 0 with dst filled, or -1.
 */
int sbx__names_canon(char dst[SBX_NAME_BUF], const char *name, size_t len);

/*
 * Whether a presented name (len bytes, as read from the wire) matches a
 * canonical entry (from sbx__names_parse_entry): exactly, or for "*.NAME"
 * by one or more whole labels under NAME. 1: matches; 0: does not, or the
 * name is not a valid host name.
 */
int sbx__names_match(const char *entry, const char *name, size_t len);

/* Whether canonical NAME is a public suffix of the built-in list. */
int sbx__names_is_public_suffix(const char *name);

#endif
