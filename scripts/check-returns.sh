#!/bin/sh
# check-returns.sh: keeps the `Returns:` lists of the public headers true.
#
#   scripts/check-returns.sh        (make check-returns)
#   SBX_WHY=sbx_sandbox_run:SBX_ETOOBIG scripts/check-returns.sh
#                                   (the calls by which a code is reached)
#
# Every public function of include/sandboxio/*.h that returns int has a
# "Returns:" list in its comment (NO_LIST below names the one yes/no
# reading that needs none), and each list is held against the error codes
# its implementation can produce: the SBX_E* codes (and SBX_ERROR) written
# in its body and in the bodies of every function of the library it
# calls, transitively. The
# call graph is read from the library's own sources (the folders of
# LIB_SRC in the Makefile):
#  - a name of a project function in a body is an edge, called or passed
#    on as a callback;
#  - a call through a struct member (`b->ops->create(...)`, `sink->open(`)
#    is an edge to every function that some initializer or assignment of
#    the project puts in a member of that name (`.create = docker_create`):
#    the backend vtable and the sink interfaces, over every backend;
#  - a call that is a statement of its own, its value thrown away
#    (`f(x);`, `(void)f(x);`), passes no code on: neither it nor what its
#    arguments name is an edge;
#  - a code that is only compared (`== SBX_ENOTFOUND`, `case SBX_EINVALID:`)
#    is not produced, and is not counted.
# A list may say "as sbx_x()" or "sbx_x()'s errors": it then holds sbx_x's
# list too. Each function whose list lacks a code the code can produce, or
# names one it cannot, is printed with the codes; the exit status is 1
# when there is any, 0 when there is none.
#
# The reading over-approximates (a code on a path the function cannot
# take is still counted); ALLOW below holds the few such codes, each with
# the reason, and is kept short.
#
# A small parser of the project's own C rather than ctags or cscope:
# neither resolves a call through a vtable member, and the project's style
# (one definition per top-level brace, no K&R definitions, no macro that
# hides a brace) makes top-level braces enough to find every body; a use
# of one of the library's function-like macros reads as its text.
# Python as in scripts/check-layers.sh.
set -eu
cd "$(dirname "$0")/.."
exec python3 - <<'EOF'
import glob, os, re, sys

# The library's folders, as LIB_SRC of the Makefile.
LIB_DIRS = ["util", "core", "engine", "cgroups", "netpolicy", "remote", "remote/e2b",
            "remote/modal", "backends"]
HEADERS = sorted(glob.glob("include/sandboxio/*.h"))

# Codes the reading finds but the function cannot return: (function, code): why.
# An entry the reading no longer needs is an offence too.
ALLOW = {
    ("sbx_backend_image_exists", "SBX_ENOTFOUND"):
        "d_image_exists() turns the Engine's SBX_ENOTFOUND into 0 (absent)",
    ("sbx_sandbox_write_file", "SBX_EVERSION"):
        "run_common() is given no run options, so load_run_options() has no version to refuse",
    ("sbx_sandbox_read_file", "SBX_EVERSION"):
        "run_common() is given no run options, so load_run_options() has no version to refuse",
}
# Public functions that return int without a Returns list: why.
NO_LIST = {
    "sbx_policy_detached": "a yes/no reading of the policy that cannot fail",
}
# Functions that are started as threads (pthread_create): what they return
# never reaches the caller of the function that starts them.
THREADS = {
    "topup_main": "the pool's top-up thread: its errors go to sbx_pool_stats.last_error",
    "exporter": "the OTLP exporter's thread: export never fails a sandbox operation",
}

CODE_RE = re.compile(r"\bSBX_(?:E[A-Z]+|ERROR)\b")
CODES = {"SBX_ERROR", "SBX_EINVALID", "SBX_ENOTFOUND", "SBX_EDENIED", "SBX_EENGINE",
         "SBX_ETIMEOUT", "SBX_EUNSUPPORTED", "SBX_EVERSION", "SBX_ENOMEM",
         "SBX_EUNAVAILABLE", "SBX_ECANCELED", "SBX_ETOOBIG"}
IDENT_RE = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case",
            "goto", "static", "const", "struct", "union", "enum", "typedef"}


def strip(text):
    """Comments, strings, character constants and preprocessor lines blanked
    (newlines kept), so that braces and names are the code's own."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A directive, with its continuation lines.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    i += 1
                i += 1
            continue
        if c.isspace():
            out.append(c)
            if c == "\n":
                line_start = True
            i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# Function-like macros of the library (SBX_MODAL_UNPACK records an error):
# a use of one in a body reads as its replacement text.
macros = {}
DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
for d in LIB_DIRS:
    for f in sorted(glob.glob(d + "/*.[ch]")):
        with open(f, encoding="utf-8") as fh:
            for m in DEFINE_RE.finditer(fh.read()):
                macros[m.group(1)] = strip(m.group(3).replace("\\\n", "\n"))

# Definitions: function name -> [(file, static, body)], and the bodies of
# top-level initializers (the vtables), read only for their members.
funcs, inits = {}, []
for d in LIB_DIRS:
    for f in sorted(glob.glob(d + "/*.c")):
        with open(f, encoding="utf-8") as fh:
            src = strip(fh.read())
        depth, head_start, i = 0, 0, 0
        while i < len(src):
            c = src[i]
            if c == "{" and depth == 0:
                head = src[head_start:i]
                j, depth = i + 1, 1
                while j < len(src) and depth:
                    depth += {"{": 1, "}": -1}.get(src[j], 0)
                    j += 1
                body = src[i:j]
                m = re.search(r"(\w+)\s*\(([^()]|\([^()]*\))*\)\s*(__attribute__\s*\(\(.*\)\)\s*)?$",
                              head.strip(), re.S)
                if m and "=" not in head:
                    funcs.setdefault(m.group(1), []).append((f, bool(re.search(r"\bstatic\b", head)), body))
                else:
                    inits.append((f, body))
                i, head_start = j, j
                continue
            if c in ";}" and depth == 0:
                head_start = i + 1
            i += 1

# Members that hold functions: `.name = fn` in initializers and bodies,
# `->name = fn` / `.name = fn` in assignments.
members = {}
MEMBER_SET_RE = re.compile(r"(?:\.|->)\s*(\w+)\s*=\s*&?\s*(\w+)\s*[,;}\n]")
for text in [b for _, b in inits] + [b for defs in funcs.values() for _, _, b in defs]:
    for m in MEMBER_SET_RE.finditer(text):
        if m.group(2) in funcs:
            members.setdefault(m.group(1), set()).add(m.group(2))
MEMBER_CALL_RE = re.compile(r"(?:\.|->)\s*(\w+)\s*\)?\s*\(")


def node_id(name, f):
    """The definition a use of name in file f means: the file's own, else
    the project's one non-static definition."""
    defs = funcs.get(name, ())
    for df, st, _ in defs:
        if df == f:
            return (name, df)
    for df, st, _ in defs:
        if not st:
            return (name, df)
    return None


def discarded(body, start, end):
    """When the call whose callee spans body[start:end] is a statement of
    its own whose value is thrown away (`f(x);`, `(void)f(x);`,
    `if (c) f(x);`), the end of its arguments, else None. Its code, and
    those of the callbacks it is given, never reach the caller (the open's
    best-effort reap)."""
    i = end
    while i < len(body) and body[i].isspace():
        i += 1
    if i >= len(body) or body[i] != "(":
        return False
    depth = 0
    while i < len(body):
        depth += {"(": 1, ")": -1}.get(body[i], 0)
        i += 1
        if depth == 0:
            break
    if body[i:].lstrip()[:1] != ";":
        return None
    stop = i
    before = body[:start].rstrip()
    if not before or before[-1] in ";{}" or re.search(r"\belse$", before):
        return stop
    if before[-1] != ")":
        return None
    # A cast to void, or the head of an if, while or for.
    depth, j = 0, len(before) - 1
    while j >= 0:
        depth += {")": 1, "(": -1}.get(before[j], 0)
        if depth == 0:
            break
        j -= 1
    if re.fullmatch(r"\(\s*void\s*\)", before[j:]) or re.search(r"\b(if|while|for)\s*$",
                                                                    before[:j]):
        return stop
    return None


edges, codes = {}, {}
for name, defs in funcs.items():
    for f, st, body in defs:
        me = (name, f)
        out = set()
        # The spans of the calls whose value is thrown away.
        spans = []
        for m in list(IDENT_RE.finditer(body)) + list(MEMBER_CALL_RE.finditer(body)):
            start = m.start()
            while start > 0 and re.match(r"[\w.>-]", body[start - 1]):
                start -= 1
            end = m.end() - 1 if body[m.end() - 1] == "(" else m.end()
            stop = discarded(body, start, end)
            if stop is not None:
                spans.append((start, stop))
        for m in IDENT_RE.finditer(body):
            w = m.group(0)
            if w in funcs and w not in KEYWORDS and w not in THREADS:
                before = body[:m.start()].rstrip()
                if before.endswith(".") or before.endswith("->"):
                    continue  # a member of the same name, not the function
                if any(a <= m.start() < b for a, b in spans):
                    continue
                t = node_id(w, f)
                if t and t != me:
                    out.add(t)
        for m in MEMBER_CALL_RE.finditer(body):
            if any(a <= m.start() < b for a, b in spans):
                continue
            for fn in members.get(m.group(1), ()):
                for df, _, _ in funcs[fn]:
                    out.add((fn, df))
        used = {m.group(0) for m in IDENT_RE.finditer(body)} & set(macros)
        text = body + "".join("\n" + macros[u] for u in sorted(used))
        for u in sorted(used):
            for m in IDENT_RE.finditer(macros[u]):
                t = node_id(m.group(0), f) if m.group(0) in funcs else None
                if t and t != me:
                    out.add(t)
        edges[me] = out
        got = set()
        for m in CODE_RE.finditer(text):
            before = text[:m.start()].rstrip()
            if before.endswith("==") or before.endswith("!=") or re.search(r"\bcase$", before):
                continue
            got.add(m.group(0))
        codes[me] = got & CODES


def reach(start):
    seen, todo = {start}, [start]
    while todo:
        v = todo.pop()
        for w in edges.get(v, ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


# The headers' lists.
DECL_RE = re.compile(r"(?:/\*\*((?:(?!\*/).)*)\*/\s*)?SBX_EXTERN\s+([^;(]*?)\b(\w+)\s*\(", re.S)
listed, refs, where = {}, {}, {}
bad = []
for h in HEADERS:
    with open(h, encoding="utf-8") as fh:
        text = fh.read()
    for m in DECL_RE.finditer(text):
        doc, ret_type, fn = m.group(1) or "", m.group(2).split(), m.group(3)
        r = re.search(r"Returns:(.*)", doc, re.S)
        if not r:
            if ret_type == ["int"] and fn not in NO_LIST:
                bad.append("%s:%d: %s returns int but has no Returns list"
                           % (h, text.count("\n", 0, m.start(3)) + 1, fn))
            continue
        ret = r.group(1)
        listed[fn] = set(CODE_RE.findall(ret)) & CODES
        refs[fn] = set(re.findall(r"\b(sbx_\w+)\(\)", ret)) - {fn}
        where[fn] = "%s:%d" % (h, text.count("\n", 0, m.start(3)) + 1)


def full_list(fn, seen=()):
    out = set(listed[fn])
    for r in refs[fn]:
        if r in listed and r not in seen:
            out |= full_list(r, seen + (fn,))
    return out


def why(fn, code):
    """The chain of calls from fn to a body that writes code (SBX_WHY)."""
    start = node_id(fn, None)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        if code in codes.get(v, ()):
            chain = []
            while v:
                chain.append("%s (%s)" % v)
                v = prev[v]
            return " <- ".join(chain)
        for w in sorted(edges.get(v, ())):
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return "no path"


# SBX_WHY=function:CODE prints where the reading finds the code.
if os.environ.get("SBX_WHY"):
    fn, code = os.environ["SBX_WHY"].split(":")
    print(why(fn, code))
    for v in sorted(reach(node_id(fn, None))):
        if code in codes.get(v, ()):
            print("  written in %s (%s)" % v)
    sys.exit(0)

for fn in sorted(listed):
    start = node_id(fn, None)
    if start is None:
        bad.append("%s: %s has a Returns list but no definition in the library" % (where[fn], fn))
        continue
    found = set()
    for v in reach(start):
        found |= codes.get(v, set())
    for (f, c) in sorted(ALLOW):
        if f == fn and c not in found:
            bad.append("check-returns: ALLOW holds %s of %s, which the reading no longer finds"
                       % (c, fn))
    found -= {c for (f, c) in ALLOW if f == fn}
    doc = full_list(fn)
    missing, extra = sorted(found - doc), sorted(doc - found)
    if missing:
        bad.append("%s: %s can return %s, not in its Returns list" % (where[fn], fn, ", ".join(missing)))
    if extra:
        bad.append("%s: %s never returns %s, yet its Returns list names it" % (where[fn], fn, ", ".join(extra)))
for fn in sorted(NO_LIST):
    if fn in listed:
        bad.append("check-returns: NO_LIST names %s, which has a Returns list" % fn)
for (fn, c) in sorted(ALLOW):
    if fn not in listed:
        bad.append("check-returns: ALLOW names %s, which has no Returns list" % fn)

if bad:
    print("check-returns: %d public function(s) whose Returns list is not what the code returns:"
          % len(bad), file=sys.stderr)
    for b in bad:
        print("  " + b, file=sys.stderr)
    sys.exit(1)
print("check-returns: %d Returns lists name exactly the codes their functions return" % len(listed))
EOF
