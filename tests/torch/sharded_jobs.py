"""Rank-side jobs of test_backend_sharded.py: glucx.torch.ShardedDataParallel (issue 18 item 3).

Started by backend_harness.spawn(..., jobs_module="sharded_jobs"); each check is one JSON line
(gloo_jobs.RankContext). The reference each sharded run is compared with is computed in the same
rank, without communication: the unwrapped model trained in this process on the global batch
(every rank's rows, rebuilt from a seeded generator), the loss averaged over the ranks' chunks,
which is DDP's gradient average. Models are float64: the sharded run sums per-rank partial
gradients and then sums across ranks, the reference sums in one pass, so results agree to
rounding (a few ulps per step), not bitwise; the tolerance below is far under any real defect
(the sum-instead-of-average control must exceed it).
"""
import datetime
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from gloo_harness import time_scale
from gloo_jobs import RankContext  # noqa: F401 -- the harness builds ranks' contexts from it

STEPS = 5
ROWS = 4          # rows per rank and step
RTOL, ATOL = 1e-9, 1e-12
MODELS = ("mlp", "bn")
OPTS = ("sgd", "adam")
PREFETCH = (0, 1, 2)
# (prefetch, reshard_after_forward) runs: the kept-buffer mode at 3 distances, resharding at 2
RUNS = [(p, False) for p in PREFETCH] + [(0, True), (1, True)]


def run_name(mk, ok_, pf, reshard):
    return f"{mk}-{ok_}-prefetch{pf}" + ("-reshard" if reshard else "")


def build(kind):
    torch.manual_seed(1234)
    if kind == "mlp":   # parameter counts 70, 77, 24: padded at 2 and 3 ranks
        net = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 7), nn.Tanh(),
                            nn.Linear(7, 3))
    else:
        # no bias before BatchNorm: its gradient is exactly 0 mathematically, so it is rounding
        # noise, which Adam scales up to steps of lr and the comparison could not be tight
        net = nn.Sequential(nn.Linear(6, 10, bias=False), nn.BatchNorm1d(10), nn.ReLU(),
                            nn.Linear(10, 3))
    return net.double()


def make_opt(kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    return torch.optim.Adam(params, lr=0.01)


def batches(world):
    g = torch.Generator().manual_seed(99)
    out = []
    for _ in range(STEPS):
        x = torch.randn(world * ROWS, 6, generator=g, dtype=torch.float64)
        y = torch.randn(world * ROWS, 3, generator=g, dtype=torch.float64)
        out.append((x, y))
    return out


def loss_fn(out, y):
    return ((out - y) ** 2).mean()


def reference(model_kind, opt_kind, world, scale=1.0):
    """The same training in this process: every rank's chunk through the unwrapped model (BatchNorm
    sees one rank's rows at a time, as each rank does), the chunks' losses averaged (times
    `scale`: the negative control passes `world`, i.e. sum instead of average). Running
    statistics follow rank 0's chunk (the wrapper broadcasts rank 0's buffers every forward)."""
    net = build(model_kind)
    opt = make_opt(opt_kind, net.parameters())
    for x, y in batches(world):
        opt.zero_grad()
        # fresh buffer tensors per chunk: BatchNorm's backward keeps the ones it updated
        slots = [(m, n) for m in net.modules() for n in m._buffers if m._buffers[n] is not None]
        saved = [m._buffers[n].clone() for m, n in slots]
        losses, after0 = [], None
        for r in range(world):
            for (m, n), s in zip(slots, saved):
                m._buffers[n] = s.clone()
            losses.append(loss_fn(net(x[r * ROWS:(r + 1) * ROWS]), y[r * ROWS:(r + 1) * ROWS]))
            if r == 0:
                after0 = [m._buffers[n] for m, n in slots]
        for (m, n), a in zip(slots, after0):
            m._buffers[n] = a
        (sum(losses) * (scale / world)).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def sha(tensors):
    h = hashlib.sha256()
    for k in sorted(tensors):
        h.update(k.encode())
        h.update(tensors[k].contiguous().numpy().tobytes())
    return h.hexdigest()


def compare(got, want, what):
    for k, w in want.items():
        if k not in got:
            raise AssertionError(f"{what}: {k} missing (have {sorted(got)})")
        g = got[k]
        if g.dtype != w.dtype or g.shape != w.shape:
            raise AssertionError(f"{what}: {k} is {g.dtype}{tuple(g.shape)}, "
                                 f"want {w.dtype}{tuple(w.shape)}")
        if not torch.allclose(g, w, rtol=RTOL, atol=ATOL):
            err = (g - w).abs().max().item()
            raise AssertionError(f"{what}: {k} differs by up to {err:.3e} (rtol {RTOL}, "
                                 f"atol {ATOL})")


def init(ctx, backend, timeout_s):
    import glucx.torch  # noqa: F401 -- registers the backend (the start-up hook does too)

    dist.init_process_group(backend, rank=ctx.rank, world_size=ctx.world,
                            timeout=datetime.timedelta(seconds=timeout_s))


def train(ctx, model_kind, opt_kind, prefetch, reshard=False):
    import glucx.torch

    net = build(model_kind)
    model = glucx.torch.ShardedDataParallel(net, prefetch=prefetch,
                                            reshard_after_forward=reshard)
    opt = make_opt(opt_kind, model.parameters())
    r = ctx.rank
    model.freed_after_forward = []   # per step, with reshard: every unit's storage was freed
    for x, y in batches(ctx.world):
        opt.zero_grad()
        loss = loss_fn(model(x[r * ROWS:(r + 1) * ROWS]), y[r * ROWS:(r + 1) * ROWS])
        if reshard:
            model.freed_after_forward.append(all(
                u.graph_full is not None and u.graph_full.storage().size() == 0
                for u in model._units))
        loss.backward()
        opt.step()
    full = model.gathered_parameters()
    buffers = {k: v.detach().clone() for k, v in net.named_buffers()}
    return model, full, buffers


def train_and_check(ctx, backend):
    for mk in MODELS:
        for ok_ in OPTS:
            want = reference(mk, ok_, ctx.world)
            for pf, reshard in RUNS:
                name = run_name(mk, ok_, pf, reshard)
                info = {}
                with ctx.check(f"{name}/matches-reference"):
                    model, full, buffers = train(ctx, mk, ok_, pf, reshard)
                    info = {"sha256": sha(full), "base_ops": model._base_ops,
                            "prefetched": model.prefetched_gathers,
                            "regathered": model.regathered,
                            "freed_after_forward": model.freed_after_forward,
                            "shard_sizes": model.shard_sizes, "unit_sizes": model.unit_sizes,
                            "nparams": sum(p.numel() for p in model.parameters())}
                    compare(full, {k: v for k, v in want.items() if k in full}, name)
                    if ctx.rank == 0:   # the buffers every rank takes at the next forward
                        compare(buffers, {k: v for k, v in want.items() if k not in full},
                                f"{name} buffers")
                    if ok_ == "sgd" and pf == 1 and not reshard:
                        # evaluation under no_grad (gathers freed after each unit) computes what
                        # an unsharded copy with the gathered parameters computes, bitwise
                        plain = build(mk)
                        plain.load_state_dict({**full, **buffers})
                        plain.eval()
                        model.eval()
                        x = batches(ctx.world)[0][0]
                        with torch.no_grad():
                            got, want_out = model(x), plain(x)
                        model.train()
                        if not torch.equal(got, want_out):
                            raise AssertionError(f"{name}: no_grad forward differs from the "
                                                 f"unsharded model by "
                                                 f"{(got - want_out).abs().max().item():.3e}")
                        info["no_grad_forward_equal"] = True
                    if mk == "mlp" and ok_ == "sgd" and pf == 1 and not reshard:
                        # negative control: a sum over ranks instead of DDP's average differs
                        bad = reference(mk, ok_, ctx.world, scale=ctx.world)
                        try:
                            compare(full, bad, "control")
                        except AssertionError:
                            info["control_differs"] = True
                        else:
                            info["control_differs"] = False
                ctx.record(f"{name}/result", True, "ok", **info)


def expect_raise(ctx, name, fn, *patterns):
    with ctx.check(name):
        try:
            fn()
        except RuntimeError as e:
            msg = str(e)
            missing = [p for p in patterns if p not in msg]
            if missing:
                raise AssertionError(f"message lacks {missing}: {msg}")
            ctx.record(f"{name}/message", True, msg)
            return
        raise AssertionError("did not raise")


class Skips(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.a(x)     # b never runs: unused parameters


class Detached(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        self.b(x)            # runs, but its output is not in the loss
        return self.a(x)


def error_cases(ctx):
    import glucx.torch

    rk = f"rank {ctx.rank} of {ctx.world}"

    def shared():
        net = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
        net[1].weight = net[0].weight
        glucx.torch.ShardedDataParallel(net)

    expect_raise(ctx, "error/shared-parameter", shared, "shared between units", "(4, 4)", rk)

    def no_sync():
        model = glucx.torch.ShardedDataParallel(nn.Sequential(nn.Linear(4, 3)))
        with model.no_sync():
            model(torch.zeros(2, 4)).sum().backward()

    expect_raise(ctx, "error/no_sync", no_sync, "no_sync() is not supported", rk)

    def unused():
        glucx.torch.ShardedDataParallel(Skips())(torch.zeros(2, 4)).sum().backward()

    expect_raise(ctx, "error/unused-unit", unused, "['b'] did not run", rk)

    def no_grad():
        glucx.torch.ShardedDataParallel(Detached())(torch.ones(2, 4)).sum().backward()

    expect_raise(ctx, "error/no-gradient", no_grad, "['b'] ran in the forward but received "
                 "no gradient", rk)

    def mismatch():
        width = 4 + ctx.rank   # each rank builds a different model
        glucx.torch.ShardedDataParallel(nn.Sequential(nn.Linear(width, 3)))

    expect_raise(ctx, "error/structure-differs", mismatch, "differs across ranks",
                 "ranks [1", rk)

    def two_forwards():
        model = glucx.torch.ShardedDataParallel(nn.Sequential(nn.Linear(4, 3)))
        a = model(torch.ones(2, 4)).sum()
        b = model(torch.ones(2, 4)).sum()
        (a + b).backward()

    expect_raise(ctx, "error/two-forwards-one-backward", two_forwards, "earlier forward", rk)

    with ctx.check("error/still-trains-after-errors"):
        model, full, _ = train(ctx, "mlp", "sgd", 1)
        compare(full, reference("mlp", "sgd", ctx.world), "after errors")


def sharded(ctx, backend, timeout_s=60):
    with ctx.check("init"):
        init(ctx, backend, timeout_s * time_scale())
    train_and_check(ctx, backend)
    error_cases(ctx)
    with ctx.check("barrier-at-end"):
        dist.barrier()
    dist.destroy_process_group()


def peer_dies(ctx, backend, timeout_s=15):
    """Rank 1 fails (raises, so its process exits with an error) after construction; rank 0's
    next forward must raise, not hang, and rank 0 exits."""
    import glucx.torch

    init(ctx, backend, timeout_s * time_scale())
    model = glucx.torch.ShardedDataParallel(build("mlp"), prefetch=1)
    dist.barrier()
    if ctx.rank == 1:
        raise RuntimeError("rank 1 fails on purpose")
    time.sleep(0.5)
    t0 = time.monotonic()
    with ctx.check("forward-raises-after-peer-died"):
        try:
            for _ in range(3):
                model(torch.zeros(2, 6, dtype=torch.float64)).sum().backward()
        except RuntimeError as e:
            ctx.record("forward-raises-after-peer-died/message", True, str(e),
                       elapsed_s=time.monotonic() - t0)
        else:
            raise AssertionError("training went on with a dead peer")
    sys.stdout.flush()
    # the group is broken: leave without destroy_process_group's collective teardown
    os._exit(0)


def hierarchical(ctx, backend, timeout_s=60):
    """4 ranks on this host posing as 2 hosts of 2 ranks (GLUCX_HOSTID per rank, read when the
    group's context is created): packages exist, so glucx's selection should pick its
    hierarchical (fast-link-offloading) allgather and reduce-scatter rows for the wrapper's
    base collectives. Records the selection for every unit's sizes and checks the training."""
    import glucx.torch  # noqa: F401

    os.environ["GLUCX_HOSTID"] = f"sharded-test-host{ctx.rank // 2}"
    with ctx.check("init"):
        init(ctx, backend, timeout_s * time_scale())
    pg = dist.distributed_c10d._get_default_group()
    for mk, ok_ in (("mlp", "adam"), ("bn", "sgd")):
        name = f"{mk}-{ok_}-prefetch1"
        with ctx.check(f"{name}/matches-reference"):
            model, full, buffers = train(ctx, mk, ok_, 1)
            want = reference(mk, ok_, ctx.world)
            compare(full, {k: v for k, v in want.items() if k in full}, name)
            es = torch.tensor([], dtype=torch.float64).element_size()
            algos = {}
            for n, s in zip(model.unit_names, model.shard_sizes):
                algos[n] = {"allgather": pg.algorithm("allgather", s * ctx.world * es),
                            "reduce_scatter": pg.algorithm("reduce_scatter",
                                                           s * ctx.world * es)}
            ctx.record(f"{name}/result", True, "ok", sha256=sha(full), algorithms=algos,
                       base_ops=model._base_ops)
    with ctx.check("barrier-at-end"):
        dist.barrier()
    dist.destroy_process_group()
