"""Every operation of the `glucx` torch.distributed backend x dtype x ReduceOp, 2 and 4 ranks.

One spawn per world size runs all checks (backend_jobs.ops); the tests below each assert a group of
its records: the result was right on every rank, compared with a reference computed locally from
every rank's closed-form input. Also: async work and futures, tensor layouts, 0-element tensors,
sparse/meta tensors, no_grad/inference_mode, subgroups made with new_group(backend="glucx").
"""
import pytest

import backend_harness
import backend_jobs
from backend_harness import ok
from backend_jobs import ALL_REDUCE_SIZES, BIG, DTYPES, MOVE_SIZES, PAIRS, dname

PAIR_IDS = [f"{dname(d)}-{o}" for d, o in PAIRS]
PAIR_NAMES = [(dname(d), o) for d, o in PAIRS]
DTYPE_NAMES = [dname(d) for d in DTYPES]

# ProcessGroupGloo (development mode only) kills every rank with SIGFPE on a 0-element all_gather
GLOO_SKIP = ["zero/all_gather"]


@pytest.fixture(scope="module", params=[2, 4], ids=lambda p: f"{p}ranks")
def job(request, tmp_path_factory):
    backend_harness.glucx_importable_or_fail()
    world = request.param
    out = tmp_path_factory.mktemp(f"backend-ops{world}")
    skip = GLOO_SKIP if backend_harness.BACKEND == "gloo" else []
    return backend_harness.spawn("ops", world, str(out), params={"skip": skip}, timeout_s=300)


def test_barrier(job):
    ok(job, "barrier")


@pytest.mark.parametrize("dtype,op", PAIR_NAMES, ids=PAIR_IDS)
def test_all_reduce(job, dtype, op):
    ok(job, *[f"all_reduce/{dtype}/{op}/n={n}" for n in ALL_REDUCE_SIZES])


def test_all_reduce_1MiB(job):
    ok(job, f"all_reduce/float32/SUM/n={BIG}")


@pytest.mark.parametrize("dtype,op", PAIR_NAMES, ids=PAIR_IDS)
def test_all_reduce_coalesced(job, dtype, op):
    ok(job, f"all_reduce_coalesced/{dtype}/{op}")


@pytest.mark.parametrize("dtype,op", PAIR_NAMES, ids=PAIR_IDS)
def test_reduce(job, dtype, op):
    ok(job, f"reduce/{dtype}/{op}")


@pytest.mark.parametrize("dtype,op", PAIR_NAMES, ids=PAIR_IDS)
def test_reduce_leaves_non_root_input(job, dtype, op):
    ok(job, f"reduce-nonroot-input/{dtype}/{op}")


@pytest.mark.parametrize("dtype,op", PAIR_NAMES, ids=PAIR_IDS)
def test_reduce_scatter(job, dtype, op):
    ok(job, f"reduce_scatter/{dtype}/{op}")


@pytest.mark.parametrize("dtype,op", PAIR_NAMES, ids=PAIR_IDS)
def test_reduce_scatter_tensor(job, dtype, op):
    ok(job, f"reduce_scatter_tensor/{dtype}/{op}")


def test_reduce_scatter_base_1MiB(job):
    ok(job, f"_reduce_scatter_base/float32/SUM/n={BIG}")


def _moves(dtype):
    return [n for n in MOVE_SIZES] + ([BIG] if dtype == "float32" else [])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_all_gather(job, dtype):
    ok(job, *[f"all_gather/{dtype}/n={n}" for n in _moves(dtype)])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_all_gather_into_tensor(job, dtype):
    ok(job, *[f"all_gather_into_tensor/{dtype}/n={n}" for n in _moves(dtype)])


def test_all_gather_base(job):
    ok(job, "_all_gather_base/int64")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_broadcast(job, dtype):
    names = [f"broadcast/root={root}/{dtype}/n={n}" for root in sorted({0, job.world - 1})
             for n in _moves(dtype)]
    ok(job, *names)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_gather(job, dtype):
    ok(job, *[f"gather/dst=1/{dtype}/n={n}" for n in _moves(dtype)])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_scatter(job, dtype):
    ok(job, *[f"scatter/src={job.world - 1}/{dtype}/n={n}" for n in _moves(dtype)])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_all_to_all_single_even(job, dtype):
    ok(job, *[f"all_to_all_single/even/{dtype}/k={k}" for k in _moves(dtype)])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_all_to_all_single_uneven_splits(job, dtype):
    ok(job, *[f"all_to_all_single/uneven/{dtype}/scale={s}" for s in (1, 601)])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_all_to_all(job, dtype):
    ok(job, *[f"all_to_all/{dtype}/scale={s}" for s in (1, 601)])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_send_recv(job, dtype):
    ok(job, *[f"send_recv/ring/{dtype}/n={n}" for n in _moves(dtype)])


def test_isend_irecv(job):
    ok(job, "isend_irecv/ring/float64/n=3", f"isend_irecv/ring/float64/n={BIG}")


def test_tags_received_out_of_order(job):
    ok(job, "isend/tags-out-of-order")


def test_recv_any_source(job):
    ok(job, "recv/any-source/n=9", f"recv/any-source/n={1 << 19}", "irecv/any-source/source")


@pytest.mark.parametrize("name", ["4-outstanding-waited-in-reverse", "get_future-wait",
                                  "get_future-then", "does-not-block-the-caller",
                                  "all_gather_into_tensor-future",
                                  "reduce_scatter_tensor-future",
                                  "broadcast-and-all_to_all_single-outstanding"])
def test_async(job, name):
    ok(job, f"async/{name}")


LAYOUTS = ["all_reduce/transposed", "all_reduce/strided-slice", "all_reduce/storage-offset",
           "broadcast/column", "all_gather/strided-input-offset-outputs",
           "all_gather_into_tensor/offset-views", "reduce_scatter_tensor/offset-views",
           "send_recv/strided"]


@pytest.mark.parametrize("case", LAYOUTS)
def test_layout_right_values_or_clear_error(job, case):
    """Non-contiguous inputs and views with a storage offset: right values (and the storage
    around the view untouched) or an error naming the requirement; never silently wrong data."""
    ok(job, f"layout/{case}")


ZERO_OPS = ["all_reduce", "all_reduce_coalesced", "broadcast", "reduce", "all_gather",
            "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
            "all_to_all_single", "all_to_all", "gather", "scatter", "send_recv"]


@pytest.mark.parametrize("op", ZERO_OPS)
def test_zero_elements(job, op):
    ok(job, f"zero/{op}")


def test_group_works_after_zero_element_calls(job):
    ok(job, "zero/then-all_reduce")


@pytest.mark.parametrize("case", ["sparse/all_reduce", "sparse/broadcast", "meta/all_reduce",
                                  "meta/all_gather"])
def test_invalid_tensor_refused(job, case):
    """Sparse and meta tensors: an error on every rank that names what is required."""
    ok(job, f"invalid/{case}")


def test_group_works_after_invalid_tensors(job):
    ok(job, "invalid/then-all_reduce")


@pytest.mark.parametrize("mode", ["no_grad/leaf-requiring-grad", "inference_mode"])
def test_grad_modes(job, mode):
    ok(job, f"grad/{mode}")


def test_subgroups(job):
    if job.world >= 4:
        ok(job, "subgroup/pairs-concurrently/all_reduce")
        ok(job, "subgroup/[1,2,3]/broadcast-from-global-3", "subgroup/[1,2,3]/all_gather",
           "subgroup/[1,2,3]/reduce-to-global-2",
           "subgroup/[1,2,3]/gather-to-global-1-scatter-from-global-3",
           "subgroup/[1,2,3]/reduce_scatter_tensor-and-all_to_all_single",
           "subgroup/[1,2,3]/send-recv-global-ranks-and-barrier", ranks=[1, 2, 3])
        ok(job, "subgroup/non-member-call-is-a-no-op", ranks=[0])
    else:
        ok(job, "subgroup/[0,1]/all_reduce")
        ok(job, "subgroup/[1]/single-rank-ops", ranks=[1])
    ok(job, "subgroup/default-group-after-subgroups")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_bitwise_ops_on_floats_refused(job, dtype):
    ok(job, *[f"rejected/{dtype}/{op}" for op in ("BAND", "BOR", "BXOR")])


def test_group_works_after_refusals(job):
    ok(job, "rejected/then-all_reduce")


def test_glucx_runs_the_collectives(job):
    if job.backend_under_test != "glucx":
        pytest.skip("glucx's counters only move with the glucx backend")
    ok(job, "glucx/stats-count-the-collective")


def test_every_check_reported(job):
    """No check in the job is left unasserted by the tests above (a new check needs a test)."""
    import sys

    asserted_prefixes = ("barrier", "all_reduce/", "all_reduce_coalesced/", "reduce/",
                         "reduce-nonroot-input/", "reduce_scatter/", "reduce_scatter_tensor/",
                         "_reduce_scatter_base/", "all_gather/", "all_gather_into_tensor/",
                         "_all_gather_base/", "broadcast/", "gather/", "scatter/",
                         "all_to_all_single/", "all_to_all/", "send_recv/", "isend_irecv/",
                         "isend/", "recv/", "irecv/", "async/", "layout/", "zero/", "invalid/",
                         "grad/", "subgroup/", "rejected/", "glucx/", "job")
    stray = [n for n in job.checks if not n.startswith(asserted_prefixes)]
    assert not stray, f"checks no test asserts: {stray}"
    assert len(job.checks) > 500, (len(job.checks), sys.executable)


def test_job_finished_cleanly(job):
    ok(job, "job")
    job.assert_clean_exit()


def test_reference_is_not_the_input():
    """The references can fail: for every pair, the reduction of 2 and 4 ranks' inputs differs
    from each rank's own input (a backend that did nothing would not pass)."""
    for world in (2, 4):
        for dtype, op in PAIRS:
            for n in (1031,):
                ins = [backend_jobs.make(op, q, n, dtype) for q in range(world)]
                want = backend_jobs.reference(op, ins)
                assert all(not bool((want == x).all()) for x in ins), (world, dtype, op)
