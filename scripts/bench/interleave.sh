#!/usr/bin/env bash
# Interleaved A/B runs of benchmark commands (docs/perf.md, "Allgather and alltoall"): every
# variant runs RUNS times, the order alternating between rounds (forward in odd rounds, reversed
# in even ones) so slow phases of a shared machine hit every variant alike; the 1/5/15-minute load
# average is recorded before each run. scripts/bench/interleave_table.py turns OUT into a table
# of median times and busbw ratios.
#
# usage: scripts/bench/interleave.sh [-r RUNS] -o OUT VARIANTS
#   VARIANTS  file, one variant per line: NAME<TAB>COMMAND (run with bash -c). The command's
#             stdout lines of glucx-bench (size in column 1, time in us in column 6) or of
#             mpi_coll ("size time_us") are kept; '#' lines are dropped.
#   -r RUNS   rounds (default 5)
#   -o OUT    output directory (created): OUT/NAME.R ("size time_us" lines of round R),
#             OUT/NAME.R.err (its stderr), OUT/load ("R NAME load1 load5 load15" per run)
#   Each run is limited to 600 s (timeout). Exit status 0; a failed run leaves an empty
#   OUT/NAME.R and its stderr in OUT/NAME.R.err.
set -euo pipefail
runs=5
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -r) runs=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "interleave.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ] || [ -z "$out" ] || ! [ "$runs" -ge 1 ] 2>/dev/null; then
  echo "usage: interleave.sh [-r RUNS] -o OUT VARIANTS" >&2
  exit 2
fi
mapfile -t lines < <(grep -v '^[[:space:]]*$' "$1")
nv=${#lines[@]}
[ "$nv" -ge 1 ] || { echo "interleave.sh: no variants in $1" >&2; exit 2; }
mkdir -p "$out"
for ((r = 1; r <= runs; r++)); do
  for ((k = 0; k < nv; k++)); do
    if ((r % 2 == 1)); then i=$k; else i=$((nv - 1 - k)); fi
    name=${lines[$i]%%$'\t'*}
    cmd=${lines[$i]#*$'\t'}
    echo "$r $name $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load"
    timeout 600 bash -c "$cmd" 2> "$out/$name.$r.err" |
      awk '/^#/ {next} NF == 2 {print $1, $2; next} NF >= 9 {print $1, $6}' > "$out/$name.$r" || true
  done
done
