"""The package's tests. PYTHONPATH=bindings/python (make check sets it);
tests marked `engine` need dockerd and the image sandboxio/python:3.11, as
the C contract tests do. `-m "not engine"` runs the others alone."""

import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def pytest_configure(config):
    config.addinivalue_line("markers", "engine: needs dockerd and the default image")


@pytest.fixture(autouse=True)
def sigint_raises_keyboard_interrupt():
    """A suite started in the background by a shell without job control
    inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler. The tests that send SIGINT stand for a user at a terminal, whose
    Ctrl-C raises it: each test gets Python's own handler, as such a user has."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)
