#!/usr/bin/env bash
# Gloo's own upstream test suite as a yardstick for glucx (docs/conformance.md).
#
# Builds the test program of Debian's source package of the installed Gloo (gloo/test/*.cc, the
# libgloo that PyTorch links) against the installed libgloo and headers, with the tests' device
# factory pointed at a switch (scripts/gloo-upstream/device.h): the same binary runs every test
# on Gloo's TCP transport and on glucx's Gloo device. Prints pass/fail counts per device and the
# tests failing on glucx but not on TCP, grouped by cause.
#
# usage: scripts/gloo-upstream.sh [options] [STAGE...]
#   stages (default: all = fetch build run report):
#     fetch   Debian's source package of the installed libgloo into WORK/src (adds a deb-src entry
#             under /etc/apt/sources.list.d when apt has none, and says so)
#     build   WORK/overlay (patched copy of gloo/test + headers Debian does not install), then
#             WORK/build/gloo_test linked with libglucx_gloo from the glucx build directory
#     run     every test in its own process under `timeout`, on each device
#     report  counts and the glucx-only failures (also written to WORK/summary.txt)
#   options:
#     --glucx-build DIR  glucx build directory holding adapters/gloo/libglucx_gloo.so
#                        (default: build/ of this checkout; its headers come from the source
#                        tree recorded in DIR/CMakeCache.txt)
#     --work DIR         work directory, outside git (default: GLUCX_BUILD/gloo-upstream)
#     --gloo-src DIR     an unpacked Gloo source tree of the installed version instead of
#                        fetching (a Debian source tree is checked against debian/changelog, a
#                        git checkout against the commit in the package version)
#     --tarballs DIR     the source package's tarballs (.orig.tar.*, .debian.tar.*) obtained
#                        another way, when the mirror does not serve them: the fetch stage takes
#                        only the .dsc from apt and dpkg-source checks the tarballs against it
#     --device D         tcp or glucx; repeat for both (default: both)
#     --filter PATTERN   gtest filter of the tests to run (default: *)
#     --timeout S        seconds per test before it counts as hung (default: 180)
#     --jobs N           tests run at once (default: 1)
#     --build-jobs N     compile jobs (default: 2)
#     --check            exit 1 when a test fails on glucx but passes on TCP
#     --selftest         check this tool, not glucx: build and run glucx's fixture
#                        (scripts/gloo-upstream/fixture, not Gloo's tests) and compare each
#                        outcome with fixture/expected.tsv (work dir GLUCX_BUILD/gloo-upstream-selftest)
#     -h, --help
set -euo pipefail
export LC_ALL=C  # sort and join agree on the order; gtest's output is ASCII

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tool=$here/gloo-upstream

glucx_build=$root/build
work=""
gloo_src=""
tarballs=""
devices=()
filter='*'
timeout_s=180
jobs=1
build_jobs=2
check=0
selftest=0
timeout_given=0
stages=()

fetch_tmp=""
trap '[ -z "$fetch_tmp" ] || rm -rf "$fetch_tmp"' EXIT

say() { printf 'gloo-upstream: %s\n' "$*"; }
die() { printf 'gloo-upstream: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --glucx-build) glucx_build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --gloo-src) gloo_src=$2; shift 2 ;;
    --tarballs) tarballs=$(cd "$2" && pwd); shift 2 ;;
    --device) devices+=("$2"); shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --timeout) timeout_s=$2; timeout_given=1; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-jobs) build_jobs=$2; shift 2 ;;
    --check) check=1; shift ;;
    --selftest) selftest=1; shift ;;
    -h|--help) usage; exit 0 ;;
    fetch|build|run|report) stages+=("$1"); shift ;;
    all) stages+=(fetch build run report); shift ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || stages=(fetch build run report)
[ ${#devices[@]} -gt 0 ] || devices=(tcp glucx)
for d in "${devices[@]}"; do
  case "$d" in tcp|glucx) ;; *) die "--device $d: expected tcp or glucx" ;; esac
done
case "$timeout_s$jobs$build_jobs" in
  *[!0-9]*) die "--timeout, --jobs and --build-jobs take whole numbers" ;;
esac
if [ "$jobs" -lt 1 ] || [ "$build_jobs" -lt 1 ]; then die "--jobs and --build-jobs must be at least 1"; fi

glucx_build=$(cd "$glucx_build" 2>/dev/null && pwd) || die "no glucx build directory '$glucx_build'"
if [ "$selftest" -eq 1 ]; then
  [ -z "$gloo_src$tarballs" ] || die "--selftest builds its own fixture: no --gloo-src or --tarballs"
  gloo_src=$tool/fixture
  [ "$timeout_given" -eq 1 ] || timeout_s=5
  [ -n "$work" ] || work=$glucx_build/gloo-upstream-selftest
  stages+=(verify)
  devices=(tcp glucx)
fi
[ -n "$work" ] || work=$glucx_build/gloo-upstream
work=$(realpath -m "$work")
case "$work/" in
  "$root"/build*/*|"$root"/.*) ;;
  "$root"/*) die "--work $work is inside the git tree: use a build directory or a path outside it" ;;
esac
mkdir -p "$work"

# The installed Gloo: binary package libgloo0, its source package and the upstream commit.
gloo_version=$(dpkg-query -W -f='${Version}' libgloo0 2>/dev/null) ||
  die "libgloo0 is not installed (apt-get install libgloo-dev)"
gloo_source=$(dpkg-query -W -f='${source:Package}' libgloo0)
gloo_commit=$(printf '%s\n' "$gloo_version" | sed -n 's/.*git[0-9]*\.\([0-9a-f]\{7,\}\).*/\1/p')
src_dir=$work/src/$gloo_source-$gloo_version

need_root() {
  [ "$(id -u)" -eq 0 ] || die "need root to $1"
}

have_source_version() {
  apt-cache showsrc --only-source "$gloo_source" 2>/dev/null | grep -qx "Version: $gloo_version"
}

# A deb-src entry for the archive that provides the installed libgloo0, in a file of its own.
ensure_deb_src() {
  have_source_version && return 0
  local list=/etc/apt/sources.list.d/glucx-deb-src.sources origin uri dist suite comp key
  if [ ! -e "$list" ]; then
    need_root "add a deb-src entry ($list)"
    # "apt-cache policy": the line after the installed version names its archive and suite.
    origin=$(apt-cache policy libgloo0 | awk -v v="$gloo_version" '
      ($1 == "***" && $2 == v) || $1 == v { found = 1; next }
      found && $2 ~ /:\/\// { print $2, $3; exit }')
    [ -n "$origin" ] || die "cannot tell which archive provides libgloo0 $gloo_version (apt-cache policy libgloo0)"
    uri=${origin% *}
    dist=${origin#* }
    suite=${dist%%/*}
    comp=${dist#*/}
    key=/usr/share/keyrings/debian-archive-keyring.gpg
    {
      echo "# Added by glucx scripts/gloo-upstream.sh: Debian's source packages, for"
      echo "# 'apt-get source $gloo_source' (Gloo's upstream tests, docs/conformance.md)."
      echo "Types: deb-src"
      echo "URIs: $uri"
      echo "Suites: $suite"
      echo "Components: $comp"
      [ -e "$key" ] && echo "Signed-By: $key"
    } >"$list"
    say "apt had no deb-src entry for $suite: added $list (deb-src $uri $suite $comp)"
  fi
  need_root "update apt's package lists"
  say "apt-get update (for the source index)"
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  have_source_version ||
    die "apt knows no source package $gloo_source $gloo_version even with $list (apt-cache showsrc $gloo_source)"
}

# Which upstream source tree the build uses; fails when it is not the installed version.
check_gloo_src() {
  local dir=$1 v head
  [ -f "$dir/gloo/test/CMakeLists.txt" ] || die "$dir has no gloo/test/CMakeLists.txt: not a Gloo source tree"
  if [ "$selftest" -eq 1 ]; then
    say "SELF-TEST: glucx's fixture $dir (checks this tool; these are not Gloo's tests)"
  elif [ -f "$dir/debian/changelog" ]; then
    v=$(dpkg-parsechangelog -l "$dir/debian/changelog" -S Version)
    [ "$v" = "$gloo_version" ] ||
      die "$dir is Debian's Gloo $v, but libgloo0 $gloo_version is installed: its tests would not match"
    say "Gloo source: $dir (Debian source package $gloo_source $v)"
  elif [ -n "$gloo_commit" ] && head=$(git -C "$dir" rev-parse HEAD 2>/dev/null); then
    case "$head" in
      "$gloo_commit"*) say "Gloo source: $dir (git $head, the commit of libgloo0 $gloo_version)" ;;
      *) die "$dir is at git commit $head, but libgloo0 $gloo_version is commit $gloo_commit" ;;
    esac
  else
    say "warning: cannot tell which Gloo version $dir holds (no debian/changelog, no git);" \
        "using it as libgloo0 $gloo_version"
  fi
}

stage_fetch() {
  "$root/scripts/install-deps.sh" conformance  # apt-get source, dpkg-source, dpkg-parsechangelog
  if [ -n "$gloo_src" ]; then
    gloo_src=$(cd "$gloo_src" && pwd)
    check_gloo_src "$gloo_src"
    return 0
  fi
  if [ -f "$src_dir/.glucx-fetched" ]; then
    say "Gloo source: $src_dir (fetched before)"
    return 0
  fi
  ensure_deb_src
  local tmp
  tmp=$(mktemp -d "$work/src.XXXXXX")
  fetch_tmp=$tmp
  say "apt-get source $gloo_source=$gloo_version into $work/src"
  # Downloads as root are not sandboxed (apt would say so); apt checks every file against the
  # signed archive index either way.
  local get=(apt-get -q -o APT::Sandbox::User=root source)
  if [ -n "$tarballs" ]; then
    # Only the .dsc from apt (checked against the signed archive index); the tarballs given
    # must match its checksums, which dpkg-source checks when it unpacks.
    (cd "$tmp" && "${get[@]}" --dsc-only "$gloo_source=$gloo_version") ||
      die "could not fetch the .dsc of $gloo_source $gloo_version (apt-get source --dsc-only)"
    local dsc f
    dsc=$(find "$tmp" -maxdepth 1 -name '*.dsc' | head -n 1)
    while IFS= read -r f; do
      [ -f "$tarballs/$f" ] || die "--tarballs $tarballs has no $f (named by $(basename "$dsc"))"
      cp "$tarballs/$f" "$tmp/"
    done < <(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on { print $3 }' "$dsc")
    (cd "$tmp" && dpkg-source -x "$(basename "$dsc")") ||
      die "dpkg-source -x refused the tarballs from $tarballs (checksums of $(basename "$dsc"))"
  elif ! (cd "$tmp" && "${get[@]}" "$gloo_source=$gloo_version"); then
    die "could not fetch Debian's source package $gloo_source $gloo_version" \
        "(apt-get source failed, see above). Where its tarballs cannot be downloaded, give them" \
        "with --tarballs DIR (checked against the .dsc), or an unpacked Gloo source tree" \
        "of that version with --gloo-src DIR (Debian's, or an upstream git checkout at commit" \
        "$gloo_commit)."
  fi
  local d
  d=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  [ -n "$d" ] || die "apt-get source unpacked nothing in $tmp"
  rm -rf "$src_dir"
  mkdir -p "$work/src"
  mv "$d" "$src_dir"
  rm -rf "$tmp"
  check_gloo_src "$src_dir"
  date -u +%FT%TZ >"$src_dir/.glucx-fetched"
}

gloo_tree() {
  if [ -n "$gloo_src" ]; then
    (cd "$gloo_src" && pwd)
  elif [ -f "$src_dir/.glucx-fetched" ]; then
    echo "$src_dir"
  else
    die "no Gloo source in $src_dir: run the fetch stage first (or give --gloo-src DIR)"
  fi
}

glucx_source_dir() {
  local s
  s=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$glucx_build/CMakeCache.txt" 2>/dev/null)
  if [ -z "$s" ] || [ ! -f "$s/adapters/gloo/include/glucx/gloo.h" ]; then
    die "$glucx_build is not a configured glucx build directory (no CMakeCache.txt naming the glucx sources)"
  fi
  echo "$s"
}

stage_build() {
  local src glucx_src overlay f sites filled=() n=0 h
  src=$(gloo_tree)
  glucx_src=$(glucx_source_dir)
  [ -e "$glucx_build/adapters/gloo/libglucx_gloo.so" ] ||
    die "no $glucx_build/adapters/gloo/libglucx_gloo.so: cmake --build $glucx_build --target glucx_gloo"
  "$root/scripts/install-deps.sh" conformance

  # The overlay: a patched copy of gloo/test, and the Gloo headers that the tests or the installed
  # headers need but Debian does not install (gloo/common/memory.h, for the tcp transport's).
  overlay=$work/overlay
  rm -rf "$overlay"
  mkdir -p "$overlay/gloo"
  cp -R "$src/gloo/test" "$overlay/gloo/test"
  sites=$(grep -rn --include='*.cc' --include='*.h' -E '(^|[^A-Za-z0-9_])tcp::CreateDevice\(' \
    "$overlay/gloo/test" | sed "s|^$overlay/||" || true)
  [ -n "$sites" ] ||
    die "no call of gloo::transport::tcp::CreateDevice in $src/gloo/test: Gloo's tests changed, update $tool/device.sed"
  find "$overlay/gloo/test" \( -name '*.cc' -o -name '*.h' \) -exec sed -i -f "$tool/device.sed" {} +
  say "device factory: $(printf '%s\n' "$sites" | wc -l) call(s) now go to glucx_upstream::CreateDevice:"
  printf '%s\n' "$sites" | sed 's/^/    /'
  if grep -rqE '(^|[^A-Za-z0-9_])tcp::CreateDevice\(' "$overlay/gloo/test"; then
    die "device.sed left a tcp::CreateDevice call in $overlay/gloo/test"
  fi
  # Factories left as they are: other transports' (built only where Debian's config.h enables
  # them) and unqualified calls (a test of the tcp transport itself, under a using-directive).
  local left
  left=$(grep -rnE --include='*.cc' --include='*.h' '(^|[^A-Za-z0-9_])([A-Za-z_]+::)?CreateDevice\(' \
    "$overlay/gloo/test" | grep -v 'glucx_upstream::CreateDevice(' | sed "s|^$overlay/||" || true)
  if [ -n "$left" ]; then
    say "device factories not switched (these tests create that device on both runs):"
    printf '%s\n' "$left" | sed 's/^/    /'
  fi
  while IFS= read -r h; do
    if [ ! -e "/usr/include/$h" ]; then
      mkdir -p "$overlay/$(dirname "$h")"
      cp "$src/$h" "$overlay/$h"
      n=$((n + 1))
      # name the ones something includes (the rest are never read)
      if grep -rqF -e "\"$h\"" -e "<$h>" /usr/include/gloo "$overlay/gloo/test"; then filled+=("$h"); fi
    fi
  done < <(cd "$src" && find gloo -name '*.h' -not -path 'gloo/test/*' | sort)
  say "headers from the source package that Debian does not install: $n copied to the overlay;" \
      "included by the tests or installed headers: ${filled[*]:-none}"

  local bjobs=$build_jobs
  cmake -S "$tool" -B "$work/build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O2 -g0" \
    -DOVERLAY="$overlay" -DGLUCX_BUILD="$glucx_build" -DGLUCX_SOURCE="$glucx_src" >"$work/cmake.log" 2>&1 ||
    { tail -n 30 "$work/cmake.log" >&2; die "cmake failed (log: $work/cmake.log)"; }
  say "building Gloo's test program (-j$bjobs; log: $work/build.log)"
  nice cmake --build "$work/build" -j "$bjobs" >"$work/build.log" 2>&1 ||
    { grep -m 20 -E 'error|Error' "$work/build.log" >&2 || true; die "build failed (log: $work/build.log)"; }

  # The switch works: the factory the tests call gives each device.
  for f in tcp glucx; do
    local got
    got=$(GLUCX_TEST_UPSTREAM_DEVICE=$f "$work/build/selfcheck") || die "selfcheck failed for $f"
    case "$got" in "$f "*) say "selfcheck $f: $got" ;; *) die "selfcheck $f gave: $got" ;; esac
  done
}

# gtest's --gtest_list_tests, one full test name a line; DISABLED_ tests are left out, as gtest
# leaves them out of its own count.
list_tests() {
  "$1" --gtest_list_tests --gtest_filter="$filter" | awk '
    /^[^ ]/ { suite = $1; next }
    /^  [^ ]/ { if (suite !~ /(^|\/)DISABLED_/ && $1 !~ /^DISABLED_/) print suite $1 }'
}

run_one() {
  local dev=$1 i=$2 name=$3 dir=$4 bin=$5 rc=0 status t0 t1
  local log=$dir/logs/$i.log
  t0=$(date +%s%N)
  GLUCX_TEST_UPSTREAM_DEVICE=$dev timeout -k 10 "$timeout_s" "$bin" --gtest_filter="$name" \
    --gtest_color=no >"$log" 2>&1 || rc=$?
  t1=$(date +%s%N)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status=hung
  elif [ "$rc" -ne 0 ]; then status=failed
  elif grep -q '^\[  SKIPPED \] 1 test' "$log"; then status=skipped
  elif grep -q '^\[  PASSED  \] 1 test' "$log"; then status=passed
  else status=notrun
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$name" "$status" "$rc" "$(( (t1 - t0) / 1000000 ))" >"$dir/res/$i"
}

stage_run() {
  local bin=$work/build/gloo_test dev dir i name total failed done_n running
  [ -x "$bin" ] || die "no $bin: run the build stage first"
  list_tests "$bin" >"$work/tests.txt"
  total=$(wc -l <"$work/tests.txt")
  [ "$total" -gt 0 ] || die "the filter '$filter' selects no test"
  say "$total tests (filter '$filter'), each in its own process, at most ${timeout_s}s each, $jobs at a time"
  for dev in "${devices[@]}"; do
    dir=$work/run/$dev
    rm -rf "$dir"
    mkdir -p "$dir/logs" "$dir/res"
    say "$dev: running (logs: $dir/logs)"
    i=0
    running=0
    local start=$SECONDS
    while IFS= read -r name; do
      i=$((i + 1))
      run_one "$dev" "$i" "$name" "$dir" "$bin" &
      running=$((running + 1))
      if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
      fi
      if [ $((i % 100)) -eq 0 ]; then
        done_n=$(find "$dir/res" -type f | wc -l)
        failed=$(find "$dir/res" -type f -exec cat {} + | awk -F'\t' '$3 != "passed" && $3 != "skipped"' | wc -l)
        say "$dev: $done_n/$total done, $failed not passed, $((SECONDS - start))s"
      fi
    done <"$work/tests.txt"
    wait
    find "$dir/res" -type f -exec cat {} + | sort -n >"$dir/results.tsv"
    say "$dev: finished in $((SECONDS - start))s"
  done
}

# The cause of a glucx failure, from its log: one of bound / wording / hung / other.
cause_of() {
  local status=$1 log=$2
  if [ "$status" = hung ]; then echo hung
  elif grep -qE 'bound buffers are unsupported|create(Send|Recv)Buffer.* is unsupported' "$log"; then echo bound
  elif grep -q 'Timed out' "$log"; then echo wording
  else echo other
  fi
}

# The first line of a log that tells why the test failed (gtest's "file:line: Failure" with the
# two lines after it).
reason_of() {
  awk '
    found { prev = prev " | " $0; if (++found > 2) { print prev; done = 1; exit } next }
    /what\(\)|Failure|[Ee]xception|Expected|[Ee]rror|Aborted|terminate/ {
      if ($0 ~ /Failure$/) { prev = $0; found = 1; next }
      print; done = 1; exit
    }
    END { if (found && !done) print prev; else if (!done) print "(no failure line; see the log)" }
  ' "$1" | cut -c 1-300
}

# Names of a group: all of them, or for a long group per test with its instances counted.
print_names() {
  local file=$1 n
  n=$(wc -l <"$file")
  if [ "$n" -le 40 ]; then
    sed 's/^/    /' "$file"
  else
    sed -E 's#/[0-9]+$#/*#' "$file" | sort | uniq -c | awk '{ printf "    %s (%d)\n", $2, $1 }'
  fi
}

stage_report() {
  local dev f c summary=$work/summary.txt
  local commit
  commit=$(git -C "$(glucx_source_dir)" describe --always --dirty 2>/dev/null || echo unknown)
  {
    if [ "$selftest" -eq 1 ]; then
      echo "SELF-TEST of scripts/gloo-upstream.sh on its fixture (not Gloo's tests) — $(date -u '+%F %H:%M UTC')"
    else
      echo "Gloo upstream tests on glucx — $(date -u '+%F %H:%M UTC')"
    fi
    echo "glucx: $(glucx_source_dir) at $commit, build $glucx_build"
    echo "libgloo0 $gloo_version; per-test timeout ${timeout_s}s; filter '$filter'"
    for dev in "${devices[@]}"; do
      f=$work/run/$dev/results.tsv
      [ -f "$f" ] || { echo "$dev: no results (run stage)"; continue; }
      awk -F'\t' -v dev="$dev" '
        { n[$3]++; t++ }
        END { printf "%s: %d tests: %d passed, %d failed, %d hung, %d skipped, %d not run\n",
                dev, t, n["passed"], n["failed"], n["hung"], n["skipped"], n["notrun"] }' "$f"
    done
    if [ -f "$work/run/tcp/results.tsv" ] && [ -f "$work/run/glucx/results.tsv" ]; then
      local tmp
      tmp=$(mktemp -d)
      # name, tcp status, glucx status, glucx log index
      join -t "$(printf '\t')" \
        <(awk -F'\t' '{ print $2 "\t" $3 }' "$work/run/tcp/results.tsv" | sort) \
        <(awk -F'\t' '{ print $2 "\t" $3 "\t" $1 }' "$work/run/glucx/results.tsv" | sort) \
        >"$tmp/joined"
      : >"$tmp/bound"; : >"$tmp/wording"; : >"$tmp/hung"; : >"$tmp/other"; : >"$tmp/other.why"
      while IFS="$(printf '\t')" read -r name ts gs idx; do
        case "$ts:$gs" in passed:passed|passed:skipped|skipped:*) continue ;; passed:*) ;; *) continue ;; esac
        local log=$work/run/glucx/logs/$idx.log c
        c=$(cause_of "$gs" "$log")
        echo "$name" >>"$tmp/$c"
        [ "$c" = other ] && printf '    %s\n        %s\n' "$name" "$(reason_of "$log" | sed "s|$work/overlay/||g")" >>"$tmp/other.why"
      done <"$tmp/joined"
      local nb nw nh no
      nb=$(wc -l <"$tmp/bound"); nw=$(wc -l <"$tmp/wording"); nh=$(wc -l <"$tmp/hung"); no=$(wc -l <"$tmp/other")
      echo
      echo "Failing on glucx, passing on TCP: $((nb + nw + nh + no))"
      echo "  bound-buffer API unsupported (createSendBuffer/createRecvBuffer): $nb"
      print_names "$tmp/bound"
      echo "  timeout tests expecting Gloo's wording ('Timed out'): $nw"
      print_names "$tmp/wording"
      echo "  hung (killed after ${timeout_s}s): $nh"
      print_names "$tmp/hung"
      echo "  other: $no"
      cat "$tmp/other.why"
      awk -F'\t' '$2 != "passed" && $2 != "skipped" && $3 != "passed" && $3 != "skipped" { print $1 }' \
        "$tmp/joined" >"$tmp/both"
      awk -F'\t' '$2 != "passed" && $2 != "skipped" && ($3 == "passed" || $3 == "skipped") { print $1 }' \
        "$tmp/joined" >"$tmp/tcponly"
      echo "Failing on both: $(wc -l <"$tmp/both")"
      print_names "$tmp/both"
      echo "Failing on TCP only: $(wc -l <"$tmp/tcponly")"
      print_names "$tmp/tcponly"
      cat "$tmp/bound" "$tmp/wording" "$tmp/hung" "$tmp/other" >"$work/glucx-only.txt"
      for c in bound wording hung other; do sed "s/\$/\t$c/" "$tmp/$c"; done >"$work/glucx-only.tsv"
      rm -rf "$tmp"
    fi
    echo
    for dev in "${devices[@]}"; do
      f=$work/run/$dev/results.tsv
      [ -f "$f" ] || continue
      awk -F'\t' -v dev="$dev" '
        $3 == "passed" { p++ } $3 == "skipped" { s++ } $3 != "passed" && $3 != "skipped" { x++ }
        END { printf "%s: %d passed, %d failed, %d skipped\n", dev, p, x, s }' "$f"
    done
  } | tee "$summary"
  say "summary: $summary; per-test logs: $work/run/DEVICE/logs (index in results.tsv)"
  if [ "$check" -eq 1 ] && [ -s "$work/glucx-only.txt" ]; then
    say "--check: $(wc -l <"$work/glucx-only.txt") test(s) fail on glucx but pass on TCP"
    return 1
  fi
}

# --selftest: every fixture test has an outcome fixture/expected.tsv allows, and no other test ran
# (Outcome.SourceOnlyHeader compiles only with the overlay's copy of a header /usr/include lacks).
stage_verify() {
  local bad=0 name ts gs cause got_t got_g got_c
  while IFS="$(printf '\t')" read -r name ts gs cause; do
    case "$name" in '#'*|'') continue ;; esac
    got_t=$(awk -F'\t' -v n="$name" '$2 == n { print $3 }' "$work/run/tcp/results.tsv")
    got_g=$(awk -F'\t' -v n="$name" '$2 == n { print $3 }' "$work/run/glucx/results.tsv")
    got_c=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$work/glucx-only.tsv")
    case ",$ts," in *",$got_t,"*) ;; *) say "selftest: $name on tcp: '$got_t', expected $ts"; bad=1 ;; esac
    case ",$gs," in *",$got_g,"*) ;; *) say "selftest: $name on glucx: '$got_g', expected $gs"; bad=1 ;; esac
    if [ -n "$got_c" ] && [ "$got_c" != "$cause" ]; then
      say "selftest: $name counted as '$got_c' on glucx, expected '$cause'"; bad=1
    fi
  done <"$tool/fixture/expected.tsv"
  if ! diff <(grep -v '^#' "$tool/fixture/expected.tsv" | cut -f 1 | sort) <(sort "$work/tests.txt") >/dev/null; then
    say "selftest: the tests run differ from fixture/expected.tsv:"
    diff <(grep -v '^#' "$tool/fixture/expected.tsv" | cut -f 1 | sort) <(sort "$work/tests.txt") || true
    bad=1
  fi
  [ "$bad" -eq 0 ] || die "selftest FAILED"
  say "selftest: ok (every outcome as fixture/expected.tsv allows)"
}

for s in "${stages[@]}"; do
  "stage_$s"
done
