#!/usr/bin/env bash
# The main job (`make demo`): train a small CNN with DistributedDataParallel on 4 local ranks over
# the `glucx` backend, traced with glucx-trace, then explained by glucx-analyze.
#
# usage: scripts/demo.sh [--ranks N] [--epochs E] [--max-steps S] [--out DIR] [--min-accuracy A]
#                        [--backend glucx|gloo]
#   defaults: 4 ranks, 6 epochs, no step limit, demo-out/, no accuracy floor, glucx
# Environment: BUILD (default build), VENV (default .venv): the build and the venv of `make venv`.
#
# Output in DIR: train.json (accuracy, losses), trace/ (the LTTng trace), report/ (report.txt,
# report.json, report.html, timeline.json). Exit status: the training's, else glucx-analyze's.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
venv=${VENV:-.venv}
ranks=4 epochs=6 max_steps=0 out=demo-out min_acc=0 backend=glucx
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --max-steps) max_steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --min-accuracy) min_acc=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "demo: --out needs a directory" >&2; exit 2; }
cd "$here"
trace_tool=$build/trace/glucx-trace
analyze=$build/analysis/glucx-analyze
for f in "$trace_tool" "$analyze" "$venv/bin/torchrun"; do
  [ -x "$f" ] || { echo "demo: $f is missing: run make build venv (make demo does)" >&2; exit 1; }
done

rm -rf "$out/trace" "$out/report" "$out/train.json"
mkdir -p "$out"
echo "== training: DDP, $ranks ranks, backend $backend, traced by glucx-trace"
# one port per run so a second demo started at once does not collide with the first
port=$((29500 + RANDOM % 2000))
# glucx-trace runs in the background so that a TERM/HUP sent to this script reaches it (it
# forwards the signal to the training and still finishes the trace); Ctrl-C reaches the whole
# process group anyway.
set +e
"$trace_tool" record -o "$out/trace" -- \
  "$venv/bin/torchrun" --nproc-per-node "$ranks" --master-port "$port" \
  examples/train_digits.py --backend "$backend" --epochs "$epochs" --max-steps "$max_steps" \
  --json "$out/train.json" --min-accuracy "$min_acc" &
tracer=$!
trap 'kill -TERM $tracer 2>/dev/null' TERM HUP
trap ':' INT   # the terminal sent it to glucx-trace and the ranks too: just wait for them
while :; do
  wait $tracer; train_rc=$?
  kill -0 $tracer 2>/dev/null || break   # wait returned for a trapped signal: wait again
done
trap - TERM HUP INT
set -e
if [ $train_rc -ne 0 ]; then
  echo "demo: training failed (exit $train_rc); trace kept in $out/trace" >&2
  exit $train_rc
fi

echo
echo "== analysis: glucx-analyze $out/trace -o $out/report"
"$analyze" "$out/trace" -o "$out/report" > "$out/analyze.log" 2>&1 || {
  rc=$?; cat "$out/analyze.log" >&2; echo "demo: glucx-analyze failed (exit $rc)" >&2; exit $rc; }

"$venv/bin/python" - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
r = json.load(open(out + "/report/report.json"))
s = r["summary"]
t = s["totals"]
dur = max(t["duration_ns"], 1)
pct = lambda k: 100.0 * t[k] / dur
print()
print("Verdict: " + r["verdict"]["sentence"])
print()
print("Per iteration (%d iterations, %s, mean %.2f ms; share of rank time over all ranks):"
      % (s["iterations"], s["iteration_source"], s["mean_iteration_ns"] / 1e6))
print("  compute                %5.1f %%" % pct("compute_ns"))
print("  exposed communication  %5.1f %%" % pct("exposed_communication_ns"))
share = t["overlap_share"]  # null when there was no communication
print("  overlap (hidden comm.) %5.1f %%   (%s of communication hidden under compute)"
      % (pct("overlap_ns"), "-" if share is None else "%.0f %%" % (100.0 * share)))
print("  wait                   %5.1f %%" % pct("wait_ns"))
print("  idle                   %5.1f %%" % pct("idle_ns"))
if r["trace"].get("partial"):
    print("NOTE: partial report: %s" % "; ".join(r["trace"].get("partial_reasons", [])))
print()
for name in ("report.txt", "report.html", "timeline.json"):
    print("%-14s %s/report/%s" % (name, out, name))
print("%-14s https://ui.perfetto.dev (Open trace file: timeline.json)" % "")
EOF
