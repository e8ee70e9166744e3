"""Launcher of the Gloo-over-glucx pytest suite (parent side, plus the entry of spawned ranks).

Three ways to start ranks, all on 127.0.0.1 with a fresh port per launch:
  spawn()     torch.multiprocessing start_processes(start_method="spawn"); the job is a function of
              gloo_jobs.py named by string. Ranks write one JSON line per check to
              <out>/rank<r>.jsonl as they go, so a rank that hangs or dies still leaves the checks
              it finished.
  launcher()  the venv's `torchrun` or `python -m torch.distributed.run` running stats_runner.py,
              which runs plain_job.py (plain torch; it never imports glucx) and reads
              glucx.stats() only at interpreter exit (see stats_runner.py for why).
Every launch has a hard deadline: ranks still alive are killed by PID (SIGKILL) and the launch is
reported as hung, naming the ranks and the last check each one finished.

Transport: "UCX" sets GLOO_DEVICE_TRANSPORT=UCX in the ranks' environment; "TCP" removes it, so
ProcessGroupGloo uses Gloo's own TCP transport. The counters mode tells the ranks what to expect of
glucx.stats() (see gloo_jobs.Counters).
"""
import json
import multiprocessing.connection
import os
import signal
import socket
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))

# time_scale(): the suite's one time-scale factor, GLUCX_TEST_TIME_SCALE (default 1;
# tests/README.md): every deadline a test sets for another process is a base value for a loaded
# 2-core machine times this factor. One definition for all Python tests: tests/support/timescale.py.
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from timescale import time_scale  # noqa: E402,F401 - the torch suites' name for it
from ports import free_port  # noqa: E402,F401 - below the ephemeral range (tests/support/ports.py)


def rank_env(transport, counters, port, extra=None):
    """Environment changes for a launch: (set, unset)."""
    if transport not in ("UCX", "TCP"):
        raise ValueError(f"transport must be UCX or TCP, not {transport!r}")
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        # Gloo's TCP device would otherwise bind the address the host name resolves to
        "GLOO_SOCKET_IFNAME": "lo",
        "TORCH_SUITE_COUNTERS": counters,
        "PYTHONUNBUFFERED": "1",
        # never let a rank's own thread pool fight the other ranks for the two cores
        "OMP_NUM_THREADS": "1",
    }
    unset = []
    if transport == "UCX":
        env["GLOO_DEVICE_TRANSPORT"] = "UCX"
    else:
        unset.append("GLOO_DEVICE_TRANSPORT")
    env.update(extra or {})
    return env, unset


class _Environ:
    """Temporarily change os.environ (spawned ranks inherit the parent's environment)."""

    def __init__(self, env, unset):
        self.env, self.unset, self.saved = env, unset, {}

    def __enter__(self):
        for k in list(self.env) + self.unset:
            self.saved[k] = os.environ.get(k)
        os.environ.update(self.env)
        for k in self.unset:
            os.environ.pop(k, None)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _tail(path, nbytes=3000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - nbytes))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _read_records(out, world):
    """{check name: {rank: record}} from <out>/rank<r>.jsonl, plus the last record name per rank."""
    checks, last = {}, {}
    for r in range(world):
        path = os.path.join(out, f"rank{r}.jsonl")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a rank killed in the middle of a write
                checks.setdefault(rec["name"], {})[r] = rec
                last[r] = rec["name"]
    return checks, last


class Launch:
    """The outcome of one multi-rank launch."""

    def __init__(self, how, world, out, exitcodes, hung, elapsed_s, launcher_rc=None,
                 launcher_log=None):
        self.how, self.world, self.out = how, world, out
        self.exitcodes, self.hung, self.elapsed_s = exitcodes, hung, elapsed_s
        self.launcher_rc, self.launcher_log = launcher_rc, launcher_log
        self.checks, self.last = _read_records(out, world)

    def log(self, rank):
        return _tail(os.path.join(self.out, f"rank{rank}.log"))

    def describe(self):
        lines = [f"{self.how}: {self.world} ranks, {self.elapsed_s:.1f} s, output in {self.out}"]
        if self.hung:
            lines.append(f"HUNG: ranks {self.hung} were still running at the deadline "
                         "and were killed")
        if self.launcher_rc is not None:
            lines.append(f"launcher exit status {self.launcher_rc}")
        for r in range(self.world):
            code = self.exitcodes.get(r, "?")
            lines.append(f"--- rank {r}: exit {code}, last finished check: {self.last.get(r)}")
            log = self.log(r)
            if log and (code != 0 or self.hung):
                lines.append(log)
        if self.launcher_log and (self.launcher_rc or self.hung):
            lines.append("--- launcher output (tail)")
            tail = _tail(self.launcher_log)
            lines.append(tail)
            if DEBIAN_STD_SIGNATURE in tail and "to_map" in tail:
                lines.append(
                    "DIAGNOSIS: the launcher itself failed before starting workers: Debian's "
                    "torch 1.13 on Python 3.11 parses the default --redirects/--tee value '0' to "
                    "None (enum.Flag iteration skips the zero member); the glucx start-up hook "
                    "(_glucx_startup.fix_std_parsing) should have fixed it in this interpreter.")
        return "\n".join(lines)

    def record(self, name, rank):
        return self.checks.get(name, {}).get(rank)

    def names(self, prefix=""):
        return sorted(n for n in self.checks if n.startswith(prefix))

    def assert_ok(self, name, ranks=None):
        """Assert that check `name` ran and passed on every rank in `ranks` (default: all)."""
        ranks = list(range(self.world)) if ranks is None else list(ranks)
        recs = self.checks.get(name, {})
        problems = []
        for r in ranks:
            rec = recs.get(r)
            if rec is None:
                problems.append(f"rank {r}: check never finished (last finished: "
                                f"{self.last.get(r)}, exit {self.exitcodes.get(r, '?')})")
            elif not rec["ok"]:
                problems.append(f"rank {r}: {rec['detail']}")
        if problems:
            raise AssertionError(f"check {name!r} failed\n" + "\n".join(problems)
                                 + "\n\n" + self.describe())
        return {r: recs[r] for r in ranks}

    def assert_clean_exit(self):
        bad = {r: c for r, c in self.exitcodes.items() if c != 0}
        if self.hung or bad or len(self.exitcodes) != self.world:
            raise AssertionError("ranks did not all exit with status 0: " + self.describe())


def _spawn_entry(local_rank, jobs_module, job, world, out, params):
    """Runs in every spawned rank: redirect output to <out>/rank<r>.log, run
    <jobs_module>.<job>(ctx, **params) with the module's RankContext."""
    log = os.open(os.path.join(out, f"rank{local_rank}.log"),
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    sys.path.insert(0, HERE)
    import importlib

    jobs = importlib.import_module(jobs_module)
    ctx = jobs.RankContext(local_rank, world, out)
    try:
        getattr(jobs, job)(ctx, **params)
    except BaseException as e:  # noqa: B902 - the record is the point; re-raise for the exit code
        ctx.record("job", False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        raise
    ctx.record("job", True, "finished")


def _wait(procs, deadline):
    """Wait for all of procs (objects with .sentinel) or the deadline; return the ones alive."""
    alive = list(procs)
    while alive:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        multiprocessing.connection.wait([p.sentinel for p in alive], timeout=min(left, 1.0))
        alive = [p for p in alive if p.exitcode is None]
    return alive


def spawn_job(jobs_module, job, world, out, env, unset, params, timeout_s, title):
    """Run <jobs_module>.<job>(ctx, **params) on `world` ranks started by torch.multiprocessing
    with os.environ changed by env/unset for the start. Every rank still alive after timeout_s
    seconds (a base value, times time_scale()) is killed (SIGKILL by PID) and listed as hung.
    Returns a Launch named `title`."""
    import torch.multiprocessing as mp

    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    with _Environ(env, unset):
        ctx = mp.start_processes(_spawn_entry, args=(jobs_module, job, world, out, params),
                                 nprocs=world, join=False, start_method="spawn")
    procs = ctx.processes
    alive = _wait(procs, t0 + timeout_s * time_scale())
    hung = []
    for p in alive:
        hung.append(procs.index(p))
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in procs:
        p.join(10 * time_scale())
    exitcodes = {i: p.exitcode for i, p in enumerate(procs)}
    return Launch(title, world, out, exitcodes, hung, time.monotonic() - t0)


def spawn(job, world, out, transport="UCX", counters="require", params=None, timeout_s=90,
          extra_env=None):
    """Run gloo_jobs.<job>(ctx, **params) on `world` ranks started by torch.multiprocessing.

    The deadline kills every rank still alive after timeout_s seconds (times time_scale();
    SIGKILL by PID).
    """
    env, unset = rank_env(transport, counters, free_port(), extra_env)
    return spawn_job("gloo_jobs", job, world, out, env, unset, params or {}, timeout_s,
                     f"spawn {job} over {transport}")


# Debian's torch 1.13 launcher on Python 3.11: Std.from_str("0") (the default of --redirects and
# --tee) returns None, because enum.Flag iteration no longer yields the zero member, and the
# launcher then fails in to_map() before starting any worker. The glucx package's start-up hook
# fixes Std.from_str in the venv; describe() names the bug if a launch fails that way.
DEBIAN_STD_SIGNATURE = "'NoneType' object has no attribute 'get'"


def launcher(kind, world, out, transport="UCX", job_args=(), timeout_s=120, extra_env=None):
    """Run plain_job.py through stats_runner.py with the venv's torchrun (kind "torchrun") or
    `python -m torch.distributed.run` (kind "module"), both from sys.executable's installation,
    as a user types them: no option beyond the rank count and the rendezvous address.

    The venv's torchrun takes the dashed spelling the glucx docs use (--nproc-per-node); torch
    1.13's own launcher module only knows the underscore one (--nproc_per_node).
    """
    os.makedirs(out, exist_ok=True)
    port = free_port()
    env, unset = rank_env(transport, "require", port, extra_env)
    if kind == "torchrun":
        exe = os.path.join(os.path.dirname(sys.executable), "torchrun")
        if not os.path.exists(exe):
            raise AssertionError(f"no torchrun next to {sys.executable} ({exe}); the venv must "
                                 "provide one that runs the venv's interpreter (run `make venv`)")
        cmd = [exe, "--nproc-per-node", str(world), "--master-addr", "127.0.0.1",
               "--master-port", str(port)]
    elif kind == "module":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world),
               "--master_addr", "127.0.0.1", "--master_port", str(port)]
    else:
        raise ValueError(kind)
    cmd += [os.path.join(HERE, "stats_runner.py"), os.path.join(HERE, "plain_job.py"), out,
            *job_args]
    child_env = dict(os.environ)
    child_env.update(env)
    for k in unset:
        child_env.pop(k, None)
    child_env["TORCH_SUITE_OUT"] = out
    log_path = os.path.join(out, "launcher.log")
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        # own session: on the deadline the whole tree (launcher + its workers) is killed by
        # process group id, plus any worker that recorded its pid
        proc = subprocess.Popen(cmd, env=child_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=out)
        hung = []
        try:
            rc = proc.wait(timeout=timeout_s * time_scale())
        except subprocess.TimeoutExpired:
            rc = None
            hung = ["launcher"]
            _kill_tree(proc, out, world)
            proc.wait(10 * time_scale())
    exitcodes = {}
    for r in range(world):
        path = os.path.join(out, f"exit{r}.json")
        if os.path.exists(path):
            with open(path) as f:
                exitcodes[r] = json.load(f).get("exit", "?")
    return Launch(f"{kind} plain_job.py over {transport}", world, out, exitcodes, hung,
                  time.monotonic() - t0, launcher_rc=rc, launcher_log=log_path)


def _kill_tree(proc, out, world):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for r in range(world):
        path = os.path.join(out, f"pid{r}")
        try:
            with open(path) as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
