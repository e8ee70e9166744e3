#!/usr/bin/env python3
"""PyTorch's Gloo backend, over Gloo's TCP transport or over glucx: the Gloo columns of
scripts/compare.sh.

Times float32 dist.all_reduce (sum), all_gather or all_to_all_single on a "gloo" process group
over 127.0.0.1, with the rules glucx-bench uses so the rows line up:
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

usage: torch_gloo.py --ranks N --coll allreduce|allgather|alltoall --min BYTES --max BYTES
                     [--transport tcp|ucx]
output (rank 0): one line per size, "size time_us", after a '#' comment line.
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
        if transport == "ucx":
            print(f"torch_gloo: --transport ucx needs the glucx package ({e}); run with the "
                  "venv's python after `make venv`", file=sys.stderr)
            sys.exit(1)
        return None
    return glucx.stats


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
    stats = glucx_counters(args.transport)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.ranks)
    n = args.ranks
    if rank == 0:
        where = ("gloo tcp" if args.transport == "tcp"
                 else "gloo over glucx (GLOO_DEVICE_TRANSPORT=UCX)")
        print(f"# torch_gloo {args.coll}, {n} ranks, f32, torch {torch.__version__}, "
              f"{where} on 127.0.0.1", flush=True)
    # process warm-up, identical for both transports (see the module doc); ranks agree on the
    # number of calls: rank 0 decides when 0.5 s has passed
    import time
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

        # the transport check: did the checked call go through glucx (ucx) or not (tcp)?
        bad_transport = 0
        if before is not None:
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--coll", choices=["allreduce", "allgather", "alltoall"], default="allreduce")
    p.add_argument("--min", type=int, default=1024)
    p.add_argument("--max", type=int, default=16 << 20)
    p.add_argument("--bind", action="store_true",
                   help="pin rank r (all its threads) to CPU r %% ncpus before init, as mpirun's "
                        "default --bind-to core does; the same for both transports")
    p.add_argument("--transport", choices=["tcp", "ucx"], default="tcp",
                   help="Gloo device transport: Gloo's TCP (default) or glucx (UCX)")
    args = p.parse_args()
    if args.ranks < 1 or args.min < 4 or args.max < args.min:
        p.error("need --ranks >= 1 and 4 <= --min <= --max")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # the spawned ranks inherit the environment; PyTorch reads it at the first Gloo device
    if args.transport == "ucx":
        glucx_counters("ucx")  # fail here, before starting ranks, if glucx is missing
        os.environ["GLOO_DEVICE_TRANSPORT"] = "UCX"
    else:
        os.environ.pop("GLOO_DEVICE_TRANSPORT", None)
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
