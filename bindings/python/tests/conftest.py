"""The package's tests. PYTHONPATH=bindings/python (make check sets it);
tests marked `engine` need dockerd and the image sandboxio/python:3.11, as
the C contract tests do. `-m "not engine"` runs the others alone."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def pytest_configure(config):
    config.addinivalue_line("markers", "engine: needs dockerd and the default image")
