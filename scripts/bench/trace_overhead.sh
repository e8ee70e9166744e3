#!/bin/bash
# Tracing overhead of glucx, measured directly (docs/perf.md, "Tracing overhead"):
# glucx-bench allreduce f32 sum, 2 ranks, four variants interleaved in each of R rounds:
#   none  no provider; idle  provider loaded (GLUCX_TRACE=1), no session;
#   full  under `glucx-trace record` (every event); coll  under `glucx-trace record --level coll`.
# Prints, per size, the fastest untraced time and for each variant the change of the fastest
# time and the median over rounds of the paired per-round change (same round, adjacent runs).
#
# usage: scripts/bench/trace_overhead.sh [-B BUILD] [-r ROUNDS] [-b MIN] [-e MAX] [-- BENCH ARGS]
#   e.g. scripts/bench/trace_overhead.sh -r 25 -b 256K -e 4M -- -n 1000 -w 100
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$repo/build R=7 MINB=1K MAXB=16M
while [ $# -gt 0 ]; do
  case $1 in
    -B|-r|-b|-e) [ $# -ge 2 ] || { echo "trace_overhead.sh: $1 needs a value" >&2; exit 2; }
       case $1 in -B) B=$2;; -r) R=$2;; -b) MINB=$2;; -e) MAXB=$2;; esac; shift 2;;
    --) shift; break;;
    *) echo "usage: $0 [-B BUILD] [-r ROUNDS] [-b MIN] [-e MAX] [-- BENCH ARGS]" >&2; exit 2;;
  esac
done
die() { echo "trace_overhead.sh: $*" >&2; exit 1; }
[[ $R =~ ^[1-9][0-9]*$ ]] || die "-r needs a positive number of rounds, not '$R'"
for t in plugin/tools/glucx-bench trace/glucx-trace; do
  [ -x "$B/$t" ] || die "$B/$t not found: build first (make build) or pass -B BUILD"
done
out=$(mktemp -d /tmp/glucx-trace-overhead.XXXXXX)
trap 'rm -rf "$out"' EXIT
# run VARIANT ROUND CMD...: stdout to $out/VARIANT.ROUND; on failure show its output and stop
run() {
  local f="$out/$1.$2"; shift 2
  "$@" > "$f" 2> "$f.err" || { local rc=$?; cat "$f" "$f.err" >&2; die "failed (exit $rc): $*"; }
}
bench=("$B/plugin/tools/glucx-bench" --ranks 2 --coll allreduce -b "$MINB" -e "$MAXB" -f 4
       --check 0 "$@")
for r in $(seq 1 "$R"); do
  for v in none idle full coll; do
    rm -rf "$out/tr"
    case $v in
      none) run $v "$r" "${bench[@]}";;
      # (not LTTNG_UST_REGISTER_TIMEOUT=0: glucx-bench would fork its ranks while LTTng-UST
      # threads still start, which can hang a rank in UCX's memory hooks; docs/architecture.md)
      idle) run $v "$r" env GLUCX_TRACE=1 "${bench[@]}";;
      full) run $v "$r" "$B/trace/glucx-trace" record -o "$out/tr" -- "${bench[@]}";;
      coll) run $v "$r" "$B/trace/glucx-trace" record --level coll -o "$out/tr" -- "${bench[@]}";;
    esac
  done
done
{ grep -h "discarded" "$out"/*.err || true; } | sort | uniq -c | sed 's/^/# /'
/usr/bin/python3 - "$out" <<'PY'
import collections, glob, os, statistics, sys
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for f in glob.glob(os.path.join(sys.argv[1], "*.[0-9]*")):
    if f.endswith(".err"):
        continue
    v, r = os.path.basename(f).split(".")
    for line in open(f):
        p = line.split()
        if len(p) >= 6 and p[0].isdigit() and p[2] == "f32":
            d[v][int(p[0])][int(r)] = float(p[5])
print("| bytes | untraced us (fastest) | provider idle | full tracing | --level coll |")
print("|---:|---:|---|---|---|")
for s in sorted(d["none"]):
    base = d["none"][s]
    row = [str(s), "%.2f" % min(base.values())]
    for v in ("idle", "full", "coll"):
        x = d[v][s]
        fastest = min(x.values()) / min(base.values()) - 1
        paired = statistics.median(x[k] / base[k] - 1 for k in x if k in base)
        row.append("%+.1f%% / %+.1f%%" % (fastest * 100, paired * 100))
    print("| " + " | ".join(row) + " |")
print("\n(each cell: fastest vs fastest / median of the per-round paired changes)")
PY
