"""A short DDP training job instrumented with glucx.torch.instrument(), run by test_instr_ddp.py.

    ddp_job.py --backend gloo|glucx --start spawn|fork --port P --out DIR [--steps N]
               [--ranks N] [--no-optimizer] [--late K]

Each rank trains two identical models on the same data (same initial weights, per-rank inputs):
one wrapped in DDP and instrumented, one wrapped in DDP and not. It writes DIR/rank<R>.json with
what the test compares the trace against, all taken from the job, never from the trace:
  pid                 the rank's process id (the trace's vpid)
  param_bytes         bytes of the parameters that get gradients
  buckets             per step, the bucket sizes in bytes DDP used, from its logging data:
                      step 0 the initial buckets, later steps the rebuilt ones (DDP rebuilds
                      its buckets once, before the second iteration; its logging data shows
                      the rebuilt sizes only some steps later, so they are read at the end)
  same_as_reference   the instrumented model's parameters equal the other's bitwise
  same_across_ranks   the instrumented model's parameters equal rank 0's bitwise
  losses              the loss of every step
  glucx_comm          whether the events name a glucx communicator (tracer.has_comm)
  freed_by_refcount   the DDP model, its module, the optimizer and the instrumentation handle
                      are freed as soon as the job drops them, with the garbage collector off
                      (no reference cycle: a cycle holding a process group could be collected
                      on a backend thread, and destroying a process group there aborts)
  devices_created     Gloo devices glucx created in this process (> 0: Gloo over glucx)
The GLOO_DEVICE_TRANSPORT of the environment selects Gloo's transport.

--late K makes glucx.torch see no trace session at instrument() and in the first K iterations
(its glucx._C.trace_enabled answers False until then): the recording, and the comm hook, start
at iteration K, as when a session is started while the job runs.
"""
import argparse
import datetime
import gc
import json
import os
import sys
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)


def make_model(torch):
    # ~3 MiB of parameters: with bucket_cap_mb=1, DDP uses more than one bucket once it has
    # rebuilt its buckets
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 8))


class LateTrace:
    """glucx._C as glucx.torch sees it, except that trace_enabled() answers False to its first
    `calls` calls."""

    def __init__(self, real, calls):
        self._real, self._left = real, calls

    def trace_enabled(self):
        if self._left > 0:
            self._left -= 1
            return False
        return self._real.trace_enabled()

    def __getattr__(self, name):
        return getattr(self._real, name)


def sizes_of(text):
    return [int(s) for s in str(text).split(",")]


def worker(rank, a):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import glucx
    import glucx.torch

    torch.set_num_threads(1)
    dist.init_process_group(a.backend, init_method="tcp://127.0.0.1:%d" % a.port, rank=rank,
                            world_size=a.ranks, timeout=datetime.timedelta(seconds=scaled(30)))
    model, ref = make_model(torch), make_model(torch)
    ddp, ref_ddp = DDP(model, bucket_cap_mb=1), DDP(ref, bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    ref_opt = torch.optim.SGD(ref_ddp.parameters(), lr=0.05, momentum=0.9)
    if a.late:
        glucx.torch._C = LateTrace(glucx.torch._C, a.late + 1)  # instrument() asks once
    handle = glucx.torch.instrument(ddp, None if a.no_optimizer else opt)
    gen = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(16, 256, generator=gen)
    y = torch.randn(16, 8, generator=gen)
    losses, initial = [], None
    for _ in range(a.steps):
        for m, o in ((ddp, opt), (ref_ddp, ref_opt)):
            o.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            o.step()
            if m is ddp:
                losses.append(float(loss))
        if initial is None:
            initial = sizes_of(ddp._get_ddp_logging_data()["bucket_sizes"])
    if not a.no_optimizer:
        handle.remove()  # the -noopt runs leave the instrumentation on to the end
    ld = ddp._get_ddp_logging_data()
    rebuilt = sizes_of(ld["rebuilt_bucket_sizes"]) if ld.get("has_rebuilt_buckets") else initial
    buckets = [initial] + [rebuilt] * (a.steps - 1)
    iterations = handle.iterations
    has_comm = handle.tracer.has_comm
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    same_ref = all(torch.equal(p, q) for p, q in zip(model.parameters(), ref.parameters()))
    gathered = [torch.empty_like(params) for _ in range(a.ranks)]
    dist.all_gather(gathered, params)
    same_ranks = torch.equal(gathered[0], params)
    out = {
        "rank": rank, "pid": os.getpid(), "backend": dist.get_backend(),
        "param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()
                           if p.requires_grad),
        "buckets": buckets, "same_as_reference": same_ref, "same_across_ranks": same_ranks,
        "losses": losses, "iterations": iterations, "glucx_comm": has_comm,
        "devices_created": glucx.devices_created(),
    }
    gc.disable()
    refs = [weakref.ref(x) for x in (ddp, model, opt, handle)]
    del ddp, model, opt, handle, m, o
    out["freed_by_refcount"] = [r() is None for r in refs] == [True] * 4
    gc.enable()
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(a.out, "rank%d.json" % rank), "w") as f:
        json.dump(out, f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=["gloo", "glucx"], required=True)
    p.add_argument("--start", choices=["spawn", "fork"], required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--no-optimizer", action="store_true")
    p.add_argument("--late", type=int, default=0)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch.multiprocessing as mp
    mp.start_processes(worker, args=(a,), nprocs=a.ranks, join=True, start_method=a.start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
