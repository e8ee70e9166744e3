#!/usr/bin/env bash
# Compare glucx with Open MPI and with Gloo's TCP transport (through PyTorch) on this machine,
# in one run and under one measurement protocol (docs/perf.md, "Measurement protocol"): float32
# collectives over 1 KiB .. 16 MiB, single-thread memcpy bandwidth as the yardstick, the
# PyTorch-level sweep (Gloo TCP, Gloo over glucx, the glucx backend) and the DDP ResNet-18 step.
# Prints one table per collective (time and busbw of each library, ratios), the PyTorch-level
# tables, the DDP table and, last, the issue-15 targets with the measured ratio and met / NOT met.
#
# usage: scripts/compare.sh [RANKS] [options]
#   RANKS                 number of ranks (default 2)
#   -c, --colls "LIST"    collectives among allreduce allgather alltoall (default allreduce)
#   -b, --min BYTES       smallest size (default 1024)
#   -e, --max BYTES       largest size (default 16777216)
#   -B, --build DIR       glucx build directory (default $GLUCX_BUILD_DIR or <repo>/build);
#                         glucx-bench is built there if missing
#   -o, --out DIR         where raw outputs and table.md go (default BUILD/compare-<timestamp>)
#   -r, --repeat K        repetitions (default 5, the protocol's minimum): in each, every library
#                         runs once per collective, in an order that rotates by one library per
#                         repetition; each size's time is the median over the K runs. K < 5 is
#                         allowed, and the header, the tables and the targets then say
#                         "BELOW PROTOCOL"
#   --load [KIND]         background load during the whole measurement: KIND none (default: no
#                         --load), cpu (also `--load` alone): `stress-ng --cpu N` with N = the
#                         number of online CPUs, or cpu:N for N workers. stress-ng is Debian's
#                         package; it starts before the first run at this script's nice level,
#                         unpinned, with --timeout (--load-timeout) as a safety net, and is
#                         stopped by PID on every exit (end, failure, Ctrl-C, SIGTERM). Before
#                         each run (and after the DDP runs) the script checks that its N workers
#                         still run (else it fails); the header records its command line, PID
#                         and nice level.
#   --load-timeout SEC    stress-ng's --timeout (default 7200): must outlast the run
#   --bind                pinning policy "one CPU per rank": rank i of EVERY library on the
#                         (i mod n)-th of the n CPUs it may use, i.e. CPU i mod ncpu normally
#                         (scripts/bench/pin_rank.sh = taskset for glucx-bench ranks,
#                         Open MPI ranks and memcpy; torch_gloo.py/ddp_resnet.py --bind for
#                         PyTorch). Default "none": no rank of any library is pinned (mpirun
#                         --bind-to none; stress-ng's workers are not pinned either)
#   --libs "LIST"         libraries to run, among memcpy glucx mpi gloo glooucx glucxpg
#                         (default: all; glucxpg is skipped with a note when the venv's torch has
#                         no backend "glucx")
#   --venv DIR            venv with the glucx Python package, for Gloo over glucx, the glucx
#                         backend and DDP (default $GLUCX_VENV or <repo>/.venv; `make venv`)
#   --no-install          do not run scripts/install-deps.sh bench
#   --run-timeout SEC     limit for one library run (default 1800); a run still going then is
#                         killed and the script fails
#   --no-ddp              skip the DDP comparison
#   --ddp-repeat K        DDP: repetitions, each variant once per repetition in a rotating order
#                         (default: --repeat)
#   --ddp-iters N         DDP: timed steps per run (default 20, after 5 warm-up steps)
#   --ddp-variants "LIST" DDP variants (default "compute nocomm gloo glooucx glucx";
#                         ddp_resnet.py lists the others)
#   --bind-torch          removed: use --bind (it pins every library, not only PyTorch)
# For tests: an environment variable GLUCX_COMPARE_RUN_<lib> (lib as in --libs) replaces that
# library's benchmark by `bash -c "$GLUCX_COMPARE_RUN_<lib>"`, whose stdout is the run's raw
# output; it gets COMPARE_LIB, COMPARE_COLL, COMPARE_RUN (k), COMPARE_MIN, COMPARE_MAX,
# COMPARE_RANKS and COMPARE_OUT in its environment. The library's prerequisites are then not
# checked.
#
# What runs (same sizes, iteration rule and timing rule everywhere: 64 MiB/size iterations
# clamped to 20..1000, max(5, iters/10) warmup, average per call, maximum over ranks):
#   glucx    glucx-bench --coll C --check 1 (default selection of algorithm and UCX transport),
#            RANKS rank processes started here (RANK, WORLD_SIZE, GLUCX_STORE=file:<new dir>),
#            so each can be pinned like the other libraries' ranks
#   mpi      scripts/bench/mpi_coll.c, built with mpicc (into OUT/bin), run with mpirun --allow-run-as-root
#            --oversubscribe -np N --mca pml ob1 --mca btl self,vader --bind-to none (what
#            Debian's Open MPI picks on one host: its openmpi-mca-params.conf excludes the UCX PML;
#            spelled out so a local config cannot change it; no binding, or pin_rank.sh under
#            --bind, instead of Open MPI's default one core per rank)
#   gloo     scripts/bench/torch_gloo.py: torch.multiprocessing.spawn, init_process_group("gloo")
#            on tcp://127.0.0.1, GLOO_SOCKET_IFNAME=lo, Debian's python3 (or $PYTHON)
#   glooucx  the same script with --transport ucx, run by the venv's python: the PyTorch Gloo
#            backend with GLOO_DEVICE_TRANSPORT=UCX, i.e. glucx's transport under Gloo's own
#            algorithms (the script fails if glucx's counters do not show the traffic)
#   glucxpg  the same script with --backend glucx, run by the venv's python: PyTorch's `glucx`
#            backend (glucx's collectives)
#   memcpy   scripts/bench/memcpy_bw.c (built into OUT/bin), one thread, same sizes; once per
#            repetition (in the rotation of the first collective)
#   DDP      scripts/bench/ddp_resnet.py --all (venv python; needs python3-torchvision) with the
#            same repetitions, rotation and pinning: torchvision ResNet-18, batch 8 of 3x64x64,
#            one intra-op thread per rank; median step time, step / compute-only and
#            step / no-communication floor
# Outputs in OUT: <lib>_<coll>.<k>.txt and memcpy.<k>.txt (raw), runs.log (order, duration,
# exit status and load average of every run), protocol.txt and versions.txt (the header),
# load.pids (stress-ng's PIDs), table.md, ddp/ and table_ddp.md, targets.md.
# Total runtime on a 2-core machine, quiet: about 2 minutes for allreduce with 5 runs, about
# 6 minutes for all three collectives; DDP adds about 1.5 minutes per repetition (5 variants).
# Under --load the PyTorch sweeps' small messages take about 1-5 ms each: about 3-4 minutes per
# repetition and collective (measured with 1-64 KiB), i.e. roughly 1 hour for all three
# collectives with 5 repetitions.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ranks=2
colls="allreduce"
min=1024
max=$((16 << 20))
build=${GLUCX_BUILD_DIR:-$repo/build}
venv=${GLUCX_VENV:-$repo/.venv}
out=""
install=1
repeat=5
ddp=1
ddp_repeat=""
ddp_iters=20
ddp_variants="compute nocomm gloo glooucx glucx"
load=none
load_timeout=7200
bind=0
all_libs="memcpy glucx mpi gloo glooucx glucxpg"
libs=$all_libs
run_timeout=1800
protocol_runs=5

die() { echo "compare.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit "${1:-2}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    -c|--colls) colls=$2; shift 2 ;;
    -b|--min) min=$2; shift 2 ;;
    -e|--max) max=$2; shift 2 ;;
    -B|--build) build=$2; shift 2 ;;
    -o|--out) out=$2; shift 2 ;;
    -r|--repeat) repeat=$2; shift 2 ;;
    --load)
      if [ $# -ge 2 ] && [[ "$2" =~ ^(none|cpu|cpu:.*)$ ]]; then load=$2; shift 2
      else load=cpu; shift; fi ;;
    --load=*) load=${1#--load=}; shift ;;
    --load-timeout) load_timeout=$2; shift 2 ;;
    --bind) bind=1; shift ;;
    --bind-torch) die "--bind-torch was replaced by --bind (one pinning policy for every library)" ;;
    --libs) libs=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    --run-timeout) run_timeout=$2; shift 2 ;;
    --no-ddp) ddp=0; shift ;;
    --ddp-repeat) ddp_repeat=$2; shift 2 ;;
    --ddp-iters) ddp_iters=$2; shift 2 ;;
    --ddp-variants) ddp_variants=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    [0-9]*) ranks=$1; shift ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$ddp_repeat" ] || ddp_repeat=$repeat
[[ "$ranks" =~ ^[0-9]+$ && "$ranks" -ge 2 ]] || die "RANKS must be an integer >= 2"
[[ "$min" =~ ^[0-9]+$ && "$max" =~ ^[0-9]+$ && "$min" -ge 4 && "$max" -ge "$min" ]] ||
  die "need 4 <= --min <= --max (plain byte counts)"
for c in $colls; do
  case "$c" in allreduce|allgather|alltoall) ;; *) die "unknown collective '$c'" ;; esac
done
for l in $libs; do
  [[ " $all_libs " == *" $l "* ]] || die "unknown library '$l' in --libs (known: $all_libs)"
done
[[ "$repeat" =~ ^[0-9]+$ && "$repeat" -ge 1 ]] || die "--repeat must be an integer >= 1"
[[ "$ddp_repeat" =~ ^[0-9]+$ && "$ddp_repeat" -ge 1 ]] || die "--ddp-repeat must be an integer >= 1"
[[ "$ddp_iters" =~ ^[0-9]+$ && "$ddp_iters" -ge 1 ]] || die "--ddp-iters must be an integer >= 1"
[[ "$run_timeout" =~ ^[0-9]+$ && "$run_timeout" -ge 1 ]] || die "--run-timeout must be seconds >= 1"
[[ "$load_timeout" =~ ^[0-9]+$ && "$load_timeout" -ge 1 ]] || die "--load-timeout must be seconds >= 1"
# online CPUs (not `nproc`, which honours OMP_NUM_THREADS and this process's affinity)
ncpu=$(getconf _NPROCESSORS_ONLN)
case "$load" in
  none) load_workers=0 ;;
  cpu) load_workers=$ncpu ;;
  cpu:*) load_workers=${load#cpu:}
         [[ "$load_workers" =~ ^[0-9]+$ && "$load_workers" -ge 1 ]] ||
           die "--load cpu:N needs an integer N >= 1" ;;
  *) die "unknown --load '$load' (none, cpu, cpu:N)" ;;
esac

has_lib() { [[ " $libs " == *" $1 "* ]]; }
override() { local v="GLUCX_COMPARE_RUN_$1"; [ -n "${!v:-}" ]; }
needs() { has_lib "$1" && ! override "$1"; }  # the library runs its real benchmark

if [ "$install" -eq 1 ]; then
  "$repo/scripts/install-deps.sh" bench
fi
# Debian's python3-torch lives in the system interpreter, not in pyenv/venv ones.
py=${PYTHON:-/usr/bin/python3}
if needs gloo; then
  "$py" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
    die "$py cannot import torch with Gloo (install python3-torch, or set PYTHON)"
fi
if needs mpi; then
  command -v mpicc >/dev/null && command -v mpirun >/dev/null || die "mpicc/mpirun not found"
fi
# The venv of `make venv`: Debian's torch plus the glucx package, whose start-up hook registers
# the Gloo device "UCX" and the backend "glucx".
vpy="$venv/bin/python"
if needs glooucx || needs glucxpg || [ "$ddp" -eq 1 ]; then
  [ -x "$vpy" ] || die "no venv python at $vpy: run \`make venv\` (or pass --venv DIR)"
  "$vpy" -c 'import torch.distributed as d, glucx; assert d.is_gloo_available()' 2>/dev/null ||
    die "$vpy cannot import torch and glucx: run \`make venv\`"
fi
if needs glucxpg &&
   ! "$vpy" -c 'import torch.distributed as d, glucx; assert hasattr(d.Backend, "GLUCX")' 2>/dev/null
then
  echo "compare.sh: note: the venv's torch has no backend \"glucx\": its PyTorch-level" \
    "columns are skipped" >&2
  libs=$(echo " $libs " | sed 's/ glucxpg / /; s/^ *//; s/ *$//')
fi
if [ "$ddp" -eq 1 ] && ! "$vpy" -c 'import torchvision' 2>/dev/null; then
  echo "compare.sh: note: $vpy cannot import torchvision (apt-get install python3-torchvision):" \
    "DDP comparison skipped" >&2
  ddp=0
fi
if [ "$load_workers" -gt 0 ]; then
  command -v stress-ng >/dev/null ||
    die "--load needs stress-ng (apt-get install stress-ng; scripts/install-deps.sh bench)"
fi
[ "$bind" -eq 0 ] || command -v taskset >/dev/null || die "--bind needs taskset (util-linux)"

bench="$build/plugin/tools/glucx-bench"
if needs glucx && [ ! -x "$bench" ]; then
  echo "compare.sh: building glucx-bench in $build" >&2
  cmake -S "$repo" -B "$build" >/dev/null
  cmake --build "$build" --target glucx-bench -j2 >/dev/null
  [ -x "$bench" ] || die "no glucx-bench in $build"
fi

[ -n "$out" ] || out="$build/compare-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
bindir="$out/bin"  # this run's helper binaries, next to its outputs (the build is only read)
if needs mpi || needs memcpy; then mkdir -p "$bindir"; fi
if needs mpi; then mpicc -O2 -o "$bindir/mpi_coll" "$repo/scripts/bench/mpi_coll.c"; fi
if needs memcpy; then cc -O2 -o "$bindir/memcpy_bw" "$repo/scripts/bench/memcpy_bw.c"; fi
pin=()
torch_bind=()
if [ "$bind" -eq 1 ]; then
  pin=("$repo/scripts/bench/pin_rank.sh")
  torch_bind=(--bind)
fi

# ---- processes started here, and their cleanup on every exit path ------------------------------
stress_pid=""
stress_workers=()
children=()  # the `timeout` processes of the current run (each leads its own process group)

proc_alive() {  # PID COMM: is PID alive and its name COMM or COMM-* (not a reused PID)?
  local name
  name=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
  [ "$name" = "$2" ] || [[ "$name" == "$2"-* ]]
}
stop_children() {
  local p
  for p in "${children[@]}"; do
    kill -TERM "$p" 2>/dev/null || true  # timeout(1) passes it on to its process group
  done
  for p in "${children[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  children=()
}
stop_load() {
  [ -n "$stress_pid" ] || return 0
  local p i
  kill -TERM "$stress_pid" 2>/dev/null || true
  for i in $(seq 1 50); do  # stress-ng ends its workers, then itself: up to 5 s
    proc_alive "$stress_pid" stress-ng || break
    sleep 0.1
  done
  for p in "$stress_pid" "${stress_workers[@]}"; do
    if proc_alive "$p" stress-ng; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  wait "$stress_pid" 2>/dev/null || true
  echo "compare.sh: load stopped (stress-ng PID $stress_pid)" >&2
  stress_pid=""
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  stop_children
  stop_load
  exit "$rc"
}
on_signal() { echo "compare.sh: interrupted by SIG$1" >&2; exit $((128 + $2)); }
trap cleanup EXIT
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP

worker_pids() {  # the children of stress-ng's main process that are stress-ng workers
  local p
  for p in $(pgrep -P "$stress_pid" 2>/dev/null || true); do
    proc_alive "$p" stress-ng && echo "$p"
  done
  return 0
}
check_load() {  # fail unless the load is still running with all its workers
  [ "$load_workers" -gt 0 ] || return 0
  proc_alive "$stress_pid" stress-ng ||
    die "the load (stress-ng PID $stress_pid) is no longer running: results would be mixed" \
        "(--load-timeout $load_timeout too short?)"
  local n
  n=$(worker_pids | wc -l)
  [ "$n" -eq "$load_workers" ] ||
    die "the load (stress-ng PID $stress_pid) is no longer running its $load_workers workers" \
        "($n left): results would be mixed (--load-timeout $load_timeout too short?)"
}
start_load() {
  local cmd=(stress-ng --cpu "$load_workers" --timeout "${load_timeout}s" --quiet)
  "${cmd[@]}" </dev/null >"$out/stress-ng.log" 2>&1 &
  stress_pid=$!
  local i n=0
  for i in $(seq 1 100); do  # its workers appear within 10 s
    n=$(worker_pids | wc -l)
    [ "$n" -ge "$load_workers" ] && break
    proc_alive "$stress_pid" stress-ng || break
    sleep 0.1
  done
  mapfile -t stress_workers < <(worker_pids)
  [ "${#stress_workers[@]}" -eq "$load_workers" ] ||
    die "stress-ng (PID $stress_pid) has ${#stress_workers[@]} workers, expected $load_workers" \
        "(its output: $(tail -c 300 "$out/stress-ng.log" 2>/dev/null))"
  local p nice_self nice_w
  nice_self=$(ps -o ni= -p $$ | tr -d ' ')
  for p in "$stress_pid" "${stress_workers[@]}"; do
    nice_w=$(ps -o ni= -p "$p" | tr -d ' ')
    [ "$nice_w" = "$nice_self" ] ||
      die "stress-ng process $p runs at nice $nice_w, the benchmarks at $nice_self"
  done
  echo "$stress_pid ${stress_workers[*]}" > "$out/load.pids"
  load_desc="$(tr '\0' ' ' < "/proc/$stress_pid/cmdline" | sed 's/ $//') (PID $stress_pid,"
  load_desc+=" ${#stress_workers[@]} workers $(echo "${stress_workers[@]}" | tr ' ' ','), nice"
  load_desc+=" $nice_self like the benchmarks, not pinned)"
  echo "compare.sh: load running: $load_desc" >&2
}

# run_bounded OUTFILE CMD...: run CMD with stdout to OUTFILE, bounded by --run-timeout, in the
# background so that a signal reaches the trap at once; returns CMD's status.
run_bounded() {
  local outf=$1 rc=0
  shift
  timeout -k 10 "$run_timeout" "$@" > "$outf" &
  children=($!)
  wait "${children[0]}" || rc=$?
  children=()
  return "$rc"
}

# run_glucx OUTFILE COLL: RANKS glucx-bench processes (RANK/WORLD_SIZE, file store), rank 0's
# stdout to OUTFILE; the others' output to OUTFILE.rank<R>. Returns non-zero if any rank fails.
run_glucx() {
  local outf=$1 c=$2 store r rc=0 pids=()
  store=$(mktemp -d "$out/store.XXXXXX")
  children=()
  for ((r = ranks - 1; r >= 0; r--)); do
    local dest="$outf.rank$r"
    [ "$r" -eq 0 ] && dest=$outf
    RANK=$r WORLD_SIZE=$ranks GLUCX_STORE="file:$store" timeout -k 10 "$run_timeout" \
      "${pin[@]}" "$bench" --coll "$c" -b "$min" -e "$max" -f 2 --check 1 > "$dest" \
      2> "$outf.rank$r.err" &
    pids+=($!)
    children+=($!)
  done
  local p
  for p in "${pids[@]}"; do
    wait "$p" || rc=$?
  done
  children=()
  rm -rf "$store"
  return "$rc"
}

# run_lib LIB COLL K: one run of one library; its raw output goes to OUT/<lib>_<coll>.<k>.txt
# (memcpy: OUT/memcpy.<k>.txt). Fails the script if the run fails.
run_lib() {
  local lib=$1 c=$2 k=$3 f t0 rc=0
  f="$out/${lib}_$c.$k.txt"
  [ "$lib" = memcpy ] && f="$out/memcpy.$k.txt"
  check_load
  echo "compare.sh: $c, run $k/$repeat: $lib" >&2
  t0=$SECONDS
  local ov="GLUCX_COMPARE_RUN_$lib"
  if [ -n "${!ov:-}" ]; then
    COMPARE_LIB=$lib COMPARE_COLL=$c COMPARE_RUN=$k COMPARE_MIN=$min COMPARE_MAX=$max \
      COMPARE_RANKS=$ranks COMPARE_OUT=$out run_bounded "$f" bash -c "${!ov}" || rc=$?
  else
    case "$lib" in
      memcpy)
        PIN_RANK=0 run_bounded "$f" "${pin[@]}" "$bindir/memcpy_bw" "$min" "$max" || rc=$? ;;
      glucx)
        run_glucx "$f" "$c" || rc=$? ;;
      mpi)
        run_bounded "$f" mpirun --allow-run-as-root --oversubscribe -np "$ranks" --mca pml ob1 \
          --mca btl self,vader --bind-to none "${pin[@]}" "$bindir/mpi_coll" "$c" "$min" "$max" ||
          rc=$? ;;
      gloo)
        GLOO_SOCKET_IFNAME=lo run_bounded "$f" "$py" "$repo/scripts/bench/torch_gloo.py" \
          --ranks "$ranks" --coll "$c" --min "$min" --max "$max" "${torch_bind[@]}" || rc=$? ;;
      glooucx)
        GLOO_SOCKET_IFNAME=lo run_bounded "$f" "$vpy" "$repo/scripts/bench/torch_gloo.py" \
          --ranks "$ranks" --coll "$c" --min "$min" --max "$max" --transport ucx \
          "${torch_bind[@]}" || rc=$? ;;
      glucxpg)
        GLOO_SOCKET_IFNAME=lo run_bounded "$f" "$vpy" "$repo/scripts/bench/torch_gloo.py" \
          --ranks "$ranks" --coll "$c" --min "$min" --max "$max" --backend glucx \
          "${torch_bind[@]}" || rc=$? ;;
    esac
  fi
  echo "$c $k $lib rc=$rc $((SECONDS - t0))s load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/runs.log"
  [ "$rc" -eq 0 ] || die "$lib failed on $c, run $k (exit status $rc; output in $f*)"
}

# ---- header ------------------------------------------------------------------------------------
if [ "$bind" -eq 1 ]; then
  pin_desc="one CPU per rank: rank i of every library on the (i mod n)-th of the n CPUs it may"
  pin_desc+=" use ($(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)) (taskset via"
  pin_desc+=" scripts/bench/pin_rank.sh for glucx-bench, Open MPI (mpirun --bind-to none) and"
  pin_desc+=" memcpy; --bind for PyTorch and DDP)"
else
  pin_desc="none: no rank of any library pinned (mpirun --bind-to none; glucx-bench, PyTorch"
  pin_desc+=" and stress-ng not pinned)"
fi
below=""
[ "$repeat" -ge "$protocol_runs" ] ||
  below=" -- BELOW PROTOCOL ($repeat < $protocol_runs runs)"
ddp_below=""
[ "$ddp_repeat" -ge "$protocol_runs" ] ||
  ddp_below=" -- BELOW PROTOCOL ($ddp_repeat < $protocol_runs runs)"
loadavg_before=$(cut -d' ' -f1-3 /proc/loadavg)
load_desc="none"
if [ "$load_workers" -gt 0 ]; then
  start_load
fi
{
  echo "# date: $(date -Iseconds)"
  echo "# host: $(uname -n), $(uname -sr), $ncpu cpus, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
  echo "# glucx: $("$build/plugin/tools/glucx-info" 2>/dev/null | head -1 || echo '?'), tree" \
       "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" status \
       --porcelain 2>/dev/null | grep -q . && echo ' + uncommitted changes')"
  echo "# ucx: $(ucx_info -v 2>/dev/null | sed -n 's/^# *//p' | head -1 || echo '?')"
  # (versions of what this run uses only: each Python start-up with torch takes seconds)
  if needs mpi; then echo "# open mpi: $(mpirun --version 2>/dev/null | head -1)"; fi
  if needs gloo; then echo "# torch: $("$py" -c 'import torch; print(torch.__version__)')"; fi
  if needs glooucx || needs glucxpg || [ "$ddp" -eq 1 ]; then
    echo "# glucx package (venv): $("$vpy" -c 'import glucx, os, torch
print(glucx.version(), "from", os.path.dirname(glucx.__file__), "torch", torch.__version__)')"
  fi
  if [ "$ddp" -eq 1 ]; then
    echo "# torchvision: $("$vpy" -c 'import torchvision; print(torchvision.__version__)')"
  fi
  echo "# ranks: $ranks, sizes $min..$max bytes x2, collectives: $colls, libraries: $libs"
} > "$out/versions.txt"
{
  echo "# load: $load_desc"
  echo "# runs: $repeat per library and collective, interleaved, order rotating by one library" \
       "per repetition; medians per size$below"
  echo "# DDP runs: $([ "$ddp" -eq 1 ] && echo "$ddp_repeat per variant ($ddp_variants)," \
       "$ddp_iters steps each, interleaved, rotating$ddp_below" || echo "none")"
  echo "# pinning: $pin_desc"
  echo "# nice: $(ps -o ni= -p $$ | tr -d ' ')"
  echo "# load average before the load: $loadavg_before; at the first run:" \
       "$(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/protocol.txt"
cat "$out/versions.txt" "$out/protocol.txt"
if [ "$load_workers" -eq 0 ]; then
  load1=${loadavg_before%% *}
  if awk -v l="$load1" -v n="$ncpu" 'BEGIN { exit !(l > 0.5 * n) }'; then
    echo "compare.sh: warning: load average $load1 on $ncpu cpus without --load: other work is" \
         "running and this is not a quiet run" >&2
  fi
fi

# ---- measurement -------------------------------------------------------------------------------
start=$SECONDS
first_coll=${colls%% *}
: > "$out/runs.log"
for c in $colls; do
  # this collective's libraries (memcpy with the first collective only), rotated by one per
  # repetition: repetition k starts with the k-th library
  lib_list=()
  for lib in $libs; do
    if [ "$lib" = memcpy ] && [ "$c" != "$first_coll" ]; then continue; fi
    lib_list+=("$lib")
  done
  nlib=${#lib_list[@]}
  for k in $(seq 1 "$repeat"); do
    for ((i = 0; i < nlib; i++)); do
      run_lib "${lib_list[$(((i + k - 1) % nlib))]}" "$c" "$k"
    done
  done
done
check_load
read -r -a coll_list <<< "$colls"
report_args=(--ranks "$ranks" --colls "${coll_list[@]}" --protocol-runs "$protocol_runs")
[ "$load_workers" -gt 0 ] && report_args+=(--loaded)
echo "# load average after the collectives: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/protocol.txt"
/usr/bin/python3 "$repo/scripts/bench/report.py" "$out" "${report_args[@]}" --part tables

if [ "$ddp" -eq 1 ]; then
  echo "compare.sh: DDP step time, $ddp_repeat runs per variant" >&2
  mkdir -p "$out/ddp"
  rc=0
  GLOO_SOCKET_IFNAME=lo run_bounded "$out/ddp/table.md" "$vpy" \
    "$repo/scripts/bench/ddp_resnet.py" --all --ranks "$ranks" --repeat "$ddp_repeat" \
    --iters "$ddp_iters" --variants "$ddp_variants" --out "$out/ddp" "${torch_bind[@]}" || rc=$?
  check_load
  { echo; sed 's/^# /    /' "$out/protocol.txt"; cat "$out/ddp/table.md"; } |
    tee "$out/table_ddp.md"
  [ "$rc" -eq 0 ] || die "ddp_resnet.py failed (exit status $rc; outputs in $out/ddp)"
fi
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/protocol.txt"
/usr/bin/python3 "$repo/scripts/bench/report.py" "$out" "${report_args[@]}" --part targets |
  tee "$out/targets.md"
stop_load
echo
echo "compare.sh: done in $((SECONDS - start)) s; raw outputs, table.md and targets.md in $out"
