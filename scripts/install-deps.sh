#!/usr/bin/env bash
# Install the Debian packages glucx needs, idempotently: only missing packages are installed,
# and `apt-get update` runs only when something is missing.
#
# usage: scripts/install-deps.sh [GROUP...]    groups: build (default), test, bench, conformance,
#                                              all
set -euo pipefail

build_pkgs=(gcc g++ make cmake pkg-config libucx-dev ucx-utils libhiredis-dev libyaml-dev libgloo-dev
            libtorch-dev python3-torch python3-dev pybind11-dev python3-venv python3-setuptools
            python3-pip python3-wheel liblttng-ust-dev liblttng-ctl-dev lttng-tools
            libbabeltrace2-dev babeltrace2 libjansson-dev python3-sklearn python3-tqdm
            iproute2)  # glucx-cluster (ip, tc; unshare/nsenter come with util-linux)
test_pkgs=(libcmocka-dev redis-server valgrind libgtest-dev python3-pytest iproute2
           python3-bt2 python3-jsonschema chromium
           openmpi-bin  # tests/cluster: mpirun with glucx-cluster exec as its rsh agent
           stress-ng)  # the suite's repeat runs under load (tests/README.md)
bench_pkgs=(openmpi-bin libopenmpi-dev python3-torch python3-numpy python3-torchvision
            stress-ng)  # scripts/compare.sh --load
# scripts/gloo-upstream.sh: Gloo's source package (apt-get source, dpkg-source) and its tests'
# build (GoogleTest, the installed libgloo's headers)
conformance_pkgs=(dpkg-dev cmake g++ make libgtest-dev libgloo-dev)
# The dashboard is built with Node.js (>= 20) and npm, which this kind of machine has (from
# NodeSource, whose nodejs package bundles npm). Debian's nodejs/npm only where there is none:
# installing Debian's npm beside NodeSource's nodejs would conflict.
command -v npm >/dev/null 2>&1 || build_pkgs+=(nodejs npm)

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(build)
want=()
for g in "${groups[@]}"; do
  case "$g" in
    build) want+=("${build_pkgs[@]}") ;;
    test) want+=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
    bench) want+=("${build_pkgs[@]}" "${bench_pkgs[@]}") ;;
    conformance) want+=("${conformance_pkgs[@]}") ;;
    all) want+=("${build_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}" "${conformance_pkgs[@]}") ;;
    *) echo "install-deps: unknown group '$g' (build, test, bench, conformance, all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# de-duplicate
readarray -t missing < <(printf '%s\n' "${missing[@]}" | awk 'NF && !seen[$0]++')
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# wait for another apt/dpkg run (unattended upgrades, a parallel install) instead of failing
lock=(-o DPkg::Lock::Timeout=600)
"${sudo[@]}" apt-get "${lock[@]}" update -q
"${sudo[@]}" apt-get "${lock[@]}" install -y -q --no-install-recommends "${missing[@]}"
