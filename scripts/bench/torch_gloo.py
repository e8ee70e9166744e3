#!/usr/bin/env python3
"""PyTorch's Gloo backend over Gloo's TCP transport or over glucx, and PyTorch's `glucx` backend:
the PyTorch-level columns of scripts/compare.sh.

Times float32 dist.all_reduce (sum), all_gather or all_to_all_single on a "gloo" (or, with
--backend glucx, a "glucx") process group over 127.0.0.1, with the rules glucx-bench uses so the
rows line up:
  - size in bytes as nccl-tests counts it (allreduce: the tensor; allgather: total output;
    alltoall: total input), from MIN to MAX multiplied by 2;
  - before the first size, 0.5 s of 4-byte all_reduce calls (both transports), so process
    start-up (threads spawning, lazy connection set-up, page faults) is not timed at 1 KiB;
  - iterations 64 MiB / size clamped to 20..1000, warmup max(5, iters/10);
  - time: average per call on each rank, then the maximum over ranks, in microseconds.
One call on known inputs is checked before timing.

--transport tcp (default) leaves GLOO_DEVICE_TRANSPORT unset: Gloo's own TCP transport.
--transport ucx sets GLOO_DEVICE_TRANSPORT=UCX: glucx's transport, registered by the glucx
package's start-up hook, so run it with the interpreter of the venv that has the package
(`make venv`; .venv/bin/python). The benchmark itself imports glucx only to read its counters:
with ucx, the checked call must show up in glucx.stats() (at least the bytes the collective must
send from this rank), and with tcp the counters, if glucx is importable at all, must not move;
either way a sweep that did not run on the transport it names fails instead of printing numbers.

--backend glucx runs the same sweep on init_process_group("glucx"): glucx's own collectives
(algorithm selection of libglucx) under PyTorch, registered by the glucx package (venv
interpreter). The check: the checked call must show up in glucx.stats() as at least one
collective. --transport does not apply.

usage: torch_gloo.py --ranks N --coll allreduce|allgather|alltoall --min BYTES --max BYTES
                     [--transport tcp|ucx] [--backend gloo|glucx] [--bind]
output (rank 0): one line per size, "size time_us", after a '#' comment line.

usage: torch_gloo.py --report DIR [--colls C ...]
  reads DIR/{gloo,glooucx,glucxpg}_<coll>.<k>.txt (written by scripts/compare.sh) and prints one
  markdown table per collective: median time per size of Gloo TCP, Gloo over glucx and the glucx
  backend, with the ratios (Gloo TCP / glucx backend, glucx backend / Gloo over glucx).
"""
import argparse
import os
import socket
import sys
import time


def iters_for(nbytes):
    it = (64 << 20) // max(nbytes, 1)
    return min(1000, max(20, it))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def glucx_counters(transport):
    """glucx.stats (a function returning the counters dict), or None if glucx does not import
    and that is allowed (tcp)."""
    try:
        import glucx
    except ImportError as e:
        if transport != "tcp":
            print(f"torch_gloo: {'--backend glucx' if transport == 'glucx' else '--transport ucx'}"
                  f" needs the glucx package ({e}); run with the venv's python after `make venv`",
                  file=sys.stderr)
            sys.exit(1)
        return None
    return glucx.stats


def glucx_backend_available():
    """Whether torch.distributed knows the backend "glucx" (the glucx package registers it)."""
    import torch.distributed as dist
    return hasattr(dist.Backend, "GLUCX")


def must_send(coll, nbytes, n):
    """Bytes a rank must send in one call, whatever the algorithm: an allreduce rank's whole
    input influences every other rank's result; allgather: its own block; alltoall: the blocks
    for the other ranks."""
    if coll == "allreduce":
        return nbytes
    return nbytes // n if coll == "allgather" else nbytes // n * (n - 1)


def worker(rank, args, port):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if args.bind:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})  # threads created later inherit it
    glucx_be = args.backend == "glucx"
    stats = glucx_counters("glucx" if glucx_be else args.transport)
    dist.init_process_group(args.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.ranks)
    n = args.ranks
    if rank == 0:
        where = ("glucx backend" if glucx_be else "gloo tcp" if args.transport == "tcp"
                 else "gloo over glucx (GLOO_DEVICE_TRANSPORT=UCX)")
        print(f"# torch_gloo {args.coll}, {n} ranks, f32, torch {torch.__version__}, "
              f"{where} on 127.0.0.1", flush=True)
    # process warm-up, identical for both transports (see the module doc); ranks agree on the
    # number of calls: rank 0 decides when 0.5 s has passed
    tiny, more = torch.zeros(1), torch.ones(1)
    start = time.perf_counter()
    while int(more[0]) != 0:
        dist.all_reduce(tiny)
        more = torch.tensor([1 if rank != 0 or time.perf_counter() - start < 0.5 else 0])
        dist.broadcast(more, 0)
    size = args.min
    while size <= args.max:
        count = size // 4
        if args.coll != "allreduce":
            count = count // n * n
        nbytes = count * 4
        block = count // n
        idx = torch.arange(count, dtype=torch.int64)
        # check one call on known inputs, then time calls on a buffer of zeros (in-place
        # allreduce keeps zeros, so values never overflow whatever the iteration count)
        before = stats() if stats else None
        if args.coll == "allreduce":
            got = ((rank + 1) * 1000 + idx % 1000).float()
            want = sum(((r + 1) * 1000 + idx % 1000).float() for r in range(n))
            dist.all_reduce(got)
            buf = torch.zeros(count)

            def op(buf=buf):
                dist.all_reduce(buf)
        elif args.coll == "allgather":
            x = ((rank + 1) * 1000 + idx[:block] % 1000).float()
            outs = [torch.empty(block) for _ in range(n)]
            want = torch.cat([((r + 1) * 1000 + idx[:block] % 1000).float() for r in range(n)])
            dist.all_gather(outs, x)
            got = torch.cat(outs)

            def op(x=x, outs=outs):
                dist.all_gather(outs, x)
        else:
            x = ((rank + 1) * 1000 + idx % 1000).float()
            out = torch.empty(count)
            k = idx[:block]
            want = torch.cat([((r + 1) * 1000 + (rank * block + k) % 1000).float()
                              for r in range(n)])
            dist.all_to_all_single(out, x)
            got = out.clone()

            def op(x=x, out=out):
                dist.all_to_all_single(out, x)

        # the transport check: did the checked call go through glucx (ucx, glucx backend) or not
        # (tcp)?
        bad_transport = 0
        if before is not None and glucx_be:
            ran = stats()["collectives"] - before["collectives"]
            if ran < 1:
                bad_transport = 1
                print(f"torch_gloo: rank {rank}: {args.coll} of {nbytes} bytes on the glucx "
                      f"backend: glucx counted {ran} collectives, expected at least 1",
                      file=sys.stderr)
        elif before is not None:
            sent = stats()["send_bytes"] - before["send_bytes"]
            need = must_send(args.coll, nbytes, n) if n > 1 else 0
            if (args.transport == "ucx" and sent < need) or (args.transport == "tcp" and sent):
                bad_transport = 1
                print(f"torch_gloo: rank {rank}: {args.coll} of {nbytes} bytes over "
                      f"{args.transport}: glucx counted {sent} bytes sent, expected "
                      f"{'at least ' + str(need) if args.transport == 'ucx' else 'none'}",
                      file=sys.stderr)
        wrong = torch.tensor([int((got != want).sum()), bad_transport])
        dist.all_reduce(wrong)
        if int(wrong[0]) != 0 or int(wrong[1]) != 0:
            if rank == 0:
                print(f"torch_gloo: {args.coll} of {nbytes} bytes: {int(wrong[0])} wrong "
                      f"elements, {int(wrong[1])} ranks on the wrong transport", file=sys.stderr)
            sys.exit(1)
        iters = iters_for(nbytes)
        for _ in range(max(5, iters // 10)):
            op()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            op()
        t_us = torch.tensor([(time.perf_counter() - t0) * 1e6 / iters], dtype=torch.float64)
        dist.all_reduce(t_us, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(f"{nbytes} {t_us.item():.3f}", flush=True)
        size *= 2
    dist.barrier()
    dist.destroy_process_group()


def read_sweep(path):
    """{size: time_us} of one output file; {} if it is missing or empty."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and not line.startswith("#"):
                    out[int(parts[0])] = float(parts[1])
    except OSError:
        pass
    return out


def report(d, colls, n):
    """Markdown tables of the three PyTorch-level sweeps in d (see the module doc)."""
    import glob
    import statistics

    cols = [("gloo", "Gloo-TCP"), ("glooucx", "Gloo-glucx"), ("glucxpg", "glucx-backend")]
    for coll in colls:
        med = {}
        for prefix, _ in cols:
            files = sorted(glob.glob(os.path.join(d, f"{prefix}_{coll}.*.txt")))
            runs = [read_sweep(f) for f in files]
            runs = [r for r in runs if r]
            sizes = sorted(set().union(*runs)) if runs else []
            med[prefix] = {s: statistics.median(r[s] for r in runs if s in r) for s in sizes}
        sizes = sorted(set().union(*[set(m) for m in med.values()]))
        if not sizes:
            continue
        factor = 2 * (n - 1) / n if coll == "allreduce" else (n - 1) / n
        print(f"\n### PyTorch {coll}, float32, {n} ranks: Gloo TCP, Gloo over glucx, glucx backend"
              " (time in us, busbw in GB/s, medians over runs)\n")
        head = (["size"] + [f"{name} us" for _, name in cols] +
                ["glucx-backend busbw", "TCP / backend", "backend / Gloo-glucx"])
        print("| " + " | ".join(head) + " |")
        print("|" + "---:|" * len(head))
        for s in sizes:
            t = [med[p].get(s) for p, _ in cols]
            cell = [f"{x:.2f}" if x else "-" for x in t]
            g = t[2]
            bw = f"{s / g * factor / 1e3:.3f}" if g else "-"
            r1 = f"{t[0] / g:.2f}" if g and t[0] else "-"
            r2 = f"{g / t[1]:.2f}" if g and t[1] else "-"
            label = f"{s >> 20}M" if s >= 1 << 20 else f"{s >> 10}K" if s >= 1024 else str(s)
            print("| " + " | ".join([label] + cell + [bw, r1, r2]) + " |")
        small = [s for s in sizes if s <= 4096 and med["glucxpg"].get(s)]
        if small and all(med["gloo"].get(s) and med["glooucx"].get(s) for s in small):
            lo = min(med["gloo"][s] / med["glucxpg"][s] for s in small)
            hi = max(med["glucxpg"][s] / med["glooucx"][s] for s in small)
            print(f"\n<= 4 KiB: glucx backend at least {lo:.1f}x faster than Gloo TCP (target "
                  f">= 10x: {'met' if lo >= 10 else 'NOT met'}); at most {hi:.2f}x the time of "
                  f"Gloo over glucx (target <= 1.2x: {'met' if hi <= 1.2 else 'NOT met'})")
        elif not med["glucxpg"]:
            print("\n(no glucx-backend sweep in this run)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--coll", choices=["allreduce", "allgather", "alltoall"], default="allreduce")
    p.add_argument("--min", type=int, default=1024)
    p.add_argument("--max", type=int, default=16 << 20)
    p.add_argument("--bind", action="store_true",
                   help="pin rank r (all its threads) to the (r mod n)-th of the n CPUs this "
                        "process may use, before init: scripts/compare.sh --bind's rule for "
                        "every library (scripts/bench/pin_rank.sh); the same for every transport")
    p.add_argument("--transport", choices=["tcp", "ucx"], default="tcp",
                   help="Gloo device transport: Gloo's TCP (default) or glucx (UCX)")
    p.add_argument("--backend", choices=["gloo", "glucx"], default="gloo",
                   help="torch.distributed backend: gloo (default) or glucx (glucx's "
                        "collectives; --transport does not apply)")
    p.add_argument("--report", metavar="DIR",
                   help="print the PyTorch-level tables of compare.sh's outputs in DIR; "
                        "runs nothing")
    p.add_argument("--colls", nargs="+", default=["allreduce"], help="with --report")
    args = p.parse_args()
    if args.report:
        return report(args.report, args.colls, args.ranks)
    if args.ranks < 1 or args.min < 4 or args.max < args.min:
        p.error("need --ranks >= 1 and 4 <= --min <= --max")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if args.backend == "glucx":
        if args.transport != "tcp":
            p.error("--transport applies to --backend gloo only")
        glucx_counters("glucx")
        if not glucx_backend_available():
            print("torch_gloo: torch.distributed has no backend \"glucx\" (the glucx package "
                  "registers it; run with the venv's python after `make venv`)", file=sys.stderr)
            sys.exit(1)
    # the spawned ranks inherit the environment; PyTorch reads it at the first Gloo device
    if args.transport == "ucx":
        glucx_counters("ucx")  # fail here, before starting ranks, if glucx is missing
        os.environ["GLOO_DEVICE_TRANSPORT"] = "UCX"
    else:
        os.environ.pop("GLOO_DEVICE_TRANSPORT", None)
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
