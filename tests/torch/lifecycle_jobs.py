"""Rank-side jobs about the end of a group (issue 13), run by test_backend_lifecycle.py.

group_churn: `cycles` times, new_group over every rank, one all_reduce on it, and
destroy_process_group(group) right after the all_reduce returned. The ranks take turns being
late, so the first rank to destroy the group often does it while a peer is still inside the
all_reduce. Every value is checked against a closed form in (rank, cycle, index).

early_destroy: rank 0 destroys a group while the other ranks call an all_reduce on it, which
rank 0 never joins: they must raise well before the group's timeout, naming rank 0.
"""
import datetime
import gc
import time

import torch
import torch.distributed as dist

from gloo_jobs import RankContext, expect_equal  # noqa: F401 - RankContext for the harness

COUNTS = (1, 1031, 70001, 0, 17)  # eager, rendezvous-sized, empty


def _init(ctx, backend, timeout_s):
    dist.init_process_group(backend, rank=ctx.rank, world_size=ctx.world,
                            timeout=datetime.timedelta(seconds=timeout_s))


def _value(rank, cycle, n):
    return (torch.arange(n, dtype=torch.int64) % 1021 + rank * 7919 + cycle * 31).to(torch.int32)


def group_churn(ctx, backend, cycles, timeout_s):
    _init(ctx, backend, timeout_s)
    r, P = ctx.rank, ctx.world
    done = 0
    with ctx.check("churn"):
        for c in range(cycles):
            g = dist.new_group(list(range(P)), backend=backend)
            n = COUNTS[c % len(COUNTS)]
            t = _value(r, c, n)
            if r == c % P:
                time.sleep(0.001 * (1 + c % 3))  # this cycle's late rank
            dist.all_reduce(t, group=g)
            want = torch.zeros(n, dtype=torch.int64)
            for q in range(P):
                want = torch.add(want, _value(q, c, n).to(torch.int64))
            expect_equal(t, want.to(torch.int32), f"cycle {c}: all_reduce of {n} int32")
            dist.destroy_process_group(g)
            done += 1
    ctx.record("cycles", done == cycles, f"{done} of {cycles} cycles", cycles=done)
    with ctx.check("default-group-after"):
        t = torch.full((5,), float(r))
        dist.all_reduce(t)
        expect_equal(t, torch.full((5,), float(sum(range(P)))), "all_reduce on the default group")
    dist.destroy_process_group()


def early_destroy(ctx, backend, timeout_s):
    _init(ctx, backend, timeout_s)
    r = ctx.rank
    g = dist.new_group(list(range(ctx.world)), backend=backend)
    with ctx.check("warm-up"):
        dist.barrier(group=g)
    if r == 0:
        dist.destroy_process_group(g)
        # the group object itself goes (as at the next new_group of a loop); while Python holds
        # it, the backend is alive, with any backend
        del g
        gc.collect()
        ctx.record("destroyed", True, "")
    else:
        t0 = time.monotonic()
        try:
            dist.all_reduce(torch.ones(64), group=g)
            ctx.record("raised", False, "all_reduce returned although rank 0 destroyed the group",
                       elapsed_s=time.monotonic() - t0)
        except RuntimeError as e:
            ctx.record("raised", True, str(e), elapsed_s=time.monotonic() - t0)
    # the default group still works for everyone
    with ctx.check("default-group-after"):
        t = torch.ones(3)
        dist.all_reduce(t)
        expect_equal(t, torch.full((3,), float(ctx.world)), "all_reduce on the default group")
    dist.destroy_process_group()
