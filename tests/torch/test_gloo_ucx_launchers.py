"""A plain job started by the venv's `torchrun` and by `python -m torch.distributed.run`.

The job (plain_job.py) is what a user writes: it imports torch only and gets the UCX transport from
GLOO_DEVICE_TRANSPORT. stats_runner.py wraps it without importing glucx before it runs and reads
glucx.stats() at interpreter exit (see its docstring for why that is sound).
"""
import os
import re
import sys

import pytest

import gloo_harness

JOB = os.path.join(gloo_harness.HERE, "plain_job.py")
JOB_CHECKS = ("init", "all_reduce", "all_reduce/int64/MAX", "all_gather", "broadcast",
              "isend_irecv", "totals")


def test_job_script_does_not_name_glucx():
    with open(JOB) as f:
        src = f.read()
    assert not re.search(r"glucx", src, re.IGNORECASE), "plain_job.py must stay plain torch"


@pytest.fixture(scope="module", params=[("torchrun", 2), ("torchrun", 4), ("module", 2),
                                        ("module", 4)],
                ids=lambda p: f"{p[0]}-{p[1]}ranks")
def launched(request, transport, tmp_path_factory):
    kind, world = request.param
    out = tmp_path_factory.mktemp(f"{kind}{world}")
    return gloo_harness.launcher(kind, world, str(out), transport, timeout_s=120)


def test_launcher_job_results(launched):
    for name in JOB_CHECKS:
        launched.assert_ok(name)
    assert launched.launcher_rc == 0, launched.describe()


def test_workers_ran_this_interpreter(launched):
    """The launcher started the workers with the interpreter running the tests (the venv's in a
    UCX run), not e.g. Debian's /usr/bin/python3 behind /usr/bin/torchrun."""
    exits = _exits(launched)
    for r, e in exits.items():
        # a venv's python is a symlink to the system one: the prefix tells them apart
        assert e["prefix"] == sys.prefix, (
            f"rank {r} ran {e['executable']} (prefix {e['prefix']}), the tests run "
            f"{sys.executable} (prefix {sys.prefix})")
        assert e["exit"] == 0, (r, e)


def test_bytes_went_through_glucx(launched, transport, glucx_available):
    exits = _exits(launched)
    for r in range(launched.world):
        totals = launched.assert_ok("totals", ranks=[r])[r]
        e = exits[r]
        if transport == "TCP":
            if glucx_available:
                assert e["stats"] is not None, e
                moved = {k: v for k, v in e["stats"].items()
                         if k in ("sends", "send_bytes", "recvs", "recv_bytes") and v}
                assert not moved, f"rank {r}: glucx counters moved over Gloo TCP: {moved}"
            continue
        assert not e["glucx_imported_before_job"], (
            f"rank {r}: glucx was imported before the job started: the runner must not import it")
        assert e["stats"] is not None, f"rank {r}: cannot read glucx.stats(): {e}"
        for k in ("send_bytes", "recv_bytes"):
            assert e["stats"][k] >= totals[k] > 0, (
                f"rank {r}: glucx {k} = {e['stats'][k]} at exit, the job's operations must have "
                f"moved at least {totals[k]}")


def _exits(launched):
    import json

    exits = {}
    for r in range(launched.world):
        path = os.path.join(launched.out, f"exit{r}.json")
        assert os.path.exists(path), f"rank {r} wrote no exit record\n" + launched.describe()
        with open(path) as f:
            exits[r] = json.load(f)
    return exits
