"""tests/cli/e2b_wire.py: the wire helpers of the E2B server's shell tests
(tests/cli/serve-lib.sh): Connect envelopes in and out, a JSON body's
checks, E2B's v1 signature of a /files URL.

  enc TEXT          one Connect envelope of TEXT on stdout
  dec PATH          one line per frame: FLAGS JSON, data decoded from base64
  out PATH STREAM   the bytes of one stream, joined over its data frames
  json PATH EXPR    exit 0 when the Python EXPR over the body (as d) is true
  get PATH KEY      the body's top-level KEY
  sig PATH OP USER TOKEN [EXPIRY]   the signature, percent-encoded for a query
"""
import base64
import hashlib
import json
import struct
import sys
import urllib.parse


def enc(text):
    b = text.encode()
    sys.stdout.buffer.write(b"\0" + struct.pack(">I", len(b)) + b)


def dec(path):
    d = open(path, "rb").read()
    i = 0
    while i < len(d):
        if i + 5 > len(d):
            print("TRUNCATED")
            return
        f = d[i]
        n = struct.unpack(">I", d[i + 1:i + 5])[0]
        j = json.loads(d[i + 5:i + 5 + n])
        i += 5 + n
        data = j.get("event", {}).get("data")
        if data:
            for k, v in data.items():
                data[k] = base64.b64decode(v).decode("utf-8", "replace")
        print(f, json.dumps(j, sort_keys=True, separators=(",", ":")))


def out(path, stream):
    d = open(path, "rb").read()
    i, b = 0, b""
    while i + 5 <= len(d):
        n = struct.unpack(">I", d[i + 1:i + 5])[0]
        j = json.loads(d[i + 5:i + 5 + n])
        i += 5 + n
        v = j.get("event", {}).get("data", {}).get(stream)
        if v:
            b += base64.b64decode(v)
    sys.stdout.buffer.write(b)


def check(path, expr):
    d = json.load(open(path))
    sys.exit(0 if eval(expr, {"d": d}) else 1)


def sig(parts):
    raw = ":".join(parts).encode()
    s = "v1_" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    print(urllib.parse.quote(s, safe=""))


if __name__ == "__main__":
    verb = sys.argv[1]
    if verb == "enc":
        enc(sys.argv[2])
    elif verb == "dec":
        dec(sys.argv[2])
    elif verb == "out":
        out(sys.argv[2], sys.argv[3])
    elif verb == "json":
        check(sys.argv[2], sys.argv[3])
    elif verb == "get":
        print(json.load(open(sys.argv[2]))[sys.argv[3]])
    elif verb == "sig":
        sig(sys.argv[2:])
    else:
        sys.exit("e2b_wire.py: unknown verb " + verb)
