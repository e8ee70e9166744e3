"""glucx.torch.ScheduledDataParallel (issue 18 item 2: gradient partitions in one priority plan on
every rank, each partition's optimizer step when its allreduce completes, the next forward
overlapping the rest) at 2 and 3 ranks on the `glucx` backend and on `gloo`.

One launch per (backend, world size) trains, per model (an MLP; one with BatchNorm) x optimizer
(SGD with momentum; Adam), five steps in partitions of at most 256 bytes (several per model),
and checks: the parameters (and rank 0's buffers: DDP leaves the others' buffers rank-local
until the next forward) equal DistributedDataParallel's on the same backend (bitwise at 2
ranks, within the tolerance at 3: scheduled_jobs.py says why) and the in-process
reference's; they are bitwise equal across ranks; the plan (from iteration 1 on, computed from
the profiled iteration 0) is the same on every rank and is a permutation; a run with rank- and
step-dependent sleeps in forward and backward gives bitwise the same parameters (local readiness
delays, never reorders); a sum-instead-of-average reference exceeds the tolerance; each
unsupported use raises with its message and the job still trains; a rank that fails makes the
other raise, not hang. `plan_order` (the planner) is checked on hand-computed cases.
"""
import pytest

import backend_harness

BACKENDS = ["glucx", "gloo"]
WORLDS = [2, 3]
CASES = [f"{m}-{o}" for m in ("mlp", "bn") for o in ("sgd", "adam")]
ERRORS = ["no_sync", "second-backward", "unused-parameters", "structure-differs",
          "shape-differs", "parameter-used-outside-its-module", "bad-optimizer"]
EXTRA = ["functional-no-overlap", "weight-norm", "group-without-rank-0"]


@pytest.fixture(scope="module", params=[(b, w) for b in BACKENDS for w in WORLDS],
                ids=lambda p: f"{p[0]}-{p[1]}ranks")
def job(request, tmp_path_factory):
    return backend_harness.spawn_per_param(request, tmp_path_factory, "scheduled", "scheduled_jobs", 200)


def test_init(job):
    job.assert_ok("init")


@pytest.mark.parametrize("case", CASES)
def test_matches_ddp_and_reference(job, case):
    job.assert_ok(f"{case}/matches-ddp")
    if job.world == 2:
        for r, rec in job.assert_ok(f"{case}/result").items():
            assert rec["param_sha256"] == rec["ddp_param_sha256"], \
                f"rank {r}: parameters not bitwise DDP's at 2 ranks"
            if r == 0:   # buffers: DDP's other ranks keep their own until the next forward
                assert rec["sha256"] == rec["ddp_sha256"], "rank 0: not bitwise DDP's"


@pytest.mark.parametrize("case", CASES)
def test_bitwise_equal_across_ranks(job, case):
    recs = job.assert_ok(f"{case}/result")
    shas = {r: rec["sha256"] for r, rec in recs.items()}
    assert len(set(shas.values())) == 1, f"{case}: parameters differ across ranks: {shas}"


@pytest.mark.parametrize("case", CASES)
def test_one_plan_on_every_rank(job, case):
    recs = job.assert_ok(f"{case}/result")
    plans = {r: tuple(rec["plan"]) for r, rec in recs.items()}
    assert len(set(plans.values())) == 1, f"{case}: plans differ: {plans}"
    for rec in recs.values():
        assert rec["planned"], rec
        assert rec["nparts"] >= 3, rec
        assert sorted(rec["plan"]) == list(range(rec["nparts"])), rec
        assert all(isinstance(p, int) for p in rec["priorities"]), rec


@pytest.mark.parametrize("case", CASES)
def test_skewed_timing_same_result(job, case):
    job.assert_ok(f"{case}/skewed")
    for r, rec in job.assert_ok(f"{case}/skewed-result").items():
        assert rec["sha256"] == job.record(f"{case}/result", r)["sha256"], f"rank {r}"


def test_comparison_can_fail(job):
    for r, rec in job.assert_ok("mlp-sgd/result").items():
        assert rec["control_differs"], f"rank {r}: a sum over ranks passed the comparison"


@pytest.mark.parametrize("case", EXTRA)
def test_matches_ddp_beyond_the_plain_stack(job, case):
    """A parameter read outside its module (overlap_forward=False), weight_norm's pre-hook, a
    group without global rank 0 (BatchNorm buffers from the group's rank 0): DDP's parameters,
    bitwise at 2 ranks of the group."""
    job.assert_ok(case)


@pytest.mark.parametrize("case", ERRORS)
def test_error_raises(job, case):
    job.assert_ok(f"error/{case}")


def test_trains_after_errors_and_exits(job):
    job.assert_ok("error/still-trains-after-errors")
    job.assert_ok("barrier-at-end")
    job.assert_clean_exit()


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_rank_exits_and_peer_raises(backend, tmp_path):
    if backend == "glucx":
        backend_harness.glucx_importable_or_fail()
    job = backend_harness.spawn("peer_dies", 2, str(tmp_path), timeout_s=90, backend=backend,
                                jobs_module="scheduled_jobs")
    backend_harness.assert_rank1_failed_and_rank0_raised(job, "raises-after-peer-died")


def test_plan_order():
    """P3's rule on one link, hand-computed: whenever the link is free, the ready partition of
    highest priority (smallest value) goes; otherwise wait for the next to become ready."""
    backend_harness.glucx_importable_or_fail()
    from glucx.torch import plan_order
    # backward order 0,1,2,3 (3 = first layer: priority 0); partition 0 takes 5 s, so 1 and 2
    # queue behind it; 3 is ready at 4 s, before the link frees at 5 s, and jumps both
    assert plan_order([0, 1, 2, 4], [5, 1, 1, 1], [3, 2, 1, 0]) == [0, 3, 2, 1]
    # a fast link: nothing queues, the backward order stays
    assert plan_order([0, 1, 2, 4], [0.1, 0.1, 0.1, 0.1], [3, 2, 1, 0]) == [0, 1, 2, 3]
    # idle link: jump to the next ready time; equal priorities: the lower index first
    assert plan_order([3, 3, 10], [1, 1, 1], [1, 1, 0]) == [0, 1, 2]
    assert plan_order([], [], []) == []
    with pytest.raises(ValueError, match="3 ready times, 2 durations"):
        plan_order([0, 1, 2], [1, 1], [0, 1, 2])


def run_digits_example(tmp_path, mode, args, timeout_s):
    """examples/train_digits.py --mode mode *args on 2 ranks under the venv's torchrun (glucx
    backend); @return its --json output, after checking the exit status, the mode and the ranks
    recorded there."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from gloo_harness import free_port, time_scale

    backend_harness.glucx_importable_or_fail()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out = tmp_path / "train.json"
    cmd = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--nproc-per-node", "2",
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
           os.path.join(root, "examples", "train_digits.py"), "--mode", mode, *args,
           "--json", str(out)]
    what = f"train_digits --mode {mode} {' '.join(args)}"
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, cwd=str(tmp_path))
    try:
        log, _ = p.communicate(timeout=timeout_s * time_scale())
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        log, _ = p.communicate()
        raise AssertionError(f"{what} did not finish:\n{log[-3000:]}")
    assert p.returncode == 0, f"{what}: exit {p.returncode}\n{log[-3000:]}"
    res = json.load(open(out))
    assert res["mode"] == mode and res["ranks"] == 2, res
    return res


@pytest.mark.parametrize("mode", ["ddp", "scheduled", "sharded"])
def test_digits_example_each_mode(mode, tmp_path):
    """examples/train_digits.py --mode M (issue 18 item 5: every mode with one flag): 2 ranks
    under the venv's torchrun, 2 epochs on the glucx backend, learn the digits (test accuracy
    >= 0.85, the last epoch's loss below the first's), as `make demo` checks for DDP."""
    res = run_digits_example(tmp_path, mode, ["--epochs", "2"], 240)
    assert res["model"] == "cnn", res
    assert res["accuracy"] >= 0.85, res
    assert res["loss_last_epoch"] < res["loss_first_epoch"], res


@pytest.mark.parametrize("mode", ["ddp", "scheduled", "sharded"])
def test_digits_example_resnet18_each_mode(mode, tmp_path):
    """examples/train_digits.py --model resnet18 --mode M (issue 18 item 5: the ResNet-18-class
    model, BatchNorm buffers broadcast by each wrapper): 2 ranks, batch 16, 48 steps (the first
    epoch's 42 and 6 of the second), learn the digits: the second epoch's mean loss below the
    first's and a test accuracy (BatchNorm in eval mode) >= 0.5. Measured: 90.7 % (ddp and
    scheduled, bitwise equal here) and 90.2 % (sharded), epoch losses 0.570 then 0.278; 32 s
    (scheduled), 62 s (ddp) and 87 s (sharded) per case on 2 cores shared with another test run.
    The floor leaves room for the accuracy's swings from step to step at this stage (it moved
    between 72 % and 87 % over 5 steps in a run before the short last batches were dropped)."""
    res = run_digits_example(tmp_path, mode, ["--model", "resnet18", "--batch-size", "16",
                                              "--epochs", "2", "--max-steps", "48"], 480)
    assert res["model"] == "resnet18" and res["steps"] == 48, res
    assert res["accuracy"] >= 0.5, res
    assert res["loss_last_epoch"] < res["loss_first_epoch"], res
