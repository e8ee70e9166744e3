"""One rank of test_cluster.py's `torch` case: the glucx torch.distributed backend on the
emulated cluster, unchanged training-script calls (all_reduce, all_gather, all_gather_into_tensor
and _all_gather_base, reduce_scatter, reduce_scatter_tensor, all_to_all_single) at a small and a
large size, every result checked exactly (integers in float32, sums far below 2^24).

Run by `glucx-cluster run -- <venv python> torch_job.py SIZES...` (sizes in bytes per rank's
tensor); torchrun's variables come from glucx-cluster. Prints one line per call,
"<op> <bytes> ok algorithm=<what libglucx selects for that collective and size>", and exits 1 at
the first wrong element, naming the op, size, index, value and the value wanted.
"""
import os
import sys
import warnings

import torch
import torch.distributed as dist

import glucx  # noqa: F401  (registers the "glucx" backend)


def say(line):
    """One write per line: the ranks share the job's stdout, and a line written in one write of
    less than PIPE_BUF bytes is never interleaved with another rank's (print may write the text
    and its newline separately when Python runs unbuffered)."""
    os.write(1, (line + "\n").encode())


def expect(op, nbytes, got, want):
    bad = (got != want).nonzero()
    if bad.numel():
        i = bad[0].tolist()
        say(f"{op} {nbytes}: element {i} is {got[tuple(i)].item()}, want "
            f"{want[tuple(i)].item()}")
        sys.exit(1)


def main():
    dist.init_process_group("glucx")
    rank, n = dist.get_rank(), dist.get_world_size()
    pg = dist.distributed_c10d._get_default_group()

    def done(op, nbytes, coll, coll_bytes):
        say(f"{op} {nbytes} ok algorithm={pg.algorithm(coll, coll_bytes)}")

    for nbytes in (int(a) for a in sys.argv[1:]):
        m = nbytes // 4
        idx = torch.arange(m, dtype=torch.float32)
        # all_reduce: rank r contributes r + 1 + (index mod 7)
        t = (idx % 7) + rank + 1
        dist.all_reduce(t)
        expect("all_reduce", nbytes, t, n * (idx % 7) + n * (n + 1) / 2)
        done("all_reduce", nbytes, "allreduce", m * 4)
        # all_gather: rank r's block is r * 1000 + (index mod 5)
        mine = rank * 1000 + idx % 5
        want = torch.cat([q * 1000 + idx % 5 for q in range(n)])
        outs = [torch.empty(m) for _ in range(n)]
        dist.all_gather(outs, mine)
        expect("all_gather", nbytes, torch.cat(outs), want)
        done("all_gather", nbytes, "allgather", n * m * 4)
        flat = torch.empty(n * m)
        dist.all_gather_into_tensor(flat, mine)
        expect("all_gather_into_tensor", nbytes, flat, want)
        done("all_gather_into_tensor", nbytes, "allgather", n * m * 4)
        flat.zero_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # _all_gather_base is deprecated, still called
            dist._all_gather_base(flat, mine)
        expect("_all_gather_base", nbytes, flat, want)
        done("_all_gather_base", nbytes, "allgather", n * m * 4)
        # reduce_scatter: block q of rank r is q + r + (index mod 3)
        ins = [q + rank + idx % 3 for q in range(n)]
        out = torch.empty(m)
        dist.reduce_scatter(out, ins)
        want = n * (rank + idx % 3) + n * (n - 1) / 2
        expect("reduce_scatter", nbytes, out, want)
        done("reduce_scatter", nbytes, "reduce_scatter", n * m * 4)
        out.zero_()
        dist.reduce_scatter_tensor(out, torch.cat(ins))
        expect("reduce_scatter_tensor", nbytes, out, want)
        done("reduce_scatter_tensor", nbytes, "reduce_scatter", n * m * 4)
        # all_to_all_single: rank r sends r * 100 + q to rank q (a block of m / n each)
        k = m // n
        src = torch.cat([torch.full((k,), float(rank * 100 + q)) for q in range(n)])
        dst = torch.empty(n * k)
        dist.all_to_all_single(dst, src)
        expect("all_to_all_single", nbytes, dst,
               torch.cat([torch.full((k,), float(q * 100 + rank)) for q in range(n)]))
        done("all_to_all_single", nbytes, "alltoall", n * k * 4)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
