#!/usr/bin/env python3
"""scripts/compare.sh --load: stress-ng runs during the measurement and is stopped on every exit.

compare.sh runs with its libraries replaced by small shell commands (GLUCX_COMPARE_RUN_<lib>,
documented in compare.sh), so no Open MPI, PyTorch or glucx build is needed and each case takes a
few seconds. The fake libraries look at the load while they run: every PID compare.sh wrote to
load.pids must then be a live stress-ng process. Cases:
  ok        `--load` alone, 2 repetitions, allreduce and allgather, libraries memcpy, mpi and
            gloo (memcpy runs with the first collective only): exit 0; the load had
            1 + N live stress-ng processes during every run, N (online CPUs) of them workers;
            the header records the command line `stress-ng --cpu <N> ...`; the order of the
            libraries rotated between the repetitions; "BELOW PROTOCOL" flagged (2 < 5 runs);
            afterwards none of the load's PIDs is a stress-ng process any more
  failure   (this and the next cases with --load cpu:1: one worker, so they take less of the
            machine) the fake mpi exits 3: compare.sh exits non-zero, names the failed library,
            and the load is gone
  SIGINT, SIGTERM
            sent to compare.sh while a fake library sleeps: compare.sh exits with 128 + signal
            within a bounded time, and neither the load nor the fake library's processes survive
  expired   --load-timeout 5 and a first run that outlasts it: compare.sh refuses to measure on
            ("no longer running") instead of mixing loaded and quiet runs
  pin       scripts/bench/pin_rank.sh (--bind): rank r on the (r mod n)-th allowed CPU, as
            PyTorch's --bind; OMPI_COMM_WORLD_RANK before RANK; no rank is an error
Exit 77 (skip) without stress-ng or taskset.

usage: test_compare_load.py --compare scripts/compare.sh --work DIR
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402

# compare.sh's --load alone: one stress-ng worker per online CPU
NPROC = os.sysconf("SC_NPROCESSORS_ONLN")

# A fake library run: record the live stress-ng processes among load.pids, then print rows.
SEE_LOAD = r'''
alive=0
for p in $(cat "$COMPARE_OUT/load.pids"); do
  case "$(cat /proc/$p/comm 2>/dev/null)" in stress-ng|stress-ng-*) alive=$((alive + 1)) ;; esac
done
echo "$COMPARE_COLL $COMPARE_LIB $COMPARE_RUN $alive" >> "$COMPARE_OUT/seen"
'''
ROWS = 'echo "# fake $COMPARE_LIB"; echo "1024 2.0"; echo "2048 3.0"\n'

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def stress_alive(pids):
    """The PIDs among pids that are (still) stress-ng processes."""
    live = []
    for p in pids:
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip().startswith("stress-ng"):
                    live.append(p)
        except OSError:
            pass
    return live


def read_pids(out):
    try:
        with open(os.path.join(out, "load.pids")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def gone_within(pids, seconds):
    """Wait (bounded) until none of pids is a stress-ng process; the survivors."""
    deadline = time.monotonic() + seconds
    while stress_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return stress_alive(pids)


def compare(a, out, env_libs, *extra, wait=True):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GLUCX_COMPARE_RUN_"):
            del env[k]
    env.update({f"GLUCX_COMPARE_RUN_{k}": v for k, v in env_libs.items()})
    cmd = ["bash", a.compare, "2", "--libs", " ".join(env_libs), "-b", "1024", "-e", "2048",
           "--no-ddp", "--no-install", "-B", os.path.join(a.work, "nobuild"), "-o", out,
           *extra]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    if not wait:
        return p
    text, _ = p.communicate(timeout=scaled(120))
    return p.returncode, text


def case_ok(a):
    out = os.path.join(a.work, "ok")
    libs = {"memcpy": SEE_LOAD + ROWS.replace("2.0", "9.0"), "mpi": SEE_LOAD + ROWS,
            "gloo": SEE_LOAD + ROWS}
    rc, text = compare(a, out, libs, "-r", "2", "--load", "-c", "allreduce allgather")
    check(rc == 0, f"ok: exit 0 (rc {rc})")
    if rc != 0:
        print(text)
    pids = read_pids(out)
    check(len(pids) == 1 + NPROC, f"ok: load.pids has the main process and {NPROC} workers "
          f"({pids})")
    seen = open(os.path.join(out, "seen")).read().split("\n") if os.path.exists(
        os.path.join(out, "seen")) else []
    seen = [ln.split() for ln in seen if ln.strip()]
    # allreduce: memcpy, mpi, gloo; then mpi, gloo, memcpy. allgather (no memcpy): mpi, gloo;
    # then gloo, mpi
    want = [("allreduce", "memcpy", "1"), ("allreduce", "mpi", "1"), ("allreduce", "gloo", "1"),
            ("allreduce", "mpi", "2"), ("allreduce", "gloo", "2"), ("allreduce", "memcpy", "2"),
            ("allgather", "mpi", "1"), ("allgather", "gloo", "1"),
            ("allgather", "gloo", "2"), ("allgather", "mpi", "2")]
    check([tuple(s[:3]) for s in seen] == want,
          f"ok: every library once per repetition, the order rotating ({seen})")
    check(len(seen) == len(want) and all(int(s[3]) == 1 + NPROC for s in seen),
          f"ok: all {1 + NPROC} stress-ng processes alive during every run ({seen})")
    proto = open(os.path.join(out, "protocol.txt")).read()
    check(f"# load: stress-ng --cpu {NPROC} --timeout " in proto,
          "ok: the header records stress-ng's command line")
    check("BELOW PROTOCOL (2 < 5 runs)" in proto and "BELOW PROTOCOL" in text,
          "ok: 2 runs flagged below protocol")
    check("pinning: none" in proto, "ok: the header states the pinning policy")
    check(not gone_within(pids, scaled(5)), "ok: no stress-ng process of the run survives")


def case_failure(a):
    out = os.path.join(a.work, "failure")
    rc, text = compare(a, out, {"mpi": SEE_LOAD + "exit 3\n"}, "-r", "1", "--load", "cpu:1")
    pids = read_pids(out)
    check(rc != 0 and "mpi failed on allreduce, run 1 (exit status 3" in text,
          f"failure: non-zero exit naming the library (rc {rc})")
    check(len(pids) == 2 and not gone_within(pids, scaled(5)),
          f"failure: the load ({pids}) is stopped")


def case_signal(a, sig):
    name = signal.Signals(sig).name
    out = os.path.join(a.work, name)
    os.makedirs(out)
    marker = os.path.join(out, "fake.pids")
    sleeper = SEE_LOAD + f'sleep 120 & echo "$$ $!" > "{marker}"; wait\n'
    p = compare(a, out, {"mpi": sleeper}, "-r", "1", "--load", "cpu:1", wait=False)
    deadline = time.monotonic() + scaled(60)
    while not os.path.exists(marker) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    started = os.path.exists(marker)
    check(started, f"{name}: the fake library started under the load")
    if not started:
        p.kill()
        print(p.communicate()[0])
        return
    time.sleep(0.3)  # the marker is written just before `wait`
    pids = read_pids(out)
    fake = [int(x) for x in open(marker).read().split()]
    p.send_signal(sig)
    try:
        text, _ = p.communicate(timeout=scaled(30))
    except subprocess.TimeoutExpired:
        p.kill()
        text = p.communicate()[0]
        check(False, f"{name}: compare.sh ended within 30 s of the signal")
    check(p.returncode == 128 + sig, f"{name}: exit status {128 + sig} ({p.returncode})")
    check(f"interrupted by SIG{name[3:]}" in text, f"{name}: says it was interrupted")
    check(len(pids) == 2 and not gone_within(pids, scaled(5)),
          f"{name}: the load ({pids}) is stopped")
    deadline = time.monotonic() + scaled(15)
    live = fake
    while live and time.monotonic() < deadline:
        live = [q for q in fake if os.path.exists(f"/proc/{q}")
                and open(f"/proc/{q}/stat").read().split(")")[-1].split()[0] != "Z"]
        time.sleep(0.1)
    check(not live, f"{name}: the running library's processes ({fake}) are stopped ({live})")


def case_expired(a):
    out = os.path.join(a.work, "expired")
    slow = SEE_LOAD + 'sleep 8\n' + ROWS
    rc, text = compare(a, out, {"mpi": slow, "memcpy": ROWS}, "-r", "1", "--load", "cpu:1",
                       "--load-timeout", "5")
    ok = rc != 0 and "is no longer running" in text
    check(ok, f"expired: measuring stops when the load ended (rc {rc})"
          + ("" if ok else f": {text[-600:]}"))
    check(not gone_within(read_pids(out), scaled(5)), "expired: nothing left")


def case_pin(a):
    """scripts/bench/pin_rank.sh (compare.sh --bind) puts rank r on the (r mod n)-th allowed CPU,
    the rule torch_gloo.py/ddp_resnet.py --bind apply: sorted(os.sched_getaffinity(0))[r % n]."""
    pin = os.path.join(os.path.dirname(os.path.abspath(a.compare)), "bench", "pin_rank.sh")
    cpus = sorted(os.sched_getaffinity(0))

    def allowed(env, prefix=()):
        e = {k: v for k, v in os.environ.items()
             if k not in ("RANK", "OMPI_COMM_WORLD_RANK", "PIN_RANK")}
        e.update(env)
        p = subprocess.run([*prefix, pin, "grep", "Cpus_allowed_list", "/proc/self/status"],
                           env=e, capture_output=True, text=True, timeout=scaled(30))
        return p.returncode, p.stdout.split(":")[-1].strip(), p.stderr

    for r in range(2 * len(cpus) + 1):
        rc, got, err = allowed({"RANK": str(r)})
        check(rc == 0 and got == str(cpus[r % len(cpus)]),
              f"pin: RANK={r} on CPU {cpus[r % len(cpus)]} ({rc}, {got!r}, {err.strip()})")
    rc, got, _ = allowed({"OMPI_COMM_WORLD_RANK": "1", "RANK": "0"})
    check(rc == 0 and got == str(cpus[1 % len(cpus)]), "pin: mpirun's rank variable first")
    rc, got, err = allowed({})
    check(rc == 2 and "no rank" in err, f"pin: no rank variable is an error ({rc})")
    if len(cpus) >= 2:  # a restricted parent: the rule indexes the allowed list
        rc, got, _ = allowed({"RANK": "0"}, ("taskset", "-c", str(cpus[-1])))
        check(rc == 0 and got == str(cpus[-1]), f"pin: within an allowed list of one ({got})")


def kill_leftovers(work):
    """Stop (by PID) any stress-ng process a failed case left behind, so the test does not
    leave the machine loaded."""
    for case in os.listdir(work):
        for q in stress_alive(read_pids(os.path.join(work, case))):
            try:
                os.kill(q, signal.SIGKILL)
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if not shutil.which("stress-ng") or not shutil.which("taskset"):
        print("SKIP: needs stress-ng and taskset")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    try:
        case_pin(a)
        case_ok(a)
        case_failure(a)
        case_signal(a, signal.SIGINT)
        case_signal(a, signal.SIGTERM)
        case_expired(a)
    finally:
        kill_leftovers(a.work)
    if FAILS:
        print(f"FAIL: {len(FAILS)} checks failed", file=sys.stderr)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
