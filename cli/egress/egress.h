/*
 * cli/egress/egress.h: the parts of sbx-egress (cli/egress/main.c).
 */
#ifndef SBX_CLI_EGRESS_H
#define SBX_CLI_EGRESS_H

#include <stddef.h>

#include "netpolicy/egress-int.h"

#define EGRESS_ENTRIES_MAX (64 * 16) /* SBX_ALLOW_MAX names, SBX_ALLOW_ADDRS_MAX each */

struct egress_cfg {
	char table[16]; /* the sandbox's table name, sbxXXXXXXXXXXXX */
	struct sbx__egress_entry *v;
	size_t n;
};

/* argv[0] the table name, then NAME/PORT/ADDRESS...; -1 (with a message on
 * stderr) when one is not. */
int egress_cfg_parse(struct egress_cfg *c, int argc, char **argv);

/* This process's start time (/proc/self/stat field 22). */
int egress_self_start(unsigned long long *start);

/* Serves one connection the tproxy rules sent here, and closes it. */
void egress_serve(const struct egress_cfg *c, int fd);

/* Closes fd with a TCP reset. */
void egress_reset(int fd);

#endif
