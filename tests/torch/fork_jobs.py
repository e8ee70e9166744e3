"""Rank-side jobs about fork() (issue 14), run by test_backend_fork.py.

dataloader: a process group exists (the `glucx` backend, or Gloo with GLOO_DEVICE_TRANSPORT=UCX)
and a thread of the rank maps and unmaps memory in a loop, so the DataLoader's forks land while
it is inside mmap (UCX hooks mmap and holds a lock there). Then:

* "epoch": a torch.utils.data.DataLoader with num_workers=2 and the fork start method iterates
  an epoch; the workers build each item from a closed form in its index; for every batch the
  rank checks the batch and all_reduces a tensor made from it, checked against the closed form
  summed over the ranks. So the group keeps working while forked workers exist.
* "worker-collective": a second fork DataLoader whose two workers each call, on the group they
  inherited, all_reduce, barrier, broadcast and send; every call must raise at once (long before
  the group's timeout) with a text naming the fork and the spawn/forkserver start methods, and
  none may hang (the DataLoader's own timeout turns a hang into a failed check). With
  `destroy_in_worker`, each worker then destroys a second group of the parent (new_group over
  every rank) with destroy_process_group(group) and gc.collect(), which must return without
  telling the peers anything. (Not the default group: destroying it destroys the default
  TCPStore, whose destructor in PyTorch 1.13 joins a store thread that only rank 0's parent
  has, and crashes the worker, whatever the backend.)
* "after": both groups still work: all_reduces and a send/recv, values checked; the peers saw
  nothing from the workers (a worker's orderly leave or abort would have failed the group).
"""
import datetime
import gc
import mmap
import os
import threading
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

from gloo_jobs import RankContext, expect_equal  # noqa: F401 - RankContext for the harness

ITEMS = 48
BATCH = 4
WIDTH = 8
OPS = ("all_reduce", "barrier", "broadcast", "send")


def _item(i):
    return torch.arange(WIDTH, dtype=torch.float32) + 100.0 * i


class Items(Dataset):
    """Item i is _item(i), computed in the worker."""

    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        return _item(i)


class CollectiveInWorker(Dataset):
    """Each item (one per worker) calls every operation of OPS on the inherited default group and
    returns what happened: {op: (raised, text, seconds)}, and the worker's pid."""

    def __init__(self, rank, world, destroy):
        self.rank, self.world, self.destroy = rank, world, destroy  # destroy: a group or None

    def __len__(self):
        return 2

    def __getitem__(self, i):
        out = {}
        for op in OPS:
            t0 = time.monotonic()
            try:
                t = torch.ones(4)
                if op == "all_reduce":
                    dist.all_reduce(t)
                elif op == "barrier":
                    dist.barrier()
                elif op == "broadcast":
                    dist.broadcast(t, src=0)
                else:
                    dist.send(t, dst=(self.rank + 1) % self.world)
                out[op] = (False, "returned", time.monotonic() - t0)
            except RuntimeError as e:
                out[op] = (True, str(e), time.monotonic() - t0)
        if self.destroy is not None:
            t0 = time.monotonic()
            dist.destroy_process_group(self.destroy)
            self.destroy = None
            gc.collect()
            out["destroy"] = (False, "returned", time.monotonic() - t0)
        out["pid"] = os.getpid()
        return out


class Churn:
    """A thread that maps and unmaps 64 KiB in a loop (through libc's mmap, which UCX hooks)."""

    def __init__(self):
        self.stop = threading.Event()
        self.rounds = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            m = mmap.mmap(-1, 65536)
            m[0] = 1
            m.close()
            self.rounds += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def _all_reduce_checked(ctx, t, salt, what, group=None):
    """all_reduce(t * (rank + 1) + salt) and check it against the closed form."""
    mine = t * (ctx.rank + 1) + salt
    dist.all_reduce(mine, group=group)
    want = sum(t * (r + 1) + salt for r in range(ctx.world))
    expect_equal(mine, want, what)


def dataloader(ctx, backend, timeout_s, loader_timeout_s, destroy_in_worker):
    dist.init_process_group(backend, rank=ctx.rank, world_size=ctx.world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    sub = dist.new_group(list(range(ctx.world)))
    with ctx.check("warm-up"):
        _all_reduce_checked(ctx, torch.arange(5, dtype=torch.float32), 1.0, "warm-up all_reduce")
        _all_reduce_checked(ctx, torch.arange(5, dtype=torch.float32), 3.0, "warm-up all_reduce",
                            group=sub)
    with Churn() as churn:
        with ctx.check("epoch"):
            loader = DataLoader(Items(), batch_size=BATCH, num_workers=2,
                                multiprocessing_context="fork", timeout=loader_timeout_s)
            batches = 0
            for b, batch in enumerate(loader):
                want = torch.stack([_item(b * BATCH + k) for k in range(BATCH)])
                expect_equal(batch, want, f"batch {b} from the workers")
                _all_reduce_checked(ctx, batch.sum(0), float(b), f"all_reduce of batch {b}")
                batches += 1
            if batches != ITEMS // BATCH:
                raise AssertionError(f"{batches} batches, want {ITEMS // BATCH}")
            # its workers are gone; what is left of the loader goes now, not in a worker of the
            # next loader (where its clean-up would wait for processes that are not its children)
            del loader
            gc.collect()
        worker = {}
        t0 = time.monotonic()
        try:
            work = CollectiveInWorker(ctx.rank, ctx.world, sub if destroy_in_worker else None)
            loader = DataLoader(work, batch_size=None, num_workers=2,
                                multiprocessing_context="fork", timeout=loader_timeout_s)
            results = list(loader)
            worker = {"results": results}
        except RuntimeError as e:  # the DataLoader's timeout: a worker hung
            worker = {"error": f"{type(e).__name__}: {e}"}
        ctx.record("worker-collective", "results" in worker, worker.get("error", ""),
                   elapsed_s=time.monotonic() - t0, **worker)
        rounds = churn.rounds
    ctx.record("churn", rounds > 0, f"the mmap thread ran {rounds} rounds", rounds=rounds)
    with ctx.check("after"):
        _all_reduce_checked(ctx, torch.arange(7, dtype=torch.float32), 2.0, "all_reduce after")
        _all_reduce_checked(ctx, torch.arange(7, dtype=torch.float32), 4.0,
                            "all_reduce after on the second group", group=sub)
        peer = (ctx.rank + 1) % ctx.world
        src = (ctx.rank - 1) % ctx.world
        out = torch.full((6,), float(ctx.rank))
        got = torch.zeros(6)
        req = dist.isend(out, dst=peer)
        dist.recv(got, src=src)
        req.wait()
        expect_equal(got, torch.full((6,), float(src)), f"recv from rank {src}")
        dist.barrier()
    dist.destroy_process_group()
