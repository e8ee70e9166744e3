#!/usr/bin/python3
"""ScheduledDataParallel's trace events and their analysis: a 2-rank job (sched_job.py, glucx
backend, four partitions, skewed backward) under `glucx-trace record`, then `glucx-analyze`.

    test_instr_sched.py --glucx-trace EXE --analyze EXE --venv-python PY --work DIR

Three runs: partitions of one layer each (partition_bytes 20000), partition_bytes="auto", and
partitions of one layer each started with libglucx's priority scheduling (preempt_chunk_bytes
4096: each partition's allreduce cut into chunks).

Checks, against what the job itself recorded (its plan, profile and decisions per rank) and
numbers recomputed here from the report's own totals:
  - the job trained (ranks agree bitwise) and planned (a profile, one decision per partition);
  - report.json: iterations from the wrapper's markers, one per step; compute and exposed
    communication measured;
  - decisions of kind order: one per partition and iteration after the first (the plan is made
    at backward 1), each at a distinct allreduce, in the plan's order within an iteration, with
    the chosen partition, the options and their predicted costs the job emitted; the ranks
    agree; each one's saving is its predicted cost minus the cheapest option's;
  - the scheduling section's order entry: that count, the mean of the chosen options' costs,
    the mean of the cheapest, and measured = the summary's exposed communication per rank and
    iteration; the algorithm entry counts the algorithm decisions listed;
  - "auto": exactly one decision of kind partition, on the first allreduce after the first
    iteration's, with the job's chosen candidate, its candidates and their costs (cheapest
    first, named "uniform C KiB" / "growing from S KiB" / "one partition"), and the order
    decisions over the chosen partitions.
  - preempt: one decision of kind priority per chunk of every planned allreduce (iterations
    after the first; chunks = ceil(partition bytes / 4096)), each on its own collective: chosen
    "seq N" with N its seq, among its options, that chunk's collective time measured, no
    saving, the ranks agree; the scheduling section's priority entry counts them; the order
    decisions are as in the first run (each at its allreduce's agreement seq, the first chunk's
    seq right after).
Exit 0 pass, 77 skip (no venv or no glucx backend).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_instr import Failure, check, free_port, probe_venv  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)

SKIP = 77
TIMEOUT = scaled(120)  # s, the traced job
STEPS = 6
RANKS = 2


def option_name(cid):
    if cid > 0:
        return "uniform %d KiB" % cid
    return "growing from %d KiB" % -cid if cid < 0 else "one partition"


def run_case(a, auto, preempt=None):
    work = os.path.join(a.work, "auto" if auto else "preempt" if preempt else "fixed")
    shutil.rmtree(work, ignore_errors=True)
    out = os.path.join(work, "ranks")
    os.makedirs(out)
    job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sched_job.py")
    env = dict(os.environ)
    env.pop("GLUCX_TRACE", None)
    try:
        p = subprocess.run([a.glucx_trace, "record", "-o", os.path.join(work, "trace"), "--",
                            a.venv_python, job, "--port", str(free_port()), "--out", out,
                            "--steps", str(STEPS)] + (["--auto"] if auto else []) +
                           (["--preempt", str(preempt)] if preempt else []),
                           env=env, capture_output=True, text=True,
                           timeout=TIMEOUT + 20)
    except subprocess.TimeoutExpired as ex:
        raise Failure("traced job did not finish within %d s:\n%s" % (TIMEOUT + 20, ex))
    check(p.returncode == 0, "traced job failed (rc %d):\n%s\n%s"
          % (p.returncode, p.stdout[-3000:], p.stderr[-4000:]))
    jobs = [json.load(open(os.path.join(out, "rank%d.json" % r))) for r in range(RANKS)]
    n = jobs[0]["partitions"]
    check(auto or n == 4, "expected 4 partitions, the job has %d" % n)
    check(all(j["agree"] for j in jobs), "parameters differ across ranks")
    dec0 = jobs[0]["decisions"]
    check(len(dec0) == n and [d[0] for d in dec0] == jobs[0]["plan"],
          "the job's decisions %s do not follow its plan %s" % (dec0, jobs[0]["plan"]))
    check(jobs[1]["decisions"] == dec0 and jobs[1]["plan"] == jobs[0]["plan"],
          "the ranks' plans differ: %s / %s" % (jobs[0]["decisions"], jobs[1]["decisions"]))

    rep = os.path.join(work, "report")
    p = subprocess.run([a.analyze, os.path.join(work, "trace"), "-o", rep, "--list-limit", "0"],
                       capture_output=True, text=True, timeout=scaled(120))
    check(p.returncode == 0, "glucx-analyze failed (rc %d): %s" % (p.returncode, p.stderr))
    r = json.load(open(os.path.join(rep, "report.json")))
    s = r["summary"]
    check(s["iteration_source"] == "markers" and s["iterations"] == STEPS,
          "iterations: %s from %s, expected %d from markers"
          % (s["iterations"], s["iteration_source"], STEPS))
    t = s["totals"]
    check(t["compute_ns"] > 0 and t["communication_ns"] > 0, "no compute or communication: %s" % t)

    order = [d for d in r["decisions"] if d["kind"] == "order"]
    check(len(order) == n * (STEPS - 1), "%d order decisions, expected %d (%d partitions x %d "
          "iterations)" % (len(order), n * (STEPS - 1), n, STEPS - 1))
    check(len({d["seq"] for d in order}) == len(order), "two order decisions on one collective")
    order.sort(key=lambda d: d["seq"])
    part = [d for d in r["decisions"] if d["kind"] == "partition"]
    if auto:
        ids, costs, chosen = jobs[0]["partition_decision"]
        check(jobs[1]["partition_decision"] == jobs[0]["partition_decision"],
              "the ranks chose differently: %s" % [j["partition_decision"] for j in jobs])
        check(len(part) == 1, "%d partition decisions, expected 1" % len(part))
        d = part[0]
        srt = sorted(range(len(ids)), key=lambda i: costs[i])
        check(d["seq"] == order[0]["seq"] and d["chosen"] == option_name(chosen) and
              [x["option"] for x in d["alternatives"]] == [option_name(ids[i]) for i in srt] and
              [x["predicted_ns"] for x in d["alternatives"]] == [costs[i] for i in srt] and
              d["ranks_agree"],
              "partition decision %s; the job chose %s of %s %s" % (d, chosen, ids, costs))
        check("partition" in {x["kind"] for x in r["scheduling"]}, "no partition entry in the "
              "scheduling section")
    else:
        check(not part, "partition decisions without auto: %s" % part)
    for i, d in enumerate(order):
        k, opts, costs = dec0[i % n]
        want = ["partition %d" % o for o in opts]
        got = [x["option"] for x in d["alternatives"]]
        check(d["chosen"] == "partition %d" % k and got == want and
              [x["predicted_ns"] for x in d["alternatives"]] == costs,
              "decision %d (seq %d): %s chosen of %s %s; the job emitted partition %d of %s %s"
              % (i, d["seq"], d["chosen"], got, [x["predicted_ns"] for x in d["alternatives"]],
                 k, want, costs))
        check(d["coll"] == "allreduce" and d["ranks_agree"], "decision %d: %s" % (i, d))
        check(d["predicted_ns"] == costs[opts.index(k)] and
              d["saving_ns"] == costs[opts.index(k)] - min(costs),
              "decision %d: predicted %s saving %s, expected %d and %d" % (
                  i, d["predicted_ns"], d["saving_ns"], costs[opts.index(k)],
                  costs[opts.index(k)] - min(costs)))
    sched = {x["kind"]: x for x in r["scheduling"]}
    prio = [d for d in r["decisions"] if d["kind"] == "priority"]
    if preempt:
        chunks = sum((b + preempt - 1) // preempt for b in jobs[0]["part_bytes"])
        check(len(prio) == chunks * (STEPS - 1),
              "%d priority decisions, expected %d (%d chunks per iteration x %d)"
              % (len(prio), chunks * (STEPS - 1), chunks, STEPS - 1))
        check(len({d["seq"] for d in prio}) == len(prio), "two priority decisions on one chunk")
        for d in prio:
            opts = [x["option"] for x in d["alternatives"]]
            check(d["chosen"] == "seq %d" % d["seq"] and d["chosen"] in opts and
                  d["measured_ns"] is not None and d["measured_ns"] > 0 and
                  d["saving_ns"] == 0 and d["ranks_agree"] and d["coll"] == "allreduce",
                  "priority decision %s" % d)
        # an order decision names the seq its allreduce then takes: that of its agreements,
        # its first chunk's follows
        firsts = {d["seq"] + 1 for d in order}
        check(firsts <= {d["seq"] for d in prio}, "an order decision's allreduce has no first "
              "chunk at seq %s" % sorted(firsts - {d["seq"] for d in prio}))
        check(sched.get("priority", {}).get("decisions") == len(prio),
              "scheduling/priority %s, expected %d decisions" % (sched.get("priority"), len(prio)))
    else:
        check(not prio, "priority decisions without preemption: %s" % prio[:2])
    o = sched.get("order")
    check(o is not None, "no order entry in the scheduling section: %s" % r["scheduling"])
    chosen = [c[opts.index(k)] for k, opts, c in dec0]
    best = [min(c) for _, _, c in dec0]
    check(o["decisions"] == len(order) and
          abs(o["predicted_mean_ns"] - sum(chosen) / n) <= 1 and
          abs(o["best_predicted_mean_ns"] - sum(best) / n) <= 1,
          "scheduling/order %s; expected %d decisions, predicted mean %.0f, best %.0f"
          % (o, len(order), sum(chosen) / n, sum(best) / n))
    exposed = t["exposed_communication_ns"] / (STEPS * s["ranks"])
    check(abs(o["measured_mean_ns"] - exposed) <= 1,
          "scheduling/order measured %s, expected %.0f (exposed communication per rank and "
          "iteration)" % (o["measured_mean_ns"], exposed))
    algs = [d for d in r["decisions"] if d["kind"] == "algorithm"]
    check(sched["algorithm"]["decisions"] == len(algs), "scheduling/algorithm counts %d, the "
          "list has %d" % (sched["algorithm"]["decisions"], len(algs)))
    txt = open(os.path.join(rep, "report.txt")).read()
    check("\nscheduling" in txt and "\norder " in txt, "report.txt has no scheduling section")
    print("ok (%s): %d order, %d priority decisions (plan %s), predicted exposed %.2f ms, "
          "measured %.2f ms"
          % ("auto" if auto else "preempt" if preempt else "fixed", len(order), len(prio),
             jobs[0]["plan"],
             o["predicted_mean_ns"] / 1e6, o["measured_mean_ns"] / 1e6))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--glucx-trace", required=True)
    ap.add_argument("--analyze", required=True)
    ap.add_argument("--venv-python", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    why, has_glucx = probe_venv(a.venv_python)
    if why or not has_glucx:
        print("skipped: " + (why or "the venv's torch has no backend \"glucx\""))
        return SKIP
    run_case(a, False)
    run_case(a, True)
    run_case(a, False, preempt=4096)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("FAIL: %s" % e)
        sys.exit(1)
