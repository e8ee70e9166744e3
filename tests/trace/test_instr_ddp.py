#!/usr/bin/python3
"""DDP instrumentation test: a 2-rank DDP job instrumented with glucx.torch.instrument(), run
under `glucx-trace record`, its framework events read back with Babeltrace 2.

    test_instr_ddp.py --glucx-trace EXE --venv-python PY --work DIR CASE

CASE is BACKEND-START[-noopt][-late]:
  BACKEND  gloo     Gloo's TCP transport
           glooucx  Gloo over glucx (GLOO_DEVICE_TRANSPORT=UCX)
           glucx    the glucx backend (skipped, exit 77, while the venv's torch has no backend
                    "glucx")
  START    spawn or fork (torch.multiprocessing start method of the ranks)
  -noopt   no optimizer passed to instrument(): iterations end with the backward pass
  -late    the job's glucx.torch sees the trace session only from iteration LATE on (ddp_job.py
           --late): its comm hook is registered then, mid-training; events are expected for
           iterations LATE..steps-1 only

The job (ddp_job.py) reports, per rank, its pid, its parameter bytes, DDP's bucket sizes per step
and whether training gave the same parameters as an uninstrumented twin and on every rank. Checks,
per rank (its events found by vpid = the job's pid), with every expected value from the job:
  - iteration_begin/iteration_end: one pair per step, iterations 0..steps-1, in order;
  - inside each iteration: one forward compute pair; bucket_ready for buckets 0..k-1 in order
    with DDP's sizes, summing to the parameter bytes; per bucket a backward compute pair ending
    before its bucket_ready and an allreduce pair starting after it; the optimizer pair after
    every allreduce completed (or, with -noopt, none and the iteration ending after them);
    no framework event outside an iteration;
  - rank and comm id: glucx backend: the rank and the comm id of the rank's comm_init; other
    backends: rank -1, comm id 0 (and, over glucx, the Gloo communicator's comm_init in the same
    process names the rank);
  - training unchanged by the instrumentation (bitwise), ranks agree, loss falls;
  - the instrumented model, its optimizer and the handle are freed without the garbage
    collector (remove() called in the runs with an optimizer, not in the -noopt runs);
  - nothing discarded.
Exit 0 = pass, 77 = skipped (prints why).
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_instr import Failure, check, free_port, probe_venv, read_events  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)
from tracepids import PidListError, trace_pids  # noqa: E402 (test_instr put it on sys.path)

SKIP = 77
TIMEOUT = scaled(100)  # s, for the traced job
RANKS = 2
STEPS = 5
LATE = 2  # first recorded iteration of the -late cases
FRAMEWORK = ("iteration_begin", "iteration_end", "compute_begin", "compute_end", "bucket_ready")


def record(a, out_dir, cmd, env):
    shutil.rmtree(out_dir, ignore_errors=True)
    e = dict(os.environ)
    e.pop("GLUCX_TRACE", None)
    e.update(env)
    try:
        p = subprocess.run([a.glucx_trace, "record", "-o", out_dir, "--", *cmd], env=e,
                           capture_output=True, text=True, timeout=TIMEOUT + 20)
    except subprocess.TimeoutExpired as ex:
        raise Failure("traced DDP job did not finish within %d s:\n%s" % (TIMEOUT + 20, ex))
    check(p.returncode == 0, "traced DDP job failed (rc %d):\n%s\n%s"
          % (p.returncode, p.stdout[-3000:], p.stderr[-4000:]))


def pairs(evs, phase):
    """{id: (begin event, end event)} of one compute phase; fails unless each id has exactly
    one begin and one end, the end not before the begin."""
    b = collections.defaultdict(list)
    e = collections.defaultdict(list)
    for x in evs:
        if x["ev"] in ("compute_begin", "compute_end") and x["phase"] == phase:
            (b if x["ev"] == "compute_begin" else e)[x["id"]].append(x)
    check(b.keys() == e.keys(), "%s: begins for ids %s, ends for ids %s"
          % (phase, sorted(b), sorted(e)))
    out = {}
    for i in b:
        check(len(b[i]) == 1 and len(e[i]) == 1, "%s %d: %d begins, %d ends"
              % (phase, i, len(b[i]), len(e[i])))
        check(e[i][0]["ts"] >= b[i][0]["ts"], "%s %d ends before it begins" % (phase, i))
        out[i] = (b[i][0], e[i][0])
    return out


def check_rank(r, job, mine, evs, backend, optimizer, first):
    """The framework events of rank r (`mine`, in trace order); `evs` is the whole trace."""
    pid = job["pid"]
    # who the events say they are
    if backend == "glucx":
        inits = [e for e in evs if e["ev"] == "comm_init" and e.get("vpid") == pid and
                 e["rank"] == r]
        cids = {e["comm_id"] for e in inits}
        check(cids, "rank %d (pid %d): no comm_init of a glucx communicator" % (r, pid))
        bad = [e for e in mine if e["rank"] != r or e["comm_id"] not in cids]
        check(not bad, "rank %d: framework events with another rank or comm id: %s"
              % (r, bad[:3]))
    else:
        bad = [e for e in mine if e["rank"] != -1 or e["comm_id"] != 0]
        check(not bad, "rank %d (%s group): events should carry rank -1, comm id 0: %s"
              % (r, backend, bad[:3]))
        if backend == "glooucx":
            inits = [e for e in evs if e["ev"] == "comm_init" and e.get("vpid") == pid]
            check([(e["name"], e["rank"]) for e in inits] == [("gloo", r)],
                  "rank %d (pid %d): the Gloo communicator's comm_init: %s" % (r, pid, inits))

    begins = [e for e in mine if e["ev"] == "iteration_begin"]
    ends = [e for e in mine if e["ev"] == "iteration_end"]
    check([e["iteration"] for e in begins] == list(range(first, STEPS)) and
          [e["iteration"] for e in ends] == list(range(first, STEPS)),
          "rank %d: iterations begun %s, ended %s; want %d..%d each"
          % (r, [e["iteration"] for e in begins], [e["iteration"] for e in ends], first,
             STEPS - 1))
    inside = 0
    for n, (b, e) in enumerate(zip(begins, ends)):
        i = first + n
        check(b["ts"] <= e["ts"], "rank %d: iteration %d ends before it begins" % (r, i))
        if n + 1 < len(begins):
            check(e["ts"] <= begins[n + 1]["ts"], "rank %d: iteration %d overlaps the next"
                  % (r, i))
        it = [x for x in mine if b["ts"] <= x["ts"] <= e["ts"] and x["ev"] in
              ("compute_begin", "compute_end", "bucket_ready")]
        inside += len(it) + 2
        where = "rank %d iteration %d" % (r, i)

        fwd = pairs(it, "forward")
        check(list(fwd) == [0], "%s: forward ids %s" % (where, list(fwd)))
        fwd_end = fwd[0][1]["ts"]

        ready = [x for x in it if x["ev"] == "bucket_ready"]
        want = job["buckets"][i]
        check([x["bucket"] for x in ready] == list(range(len(want))),
              "%s: buckets %s in this order, want 0..%d" % (where, [x["bucket"] for x in ready],
                                                            len(want) - 1))
        check([x["bytes"] for x in ready] == want, "%s: bucket bytes %s, DDP's %s"
              % (where, [x["bytes"] for x in ready], want))
        check(sum(x["bytes"] for x in ready) == job["param_bytes"],
              "%s: buckets hold %d bytes, the parameters %d"
              % (where, sum(x["bytes"] for x in ready), job["param_bytes"]))

        bwd = pairs(it, "backward")
        ar = pairs(it, "comm:allreduce")
        k = len(want)
        check(sorted(bwd) == list(range(k)) and sorted(ar) == list(range(k)),
              "%s: backward ids %s, allreduce ids %s, want 0..%d"
              % (where, sorted(bwd), sorted(ar), k - 1))
        check(bwd[0][0]["ts"] >= fwd_end, "%s: backward starts before the forward ends" % where)
        for j in range(k):
            t_ready = ready[j]["ts"]
            check(bwd[j][1]["ts"] <= t_ready, "%s: bucket %d ready before its backward ended"
                  % (where, j))
            check(ar[j][0]["ts"] >= t_ready, "%s: allreduce %d launched before bucket_ready"
                  % (where, j))
            if j + 1 < k:
                check(bwd[j + 1][0]["ts"] >= t_ready, "%s: backward %d starts before bucket %d "
                      "was ready" % (where, j + 1, j))
        last_ar = max(v[1]["ts"] for v in ar.values())
        opt = pairs(it, "optimizer")
        if optimizer:
            check(list(opt) == [0], "%s: optimizer ids %s" % (where, list(opt)))
            check(opt[0][0]["ts"] >= last_ar, "%s: optimizer step before the allreduces "
                  "completed" % where)
        else:
            check(not opt, "%s: optimizer events without an optimizer" % where)
            check(e["ts"] >= last_ar, "%s: iteration ends before its allreduces" % where)
        phases = {x["phase"] for x in it if x["ev"] != "bucket_ready"}
        check(phases <= {"forward", "backward", "comm:allreduce", "optimizer"},
              "%s: unexpected phases %s" % (where, phases))
    check(inside == len(mine), "rank %d: %d framework events outside the iterations"
          % (r, len(mine) - inside))


def check_glucx_colls(evs, jobs):
    """glucx backend: each bucket's allreduce runs as a glucx allreduce of the bucket's bytes
    between its launch and its completion."""
    for r, job in jobs.items():
        pid = job["pid"]
        mine = [e for e in evs if e.get("vpid") == pid]
        launches = [e for e in mine if e["ev"] == "compute_begin" and e["phase"] == "comm:allreduce"]
        done = [e for e in mine if e["ev"] == "compute_end" and e["phase"] == "comm:allreduce"]
        ready = [e for e in mine if e["ev"] == "bucket_ready"]
        colls = [e for e in mine if e["ev"] == "coll_begin" and e["coll"] == 0]
        for n, (lb, rd) in enumerate(zip(launches, ready)):
            end = [d for d in done if d["id"] == lb["id"] and d["ts"] >= lb["ts"]][0]
            hit = [c for c in colls if lb["ts"] <= c["ts"] <= end["ts"] and
                   c["bytes"] == rd["bytes"]]
            check(hit, "rank %d: no glucx allreduce of %d bytes between launch and completion "
                  "of bucket %d (launch %d)" % (r, rd["bytes"], lb["id"], n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--glucx-trace", required=True)
    ap.add_argument("--venv-python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case")
    a = ap.parse_args()
    parts = a.case.split("-")
    flags = parts[2:]
    if len(parts) < 2 or parts[0] not in ("gloo", "glooucx", "glucx") or \
            parts[1] not in ("spawn", "fork") or \
            [f for f in ("noopt", "late") if f in flags] != flags:
        ap.error("CASE is (gloo|glooucx|glucx)-(spawn|fork)[-noopt][-late], got %r" % a.case)
    backend, start = parts[0], parts[1]
    optimizer, first = "noopt" not in flags, LATE if "late" in flags else 0

    why, has_glucx = probe_venv(a.venv_python)
    if why:
        print("skipped: " + why)
        return SKIP
    if backend == "glucx" and not has_glucx:
        print("skipped: the venv's torch has no backend \"glucx\" (not built yet)")
        return SKIP

    work = os.path.join(a.work, a.case)
    out = os.path.join(work, "ranks")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(out)
    job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_job.py")
    cmd = [a.venv_python, job, "--backend", "glucx" if backend == "glucx" else "gloo",
           "--start", start, "--port", str(free_port()), "--out", out, "--steps", str(STEPS),
           "--ranks", str(RANKS), "--late", str(first)] + ([] if optimizer else ["--no-optimizer"])
    env = {"GLOO_SOCKET_IFNAME": "lo"}
    if backend == "glooucx":
        env["GLOO_DEVICE_TRANSPORT"] = "UCX"
    else:
        os.environ.pop("GLOO_DEVICE_TRANSPORT", None)
    d = os.path.join(work, "trace")
    try:
        record(a, d, ["timeout", "-k", "5", "%d" % TIMEOUT] + cmd, env)
        jobs = {}
        for r in range(RANKS):
            with open(os.path.join(out, "rank%d.json" % r)) as f:
                jobs[r] = json.load(f)
        for r, j in jobs.items():
            check(j["same_as_reference"], "rank %d: instrumented training gave other parameters "
                  "than the uninstrumented twin" % r)
            check(j["same_across_ranks"], "rank %d: parameters differ from rank 0's" % r)
            check(j["losses"][-1] < j["losses"][0], "rank %d: loss did not fall: %s"
                  % (r, j["losses"]))
            check(j["iterations"] == STEPS, "rank %d: handle counted %d iterations"
                  % (r, j["iterations"]))
            check(j["freed_by_refcount"], "rank %d: the DDP model, its module, the optimizer "
                  "or the handle is kept alive by a reference cycle after the job dropped them"
                  % r)
            check(j["glucx_comm"] == (backend == "glucx"),
                  "rank %d: events name a glucx communicator: %s" % (r, j["glucx_comm"]))
            check((j["devices_created"] > 0) == (backend == "glooucx"),
                  "rank %d: %d glucx Gloo devices created, backend %s"
                  % (r, j["devices_created"], backend))
        # The session records every process of this user that has the provider loaded (other
        # traced jobs on the machine too): read_events keeps the job's processes (glucx-pids),
        # and only the ranks' processes among them are looked at.
        evs = read_events(d)
        pids = {j["pid"]: r for r, j in jobs.items()}
        check(set(pids) <= trace_pids(d), "the ranks' processes %s are not all in %s/glucx-pids"
              " %s" % (sorted(pids), d, sorted(trace_pids(d))))
        check(all(e.get("vpid") is not None for e in evs), "events without the vpid context")
        evs = [e for e in evs if e["vpid"] in pids]
        fw = [e for e in evs if e["ev"] in FRAMEWORK]
        seen = {e["vpid"] for e in fw}
        check(seen == set(pids), "framework events from processes %s, the ranks are %s"
              % (sorted(seen), pids))
        for r, j in jobs.items():
            check_rank(r, j, [e for e in fw if e.get("vpid") == j["pid"]], evs, backend,
                       optimizer, first)
        if backend == "glucx":
            check_glucx_colls(evs, jobs)
    except (Failure, PidListError) as e:
        print("FAIL:", e)
        return 1
    n_ready = sum(1 for e in fw if e["ev"] == "bucket_ready")
    print("%s: %d framework events, %d buckets over %d ranks x %d steps" %
          (a.case, len(fw), n_ready, RANKS, STEPS))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
