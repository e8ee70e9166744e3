"""Launcher of the `glucx` backend suite (parent side, plus the entry of spawned ranks).

The suite tests `init_process_group("glucx")` through the public torch.distributed API only. The
backend under test comes from TORCH_SUITE_BACKEND (default "glucx"; not a GLUCX_* name: libglucx
warns about GLUCX_* variables it does not know). TORCH_SUITE_BACKEND=gloo runs the same jobs on
ProcessGroupGloo, which is how the suite's harness and references were developed before the
backend existed: checks ProcessGroupGloo refuses are skipped in that mode and its known wrong
results are expected failures (GLOO_REFUSALS, GLOO_WRONG below).

Two ways to start ranks, all on 127.0.0.1 with a fresh port per launch:
  spawn()     torch.multiprocessing start_processes(start_method="spawn"); the job is a function of
              backend_jobs.py named by string. Ranks write one JSON line per check to
              <out>/rank<r>.jsonl as they go, so a rank that hangs or dies still leaves the checks
              it finished.
  torchrun()  the venv's `torchrun` running backend_torchrun_job.py (env:// rendezvous).
Every launch has a hard deadline: ranks still alive then are killed by PID (SIGKILL), the launch is
reported as hung, naming the ranks and the last check each one finished. The Launch object (shared
with the Gloo-over-glucx suite, gloo_harness.Launch) reads the records and asserts on them.
"""
import os
import signal
import subprocess
import sys
import time

from gloo_harness import Launch, free_port, spawn_job, time_scale

HERE = os.path.dirname(os.path.abspath(__file__))
BACKEND = os.environ.get("TORCH_SUITE_BACKEND", "glucx")


def rank_env(port, backend, extra=None):
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "GLOO_SOCKET_IFNAME": "lo",
        "TORCH_SUITE_BACKEND": backend,
        # the ranks never read glucx's counters through gloo_jobs.RankContext
        "TORCH_SUITE_COUNTERS": "off",
        "PYTHONUNBUFFERED": "1",
        # one intra-op thread per rank: the ranks already outnumber the cores
        "OMP_NUM_THREADS": "1",
    }
    env.update(extra or {})
    return env


def spawn(job, world, out, params=None, timeout_s=120, backend=BACKEND, extra_env=None,
          jobs_module="backend_jobs"):
    """Run <jobs_module>.<job>(ctx, backend=..., **params) on `world` spawned ranks
    (jobs_module: backend_jobs by default).

    Ranks still alive after timeout_s seconds (times time_scale()) are killed (SIGKILL by PID) and
    listed as hung.
    """
    params = dict(params or {})
    params.setdefault("backend", backend)
    launch = spawn_job(jobs_module, job, world, out, rank_env(free_port(), backend, extra_env),
                       [], params, timeout_s, f"spawn {job} on backend {backend}")
    launch.backend_under_test = backend
    return launch


def torchrun(world, out, timeout_s=120, backend=BACKEND):
    """Run backend_torchrun_job.py with the torchrun next to sys.executable (the venv's), env://
    rendezvous on 127.0.0.1, as a user types it: rank count and master address only."""
    os.makedirs(out, exist_ok=True)
    exe = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if not os.path.exists(exe):
        raise AssertionError(f"no torchrun next to {sys.executable} ({exe}); the venv must "
                             "provide one that runs the venv's interpreter (run `make venv`)")
    port = free_port()
    cmd = [exe, "--nproc-per-node", str(world), "--master-addr", "127.0.0.1", "--master-port",
           str(port), os.path.join(HERE, "backend_torchrun_job.py"), out]
    env = dict(os.environ)
    env.update(rank_env(port, backend))
    log_path = os.path.join(out, "launcher.log")
    t0 = time.monotonic()
    hung = []
    with open(log_path, "wb") as log:
        # own session: on the deadline the launcher and its workers are killed by process group,
        # plus each worker by the pid it recorded
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=out)
        try:
            rc = proc.wait(timeout=timeout_s * time_scale())
        except subprocess.TimeoutExpired:
            rc = None
            hung = ["launcher"]
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for r in range(world):
                try:
                    with open(os.path.join(out, f"pid{r}")) as f:
                        os.kill(int(f.read().strip()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            proc.wait(10 * time_scale())
    exitcodes = {}
    for r in range(world):
        # a worker writes exit<r> as its last act; a missing one means it did not finish
        path = os.path.join(out, f"exit{r}")
        if os.path.exists(path):
            with open(path) as f:
                exitcodes[r] = int(f.read().strip() or 1)
    launch = Launch(f"torchrun backend_torchrun_job.py on backend {backend}", world, out,
                    exitcodes, hung, time.monotonic() - t0, launcher_rc=rc, launcher_log=log_path)
    launch.backend_under_test = backend
    return launch


# ---- parent-side assertions ----------------------------------------------------------------------

# Development mode only (TORCH_SUITE_BACKEND=gloo): ProcessGroupGloo refuses these calls, so the
# checks are skipped, and it gives these known wrong results (the suite's point is that glucx must
# not), so they are expected failures there. Neither applies to the glucx backend.
GLOO_REFUSALS = (r"Invalid scalar type|Cannot use ReduceOp\.AVG|does not support|no support for"
                 r"|input tensor has to be contiguous")
GLOO_WRONG = ("layout/all_reduce/strided-slice", "layout/broadcast/column",
              "reduce-nonroot-input/", "invalid/sparse/all_reduce")


def ok(job, *names, ranks=None):
    """Assert that every check in `names` passed on `ranks` (default all). With the gloo backend
    (development), a check ProcessGroupGloo refuses is skipped and a known Gloo defect xfails."""
    import re

    import pytest

    if job.backend_under_test == "gloo":
        for n in names:
            recs = job.checks.get(n, {})
            for rec in recs.values():
                if not rec["ok"]:
                    if re.search(GLOO_REFUSALS, rec["detail"]):
                        pytest.skip(f"ProcessGroupGloo refuses {n}: "
                                    f"{rec['detail'].splitlines()[0]}")
                    if any(n.startswith(w) for w in GLOO_WRONG):
                        pytest.xfail(f"known ProcessGroupGloo defect in {n}: "
                                     f"{rec['detail'].splitlines()[0]}")
            if any(rec.get("skipped") for rec in recs.values()):
                pytest.skip(f"{n} not run with ProcessGroupGloo (it kills the process)")
    for n in names:
        job.assert_ok(n, ranks)


def glucx_importable_or_fail():
    """The suite tests the glucx backend in the venv: fail (not skip) when glucx is missing."""
    import importlib.util

    import pytest

    if BACKEND == "glucx" and importlib.util.find_spec("glucx") is None:
        pytest.fail(f"{sys.executable} cannot import glucx: run the suite with the venv's "
                    "interpreter after `make venv` (TORCH_SUITE_BACKEND=gloo runs the jobs on "
                    "ProcessGroupGloo, only for developing the suite)", pytrace=False)


def assert_rank1_failed_and_rank0_raised(job, check):
    """For a 2-rank job whose rank 1 raised "rank 1 fails on purpose" and whose rank 0 recorded
    `check` (its next operation raised): nobody hung, rank 1 exited with an error, rank 0 with
    0."""
    assert not job.hung, job.describe()
    assert job.exitcodes.get(1) not in (0, None), job.describe()
    assert "rank 1 fails on purpose" in job.record("job", 1)["detail"], job.describe()
    job.assert_ok(check, ranks=[0])
    assert job.exitcodes.get(0) == 0, job.describe()


def spawn_per_param(request, tmp_path_factory, job, jobs_module, timeout_s):
    """For a module-scoped fixture parametrized by (backend, world size): spawn `job` of
    `jobs_module` on that many ranks of that backend (failing first when glucx is not
    importable), its ranks' outputs in a fresh directory named after the job."""
    backend, world = request.param
    if backend == "glucx":
        glucx_importable_or_fail()
    out = tmp_path_factory.mktemp(f"{job}-{backend}{world}")
    return spawn(job, world, str(out), timeout_s=timeout_s, backend=backend,
                 jobs_module=jobs_module)
