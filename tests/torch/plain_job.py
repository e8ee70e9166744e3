"""A plain PyTorch job, as a user writes it: torch.distributed, the "gloo" backend, nothing else.

The transport comes only from the environment (GLOO_DEVICE_TRANSPORT); this file must never name
the package that provides it (test_gloo_ucx_launchers.py checks its source). It is started by
torchrun / `python -m torch.distributed.run` (env:// rendezvous from RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT).

usage: plain_job.py OUT_DIR
Writes OUT_DIR/rank<RANK>.jsonl: one JSON record per check (name, ok, detail) and a final
"totals" record with the bytes this rank's operations must have sent and received at least
(information bounds that hold for any algorithm), which the test compares with the transport's
counters read at exit.
"""
import datetime
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist

from gloo_harness import time_scale  # plain stdlib: the suite's time-scale factor


def main():
    out = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    path = os.path.join(out, f"rank{rank}.jsonl")
    totals = {"send_bytes": 0, "recv_bytes": 0}

    def record(name, ok, detail, **extra):
        with open(path, "a") as f:
            f.write(json.dumps({"name": name, "rank": rank, "ok": ok, "detail": detail, **extra})
                    + "\n")

    def check(name, fn, send=0, recv=0):
        try:
            fn()
        except Exception as e:  # noqa: B902 - recorded, then the job goes on
            record(name, False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
            return
        totals["send_bytes"] += send
        totals["recv_bytes"] += recv
        record(name, True, "ok")

    def same(got, want, what):
        if not torch.equal(got, want):
            bad = (got != want).nonzero().flatten()
            raise AssertionError(f"{what}: {bad.numel()} of {want.numel()} elements wrong, "
                                 f"first at {int(bad[0])}")

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60 * time_scale()))
    record("init", dist.get_rank() == rank and dist.get_world_size() == world,
           f"rank {dist.get_rank()} of {dist.get_world_size()}")

    def value(q, n):
        return (q * 1000 + torch.arange(n) % 1000).to(torch.float32)

    n = 262147  # 1 MiB of float32, odd count

    def all_reduce():
        t = value(rank, n)
        dist.all_reduce(t)
        same(t, sum(value(q, n) for q in range(world)), "all_reduce")

    check("all_reduce", all_reduce, send=4 * n, recv=4 * n)

    def all_reduce_max():
        t = (torch.arange(999, dtype=torch.int64) * (rank + 1)) % 97
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        want = torch.stack([(torch.arange(999, dtype=torch.int64) * (q + 1)) % 97
                            for q in range(world)]).max(dim=0).values
        same(t, want, "all_reduce MAX")

    check("all_reduce/int64/MAX", all_reduce_max, send=8 * 999, recv=8 * 999)

    m = 4099

    def all_gather():
        outs = [torch.zeros(m) for _ in range(world)]
        dist.all_gather(outs, value(rank, m))
        for q in range(world):
            same(outs[q], value(q, m), f"all_gather block {q}")

    check("all_gather", all_gather, send=4 * m, recv=4 * m * (world - 1))

    root = world - 1

    def broadcast():
        t = value(root, n) if rank == root else torch.zeros(n)
        dist.broadcast(t, src=root)
        same(t, value(root, n), "broadcast")

    check("broadcast", broadcast, send=4 * n if rank == root else 0,
          recv=0 if rank == root else 4 * n)

    def ring():
        got = torch.zeros(m)
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        works = [dist.irecv(got, src=prv), dist.isend(value(rank, m), dst=nxt)]
        for w in works:
            w.wait()
        same(got, value(prv, m), "isend/irecv ring")

    check("isend_irecv", ring, send=4 * m, recv=4 * m)
    dist.barrier()
    record("totals", True, "", **totals)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
