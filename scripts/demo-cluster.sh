#!/usr/bin/env bash
# `make demo-cluster` (root): the digits training of examples/train_digits.py, a ResNet-18 with
# glucx's scheduled data parallelism by default, on the emulated 2x2 torus of glucx-cluster
# (tests/cluster/torus2x2.yaml: 4 hosts in network namespaces, 2 ranks each, the hosts' links
# shaped to the file's rates), traced on every host, then explained by glucx-analyze: the
# verdict, the bytes per physical link (inner links inside a package, outer torus links between
# packages) and the schedule decisions.
#
# usage: scripts/demo-cluster.sh [--ranks-per-host K] [--max-steps S] [--out DIR]
#                                [--mode ddp|scheduled|sharded] [--model cnn|resnet18]
#   --ranks-per-host K  ranks started in each of the 4 hosts (default 2, the topology's; another
#                       value runs without GLUCX_TOPOLOGY and glucx detects the packages)
#   --max-steps S       training steps in all (default 40: the demo takes about 1.5 min on 2 cores)
#   --out DIR           output directory (default demo-cluster-out)
#   --mode M            train_digits.py --mode (default scheduled)
#   --model M           train_digits.py --model (default resnet18)
# Environment: BUILD (default build), VENV (default .venv): the build and the venv of `make venv`.
#
# Output in DIR: train.json (accuracy, losses), train.log, trace/<host>/ (one LTTng trace per
# host), report/ (report.txt, report.json, report.html, timeline.json). The cluster (name glxdemo)
# is torn down on every exit: success, failure, Ctrl-C, TERM. Exit status: 2 when not root or on
# a bad argument, the training's (124: timed out, 130/143: interrupted), else glucx-analyze's.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
venv=${VENV:-.venv}
name=glxdemo
ranks_per_host=2 max_steps=40 out=demo-cluster-out mode=scheduled model=resnet18
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks-per-host) ranks_per_host=${2:?}; shift 2 ;;
    --max-steps) max_steps=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --mode) mode=${2:?}; shift 2 ;;
    --model) model=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo-cluster: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bad() { echo "demo-cluster: $*" >&2; exit 2; }
case "$ranks_per_host" in ''|*[!0-9]*|0) bad "--ranks-per-host wants a positive number" ;; esac
case "$max_steps" in ''|*[!0-9]*|0) bad "--max-steps wants a positive number" ;; esac
case "$mode" in ddp|scheduled|sharded) ;; *) bad "--mode: ddp, scheduled or sharded" ;; esac
case "$model" in cnn|resnet18) ;; *) bad "--model: cnn or resnet18" ;; esac
if [ "$(id -u)" -ne 0 ]; then
  echo "demo-cluster: needs root (network namespaces, veth links and traffic shaping):" \
       "run it as root or with sudo" >&2
  exit 2
fi

cd "$here"
# absolute paths: the ranks run in the hosts' namespaces, started by glucx-cluster's agents
missing() { echo "demo-cluster: $1 is missing: run make build venv (make demo-cluster does)" >&2
            exit 1; }
build=$(cd "$build" 2>/dev/null && pwd) || missing "the build directory $build"
venv=$(cd "$venv" 2>/dev/null && pwd) || missing "the venv $venv"
cluster=$build/plugin/tools/glucx-cluster
analyze=$build/analysis/glucx-analyze
for f in "$cluster" "$analyze" "$build/trace/glucx-trace" "$venv/bin/python"; do
  [ -x "$f" ] || missing "$f"
done
topology=$here/tests/cluster/torus2x2.yaml
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/trace" "$out/report" "$out/train.json" "$out/train.log" "$out/analyze.log"

# Teardown on every path. `down` removes the namespaces, links and state of the cluster and
# whatever still runs in its hosts; it is also right after a partial `up`.
cluster_up=0 job=
teardown() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    kill -TERM "$job" 2>/dev/null || true
    wait "$job" 2>/dev/null || true
  fi
  if [ $cluster_up -eq 1 ]; then
    echo "== glucx-cluster down --name $name" >&2
    "$cluster" down --name "$name" >/dev/null 2>&1 ||
      echo "demo-cluster: glucx-cluster down --name $name failed; run it again" >&2
  fi
  exit $rc
}
trap teardown EXIT
# a signal outside the job: stop here (teardown runs); during the job: hand it to glucx-cluster
# run, which stops the ranks in every host and still ends the traces
interrupted=0
on_signal() {
  interrupted=$1
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    kill -"$2" "$job" 2>/dev/null || true
  else
    exit $((128 + interrupted))
  fi
}
trap 'on_signal 2 INT' INT
trap 'on_signal 15 TERM' TERM
trap 'on_signal 1 HUP' HUP

ranks=$((4 * ranks_per_host))
echo "== glucx-cluster up --topology tests/cluster/torus2x2.yaml --name $name (4 hosts, 2x2 torus)"
cluster_up=1   # before `up`: a failed or interrupted `up` is torn down too
"$cluster" down --name "$name" >/dev/null 2>&1 || true   # a cluster left by a killed demo
"$cluster" up --topology "$topology" --name "$name" >/dev/null

echo "== training: $model, $mode, backend glucx, $ranks ranks ($ranks_per_host per host)," \
     "$max_steps steps, traced on every host"
# The deadline covers a loaded machine: a ResNet-18 step takes about 2 s at 8 ranks on 2 idle cores.
# --epochs large: --max-steps decides (an epoch is 22 steps at 8 ranks).
timeout_s=$((300 + 20 * max_steps))
set +e
"$cluster" run --name "$name" --ranks-per-host "$ranks_per_host" --trace "$out/trace" \
  --timeout "$timeout_s" -- \
  "$venv/bin/python" "$here/examples/train_digits.py" --backend glucx --model "$model" \
  --mode "$mode" --batch-size 8 --epochs 1000 --max-steps "$max_steps" --json "$out/train.json" \
  > >(tee "$out/train.log") 2> >(tee -a "$out/train.log" | grep -v -e '^\s*warnings.warn' \
       -e 'UserWarning' >&2) &
job=$!
while :; do
  wait $job; train_rc=$?
  kill -0 $job 2>/dev/null || break   # wait returned for a trapped signal: wait again
done
job=
set -e
if [ $interrupted -ne 0 ]; then
  echo "demo-cluster: interrupted (signal $interrupted); trace kept in $out/trace" >&2
  exit $((128 + interrupted))
fi
if [ $train_rc -ne 0 ]; then
  echo "demo-cluster: training failed (exit $train_rc); trace kept in $out/trace" >&2
  exit $train_rc
fi

# the cluster is not needed for the analysis: free the machine's namespaces first
"$cluster" down --name "$name" >/dev/null
cluster_up=0

echo
echo "== analysis: glucx-analyze $out/trace/<host> -o $out/report"
hosts=()
for d in "$out"/trace/*/; do hosts+=("${d%/}"); done
"$analyze" "${hosts[@]}" -o "$out/report" --no-progress > "$out/analyze.log" 2>&1 || {
  rc=$?; cat "$out/analyze.log" >&2; echo "demo-cluster: glucx-analyze failed (exit $rc)" >&2
  exit $rc; }

"$venv/bin/python" - "$out" <<'EOF'
import json
import os
import sys

out = sys.argv[1]
r = json.load(open(os.path.join(out, "report", "report.json")))
train = json.load(open(os.path.join(out, "train.json")))
s = r["summary"]
t = s["totals"]
dur = max(t["duration_ns"], 1)
pct = lambda k: 100.0 * t[k] / dur
print()
print("Training: %s, %s, %d ranks: test accuracy %.2f%% after %d steps (%.0f ms/step)"
      % (train["model"], train["mode"], train["ranks"], 100 * train["accuracy"], train["steps"],
         1000 * train["seconds"] / max(train["steps"], 1)))
print()
print("Verdict: " + r["verdict"]["sentence"])
print()
print("Per iteration (%d iterations, %s, mean %.1f ms; share of rank time over all ranks):"
      % (s["iterations"], s["iteration_source"], s["mean_iteration_ns"] / 1e6))
for label, key in (("compute", "compute_ns"), ("exposed communication", "exposed_communication_ns"),
                   ("overlap (hidden comm.)", "overlap_ns"), ("wait", "wait_ns"),
                   ("idle", "idle_ns")):
    print("  %-22s %5.1f %%" % (label, pct(key)))

# Links: report.json's physical_links has one entry per (communicator, physical link), with the
# link's dimension (0: inside a package, i.e. between the ranks of one host, shared memory; 1 and
# 2: the torus rings between the hosts, shaped veth links) and its ends; summed per link here.
def end(e):
    return "?" if e is None else "%s %d" % (e["kind"], e["index"])


iters = max(s["iterations"], 1)
links = {}
for l in r.get("physical_links") or []:
    e = links.setdefault(l["phys_id"], {"bytes": 0, "busy_ns": 0, "dim": l["dim"],
                                         "ends": "%s - %s" % (end(l["a"]), end(l["b"])),
                                         "bw": l["bandwidth_Bps"]})
    e["bytes"] += l["bytes"]
    e["busy_ns"] += l["busy_ns"]
print()
if links:
    print("Bytes per physical link (both directions; whole run, per iteration, busy time):")
    totals = {"inner": 0, "outer": 0}
    for pid in sorted(links):
        e = links[pid]
        kind = "inner" if e["dim"] == 0 else "outer"
        totals[kind] += e["bytes"]
        print("  link %-3d %-5s dim %-2d %-22s %9.1f MB %8.2f MB/iter  busy %6.1f ms/iter%s"
              % (pid, kind, e["dim"], e["ends"], e["bytes"] / 1e6, e["bytes"] / 1e6 / iters,
                 e["busy_ns"] / 1e6 / iters,
                 "" if e["bw"] is None else "  (%g Gbit/s)" % (e["bw"] * 8 / 1e9)))
    busy = {k: sum(e["busy_ns"] for e in links.values() if (e["dim"] == 0) == (k == "inner"))
            for k in totals}
    nbytes = max(sum(totals.values()), 1)
    print("  inner links (between the 2 ranks of a host, shared memory): %.0f MB, %.0f %% of the "
          "bytes, busy %.0f ms/iter in all"
          % (totals["inner"] / 1e6, 100 * totals["inner"] / nbytes, busy["inner"] / 1e6 / iters))
    print("  outer torus links (between the hosts, shaped): %.0f MB, %.0f %% of the bytes, busy "
          "%.0f ms/iter in all" % (totals["outer"] / 1e6, 100 * totals["outer"] / nbytes,
                                   busy["outer"] / 1e6 / iters))
    print("  The torus links are 400x slower than the shared memory inside a host (torus2x2.yaml):"
          " glucx's\n  topology-aware algorithms (torus, hierarchical) reduce inside each host "
          "first and send\n  each host's share around the two rings, so the outer links carry "
          "less and are still the\n  links that take the time (and, when the verdict names one, "
          "the bottleneck).")
else:
    pairs = r.get("links") or []
    print("No physical links in the report (no topology announced); %d rank-pair links."
          % len(pairs))

# Schedule decisions (report.json's decisions: one per communicator, collective and kind, with
# the chosen option, the alternatives with the cost model's prediction for each, the measured
# time, the reason): per kind, how many, why, whether the model's best option was chosen, and
# the most frequent (collective, size, choice) groups.
decisions = r.get("decisions") or []
print()
if decisions:
    agree = sum(1 for d in decisions if d.get("ranks_agree", True))
    print("Schedule decisions: %d, %d of them identical on every rank" % (len(decisions), agree))
    for kind in sorted({d["kind"] for d in decisions}):
        ds = [d for d in decisions if d["kind"] == kind]
        reasons = sorted({d["reason"] for d in ds})
        best = sum(1 for d in ds if d["chosen"] == d["best"])
        saving = sum(d["saving_ns"] for d in ds)
        print("  %s: %d decisions (%s);\n    the model's cheapest option chosen in %d; a better "
              "choice would have saved %.1f ms in all"
              % (kind, len(ds), "; ".join(reasons), best, saving / 1e6))
        groups = {}
        for d in ds:
            g = groups.setdefault((d["coll"], d["bytes"], d["chosen"]),
                                  {"n": 0, "measured": [], "predicted": [], "alts": 0})
            g["n"] += 1
            g["alts"] = max(g["alts"], len(d["alternatives"]))
            if d["measured_ns"] is not None:
                g["measured"].append(d["measured_ns"])
            if d["predicted_ns"] is not None:
                g["predicted"].append(d["predicted_ns"])
        mean = lambda v: "%.2f ms" % (sum(v) / len(v) / 1e6) if v else "-"
        for (coll, nbytes, chosen), g in sorted(groups.items(), key=lambda kv: -kv[1]["n"])[:3]:
            print("    %-10s %9d B -> %-16s x%-4d of %d options; measured %s, predicted %s"
                  % (coll, nbytes, chosen, g["n"], g["alts"], mean(g["measured"]),
                     mean(g["predicted"])))
        if len(groups) > 3:
            print("    ... %d more in report.json (decisions)" % (len(groups) - 3))
    print("  algorithm: each collective's algorithm from glucx's selection map, which every rank "
          "derives from\n  the topology and the alpha-beta cost model (measured above predicted: "
          "8 ranks and the links'\n  TCP share 2 cores). order (scheduled mode): which ready "
          "gradient partition goes next, by the plan\n  every rank computes from the profiled "
          "first iteration (P3: the one the next forward needs first).")
else:
    print("No schedule decisions in the trace.")
if r["trace"].get("partial"):
    print("NOTE: partial report: %s" % "; ".join(r["trace"].get("partial_reasons", [])))
print()
for name in ("report.txt", "report.html", "timeline.json"):
    print("%-14s %s/report/%s" % (name, out, name))
EOF
