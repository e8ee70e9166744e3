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
from sharded_jobs import (MODELS, OPTS, ROWS, Skips, batches, build, compare, expect_raise,
                          init, loss_fn, make_opt, reference, sha)

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


class Functional(nn.Module):
    """b's parameters are read directly (F.linear), b itself never runs."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 3)

    def forward(self, x):
        return nn.functional.linear(torch.tanh(self.a(x)), self.b.weight, self.b.bias)


def same_as_ddp(ctx, name, make_net, steps=5, group=None, **kw):
    """Train make_net() with the wrapper and with DDP (SGD with momentum, 5 steps, this rank's
    own seeded batches) on `group`; they must end with bitwise equal parameters at 2 ranks of
    the group, within the tolerance otherwise (and the buffers on the group's rank 0)."""
    import glucx.torch

    def data(i):
        g = torch.Generator().manual_seed(1000 * i + ctx.rank)
        return torch.randn(ROWS, 4, generator=g, dtype=torch.float64)

    models = []

    def run(wrap):
        torch.manual_seed(5)
        net = make_net().double()
        opt = None
        if wrap:
            model = glucx.torch.ScheduledDataParallel(
                net, lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9), process_group=group,
                **{"partition_bytes": PARTITION_BYTES, **kw})
            models.append(model)
        else:
            model = DDP(net, process_group=group)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        for i in range(steps):
            (model(data(i)) ** 2).mean().backward()
            if opt is not None:
                opt.step()
                opt.zero_grad()
        sd = model.state_dict()   # the wrapper's synchronizes first
        return {k.split("module.", 1)[-1]: v.detach().clone() for k, v in sd.items()}

    with ctx.check(name):
        got, want = run(True), run(False)
        if dist.get_rank(group) != 0:   # DDP leaves these ranks' buffers their own
            params = {n for n, _ in make_net().named_parameters()}
            want = {k: v for k, v in want.items() if k in params}
        if dist.get_world_size(group) == 2:
            bad = [k for k in want if not torch.equal(got[k], want[k])]
            if bad:
                raise AssertionError(f"{name}: {bad} not bitwise DDP's at 2 ranks")
        else:
            compare(got, want, name)
    return models[0]


def scheduler_and_sync_cases(ctx):
    """A learning-rate scheduler on every partition's optimizer, stepped after each backward
    (rank 1's backward sleeps so that rank 0's last partitions complete only in its next
    forward, after the scheduler stepped): DDP's parameters, bitwise at 2 ranks. And
    synchronize()/state_dict() between a forward and its backward with BatchNorm: the backward
    still works (autograd saved the running statistics) and training goes on equal on every
    rank."""
    import glucx.torch

    def data(i):
        g = torch.Generator().manual_seed(1000 * i + ctx.rank)
        return torch.randn(ROWS, 4, generator=g, dtype=torch.float64)

    class SlowFirst(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            h = self.net[0](x)
            if ctx.rank == 1 and h.requires_grad:
                h.register_hook(lambda g: (time.sleep(0.05), g)[1])
            return self.net[2](self.net[1](h))

    def run(wrap):
        torch.manual_seed(5)
        net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
        make = lambda ps: torch.optim.SGD(ps, lr=0.5, momentum=0.9)  # noqa: E731
        if wrap:
            model = glucx.torch.ScheduledDataParallel(SlowFirst(net), make,
                                                      partition_bytes=PARTITION_BYTES)
            opts = model.optimizers
        else:
            model = DDP(SlowFirst(net))
            opts = [make(model.parameters())]
        scheds = [torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) for o in opts]
        for i in range(5):
            (model(data(i)) ** 2).mean().backward()
            if not wrap:
                opts[0].step()
                opts[0].zero_grad()
            for sc in scheds:
                sc.step()
        if wrap:
            model.synchronize()
        return {k: v.detach().clone() for k, v in net.state_dict().items()}

    with ctx.check("lr-scheduler"):
        got, want = run(True), run(False)
        if ctx.world == 2:
            bad = [k for k in want if not torch.equal(got[k], want[k])]
            if bad:
                raise AssertionError(f"lr-scheduler: {bad} not bitwise DDP's at 2 ranks")
        else:
            compare(got, want, "lr-scheduler")

    with ctx.check("sync-between-forward-and-backward"):
        torch.manual_seed(5)
        net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3)).double()
        model = glucx.torch.ScheduledDataParallel(
            net, lambda ps: torch.optim.SGD(ps, lr=0.05), partition_bytes=PARTITION_BYTES)
        for i in range(3):
            loss = model(data(i)).sum()
            model.state_dict()
            model.synchronize()
            loss.backward()
        model.synchronize()
        flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        other = flat.clone()
        dist.broadcast(other, 0)
        if not torch.equal(flat, other):
            raise AssertionError("parameters differ across ranks")


def extra_cases(ctx):
    """Models and groups beyond the plain stack, each against DDP."""
    scheduler_and_sync_cases(ctx)
    # a parameter read outside its module is fine without cross-iteration overlap
    same_as_ddp(ctx, "functional-no-overlap", Functional, overlap_forward=False)
    # weight_norm's own forward pre-hook computes the weight from parameters the update changes
    same_as_ddp(ctx, "weight-norm", lambda: nn.Sequential(
        nn.utils.weight_norm(nn.Linear(4, 8)), nn.Tanh(), nn.Linear(8, 3)))
    # a group without global rank 0: its rank 0 (global rank 1) is the broadcasts' source
    # partition_bytes="auto": one partition per parameter in iteration 0, then the partitioning
    # the alpha-beta fit of that profile predicts best (its optimizers: one per parameter)
    m = same_as_ddp(ctx, "auto-partitions", lambda: nn.Sequential(
        nn.Linear(4, 16), nn.BatchNorm1d(16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
        nn.Linear(16, 3)), partition_bytes="auto")
    ids, costs, chosen = m.partition_decision
    ctx.record("auto-partitions/result", True, "ok", nparts=len(m.partitions), plan=m.plan,
               chosen=chosen, best_cost=min(costs), chosen_cost=costs[ids.index(chosen)],
               noptimizers=len(m.optimizers), planned=m.planned)
    # libglucx's priority scheduling of the partitions' allreduces (chunks of 64 bytes: 4 per
    # partition of 256), with sleeps skewing gradient readiness across ranks
    def skewed_stack():
        return Skewed(nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                                    nn.Linear(16, 3)), ctx.rank)
    m = same_as_ddp(ctx, "preempt-chunks", skewed_stack, preempt_chunk_bytes=64)
    import glucx.torch
    ctx.record("preempt-chunks/result", True, "ok", nparts=len(m.partitions), planned=m.planned,
               thread_priority_after=glucx.torch._C._get_coll_priority())
    members = list(range(1, ctx.world))
    group = dist.new_group(members)
    if ctx.rank in members:
        same_as_ddp(ctx, "group-without-rank-0", lambda: nn.Sequential(
            nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3)), group=group)
    else:
        ctx.record("group-without-rank-0", True, "not a member")


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

    def shape_differs():
        shape = (2, 6) if ctx.rank == 0 else (3, 4)   # the same element count
        net = nn.Module()
        net.w = nn.Parameter(torch.zeros(shape))
        glucx.torch.ScheduledDataParallel(net, sgd)

    expect_raise(ctx, "error/shape-differs", shape_differs, "differs across ranks", rk)

    class NeverDone:   # an allreduce still running, as far as the wrapper can tell
        def is_completed(self):
            return False

    def functional():
        net = Functional()
        model = glucx.torch.ScheduledDataParallel(net, sgd, partition_bytes=64)  # b: its own
        model(torch.ones(2, 4)).sum().backward()
        model.synchronize()
        # b's update pending at the next forward, as when its allreduce is slower than the
        # forward up to b's use (timing-dependent in a real run: injected here on every rank)
        model._part_of[id(net.b.weight)].work = NeverDone()
        model(torch.ones(2, 4)).sum().backward()

    expect_raise(ctx, "error/parameter-used-outside-its-module", functional,
                 "['b.bias', 'b.weight'] were used in the forward without running the module",
                 "overlap_forward=False", rk)

    with ctx.check("error/bad-optimizer"):
        try:
            glucx.torch.ScheduledDataParallel(nn.Sequential(nn.Linear(4, 3)), lambda ps: None)
        except TypeError as e:
            if "not a torch.optim.Optimizer" not in str(e):
                raise AssertionError(f"message: {e}")
        else:
            raise AssertionError("did not raise")

    with ctx.check("error/preempt-chunk-bytes"):
        try:
            glucx.torch.ScheduledDataParallel(nn.Sequential(nn.Linear(4, 3)),
                                              lambda ps: torch.optim.SGD(ps, lr=0.1),
                                              preempt_chunk_bytes=0)
        except ValueError as e:
            if "preempt_chunk_bytes must be an int >= 1" not in str(e):
                raise AssertionError(f"message: {e}")
        else:
            raise AssertionError("did not raise")

    with ctx.check("error/still-trains-after-errors"):
        _, state, _ = train_scheduled(ctx, "mlp", "sgd")
        compare(state, reference("mlp", "sgd", ctx.world), "after errors")


def wide_net():
    """Five 256x256 float64 layers (2.5 MiB): DDP puts them in several buckets (its first
    bucket takes parameters until it holds 1 MiB, later ones here about 100 bytes, i.e. one
    parameter each)."""
    torch.manual_seed(7)
    layers = []
    for _ in range(5):
        layers += [nn.Linear(256, 256), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(256, 3)).double()


def train_ddp_hook(ctx, make_net, ok_, hook_bytes=None, skew=False):
    """DDP on make_net() (buckets of about 100 bytes after DDP's first), with
    glucx.torch.priority_comm_hook of partitions of hook_bytes (None: DDP's own averaging);
    STEPS steps. Returns (the hook's state or None, the parameters and buffers)."""
    import glucx.torch

    net = make_net()
    ddp = DDP(Skewed(net, ctx.rank) if skew else net, bucket_cap_mb=100 / (1 << 20))
    state = glucx.torch.priority_comm_hook(ddp, hook_bytes) if hook_bytes else None
    opt = make_opt(ok_, ddp.parameters())
    g = torch.Generator().manual_seed(5 + ctx.rank)
    width = next(net.parameters()).shape[1]
    for x, y in batches(ctx.world):
        if width != x.shape[1]:   # the wide net: its own inputs, this rank's
            x = torch.randn(ctx.world * ROWS, width, generator=g, dtype=torch.float64)
        opt.zero_grad()
        loss_fn(ddp(chunk(x, ctx)), chunk(y, ctx)).backward()
        opt.step()
    return state, {k: v.detach().clone() for k, v in net.state_dict().items()}


def hook_cases(ctx):
    """The DDP comm-hook form against DDP's own averaging (bitwise at 2 ranks, as for the
    wrapper) and, for the plain models, the reference; each also with skewed timings (same
    result). Buffers: DDP's ranks other than 0 keep their own, so those compare parameters."""
    cases = [(f"hook-{mk}-{ok_}", lambda mk=mk: build(mk), ok_, PARTITION_BYTES // 2)
             for mk in MODELS for ok_ in OPTS]
    cases.append(("hook-wide-sgd", wide_net, "sgd", 128 << 10))
    for name, make_net, ok_, nbytes in cases:
        with ctx.check(f"{name}/matches-ddp"):
            state, got = train_ddp_hook(ctx, make_net, ok_, nbytes)
            _, ddp = train_ddp_hook(ctx, make_net, ok_)
            _, skewed = train_ddp_hook(ctx, make_net, ok_, nbytes, skew=True)
            names = {n for n, _ in make_net().named_parameters()}
            mine = {k: v for k, v in got.items() if ctx.rank == 0 or k in names}
            if not name.startswith("hook-wide"):
                mk = name.split("-")[1]
                compare(mine, {k: v for k, v in reference(mk, ok_, ctx.world).items()
                               if k in mine}, f"{name} against the reference")
            compare(mine, {k: ddp[k] for k in mine}, f"{name} against DDP")
            ctx.record(f"{name}/result", True, "ok", param_sha256=sha({k: got[k] for k in names}),
                       ddp_param_sha256=sha({k: ddp[k] for k in names}),
                       skewed_param_sha256=sha({k: skewed[k] for k in names}),
                       plan=state.plan, planned=state.planned, nparts=len(state.plan or []),
                       nbuckets=len(state.layout or []))
    import glucx.torch

    with ctx.check("hook/bad-partition-bytes"):
        try:
            glucx.torch.PriorityHookState(None, 0)
        except ValueError as e:
            if "partition_bytes must be an int >= 1, got 0" not in str(e):
                raise AssertionError(f"message: {e}")
        else:
            raise AssertionError("did not raise")
    ddp = DDP(build("mlp"))
    glucx.torch.priority_comm_hook(ddp)
    expect_raise(ctx, "hook/second-hook-refused", lambda: glucx.torch.priority_comm_hook(ddp),
                 "once")


def scheduled(ctx, backend, timeout_s=60):
    with ctx.check("init"):
        init(ctx, backend, timeout_s * time_scale())
    train_and_check(ctx)
    hook_cases(ctx)
    extra_cases(ctx)
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
