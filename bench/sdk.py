"""bench/sdk.py: the Docker SDK for Python (Debian's python3-docker) as a peer.

  sdk.py oneshot           one create+run+remove of `true`, hardened like sandboxio
  sdk.py exec ID N         N exec_run("true") in a live container; prints
                           median min max of one run in ms
"""
import statistics
import sys
import time

import docker

HARDENING = dict(
    network_mode="none", cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
    read_only=True, user="1000:1000", mem_limit="512m", memswap_limit="512m",
    nano_cpus=1_000_000_000, pids_limit=256,
    ulimits=[docker.types.Ulimit(name="nofile", soft=1024, hard=1024),
             docker.types.Ulimit(name="core", soft=0, hard=0)],
    tmpfs={"/workspace": "size=939524096,uid=1000,gid=1000,mode=0700",
           "/tmp": "size=67108864,mode=1777"},
    ipc_mode="private", labels={"io.sandboxio.bench": "sdk"},
)


def main():
    client = docker.from_env()
    if sys.argv[1] == "oneshot":
        client.containers.run("sandboxio/python:3.11", ["true"], remove=True, **HARDENING)
    elif sys.argv[1] == "exec":
        c = client.containers.get(sys.argv[2])
        times = []
        for _ in range(int(sys.argv[3])):
            t0 = time.monotonic()
            code, _ = c.exec_run(["true"], user="1000:1000")
            times.append((time.monotonic() - t0) * 1e3)
            assert code == 0
        times.sort()
        print("%.2f %.2f %.2f" % (statistics.median(times), times[0], times[-1]))


if __name__ == "__main__":
    main()
