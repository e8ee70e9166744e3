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
          "shape-differs", "parameter-used-outside-its-module", "bad-optimizer",
          "preempt-chunk-bytes"]
EXTRA = ["functional-no-overlap", "weight-norm", "group-without-rank-0", "auto-partitions",
         "lr-scheduler", "sync-between-forward-and-backward", "preempt-chunks"]


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


HOOK_CASES = [f"hook-{m}-{o}" for m in ("mlp", "bn") for o in ("sgd", "adam")] + ["hook-wide-sgd"]


@pytest.mark.parametrize("case", HOOK_CASES)
def test_comm_hook_matches_ddp(job, case):
    """priority_comm_hook: DDP's parameters (bitwise at 2 ranks), the same on every rank and
    with skewed timings, one plan on every rank (over several buckets for the wide model)."""
    recs = job.assert_ok(f"{case}/result")
    assert len({rec["param_sha256"] for rec in recs.values()}) == 1, f"{case}: ranks differ"
    assert len({tuple(rec["plan"]) for rec in recs.values()}) == 1, f"{case}: plans differ"
    for r, rec in recs.items():
        assert rec["planned"] and rec["nparts"] >= 3, rec
        assert sorted(rec["plan"]) == list(range(rec["nparts"])), rec
        if case == "hook-wide-sgd":
            assert rec["nbuckets"] >= 3 and rec["nparts"] > rec["nbuckets"], rec
        assert rec["skewed_param_sha256"] == rec["param_sha256"], f"rank {r}: skew changed it"
        if job.world == 2:
            assert rec["param_sha256"] == rec["ddp_param_sha256"], f"rank {r}: not DDP's"


def test_auto_partitions_one_choice_on_every_rank(job):
    """partition_bytes="auto": every rank chose the same partitioning (the cheapest predicted),
    one optimizer per parameter (4 layers' weights and biases, BatchNorm's 2)."""
    recs = job.assert_ok("auto-partitions/result")
    assert len({(rec["chosen"], rec["nparts"], tuple(rec["plan"])) for rec in recs.values()}) \
        == 1, recs
    for rec in recs.values():
        assert rec["planned"] and rec["chosen_cost"] == rec["best_cost"], rec
        assert rec["noptimizers"] == 8 and 1 <= rec["nparts"] <= 8, rec


@pytest.mark.parametrize("case", ["bad-partition-bytes", "second-hook-refused"])
def test_comm_hook_errors(job, case):
    job.assert_ok(f"hook/{case}")


@pytest.mark.parametrize("case", EXTRA)
def test_matches_ddp_beyond_the_plain_stack(job, case):
    """A parameter read outside its module (overlap_forward=False), weight_norm's pre-hook, a
    group without global rank 0 (BatchNorm buffers from the group's rank 0): DDP's parameters,
    bitwise at 2 ranks of the group."""
    job.assert_ok(case)


def test_preempt_chunks_planned_and_thread_setting_restored(job):
    """The preempt-chunks run trained from a plan (its allreduces were started with priorities)
    and left the training thread without a collective priority."""
    recs = job.assert_ok("preempt-chunks/result")
    for rec in recs.values():
        assert rec["planned"] is True and rec["nparts"] >= 3, rec
        assert rec["thread_priority_after"] is None, rec


def test_coll_priority_context():
    """coll_priority sets the calling thread's priority for collectives on glucx groups, nests,
    restores on exit (also after an exception), and refuses bad values."""
    import glucx.torch
    from glucx import _C
    assert _C._get_coll_priority() is None
    with glucx.torch.coll_priority(3, 4096):
        assert _C._get_coll_priority() == (3, 4096)
        with pytest.raises(KeyError):
            with glucx.torch.coll_priority(-7):
                assert _C._get_coll_priority() == (-7, 0)
                raise KeyError("inside")
        assert _C._get_coll_priority() == (3, 4096)
        with glucx.torch.coll_priority(None):
            assert _C._get_coll_priority() is None
        assert _C._get_coll_priority() == (3, 4096)
    assert _C._get_coll_priority() is None
    for bad, kw in [(1 << 31, {}), (1.5, {}), (True, {}), (1, {"chunk_bytes": -1})]:
        with pytest.raises(ValueError):
            glucx.torch.coll_priority(bad, **kw)
    with pytest.raises(ValueError, match="32-bit"):
        _C._set_coll_priority(1 << 40)


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


def test_predict_exposed_and_order_decisions():
    """The order decisions' cost model, hand-computed. Partitions 0,1,2 ready at 0,1,2 s, 2 s
    each; partition 2 holds the first layer (priority 0), 1 the second, 0 the third; backward
    ends at 3 s, each module's forward takes 1 s."""
    backend_harness.glucx_importable_or_fail()
    from glucx.torch import order_decisions, plan_order, predict_exposed
    ready, dur, prio, fwd, bwd = [0, 1, 2], [2, 2, 2], [2, 1, 0], [1, 1, 1], 3
    assert plan_order(ready, dur, prio) == [0, 2, 1]
    # [0,2,1] completes 0,2,1 at 2,4,6 s: module 0 starts at 4 (ends 5), module 1 at 6 (ends
    # 7), module 2 at 7 (ends 8): 8 - 3 - 3 = 2 s exposed
    assert predict_exposed([0, 2, 1], ready, dur, prio, fwd, bwd) == 2
    # [0,1,2] completes 2 last, at 6 s: module 0 waits until 6: 9 - 6 = 3 s exposed
    assert predict_exposed([0, 1, 2], ready, dur, prio, fwd, bwd) == 3
    # a fast link: nothing waits
    assert predict_exposed([0, 1, 2], ready, [0.1] * 3, prio, fwd, bwd) == 0
    # a partition no module uses (priority 3 = past the last module) delays nothing
    assert predict_exposed([0], [0], [100], [3], fwd, bwd) == 0
    # position 0: only partition 0 is ready; position 1: 2 and 1 are (2 first, by priority),
    # 1 instead of 2 there costs 3 s; position 2: 1 is left
    assert order_decisions(ready, dur, prio, fwd, bwd) == [
        (0, [0], [2_000_000_000]), (2, [2, 1], [2_000_000_000, 3_000_000_000]),
        (1, [1], [2_000_000_000])]
    assert order_decisions(ready, dur, prio, fwd, bwd, max_options=1)[1] == \
        (2, [2], [2_000_000_000])


def test_choose_partitions():
    """partition_bytes="auto"'s choice, hand-computed. Four parameters of 1 MiB (backward order:
    0 ready at 0 s .. 3 at 0.3 s; 3 holds the first layer), each profiled at 0.11 s: one size,
    so alpha 0 and beta 0.11 s per MiB. Backward ends at 0.3 s, each of the 4 modules' forward
    takes 0.1 s. Costs: the unhidden communication of each candidate."""
    backend_harness.glucx_importable_or_fail()
    from glucx.torch import choose_partitions
    mib = 1 << 20
    nbytes, ready = [mib] * 4, [0.0, 0.1, 0.2, 0.3]
    dur, prio, fwd, bwd = [0.11] * 4, [3, 2, 1, 0], [0.1] * 4, 0.3
    groups, ids, costs, chosen, (alpha, beta) = choose_partitions(nbytes, ready, dur, prio,
                                                                  fwd, bwd)
    assert alpha == 0 and abs(beta * mib - 0.11) < 1e-12
    by = dict(zip(ids, costs))

    def near(got, want_s):   # ns, rounded from float seconds
        return abs(got - round(want_s * 1e9)) <= 1

    # uniform 1 MiB (4 partitions, 0.11 s each): the link sends 0..3 at [0, .11), [.11, .22),
    # [.22, .33), [.33, .44); forward from .3: module 0 needs 3 (done .44) -> ends .54, modules
    # 1-3 (done .33, .22, .11) -> .84: exposed .14; link ends .44 < .84: unhidden 0.14 s
    assert near(by[1024], 0.14)
    # one partition of 4 MiB (0.44 s) ready at .3: done .74: forward .74 .. 1.14: 0.44 s
    assert near(by[0], 0.44)
    # uniform 2 MiB: {0,1} ready .1, 0.22 s -> .32; {2,3} ready .3 -> .32 .. .54; module 0
    # waits until .54 -> forward ends .94: 0.24 s
    assert near(by[2048], 0.24)
    # growing from 1 MiB packs from the first layer: {3}, {2,1} (2 MiB), {0}: the link: {0}
    # [0, .11), {1,2} ready .2 [.2, .42), {3} [.42, .53): forward .63, .73, .83, .93: 0.23 s
    assert near(by[-1024], 0.23)
    # growing from 512 KiB: {3}, {2}, {1,0}: {0,1} [.1, .32), then {3} (priority 0) before
    # {2}: [.32, .43), {2} [.43, .54): forward .43 -> .53, module 1 waits for .54 -> .64, .74,
    # .84: 0.14 s, as uniform 1 MiB and the smaller caps (one partition per parameter); within
    # 1 us the fewer partitions win: growing from 512 KiB's 3
    assert near(by[-512], 0.14)
    assert chosen == -512 and groups == [[0, 1], [2], [3]]
    assert all(c >= by[-512] - 1000 for c in costs)
    # the fit, with two sizes: 1 MiB in 0.11 s, 2 MiB in 0.21 s: alpha 10 ms, beta 0.1 s/MiB
    _, _, _, _, (alpha, beta) = choose_partitions([mib, 2 * mib], [0, 0], [0.11, 0.21], [1, 0],
                                                  [0.1, 0.1], 0.1)
    assert abs(alpha - 0.01) < 1e-12 and abs(beta * mib - 0.1) < 1e-12


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
