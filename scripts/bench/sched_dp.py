#!/usr/bin/env python3
"""Step time of data-parallel training: DDP (over Gloo TCP or the glucx backend) against
glucx.torch.ScheduledDataParallel, one rank per process as glucx-cluster run starts them.

The model: an MLP of LAYERS Linear(WIDTH, WIDTH) + ReLU layers and a Linear(WIDTH, 10) head,
float32, batch BATCH of random inputs and labels (fixed seed), cross entropy, SGD (lr 0.01,
momentum 0.9). torch.set_num_threads(1). Parameters: LAYERS x WIDTH^2 x 4 bytes, about.

Modes (--mode):
  ddp-gloo     DDP on init_process_group("gloo") (Gloo's TCP transport), default 25 MB buckets
  ddp-glucx    DDP on init_process_group("glucx")
  sched-glucx  ScheduledDataParallel on "glucx" (--partition-bytes, default 4 MiB)
  sched-auto   ScheduledDataParallel on "glucx" with partition_bytes="auto"
  sched-preempt  sched-glucx with preempt_chunk_bytes (--preempt-chunk-bytes, default 1 MiB):
               the partitions' allreduces scheduled by priority in libglucx, cut into chunks
  sharded      glucx.torch.ShardedDataParallel on "glucx" (units: the Linear layers; --prefetch,
               default 1); the allgather algorithm is the selection's unless GLUCX_TUNE says
               otherwise (scripts/bench/sharded_ag.sh)
  compute      no process group: forward, backward and step only (the compute floor)

Timing: WARMUP untimed steps, a barrier, ITERS steps, then (scheduled) synchronize() and a
barrier; rank 0 prints one line "mode ms_per_step" (the wall time over ITERS steps / ITERS).
Rendezvous: env:// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE as glucx-cluster run sets them).

--instrument (ddp-glucx): glucx.torch.instrument(model, optimizer), so that under glucx-trace
DDP's iterations and compute phases are recorded as ScheduledDataParallel records its own
(scripts/bench/sched_exposed.sh compares their exposed communication).

usage: sched_dp.py --mode M [--iters 20] [--warmup 5] [--width 512] [--layers 8] [--batch 64]
                   [--partition-bytes N] [--preempt-chunk-bytes N] [--prefetch K] [--instrument]
"""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def build(width, layers):
    torch.manual_seed(7)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    mods.append(nn.Linear(width, 10))
    return nn.Sequential(*mods)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True,
                    choices=["ddp-gloo", "ddp-glucx", "sched-glucx", "sched-auto", "sched-preempt",
                             "sharded", "compute"])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--partition-bytes", type=int, default=4 << 20)
    ap.add_argument("--preempt-chunk-bytes", type=int, default=1 << 20)
    ap.add_argument("--prefetch", type=int, default=1, help="sharded: units prefetched")
    ap.add_argument("--instrument", action="store_true",
                    help="ddp-glucx: glucx.torch.instrument() the DDP model (trace events)")
    a = ap.parse_args()
    if a.instrument and a.mode != "ddp-glucx":
        ap.error("--instrument is for --mode ddp-glucx (sched-glucx records its own events)")
    torch.set_num_threads(1)
    net = build(a.width, a.layers)
    nbytes = sum(p.numel() * p.element_size() for p in net.parameters())   # before sharding
    g = torch.Generator().manual_seed(11 + int(os.environ.get("RANK", "0")))
    x = torch.randn(a.batch, a.width, generator=g)
    y = torch.randint(0, 10, (a.batch,), generator=g)
    loss_fn = nn.CrossEntropyLoss()

    def sgd(ps):
        return torch.optim.SGD(ps, lr=0.01, momentum=0.9)

    rank, model, opt, done = 0, net, None, (lambda: None)
    if a.mode != "compute":
        backend = "gloo" if a.mode == "ddp-gloo" else "glucx"
        if backend == "glucx":
            import glucx.torch
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=300))
        rank = dist.get_rank()
        if a.mode.startswith("ddp"):
            model = nn.parallel.DistributedDataParallel(net)
        elif a.mode == "sharded":
            model = glucx.torch.ShardedDataParallel(net, prefetch=a.prefetch)
        else:   # the wrapper steps each partition itself: no optimizer here
            model = glucx.torch.ScheduledDataParallel(
                net, sgd, partition_bytes="auto" if a.mode == "sched-auto" else a.partition_bytes,
                preempt_chunk_bytes=a.preempt_chunk_bytes if a.mode == "sched-preempt" else None)
            done = model.synchronize
    if not a.mode.startswith("sched"):
        opt = sgd(model.parameters())
    if a.instrument:
        glucx.torch.instrument(model, opt)

    def step():
        if opt is not None:
            opt.zero_grad()
        loss_fn(model(x), y).backward()
        if opt is not None:
            opt.step()

    for _ in range(a.warmup):
        step()
    done()
    if a.mode != "compute":
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        step()
    done()
    if a.mode != "compute":
        dist.barrier()
    ms = (time.perf_counter() - t0) * 1e3 / a.iters
    if rank == 0:
        print(f"{a.mode} {ms:.1f} ms/step (params {nbytes / 2**20:.1f} MiB, batch {a.batch}, "
              f"world {dist.get_world_size() if dist.is_initialized() else 1})", flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
