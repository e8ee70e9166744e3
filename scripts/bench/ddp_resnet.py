#!/usr/bin/env python3
"""DDP iteration time of torchvision's ResNet-18 per backend, next to the compute-only bound:
the DDP part of scripts/compare.sh.

One training step: zero_grad, forward of a batch of 8 images 3x64x64 (random, fixed), cross
entropy against fixed random labels of 1000 classes, backward, SGD step (lr 0.01, momentum 0.9).
torch.set_num_threads(1) in every process (one intra-op thread per rank). Weights are random
(torchvision's resnet18(), no download).

Variants (--variant):
  compute   the same step in one process, no process group, no DDP: the compute-only bound
  pair      the same in RANKS independent processes at once (no DDP): what the cores give
            RANKS copies of the step when they share the machine (information only)
  gloo      DDP on init_process_group("gloo"), Gloo's TCP transport
  glooucx   DDP on "gloo" with GLOO_DEVICE_TRANSPORT=UCX: Gloo's algorithms on glucx's transport
  glucx     DDP on init_process_group("glucx"): glucx's collectives
  glooucx-instr, glucx-instr
            as glooucx / glucx, with glucx.torch.instrument(ddp, optimizer) and no trace
            session: the cost of the instrumentation when nobody records
  nocomm    DDP on "glucx" with a comm hook that hands each gradient bucket back unchanged
            (no allreduce; the buffer broadcast still runs): everything DDP does besides
            communicating (bucket copies, hooks, the two processes sharing the machine), i.e.
            the step time a backend with free communication would reach: the DDP floor.
            The ranks' parameters diverge, so the bitwise check is skipped for it.
DDP with its defaults (25 MB buckets, broadcast_buffers=True), RANKS ranks started with
torch.multiprocessing.spawn, tcp:// rendezvous on 127.0.0.1, GLOO_SOCKET_IFNAME=lo.

Timing: WARMUP untimed steps (DDP rebuilds its buckets after the first), then ITERS steps, each
timed on every rank with time.perf_counter; the step's time is the maximum over ranks (ranks meet
in the allreduce anyway); the variant's result is the median step time. The gloo*/glucx variants
check that the step ran where they say (glucx's counters) and that the ranks end with bitwise equal
parameters.

usage:
  ddp_resnet.py --variant V [--ranks 2] [--iters 20] [--warmup 5] [--bind]
      one run; prints a '#' header and "variant median_ms p10_ms p90_ms" (and --json: one JSON
      line with every step time)
  ddp_resnet.py --all [--variants "compute pair nocomm gloo glooucx glucx glooucx-instr"]
                [--repeat 3] [--out DIR] [--ranks 2] [--iters 20] [--warmup 5] [--bind]
      runs the variants as subprocesses of this interpreter, REPEAT times (default 5, the
      measurement protocol's minimum; fewer is flagged "BELOW PROTOCOL"), each variant once per
      repetition, the order rotating by one variant per repetition; skips glucx* (with a note)
      when torch.distributed has no backend "glucx"; prints a markdown table: median step time
      (median of the runs' medians), spread, ratio to the compute-only bound (step / compute),
      to the DDP floor (step / nocomm), speedup over Gloo TCP, and the earlier issue's targets.
      Run it with the venv's python (`make venv`) so glucx is importable.
--bind pins rank r (and the compute/pair processes) to CPU r % ncpus, as compare.sh --bind does
for every library.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

DDP_VARIANTS = ("gloo", "glooucx", "glucx", "glooucx-instr", "glucx-instr", "nocomm")
ALL_VARIANTS = ("compute", "pair") + DDP_VARIANTS
BATCH, SIZE, CLASSES = 8, 64, 1000
PROTOCOL_RUNS = 5  # the measurement protocol's minimum number of runs (docs/perf.md)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(rank, bind):
    import torch
    import torchvision

    torch.set_num_threads(1)
    if bind:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=CLASSES)
    g = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(BATCH, 3, SIZE, SIZE, generator=g)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)
    return torch, model, x, y


def timed_steps(torch, model, opt, x, y, warmup, iters):
    times = []
    for i in range(warmup + iters):
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def local_worker(rank, a, q):
    torch, model, x, y = setup(rank, a.bind)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    q.put((rank, timed_steps(torch, model, opt, x, y, a.warmup, a.iters)))


def ddp_worker(rank, a, port, q):
    torch, model, x, y = setup(rank, a.bind)
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    backend = "glucx" if a.variant.startswith("glucx") or a.variant == "nocomm" else "gloo"
    stats = None
    if a.variant != "gloo":
        import glucx
        stats = glucx.stats
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=a.ranks)
    ddp = DDP(model)
    if a.variant == "nocomm":
        def keep_bucket(_state, bucket):  # the DDP floor: no communication at all
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer())
            return fut
        ddp.register_comm_hook(None, keep_bucket)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    handle = None
    if a.variant.endswith("-instr"):
        import glucx.torch
        handle = glucx.torch.instrument(ddp, opt)
    before = stats() if stats else None
    times = timed_steps(torch, ddp, opt, x, y, a.warmup, a.iters)
    problem = ""
    if before is not None:  # did the steps run where the variant says?
        after = stats()
        key = "collectives" if backend == "glucx" else "send_bytes"
        if after[key] <= before[key]:
            problem = f"rank {rank}: glucx's counter {key} did not move during the steps"
    if handle is not None:
        handle.remove()
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    flat = torch.cat([p.detach().flatten() for p in ddp.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, 0)
    if a.variant != "nocomm" and not torch.equal(ref, flat):
        problem = problem or f"rank {rank}: parameters differ from rank 0's after training"
    dist.barrier()
    dist.destroy_process_group()
    q.put((rank, t.tolist(), problem))


def run_one(a):
    import torch.multiprocessing as mp

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if a.variant.startswith("glooucx"):
        os.environ["GLOO_DEVICE_TRANSPORT"] = "UCX"
    else:
        os.environ.pop("GLOO_DEVICE_TRANSPORT", None)
    if a.variant.startswith("glucx") or a.variant == "nocomm":
        if not have_glucx_backend():
            print("ddp_resnet: torch.distributed has no backend \"glucx\"", file=sys.stderr)
            return 2
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    if a.variant == "compute":
        local_worker(0, a, q)
        times = q.get()[1]
    elif a.variant == "pair":
        mp.spawn(local_worker, args=(a, q), nprocs=a.ranks, join=True)
        per = [q.get()[1] for _ in range(a.ranks)]
        times = [max(v) for v in zip(*per)]  # the slowest process at each step
    else:
        mp.spawn(ddp_worker, args=(a, free_port(), q), nprocs=a.ranks, join=True)
        res = [q.get() for _ in range(a.ranks)]
        problems = [r[2] for r in res if r[2]]
        if problems:
            print("ddp_resnet: " + "; ".join(problems), file=sys.stderr)
            return 1
        times = res[0][1]
    s = sorted(times)
    med = statistics.median(s)
    p10, p90 = s[len(s) // 10], s[min(len(s) - 1, (len(s) * 9) // 10)]
    if a.json:
        print(json.dumps({"variant": a.variant, "ranks": a.ranks, "times_ms": times}))
    else:
        import torch
        print(f"# ddp_resnet {a.variant}, ResNet-18, batch {BATCH}x3x{SIZE}x{SIZE}, {a.ranks} "
              f"ranks, 1 thread each, torch {torch.__version__}; median p10 p90 step ms")
        print(f"{a.variant} {med:.2f} {p10:.2f} {p90:.2f}")
    return 0


def have_glucx_backend():
    """Whether torch.distributed has the backend "glucx" (importing glucx registers it)."""
    import importlib
    try:
        import torch.distributed as dist
        importlib.import_module("glucx")
    except ImportError:
        return False
    return hasattr(dist.Backend, "GLUCX")


def run_all(a):
    variants = a.variants.split()
    bad = [v for v in variants if v not in ALL_VARIANTS]
    if bad:
        print(f"ddp_resnet: unknown variants {bad} (known: {' '.join(ALL_VARIANTS)})",
              file=sys.stderr)
        return 2
    notes = []
    def needs_glucx(v):
        return v.startswith("glucx") or v == "nocomm"

    if any(needs_glucx(v) for v in variants) and not have_glucx_backend():
        notes.append("glucx backend not available in this interpreter: its variants skipped")
        variants = [v for v in variants if not needs_glucx(v)]
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    meds = {v: [] for v in variants}
    for k in range(1, a.repeat + 1):
        # the order rotates by one variant per repetition: none always runs first or last
        shift = (k - 1) % len(variants)
        for v in variants[shift:] + variants[:shift]:
            print(f"ddp_resnet: run {k}/{a.repeat}: {v}", file=sys.stderr, flush=True)
            cmd = [sys.executable, os.path.abspath(__file__), "--variant", v, "--ranks",
                   str(a.ranks), "--iters", str(a.iters), "--warmup", str(a.warmup), "--json"]
            if a.bind:
                cmd.append("--bind")
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                print(f"ddp_resnet: variant {v} failed (rc {p.returncode}):\n{p.stderr[-3000:]}",
                      file=sys.stderr)
                return 1
            res = json.loads(p.stdout.strip().splitlines()[-1])
            if a.out:
                with open(os.path.join(a.out, f"ddp_{v}.{k}.json"), "w") as f:
                    json.dump(res, f)
            meds[v].append(statistics.median(res["times_ms"]))
    import torch
    below = (f" -- BELOW PROTOCOL ({a.repeat} < {PROTOCOL_RUNS} runs)"
             if a.repeat < PROTOCOL_RUNS else "")
    print(f"\n### DDP step time, torchvision ResNet-18, batch {BATCH} of 3x{SIZE}x{SIZE}, "
          f"{a.ranks} ranks, 1 intra-op thread each (torch {torch.__version__}; median of "
          f"{a.repeat} interleaved runs (order rotating) x {a.iters} steps, "
          f"{'ranks pinned' if a.bind else 'no pinning'}){below}\n")
    print("| variant | step ms | runs (min-max) | step / compute-only | "
          "step / DDP floor (nocomm) | Gloo TCP speedup |")
    print("|---|---:|---:|---:|---:|---:|")
    m = {v: statistics.median(x) for v, x in meds.items() if x}
    base, tcp, floor = m.get("compute"), m.get("gloo"), m.get("nocomm")
    for v in variants:
        r_c = f"{m[v] / base:.3f}" if base else "-"
        r_f = f"{m[v] / floor:.3f}" if floor else "-"
        r_t = f"{tcp / m[v]:.2f}" if tcp else "-"
        print(f"| {v} | {m[v]:.1f} | {min(meds[v]):.1f}-{max(meds[v]):.1f} | {r_c} | {r_f} "
              f"| {r_t} |")
    print()
    if floor and base:
        print(f"DDP floor (nocomm: DDP without any communication): {floor / base:.3f}x the "
              f"compute-only bound"
              + (f"; Gloo TCP at that floor would be {tcp / floor:.3f}x slower" if tcp else ""))
    for v in ("glucx", "glooucx"):
        if v in m and base and tcp:
            fast, near = tcp / m[v] >= 1.2, m[v] / base <= 1.15
            print(f"{v}: {tcp / m[v]:.3f}x faster than Gloo TCP (target >= 1.2x: "
                  f"{'met' if fast else 'NOT met'}), {m[v] / base:.3f}x the compute-only bound "
                  f"(target <= 1.15x: {'met' if near else 'NOT met'})"
                  + ("" if v == "glucx" else " [the targets are the glucx backend's]"))
    for n in notes:
        print(f"note: {n}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", choices=ALL_VARIANTS)
    p.add_argument("--all", action="store_true")
    p.add_argument("--variants", default="compute pair nocomm gloo glooucx glucx glooucx-instr")
    p.add_argument("--repeat", type=int, default=PROTOCOL_RUNS)
    p.add_argument("--out")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--bind", action="store_true")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.ranks < 2 or a.iters < 1 or a.warmup < 2 or a.repeat < 1:
        p.error("need --ranks >= 2, --iters >= 1, --warmup >= 2, --repeat >= 1")
    if a.all == bool(a.variant):
        p.error("give either --variant V or --all")
    return run_all(a) if a.all else run_one(a)


if __name__ == "__main__":
    sys.exit(main())
