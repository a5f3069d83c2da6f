# scripts/demo.py: the program the main job runs in a sandbox (scripts/demo.sh),
# also run by deb-check and by tests/cli/test_cli.sh, so that what the README
# promises is what is tested.
import numpy, os, platform
print("python", platform.python_version(), "numpy", numpy.__version__)
print("sum of 0..9:", int(numpy.arange(10).sum()))
print("interfaces:", sorted(os.listdir("/sys/class/net")))
