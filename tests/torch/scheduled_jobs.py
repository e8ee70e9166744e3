"""Rank-side jobs of test_backend_scheduled.py: glucx.torch.ScheduledDataParallel (issue 18 item 2).

Started by backend_harness.spawn(..., jobs_module="scheduled_jobs"); each check is one JSON line
(gloo_jobs.RankContext). Each scheduled run is compared with two independent computations:
  * DistributedDataParallel on the same backend, same model, batches and optimizer: at 2 ranks
    bitwise (both average g0/2 + g1/2: halving is exact and a sum of two is one rounding,
    whatever the order), at 3 ranks within the tolerance (the partitions' sums and DDP's
    buckets' sums may associate differently);
  * the unwrapped model trained in this process on the global batch (sharded_jobs.reference:
    DDP's semantics computed without communication), within the tolerance.
The models, batches, optimizers and the reference are sharded_jobs'.
"""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from gloo_harness import time_scale
from gloo_jobs import RankContext  # noqa: F401 -- the harness builds ranks' contexts from it
from sharded_jobs import (MODELS, OPTS, ROWS, batches, build, compare, expect_raise, init,
                          loss_fn, make_opt, reference, sha)

# small partitions so that every model has several (float64: 32 elements each at most)
PARTITION_BYTES = 256


def chunk(x, ctx):
    return x[ctx.rank * ROWS:(ctx.rank + 1) * ROWS]


class Skewed(nn.Module):
    """The model with rank- and step-dependent sleeps in one layer's forward and in the
    backward of another: gradients become ready at different times on different ranks."""

    def __init__(self, net, rank):
        super().__init__()
        self.net, self.rank, self.step = net, rank, 0

    def forward(self, x):
        self.step += 1
        h = x
        for i, layer in enumerate(self.net):
            if i == 0 and (self.rank + self.step) % 2 == 0:
                time.sleep(0.03)
            h = layer(h)
            if i == 1 and h.requires_grad:
                slow = (self.rank + self.step) % 3 == 0
                h.register_hook(lambda g, slow=slow: (time.sleep(0.04) if slow else None, g)[1])
        return h


def net_params(mk):
    return list(build(mk).named_parameters())


def train_scheduled(ctx, mk, ok_, skew=False, steps=None):
    import glucx.torch

    net = build(mk)
    wrapped = Skewed(net, ctx.rank) if skew else net
    model = glucx.torch.ScheduledDataParallel(wrapped, lambda ps: make_opt(ok_, ps),
                                              partition_bytes=PARTITION_BYTES)
    pending_at_forward = []
    for i, (x, y) in enumerate(batches(ctx.world)):
        if steps is not None and i >= steps:
            break
        # partitions whose update had not finished when this forward began (overlap, recorded)
        pending_at_forward.append(model.pending())
        loss_fn(model(chunk(x, ctx)), chunk(y, ctx)).backward()
    model.synchronize()
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    return model, state, pending_at_forward


def train_ddp(ctx, mk, ok_):
    net = build(mk)
    ddp = DDP(net)
    opt = make_opt(ok_, ddp.parameters())
    for x, y in batches(ctx.world):
        opt.zero_grad()
        loss_fn(ddp(chunk(x, ctx)), chunk(y, ctx)).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def train_and_check(ctx):
    for mk in MODELS:
        for ok_ in OPTS:
            name = f"{mk}-{ok_}"
            with ctx.check(f"{name}/matches-ddp"):
                model, state, pending = train_scheduled(ctx, mk, ok_)
                ddp = train_ddp(ctx, mk, ok_)
                want = reference(mk, ok_, ctx.world)
                compare(state, want, f"{name} against the reference")
                # DDP leaves each rank's buffers as its own last forward updated them (rank 0's
                # come at the next forward); after synchronize() every rank holds rank 0's
                names = {n for n, _ in net_params(mk)}
                compare(state, {k: v for k, v in ddp.items() if ctx.rank == 0 or k in names},
                        f"{name} against DDP")
                info = {"sha256": sha(state),
                        "param_sha256": sha({k: state[k] for k in names}),
                        "ddp_param_sha256": sha({k: ddp[k] for k in names}),
                        "ddp_sha256": sha(ddp), "plan": model.plan,
                        "planned": model.planned, "nparts": len(model.partitions),
                        "priorities": [p[2] for p in model.partitions],
                        "pending_at_forward": pending}
                if mk == "mlp" and ok_ == "sgd":
                    bad = reference(mk, ok_, ctx.world, scale=ctx.world)
                    try:
                        compare(state, bad, "control")
                    except AssertionError:
                        info["control_differs"] = True
                    else:
                        info["control_differs"] = False
                ctx.record(f"{name}/result", True, "ok", **info)
            with ctx.check(f"{name}/skewed"):
                _, skewed, _ = train_scheduled(ctx, mk, ok_, skew=True)
                ctx.record(f"{name}/skewed-result", True, "ok", sha256=sha(skewed))


class Skips(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.a(x)     # b never runs: unused parameters


def error_cases(ctx):
    import glucx.torch

    rk = f"rank {ctx.rank} of {ctx.world}"
    sgd = lambda ps: torch.optim.SGD(ps, lr=0.1)  # noqa: E731

    def no_sync():
        model = glucx.torch.ScheduledDataParallel(nn.Sequential(nn.Linear(4, 3)), sgd)
        with model.no_sync():
            model(torch.zeros(2, 4)).sum().backward()

    expect_raise(ctx, "error/no_sync", no_sync, "no_sync() is not supported")

    def second_backward():
        model = glucx.torch.ScheduledDataParallel(nn.Sequential(nn.Linear(4, 3)), sgd)
        loss = model(torch.ones(2, 4)).sum()
        loss.backward(retain_graph=True)
        loss.backward()

    expect_raise(ctx, "error/second-backward", second_backward, "second backward pass", rk)

    def unused():
        glucx.torch.ScheduledDataParallel(Skips(), sgd)(torch.zeros(2, 4)).sum().backward()

    expect_raise(ctx, "error/unused-parameters", unused, "['b.bias', 'b.weight']",
                 "received no gradient", rk)

    def mismatch():
        width = 4 + ctx.rank   # each rank builds a different model
        glucx.torch.ScheduledDataParallel(nn.Sequential(nn.Linear(width, 3)), sgd)

    expect_raise(ctx, "error/structure-differs", mismatch, "differs across ranks", "ranks [1",
                 rk)

    with ctx.check("error/bad-optimizer"):
        try:
            glucx.torch.ScheduledDataParallel(nn.Sequential(nn.Linear(4, 3)), lambda ps: None)
        except TypeError as e:
            if "not a torch.optim.Optimizer" not in str(e):
                raise AssertionError(f"message: {e}")
        else:
            raise AssertionError("did not raise")

    with ctx.check("error/still-trains-after-errors"):
        _, state, _ = train_scheduled(ctx, "mlp", "sgd")
        compare(state, reference("mlp", "sgd", ctx.world), "after errors")


def scheduled(ctx, backend, timeout_s=60):
    with ctx.check("init"):
        init(ctx, backend, timeout_s * time_scale())
    train_and_check(ctx)
    error_cases(ctx)
    with ctx.check("barrier-at-end"):
        dist.barrier()
    dist.destroy_process_group()


def peer_dies(ctx, backend, timeout_s=15):
    """Rank 1 fails (its process exits with an error) after two steps, while its partitions'
    allreduces of step 2 may still run on rank 0: rank 0's next forward (or synchronize) must
    raise, not hang."""
    import os
    import sys

    import glucx.torch

    init(ctx, backend, timeout_s * time_scale())
    model = glucx.torch.ScheduledDataParallel(build("mlp"), lambda ps: make_opt("sgd", ps),
                                              partition_bytes=PARTITION_BYTES)
    x = torch.zeros(ROWS, 6, dtype=torch.float64)
    for _ in range(2):
        model(x).sum().backward()
    if ctx.rank == 1:
        raise RuntimeError("rank 1 fails on purpose")
    t0 = time.monotonic()
    with ctx.check("raises-after-peer-died"):
        try:
            for _ in range(3):
                model(x).sum().backward()
            model.synchronize()
        except RuntimeError as e:
            ctx.record("raises-after-peer-died/message", True, str(e),
                       elapsed_s=time.monotonic() - t0)
        else:
            raise AssertionError("training went on with a dead peer")
    sys.stdout.flush()
    os._exit(0)   # the group is broken: no collective teardown
