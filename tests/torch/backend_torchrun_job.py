"""A job started by the venv's `torchrun` (env:// rendezvous): init_process_group(<backend>) with
no other argument, as a user writes it; it never imports glucx (the package's start-up hook must
have registered the backend name). Run by test_backend_init.py.

usage: backend_torchrun_job.py OUT_DIR
Writes OUT_DIR/rank<RANK>.jsonl (one record per check), pid<RANK> at start and exit<RANK> (the
exit status) as its last act.
"""
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    backend = os.environ.get("TORCH_SUITE_BACKEND", "glucx")
    imported_before = "glucx" in sys.modules
    sys.path.insert(0, HERE)
    import torch.distributed as dist

    import backend_jobs

    ctx = backend_jobs.RankContext(rank, world, out)
    status = 1
    try:
        ctx.record("start", True, "", glucx_imported_before=imported_before,
                   executable=sys.executable, prefix=sys.prefix)
        with ctx.check("init/env"):
            dist.init_process_group(backend)
            if dist.get_backend() != backend:
                raise AssertionError(f"get_backend() is {dist.get_backend()!r}")
            if (dist.get_rank(), dist.get_world_size()) != (rank, world):
                raise AssertionError(f"rank {dist.get_rank()} of {dist.get_world_size()}, "
                                     f"torchrun said {rank} of {world}")
        backend_jobs.small_checks(ctx, backend, rank, world)
        dist.destroy_process_group()
        ctx.record("job", True, "finished")
        status = 0
    except BaseException as e:  # noqa: B902 - recorded, then the exit status says it
        ctx.record("job", False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    with open(os.path.join(out, f"exit{rank}"), "w") as f:
        f.write(str(status))
    sys.exit(status)


if __name__ == "__main__":
    main()
