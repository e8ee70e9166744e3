"""Rank-side jobs of the `glucx` backend suite (run inside ranks started by backend_harness).

The jobs use the public torch.distributed API only: init_process_group(backend), new_group(...,
backend=backend) and the collective and point-to-point calls. `backend` is "glucx" in the suite
and "gloo" only while developing the suite (TORCH_SUITE_BACKEND=gloo).

Every check is one record, written as a JSON line as soon as it finishes (gloo_jobs.RankContext):
name, ok, detail (why it failed), elapsed_s, plus extra fields some checks add.
Expected values never come from the operation under test: every rank rebuilds every other rank's
input from a closed form in (rank, index) and computes the result with local torch ops
(torch.add, torch.minimum, torch.bitwise_xor, ...). Values are small integers so sums, averages
and products over 4 ranks are exact in every dtype, including float16, bfloat16 and int8.
"""
import datetime
import functools
import hashlib
import os
import re
import signal
import time
import warnings

import torch
import torch.distributed as dist

from gloo_harness import time_scale
from gloo_jobs import RankContext, dname, expect_equal  # noqa: F401 - RankContext for the harness

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
I8, U8, I32, I64 = torch.int8, torch.uint8, torch.int32, torch.int64
FLOATS = (F16, BF16, F32, F64)
INTS = (I8, U8, I32, I64)
DTYPES = FLOATS + INTS + (torch.bool,)


def ops_for(dtype):
    """The ReduceOps each dtype is tested with: the bitwise ops need integers (bool included);
    AVG is defined for floating point only."""
    if dtype in FLOATS:
        return ("SUM", "PRODUCT", "MIN", "MAX", "AVG")
    return ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")


PAIRS = [(d, op) for d in DTYPES for op in ops_for(d)]
ALL_REDUCE_SIZES = (1, 1031, 70001)
BIG = 262147  # float32 elements: 1 MiB and a bit, odd so any chunking is uneven


def red_op(name):
    return getattr(dist.ReduceOp, name)


def init(ctx, backend, timeout_s=30 * time_scale(), **kw):
    if "init_method" not in kw:
        kw["rank"], kw["world_size"] = ctx.rank, ctx.world
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s), **kw)


def side_store(ctx, timeout_s=60 * time_scale()):
    """A client of the rendezvous store (MASTER_PORT): coordination that must not go through the
    backend under test."""
    return dist.TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), ctx.world, False,
                         timeout=datetime.timedelta(seconds=timeout_s))


# ---- inputs in closed form -----------------------------------------------------------------------

def make(opname, rank, n, dtype, salt=0):
    """Rank `rank`'s input of `n` elements for a reduction with `opname`. SUM/AVG/MIN/MAX: -5..5
    (0..10 unsigned); PRODUCT: |v| in 1..3; bitwise: hashed bits over the whole range of the type.
    bool: bit (rank mod 4) of a 4-bit pattern in i: over i, every combination of 4 ranks occurs."""
    i = torch.arange(n, dtype=torch.int64)
    q = rank + 5 * salt
    if dtype == torch.bool:
        h = (i * 37 + 11 + 3 * salt) % 16
        return ((h >> (rank % 4)) & 1).to(torch.bool)
    if opname in ("SUM", "AVG", "MIN", "MAX"):
        v = (q * 7 + i * 3) % 11 - 5
        if dtype == U8:
            v = v + 5
    elif opname == "PRODUCT":
        v = (q + i) % 3 + 1
        if dtype != U8:
            v = torch.where((i + q) % 4 == 0, -v, v)
    else:
        h = ((q + 1) * 2654435761 * (i + 1)) % (1 << 31)
        h = h ^ (h >> 13)
        if dtype == I8:
            v = h % 256 - 128
        elif dtype == U8:
            v = h % 256
        elif dtype == I32:
            v = h - (1 << 30)
        else:
            v = ((h << 20) ^ i) - (1 << 45)
    return v.to(dtype)


REF_FN = {"SUM": torch.add, "PRODUCT": torch.mul, "MIN": torch.minimum, "MAX": torch.maximum,
          "BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}


def reference(opname, inputs):
    """The reduction of `inputs` computed locally (AVG: the float64 sum divided by the count)."""
    if opname == "AVG":
        s = functools.reduce(torch.add, [x.to(F64) for x in inputs])
        return (s / len(inputs)).to(inputs[0].dtype)
    return functools.reduce(REF_FN[opname], inputs)


def pattern(rank, n, dtype, salt=0):
    """Data for the data-movement operations: distinct per (rank, salt), exact in every dtype."""
    i = torch.arange(n, dtype=torch.int64)
    v = rank * 1009 + salt * 131 + i * 7 + i // 97
    if dtype == torch.bool:
        return v % 5 == 0
    if dtype in (I8, F16, BF16):
        v = v % 256 - 128
    elif dtype == U8:
        v = v % 256
    elif dtype in (I32, F32):
        v = v % (1 << 24)
    return v.to(dtype)


def garbage(shape, dtype):
    """Initial contents of output buffers: never what any rank sends."""
    n = 1
    for s in shape:
        n *= s
    return pattern(91, n, dtype, salt=77).reshape(shape)


def nbytes(t):
    return t.numel() * t.element_size()


def first_line(e):
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0] if s else ''}"


# ---- the main job: every operation x dtype x ReduceOp --------------------------------------------

def ops(ctx, backend, timeout_s=30 * time_scale(), skip=()):
    """Every operation of the backend, checked against local references.

    `skip`: check-name prefixes not to run at all (used only for ProcessGroupGloo in development,
    which kills the process on some calls, e.g. a 0-element all_gather)."""
    init(ctx, backend, timeout_s)
    ctx.skip = tuple(skip)
    _barrier(ctx)
    _all_reduce(ctx)
    _all_reduce_coalesced(ctx)
    _reduce(ctx)
    _reduce_scatter(ctx)
    _all_gather(ctx)
    _broadcast(ctx)
    _gather_scatter(ctx)
    _all_to_all(ctx)
    _p2p(ctx)
    _any_source(ctx)
    _async(ctx)
    _layouts(ctx)
    _zero_elements(ctx)
    _invalid_tensors(ctx)
    _grad_modes(ctx)
    _subgroups(ctx, backend)
    _rejections(ctx, backend)
    if backend == "glucx":
        _glucx_did_the_work(ctx)
    dist.barrier()
    dist.destroy_process_group()


def _skipped(ctx, name):
    return any(name.startswith(p) for p in getattr(ctx, "skip", ()))


def _barrier(ctx):
    with ctx.check("barrier"):
        for _ in range(3):
            dist.barrier()


def _all_reduce(ctx):
    r, P = ctx.rank, ctx.world
    for dtype, op in PAIRS:
        for n in ALL_REDUCE_SIZES:
            t = make(op, r, n, dtype)
            want = reference(op, [make(op, q, n, dtype) for q in range(P)])
            name = f"all_reduce/{dname(dtype)}/{op}/n={n}"
            with ctx.check(name):
                dist.all_reduce(t, op=red_op(op))
                expect_equal(t, want, name)
    t = pattern(r, BIG, F32)
    want = reference("SUM", [pattern(q, BIG, F32) for q in range(P)])
    name = f"all_reduce/float32/SUM/n={BIG}"
    with ctx.check(name):
        dist.all_reduce(t)
        expect_equal(t, want, name)


COALESCED_SIZES = (1, 1031, 17)


def _all_reduce_coalesced(ctx):
    r, P = ctx.rank, ctx.world
    for dtype, op in PAIRS:
        ts = [make(op, r, m, dtype, salt=k) for k, m in enumerate(COALESCED_SIZES)]
        wants = [reference(op, [make(op, q, m, dtype, salt=k) for q in range(P)])
                 for k, m in enumerate(COALESCED_SIZES)]
        name = f"all_reduce_coalesced/{dname(dtype)}/{op}"
        with ctx.check(name):
            dist.all_reduce_coalesced(ts, op=red_op(op))
            for k, (t, want) in enumerate(zip(ts, wants)):
                expect_equal(t, want, f"{name}: tensor {k}")


def _reduce(ctx):
    """reduce to a non-zero root; the other ranks' inputs stay as they were (the call documents
    the root as its only output)."""
    r, P = ctx.rank, ctx.world
    dst = P - 1
    n = 1031
    for dtype, op in PAIRS:
        t = make(op, r, n, dtype)
        orig = t.clone()
        want = reference(op, [make(op, q, n, dtype) for q in range(P)])
        name = f"reduce/{dname(dtype)}/{op}"
        with ctx.check(name):
            dist.reduce(t, dst=dst, op=red_op(op))
            if r == dst:
                expect_equal(t, want, f"{name} at root {dst}")
        with ctx.check(f"reduce-nonroot-input/{dname(dtype)}/{op}"):
            if r != dst:
                expect_equal(t, orig, f"{name}: input of non-root rank {r}")


def _reduce_scatter(ctx):
    r, P = ctx.rank, ctx.world
    for dtype, op in PAIRS:
        n = 1031
        ins = [make(op, r, n, dtype, salt=j + 1) for j in range(P)]
        out = garbage((n,), dtype)
        want = reference(op, [make(op, q, n, dtype, salt=r + 1) for q in range(P)])
        name = f"reduce_scatter/{dname(dtype)}/{op}"
        with ctx.check(name):
            dist.reduce_scatter(out, ins, op=red_op(op))
            expect_equal(out, want, name)
        # the tensor form: rank j's block is rows j*m .. (j+1)*m of a 2-D input
        m = 173
        x = torch.cat([make(op, r, m * 3, dtype, salt=j + 2).reshape(m, 3) for j in range(P)])
        out = garbage((m, 3), dtype)
        want = reference(op, [make(op, q, m * 3, dtype, salt=r + 2) for q in range(P)]
                         ).reshape(m, 3)
        name = f"reduce_scatter_tensor/{dname(dtype)}/{op}"
        with ctx.check(name):
            dist.reduce_scatter_tensor(out, x, op=red_op(op))
            expect_equal(out, want, name)
    # the underscore spelling DDP-era code uses, and a big one
    x = torch.cat([pattern(r, BIG, F32, salt=j) for j in range(P)])
    out = garbage((BIG,), F32)
    want = reference("SUM", [pattern(q, BIG, F32, salt=r) for q in range(P)])
    name = f"_reduce_scatter_base/float32/SUM/n={BIG}"
    with ctx.check(name):
        dist._reduce_scatter_base(out, x)
        expect_equal(out, want, name)


MOVE_SIZES = (7, 1031)


def _moves(dtype):
    """(dtype, element count) pairs for the data-movement ops: every dtype at small sizes, and
    float32 past any eager/rendezvous threshold."""
    return [(dtype, n) for n in MOVE_SIZES] + ([(F32, BIG)] if dtype == F32 else [])


def _all_gather(ctx):
    r, P = ctx.rank, ctx.world
    for dtype in DTYPES:
        for dt, n in _moves(dtype):
            x = pattern(r, n, dt)
            outs = [garbage((n,), dt) for _ in range(P)]
            name = f"all_gather/{dname(dt)}/n={n}"
            with ctx.check(name):
                dist.all_gather(outs, x)
                for q in range(P):
                    expect_equal(outs[q], pattern(q, n, dt), f"{name}: block of rank {q}")
            # tensor form, 2-D: rank q's rows are rows q*n .. (q+1)*n
            x2 = pattern(r, 2 * n, dt, salt=3).reshape(n, 2)
            out = garbage((P * n, 2), dt)
            name = f"all_gather_into_tensor/{dname(dt)}/n={n}"
            with ctx.check(name):
                dist.all_gather_into_tensor(out, x2)
                want = torch.cat([pattern(q, 2 * n, dt, salt=3).reshape(n, 2) for q in range(P)])
                expect_equal(out, want, name)
    n = 4099
    out = garbage((P * n,), I64)
    name = "_all_gather_base/int64"
    with ctx.check(name):
        dist._all_gather_base(out, pattern(r, n, I64, salt=5))
        expect_equal(out, torch.cat([pattern(q, n, I64, salt=5) for q in range(P)]), name)


def _broadcast(ctx):
    r, P = ctx.rank, ctx.world
    for root in sorted({0, P - 1}):
        for dtype in DTYPES:
            for dt, n in _moves(dtype):
                want = pattern(root, n, dt, salt=1)
                t = want.clone() if r == root else garbage((n,), dt)
                name = f"broadcast/root={root}/{dname(dt)}/n={n}"
                with ctx.check(name):
                    dist.broadcast(t, src=root)
                    expect_equal(t, want, name)


def _gather_scatter(ctx):
    r, P = ctx.rank, ctx.world
    dst, src = 1, P - 1
    for dtype in DTYPES:
        for dt, n in _moves(dtype):
            x = pattern(r, n, dt, salt=2)
            outs = [garbage((n,), dt) for _ in range(P)] if r == dst else None
            name = f"gather/dst={dst}/{dname(dt)}/n={n}"
            with ctx.check(name):
                dist.gather(x, gather_list=outs, dst=dst)
                if r == dst:
                    for q in range(P):
                        expect_equal(outs[q], pattern(q, n, dt, salt=2),
                                     f"{name}: block of rank {q}")
                expect_equal(x, pattern(r, n, dt, salt=2), f"{name}: input changed")
            ins = [pattern(q, n, dt, salt=4) for q in range(P)] if r == src else None
            out = garbage((n,), dt)
            name = f"scatter/src={src}/{dname(dt)}/n={n}"
            with ctx.check(name):
                dist.scatter(out, scatter_list=ins, src=src)
                expect_equal(out, pattern(r, n, dt, salt=4), name)


def _splits(a, b, scale):
    """Elements rank a sends to rank b in the uneven all_to_all cases (some are zero)."""
    return ((a * 3 + b * 5 + 1) % 4) * scale


def _all_to_all(ctx):
    r, P = ctx.rank, ctx.world
    for dtype in DTYPES:
        for dt, k in _moves(dtype):
            # even splits, 1-D: block j of rank r goes to rank j
            x = torch.cat([pattern(r, k, dt, salt=j) for j in range(P)])
            out = garbage((P * k,), dt)
            want = torch.cat([pattern(q, k, dt, salt=r) for q in range(P)])
            name = f"all_to_all_single/even/{dname(dt)}/k={k}"
            with ctx.check(name):
                dist.all_to_all_single(out, x)
                expect_equal(out, want, name)
        # uneven splits with zeros, 2-D tensors split along rows
        for scale in (1, 601):
            in_splits = [_splits(r, j, scale) for j in range(P)]
            out_splits = [_splits(q, r, scale) for q in range(P)]

            def block(a, b):
                return pattern(a, 3 * _splits(a, b, scale), dtype, salt=b).reshape(-1, 3)

            x = torch.cat([block(r, j) for j in range(P)])
            out = garbage((sum(out_splits), 3), dtype)
            want = torch.cat([block(q, r) for q in range(P)])
            name = f"all_to_all_single/uneven/{dname(dtype)}/scale={scale}"
            with ctx.check(name):
                dist.all_to_all_single(out, x, output_split_sizes=out_splits,
                                       input_split_sizes=in_splits)
                expect_equal(out, want, f"{name} (in {in_splits}, out {out_splits})")
            # the list form with the same (uneven, partly empty) blocks
            ins = [block(r, j) for j in range(P)]
            outs = [garbage((_splits(q, r, scale), 3), dtype) for q in range(P)]
            name = f"all_to_all/{dname(dtype)}/scale={scale}"
            with ctx.check(name):
                dist.all_to_all(outs, ins)
                for q in range(P):
                    expect_equal(outs[q], block(q, r), f"{name}: block from rank {q}")


def _p2p(ctx):
    r, P = ctx.rank, ctx.world
    nxt, prv = (r + 1) % P, (r - 1) % P
    for dtype in DTYPES:
        for dt, n in _moves(dtype):
            x = pattern(r, n, dt, salt=6)
            got = garbage((n,), dt)
            name = f"send_recv/ring/{dname(dt)}/n={n}"
            with ctx.check(name):
                # a blocking send may wait for its receiver: even ranks send first (P is even)
                if r % 2 == 0:
                    dist.send(x, dst=nxt)
                    src = dist.recv(got, src=prv)
                else:
                    src = dist.recv(got, src=prv)
                    dist.send(x, dst=nxt)
                if src != prv:
                    raise AssertionError(f"recv from {prv} reported source {src}")
                expect_equal(got, pattern(prv, n, dt, salt=6), name)
    for n in (3, BIG):
        x = pattern(r, n, F64, salt=7)
        got = garbage((n,), F64)
        name = f"isend_irecv/ring/float64/n={n}"
        with ctx.check(name):
            works = [dist.irecv(got, src=prv), dist.isend(x, dst=nxt)]
            for w in works:
                w.wait()
            expect_equal(got, pattern(prv, n, F64, salt=7), name)
    # tags: even ranks send tag 7 (large) then tag 3 (small); odd ranks receive tag 3 first
    small, large = 5, 300007
    with ctx.check("isend/tags-out-of-order"):
        if r % 2 == 0:
            w1 = dist.isend(pattern(r, large, F32, salt=8), dst=r + 1, tag=7)
            w2 = dist.isend(pattern(r, small, F32, salt=9), dst=r + 1, tag=3)
            w2.wait()
            w1.wait()
        else:
            a, c = garbage((large,), F32), garbage((small,), F32)
            dist.recv(c, src=r - 1, tag=3)
            dist.recv(a, src=r - 1, tag=7)
            expect_equal(c, pattern(r - 1, small, F32, salt=9), "tag 3 message")
            expect_equal(a, pattern(r - 1, large, F32, salt=8), "tag 7 message")


def _any_source(ctx):
    r, P = ctx.rank, ctx.world
    for tag, n in enumerate((9, 1 << 19), start=11):
        name = f"recv/any-source/n={n}"
        with ctx.check(name):
            if r == 0:
                seen = []
                for _ in range(P - 1):
                    t = garbage((n,), F32)
                    src = dist.recv(t, tag=tag)  # src=None: from any rank
                    if not 1 <= src < P:
                        raise AssertionError(f"any-source recv reported source {src}")
                    expect_equal(t, pattern(src, n, F32, salt=10), f"{name}: from {src}")
                    seen.append(src)
                if sorted(seen) != list(range(1, P)):
                    raise AssertionError(f"sources {seen}, want each of 1..{P - 1} once")
            else:
                dist.send(pattern(r, n, F32, salt=10), dst=0, tag=tag)
    name = "irecv/any-source/source"
    with ctx.check(name):
        if r == 0:
            t = garbage((5,), I64)
            w = dist.irecv(t, tag=21)
            w.wait()
            src = w.source_rank()
            if not 1 <= src < P:
                raise AssertionError(f"any-source irecv: source_rank() {src}")
            expect_equal(t, pattern(src, 5, I64, salt=11), name)
            for _ in range(P - 2):  # the other senders' messages
                dist.recv(garbage((5,), I64), tag=21)
        else:
            dist.send(pattern(r, 5, I64, salt=11), dst=0, tag=21)


# ---- asynchronous operations -----------------------------------------------------------------

def _async(ctx):
    r, P = ctx.rank, ctx.world
    ns = (5, 4099, 65537, 17)
    ts = [pattern(r, n, F64, salt=k) for k, n in enumerate(ns)]
    wants = [reference("SUM", [pattern(q, n, F64, salt=k) for q in range(P)])
             for k, n in enumerate(ns)]
    with ctx.check("async/4-outstanding-waited-in-reverse"):
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        for w in reversed(works):
            w.wait()
        for k, (t, want) in enumerate(zip(ts, wants)):
            expect_equal(t, want, f"async all_reduce #{k} of {ns[k]} float64")
            if not works[k].is_completed():
                raise AssertionError(f"work #{k}: is_completed() is False after wait()")

    n = 1031
    t = make("MAX", r, n, I32)
    want = reference("MAX", [make("MAX", q, n, I32) for q in range(P)])
    with ctx.check("async/get_future-wait"):
        w = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
        value = w.get_future().wait()
        if not isinstance(value, list) or len(value) != 1:
            raise AssertionError(f"the future's value is {type(value).__name__} "
                                 f"{value!r:.80}, want a list with the output tensor")
        expect_equal(value[0], want, "the future's value")
        expect_equal(t, want, "all_reduce through get_future().wait()")

    t = pattern(r, n, F32, salt=3)
    want = reference("SUM", [pattern(q, n, F32, salt=3) for q in range(P)])
    with ctx.check("async/get_future-then"):
        # what DDP's default comm hook does with the future
        fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] / 2)
        half = fut.wait()
        expect_equal(half, want / 2, "then() on the all_reduce future")
        expect_equal(t, want, "all_reduce under then()")

    # the call returns before the peers have even made theirs: rank 0 issues an all_reduce and only
    # then lets the others call it (through the store, not the backend). A call that blocked until
    # the collective completed could not return (it would end with the group's timeout).
    store = side_store(ctx)
    t = pattern(r, 333, F32, salt=4)
    want = reference("SUM", [pattern(q, 333, F32, salt=4) for q in range(P)])
    with ctx.check("async/does-not-block-the-caller"):
        if r == 0:
            w = dist.all_reduce(t, async_op=True)
            done_early = w.is_completed()
            store.set("async/issued", "1")
            w.wait()
            if done_early:
                raise AssertionError("is_completed() was True before the peers called all_reduce")
        else:
            store.wait(["async/issued"])
            dist.all_reduce(t)
        expect_equal(t, want, "all_reduce issued before the peers")

    # other ops through their futures
    m = 517
    with ctx.check("async/all_gather_into_tensor-future"):
        out = garbage((P * m,), BF16)
        dist.all_gather_into_tensor(out, pattern(r, m, BF16), async_op=True).get_future().wait()
        expect_equal(out, torch.cat([pattern(q, m, BF16) for q in range(P)]), "all_gather")
    with ctx.check("async/reduce_scatter_tensor-future"):
        out = garbage((m,), I64)
        x = torch.cat([make("SUM", r, m, I64, salt=j) for j in range(P)])
        dist.reduce_scatter_tensor(out, x, async_op=True).get_future().wait()
        expect_equal(out, reference("SUM", [make("SUM", q, m, I64, salt=r) for q in range(P)]),
                     "reduce_scatter_tensor")
    with ctx.check("async/broadcast-and-all_to_all_single-outstanding"):
        b = pattern(P - 1, m, F16, salt=5) if r == P - 1 else garbage((m,), F16)
        x = torch.cat([pattern(r, m, U8, salt=j) for j in range(P)])
        out = garbage((P * m,), U8)
        w1 = dist.broadcast(b, src=P - 1, async_op=True)
        w2 = dist.all_to_all_single(out, x, async_op=True)
        w3 = dist.barrier(async_op=True)
        for w in (w3, w2, w1):
            w.get_future().wait()
        expect_equal(b, pattern(P - 1, m, F16, salt=5), "async broadcast")
        expect_equal(out, torch.cat([pattern(q, m, U8, salt=r) for q in range(P)]),
                     "async all_to_all_single")


# ---- tensor layouts --------------------------------------------------------------------------

REQUIREMENT = r"contiguous|stride|dense|offset|layout"


def _right_or_refused(run, verify, what):
    """Run `run`; either the result is right (verify passes) or the call raised an error that
    names the layout requirement. Returns which of the two happened."""
    try:
        run()
    except (RuntimeError, ValueError, TypeError) as e:
        if re.search(REQUIREMENT, str(e), re.IGNORECASE):
            return f"refused: {first_line(e)}"
        raise AssertionError(f"{what}: the error does not name the layout requirement "
                             f"({REQUIREMENT}): {first_line(e)}") from e
    verify()
    return "right values"


def _layouts(ctx):
    r, P = ctx.rank, ctx.world

    def layout_check(name, run, verify):
        with ctx.check(name):
            how = _right_or_refused(run, verify, name)
            ctx.record(name + "/outcome", True, how)

    # all_reduce of a transposed (column-major) matrix: the whole storage is the tensor
    base = make("SUM", r, 64 * 33, F32).reshape(64, 33)
    x = base.t()
    want = reference("SUM", [make("SUM", q, 64 * 33, F32).reshape(64, 33) for q in range(P)]).t()
    layout_check("layout/all_reduce/transposed", lambda: dist.all_reduce(x),
                 lambda: expect_equal(x, want, "transposed all_reduce"))

    # every other element of a vector: the elements in between must stay as they were
    base = make("MAX", r, 4001, I32)
    keep = base[1::2].clone()
    x = base[0::2]
    want = reference("MAX", [make("MAX", q, 4001, I32)[0::2] for q in range(P)])

    def strided_ok():
        expect_equal(x, want, "strided all_reduce")
        expect_equal(base[1::2], keep, "elements between the strided ones")
    layout_check("layout/all_reduce/strided-slice",
                 lambda: dist.all_reduce(x, op=dist.ReduceOp.MAX), strided_ok)

    # contiguous view with a storage offset: the rest of the storage must stay as it was
    base = make("SUM", r, 3000, F64)
    before, after = base[:100].clone(), base[1131:].clone()
    x = base[100:1131]
    want = reference("SUM", [make("SUM", q, 3000, F64)[100:1131] for q in range(P)])

    def offset_ok():
        expect_equal(x, want, "offset-view all_reduce")
        expect_equal(base[:100], before, "storage before the view")
        expect_equal(base[1131:], after, "storage after the view")
    layout_check("layout/all_reduce/storage-offset", lambda: dist.all_reduce(x), offset_ok)

    # broadcast into a column of a matrix (strided, offset)
    m = pattern(r, 300 * 4, I64, salt=1).reshape(300, 4)
    keep = m.clone()
    col = m[:, 2]
    src = P - 1
    if r == src:
        col.copy_(pattern(src, 300, I64, salt=2))
        keep = m.clone()

    def bcast_ok():
        expect_equal(col, pattern(src, 300, I64, salt=2), "broadcast into a column")
        others = [c for c in range(4) if c != 2]
        expect_equal(m[:, others], keep[:, others], "the other columns")
    layout_check("layout/broadcast/column", lambda: dist.broadcast(col, src=src), bcast_ok)

    # all_gather: non-contiguous input, outputs that are rows of one matrix (offset views)
    n = 257
    src_m = pattern(r, 2 * n, F16, salt=3).reshape(n, 2)
    x = src_m[:, 1]
    big = garbage((P + 1, n), F16)
    outs = [big[q + 1] for q in range(P)]
    row0 = big[0].clone()

    def gather_ok():
        for q in range(P):
            expect_equal(outs[q], pattern(q, 2 * n, F16, salt=3).reshape(n, 2)[:, 1],
                         f"all_gather block of rank {q}")
        expect_equal(big[0], row0, "the row before the outputs")
    layout_check("layout/all_gather/strided-input-offset-outputs",
                 lambda: dist.all_gather(outs, x), gather_ok)

    # all_gather_into_tensor / reduce_scatter_tensor with offset views as input and output
    store_ = garbage((P * n + 10,), F32)
    out = store_[10:]
    pre = store_[:10].clone()
    xin = torch.cat([garbage((3,), F32), pattern(r, n, F32, salt=4)])[3:]

    def agt_ok():
        expect_equal(out, torch.cat([pattern(q, n, F32, salt=4) for q in range(P)]),
                     "all_gather_into_tensor into an offset view")
        expect_equal(store_[:10], pre, "storage before the output view")
    layout_check("layout/all_gather_into_tensor/offset-views",
                 lambda: dist.all_gather_into_tensor(out, xin), agt_ok)

    xs = torch.cat([garbage((5,), I32)] + [make("SUM", r, n, I32, salt=j) for j in range(P)])[5:]
    holder = garbage((n + 7,), I32)
    out2 = holder[7:]

    def rst_ok():
        expect_equal(out2, reference("SUM", [make("SUM", q, n, I32, salt=r) for q in range(P)]),
                     "reduce_scatter_tensor into an offset view")
    layout_check("layout/reduce_scatter_tensor/offset-views",
                 lambda: dist.reduce_scatter_tensor(out2, xs), rst_ok)

    # send a non-contiguous tensor, receive into a strided view
    mat = pattern(r, 40 * 3, F64, salt=5).reshape(40, 3)
    sendv = mat.t()[1]  # a row of the transpose: stride 3
    recv_m = garbage((40, 3), F64)
    recv_keep = recv_m.clone()
    recvv = recv_m[:, 0]
    nxt, prv = (r + 1) % P, (r - 1) % P

    def p2p():
        if r % 2 == 0:
            dist.send(sendv, dst=nxt)
            dist.recv(recvv, src=prv)
        else:
            dist.recv(recvv, src=prv)
            dist.send(sendv, dst=nxt)

    def p2p_ok():
        expect_equal(recvv, pattern(prv, 40 * 3, F64, salt=5).reshape(40, 3).t()[1],
                     "strided send/recv")
        expect_equal(recv_m[:, 1:], recv_keep[:, 1:], "columns next to the received one")
    layout_check("layout/send_recv/strided", p2p, p2p_ok)


def _zero_elements(ctx):
    """0-element tensors: every op is a no-op that leaves correctly shaped outputs."""
    r, P = ctx.rank, ctx.world

    def shapes(ts, shape, what):
        for k, t in enumerate(ts):
            if tuple(t.shape) != shape:
                raise AssertionError(f"{what}: output {k} has shape {tuple(t.shape)}, "
                                     f"want {shape}")

    def zcheck(name, fn):
        if _skipped(ctx, name):
            ctx.record(name, True, "not run for this backend (it kills the process)",
                       skipped=True)
            return
        with ctx.check(name):
            fn()

    def all_reduce():
        t = torch.empty(0, 3)
        dist.all_reduce(t)
        shapes([t], (0, 3), "all_reduce")

    def coalesced():
        ts = [torch.empty(0), torch.empty(0, 2)]
        dist.all_reduce_coalesced(ts)
        shapes(ts[:1], (0,), "all_reduce_coalesced")
        shapes(ts[1:], (0, 2), "all_reduce_coalesced")

    def broadcast():
        t = torch.empty(0, 4, dtype=I64)
        dist.broadcast(t, src=P - 1)
        shapes([t], (0, 4), "broadcast")

    def reduce():
        t = torch.empty(0, dtype=F64)
        dist.reduce(t, dst=P - 1, op=dist.ReduceOp.MAX)
        shapes([t], (0,), "reduce")

    def all_gather():
        outs = [torch.empty(0, 3) for _ in range(P)]
        dist.all_gather(outs, torch.empty(0, 3))
        shapes(outs, (0, 3), "all_gather")

    def all_gather_into_tensor():
        out = torch.empty(0, 3)
        dist.all_gather_into_tensor(out, torch.empty(0, 3))
        shapes([out], (0, 3), "all_gather_into_tensor")

    def reduce_scatter():
        out = torch.empty(0, dtype=I32)
        dist.reduce_scatter(out, [torch.empty(0, dtype=I32) for _ in range(P)])
        shapes([out], (0,), "reduce_scatter")

    def reduce_scatter_tensor():
        out = torch.empty(0, 5)
        dist.reduce_scatter_tensor(out, torch.empty(0, 5))
        shapes([out], (0, 5), "reduce_scatter_tensor")

    def a2a_single():
        out = torch.empty(0, 2)
        dist.all_to_all_single(out, torch.empty(0, 2))
        shapes([out], (0, 2), "all_to_all_single")
        out = torch.empty(0, 2)
        dist.all_to_all_single(out, torch.empty(0, 2), output_split_sizes=[0] * P,
                               input_split_sizes=[0] * P)
        shapes([out], (0, 2), "all_to_all_single with zero splits")

    def a2a():
        outs = [torch.empty(0, 3) for _ in range(P)]
        dist.all_to_all(outs, [torch.empty(0, 3) for _ in range(P)])
        shapes(outs, (0, 3), "all_to_all")

    def gather():
        outs = [torch.empty(0) for _ in range(P)] if r == 0 else None
        dist.gather(torch.empty(0), gather_list=outs, dst=0)
        if r == 0:
            shapes(outs, (0,), "gather")

    def scatter():
        ins = [torch.empty(0, 2) for _ in range(P)] if r == P - 1 else None
        out = torch.empty(0, 2)
        dist.scatter(out, scatter_list=ins, src=P - 1)
        shapes([out], (0, 2), "scatter")

    def send_recv():
        if r == 0:
            dist.send(torch.empty(0), dst=1)
        elif r == 1:
            src = dist.recv(torch.empty(0), src=0)
            if src != 0:
                raise AssertionError(f"0-element recv from 0 reported source {src}")

    for name, fn in (("all_reduce", all_reduce), ("all_reduce_coalesced", coalesced),
                     ("broadcast", broadcast), ("reduce", reduce), ("all_gather", all_gather),
                     ("all_gather_into_tensor", all_gather_into_tensor),
                     ("reduce_scatter", reduce_scatter),
                     ("reduce_scatter_tensor", reduce_scatter_tensor),
                     ("all_to_all_single", a2a_single), ("all_to_all", a2a), ("gather", gather),
                     ("scatter", scatter), ("send_recv", send_recv)):
        zcheck(f"zero/{name}", fn)
    # the group still works after all those no-ops
    t = pattern(r, 9, F32)
    with ctx.check("zero/then-all_reduce"):
        dist.all_reduce(t)
        expect_equal(t, reference("SUM", [pattern(q, 9, F32) for q in range(P)]),
                     "all_reduce after the 0-element calls")


SPARSE_WORDS = r"sparse|dense|strided|layout"
META_WORDS = r"meta|cpu|device"


def _expect_refusal(ctx, name, fn, words):
    """fn must raise on this rank, with a message matching `words`."""
    with ctx.check(name):
        try:
            fn()
        except (RuntimeError, ValueError, TypeError, NotImplementedError) as e:
            ctx.record(name + "/error", True, first_line(e))
            if not re.search(words, str(e), re.IGNORECASE):
                raise AssertionError(f"the error does not name the requirement ({words}): "
                                     f"{first_line(e)}") from e
            return
        raise AssertionError("accepted")


def _invalid_tensors(ctx):
    """Sparse and meta tensors: a clear error on every rank (refused before any communication,
    so the ranks stay in step)."""
    def sparse():
        return torch.sparse_coo_tensor(torch.tensor([[0, 3]]), torch.tensor([1.0, 2.0]), (6,))

    _expect_refusal(ctx, "invalid/sparse/all_reduce", lambda: dist.all_reduce(sparse()),
                    SPARSE_WORDS)
    _expect_refusal(ctx, "invalid/sparse/broadcast", lambda: dist.broadcast(sparse(), src=0),
                    SPARSE_WORDS)
    _expect_refusal(ctx, "invalid/meta/all_reduce",
                    lambda: dist.all_reduce(torch.empty(6, device="meta")), META_WORDS)
    _expect_refusal(ctx, "invalid/meta/all_gather",
                    lambda: dist.all_gather([torch.empty(6, device="meta")
                                             for _ in range(ctx.world)],
                                            torch.empty(6, device="meta")), META_WORDS)
    t = pattern(ctx.rank, 9, F32)
    with ctx.check("invalid/then-all_reduce"):
        dist.all_reduce(t)
        expect_equal(t, reference("SUM", [pattern(q, 9, F32) for q in range(ctx.world)]),
                     "all_reduce after the refused calls")


def _grad_modes(ctx):
    r, P = ctx.rank, ctx.world
    n = 1031
    with ctx.check("grad/no_grad/leaf-requiring-grad"):
        p = pattern(r, n, F32).requires_grad_()
        with torch.no_grad():
            dist.all_reduce(p)
            outs = [garbage((n,), F32) for _ in range(P)]
            dist.all_gather(outs, p)
        if not p.requires_grad:
            raise AssertionError("all_reduce under no_grad dropped requires_grad")
        expect_equal(p.detach(), reference("SUM", [pattern(q, n, F32) for q in range(P)]),
                     "all_reduce under no_grad")
        for q in range(P):
            expect_equal(outs[q], reference("SUM", [pattern(s, n, F32) for s in range(P)]),
                         f"all_gather under no_grad, block {q}")
    with ctx.check("grad/inference_mode"):
        with torch.inference_mode():
            t = make("MIN", r, n, BF16)
            dist.all_reduce(t, op=dist.ReduceOp.MIN)
            expect_equal(t, reference("MIN", [make("MIN", q, n, BF16) for q in range(P)]),
                         "all_reduce under inference_mode")
            b = pattern(0, n, I64) if r == 0 else garbage((n,), I64)
            dist.broadcast(b, src=0)
            expect_equal(b, pattern(0, n, I64), "broadcast under inference_mode")
            out = garbage((P * n,), F64)
            dist.all_gather_into_tensor(out, pattern(r, n, F64))
            expect_equal(out, torch.cat([pattern(q, n, F64) for q in range(P)]),
                         "all_gather_into_tensor under inference_mode")


# ---- subgroups -------------------------------------------------------------------------------

def _subgroups(ctx, backend):
    r, P = ctx.rank, ctx.world
    if P >= 4:
        # every rank creates every group, in the same order
        pairs = [dist.new_group([0, 1], backend=backend), dist.new_group([2, 3], backend=backend)]
        trio = dist.new_group([1, 2, 3], backend=backend)
        mine = pairs[r // 2]
        members = [2 * (r // 2), 2 * (r // 2) + 1]
        n = 40009
        t = make("SUM", r, n, F32)
        with ctx.check("subgroup/pairs-concurrently/all_reduce"):
            dist.all_reduce(t, group=mine)
            expect_equal(t, reference("SUM", [make("SUM", q, n, F32) for q in members]),
                         f"all_reduce over {members}")
        tr = [1, 2, 3]
        if r in tr:
            m = 2003
            b = pattern(3, m, I32) if r == 3 else garbage((m,), I32)
            with ctx.check("subgroup/[1,2,3]/broadcast-from-global-3"):
                dist.broadcast(b, src=3, group=trio)  # src is a global rank
                expect_equal(b, pattern(3, m, I32), "broadcast in [1,2,3]")
            with ctx.check("subgroup/[1,2,3]/all_gather"):
                outs = [garbage((m,), F64) for _ in tr]
                dist.all_gather(outs, pattern(r, m, F64), group=trio)
                for k, q in enumerate(tr):
                    expect_equal(outs[k], pattern(q, m, F64), f"block {k} (rank {q})")
            with ctx.check("subgroup/[1,2,3]/reduce-to-global-2"):
                t = make("PRODUCT", r, m, I64)
                dist.reduce(t, dst=2, op=dist.ReduceOp.PRODUCT, group=trio)
                if r == 2:
                    expect_equal(t, reference("PRODUCT", [make("PRODUCT", q, m, I64)
                                                          for q in tr]), "reduce in [1,2,3]")
            with ctx.check("subgroup/[1,2,3]/gather-to-global-1-scatter-from-global-3"):
                outs = [garbage((m,), U8) for _ in tr] if r == 1 else None
                dist.gather(pattern(r, m, U8), gather_list=outs, dst=1, group=trio)
                if r == 1:
                    for k, q in enumerate(tr):
                        expect_equal(outs[k], pattern(q, m, U8), f"gather block of rank {q}")
                ins = [pattern(q, m, F16, salt=1) for q in tr] if r == 3 else None
                out = garbage((m,), F16)
                dist.scatter(out, scatter_list=ins, src=3, group=trio)
                expect_equal(out, pattern(r, m, F16, salt=1), "scatter in [1,2,3]")
            with ctx.check("subgroup/[1,2,3]/reduce_scatter_tensor-and-all_to_all_single"):
                k3 = tr.index(r)
                x = torch.cat([make("SUM", r, m, F32, salt=j) for j in range(3)])
                out = garbage((m,), F32)
                dist.reduce_scatter_tensor(out, x, group=trio)
                expect_equal(out, reference("SUM", [make("SUM", q, m, F32, salt=k3)
                                                    for q in tr]), "reduce_scatter_tensor")
                x = torch.cat([pattern(r, m, I8, salt=j) for j in range(3)])
                out = garbage((3 * m,), I8)
                dist.all_to_all_single(out, x, group=trio)
                expect_equal(out, torch.cat([pattern(q, m, I8, salt=k3) for q in tr]),
                             "all_to_all_single in [1,2,3]")
            with ctx.check("subgroup/[1,2,3]/send-recv-global-ranks-and-barrier"):
                if r == 1:
                    dist.send(pattern(1, m, F32, salt=2), dst=3, group=trio)
                elif r == 3:
                    got = garbage((m,), F32)
                    dist.recv(got, src=1, group=trio)
                    expect_equal(got, pattern(1, m, F32, salt=2), "send 1 -> 3 in [1,2,3]")
                dist.barrier(group=trio)
        else:
            with ctx.check("subgroup/non-member-call-is-a-no-op"):
                t = pattern(r, 5, F32)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    w = dist.all_reduce(t, group=trio)
                if w is not None:
                    raise AssertionError(f"a non-member's all_reduce returned {w!r}")
                expect_equal(t, pattern(r, 5, F32), "non-member's tensor")
    else:
        g = dist.new_group([0, 1], backend=backend)
        solo = dist.new_group([1], backend=backend)
        n = 65539
        t = make("SUM", r, n, F64)
        with ctx.check("subgroup/[0,1]/all_reduce"):
            dist.all_reduce(t, group=g)
            expect_equal(t, reference("SUM", [make("SUM", q, n, F64) for q in range(P)]),
                         "all_reduce over [0,1]")
        if r == 1:
            with ctx.check("subgroup/[1]/single-rank-ops"):
                t = pattern(1, 100, F32)
                dist.all_reduce(t, group=solo)
                expect_equal(t, pattern(1, 100, F32), "single-rank all_reduce")
                outs = [garbage((100,), F32)]
                dist.all_gather(outs, pattern(1, 100, F32), group=solo)
                expect_equal(outs[0], pattern(1, 100, F32), "single-rank all_gather")
                b = pattern(1, 7, I64)
                dist.broadcast(b, src=1, group=solo)
                expect_equal(b, pattern(1, 7, I64), "single-rank broadcast")
                dist.barrier(group=solo)
    t = pattern(r, 3, F32, salt=9)
    with ctx.check("subgroup/default-group-after-subgroups"):
        dist.all_reduce(t)
        expect_equal(t, reference("SUM", [pattern(q, 3, F32, salt=9) for q in range(P)]),
                     "all_reduce on the default group after subgroups")


BITWISE_WORDS = r"band|bor|bxor|bitwise"


def _rejections(ctx, backend):
    """Bitwise ReduceOps on floating-point tensors: refused on every rank, naming the op. On a
    group of their own, so a refusal cannot disturb the default group."""
    g = dist.new_group(list(range(ctx.world)), backend=backend)
    for dtype in FLOATS:
        for op in ("BAND", "BOR", "BXOR"):
            _expect_refusal(ctx, f"rejected/{dname(dtype)}/{op}",
                            lambda: dist.all_reduce(torch.ones(8, dtype=dtype), op=red_op(op),
                                                    group=g),
                            BITWISE_WORDS)
    t = pattern(ctx.rank, 9, F32)
    with ctx.check("rejected/then-all_reduce"):
        dist.all_reduce(t)
        expect_equal(t, reference("SUM", [pattern(q, 9, F32) for q in range(ctx.world)]),
                     "all_reduce on the default group after the refused calls")


def _glucx_did_the_work(ctx):
    """The backend runs its collectives on libglucx: glucx.stats() (the package's public,
    process-wide counters) counts the collective."""
    import glucx

    with ctx.check("glucx/stats-count-the-collective"):
        before = glucx.stats()
        t = pattern(ctx.rank, 4099, F32)
        dist.all_reduce(t)
        after = glucx.stats()
        delta = {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], int)}
        ctx.record("glucx/stats-delta", True, str(delta), delta=delta)
        if delta.get("collectives", 0) < 1:
            raise AssertionError(f"glucx.stats() did not count the all_reduce: {delta}")


# ---- bad input: sizes and dtypes that differ across ranks -----------------------------------

# Each case: function(r, P, odd, group, skew, words); it first puts in `words` what the error
# message must contain at least one of (sizes in elements or bytes, or dtype names). `odd` (the
# last rank) differs from the others by `skew`; skew 0 is the control run, where every rank agrees
# and the call must just work.
def _mm_all_reduce_size(r, P, odd, g, skew, words):
    words.extend(["1000", "1001", "4000", "4004"])
    n = 1000 + (skew if r == odd else 0)
    dist.all_reduce(torch.ones(n), group=g)


def _mm_all_reduce_dtype_bytes(r, P, odd, g, skew, words):
    words.extend(["4000", "8000", "float", "double", "f32", "f64"])
    dist.all_reduce(torch.ones(1000, dtype=F64 if r == odd and skew else F32), group=g)


def _mm_all_reduce_dtype_same_bytes(r, P, odd, g, skew, words):
    words.extend(["float", "int", "f32", "i32"])
    dist.all_reduce(torch.ones(1000, dtype=I32 if r == odd and skew else F32), group=g)


def _mm_all_gather_size(r, P, odd, g, skew, words):
    words.extend(["500", "501", "2000", "2004"])
    n = 500 + (skew if r == odd else 0)
    dist.all_gather([torch.zeros(n) for _ in range(P)], torch.ones(n), group=g)


def _mm_all_gather_into_tensor_size(r, P, odd, g, skew, words):
    words.extend(["300", "301", "1200", "1204", str(300 * P), str(301 * P), str(1200 * P),
                  str(1204 * P)])
    n = 300 + (skew if r == odd else 0)
    dist.all_gather_into_tensor(torch.zeros(P * n), torch.ones(n), group=g)


def _mm_reduce_scatter_tensor_size(r, P, odd, g, skew, words):
    words.extend(["300", "301", "1200", "1204", str(300 * P), str(301 * P), str(1200 * P),
                  str(1204 * P)])
    n = 300 + (skew if r == odd else 0)
    dist.reduce_scatter_tensor(torch.zeros(n), torch.ones(P * n), group=g)


def _mm_broadcast_size(r, P, odd, g, skew, words):
    words.extend(["800", "801", "3200", "3204"])
    n = 800 + (skew if r == odd else 0)
    dist.broadcast(torch.ones(n), src=0, group=g)


def _mm_reduce_size(r, P, odd, g, skew, words):
    words.extend(["700", "701", "2800", "2804"])
    n = 700 + (skew if r == odd else 0)
    dist.reduce(torch.ones(n), dst=0, group=g)


def _mm_all_to_all_single_splits(r, P, odd, g, skew, words):
    words.extend(["100", "101", "400", "404"])
    # every rank sends 100 elements to every rank, but `odd` expects 101 from rank 0
    out_splits = [100] * P
    if r == odd:
        out_splits[0] += skew
    dist.all_to_all_single(torch.zeros(sum(out_splits)), torch.ones(100 * P),
                           output_split_sizes=out_splits, input_split_sizes=[100] * P, group=g)


def _mm_send_recv_size(r, P, odd, g, skew, words):
    words.extend(["500", "600", "2000", "2400"])
    # rank 0 sends 600 elements to `odd`, which posts room for only 500
    if r == 0:
        dist.send(torch.ones(600), dst=odd, group=g)
    elif r == odd:
        dist.recv(torch.zeros(600 - 100 * skew), src=0, group=g)


MISMATCH = {
    # name: (function, op-name pattern, which ranks must raise)
    "all_reduce/size": (_mm_all_reduce_size, r"all.?reduce", "all"),
    "all_reduce/dtype-different-bytes": (_mm_all_reduce_dtype_bytes, r"all.?reduce", "all"),
    "all_reduce/dtype-same-bytes": (_mm_all_reduce_dtype_same_bytes, r"all.?reduce", "all"),
    "all_gather/size": (_mm_all_gather_size, r"all.?gather", "all"),
    "all_gather_into_tensor/size": (_mm_all_gather_into_tensor_size, r"all.?gather", "all"),
    "reduce_scatter_tensor/size": (_mm_reduce_scatter_tensor_size, r"reduce.?scatter", "all"),
    # rooted and pairwise ops: the ranks whose data meet the odd rank's must raise; the others
    # must not hang (they raise or return)
    "broadcast/size": (_mm_broadcast_size, r"broadcast|bcast", "odd"),
    "reduce/size": (_mm_reduce_size, r"reduce", "root"),
    "all_to_all_single/splits": (_mm_all_to_all_single_splits, r"all.?to.?all", "pair"),
    "send_recv/size": (_mm_send_recv_size, r"recv|send|message", "odd"),
}


def must_raise(kind, P, odd):
    return {"all": set(range(P)), "odd": {odd}, "root": {0}, "pair": {0, odd}}[kind]


# Point-to-point length mismatches: (elements sent, elements the receive posts), float32. The
# first goes in one eager message, the second through UCX's rendezvous protocol.
TRUNCATION = {"eager": (600, 500), "rendezvous": (300000, 200000)}


def _truncation(ctx, backend, groups, store):
    """Rank 0 sends more than the last rank's receive posts, on a group of its own per size; the
    other ranks (bystanders) do nothing meanwhile. Each rank records how its own call ended, then
    (after meeting the others through the store, not the backend) a barrier and an all_reduce on
    that group: the test checks that the whole group failed on every rank, naming the sizes."""
    r, P = ctx.rank, ctx.world
    odd = P - 1
    for k, (name, (sent, posted)) in enumerate(TRUNCATION.items()):
        g = groups[name]
        t0 = time.monotonic()
        err = None
        role = "sender" if r == 0 else "receiver" if r == odd else "bystander"
        try:
            if role == "sender":
                dist.send(torch.ones(sent), dst=odd, group=g)
            elif role == "receiver":
                dist.recv(torch.zeros(posted), src=0, group=g)
        except Exception as e:  # noqa: B902 - the error is the result
            err = e
        ctx.record(f"truncation/{name}/call", True, str(err) if err is not None else "",
                   raised=err is not None, error_type=type(err).__name__ if err else None,
                   elapsed_s=time.monotonic() - t0, role=role, sent=sent, posted=posted)
        store.set(f"truncation/{k}/{r}", "1")
        store.wait([f"truncation/{k}/{q}" for q in range(P)])
        for op in ("barrier", "all_reduce"):
            t0 = time.monotonic()
            err = None
            try:
                if op == "barrier":
                    dist.barrier(group=g)
                else:
                    dist.all_reduce(torch.ones(10), group=g)
            except Exception as e:  # noqa: B902 - the error is the result
                err = e
            ctx.record(f"truncation/{name}/{op}", True, str(err) if err is not None else "",
                       raised=err is not None, error_type=type(err).__name__ if err else None,
                       elapsed_s=time.monotonic() - t0, role=role, sent=sent, posted=posted)


def bad_input(ctx, backend, timeout_s, short_timeout_s):
    """Sizes and dtypes that differ across ranks, then a collective one rank skips.

    1. control: every case with all ranks agreeing (skew 0) must just work;
    2. mismatch: every case with the last rank differing; every call is recorded (raised or not,
       the message, the time it took) for the test to judge;
    3. truncation: point-to-point length mismatches (_truncation);
    4. the default group still works;
    5. timeout: on a group made with timeout `short_timeout_s`, rank 1 skips an all_reduce; the
       other ranks' wait() must raise once that timeout has passed;
    6. send timeout: on another such group, rank 0 sends to rank 1, which never receives: the
       send must raise once that timeout has passed (a send completes only once its receiver
       took it, as over Gloo's TCP transport).
    Each case runs on a group of its own (created up front, while every rank is healthy: a failure
    fails its group); between cases the ranks meet through the store, not the backend."""
    init(ctx, backend, timeout_s)
    r, P = ctx.rank, ctx.world
    odd = P - 1
    store = side_store(ctx, timeout_s=max(60 * time_scale(), 4 * timeout_s))
    names = list(MISMATCH)
    groups = {(phase, name): dist.new_group(list(range(P)), backend=backend)
              for phase in ("control", "mismatch") for name in names}
    truncation_groups = {name: dist.new_group(list(range(P)), backend=backend)
                         for name in TRUNCATION}
    slow = dist.new_group(list(range(P)), backend=backend,
                          timeout=datetime.timedelta(seconds=short_timeout_s))
    slow_p2p = dist.new_group(list(range(P)), backend=backend,
                              timeout=datetime.timedelta(seconds=short_timeout_s))
    for phase, skew in (("control", 0), ("mismatch", 1)):
        for k, name in enumerate(names):
            fn, op_words, _ = MISMATCH[name]
            t0 = time.monotonic()
            err, words = None, []
            try:
                fn(r, P, odd, groups[(phase, name)], skew, words)
            except Exception as e:  # noqa: B902 - the error is the result
                err = e
            elapsed = time.monotonic() - t0
            ctx.record(f"{phase}/{name}", True, str(err) if err is not None else "",
                       raised=err is not None, error_type=type(err).__name__ if err else None,
                       elapsed_s=elapsed, words=words, op_words=op_words)
            store.set(f"{phase}/{k}/{r}", "1")
            store.wait([f"{phase}/{k}/{q}" for q in range(P)])
    _truncation(ctx, backend, truncation_groups, store)
    t = torch.full((4,), float(r + 1))
    with ctx.check("mismatch/default-group-after"):
        dist.all_reduce(t)
        expect_equal(t, torch.full((4,), float(P * (P + 1) // 2)), "default group all_reduce")
    skipper = 1
    if r != skipper:
        t0 = time.monotonic()
        with ctx.check("timeout/raises"):
            try:
                dist.all_reduce(torch.ones(100), group=slow, async_op=True).wait()
                raise AssertionError(f"all_reduce returned although rank {skipper} never "
                                     "called it")
            except RuntimeError as e:
                ctx.record("timeout/error", True, str(e), elapsed_s=time.monotonic() - t0)
        store.set(f"timeout/gave-up/{r}", "1")
    else:
        store.wait([f"timeout/gave-up/{q}" for q in range(P) if q != skipper])
    if r == 0:
        t0 = time.monotonic()
        with ctx.check("send-timeout/raises"):
            try:
                dist.send(torch.ones(8), dst=1, group=slow_p2p)
                raise AssertionError("a send to rank 1, which never receives, returned")
            except RuntimeError as e:
                ctx.record("send-timeout/error", True, str(e), elapsed_s=time.monotonic() - t0)
        store.set("send-timeout/gave-up", "1")
    else:
        store.wait(["send-timeout/gave-up"])
    ctx.record("exiting", True, "")


# ---- failures: a killed rank ---------------------------------------------------------------

def killed_rank(ctx, backend, victim, timeout_s):
    """`victim` SIGKILLs itself while the others wait in an all_reduce and in a receive from it
    (on another group); both waits must raise, and so must their next collectives."""
    init(ctx, backend, timeout_s)
    r = ctx.rank
    store = side_store(ctx, timeout_s=max(60 * time_scale(), 4 * timeout_s))
    # a group of its own for a receive from the victim: its failure must come from the
    # point-to-point path, not from the default group's failed all_reduce
    p2p = dist.new_group(list(range(ctx.world)), backend=backend)
    n = 1 << 18
    t = torch.ones(n)
    with ctx.check("warm-up"):
        dist.all_reduce(t)
        expect_equal(t, torch.full((n,), float(ctx.world)), "warm-up all_reduce")
        dist.barrier(group=p2p)
    survivors = [q for q in range(ctx.world) if q != victim]
    if r == victim:
        store.wait([f"posted/{q}" for q in survivors])
        ctx.record("victim/killing-itself", True, "")
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    with ctx.check("in-flight/raises"):
        wr = dist.irecv(torch.zeros(1000), src=victim, group=p2p)
        w = dist.all_reduce(torch.ones(n), async_op=True)
        store.set(f"posted/{r}", "1")
        try:
            w.wait()
            raise AssertionError(f"all_reduce completed although rank {victim} died during it")
        except RuntimeError as e:
            ctx.record("in-flight/error", True, str(e), elapsed_s=time.monotonic() - t0)
        try:
            wr.wait()
            raise AssertionError(f"a receive from rank {victim} completed although it died")
        except RuntimeError as e:
            ctx.record("in-flight/recv-error", True, str(e), elapsed_s=time.monotonic() - t0)
    for k, what in enumerate(("all_reduce", "broadcast", "barrier")):
        t0 = time.monotonic()
        with ctx.check(f"after/{k}/{what}/raises"):
            try:
                if what == "barrier":
                    dist.barrier()
                elif what == "broadcast":
                    dist.broadcast(torch.ones(7), src=0)
                else:
                    dist.all_reduce(torch.ones(7))
                raise AssertionError(f"{what} succeeded although rank {victim} is dead")
            except RuntimeError as e:
                ctx.record(f"after/{k}/error", True, str(e), elapsed_s=time.monotonic() - t0)
    # the group fails as a whole: point-to-point between two survivors raises too
    a, b = survivors[0], survivors[-1]
    if r in (a, b):
        t0 = time.monotonic()
        with ctx.check("after/p2p/raises"):
            try:
                if r == a:
                    dist.send(torch.ones(3), dst=b)
                else:
                    dist.recv(torch.zeros(3), src=a)
                raise AssertionError(f"a {'send to' if r == a else 'receive from'} surviving "
                                     f"rank {b if r == a else a} succeeded although rank "
                                     f"{victim} is dead")
            except RuntimeError as e:
                ctx.record("after/p2p/error", True, str(e), elapsed_s=time.monotonic() - t0)
    ctx.record("exiting", True, "")


# ---- group creation: network interfaces, failures ------------------------------------------

IFNAME = "GLOO_SOCKET_IFNAME"
MISSING_IFACE = "nosuch0"


def _transports(g, r, P):
    """{peer: how this rank reaches it} of a glucx group (ProcessGroupGlucx.peer_transport)."""
    return {q: g.peer_transport(q) for q in range(P) if q != r}


def group_creation(ctx, backend, timeout_s, short_timeout_s, cases):
    """Groups made under different GLOO_SOCKET_IFNAME values (read at each creation), how creation
    fails, and what every rank sees then. The job runs with UCX_TLS=tcp,self, so glucx reaches
    every peer over a network device and ProcessGroupGlucx.peer_transport() names it.

    cases: [(name, {rank: GLOO_SOCKET_IFNAME value or None for unset}, backend)], run in order;
    each records whether new_group raised (and its message, the time it took), the peer transports
    and whether an all_reduce on the group gave the right sum. Then: the default group and a new
    group still work; last, rank 1 skips a new_group whose timeout is `short_timeout_s`, and the
    others record their error. Before that, an operation that fails on rank 0 only (op-error)."""
    r, P = ctx.rank, ctx.world
    # for the Gloo-path cases: PyTorch reads it at the first Gloo device, which comes later
    os.environ["GLOO_DEVICE_TRANSPORT"] = "UCX"
    init(ctx, backend, timeout_s)
    store = side_store(ctx, timeout_s=max(60, 4 * timeout_s))
    default = os.environ.get(IFNAME)
    want = torch.full((1000,), float(P * (P + 1) // 2))

    def all_reduce_ok(g):
        t = torch.full((1000,), float(r + 1))
        dist.all_reduce(t, group=g)
        return bool(torch.equal(t, want))

    with ctx.check("default-group"):
        g0 = dist.distributed_c10d._get_default_group()
        ctx.record("default-group/info", True, "", transports=_transports(g0, r, P),
                   ifname=default, all_reduce_ok=all_reduce_ok(None))
    for k, (name, values, kind) in enumerate(cases):
        value = values.get(r)
        if value is None:
            os.environ.pop(IFNAME, None)
        else:
            os.environ[IFNAME] = value
        t0 = time.monotonic()
        err, transports, summed = None, {}, None
        try:
            g = dist.new_group(list(range(P)), backend=kind,
                               timeout=datetime.timedelta(seconds=timeout_s))
            if kind == "glucx":
                transports = _transports(g, r, P)
            summed = all_reduce_ok(g)
        except Exception as e:  # noqa: B902 - the error is the result
            err = e
        ctx.record(f"case/{name}", True, str(err) if err is not None else "",
                   raised=err is not None, error_type=type(err).__name__ if err else None,
                   elapsed_s=time.monotonic() - t0, ifname=value, transports=transports,
                   all_reduce_ok=summed)
        if default is None:
            os.environ.pop(IFNAME, None)
        else:
            os.environ[IFNAME] = default
        store.set(f"case/{k}/{r}", "1")
        store.wait([f"case/{k}/{q}" for q in range(P)])
    with ctx.check("after/default-group"):
        if not all_reduce_ok(None):
            raise AssertionError("all_reduce on the default group gave a wrong sum")
    with ctx.check("after/new-group"):
        if not all_reduce_ok(dist.new_group(list(range(P)), backend=backend)):
            raise AssertionError("all_reduce on a new group gave a wrong sum")
    # An operation that fails on this side: rank 0's all_gather output list (separate tensors,
    # so the result is copied into them at completion) has a tensor resized to more elements
    # than its block before rank 1 even calls the all_gather (it waits for rank 0 through the
    # store), so the copy fails inside PyTorch (c10::Error) at completion.
    with ctx.check("op-error/raises"):
        outs = [torch.zeros(10) for _ in range(P)]
        if r == 0:
            w = dist.all_gather(outs, torch.ones(10), async_op=True)
            outs[1].resize_(50)
            store.set("op-error/resized", "1")
            try:
                w.wait()
                raise AssertionError("all_gather into a resized output tensor returned")
            except RuntimeError as e:
                ctx.record("op-error/error", True, str(e), error_type=type(e).__name__)
        else:
            store.wait(["op-error/resized"])
            dist.all_gather(outs, torch.ones(10))
    skipper = 1
    if r != skipper:
        t0 = time.monotonic()
        with ctx.check("timeout/raises"):
            try:
                dist.new_group(list(range(P)), backend=backend,
                               timeout=datetime.timedelta(seconds=short_timeout_s))
                raise AssertionError(f"new_group returned although rank {skipper} never "
                                     "called it")
            except RuntimeError as e:
                ctx.record("timeout/error", True, str(e), elapsed_s=time.monotonic() - t0,
                           error_type=type(e).__name__)
        store.set(f"timeout/gave-up/{r}", "1")
    else:
        store.wait([f"timeout/gave-up/{q}" for q in range(P) if q != skipper])
    ctx.record("exiting", True, "")


# ---- init methods ----------------------------------------------------------------------------

def init_method(ctx, backend, method, path=None):
    """init_process_group(backend, init_method=tcp://... or file://...), then a few checks."""
    r, P = ctx.rank, ctx.world
    if method == "tcp":
        url = f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}"
    else:
        url = f"file://{path}"
    with ctx.check(f"init/{method}"):
        init(ctx, backend, 30 * time_scale(), init_method=url, rank=r, world_size=P)
        if dist.get_backend() != backend:
            raise AssertionError(f"get_backend() is {dist.get_backend()!r}")
        if (dist.get_rank(), dist.get_world_size()) != (r, P):
            raise AssertionError(f"rank {dist.get_rank()} of {dist.get_world_size()}")
    small_checks(ctx, backend, r, P)
    dist.destroy_process_group()


def small_checks(ctx, backend, r, P):
    """A few collectives on the default group and a subgroup (shared with the torchrun job)."""
    n = 4099
    t = make("SUM", r, n, F32)
    with ctx.check("all_reduce"):
        dist.all_reduce(t)
        expect_equal(t, reference("SUM", [make("SUM", q, n, F32) for q in range(P)]),
                     "all_reduce")
    with ctx.check("all_gather"):
        outs = [garbage((n,), I64) for _ in range(P)]
        dist.all_gather(outs, pattern(r, n, I64))
        for q in range(P):
            expect_equal(outs[q], pattern(q, n, I64), f"all_gather block {q}")
    with ctx.check("new_group/broadcast"):
        members = list(range(1, P))
        g = dist.new_group(members, backend=backend)
        if r in members:
            b = pattern(P - 1, n, F64) if r == P - 1 else garbage((n,), F64)
            dist.broadcast(b, src=P - 1, group=g)
            expect_equal(b, pattern(P - 1, n, F64), "broadcast in a subgroup")
    with ctx.check("barrier"):
        dist.barrier()


# ---- DDP -------------------------------------------------------------------------------------

D_IN, HIDDEN, BATCH = 8, 32, 16


def _mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, 1))


def _rank_data(q):
    """Rank q's samples: 6 + 2q batches (uneven across ranks) of a smooth target."""
    g = torch.Generator().manual_seed(1000 + q)
    x = torch.randn((6 + 2 * q) * BATCH, D_IN, generator=g)
    return x, _target(x)


def _target(x):
    w = torch.linspace(-1.0, 1.0, D_IN)
    return torch.sin(x @ w).unsqueeze(1) + 0.5 * x[:, :1]


def _eval_loss(model):
    g = torch.Generator().manual_seed(99)
    x = torch.randn(512, D_IN, generator=g)
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(x), _target(x)))


def _flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


LR = 0.1


def _reference_training(P):
    """The same training computed locally without any communication: every step applies the mean
    over all P ranks of their gradients (a rank that has run out of data adds zero: DDP's join
    keeps dividing by the initial world size); step 0 sums two micro-batches (no_sync)."""
    model = _mlp(0)  # DDP starts every rank from rank 0's parameters
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    data = [_rank_data(q) for q in range(P)]
    steps = [len(d[0]) // BATCH - 1 for d in data]  # step 0 takes two batches
    for s in range(max(steps)):
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for q in range(P):
            if s >= steps[q]:
                continue
            x, y = data[q]
            batches = (0, 1) if s == 0 else (s + 1,)
            for b in batches:
                model.zero_grad()
                sl = slice(b * BATCH, (b + 1) * BATCH)
                torch.nn.functional.mse_loss(model(x[sl]), y[sl]).backward()
                for gacc, p in zip(grads, model.parameters()):
                    gacc += p.grad
        with torch.no_grad():
            for p, gacc in zip(model.parameters(), grads):
                p.grad = gacc / P
        opt.step()
    return model


def _digest(model):
    return hashlib.sha256(_flat(model).numpy().tobytes()).hexdigest()


def ddp(ctx, backend, timeout_s=60 * time_scale()):
    """DistributedDataParallel over the backend, trained twice: with DDP's own all_reduce path
    ("ddp") and with the fp16-compression comm hook, which goes through the all_reduce Work's
    future and then() ("ddp-fp16-hook")."""
    init(ctx, backend, timeout_s)
    torch.set_num_threads(1)
    _train(ctx, "ddp", hook=None, tolerance=(1e-4, 1e-5))
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    # fp16 gradients: the reference (float32 means) is only matched to fp16 precision
    _train(ctx, "ddp-fp16-hook", hook=default_hooks.fp16_compress_hook, tolerance=(1e-2, 2e-3))
    with ctx.check("ddp/barrier-after-training"):
        dist.barrier()
    dist.destroy_process_group()


def _train(ctx, prefix, hook, tolerance):
    """Small buckets, no_sync once, uneven inputs through join(), a DataLoader with 2 workers
    forked after init_process_group (fork named explicitly: a spawned rank's default start method
    is spawn). Records the parameters' SHA-256 after every step (the final one is not enough:
    join() ends by broadcasting the last joiner's parameters)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    r, P = ctx.rank, ctx.world
    model = _mlp(r)  # different on every rank: DDP must broadcast rank 0's parameters
    with ctx.check(f"{prefix}/construct"):
        # ~4 KiB buckets: the 1.4k parameters go in several buckets
        net = DDP(model, bucket_cap_mb=0.004)
        if hook is not None:
            net.register_comm_hook(state=None, hook=hook)
        if not torch.equal(_flat(net.module), _flat(_mlp(0))):
            raise AssertionError("DDP did not start from rank 0's parameters")
    loss0 = _eval_loss(net.module)
    x, y = _rank_data(r)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH,
                                         shuffle=False, num_workers=2,
                                         multiprocessing_context="fork")
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    losses, marks, digests = [], [], []
    t0 = time.monotonic()
    with ctx.check(f"{prefix}/train"):
        with net.join():
            it = iter(loader)
            xb, yb = next(it)
            marks.append(("first-batch", time.monotonic() - t0))
            with net.no_sync():  # accumulate the first micro-batch locally
                torch.nn.functional.mse_loss(net(xb), yb).backward()
            for xb, yb in it:
                loss = torch.nn.functional.mse_loss(net(xb), yb)
                loss.backward()
                opt.step()
                opt.zero_grad()
                losses.append(float(loss))
                digests.append(_digest(net.module))
                marks.append(("step", time.monotonic() - t0))
            marks.append(("data-done", time.monotonic() - t0))
        marks.append(("joined", time.monotonic() - t0))
        ctx.record(f"{prefix}/steps", True, f"{len(losses)} steps", steps=len(losses),
                   losses=losses, marks=marks, step_sha256=digests)
    flat = _flat(net.module)
    loss1 = _eval_loss(net.module)
    ctx.record(f"{prefix}/result", True, "", sha256=_digest(net.module), eval_loss_before=loss0,
               eval_loss_after=loss1)
    with ctx.check(f"{prefix}/matches-local-reference"):
        ref = _flat(_reference_training(P))
        diff = float((flat - ref).abs().max())
        ctx.record(f"{prefix}/reference-diff", True, f"{diff:.3g}", max_abs_diff=diff)
        rtol, atol = tolerance
        if not torch.allclose(flat, ref, rtol=rtol, atol=atol):
            raise AssertionError(f"parameters differ from the local reference by up to {diff} "
                                 f"(rtol {rtol}, atol {atol})")
