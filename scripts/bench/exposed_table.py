#!/usr/bin/env python3
"""The table of scripts/bench/sched_exposed.sh: per mode (directories OUT/<mode>-<round>), the
median over rounds of the step time rank 0 printed and of the exposed communication per rank
and iteration (glucx-analyze's report.json: each iteration's totals.exposed_communication_ns
over its ranks, iterations with index >= SKIP, i.e. after the warm-up; the run's mean), with
the ranges, and the ratios of sched-glucx to ddp-glucx.

usage: exposed_table.py OUT [--skip N]
"""
import argparse
import glob
import json
import os
import re
import statistics


def run_values(d, skip):
    """(step ms, exposed ms per rank and iteration, or None without a report)."""
    with open(os.path.join(d, "run.log")) as f:
        ms = float(re.search(r" ([0-9.]+) ms/step", f.read()).group(1))
    if not os.path.exists(os.path.join(d, "report", "report.json")):
        return ms, None
    with open(os.path.join(d, "report", "report.json")) as f:
        rep = json.load(f)
    per = [it["totals"]["exposed_communication_ns"] / len(it["ranks"])
           for it in rep["iterations"] if it["index"] >= skip and it["ranks"]]
    if not per:
        raise SystemExit(f"exposed_table: {d}: no iteration with index >= {skip}")
    return ms, statistics.mean(per) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--skip", type=int, default=5)
    a = ap.parse_args()
    rows = {}
    for d in sorted(glob.glob(os.path.join(a.out, "*-[0-9]*"))):
        mode = re.sub(r"-[0-9]+$", "", os.path.basename(d))
        rows.setdefault(mode, []).append(run_values(d, a.skip))
    print("| mode | runs | step (median, range) | exposed communication per rank and "
          "iteration (median, range) |")
    print("|---|---|---|---|")
    med = {}
    for mode, vals in rows.items():
        st, ex = [v[0] for v in vals], [v[1] for v in vals if v[1] is not None]
        med[mode] = (statistics.median(st), statistics.median(ex) if ex else None)
        exs = (f"{med[mode][1]:.1f} ms ({min(ex):.1f}-{max(ex):.1f})" if ex else "-")
        print(f"| {mode} | {len(vals)} | {med[mode][0]:.1f} ms ({min(st):.1f}-{max(st):.1f}) | "
              f"{exs} |")
    print()
    for s_mode in ("sched-glucx", "sched-auto", "sched-preempt"):
        if s_mode not in med:
            continue
        s = med[s_mode]
        for ref, target in (("ddp-gloo", 1.25), ("ddp-glucx", 1.15)):
            if ref in med:
                print(f"{s_mode}: {med[ref][0] / s[0]:.2f}x faster per step than {ref} "
                      f"(target >= {target}x)")
        if "ddp-glucx" in med and s[1] is not None and med["ddp-glucx"][1]:
            print(f"{s_mode}: exposed communication {s[1] / med['ddp-glucx'][1]:.2f} of "
                  f"ddp-glucx's (target <= 0.5)")


if __name__ == "__main__":
    main()
