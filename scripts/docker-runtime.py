#!/usr/bin/python3
"""docker-runtime.py DAEMON_JSON NAME PATH [ARG...]: registers PATH (with
runtimeArgs ARG...) as dockerd's runtime NAME in DAEMON_JSON, keeping every
other setting of the file. Prints "changed" when it wrote the file,
"unchanged" when the runtime was already there as asked; a runtime NAME of
the operator's that differs is left alone (a warning on stderr says so). A
file that is not a JSON object is an error and is not touched. The file is
replaced atomically, with its mode kept (0644 when new)."""

import json
import os
import sys
import tempfile


def main(argv):
    if len(argv) < 4:
        print("usage: docker-runtime.py DAEMON_JSON NAME PATH [ARG...]", file=sys.stderr)
        return 2
    conf, name, path, args = argv[1], argv[2], argv[3], argv[4:]
    want = {"path": path}
    if args:
        want["runtimeArgs"] = args
    try:
        with open(conf, encoding="utf-8") as f:
            text = f.read()
        mode = os.stat(conf).st_mode & 0o7777
    except FileNotFoundError:
        text, mode = "", 0o644
    try:
        d = json.loads(text) if text.strip() else {}
    except ValueError as e:
        print(f"docker-runtime: {conf} is not valid JSON ({e}); not changed", file=sys.stderr)
        return 1
    if not isinstance(d, dict) or not isinstance(d.get("runtimes", {}), dict):
        print(f"docker-runtime: {conf} is not a JSON object with an object 'runtimes'; "
              "not changed", file=sys.stderr)
        return 1
    have = d.get("runtimes", {}).get(name)
    if have == want:
        print("unchanged")
        return 0
    if have is not None:
        print(f"docker-runtime: {conf} already has a runtime '{name}' ({json.dumps(have)}); "
              f"left as it is (the gvisor tier expects {json.dumps(want)})", file=sys.stderr)
        print("unchanged")
        return 0
    d.setdefault("runtimes", {})[name] = want
    os.makedirs(os.path.dirname(os.path.abspath(conf)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(conf)), prefix=".daemon.json.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(d, f, indent=2)
            f.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, conf)
    except BaseException:
        os.unlink(tmp)
        raise
    print("changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
