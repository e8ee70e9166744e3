#!/usr/bin/env bash
# Gloo's allreduce algorithms on Gloo's TCP transport vs on glucx (the Gloo device "UCX"), in
# one run: glucx-gloo-bench (adapters/gloo/tools/) started as N rank processes on this host for
# each variant, the variants interleaved within each repetition (their order alternating), the
# median time per size over the repetitions, and a table per job size and algorithm.
#
# usage: scripts/bench/gloo_algos.sh [options]
#   -B, --build DIR       glucx build directory holding adapters/gloo/glucx-gloo-bench
#                         (default $GLUCX_BUILD_DIR or <repo>/build)
#   --bench FILE          the glucx-gloo-bench to run (default BUILD/adapters/gloo/glucx-gloo-bench)
#   -n, --ranks "LIST"    job sizes (default "2 4")
#   -a, --algo LIST       glucx-gloo-bench --algo (default ring; 'all' for every algorithm)
#   -b, --min BYTES       smallest size (default 1K)
#   -e, --max BYTES       largest size (default 16M)
#   -f, --factor F        size multiplier (default 2)
#   -r, --repeat K        repetitions of every variant, interleaved (default 3)
#   -v, --variants "LIST" among tcp (Gloo's TCP transport), ucx (glucx), ucx-async (glucx with
#                         GLUCX_SYNC_SEND=0: unbound sends complete locally, for the cost of
#                         synchronous sends in the function-style 'allreduce'; bound buffers
#                         never send synchronously). Default "tcp ucx". The first is the anchor
#                         every ratio divides by.
#   -t, --timeout SEC     limit for one job (all ranks of one variant, one repetition; default
#                         900); a rank still running then is killed and the script fails
#   -o, --out DIR         raw outputs and table.md (default BUILD/gloo-algos-<timestamp>)
#   --report DIR          no runs: print the tables of an earlier run's outputs in DIR (with the
#                         same -n and -v), e.g. one stopped before its end
#   -h, --help            this text
#   Further options after "--" go to every glucx-gloo-bench (e.g. -- --iters 20 --samples 1).
#
# Output: a header (date, tree, load average before the run), then per job size and algorithm
# a table with the columns
#   size            bytes
#   <variant> us    median over the repetitions of glucx-gloo-bench's time_us
#   <variant> busbw bytes / time x 2(n-1)/n, GB/s (nccl-tests' allreduce bus bandwidth)
#   <v>/<anchor>    busbw ratio of each other variant to the first one
# and the load average after each job (in OUT/jobs.log) and after the run. Each rank's stdout
# and stderr are in OUT/<variant>_n<N>_r<K>.rank<R>.{out,err}. Every row glucx-gloo-bench
# prints was checked (it refuses to print a time for a wrong result); a job that fails, times
# out or prints a row whose check is not "ok" stops the script with a non-zero status. Every
# process started here is stopped on any exit.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${GLUCX_BUILD_DIR:-$repo/build}
ranks_list="2 4"
algo=ring
min=1K
max=16M
factor=2
repeat=3
variants="tcp ucx"
job_timeout=900
out=""
bench=""
report=""
extra=()

die() { echo "gloo_algos.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    -B|--build) build=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    -n|--ranks) ranks_list=$2; shift 2 ;;
    -a|--algo) algo=$2; shift 2 ;;
    -b|--min) min=$2; shift 2 ;;
    -e|--max) max=$2; shift 2 ;;
    -f|--factor) factor=$2; shift 2 ;;
    -r|--repeat) repeat=$2; shift 2 ;;
    -v|--variants) variants=$2; shift 2 ;;
    -t|--timeout) job_timeout=$2; shift 2 ;;
    -o|--out) out=$2; shift 2 ;;
    --report) report=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "gloo_algos.sh: unknown argument '$1' (--help for usage)" >&2; exit 2 ;;
  esac
done
# tables: median time per (n, variant, algo, size) over the repetitions found in directory $1
tables() {
for n in $ranks_list; do
  for f in "$1"/*_n"${n}"_r*.rank0.out; do
    [ -e "$f" ] || continue
    t=$(basename "$f" .rank0.out)
    grep -v '^#' "$f" | awk -v v="${t%_n*}" '{ print v, $2, $3, $6 }'
  done | awk -v n="$n" -v vars="$variants" '
    function median(key,   m, i, j, t, a) {
      m = cnt[key]
      for (i = 1; i <= m; i++) a[i] = val[key, i]
      for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    { key = $1 SUBSEP $2 SUBSEP $3; val[key, ++cnt[key]] = $4
      if (!(($2) in seenalgo)) { seenalgo[$2] = 1; algos[++na] = $2 }
      if (!(($3) in seensize)) { seensize[$3] = 1; sizes[++ns] = $3 } }
    END {
      nv = split(vars, vs, " ")
      for (i = 2; i <= ns; i++) { t = sizes[i]; for (j = i - 1; j >= 1 && sizes[j] + 0 > t + 0; j--) sizes[j + 1] = sizes[j]; sizes[j + 1] = t }
      for (a = 1; a <= na; a++) {
        printf "\n## %s, %d ranks, float32 sum: median of the repetitions (time in us, busbw in GB/s)\n\n", algos[a], n
        h = "| size |"; s = "|---:|"
        for (v = 1; v <= nv; v++) { h = h " " vs[v] " us | " vs[v] " busbw |"; s = s "---:|---:|" }
        for (v = 2; v <= nv; v++) { h = h " " vs[v] "/" vs[1] " |"; s = s "---:|" }
        print h; print s
        for (i = 1; i <= ns; i++) {
          line = "| " sizes[i] " |"
          for (v = 1; v <= nv; v++) {
            key = vs[v] SUBSEP algos[a] SUBSEP sizes[i]
            if (cnt[key] == 0) { bw[v] = 0; line = line " - | - |"; continue }
            us = median(key); bw[v] = sizes[i] / us / 1e3 * 2 * (n - 1) / n
            line = line sprintf(" %.2f | %.3f |", us, bw[v])
          }
          for (v = 2; v <= nv; v++) line = line (bw[1] > 0 && bw[v] > 0 ? sprintf(" %.2f |", bw[v] / bw[1]) : " - |")
          print line
        }
      }
    }'
done
}

if [ -n "$report" ]; then
  [ -d "$report" ] || die "--report: no directory $report"
  tables "$report"
  exit 0
fi
[ -n "$bench" ] || bench="$build/adapters/gloo/glucx-gloo-bench"
[ -x "$bench" ] || die "no $bench (cmake --build BUILD --target glucx-gloo-bench)"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "-r: '$repeat' is not a positive integer"
[[ "$job_timeout" =~ ^[1-9][0-9]*$ ]] || die "-t: '$job_timeout' is not a positive integer"
for v in $variants; do
  case "$v" in tcp|ucx|ucx-async) ;; *) die "-v: unknown variant '$v'" ;; esac
done
for n in $ranks_list; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -ge 2 ] || die "-n: '$n' is not a job size >= 2"
done
[ -n "$out" ] || out="$build/gloo-algos-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

# every rank process started (the `timeout` wrappers: TERM to one is passed to its rank)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  pids=()
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# one job: N ranks of one variant; fails the script if any rank fails or a row is not "ok"
run_job() {
  local n=$1 variant=$2 k=$3
  local tag="${variant}_n${n}_r${k}" store="$out/store.${variant}_n${n}_r${k}"
  local dev=$variant sync=1 r rc=0 p st
  [ "$variant" = ucx-async ] && { dev=ucx; sync=0; }
  rm -rf "$store"
  pids=()
  for r in $(seq 0 $((n - 1))); do
    GLUCX_SYNC_SEND=$sync timeout -k 10 "$job_timeout" "$bench" --device "$dev" --rank "$r" \
      --size "$n" --store "$store" --algo "$algo" -b "$min" -e "$max" -f "$factor" \
      --timeout-ms 120000 ${extra[@]+"${extra[@]}"} \
      >"$out/$tag.rank$r.out" 2>"$out/$tag.rank$r.err" &
    pids+=($!)
  done
  r=0
  for p in "${pids[@]}"; do
    st=0
    wait "$p" || st=$?
    if [ "$st" -ne 0 ]; then
      rc=$st
      echo "gloo_algos.sh: $tag: rank $r exited with status $st$([ "$st" -eq 124 ] && echo \
        " (killed after $job_timeout s)"):" >&2
      sed 's/^/  /' "$out/$tag.rank$r.err" >&2
    fi
    r=$((r + 1))
  done
  pids=()
  rm -rf "$store"
  echo "$(date -u +%H:%M:%S) $tag exit $rc, load average after: $(cut -d' ' -f1-3 /proc/loadavg)" \
    >>"$out/jobs.log"
  [ "$rc" -eq 0 ] || die "$tag failed (outputs in $out)"
  grep -v '^#' "$out/$tag.rank0.out" | awk -v t="$tag" \
    'NF != 9 || $9 != "ok" { print "gloo_algos.sh: " t ": unchecked row: " $0; bad = 1 }
     END { exit bad }' >&2 || die "$tag printed a row that is not checked"
  grep -q -v '^#' "$out/$tag.rank0.out" || die "$tag printed no rows"
}

{
  echo "# gloo_algos.sh: $(date -u -Iseconds), host $(uname -n), $(nproc) cpus"
  echo "# tree: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" \
       status --porcelain 2>/dev/null | grep -q . && echo ' + uncommitted changes')"
  echo "# command: $0 -B $build --bench $bench -n \"$ranks_list\" -a $algo -b $min -e $max -f $factor" \
       "-r $repeat -v \"$variants\" -t $job_timeout${extra[*]+ -- ${extra[*]}}"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/versions.txt"

read -r -a vlist <<<"$variants"
for n in $ranks_list; do
  for k in $(seq 1 "$repeat"); do
    # alternate the order within each repetition, so neither variant always runs first
    if [ $((k % 2)) -eq 1 ]; then order=("${vlist[@]}"); else
      order=(); for ((i = ${#vlist[@]} - 1; i >= 0; i--)); do order+=("${vlist[i]}"); done
    fi
    for v in "${order[@]}"; do
      echo "gloo_algos.sh: $n ranks, $v, repetition $k/$repeat (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      run_job "$n" "$v" "$k"
    done
  done
done

tables "$out" | tee "$out/table.md"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/versions.txt"
echo "gloo_algos.sh: outputs in $out" >&2
