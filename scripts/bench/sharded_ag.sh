#!/usr/bin/env bash
# Sharded training on the emulated 2x2 torus: the fast-link (hierarchical) allgather and the
# prefetch each on and off, four variants (issue 18's target: both on >= 1.2x faster per step
# than a flat ring allgather without prefetch).
#
# usage: scripts/bench/sharded_ag.sh [-r ROUNDS] [-R RATE] [-o OUT] [-n NAME] [-- SCHED_DP_ARGS...]
#   ROUNDS  interleaved rounds, each variant once per round, the order rotating (default 5)
#   RATE    the outer (torus) links' rate, tc syntax (default 250mbit; "nominal": 1000 Mbit/s)
#   OUT     output directory (default /tmp/sharded-ag): OUT/<variant>-<round>.log
#   NAME    cluster name (default glxag); needs root
#   SCHED_DP_ARGS  extra scripts/bench/sched_dp.py options (default: --iters 10 --warmup 3
#                  --batch 8)
# Variants: hier-prefetch (the selection's allgather, prefetch 1), hier-noprefetch (prefetch 0),
# ring-prefetch and ring-noprefetch (GLUCX_TUNE=allgather:ring: the flat ring on every size).
# Prints per variant the median step time (rank 0's ms/step) with its range, and the ratios to
# ring-noprefetch. Environment: BUILD (default build), VENV (default .venv). The cluster is
# taken down on every exit path.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
venv=${VENV:-$here/.venv}
rounds=5 rate=250mbit out=/tmp/sharded-ag name=glxag
while [ $# -gt 0 ]; do
  case "$1" in
    -r) rounds=$2; shift 2 ;;
    -R) rate=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -n) name=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "sharded_ag: unknown option $1" >&2; exit 2 ;;
  esac
done
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--iters 10 --warmup 3 --batch 8)
[ "$(id -u)" = 0 ] || { echo "sharded_ag: needs root (emulated hosts)" >&2; exit 2; }
cluster=$build/plugin/tools/glucx-cluster
topo=$here/tests/cluster/torus2x2.yaml
for f in "$cluster" "$venv/bin/python"; do
  [ -x "$f" ] || { echo "sharded_ag: $f is missing (make build venv)" >&2; exit 1; }
done
mkdir -p "$out"
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true' EXIT
"$cluster" up --name "$name" --topology "$topo" > "$out/up.log"
if [ "$rate" != nominal ]; then
  for l in 4 5 6 7; do "$cluster" degrade --name "$name" --rate "$rate" "$l" >> "$out/up.log"; done
fi
variants=(hier-prefetch hier-noprefetch ring-prefetch ring-noprefetch)
for ((i = 0; i < rounds; i++)); do
  order=("${variants[@]:i % 4}" "${variants[@]:0:i % 4}")
  for v in "${order[@]}"; do
    tune=""; [ "${v%%-*}" = ring ] && tune="allgather:ring"
    pf=1; [ "${v#*-}" = noprefetch ] && pf=0
    echo "== round $i: $v (load $(cut -d' ' -f1 /proc/loadavg))"
    "$cluster" run --name "$name" --timeout 600 -- env GLUCX_TOPOLOGY="$topo" GLUCX_TUNE="$tune" \
      "$venv/bin/python" "$here/scripts/bench/sched_dp.py" --mode sharded --prefetch "$pf" \
      "${extra[@]}" > "$out/$v-$i.log" 2>&1
    grep "ms/step" "$out/$v-$i.log" || { echo "sharded_ag: $v failed, see $out/$v-$i.log" >&2; exit 1; }
  done
done
"$venv/bin/python" - "$out" "${variants[@]}" <<'PY'
import glob, re, statistics, sys
out, variants = sys.argv[1], sys.argv[2:]
med = {}
print("| variant | runs | step (median, range) |")
print("|---|---|---|")
for v in variants:
    t = []
    for f in sorted(glob.glob(f"{out}/{v}-*.log")):
        m = re.search(r"sharded ([0-9.]+) ms/step", open(f).read())
        if m:
            t.append(float(m.group(1)))
    if t:
        med[v] = statistics.median(t)
        print(f"| {v} | {len(t)} | {med[v]:.1f} ms ({min(t):.1f}-{max(t):.1f}) |")
print()
base = med.get("ring-noprefetch")
for v in variants:
    if base and v in med and v != "ring-noprefetch":
        print(f"{v}: {base / med[v]:.2f}x faster per step than ring-noprefetch"
              + (" (target >= 1.2x)" if v == "hier-prefetch" else ""))
PY
