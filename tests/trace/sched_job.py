#!/usr/bin/env python3
"""A 2-rank ScheduledDataParallel job for test_instr_sched.py: run under `glucx-trace record`,
it trains an MLP of four layers (one partition per layer, so the plan has four order
decisions per iteration) with a rank- and layer-dependent sleep in backward, and writes per
rank out/rank<R>.json: pid, steps, plan, profile and decisions (ScheduledDataParallel's own
record of what it emitted) and whether the parameters agree across ranks.

    sched_job.py --port P --out DIR --steps S [--auto]

--auto: partition_bytes="auto" (one partition per parameter in iteration 0, then the grouping
choose_partitions predicts best); the rank files then carry partition_decision too.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

RANKS = 2


class Slow(torch.autograd.Function):
    """Identity whose backward sleeps `delay` seconds: gradients ready at skewed times."""

    @staticmethod
    def forward(ctx, x, delay):
        ctx.delay = delay
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        time.sleep(ctx.delay)
        return g, None


class Net(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(64, 64) for _ in range(4)])
        self.rank = rank

    def forward(self, x):
        for i, lin in enumerate(self.layers):
            x = Slow.apply(torch.relu(lin(x)), 0.002 * (i + 1) * (self.rank + 1))
        return x.sum(dim=1)


def run(rank, a):
    import glucx  # noqa: F401 -- registers the backend
    import glucx.torch

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    dist.init_process_group("glucx", rank=rank, world_size=RANKS)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # 64x64 + 64 float32 = 16.9 KiB per layer: one layer per partition
    model = glucx.torch.ScheduledDataParallel(
        Net(rank), lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
        partition_bytes="auto" if a.auto else 20000, preempt_chunk_bytes=a.preempt)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(a.steps):
        x = torch.randn(16, 64, generator=gen)
        model(x).pow(2).mean().backward()
    model.synchronize()
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    other = flat.clone()
    dist.broadcast(other, 0)
    with open(os.path.join(a.out, "rank%d.json" % rank), "w") as f:
        json.dump({"pid": os.getpid(), "steps": a.steps, "plan": model.plan,
                   "partitions": len(model.partitions), "profile": model.profile,
                   "decisions": model.decisions,
                   "partition_decision": model.partition_decision,
                   "part_bytes": [b for _, b, _ in model.partitions],
                   "agree": bool(torch.equal(flat, other))}, f)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--auto", action="store_true")
    ap.add_argument("--preempt", type=int, default=None,
                    help="preempt_chunk_bytes (libglucx priority scheduling of the allreduces)")
    a = ap.parse_args()
    mp.start_processes(run, args=(a,), nprocs=RANKS, start_method="spawn")


if __name__ == "__main__":
    main()
