#!/bin/sh
# check-layers.sh: keeps the layers of docs/architecture.md true.
#
#   scripts/check-layers.sh [BUILD_DIR]     (make check-layers; BUILD_DIR: build)
#
# Two readings of the tree, each held against the one rank table below:
#  (a) every #include "..." (and <sandboxio...>, the public headers) of the
#      project's .c and .h files (not tests/, bench/): an include may point
#      into its own folder or down to a folder of a lower rank, never up nor
#      sideways to another folder of the same rank; and no include circle
#      between files;
#  (b) `nm` of the objects the Makefile built (BUILD_DIR/obj/: the library
#      and the CLI; build/init-obj/: sbx-init): every undefined symbol of an
#      object is matched to the object of the same program that defines it,
#      and that use obeys the same rule; and no circle of uses between
#      object files.
# Each offence is printed as the pair of files and the include or symbols;
# the exit status is 1 when there is any, 0 when there is none.
#
# Python because a circle between files is a strongly connected component
# of a graph, which awk would make long to read; python3 comes with
# scripts/setup.sh.
set -eu
cd "$(dirname "$0")/.."
exec python3 - "${1:-build}" <<'EOF'
import os, re, subprocess, sys

# The rank table: the one place that says who may use whom. A file may use
# (include, or call a name defined in) a file of its own folder, or of a
# folder of a LOWER rank; never a folder of a higher rank, nor another folder
# of the same rank. docs/architecture.md prints the same table.
RANK = {
    "include": 0,    # the public API (include/sandboxio/*.h)
    "util": 1,       # errors, buffers, redaction, frames, clocks
    "cgroups": 2,    # reading a sandbox's cgroup back
    "netpolicy": 2,  # the egress allowlist and its enforcement
    "core": 3,       # policy, config, audit, trace, records; the backend
                     # vtable and the sink interfaces
    "engine": 4,     # the Docker Engine backend
    "remote": 4,     # the E2B and Modal backends, the OTLP exporter
    "backends": 5,   # the one table of backends, and opening one by name
    "server": 6,     # `sandboxio serve`
    "cli": 7,        # the sandboxio command
    "init": None,    # sbx-init, a program of its own: uses only what ONLY
                     # says, and no other folder uses it
}
# Folders that may use only the folders named, whatever their rank.
ONLY = {
    "init": {"util"},  # a static binary inside every sandbox: no library
}
# Known exceptions: files of cli/ whose uses are not checked. There is none:
# a file may stand here only while a circle of the command's own files is
# being undone, and only a cli/ file.
EXCEPT = set()
# Generated sources (protoc-c), read as part of the folder of their .proto.
GEN = "build/gen/"

build = sys.argv[1]
bad = []
for f in EXCEPT:
    if not f.startswith("cli/"):
        bad.append("rank table: exception %s is outside cli/" % f)


def folder(path):
    if path.startswith(GEN):
        path = path[len(GEN):]
    return path.split("/", 1)[0]


def allowed(a, b):
    """May file a use file b?"""
    fa, fb = folder(a), folder(b)
    if fa == fb:
        return True
    if fa not in RANK or fb not in RANK:
        return False
    if fa in ONLY:
        return fb in ONLY[fa]
    if RANK[fa] is None or RANK[fb] is None:
        return False
    return RANK[fb] < RANK[fa]


def why(a, b):
    fa, fb = folder(a), folder(b)
    if fa not in RANK or fb not in RANK:
        return "folder not in the rank table"
    if fa in ONLY:
        return "%s/ may use only %s" % (fa, ", ".join(sorted(ONLY[fa])))
    if RANK[fb] is None:
        return "%s/ is a program of its own: no other folder uses it" % fb
    if RANK[fb] == RANK[fa]:
        return "sideways: %s/ and %s/ are both of rank %d" % (fb, fa, RANK[fa])
    return "up: %s/ (rank %d) is above %s/ (rank %d)" % (fb, RANK[fb], fa, RANK[fa])


def circles(edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    nodes = sorted(set(edges) | {b for a in edges for b in edges[a]})
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def report(kind, edges):
    """edges: {a: {b: [what, ...]}}"""
    for a in sorted(edges):
        if a in EXCEPT:
            continue
        for b in sorted(edges[a]):
            if not allowed(a, b):
                bad.append("%s: %s -> %s: %s (%s)" % (kind, a, b, ", ".join(sorted(edges[a][b])[:6]), why(a, b)))
    for comp in circles(edges):
        if all(f in EXCEPT for f in comp):
            continue
        ties = ["%s -> %s: %s" % (a, b, ", ".join(sorted(edges[a][b])[:6]))
                for a in comp for b in sorted(edges.get(a, ())) if b in comp]
        bad.append("%s circle between %s\n    %s" % (kind, ", ".join(comp), "\n    ".join(ties)))


# (a) includes.
files = subprocess.run(["git", "ls-files", "*.c", "*.h"], check=True, capture_output=True,
                       text=True).stdout.split()
files = [f for f in files if folder(f) not in ("tests", "bench")]
inc_re = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<(sandboxio[^>]*)>)')
inc = {}
for f in files:
    with open(f, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = inc_re.match(line)
            if not m:
                continue
            name = m.group(1) or m.group(2)
            # As the compiler looks: the file's folder (quotes only), -I.,
            # -Iinclude, -Ibuild/gen.
            cands = ([os.path.join(os.path.dirname(f), name)] if m.group(1) else []) + \
                [name, "include/" + name, GEN + name]
            to = next((os.path.normpath(c) for c in cands if os.path.isfile(c)), None)
            if to is None and folder(name) in RANK:
                to = GEN + name  # generated, not built yet
            if to is None:
                bad.append("include: %s: cannot find \"%s\"" % (f, name))
                continue
            inc.setdefault(f, {}).setdefault(to, []).append('#include "%s"' % name)
report("include", inc)

# (b) symbols, program by program.
def source_of(obj, root):
    rel = obj[len(root) + 1:-2]
    if rel.startswith("gen/"):
        return GEN + rel[4:] + ".c"
    return rel + ".c"


def objects(root):
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.join(d, n) for n in names if n.endswith(".o")]
    return sorted(out)


programs = [("library and CLI", os.path.join(build, "obj")), ("sbx-init", "build/init-obj")]
for prog, root in programs:
    objs = objects(root)
    if not objs:
        bad.append("symbols: no objects under %s: build first (make)" % root)
        continue
    defs, uses = {}, {}
    for o in objs:
        src = source_of(o, root)
        # An object left behind by a source file since moved or removed
        # is not part of the program any more.
        if not src.startswith(GEN) and not os.path.exists(src):
            continue
        text = subprocess.run(["nm", "-P", o], check=True, capture_output=True, text=True).stdout
        for line in text.splitlines():
            p = line.split()
            if len(p) < 2:
                continue
            if p[1] == "U":
                uses.setdefault(src, set()).add(p[0])
            elif p[1] in "TDBRVWGS" or p[1] in "CI":
                defs.setdefault(p[0], set()).add(src)
    edges = {}
    for a, names in uses.items():
        for s in names:
            for b in defs.get(s, ()):
                if b != a:
                    edges.setdefault(a, {}).setdefault(b, []).append(s)
    report("symbols (%s)" % prog, edges)

if bad:
    print("check-layers: %d offence(s) against the rank table of scripts/check-layers.sh "
          "(docs/architecture.md):" % len(bad), file=sys.stderr)
    for b in bad:
        print("  " + b, file=sys.stderr)
    sys.exit(1)
print("check-layers: includes and symbol uses point down, no circles")
EOF
