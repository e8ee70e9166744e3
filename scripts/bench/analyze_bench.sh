#!/bin/sh
# Analysis speed and memory (issue 6, part 7): on the same trace, in the same run,
#   babeltrace2 TRACE -c sink.utils.dummy       (source.ctf.fs -> muxer -> dummy: reading only)
#   glucx-analyze TRACE -o OUT                  (the full analysis, all outputs)
# each REPEAT times (best wall time kept), with max RSS from /usr/bin/time -v. Optionally records
# the trace first (a 2-rank 1 KiB allreduce loop under glucx-trace).
#
#   scripts/bench/analyze_bench.sh [-b BUILD_DIR] [-r REPEAT] [--record ITERS] TRACE_DIR
#
# Prints one line per tool and the ratio; exit 1 if the analysis is slower than half the reading
# speed or uses 1 GiB or more.
set -eu
build=build
repeat=3
record=""
while [ $# -gt 1 ]; do
  case "$1" in
    -b) build=$2; shift 2 ;;
    -r) repeat=$2; shift 2 ;;
    --record) record=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: $0 [-b BUILD_DIR] [-r REPEAT] [--record ITERS] TRACE_DIR" >&2; exit 2; }
trace=$1
analyze=$build/analysis/glucx-analyze
[ -x "$analyze" ] || { echo "no $analyze: build first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }
if [ -n "$record" ]; then
  rm -rf "$trace"
  "$build/trace/glucx-trace" record -o "$trace" --buffer-size 64M -- \
    "$build/plugin/tools/glucx-bench" --ranks 2 -b 1K -e 1K -n "$record" -w 0 -c 0 >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# best wall seconds and max RSS (KiB) of REPEAT runs of a command
measure() {
  best=""; rss=0
  i=0
  while [ $i -lt "$repeat" ]; do
    /usr/bin/time -v -o "$out/time" "$@" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
    w=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(j=1;j<=n;j++) s=s*60+p[j]; print s}' "$out/time")
    r=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time")
    c=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u + s}' "$out/time")
    if [ -z "$best" ] || awk "BEGIN{exit !($w < $best)}"; then best=$w; cpu=$c; fi
    [ "$r" -gt "$rss" ] && rss=$r
    i=$((i + 1))
  done
  echo "$best $rss $cpu"
}

set -- $(measure babeltrace2 "$trace" -c sink.utils.dummy); bt_s=$1; bt_rss=$2; bt_cpu=$3
set -- $(measure "$analyze" "$trace" -o "$out/report" --no-progress); an_s=$1; an_rss=$2; an_cpu=$3
events=$(grep -o '"events":[0-9]*' "$out/report/report.json" | head -1 | cut -d: -f2)
ratio=$(awk "BEGIN{printf \"%.2f\", $bt_s / $an_s}")
printf 'trace: %s (%s events)\n' "$trace" "$events"
printf '%-40s %8.2f s  %8.2f Mevents/s  max RSS %7.1f MiB\n' "babeltrace2 -c sink.utils.dummy" "$bt_s" \
  "$(awk "BEGIN{print $events / $bt_s / 1e6}")" "$(awk "BEGIN{print $bt_rss / 1024}")"
printf '%-40s %8.2f s  %8.2f Mevents/s  max RSS %7.1f MiB\n' "glucx-analyze (all outputs)" "$an_s" \
  "$(awk "BEGIN{print $events / $an_s / 1e6}")" "$(awk "BEGIN{print $an_rss / 1024}")"
printf 'CPU (user+sys): babeltrace2 %s s, glucx-analyze %s s, ratio %s\n' "$bt_cpu" "$an_cpu" \
  "$(awk "BEGIN{printf \"%.2f\", $bt_cpu / $an_cpu}")"
printf 'analysis speed / reading speed (wall): %s (target >= 0.5); timeline.json %s MiB\n' "$ratio" \
  "$(du -m "$out/report/timeline.json" | cut -f1)"
printf 'report.json %s MiB\n' "$(du -m "$out/report/report.json" | cut -f1)"
awk "BEGIN{exit !($ratio >= 0.5 && $an_rss < 1048576)}" || { echo "FAIL: target missed" >&2; exit 1; }
