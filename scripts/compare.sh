#!/usr/bin/env bash
# Compare glucx with Open MPI and with Gloo's TCP transport (through PyTorch) on this machine,
# in one run: float32 collectives over 1 KiB .. 16 MiB, plus single-thread memcpy bandwidth as
# the yardstick. Prints one table per collective (a row per size) with the time and busbw of each
# library, the ratios glucx/OpenMPI and glucx/GlooTCP, and glucx busbw / memcpy bandwidth; then a
# PyTorch-level table per collective: the same torch.distributed sweep over Gloo's TCP transport
# and over glucx (GLOO_DEVICE_TRANSPORT=UCX), with the ratio per size.
#
# usage: scripts/compare.sh [RANKS] [options]
#   RANKS                 number of ranks (default 2)
#   -c, --colls "LIST"    collectives among allreduce allgather alltoall (default allreduce)
#   -b, --min BYTES       smallest size (default 1024)
#   -e, --max BYTES       largest size (default 16777216)
#   -B, --build DIR       glucx build directory (default $GLUCX_BUILD_DIR or <repo>/build);
#                         glucx-bench is built there if missing
#   -o, --out DIR         where raw outputs and table.md go (default DIR/compare-<timestamp>)
#   -r, --repeat K        run every library K times, interleaved, and report the median time
#                         per size (default 3; the machines are shared and single runs vary)
#   --venv DIR            venv with the glucx Python package, for the Gloo-over-glucx sweep
#                         (default $GLUCX_VENV or <repo>/.venv; made by `make venv`)
#   --no-install          do not run scripts/install-deps.sh bench
#   --bind-torch          pin each PyTorch rank to one CPU (torch_gloo.py --bind, ddp_resnet.py
#                         --bind), for every PyTorch variant, as Open MPI binds its ranks
#   --no-ddp              skip the DDP comparison
#   --ddp-repeat K        DDP: run every variant K times, interleaved (default 3)
#   --ddp-iters N         DDP: timed steps per run (default 20, after 5 warm-up steps)
#
# What runs (same sizes, iteration rule and timing rule everywhere: 64 MiB/size iterations
# clamped to 20..1000, max(5, iters/10) warmup, average per call, maximum over ranks):
#   glucx    glucx-bench --ranks N --check 1 (default selection of algorithm and UCX transport)
#   OpenMPI  scripts/bench/mpi_coll.c, built with mpicc, run with
#            mpirun --allow-run-as-root --oversubscribe -np N --mca pml ob1 --mca btl self,vader
#            (what Debian's Open MPI picks by default on one host: its openmpi-mca-params.conf
#            excludes the UCX PML; spelled out so a local config cannot change it), with
#            Open MPI's default binding (one core per rank); glucx and Gloo ranks are not pinned
#   GlooTCP  scripts/bench/torch_gloo.py: torch.multiprocessing.spawn, init_process_group("gloo")
#            on tcp://127.0.0.1, GLOO_SOCKET_IFNAME=lo, Debian's python3 (or $PYTHON)
#   GlooUCX  the same script with --transport ucx, run by the venv's python: the same PyTorch
#            Gloo backend with GLOO_DEVICE_TRANSPORT=UCX, i.e. glucx's transport under Gloo's
#            own algorithms (the script fails if glucx's counters do not show the traffic)
#   glucx-backend  the same script with --backend glucx, run by the venv's python: PyTorch's
#            `glucx` backend (glucx's collectives); skipped with a note while the venv's torch
#            has no backend "glucx"
#   memcpy   scripts/bench/memcpy_bw.c, one thread, same sizes
#   DDP      scripts/bench/ddp_resnet.py --all (venv python; needs python3-torchvision):
#            torchvision ResNet-18, batch 8 of 3x64x64, one intra-op thread per rank, RANKS ranks:
#            the step in one process without DDP (compute-only bound), RANKS such processes at
#            once, DDP over Gloo TCP, Gloo over glucx, the glucx backend, and Gloo over glucx with
#            glucx.torch.instrument() (no trace session); median step time and ratios
# Total runtime on a 2-core machine: about 1 minute for allreduce with 3 runs (Gloo's small
# messages dominate), about 2.5 minutes for all three collectives; the DDP comparison adds about
# 2 minutes per --ddp-repeat run.
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
torch_bind=()
repeat=3
ddp=1
ddp_repeat=3
ddp_iters=20

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
    --venv) venv=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    --bind-torch) torch_bind=(--bind); shift ;;
    --no-ddp) ddp=0; shift ;;
    --ddp-repeat) ddp_repeat=$2; shift 2 ;;
    --ddp-iters) ddp_iters=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    [0-9]*) ranks=$1; shift ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$ranks" =~ ^[0-9]+$ && "$ranks" -ge 2 ]] || die "RANKS must be an integer >= 2"
[[ "$min" =~ ^[0-9]+$ && "$max" =~ ^[0-9]+$ && "$min" -ge 4 && "$max" -ge "$min" ]] ||
  die "need 4 <= --min <= --max (plain byte counts)"
for c in $colls; do
  case "$c" in allreduce|allgather|alltoall) ;; *) die "unknown collective '$c'" ;; esac
done
[[ "$repeat" =~ ^[0-9]+$ && "$repeat" -ge 1 ]] || die "--repeat must be an integer >= 1"
[[ "$ddp_repeat" =~ ^[0-9]+$ && "$ddp_repeat" -ge 1 ]] || die "--ddp-repeat must be an integer >= 1"
[[ "$ddp_iters" =~ ^[0-9]+$ && "$ddp_iters" -ge 1 ]] || die "--ddp-iters must be an integer >= 1"

if [ "$install" -eq 1 ]; then
  "$repo/scripts/install-deps.sh" bench
fi
# Debian's python3-torch lives in the system interpreter, not in pyenv/venv ones.
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
  die "$py cannot import torch with Gloo (install python3-torch, or set PYTHON)"
command -v mpicc >/dev/null && command -v mpirun >/dev/null || die "mpicc/mpirun not found"
# The venv of `make venv`: Debian's torch plus the glucx package, whose start-up hook registers
# the Gloo device "UCX".
vpy="$venv/bin/python"
[ -x "$vpy" ] || die "no venv python at $vpy: run \`make venv\` (or pass --venv DIR)"
"$vpy" -c 'import torch.distributed as d, glucx; assert d.is_gloo_available()' 2>/dev/null ||
  die "$vpy cannot import torch and glucx: run \`make venv\`"
# PyTorch's `glucx` backend (registered by the glucx package once it has one)
glucx_pg=0
"$vpy" -c 'import torch.distributed as d, glucx; assert hasattr(d.Backend, "GLUCX")' 2>/dev/null &&
  glucx_pg=1
[ "$glucx_pg" -eq 1 ] || echo "compare.sh: note: the venv's torch has no backend \"glucx\":" \
  "its PyTorch-level and DDP columns are skipped" >&2
if [ "$ddp" -eq 1 ] && ! "$vpy" -c 'import torchvision' 2>/dev/null; then
  echo "compare.sh: note: $vpy cannot import torchvision (apt-get install python3-torchvision):" \
    "DDP comparison skipped" >&2
  ddp=0
fi

bench="$build/plugin/tools/glucx-bench"
if [ ! -x "$bench" ]; then
  echo "compare.sh: building glucx-bench in $build" >&2
  cmake -S "$repo" -B "$build" >/dev/null
  cmake --build "$build" --target glucx-bench -j2 >/dev/null
fi
[ -x "$bench" ] || die "no glucx-bench in $build"

[ -n "$out" ] || out="$build/compare-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out" "$build/bench"
mpicc -O2 -o "$build/bench/mpi_coll" "$repo/scripts/bench/mpi_coll.c"
cc -O2 -o "$build/bench/memcpy_bw" "$repo/scripts/bench/memcpy_bw.c"

{
  echo "# date: $(date -Iseconds)"
  echo "# host: $(uname -n), $(uname -sr), $(nproc) cpus, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
  echo "# glucx: $("$build/plugin/tools/glucx-info" 2>/dev/null | head -1 || echo '?'), tree" \
       "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" status \
       --porcelain 2>/dev/null | grep -q . && echo ' + uncommitted changes')"
  echo "# ucx: $(ucx_info -v 2>/dev/null | sed -n 's/^# *//p' | head -1 || echo '?')"
  echo "# open mpi: $(mpirun --version 2>/dev/null | head -1)"
  echo "# torch: $("$py" -c 'import torch; print(torch.__version__)')"
  echo "# glucx package (Gloo over glucx): $("$vpy" -c \
       'import glucx, os; print(glucx.version(), "from", os.path.dirname(glucx.__file__))')"
  echo "# ranks: $ranks, sizes $min..$max bytes x2, collectives: $colls, $repeat interleaved runs each (median)"
  echo "# glucx backend in the venv's torch: $([ "$glucx_pg" -eq 1 ] && echo yes || echo no)"
  echo "# torchvision: $("$vpy" -c 'import torchvision; print(torchvision.__version__)' 2>/dev/null || echo none)"
  echo "# load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/versions.txt"
load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" -v n="$(nproc)" 'BEGIN { exit !(l > 0.5 * n) }'; then
  echo "compare.sh: warning: load average $load1 on $(nproc) cpus: other work is running and" \
       "the numbers below will be noisy; ratios from one run are still comparable" >&2
fi

start=$SECONDS
echo "compare.sh: memcpy bandwidth" >&2
"$build/bench/memcpy_bw" "$min" "$max" > "$out/memcpy.txt"
for c in $colls; do
  for k in $(seq 1 "$repeat"); do
    echo "compare.sh: $c, run $k/$repeat: glucx" >&2
    "$bench" --ranks "$ranks" --coll "$c" -b "$min" -e "$max" -f 2 --check 1 \
      > "$out/glucx_$c.$k.txt" || die "glucx-bench failed (output in $out/glucx_$c.$k.txt)"
    echo "compare.sh: $c, run $k/$repeat: Open MPI" >&2
    mpirun --allow-run-as-root --oversubscribe -np "$ranks" --mca pml ob1 --mca btl self,vader \
      "$build/bench/mpi_coll" "$c" "$min" "$max" > "$out/mpi_$c.$k.txt" ||
      die "mpi_coll failed (output in $out/mpi_$c.$k.txt)"
    echo "compare.sh: $c, run $k/$repeat: Gloo TCP" >&2
    GLOO_SOCKET_IFNAME=lo "$py" "$repo/scripts/bench/torch_gloo.py" --ranks "$ranks" --coll "$c" \
      --min "$min" --max "$max" "${torch_bind[@]}" > "$out/gloo_$c.$k.txt" ||
      die "torch_gloo.py failed (output in $out/gloo_$c.$k.txt)"
    echo "compare.sh: $c, run $k/$repeat: Gloo over glucx" >&2
    GLOO_SOCKET_IFNAME=lo "$vpy" "$repo/scripts/bench/torch_gloo.py" --ranks "$ranks" --coll "$c" \
      --min "$min" --max "$max" --transport ucx "${torch_bind[@]}" > "$out/glooucx_$c.$k.txt" ||
      die "torch_gloo.py --transport ucx failed (output in $out/glooucx_$c.$k.txt)"
    if [ "$glucx_pg" -eq 1 ]; then
      echo "compare.sh: $c, run $k/$repeat: glucx backend" >&2
      GLOO_SOCKET_IFNAME=lo "$vpy" "$repo/scripts/bench/torch_gloo.py" --ranks "$ranks" \
        --coll "$c" --min "$min" --max "$max" --backend glucx "${torch_bind[@]}" \
        > "$out/glucxpg_$c.$k.txt" ||
        die "torch_gloo.py --backend glucx failed (output in $out/glucxpg_$c.$k.txt)"
    fi
  done
done
# shellcheck disable=SC2086
"$py" "$repo/scripts/bench/report.py" "$out" --ranks "$ranks" --colls $colls
if [ "$glucx_pg" -eq 1 ]; then
  # shellcheck disable=SC2086
  "$vpy" "$repo/scripts/bench/torch_gloo.py" --report "$out" --ranks "$ranks" --colls $colls |
    tee "$out/table_backends.md" || die "torch_gloo.py --report failed"
fi
if [ "$ddp" -eq 1 ]; then
  echo "compare.sh: DDP step time, $ddp_repeat runs per variant" >&2
  GLOO_SOCKET_IFNAME=lo "$vpy" "$repo/scripts/bench/ddp_resnet.py" --all --ranks "$ranks" \
    --repeat "$ddp_repeat" --iters "$ddp_iters" --out "$out/ddp" "${torch_bind[@]}" |
    tee "$out/table_ddp.md" || die "ddp_resnet.py failed (outputs in $out/ddp)"
fi
echo
echo "compare.sh: done in $((SECONDS - start)) s; raw outputs and table.md in $out"
