"""pytest configuration of the Gloo-over-glucx suite (see README.md).

--gloo-transport UCX (default): ranks run with GLOO_DEVICE_TRANSPORT=UCX and every check requires
    glucx's counters to show the check's bytes; the interpreter must be the venv's (`make venv`).
--gloo-transport TCP: the same suite over Gloo's own TCP transport, as a reference run (e.g. with
    Debian's /usr/bin/python3 while the shim is not built). glucx's counters, when glucx can be
    imported at all, must then stay still; the negative-control test, which needs glucx, is
    skipped when it cannot be imported, and the tests comparing UCX with TCP run only TCP.
(TORCH_SUITE_GLOO_TRANSPORT sets the default.)
"""
import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_addoption(parser):
    parser.addoption("--gloo-transport", choices=("UCX", "TCP"),
                     default=os.environ.get("TORCH_SUITE_GLOO_TRANSPORT", "UCX"),
                     help="Gloo device transport the ranks use (default UCX; TCP is the "
                          "reference run)")


@pytest.fixture(scope="session")
def transport(request):
    t = request.config.getoption("--gloo-transport")
    if t == "UCX" and importlib.util.find_spec("glucx") is None:
        pytest.fail(f"{sys.executable} cannot import glucx: run the suite with the venv's "
                    "interpreter after `make venv` (or pass --gloo-transport TCP for a "
                    "reference run over Gloo's TCP transport)", pytrace=False)
    return t


@pytest.fixture(scope="session")
def counters_mode(transport):
    return "require" if transport == "UCX" else "still-if-available"


@pytest.fixture(scope="session")
def glucx_available():
    return importlib.util.find_spec("glucx") is not None


def pytest_report_header(config):
    return (f"gloo transport: {config.getoption('--gloo-transport')}, "
            f"interpreter: {sys.executable}")
