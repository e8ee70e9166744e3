"""The end of a group with the `glucx` backend (issue 13): destroying a group right after its
collectives never fails the peers; destroying it before the others' collective fails them at once.

Times are only compared with the group timeout the job configured (scaled by
GLUCX_TEST_TIME_SCALE); the launch itself has a hard deadline, so nothing can hang the suite.
"""
import os
import re

import backend_harness
from gloo_harness import time_scale

CYCLES = 200
TIMEOUT_S = 60


def _glucx_lines(job):
    """Lines glucx printed in the ranks' logs (warnings, errors)."""
    lines = []
    for r in range(job.world):
        path = os.path.join(job.out, f"rank{r}.log")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                lines += [f"rank {r}: {ln.rstrip()}" for ln in f if "[glucx " in ln]
    return lines


def test_destroy_right_after_all_reduce_4ranks(tmp_path):
    backend_harness.glucx_importable_or_fail()
    timeout_s = TIMEOUT_S * time_scale()
    job = backend_harness.spawn("group_churn", 4, str(tmp_path), jobs_module="lifecycle_jobs",
                                params={"cycles": CYCLES, "timeout_s": timeout_s},
                                timeout_s=300 * time_scale())
    job.assert_ok("churn")
    job.assert_ok("cycles")
    job.assert_ok("default-group-after")
    job.assert_ok("job")
    assert _glucx_lines(job) == [], "\n".join(_glucx_lines(job)[:10])


def test_destroy_before_the_others_all_reduce_fails_them(tmp_path):
    backend_harness.glucx_importable_or_fail()
    timeout_s = TIMEOUT_S * time_scale()
    job = backend_harness.spawn("early_destroy", 4, str(tmp_path), jobs_module="lifecycle_jobs",
                                params={"timeout_s": timeout_s}, timeout_s=120 * time_scale())
    job.assert_ok("warm-up")
    for r in range(1, 4):
        rec = job.record("raised", r)
        assert rec is not None, f"rank {r} never came back: {job.describe()}"
        assert rec["ok"], f"rank {r}: {rec['detail']}"
        assert re.search(r"rank 0\b.*destroyed", rec["detail"]), rec["detail"]
        assert rec["elapsed_s"] < timeout_s / 4, \
            f"rank {r} took {rec['elapsed_s']:.1f} s (timeout {timeout_s} s): found at the timeout"
    job.assert_ok("default-group-after")
    job.assert_ok("job")
