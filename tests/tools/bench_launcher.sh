#!/bin/sh
# glucx-bench without --ranks: two ranks started here with RANK/WORLD_SIZE (as torchrun sets
# them) and GLUCX_STORE=file:DIR. Both must exit 0 and rank 0 must report no wrong elements.
# usage: bench_launcher.sh PATH/TO/glucx-bench
set -u
bench=$1
d=$(mktemp -d "${TMPDIR:-/tmp}/glucx-bench-test.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
export GLUCX_STORE="file:$d/store" WORLD_SIZE=2
unset OMPI_COMM_WORLD_RANK PMI_RANK
# the ranks' communicator timeout: 30 s times the suite's time-scale factor (tests/README.md)
timeout_ms=$(awk -v s="${GLUCX_TEST_TIME_SCALE:-1}" 'BEGIN { printf "%d", 30000 * (s > 0 ? s : 1) }')
RANK=1 "$bench" -b 4K -e 64K --iters 3 --timeout-ms "$timeout_ms" >"$d/rank1.out" 2>"$d/rank1.err" &
pid1=$!
RANK=0 "$bench" -b 4K -e 64K --iters 3 --timeout-ms "$timeout_ms" >"$d/rank0.out" 2>&1
rc0=$?
wait $pid1
rc1=$?
cat "$d/rank0.out"
if [ "$rc0" -ne 0 ] || [ "$rc1" -ne 0 ]; then
  echo "FAIL: exit statuses rank0=$rc0 rank1=$rc1; rank 1 said:" >&2
  cat "$d/rank1.out" "$d/rank1.err" >&2
  exit 1
fi
if [ -s "$d/rank1.out" ]; then
  echo "FAIL: rank 1 printed to stdout (only rank 0 should):" >&2
  cat "$d/rank1.out" >&2
  exit 1
fi
grep -q '^# wrong elements in total: 0 (OK)' "$d/rank0.out" || { echo "FAIL: no OK line" >&2; exit 1; }
echo PASS
