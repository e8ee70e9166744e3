#!/usr/bin/env bash
# Pin one benchmark rank to one CPU, then run it: the pinning rule of scripts/compare.sh --bind,
# the same for every library (compare.sh's "Measurement protocol" in docs/perf.md).
#
# usage: scripts/bench/pin_rank.sh COMMAND [ARGS...]
#   The rank is the first of OMPI_COMM_WORLD_RANK (set by mpirun), RANK (set by compare.sh's
#   glucx launcher, torchrun) and PIN_RANK that is set; the CPU is the (rank mod n)-th entry
#   (0-based) of this process's allowed CPU list (Cpus_allowed_list in /proc/self/status, in
#   increasing order), where n is that list's length: rank 0 on the first allowed CPU, rank 1 on
#   the second, ... the rule torch_gloo.py --bind and ddp_resnet.py --bind apply to PyTorch ranks
#   (sorted(os.sched_getaffinity(0))[rank % n]). COMMAND then runs (exec) under
#   `taskset -c CPU`, so it and every thread and process it starts stay on that CPU.
# Errors: exit 2 with a message when no rank variable is set, the rank is not a non-negative
# integer or the CPU list cannot be read; otherwise COMMAND's exit status.
set -euo pipefail

rank=${OMPI_COMM_WORLD_RANK:-${RANK:-${PIN_RANK:-}}}
[[ "$rank" =~ ^[0-9]+$ ]] || {
  echo "pin_rank.sh: no rank (OMPI_COMM_WORLD_RANK, RANK or PIN_RANK) or not an integer:" \
    "'$rank'" >&2
  exit 2
}
[ $# -ge 1 ] || { echo "pin_rank.sh: no command" >&2; exit 2; }
list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
cpus=()
IFS=, read -r -a parts <<< "$list"
for p in "${parts[@]}"; do
  if [[ "$p" =~ ^([0-9]+)-([0-9]+)$ ]]; then
    for ((c = BASH_REMATCH[1]; c <= BASH_REMATCH[2]; c++)); do cpus+=("$c"); done
  elif [[ "$p" =~ ^[0-9]+$ ]]; then
    cpus+=("$p")
  fi
done
[ ${#cpus[@]} -ge 1 ] || { echo "pin_rank.sh: cannot read the allowed CPUs ('$list')" >&2; exit 2; }
exec taskset -c "${cpus[$((rank % ${#cpus[@]}))]}" "$@"
