"""Every collective and point-to-point operation of ProcessGroupGloo over glucx, 2 and 4 ranks.

One torch.multiprocessing launch per world size runs every check (gloo_jobs.collectives); the
tests below each assert a group of its records: the result was right on every rank and glucx's
counters show the bytes the operation must move on that rank.
"""
import pytest

import gloo_harness
import gloo_jobs
from gloo_jobs import BIG, DTYPE_OPS, SIZES, dname


@pytest.fixture(scope="module", params=[2, 4], ids=lambda p: f"{p}ranks")
def job(request, transport, counters_mode, tmp_path_factory):
    world = request.param
    out = tmp_path_factory.mktemp(f"collectives{world}")
    return gloo_harness.spawn("collectives", world, str(out), transport, counters_mode,
                              timeout_s=150)


def ok(job, *names, ranks=None):
    for n in names:
        job.assert_ok(n, ranks)


ALL_REDUCE = [(dname(d), op) for d, ops in DTYPE_OPS.items() for op in ops]


@pytest.mark.parametrize("dtype,op", ALL_REDUCE, ids=[f"{d}-{o}" for d, o in ALL_REDUCE])
def test_all_reduce(job, dtype, op):
    ok(job, *[f"all_reduce/{dtype}/{op}/n={n}" for n in SIZES])


def test_all_reduce_complex64_sum(job):
    ok(job, "all_reduce/complex64/SUM/n=1", "all_reduce/complex64/SUM/n=1031")


def test_all_reduce_4MiB(job):
    ok(job, f"all_reduce/float32/SUM/n={BIG}")


def test_all_reduce_async_outstanding(job):
    ok(job, "all_reduce/async/4-outstanding")


@pytest.mark.parametrize("dtype", [dname(d) for d in gloo_jobs.ALL_GATHER_DTYPES])
def test_all_gather(job, dtype):
    ok(job, *[f"all_gather/{dtype}/n={n}" for n in SIZES])


def test_broadcast_nonzero_root(job):
    names = job.names("broadcast/")
    assert len(names) == 4, names
    assert all(n.startswith(f"broadcast/root={job.world - 1}/") for n in names)
    ok(job, *names)


def test_reduce(job):
    names = job.names("reduce/")
    assert len(names) == 4, names
    ok(job, *names)


def test_gather(job):
    names = job.names("gather/")
    assert len(names) == 2, names
    ok(job, *names)


def test_scatter(job):
    names = job.names("scatter/")
    assert len(names) == 2, names
    ok(job, *names)


def test_all_to_all_single_even(job):
    ok(job, *[f"all_to_all_single/even/float32/k={k}" for k in (1, 1031, 65537)])


def test_all_to_all_single_uneven(job):
    ok(job, "all_to_all_single/uneven/float32/scale=1",
       "all_to_all_single/uneven/float32/scale=4099")


def test_barrier(job):
    ok(job, "barrier")


def test_monitored_barrier(job):
    ok(job, "monitored_barrier")


def test_send_recv(job):
    ok(job, "send_recv/ring/n=3", f"send_recv/ring/n={1 << 20}")


def test_isend_irecv(job):
    ok(job, "isend_irecv/ring/n=3", f"isend_irecv/ring/n={1 << 20}", "isend/tags-out-of-order")


def test_recv_any_source(job):
    ok(job, "recv/any-source/n=9", f"recv/any-source/n={1 << 19}")


def test_new_group(job):
    if job.world >= 4:
        ok(job, "new_group/pairs-concurrently/all_reduce")
        ok(job, "new_group/[1,2,3]/broadcast-from-3", "new_group/[1,2,3]/all_gather",
           ranks=[1, 2, 3])
    else:
        ok(job, "new_group/[0,1]/all_reduce")
        ok(job, "new_group/[1]/all_reduce", ranks=[1])
    ok(job, "default-group-after-subgroups")


def test_zero_elements(job):
    ok(job, "zero/all_reduce", "zero/broadcast", "zero/send_recv")


def test_every_check_counted(job, counters_mode):
    """Each check (but the single-rank group's) needed bytes on some rank, and in the UCX run the
    counters were read for every check: no check passed without the transport check."""
    free = {"new_group/[1]/all_reduce", "zero/all_reduce", "zero/broadcast", "job"}
    for name, recs in job.checks.items():
        if name in free:
            continue
        if counters_mode == "require":
            assert all(r.get("counters") == "require" and r.get("delta") is not None
                       for r in recs.values()), f"{name}: counters not read: {recs}"
        assert any(r.get("need") for r in recs.values()), f"{name}: nothing required of any rank"


def test_job_finished_cleanly(job):
    ok(job, "job")
    job.assert_clean_exit()
