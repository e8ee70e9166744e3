#!/usr/bin/env bash
# Exposed communication of DDP over glucx against ScheduledDataParallel on the emulated 2x2
# torus (issue 18's target: scheduled at most half of DDP-over-glucx's), as glucx-analyze
# measures it, with the step times of the same runs.
#
# usage: scripts/bench/sched_exposed.sh [-r ROUNDS] [-R RATE] [-o OUT] [-n NAME] [-m MODES]
#                                       [-- SCHED_DP_ARGS...]
#   ROUNDS  interleaved rounds, each mode once per round, the order rotating (default 5)
#   MODES   sched_dp.py modes (default "ddp-gloo ddp-glucx sched-glucx sched-auto"; also
#           sched-preempt); ddp-gloo
#           is the anchor: its step time only (Gloo's TCP transport emits no glucx events)
#   RATE    the outer (torus) links' rate, tc syntax (default 250mbit; "nominal": 1000 Mbit/s)
#   OUT     output directory (default /tmp/sched-exposed): per run its trace, report and log
#   NAME    cluster name (default glxex); needs root
#   SCHED_DP_ARGS  extra scripts/bench/sched_dp.py options (default: --iters 10 --warmup 3
#                  --batch 8)
# Environment: BUILD (default build), VENV (default .venv).
# Prints a table (scripts/bench/exposed_table.py): per mode the median step time and the median
# exposed communication per rank and iteration (iterations after the warm-up), with ranges.
# The cluster is taken down on every exit path.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
venv=${VENV:-$here/.venv}
rounds=5 rate=250mbit out=/tmp/sched-exposed name=glxex modes="ddp-gloo ddp-glucx sched-glucx sched-auto"
while [ $# -gt 0 ]; do
  case "$1" in
    -r) rounds=$2; shift 2 ;;
    -R) rate=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -n) name=$2; shift 2 ;;
    -m) modes=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "sched_exposed: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--iters 10 --warmup 3 --batch 8)
[ "$(id -u)" = 0 ] || { echo "sched_exposed: needs root (emulated hosts)" >&2; exit 2; }
cluster=$build/plugin/tools/glucx-cluster
analyze=$build/analysis/glucx-analyze
topo=$here/tests/cluster/torus2x2.yaml
for f in "$cluster" "$analyze" "$venv/bin/python"; do
  [ -x "$f" ] || { echo "sched_exposed: $f is missing (make build venv)" >&2; exit 1; }
done
mkdir -p "$out"
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true' EXIT
"$cluster" up --name "$name" --topology "$topo" > "$out/up.log"
if [ "$rate" != nominal ]; then
  for l in 4 5 6 7; do "$cluster" degrade --name "$name" --rate "$rate" "$l" >> "$out/up.log"; done
fi
read -r -a mlist <<< "$modes"
for ((i = 0; i < rounds; i++)); do
  # rotate the order by one mode per round
  order=("${mlist[@]:i % ${#mlist[@]}}" "${mlist[@]:0:i % ${#mlist[@]}}")
  for m in "${order[@]}"; do
    d=$out/$m-$i
    rm -rf "$d"; mkdir -p "$d"
    inst=(); [ "$m" = ddp-glucx ] && inst=(--instrument)
    echo "== round $i: $m (load $(cut -d' ' -f1 /proc/loadavg))"
    "$cluster" run --name "$name" --timeout 600 --trace "$d/trace" -- env \
      GLUCX_TOPOLOGY="$topo" "$venv/bin/python" "$here/scripts/bench/sched_dp.py" \
      --mode "$m" "${inst[@]}" "${extra[@]}" > "$d/run.log" 2>&1
    grep "ms/step" "$d/run.log" || { echo "sched_exposed: $m failed, see $d/run.log" >&2; exit 1; }
    [ "$m" = ddp-gloo ] && continue   # no glucx events to analyse
    "$analyze" "$d/trace" -o "$d/report" > "$d/analyze.log" 2>&1 || {
      echo "sched_exposed: glucx-analyze failed on $d/trace (see $d/analyze.log)" >&2; exit 1; }
  done
done
warm=$(printf '%s\n' "${extra[@]}" | awk 'p {print; exit} $0 == "--warmup" {p = 1}')
"$venv/bin/python" "$here/scripts/bench/exposed_table.py" "$out" --skip "${warm:-5}"
