/*
 * cli/egress/egress.h: the parts of sbx-egress (cli/egress/main.c).
 */
#ifndef SBX_CLI_EGRESS_H
#define SBX_CLI_EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "netpolicy/egress-int.h"

#define EGRESS_ENTRIES_MAX (64 * 16) /* SBX_ALLOW_MAX names, SBX_ALLOW_ADDRS_MAX each */

struct sbx__audit;
struct sbx__audit_egress;
struct sbx__tracer;

struct egress_cfg {
	char table[16]; /* the sandbox's table name, sbxXXXXXXXXXXXX */
	struct sbx__egress_entry *v;
	size_t n;
	/* The audit (core/audit.c): the backend's files, and what every event
	 * of this sandbox carries. */
	const char *audit_file[2];
	const char *tenant, *sandbox_id, *trace_id, *span_id;
	struct sbx__audit *audit;
	/* Spans (cli/egress/span.c): on when --otlp names the descriptor of the
	 * exporter settings and the sandbox's span is known; NULL: none. */
	int otlp_fd;
	struct sbx__tracer *tracer;
};

/* [--audit PATH]... [--tenant T] [--sandbox ID] [--trace ID] [--span ID],
 * then the table name, then NAME/PORT/ADDRESS...; -1 with why (static or
 * in why_buf) when something is not. */
int egress_cfg_parse(struct egress_cfg *c, int argc, char **argv, char *why, size_t why_len);

/* Opens the audit files; -1 with why. */
int egress_audit_open(struct egress_cfg *c, char *why, size_t why_len);

/* Writes the audit event of one connection, and queues its span; -1 when
 * the event cannot be written. start_ns: when it began (unix ns). */
int egress_record(const struct egress_cfg *c,
		  uint64_t start_ns,
		  const struct sbx__egress_verdict *v,
		  int family,
		  const uint8_t addr[16],
		  uint16_t port,
		  unsigned long long up,
		  unsigned long long down,
		  long long duration_ms);

/* Reads the exporter settings from c->otlp_fd (closing it) and opens the
 * tracer; without them, or when they name no collector, c->tracer stays
 * NULL and nothing else changes. */
void egress_trace_open(struct egress_cfg *c);

/* Queues the span of one connection (e: its audit event); never waits. */
void egress_span(const struct egress_cfg *c, const struct sbx__audit_egress *e, uint64_t start_ns);

/* This process's start time (/proc/self/stat field 22). */
int egress_self_start(unsigned long long *start);

/* Serves one connection the tproxy rules sent here, and closes it. */
void egress_serve(const struct egress_cfg *c, int fd);

/* Closes fd with a TCP reset. */
void egress_reset(int fd);

#endif
