"""The suite's one time-scale factor for the Python tests (tests/README.md).

GLUCX_TEST_TIME_SCALE is a positive number, default 1. Every deadline a test sets for another
process, thread or rank (subprocess timeouts, polling deadlines, process-group and store timeouts,
"failed within" bounds) is a base value for a loaded 2-core machine times this factor; ctest's
per-test TIMEOUTs scale the same way (tests/tools/timescale.cmake) and ctest passes the factor to
every test. The C and C++ tests read it through glucx_test_ms() (tests/support/timescale.h).

Imported by path by tests/trace, tests/analysis, tests/demo and tests/torch (gloo_harness), e.g.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from timescale import scaled
"""
import os


def time_scale():
    """GLUCX_TEST_TIME_SCALE as a float (1.0 when unset or empty). Raises ValueError on a value
    that is not a number in (0, 1000)."""
    raw = os.environ.get("GLUCX_TEST_TIME_SCALE", "")
    if not raw:
        return 1.0
    value = float(raw)
    if not 0 < value < 1000:
        raise ValueError(f"GLUCX_TEST_TIME_SCALE={raw}: expected a number in (0, 1000)")
    return value


def scaled(seconds):
    """A base duration in seconds times the factor (a float)."""
    return seconds * time_scale()
