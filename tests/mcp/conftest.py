"""Tests of `sandboxio mcp` as a process (build/sandboxio, or $SBX_CLI).
Tests marked `engine` need dockerd and the default image, as the contract
tests do; the others give the server a socket path that does not exist, so
nothing reaches any daemon."""

import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config):
    config.addinivalue_line("markers", "engine: needs dockerd and the default image")
