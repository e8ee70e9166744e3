"""A short DistributedDataParallel training run over the `glucx` backend, 2 and 4 ranks.

Small MLP, small buckets (several per step), one no_sync micro-batch, uneven inputs through
join() (rank r has 6 + 2r batches), a DataLoader with 2 workers forked after init_process_group.
Trained twice per launch: through DDP's own all_reduce, and with the fp16-compression comm hook
(the all_reduce Work's future and then()). Checked: the parameters are bitwise identical on every
rank after every step (SHA-256 of their bytes), they match the same training computed locally
without communication (mean of all ranks' gradients per step), and the evaluation loss falls.
"""
import pytest

import backend_harness
from backend_harness import ok


@pytest.fixture(scope="module", params=[2, 4], ids=lambda p: f"{p}ranks")
def job(request, tmp_path_factory):
    backend_harness.glucx_importable_or_fail()
    world = request.param
    out = tmp_path_factory.mktemp(f"backend-ddp{world}")
    return backend_harness.spawn("ddp", world, str(out), timeout_s=180)


KINDS = ["ddp", "ddp-fp16-hook"]


@pytest.mark.parametrize("kind", KINDS)
def test_ddp_trains(job, kind):
    ok(job, f"{kind}/construct", f"{kind}/train")
    for r, rec in job.assert_ok(f"{kind}/steps").items():
        assert rec["steps"] == 5 + 2 * r, (r, rec["steps"])  # (6 + 2r batches) - 1 no_sync


@pytest.mark.parametrize("kind", KINDS)
def test_parameters_bitwise_identical_after_every_step(job, kind):
    """After step k the parameters are the same bytes on every rank that took step k (the ranks
    that joined early stop stepping), and at the end on every rank."""
    steps = {r: rec["step_sha256"] for r, rec in job.assert_ok(f"{kind}/steps").items()}
    for k in range(max(len(s) for s in steps.values())):
        at_k = {r: s[k] for r, s in steps.items() if len(s) > k}
        assert len(set(at_k.values())) == 1, f"step {k}: parameters differ across ranks: {at_k}"
    final = {r: rec["sha256"] for r, rec in job.assert_ok(f"{kind}/result").items()}
    assert len(set(final.values())) == 1, f"parameters differ across ranks: {final}"
    # the last rank took every step: its last step's parameters are the final ones
    last = job.world - 1
    assert steps[last][-1] == final[last]


@pytest.mark.parametrize("kind", KINDS)
def test_parameters_match_local_reference(job, kind):
    ok(job, f"{kind}/matches-local-reference")


@pytest.mark.parametrize("kind", KINDS)
def test_loss_falls(job, kind):
    for r, rec in job.assert_ok(f"{kind}/result").items():
        before, after = rec["eval_loss_before"], rec["eval_loss_after"]
        assert after < 0.8 * before, f"rank {r}: evaluation loss {before:.4f} -> {after:.4f}"


def test_ddp_job_exits(job):
    ok(job, "ddp/barrier-after-training", "job")
    job.assert_clean_exit()
