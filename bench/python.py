"""bench/python.py: N runs of `true` in one live sandbox through the Python
package (bindings/python, ctypes over build/libsandboxio.so), from the main
thread as a user's script calls it; prints the median, min and max of one
run in ms. Every run must go over the init's run channel, as bench/loop.c
requires of the C figure, so the two differ only by the Python layer.

  PYTHONPATH=bindings/python python3 bench/python.py [N]
"""
import statistics
import sys
import time

import sandboxio


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    times = []
    with sandboxio.Sandbox() as sb:
        sb.run(["true"])  # warm-up
        for _ in range(n):
            t0 = time.perf_counter()
            r = sb.run(["true"])
            times.append((time.perf_counter() - t0) * 1e3)
            if r.path != "channel" or not r.ok:
                print("run went over %s (status %s)" % (r.path, r.status), file=sys.stderr)
                return 1
    print("%.3f %.3f %.3f" % (statistics.median(times), min(times), max(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
