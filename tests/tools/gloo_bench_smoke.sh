#!/bin/sh
# glucx-gloo-bench smoke test (not timed): scripts/bench/gloo_algos.sh runs every algorithm at
# 1, 4 and 16 KiB on 2 ranks for both devices (Gloo TCP and glucx) and for glucx with
# GLUCX_SYNC_SEND=0; every job must exit 0, and each rank 0 must print one checked ("ok") row
# per algorithm and size. Then the tool's own argument errors: exit status 2 with a message.
# usage: gloo_bench_smoke.sh PATH/TO/glucx-gloo-bench PATH/TO/gloo_algos.sh
set -u
bench=$1
script=$2
d=$(mktemp -d "${TMPDIR:-/tmp}/glucx-gloo-bench-test.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
# a job's limit and the ranks' Gloo timeout: 60 s times the suite's time-scale factor
t=$(awk -v s="${GLUCX_TEST_TIME_SCALE:-1}" 'BEGIN { printf "%d", 60 * (s > 0 ? s : 1) }')
if ! bash "$script" --bench "$bench" -n 2 -a all -b 1K -e 16K -f 4 -r 1 -t "$t" \
  -v "tcp ucx ucx-async" -o "$d/out" -- --iters 3 --warmup 1 --samples 1 \
  --timeout-ms $((t * 1000)); then
  echo "FAIL: gloo_algos.sh exited non-zero" >&2
  exit 1
fi
for v in tcp ucx ucx-async; do
  f="$d/out/${v}_n2_r1.rank0.out"
  rows=$(grep -c ' ok$' "$f")
  if [ "$rows" -ne 15 ]; then
    echo "FAIL: $f has $rows checked rows, expected 15 (5 algorithms x 3 sizes):" >&2
    cat "$f" >&2
    exit 1
  fi
  if [ -s "$d/out/${v}_n2_r1.rank1.out" ]; then
    echo "FAIL: rank 1 printed to stdout (only rank 0 should)" >&2
    exit 1
  fi
done
grep -q '^| 16384 |' "$d/out/table.md" || { echo "FAIL: no 16384-byte row in table.md" >&2; exit 1; }
# argument errors: status 2 and a message naming the option
for args in "--device foo --rank 0 --size 2 --store $d/s" "--device tcp --rank 2 --size 2 --store $d/s" \
  "--device tcp --rank 0 --size 2 --store $d/s --min 6" "--device tcp --algo ringg --rank 0 --size 1"; do
  # shellcheck disable=SC2086 # word splitting wanted
  "$bench" $args >"$d/err" 2>&1
  rc=$?
  if [ "$rc" -ne 2 ] || ! grep -q 'glucx-gloo-bench: ' "$d/err"; then
    echo "FAIL: glucx-gloo-bench $args: status $rc (expected 2 with a message):" >&2
    cat "$d/err" >&2
    exit 1
  fi
done
"$bench" --help | grep -q 'busbw' || { echo "FAIL: --help does not describe busbw" >&2; exit 1; }
echo PASS
