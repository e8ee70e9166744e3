"""fork() under a process group (issue 14): a DataLoader with fork-started workers beside a group
of the `glucx` backend, and beside a Gloo group over glucx (GLOO_DEVICE_TRANSPORT=UCX).

The group keeps working while the workers exist (values checked), a worker's collective or
send on the inherited group raises at once with a text that names the fork and the
spawn/forkserver start methods (a hang would trip the DataLoader's timeout and fail the check),
a worker destroying the inherited group returns without the peers noticing, and the group works
afterwards. Times are only compared with the group timeout the job configured (both scaled by
GLUCX_TEST_TIME_SCALE); every launch has a hard deadline.
"""
import pytest

import backend_harness
from fork_jobs import OPS
from gloo_harness import time_scale

TIMEOUT_S = 60


def _run(tmp_path, backend, destroy_in_worker, extra_env=None):
    backend_harness.glucx_importable_or_fail()
    timeout_s = TIMEOUT_S * time_scale()
    job = backend_harness.spawn(
        "dataloader", 2, str(tmp_path), jobs_module="fork_jobs", backend=backend,
        extra_env=extra_env,
        params={"timeout_s": timeout_s, "loader_timeout_s": timeout_s / 2,
                "destroy_in_worker": destroy_in_worker},
        timeout_s=240 * time_scale())
    for name in ("warm-up", "epoch"):
        job.assert_ok(name)
    for r in range(job.world):
        rec = job.record("worker-collective", r)
        assert rec is not None, f"rank {r} never came back: {job.describe()}"
        assert rec["ok"], f"rank {r}: a worker hung: {rec['detail']}"
        results = rec["results"]
        assert len(results) == 2, f"rank {r}: {len(results)} worker results: {results}"
        for res in results:
            pid = res["pid"]
            for op in OPS:
                raised, text, secs = res[op]
                assert raised, f"rank {r}, worker {pid}: {op} on the inherited group {text}"
                for word in ("forked", f"process {pid} ", "'spawn'", "'forkserver'"):
                    assert word in text, f"rank {r}, worker {pid}: {op}: no {word!r} in: {text}"
                assert secs < timeout_s / 4, \
                    f"rank {r}, worker {pid}: {op} took {secs:.1f} s (group timeout {timeout_s} s)"
            if destroy_in_worker:
                assert res["destroy"][2] < timeout_s / 4, \
                    f"rank {r}, worker {pid}: destroy_process_group took {res['destroy'][2]} s"
    for name in ("churn", "after", "job"):
        job.assert_ok(name)


@pytest.mark.parametrize("destroy_in_worker", [False, True], ids=["keep", "destroy-in-worker"])
def test_dataloader_fork_beside_glucx_group(tmp_path, destroy_in_worker):
    _run(tmp_path, "glucx", destroy_in_worker)


@pytest.mark.parametrize("destroy_in_worker", [False, True], ids=["keep", "destroy-in-worker"])
def test_dataloader_fork_beside_gloo_ucx_group(tmp_path, destroy_in_worker):
    _run(tmp_path, "gloo", destroy_in_worker, extra_env={"GLOO_DEVICE_TRANSPORT": "UCX"})
