#!/usr/bin/python3
"""End-to-end test of the demo (scripts/demo.sh, what `make demo` runs), at CI size.

    test_demo.py --source-dir SRC --build-dir BUILD --venv VENV --work DIR

Runs scripts/demo.sh with 4 ranks and 2 epochs, then checks, each from its own source:
  * training: exit 0, test accuracy >= 0.85 and the last epoch's loss below the first's
    (train.json, written by examples/train_digits.py);
  * the trace (read with Babeltrace 2's Python bindings; only the processes its glucx-pids lists,
    not another job traced at the same time): events from every rank, the glucx communicator
    of the training announced by all 4 ranks, DDP's framework events present;
  * the report: report.json validates against analysis/report.schema.json, its rank count and
    iteration count agree with the trace, report.txt/report.html/timeline.json exist and
    report.html carries the report (no unfilled marker);
  * the demo's printed summary names the verdict and the three paths;
  * with --node/--browser-test: report.html passes the dashboard's browser test in headless
    Chromium (screenshot kept in DIR/browser/report.png).
Exit 0 = pass, 1 = fail, 77 = skipped (no venv).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import bt2
import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)
from tracepids import PidListError, trace_pids  # noqa: E402

RANKS, EPOCHS, FLOOR = 4, 2, 0.85


def fail(what):
    print("FAIL demo: " + what, file=sys.stderr)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def read_events(trace):
    """(name, payload dict, vpid) of every event of the processes the trace's glucx-pids lists
    (the demo's; not those of another job traced at the same time)."""
    try:
        pids = trace_pids(trace)
    except PidListError as e:
        fail(str(e))
    out = []
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        vpid = int(ev.common_context_field["vpid"])
        if vpid not in pids:
            continue  # another job's: its fields are not even read
        payload = {k: v for k, v in ev.payload_field.items() if not k.startswith("_")}
        out.append((ev.name, payload, vpid))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--node", help="node, to run the dashboard's browser test on report.html")
    ap.add_argument("--browser-test", help="tests/dashboards/browser_test.mjs")
    ap.add_argument("--node-modules", help="the dashboard's node_modules (playwright-core)")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.venv, "bin", "torchrun")):
        print("SKIP demo: no venv at %s (make venv)" % a.venv)
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = dict(os.environ, BUILD=a.build_dir, VENV=a.venv)
    env.pop("LD_PRELOAD", None)
    cmd = [os.path.join(a.source_dir, "scripts", "demo.sh"), "--ranks", str(RANKS), "--epochs",
           str(EPOCHS), "--out", a.work, "--min-accuracy", str(FLOOR)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=scaled(540))
    log = p.stdout + p.stderr
    check(p.returncode == 0, "scripts/demo.sh exited %d:\n%s" % (p.returncode, log[-4000:]))

    # training
    train = json.load(open(os.path.join(a.work, "train.json")))
    check(train["ranks"] == RANKS and train["backend"] == "glucx", "train.json: %s" % train)
    check(train["accuracy"] >= FLOOR, "accuracy %.3f < %.2f" % (train["accuracy"], FLOOR))
    check(train["loss_last_epoch"] < train["loss_first_epoch"],
          "loss did not fall: %s -> %s" % (train["loss_first_epoch"], train["loss_last_epoch"]))

    # trace
    events = read_events(os.path.join(a.work, "trace"))
    check(events, "the trace is empty")
    inits = [(f, pid) for n, f, pid in events if n == "glucx:comm_init" and int(f["size"]) == RANKS]
    check(inits, "no comm_init of a %d-rank communicator" % RANKS)
    by_comm = {}
    for f, pid in inits:
        by_comm.setdefault(int(f["comm_id"]), {})[int(f["rank"])] = pid
    world = [c for c, ranks in by_comm.items() if sorted(ranks) == list(range(RANKS))]
    check(world, "no communicator announced by all %d ranks: %s" % (RANKS, by_comm))
    pids = set(by_comm[world[0]].values())
    check(len(pids) == RANKS, "the ranks are not %d processes: %s" % (RANKS, by_comm[world[0]]))
    names = {}
    for n, f, pid in events:
        names.setdefault(pid, set()).add(n)
    for r, pid in sorted(by_comm[world[0]].items()):
        have = names.get(pid, set())
        for need in ("glucx:coll_begin", "glucx:send_begin", "glucx:iteration_begin",
                     "glucx:bucket_ready"):
            check(need in have, "rank %d (pid %d) has no %s event" % (r, pid, need))
    iterations = sum(1 for n, f, pid in events
                     if n == "glucx:iteration_begin" and pid == by_comm[world[0]][0])

    # report
    rdir = os.path.join(a.work, "report")
    report = json.load(open(os.path.join(rdir, "report.json")))
    schema = json.load(open(os.path.join(a.source_dir, "analysis", "report.schema.json")))
    try:
        jsonschema.validate(report, schema)
    except jsonschema.ValidationError as e:
        fail("report.json does not validate: %s at %s" % (e.message, list(e.absolute_path)))
    check(report["summary"]["ranks"] == RANKS, "report ranks %s" % report["summary"]["ranks"])
    check(report["summary"]["iteration_source"] == "markers",
          "iterations not taken from the DDP markers: %s" % report["summary"]["iteration_source"])
    check(report["summary"]["iterations"] == iterations,
          "report has %d iterations, rank 0 traced %d" % (report["summary"]["iterations"],
                                                          iterations))
    check(report["verdict"]["sentence"], "empty verdict")
    html = open(os.path.join(rdir, "report.html")).read()
    check("@GLUCX_REPORT_JSON@" not in html and report["verdict"]["sentence"][:40]
          .replace("<", "\\u003c") in html, "report.html does not carry the report")
    timeline = json.load(open(os.path.join(rdir, "timeline.json")))
    check(timeline.get("traceEvents"), "timeline.json has no traceEvents")
    check(os.path.getsize(os.path.join(rdir, "report.txt")) > 0, "report.txt is empty")

    # the dashboard of this real report in headless Chromium: no console errors, every chart
    # drawn, tables as long as report.json's lists; the screenshot is kept
    if a.node and a.browser_test:
        shots = os.path.join(a.work, "browser")
        b = subprocess.run([a.node, a.browser_test, "--node-modules", a.node_modules,
                            "--out-dir", shots, "--name", "demo",
                            "--html", os.path.join(rdir, "report.html"),
                            "--report", os.path.join(rdir, "report.json"),
                            "--screenshot", os.path.join(shots, "report.png")],
                           capture_output=True, text=True, timeout=scaled(180))
        check(b.returncode == 0, "browser test of the demo's report.html failed:\n%s"
              % (b.stdout + b.stderr)[-3000:])

    # what the demo prints
    check("Verdict: " + report["verdict"]["sentence"] in p.stdout, "verdict not printed")
    for name in ("report.html", "timeline.json"):
        check(os.path.join(a.work, "report", name) in p.stdout, "%s path not printed" % name)
    print("demo: accuracy %.3f, %d iterations, %d events, verdict: %s"
          % (train["accuracy"], iterations, len(events), report["verdict"]["sentence"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
