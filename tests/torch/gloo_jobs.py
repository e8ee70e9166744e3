"""Rank-side jobs of the Gloo-over-glucx pytest suite (run inside ranks started by gloo_harness).

Every check is one record, written as a JSON line as soon as it finishes:
  name, ok, detail (why it failed), delta (glucx.stats() after minus before, or None),
  need (the least each counter must have grown by on this rank), elapsed_s.
Expected values never come from the operation under test: every rank rebuilds every other rank's
input from a closed form in (rank, index) and computes the result with local torch ops.

Counters (TORCH_SUITE_COUNTERS, set by the harness):
  require             glucx must import; each check's bytes must have gone through glucx: the
                      counters grew by at least what the operation must move on this rank
                      (send_bytes, recv_bytes, and for zero-byte operations the message count);
  still               glucx must import; the counters must not move at all (TCP negative control);
  still-if-available  as "still" when glucx imports, no counter check when it does not (a
                      development run on Debian's interpreter, outside the venv).
The minimum a rank must move is an information bound that holds for any algorithm: e.g. in an
allreduce every element of a rank's input changes every other rank's output, so the rank sends at
least its whole input once and receives at least one full buffer's worth.
"""
import contextlib
import datetime
import functools
import json
import os
import re
import signal
import sys
import time
import traceback

import torch
import torch.distributed as dist

from gloo_harness import time_scale

COUNTER_KEYS = ("sends", "send_bytes", "recvs", "recv_bytes")


class Counters:
    def __init__(self, mode):
        self.mode = mode
        self.glucx = None
        self.error = None
        if mode == "off":
            return
        try:
            import glucx  # noqa: F401 - only to read the process-wide counters

            self.glucx = glucx
        except ImportError as e:
            self.error = (f"cannot import glucx with {sys.executable} ({e}); the venv must "
                          "have the glucx package (run `make venv`)")
            if mode == "still-if-available":
                self.mode = "off"

    def snapshot(self):
        if self.mode == "off":
            return None
        if self.glucx is None:
            raise RuntimeError(self.error)
        s = self.glucx.stats()
        missing = [k for k in COUNTER_KEYS if k not in s]
        if missing:
            raise RuntimeError(f"glucx.stats() lacks {missing}: {s}")
        return {k: int(s[k]) for k in s if isinstance(s[k], int)}


def counters_problem(mode, delta, need):
    """Why the counter deltas contradict the mode, or None. `need`: least growth per key."""
    if mode == "off" or delta is None:
        return None
    if mode == "require":
        short = [f"{k} grew by {delta.get(k, 0)}, needs >= {v}" for k, v in need.items()
                 if delta.get(k, 0) < v]
        if short:
            return ("the bytes did not all go through glucx: " + "; ".join(short)
                    + f" (all deltas: {delta})")
        return None
    moved = {k: v for k, v in delta.items() if v != 0}
    if moved:
        return f"glucx counters moved without GLOO_DEVICE_TRANSPORT=UCX: {moved}"
    return None


class RankContext:
    def __init__(self, rank, world, out, rank_file=None):
        self.rank, self.world, self.out = rank, world, out
        self.counters = Counters(os.environ.get("TORCH_SUITE_COUNTERS", "require"))
        self.path = rank_file or os.path.join(out, f"rank{rank}.jsonl")
        with open(os.path.join(out, f"pid{rank}"), "w") as f:
            f.write(str(os.getpid()))

    def record(self, name, ok, detail, **extra):
        rec = {"name": name, "rank": self.rank, "ok": bool(ok), "detail": detail, **extra}
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")

    @contextlib.contextmanager
    def check(self, name, send=0, recv=0, sends=0):
        """Run the body as one check. Exceptions in the body fail the check (and are not
        re-raised). `send`/`recv`: bytes this rank must send/receive; `sends`: messages."""
        need = {k: v for k, v in (("send_bytes", send), ("recv_bytes", recv), ("sends", sends))
                if v > 0}
        before = None
        ok, detail = True, "ok"
        t0 = time.monotonic()
        try:
            before = self.counters.snapshot()
            yield
        except Exception as e:  # noqa: B902 - every failure becomes the check's detail
            ok, detail = False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        elapsed = time.monotonic() - t0
        delta = None
        if before is not None:
            after = self.counters.snapshot()
            delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
            if ok:
                problem = counters_problem(self.counters.mode, delta, need)
                if problem:
                    ok, detail = False, problem
        self.record(name, ok, detail, delta=delta, need=need, elapsed_s=elapsed,
                    counters=self.counters.mode)


def expect_equal(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape:
        raise AssertionError(f"{what}: got {got.dtype}{tuple(got.shape)}, "
                             f"want {want.dtype}{tuple(want.shape)}")
    eq = got == want
    if want.is_complex() or want.is_floating_point():
        eq = eq | (torch.isnan(got) & torch.isnan(want))
    if not bool(eq.all()):
        bad = (~eq).nonzero().flatten()
        i = int(bad[0])
        raise AssertionError(f"{what}: {bad.numel()} of {want.numel()} elements wrong, first at "
                             f"{i}: got {got.flatten()[i].item()}, want {want.flatten()[i].item()}")


def nbytes(t):
    return t.numel() * t.element_size()


def init(ctx, timeout_s=60 * time_scale()):
    dist.init_process_group("gloo", rank=ctx.rank, world_size=ctx.world,
                            timeout=datetime.timedelta(seconds=timeout_s))


# ---- inputs in closed form --------------------------------------------------------------------

SIGNED = (torch.int8, torch.int32, torch.int64)


def make(kind, rank, n, dtype):
    """Rank `rank`'s input of `n` elements for a reduction of `kind` (arith, prod or bits).
    Values stay small enough that sums/products over 4 ranks are exact in every dtype."""
    i = torch.arange(n, dtype=torch.int64)
    if kind == "arith":  # -5..5 (0..10 unsigned): sum of 4 ranks fits int8, exact in float16
        v = (rank * 7 + i * 3) % 11 - 5
        if dtype == torch.uint8:
            v = v + 5
    elif kind == "prod":  # |v| in 1..3: |product of 4 ranks| <= 81 fits int8
        v = (rank + i) % 3 + 1
        if dtype != torch.uint8:
            v = torch.where((i + rank) % 4 == 0, -v, v)
    elif kind == "bits":
        h = ((rank + 1) * 2654435761 * (i + 1)) % (1 << 31)
        h = h ^ (h >> 13)  # bring high bits down so 8-bit values use all bits
        if dtype == torch.int8:
            v = h % 256 - 128
        elif dtype == torch.uint8:
            v = h % 256
        elif dtype == torch.int32:
            v = h - (1 << 30)
        else:
            v = ((h << 20) ^ i) - (1 << 45)
    else:
        raise ValueError(kind)
    return v.to(dtype)


OPS = {
    "SUM": ("arith", torch.add),
    "PRODUCT": ("prod", torch.mul),
    "MIN": ("arith", torch.minimum),
    "MAX": ("arith", torch.maximum),
    "BAND": ("bits", torch.bitwise_and),
    "BOR": ("bits", torch.bitwise_or),
    "BXOR": ("bits", torch.bitwise_xor),
}
FLOAT_OPS = ("SUM", "PRODUCT", "MIN", "MAX")
# What ProcessGroupGloo (torch 1.13) accepts for all_reduce; everything else is in REJECTED.
DTYPE_OPS = {
    torch.float32: FLOAT_OPS,
    torch.float64: FLOAT_OPS,
    torch.float16: FLOAT_OPS,
    torch.int8: tuple(OPS),
    torch.uint8: tuple(OPS),
    torch.int32: tuple(OPS),
    torch.int64: tuple(OPS),
}


ALL_GATHER_DTYPES = (torch.float32, torch.int64, torch.uint8)


def dname(dtype):
    return str(dtype).replace("torch.", "")


def seq(rank, n, dtype, base=1000):
    """rank*base + i mod base, folded into the range of 8-bit types; exact in every dtype used."""
    i = torch.arange(n, dtype=torch.int64)
    v = rank * base + i % base
    if dtype == torch.int8:
        v = v % 128
    elif dtype == torch.uint8:
        v = v % 256
    return v.to(dtype)


# ---- the main job: every collective and p2p operation ------------------------------------------

SIZES = (1, 1031, 131077)  # element counts: one element, odd small, odd past 128 KiB
BIG = (1 << 20) + 3  # float32 elements: 4 MiB and a bit


def collectives(ctx, sizes=SIZES, big=BIG):
    init(ctx)
    _all_reduce(ctx, sizes, big)
    _async_all_reduce(ctx)
    _all_gather(ctx, sizes)
    _broadcast(ctx)
    _reduce(ctx)
    _gather_scatter(ctx)
    _all_to_all(ctx)
    _barriers(ctx)
    _p2p(ctx)
    _any_source(ctx)
    _subgroups(ctx)
    _zero_elements(ctx)
    # everybody finished: no rank tears down while a peer still waits for it
    dist.barrier()
    dist.destroy_process_group()


def _all_reduce(ctx, sizes, big):
    r, P = ctx.rank, ctx.world
    for dtype, ops in DTYPE_OPS.items():
        for opname in ops:
            kind, fn = OPS[opname]
            for n in sizes:
                t = make(kind, r, n, dtype)
                want = functools.reduce(fn, [make(kind, q, n, dtype) for q in range(P)])
                name = f"all_reduce/{dname(dtype)}/{opname}/n={n}"
                with ctx.check(name, send=nbytes(t), recv=nbytes(t)):
                    dist.all_reduce(t, op=getattr(dist.ReduceOp, opname))
                    expect_equal(t, want, name)
    # complex tensors go through Gloo as their real view: SUM only
    for n in (1, 1031):
        def mk(q):
            return torch.complex(make("arith", q, n, torch.float32),
                                 make("arith", q + P, n, torch.float32))
        t = mk(r)
        want = functools.reduce(torch.add, [mk(q) for q in range(P)])
        name = f"all_reduce/complex64/SUM/n={n}"
        with ctx.check(name, send=nbytes(t), recv=nbytes(t)):
            dist.all_reduce(t)
            expect_equal(t, want, name)
    # several MiB: past any eager/rendezvous threshold, odd count so chunks are uneven
    t = seq(r, big, torch.float32)
    want = functools.reduce(torch.add, [seq(q, big, torch.float32) for q in range(P)])
    name = f"all_reduce/float32/SUM/n={big}"
    with ctx.check(name, send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
        expect_equal(t, want, name)


def _async_all_reduce(ctx):
    """Several all_reduce in flight at once (async_op=True), waited in reverse order."""
    r, P = ctx.rank, ctx.world
    ns = (5, 4099, 65536 + 1, 17)
    ts = [seq(r + k, n, torch.float64) for k, n in enumerate(ns)]
    wants = [functools.reduce(torch.add, [seq(q + k, n, torch.float64) for q in range(P)])
             for k, n in enumerate(ns)]
    total = sum(nbytes(t) for t in ts)
    with ctx.check("all_reduce/async/4-outstanding", send=total, recv=total):
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        for w in reversed(works):
            w.wait()
        for k, (t, want) in enumerate(zip(ts, wants)):
            expect_equal(t, want, f"async all_reduce #{k} of {ns[k]} float64")


def _all_gather(ctx, sizes):
    r, P = ctx.rank, ctx.world
    for dtype in ALL_GATHER_DTYPES:
        for n in sizes:
            x = seq(r, n, dtype, base=37)
            outs = [torch.full((n,), 7, dtype=dtype) for _ in range(P)]
            name = f"all_gather/{dname(dtype)}/n={n}"
            with ctx.check(name, send=nbytes(x), recv=(P - 1) * nbytes(x)):
                dist.all_gather(outs, x)
                for q in range(P):
                    want = seq(q, n, dtype, base=37)
                    expect_equal(outs[q], want, f"{name}: block from rank {q}")


def _broadcast(ctx):
    r, P = ctx.rank, ctx.world
    root = P - 1  # a non-zero root
    for dtype, n in ((torch.float32, 1), (torch.int8, 1031), (torch.float64, 70001),
                     (torch.float32, 1 << 20)):
        want = seq(root, n, dtype, base=100)
        t = want.clone() if r == root else torch.full((n,), -1, dtype=dtype)
        name = f"broadcast/root={root}/{dname(dtype)}/n={n}"
        with ctx.check(name, send=nbytes(t) if r == root else 0,
                       recv=0 if r == root else nbytes(t)):
            dist.broadcast(t, src=root)
            expect_equal(t, want, name)


def _reduce(ctx):
    r, P = ctx.rank, ctx.world
    dst = 1
    for opname, dtype, n in (("SUM", torch.float32, 1031), ("MAX", torch.int32, 1031),
                             ("SUM", torch.float64, 131072 + 9), ("MIN", torch.int8, 7)):
        kind, fn = OPS[opname]
        t = make(kind, r, n, dtype)
        want = functools.reduce(fn, [make(kind, q, n, dtype) for q in range(P)])
        name = f"reduce/dst={dst}/{dname(dtype)}/{opname}/n={n}"
        with ctx.check(name, send=0 if r == dst else nbytes(t),
                       recv=nbytes(t) if r == dst else 0):
            dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, opname))
            if r == dst:  # other ranks' buffers are scratch space for Gloo
                expect_equal(t, want, name)


def _gather_scatter(ctx):
    r, P = ctx.rank, ctx.world
    dst = P - 1
    for n in (7, 65537):
        x = seq(r, n, torch.float32)
        outs = [torch.zeros(n) for _ in range(P)] if r == dst else None
        name = f"gather/dst={dst}/float32/n={n}"
        b = nbytes(x)
        with ctx.check(name, send=0 if r == dst else b, recv=(P - 1) * b if r == dst else 0):
            dist.gather(x, gather_list=outs, dst=dst)
            if r == dst:
                for q in range(P):
                    expect_equal(outs[q], seq(q, n, torch.float32), f"{name}: from rank {q}")
    src = 1
    for n in (7, 65537):
        ins = [seq(q, n, torch.int64, base=1 << 20) for q in range(P)] if r == src else None
        out = torch.full((n,), -1, dtype=torch.int64)
        b = nbytes(out)
        name = f"scatter/src={src}/int64/n={n}"
        with ctx.check(name, send=(P - 1) * b if r == src else 0, recv=0 if r == src else b):
            dist.scatter(out, scatter_list=ins, src=src)
            expect_equal(out, seq(r, n, torch.int64, base=1 << 20), name)


def _all_to_all(ctx):
    r, P = ctx.rank, ctx.world
    esz = 4
    # even splits
    for k in (1, 1031, 65537):
        idx = torch.arange(k, dtype=torch.int64)
        x = torch.cat([(r * 1000000 + j * 10000 + idx % 10000).to(torch.float32)
                       for j in range(P)])
        out = torch.full((P * k,), -1.0)
        want = torch.cat([(q * 1000000 + r * 10000 + idx % 10000).to(torch.float32)
                          for q in range(P)])
        name = f"all_to_all_single/even/float32/k={k}"
        with ctx.check(name, send=(P - 1) * k * esz, recv=(P - 1) * k * esz):
            dist.all_to_all_single(out, x)
            expect_equal(out, want, name)
    # uneven splits, some of them zero: s(a -> b) elements
    for scale in (1, 4099):
        def s(a, b):
            return ((a * 3 + b * 5 + 1) % 4) * scale
        in_splits = [s(r, j) for j in range(P)]
        out_splits = [s(q, r) for q in range(P)]
        x = torch.cat([(r * 1000000 + j * 10000 + torch.arange(s(r, j)) % 10000).to(torch.float32)
                       for j in range(P)])
        want = torch.cat([(q * 1000000 + r * 10000 + torch.arange(s(q, r)) % 10000)
                          .to(torch.float32) for q in range(P)])
        out = torch.full((sum(out_splits),), -1.0)
        name = f"all_to_all_single/uneven/float32/scale={scale}"
        send = sum(s(r, j) for j in range(P) if j != r) * esz
        recv = sum(s(q, r) for q in range(P) if q != r) * esz
        with ctx.check(name, send=send, recv=recv):
            dist.all_to_all_single(out, x, output_split_sizes=out_splits,
                                   input_split_sizes=in_splits)
            expect_equal(out, want, f"{name} (in {in_splits}, out {out_splits})")


def _barriers(ctx):
    with ctx.check("barrier", sends=1):
        for _ in range(3):
            dist.barrier()
    with ctx.check("monitored_barrier", sends=1):
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30 * time_scale()))


def _p2p(ctx):
    r, P = ctx.rank, ctx.world
    nxt, prv = (r + 1) % P, (r - 1) % P
    for n in (3, 1 << 20):
        x = seq(r, n, torch.float32)
        got = torch.full((n,), -1.0)
        b = nbytes(x)
        name = f"send_recv/ring/n={n}"
        with ctx.check(name, send=b, recv=b):
            # blocking send waits for its receiver once messages are large: even ranks send
            # first, odd ranks receive first (P is even)
            if r % 2 == 0:
                dist.send(x, dst=nxt)
                src = dist.recv(got, src=prv)
            else:
                src = dist.recv(got, src=prv)
                dist.send(x, dst=nxt)
            if src != prv:
                raise AssertionError(f"recv from {prv} reported source {src}")
            expect_equal(got, seq(prv, n, torch.float32), name)
        name = f"isend_irecv/ring/n={n}"
        got = torch.full((n,), -1.0)
        with ctx.check(name, send=b, recv=b):
            works = [dist.irecv(got, src=prv), dist.isend(x, dst=nxt)]
            for w in works:
                w.wait()
            expect_equal(got, seq(prv, n, torch.float32), name)
    # tags: even ranks post tag 7 then tag 3; odd ranks receive tag 3 first
    small, large = 5, 300007
    if r % 2 == 0:
        a, c = seq(r, large, torch.float32), seq(r + 50, small, torch.float32)
        with ctx.check("isend/tags-out-of-order", send=nbytes(a) + nbytes(c)):
            w1 = dist.isend(a, dst=r + 1, tag=7)
            w2 = dist.isend(c, dst=r + 1, tag=3)
            w2.wait()
            w1.wait()
    else:
        a, c = torch.zeros(large), torch.zeros(small)
        with ctx.check("isend/tags-out-of-order", recv=nbytes(a) + nbytes(c)):
            dist.recv(c, src=r - 1, tag=3)
            dist.recv(a, src=r - 1, tag=7)
            expect_equal(c, seq(r - 1 + 50, small, torch.float32), "tag 3 message")
            expect_equal(a, seq(r - 1, large, torch.float32), "tag 7 message")


def _any_source(ctx):
    r, P = ctx.rank, ctx.world
    # a different tag per size: a sender that finished the small round may already send its
    # large message while rank 0 still waits for another rank's small one
    for tag, n in enumerate((9, 1 << 19), start=11):
        name = f"recv/any-source/n={n}"
        b = n * 4
        if r == 0:
            with ctx.check(name, recv=(P - 1) * b):
                seen = []
                for _ in range(P - 1):
                    t = torch.full((n,), -1.0)
                    src = dist.recv(t, tag=tag)  # no src: any rank
                    if not 1 <= src < P:
                        raise AssertionError(f"any-source recv reported source {src}")
                    expect_equal(t, seq(src, n, torch.float32), f"{name}: message from {src}")
                    seen.append(src)
                if sorted(seen) != list(range(1, P)):
                    raise AssertionError(f"sources {seen}, want each of 1..{P - 1} once")
        else:
            with ctx.check(name, send=b):
                dist.send(seq(r, n, torch.float32), dst=0, tag=tag)


def _subgroups(ctx):
    r, P = ctx.rank, ctx.world
    if P >= 4:
        ga = dist.new_group([0, 2])
        gb = dist.new_group([1, 3])
        gc = dist.new_group([1, 2, 3])
        mine, members = (ga, [0, 2]) if r in (0, 2) else (gb, [1, 3])
        n = 40961
        t = make("arith", r, n, torch.float32)
        want = functools.reduce(torch.add, [make("arith", q, n, torch.float32) for q in members])
        name = "new_group/pairs-concurrently/all_reduce"
        with ctx.check(name, send=nbytes(t), recv=nbytes(t)):
            dist.all_reduce(t, group=mine)
            expect_equal(t, want, f"{name} over {members}")
        if r in (1, 2, 3):
            n = 20011
            want = seq(3, n, torch.int32)
            t = want.clone() if r == 3 else torch.zeros(n, dtype=torch.int32)
            name = "new_group/[1,2,3]/broadcast-from-3"
            with ctx.check(name, send=nbytes(t) if r == 3 else 0,
                           recv=0 if r == 3 else nbytes(t)):
                dist.broadcast(t, src=3, group=gc)  # src is a global rank
                expect_equal(t, want, name)
            x = seq(r, 777, torch.float32)
            outs = [torch.zeros(777) for _ in range(3)]
            name = "new_group/[1,2,3]/all_gather"
            with ctx.check(name, send=nbytes(x), recv=2 * nbytes(x)):
                dist.all_gather(outs, x, group=gc)
                for k, q in enumerate((1, 2, 3)):
                    expect_equal(outs[k], seq(q, 777, torch.float32), f"{name}: block {k}")
    else:
        g = dist.new_group([0, 1])
        solo = dist.new_group([1])
        n = 65539
        t = make("arith", r, n, torch.float32)
        want = functools.reduce(torch.add, [make("arith", q, n, torch.float32) for q in range(P)])
        name = "new_group/[0,1]/all_reduce"
        with ctx.check(name, send=nbytes(t), recv=nbytes(t)):
            dist.all_reduce(t, group=g)
            expect_equal(t, want, name)
        if r == 1:
            t = seq(1, 100, torch.float32)
            with ctx.check("new_group/[1]/all_reduce"):
                dist.all_reduce(t, group=solo)
                expect_equal(t, seq(1, 100, torch.float32), "single-rank all_reduce")
    # the default group still works after subgroups were used
    t = torch.full((3,), float(r + 1))
    with ctx.check("default-group-after-subgroups", send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
        expect_equal(t, torch.full((3,), float(P * (P + 1) // 2)), "all_reduce after subgroups")


def _zero_elements(ctx):
    """0-element tensors where ProcessGroupGloo handles them (all_gather does not: README.md)."""
    r, P = ctx.rank, ctx.world
    with ctx.check("zero/all_reduce"):  # Gloo may skip the exchange: nothing required
        t = torch.empty(0)
        dist.all_reduce(t)
        expect_equal(t, torch.empty(0), "0-element all_reduce")
    with ctx.check("zero/broadcast"):
        t = torch.empty(0, dtype=torch.int64)
        dist.broadcast(t, src=P - 1)
        expect_equal(t, torch.empty(0, dtype=torch.int64), "0-element broadcast")
    # a 0-byte message is still a message
    with ctx.check("zero/send_recv", sends=1 if r == 0 else 0):
        if r == 0:
            dist.send(torch.empty(0), dst=1)
        elif r == 1:
            src = dist.recv(torch.empty(0), src=0)
            if src != 0:
                raise AssertionError(f"0-byte recv from 0 reported source {src}")


# ---- Gloo-level behaviour that must not depend on the transport ---------------------------------

REJECTED = (
    [(dname(d), "SUM") for d in (torch.bfloat16, torch.int16, torch.bool)]
    + [(dname(d), op) for d in (torch.float32, torch.float64, torch.float16)
       for op in ("BAND", "BOR", "BXOR")]
    + [("float32", "AVG"), ("int64", "AVG"), ("complex64", "MAX"), ("complex64", "PRODUCT")]
)


def rejections(ctx):
    """all_reduce calls ProcessGroupGloo refuses; each must raise on every rank and move nothing.

    They run on a group of their own: ProcessGroupGloo's barrier also waits for the group's
    previous work, and a refused call can still be listed there for a moment after it raised, so
    a barrier right after it on the same group may raise the same error on one rank only.
    """
    init(ctx)
    g = dist.new_group(list(range(ctx.world)))
    for dt, opname in REJECTED:
        dtype = getattr(torch, dt)
        t = torch.ones(8, dtype=dtype)
        name = f"rejected/{dt}/{opname}"
        # the counters must not move: the refusal happens above the transport
        mode = ctx.counters.mode
        if mode == "require":
            ctx.counters.mode = "still"
        err = []
        with ctx.check(name):
            try:
                dist.all_reduce(t, op=getattr(dist.ReduceOp, opname), group=g)
            except (RuntimeError, ValueError, TypeError) as e:
                # object addresses differ from process to process
                first = re.sub(r" at 0x[0-9a-fA-F]+", " at 0x...", str(e).splitlines()[0])
                err.append(f"{type(e).__name__}: {first}")
            if not err:
                raise AssertionError(f"all_reduce of {dt} with {opname} was accepted")
        ctx.counters.mode = mode
        ctx.record(name + "/error", True, err[0] if err else "")
    # the default group is untouched and still works
    t = torch.ones(4)
    with ctx.check("after-rejections/all_reduce", send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
        expect_equal(t, torch.full((4,), float(ctx.world)), "all_reduce after rejected calls")
    dist.barrier()
    dist.destroy_process_group()


def zero_all_gather(ctx):
    """all_gather of zero-element tensors: ProcessGroupGloo divides by the element count."""
    init(ctx)
    t = torch.ones(3)
    with ctx.check("before/all_reduce", send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
    ctx.record("zero-all_gather/start", True, "calling all_gather on 0-element tensors")
    outs = [torch.empty(0) for _ in range(ctx.world)]
    with ctx.check("zero-all_gather"):
        dist.all_gather(outs, torch.empty(0))
    dist.barrier()
    dist.destroy_process_group()


# ---- negative control ---------------------------------------------------------------------------

def negative_control(ctx):
    """Run with GLOO_DEVICE_TRANSPORT unset and counters mode "still": the counters must not move.
    Also record that the "require" rule, applied to the same deltas, would have failed."""
    init(ctx)
    r, P = ctx.rank, ctx.world
    cases = []
    n = 262144
    t = seq(r, n, torch.float32)
    want = functools.reduce(torch.add, [seq(q, n, torch.float32) for q in range(P)])
    before = ctx.counters.snapshot()
    with ctx.check("tcp/all_reduce", send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
        expect_equal(t, want, "all_reduce over Gloo TCP")
    x = seq(r, 1031, torch.float32)
    outs = [torch.zeros(1031) for _ in range(P)]
    with ctx.check("tcp/all_gather", send=nbytes(x), recv=(P - 1) * nbytes(x)):
        dist.all_gather(outs, x)
        for q in range(P):
            expect_equal(outs[q], seq(q, 1031, torch.float32), "all_gather over Gloo TCP")
    after = ctx.counters.snapshot()
    delta = {k: after[k] - before[k] for k in after}
    need = {"send_bytes": nbytes(t) + nbytes(x), "recv_bytes": nbytes(t) + (P - 1) * nbytes(x)}
    cases.append(counters_problem("require", delta, need))
    ctx.record("tcp/require-rule-would-fail", cases[0] is not None,
               cases[0] or f"the require rule passed on deltas {delta}: the check cannot fail",
               delta=delta, need=need)
    dist.barrier()
    dist.destroy_process_group()


# ---- failures -----------------------------------------------------------------------------------

def _store(ctx):
    return dist.TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), ctx.world, False,
                         timeout=datetime.timedelta(seconds=60 * time_scale()))


def timeout(ctx, timeout_s):
    """Rank 1 skips an all_reduce; rank 0's times out; the next collective raises promptly."""
    init(ctx, timeout_s)
    r = ctx.rank
    store = _store(ctx)
    t = torch.ones(1000)
    with ctx.check("warm-up", send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
        expect_equal(t, torch.full((1000,), float(ctx.world)), "warm-up all_reduce")
    if r == 0:
        with ctx.check("skipped/times-out"):
            t0 = time.monotonic()
            try:
                dist.all_reduce(t)
                raise AssertionError("all_reduce returned although rank 1 never called it")
            except RuntimeError as e:
                ctx.record("skipped/error", True, str(e), elapsed_s=time.monotonic() - t0)
        store.set("rank0-timed-out", "1")
    else:
        store.wait(["rank0-timed-out"])  # skip the collective until rank 0 has given up
    t0 = time.monotonic()
    with ctx.check("next/raises"):
        try:
            dist.all_reduce(torch.ones(1000))
            raise AssertionError("the next all_reduce after a timeout succeeded")
        except RuntimeError as e:
            ctx.record("next/error", True, str(e), elapsed_s=time.monotonic() - t0)
    t0 = time.monotonic()
    with ctx.check("next2/raises"):
        try:
            dist.barrier()
            raise AssertionError("a barrier after a timeout succeeded")
        except RuntimeError as e:
            ctx.record("next2/error", True, str(e), elapsed_s=time.monotonic() - t0)
    ctx.record("exiting", True, "")


def killed_rank(ctx, victim, timeout_s):
    """`victim` SIGKILLs itself after a working all_reduce; the survivors' next collectives must
    raise RuntimeError (not hang, not succeed)."""
    init(ctx, timeout_s)
    r = ctx.rank
    n = 1 << 18
    t = torch.ones(n)
    with ctx.check("warm-up", send=nbytes(t), recv=nbytes(t)):
        dist.all_reduce(t)
        expect_equal(t, torch.full((n,), float(ctx.world)), "warm-up all_reduce")
    if r == victim:
        ctx.record("victim/killing-itself", True, "")
        os.kill(os.getpid(), signal.SIGKILL)
    for k, (what, size) in enumerate((("all_reduce", n), ("all_reduce", 7), ("barrier", 0))):
        t0 = time.monotonic()
        with ctx.check(f"after-kill/{k}/{what}"):
            try:
                if what == "barrier":
                    dist.barrier()
                else:
                    dist.all_reduce(torch.ones(size))
                raise AssertionError(f"{what} succeeded although rank {victim} is dead")
            except RuntimeError as e:
                ctx.record(f"after-kill/{k}/error", True, str(e), elapsed_s=time.monotonic() - t0)
    ctx.record("exiting", True, "")


def p2p_truncation(ctx, timeout_s, sent, posted):
    """Rank 0 sends `sent` float32 to the last rank, whose receive posts room for `posted` (fewer);
    the ranks in between are bystanders. Each rank records how its call ended, then (after
    meeting the others through the store) how a barrier and an all_reduce on the group end."""
    init(ctx, timeout_s)
    r, P = ctx.rank, ctx.world
    odd = P - 1
    store = _store(ctx)
    with ctx.check("warm-up"):
        dist.barrier()
    role = "sender" if r == 0 else "receiver" if r == odd else "bystander"
    t0 = time.monotonic()
    err = None
    try:
        if role == "sender":
            dist.send(torch.ones(sent), dst=odd)
        elif role == "receiver":
            dist.recv(torch.zeros(posted), src=0)
    except Exception as e:  # noqa: B902 - the error is the result
        err = e
    ctx.record("call", True, str(err) if err is not None else "", raised=err is not None,
               error_type=type(err).__name__ if err else None,
               elapsed_s=time.monotonic() - t0, role=role)
    store.set(f"called/{r}", "1")
    store.wait([f"called/{q}" for q in range(P)])
    for op in ("barrier", "all_reduce"):
        t0 = time.monotonic()
        err = None
        try:
            if op == "barrier":
                dist.barrier()
            else:
                dist.all_reduce(torch.ones(10))
        except Exception as e:  # noqa: B902 - the error is the result
            err = e
        ctx.record(op, True, str(err) if err is not None else "", raised=err is not None,
                   error_type=type(err).__name__ if err else None,
                   elapsed_s=time.monotonic() - t0, role=role)
    ctx.record("exiting", True, "")
