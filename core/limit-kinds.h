/*
 * core/limit-kinds.h: the one table of the resource caps (sbx_limit_kind)
 * and of the caps a run can run into (SBX_HIT_*).
 *
 * Each place that names a cap (the policy's ranges and messages, the
 * operator config's keys and `config --effective`, the Engine's limits
 * label, the audit's policy summary, the create span, the command's
 * options, the names of the caps a run hit) reads its word from here, in
 * this order. The words differ from place to place ("cpu" in the label,
 * "cpus" in the config, "cpu_milli" in the audit), and each is read back by
 * sandboxes and tools already in use: they are kept exactly as written.
 *
 * SBX__LIMIT_KINDS(X) calls X once per kind, in the order of the public
 * enum, with:
 *   ID      the suffix of SBX_LIMIT_* (and of SBX_DEFAULT_*, SBX_MIN_*,
 *           SBX_MAX_*, the built-in range)
 *   name    the word of the policy's messages ("cpu limit: ...")
 *   key     the config's key below defaults. and ceilings., and the name
 *           in `config --effective` and in ceiling refusals
 *   label   the key inside the Engine label sandboxio.limits
 *   audit   the key inside the audit's policy.limits
 *   span    the create span's attribute, or NULL: none
 *   option  the command's option, without "--"
 *   unit    MILLI (thousandths, written as a decimal), SIZE (bytes, written
 *           as "512m"), COUNT (a whole number)
 *   ddoc    the doc of the config key defaults.<key>
 *   cdoc    the doc of the config key ceilings.<key>
 */
#ifndef SBX_CORE_LIMIT_KINDS_H
#define SBX_CORE_LIMIT_KINDS_H

#include <stdint.h>

#include <sandboxio/policy.h>

/* clang-format off */
#define SBX__LIMIT_KINDS(X)                                                                        \
	X(CPU_MILLI, "cpu", "cpus", "cpu", "cpu_milli", "sandboxio.limit.cpu_milli", "cpus",       \
	  MILLI, "cores, to 0.001", "cores")                                                       \
	X(MEMORY, "memory", "memory", "memory", "memory", "sandboxio.limit.memory", "memory",      \
	  SIZE, "size; swap is set equal", "size")                                                 \
	X(PIDS, "pids", "pids", "pids", "pids", "sandboxio.limit.pids", "pids",                    \
	  COUNT, "processes and threads", "count")                                                 \
	X(DISK, "disk", "disk", "disk", "disk", "sandboxio.limit.disk", "disk",                    \
	  SIZE, "size of the writable space", "size")                                              \
	X(NOFILE, "nofile", "nofile", "nofile", "nofile", NULL, "nofile",                          \
	  COUNT, "open files per process", "count")                                                \
	X(OUTPUT, "output", "output", "output", "output", NULL, "max-output",                      \
	  SIZE, "captured bytes per stream", "size, per stream per run")
/* clang-format on */

/* How a kind's value is read and written. */
enum sbx__limit_unit {
	SBX__LIMIT_UNIT_MILLI, /* thousandths: "1.5" is 1500 */
	SBX__LIMIT_UNIT_SIZE,  /* bytes: "512m" */
	SBX__LIMIT_UNIT_COUNT, /* a whole number */
};

struct sbx__limit_desc {
	sbx_limit_kind kind; /* its own index; SBX_LIMIT_INVALID for the unused slot 0 */
	const char *name, *key, *label, *audit, *span, *option;
	enum sbx__limit_unit unit;
	int64_t def, min, max; /* the built-in range */
};

/* The number of slots of an array indexed by sbx_limit_kind (slot 0 unused). */
#define SBX__LIMIT_N (SBX_LIMIT_OUTPUT + 1)
#define SBX__LIMIT_FIRST SBX_LIMIT_CPU_MILLI
#define SBX__LIMIT_LAST SBX_LIMIT_OUTPUT

/* Indexed by sbx_limit_kind; entry 0 is empty (core/limit-kinds.c). */
extern const struct sbx__limit_desc sbx__limit_kinds[SBX__LIMIT_N];

/* The descriptor of kind, or NULL for a value outside the enum. */
const struct sbx__limit_desc *sbx__limit_desc(int kind);

/*
 * The caps a run can run into, in the order their names are listed:
 * X(ID, name, audited) per SBX_HIT_<ID> (<sandboxio/sandbox.h>). audited 0: the audit's run.end
 * does not list it (its list has never held "disk"; adding it would change
 * the audit's records).
 */
#define SBX__LIMIT_HITS(X)                                                                         \
	X(MEMORY, "memory", 1)                                                                     \
	X(PIDS, "pids", 1)                                                                         \
	X(OUTPUT, "output", 1)                                                                     \
	X(TIMEOUT, "timeout", 1)                                                                   \
	X(DISK, "disk", 0)

struct sbx__limit_hit {
	unsigned int bit; /* SBX_HIT_* */
	const char *name;
	int audited;
};

/* The hits in order; ends with a zero bit. */
extern const struct sbx__limit_hit sbx__limit_hits[];

#endif
