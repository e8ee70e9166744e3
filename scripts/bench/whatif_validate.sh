#!/bin/sh
# glucx-analyze whatif against measured runs on the emulated torus (docs/perf.md, "What-if
# prediction on the emulated torus"). Needs root (glucx-cluster). Usage:
#   scripts/bench/whatif_validate.sh [BUILD_DIR] [OUT_DIR] [CLUSTER_NAME]
# Runs tests/cluster/diff_job (6 iterations: 2 ms compute, one 2 MiB f32 allreduce) on
# torus2x2 four times, traced: base (the selection map's choice), ring (GLUCX_TUNE forcing the
# flat ring), quarter (every outer link at a quarter of its rate), qring (both). Then predicts
# each changed run from an unchanged one in the three modes and prints predicted, measured and
# the error (iteration time by whatif's replay definition, METRICS.md).
set -eu
B=$(cd "${1:-build}" && pwd)
O=${2:-/tmp/whatif-validate}
N=${3:-wifval}
S=$(cd "$(dirname "$0")/../.." && pwd)
G=$B/plugin/tools/glucx-cluster
J=$B/tests/cluster/cluster_diff_job
A=$B/analysis/glucx-analyze
T=$S/tests/cluster/torus2x2.yaml
ITERS=6 BYTES=2097152 COMPUTE_US=2000
mkdir -p "$O"
rm -rf "$O"/base "$O"/ring "$O"/quarter "$O"/qring "$O"/w-*
sed 's/bandwidth: \[50.0, 0.125, 0.125\]/bandwidth: [50.0, 0.03125, 0.03125]/' "$T" > "$O/q.yaml"
trap '"$G" down --name "$N" >/dev/null 2>&1 || true' EXIT
"$G" up --topology "$T" --name "$N" >/dev/null
job() { "$G" run --name "$N" --timeout 120 "$@" -- "$J" $ITERS $BYTES $COMPUTE_US >/dev/null 2>&1; }
"$G" run --name "$N" --timeout 120 -- "$J" 2 $BYTES $COMPUTE_US >/dev/null 2>&1 # warm-up
job --trace "$O/base"
GLUCX_TUNE=allreduce:0-inf:ring job --trace "$O/ring"
for l in 4 5 6 7; do "$G" degrade --name "$N" $l --rate 0.03125 >/dev/null; done
job --trace "$O/quarter"
GLUCX_TUNE=allreduce:0-inf:ring job --trace "$O/qring"
for l in 4 5 6 7; do "$G" restore --name "$N" $l >/dev/null; done
"$G" down --name "$N" >/dev/null
# each run analysed once (its report and event dump in w-RUN/report); its own iteration time
# by the replay's definition: the same setup, relative (the run given back)
measured() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prediction']['measured_iteration_ns'])" "$1"; }
pred() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prediction']['iteration_ns'])" "$1"; }
for r in base ring quarter qring; do
    "$A" whatif "$O/$r" --topology "$T" --keep-algorithms -o "$O/w-$r" >/dev/null 2>&1
done
cq=--link-rate\ dim1=0.03125\ --link-rate\ dim2=0.03125
printf '%-34s %-9s %12s %12s %8s\n' "prediction" "mode" "predicted_ms" "measured_ms" "error"
row() { # name from to mode args...
    name=$1 from=$2 to=$3 mode=$4
    shift 4
    "$A" whatif "$O/w-$from/report" --mode "$mode" "$@" -o "$O/w-$from-$to-$mode" >/dev/null
    p=$(pred "$O/w-$from-$to-$mode/whatif.json")
    m=$(measured "$O/w-$to/whatif.json")
    python3 -c "import sys; p,m=float(sys.argv[2]),float(sys.argv[3]); print('%-34s %-9s %12.2f %12.2f %+7.1f%%' % (sys.argv[1], sys.argv[4], p/1e6, m/1e6, 100*(p-m)/m))" "$name" "$p" "$m" "$mode"
}
for mode in relative absolute additive; do
    row "base -> outer links at 1/4" base quarter $mode --topology "$T" $cq
    row "base -> forced flat ring" base ring $mode --topology "$T" --tune allreduce:0-inf:ring
    row "quarter -> forced flat ring" quarter qring $mode --topology "$O/q.yaml" --tune allreduce:0-inf:ring
    row "ring -> outer links at 1/4" ring qring $mode --topology "$O/q.yaml" --from-topology "$T" --keep-algorithms
done
