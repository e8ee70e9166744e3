#!/usr/bin/env bash
# What synchronous sends (GLUCX_SEND_SYNC; the Gloo shim's default, GLUCX_SYNC_SEND=1) cost,
# measured against plain sends in the same run (docs/perf.md, "Synchronous sends"):
#
# 1. point-to-point, glucx-p2p-bench --ranks N for each N: 8 B and 4 KiB ping-pong latency,
#    1 MiB and 16 MiB streaming bandwidth, plain and sync alternating within each round;
# 2. PyTorch's Gloo backend over glucx (scripts/bench/torch_gloo.py --transport ucx, the
#    "Gloo over glucx" column of scripts/compare.sh): the same sweep with GLUCX_SYNC_SEND=1 and
#    =0, interleaved K times; the table gives the median time per size and the ratio sync/plain.
#
# usage: scripts/bench/sync_cost.sh [-B BUILD] [--venv DIR] [-r K] [-c "COLLS"] [-n "RANKS"]
#                                   [-o OUT]
#   defaults: BUILD=<repo>/build, venv <repo>/.venv, K=5, COLLS="allreduce allgather",
#   RANKS="2 4", OUT=BUILD/sync-cost-<timestamp>
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${GLUCX_BUILD_DIR:-$repo/build}
venv=${GLUCX_VENV:-$repo/.venv}
repeat=5
colls="allreduce allgather"
ranks_list="2 4"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    -r) repeat=$2; shift 2 ;;
    -c) colls=$2; shift 2 ;;
    -n) ranks_list=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "sync_cost.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
p2p="$build/plugin/tools/glucx-p2p-bench"
vpy="$venv/bin/python"
[ -x "$p2p" ] || { echo "sync_cost.sh: no $p2p (build the glucx-p2p-bench target)" >&2; exit 2; }
[ -x "$vpy" ] || { echo "sync_cost.sh: no venv python at $vpy (make venv)" >&2; exit 2; }
[ -n "$out" ] || out="$build/sync-cost-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

{
  echo "# date: $(date -Iseconds), host $(uname -n), $(nproc) cpus"
  echo "# tree: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" \
       status --porcelain 2>/dev/null | grep -q . && echo ' + uncommitted changes')"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/versions.txt"

for n in $ranks_list; do
  echo "sync_cost.sh: glucx-p2p-bench, $n ranks" >&2
  "$p2p" --ranks "$n" --rounds $((2 * repeat + 1)) | tee "$out/p2p_n$n.txt"
done

for c in $colls; do
  for n in $ranks_list; do
    for k in $(seq 1 "$repeat"); do
      for s in 1 0; do
        echo "sync_cost.sh: Gloo over glucx, $c, $n ranks, GLUCX_SYNC_SEND=$s, run $k/$repeat" >&2
        GLUCX_SYNC_SEND=$s GLOO_SOCKET_IFNAME=lo "$vpy" "$repo/scripts/bench/torch_gloo.py" \
          --ranks "$n" --coll "$c" --min 1024 --max 16777216 --transport ucx \
          > "$out/glooucx_${c}_n${n}_sync$s.$k.txt"
      done
    done
    # median per size of each setting, and the ratio
    echo
    echo "## Gloo over glucx: $c, $n ranks, median of $repeat interleaved runs (time in us)"
    echo
    echo "| size | sync (GLUCX_SYNC_SEND=1) | plain (=0) | sync/plain |"
    echo "|---:|---:|---:|---:|"
    for f in "$out"/glooucx_"${c}"_n"${n}"_sync1.*.txt; do cat "$f"; done | grep -v '^#' |
      awk '{print $1}' | sort -n -u | while read -r size; do
        m1=$(grep -h -v '^#' "$out"/glooucx_"${c}"_n"${n}"_sync1.*.txt | awk -v s="$size" \
             '$1 == s {print $2}' | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}')
        m0=$(grep -h -v '^#' "$out"/glooucx_"${c}"_n"${n}"_sync0.*.txt | awk -v s="$size" \
             '$1 == s {print $2}' | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}')
        awk -v s="$size" -v a="$m1" -v b="$m0" \
          'BEGIN {printf "| %d | %.1f | %.1f | %.2f |\n", s, a, b, (b > 0 ? a / b : 0)}'
      done
  done
done | tee "$out/table.md"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/versions.txt"
