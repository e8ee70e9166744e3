"""Failures through ProcessGroupGloo over glucx: a collective that times out, and a killed rank.

Times are only compared with the process group timeout the job itself configured: "promptly"
means well inside that timeout, "no hang" means an error before the timeout has passed 1.5 times.
"""
import re
import signal

import pytest

import gloo_harness
from gloo_harness import time_scale

TIMEOUT_S = 4  # what is tested: not scaled (the bound on how long it may take to fire is)


@pytest.fixture(scope="module")
def timeout_job(transport, counters_mode, tmp_path_factory):
    out = tmp_path_factory.mktemp("timeout")
    return gloo_harness.spawn("timeout", 2, str(out), transport, counters_mode,
                              params={"timeout_s": TIMEOUT_S}, timeout_s=60)


def test_timeout_raises_after_the_timeout(timeout_job):
    timeout_job.assert_ok("warm-up")
    timeout_job.assert_ok("skipped/times-out", ranks=[0])
    rec = timeout_job.assert_ok("skipped/error", ranks=[0])[0]
    # an error well before the timeout would come from something else than the timeout
    assert rec["elapsed_s"] >= 0.8 * TIMEOUT_S, rec


# What PyTorch's own tests match a Gloo timeout with (torch/testing/_internal/distributed/
# distributed_test.py: _test_barrier_timeout; "Timed out waiting" under TORCH_DISTRIBUTED_DEBUG=
# DETAIL), and the sentence of Gloo's TCP transport (gloo/transport/tcp/unbound_buffer.cc).
PYTORCH_TIMEOUT_RE = " (Timed out|closed|timeout) "
GLOO_TIMEOUT_RE = r"Timed out waiting %dms for (recv|send) operation to complete"


def test_timeout_error_has_gloos_wording(timeout_job):
    """The RuntimeError of the collective that timed out says what Gloo's TCP transport says,
    as PyTorch's tests and people's log searches expect (run with --gloo-transport TCP to see
    that Gloo's own transport passes it)."""
    rec = timeout_job.assert_ok("skipped/error", ranks=[0])[0]
    msg = rec["detail"]
    assert re.search(PYTORCH_TIMEOUT_RE, msg), msg
    assert re.search(GLOO_TIMEOUT_RE % (TIMEOUT_S * 1000), msg), msg


def test_next_collective_raises_promptly(timeout_job):
    for name in ("next/raises", "next2/raises"):
        timeout_job.assert_ok(name)
    for name in ("next/error", "next2/error"):
        rec = timeout_job.assert_ok(name, ranks=[0])[0]
        assert rec["elapsed_s"] < 0.5 * TIMEOUT_S, (
            f"rank 0's {name} after its timeout took {rec['elapsed_s']:.2f} s "
            f"(timeout {TIMEOUT_S} s): {rec['detail']}")


def test_peer_of_timed_out_rank_raises_promptly(timeout_job):
    """Rank 1 skipped the collective; its next one must fail too (rank 0 has given up on the
    group), and promptly: it must learn of rank 0's failure instead of timing out itself."""
    for name in ("next/error", "next2/error"):
        rec = timeout_job.assert_ok(name, ranks=[1])[1]
        assert rec["elapsed_s"] < 0.5 * TIMEOUT_S, (
            f"rank 1's {name} took {rec['elapsed_s']:.2f} s (timeout {TIMEOUT_S} s): "
            f"{rec['detail']}")


def test_timeout_job_exits(timeout_job):
    timeout_job.assert_ok("exiting")
    assert not timeout_job.hung, timeout_job.describe()


KILL_TIMEOUT_S = 10 * time_scale()  # a bound the failure must beat: scaled
VICTIM = 1


@pytest.fixture(scope="module")
def kill_job(transport, counters_mode, tmp_path_factory):
    out = tmp_path_factory.mktemp("killed")
    return gloo_harness.spawn("killed_rank", 4, str(out), transport, counters_mode,
                              params={"victim": VICTIM, "timeout_s": KILL_TIMEOUT_S},
                              timeout_s=90)


SURVIVORS = [0, 2, 3]


def test_killed_rank_died(kill_job):
    kill_job.assert_ok("warm-up")
    kill_job.assert_ok("victim/killing-itself", ranks=[VICTIM])
    assert kill_job.exitcodes.get(VICTIM) == -signal.SIGKILL, kill_job.describe()


def test_survivors_get_runtime_error_within_timeout(kill_job):
    for k, what in enumerate(("all_reduce", "all_reduce", "barrier")):
        kill_job.assert_ok(f"after-kill/{k}/{what}", ranks=SURVIVORS)
    for r, rec in kill_job.assert_ok("after-kill/0/error", ranks=SURVIVORS).items():
        assert rec["elapsed_s"] < 1.5 * KILL_TIMEOUT_S, (r, rec)


def test_survivors_exit(kill_job):
    kill_job.assert_ok("exiting", ranks=SURVIVORS)
    assert not kill_job.hung, kill_job.describe()


TRUNC_TIMEOUT_S = 10
TRUNC_SENT, TRUNC_POSTED = 600, 500  # float32 elements


@pytest.fixture(scope="module")
def truncation_job(transport, counters_mode, tmp_path_factory):
    out = tmp_path_factory.mktemp("truncation")
    return gloo_harness.spawn("p2p_truncation", 3, str(out), transport, counters_mode,
                              params={"timeout_s": TRUNC_TIMEOUT_S, "sent": TRUNC_SENT,
                                      "posted": TRUNC_POSTED}, timeout_s=120)


def test_p2p_truncation_fails_the_group_on_every_rank(transport, truncation_job):
    """As with the glucx backend (test_backend_failures.py): rank 0 sends 2400 bytes to rank 2,
    which posted 2000; rank 2's recv raises naming both lengths, and the group is failed on every
    rank, sender and bystander (rank 1) included: their next barrier and all_reduce raise at once,
    not at the group's timeout. Over Gloo's TCP transport only the pair's connection fails, so a
    bystander's collectives can wait for the timeout: that run is not glucx's."""
    if transport != "UCX":
        pytest.skip("glucx's failure model; Gloo's TCP transport fails only the pair")
    job = truncation_job
    job.assert_ok("warm-up")
    problems = []
    call = job.record("call", 2)
    if call is None or not call["raised"] or not all(
            w in call["detail"] for w in ("2400", "2000", "rank 0")):
        problems.append(f"rank 2 (receiver): recv did not raise naming 2400, 2000 bytes and "
                        f"rank 0: {call}")
    for r in range(3):
        rec = job.record("call", r)
        if rec is None or rec["elapsed_s"] >= 1.5 * TRUNC_TIMEOUT_S:
            problems.append(f"rank {r}: its call did not come back in time: {rec}")
        for op in ("barrier", "all_reduce"):
            rec = job.record(op, r)
            if rec is None:
                problems.append(f"rank {r}: never came back from the {op}")
            elif not rec["raised"]:
                problems.append(f"rank {r} ({rec['role']}): the {op} after the truncation worked")
            elif rec["elapsed_s"] >= 0.5 * TRUNC_TIMEOUT_S or "2000" not in rec["detail"]:
                problems.append(f"rank {r} ({rec['role']}): the {op} failed after "
                                f"{rec['elapsed_s']:.1f} s without naming the truncation: "
                                f"{rec['detail'][:400]}")
    assert not problems, "\n".join(problems) + "\n\n" + job.describe()
    job.assert_ok("exiting")
    assert not job.hung, job.describe()
