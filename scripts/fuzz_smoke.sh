#!/usr/bin/env bash
# Fuzz smoke run (issue 9): builds the libFuzzer targets (clang, ASan + UBSan) and runs each on its
# committed seed corpus (fuzz/corpus/<target>/) for a bounded time. Fails on any crash, leak, sanitizer
# report, timeout or out-of-memory; the input that triggered it is kept and named. The targets come from
# the tree scripts/sanitize.sh configured (build-sanitize, preset `sanitize`) when there is one, so that
# the libraries are not compiled a second time; else from their own tree (build-fuzz, preset `fuzz`).
#
#   FUZZ_SECONDS   seconds per target (default 30)
#   FUZZ_JOBS      targets run at once (default: the number of cores, at most 2)
#   FUZZ_TARGETS   space-separated subset, e.g. "args records" (default: every target built)
#   FUZZ_OUT       where new corpus entries, crash inputs and logs go (default: <tree>/smoke)
#
# Reproduce a failure: <tree>/fuzz/fuzz_<target> <crash file>. The committed corpus is only read:
# inputs the run discovers go to $FUZZ_OUT/<target>/new (copy interesting ones into fuzz/corpus/ by hand).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-30}
cores=$(nproc)
jobs=${FUZZ_JOBS:-$((cores < 2 ? cores : 2))}

start=$(date +%s)
if grep -qs '^CCLAB_FUZZ:BOOL=ON' build-sanitize/CMakeCache.txt; then
  # Already configured (and, after sanitize.sh, built): only what changed since is compiled.
  tree=build-sanitize
  configure=(true)
else
  # -O1 with line tables instead of the preset's RelWithDebInfo (-O2 -g): a much shorter build on 2 cores,
  # and crash reports still give file:line.
  tree=build-fuzz
  configure=(cmake --preset fuzz -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG")
fi
out=${FUZZ_OUT:-$tree/smoke}
mkdir -p "$tree"
if ! { "${configure[@]}" && cmake --build "$tree" --target cclab_fuzzers -- -j"$cores"; } >"$tree/fuzz-build.log" 2>&1; then
  grep -E 'error|FAILED' "$tree/fuzz-build.log" | head -20 >&2
  echo "fuzz_smoke: build failed ($tree/fuzz-build.log)" >&2
  exit 1
fi
echo "fuzz_smoke: built in $(($(date +%s) - start)) s ($tree)"

targets=${FUZZ_TARGETS:-$(cd "$tree/fuzz" && ls fuzz_* 2>/dev/null | grep -v '\.' | sed 's/^fuzz_//' | tr '\n' ' ')}
[ -n "${targets// /}" ] || { echo "fuzz_smoke: no fuzz targets built" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"

# One target: libFuzzer with a per-input timeout (a hang is a finding), an RSS cap and a malloc cap (a
# parser that believes a file claiming 10^12 GPUs is a finding), leak detection on (libFuzzer default).
run_one() {
  local t=$1 seconds=$2 out=$3
  local bin=$tree/fuzz/fuzz_$t seeds=fuzz/corpus/$t
  mkdir -p "$out/$t/new" "$out/$t/crash"
  [ -d "$seeds" ] || { echo "FAIL $t: no seed corpus $seeds"; return 1; }
  local t0=$(date +%s)
  if "$bin" "$out/$t/new" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$out/$t/crash/" >"$out/$t/log" 2>&1; then
    local stats
    stats=$(grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$out/$t/log" | awk '{print $2}' | tr '\n' ' ')
    local cov
    cov=$(grep -oE 'cov: [0-9]+' "$out/$t/log" | tail -1)
    echo "ok   $t: $(($(date +%s) - t0)) s, runs/peak_rss_mb: ${stats}, ${cov}, corpus +$(ls "$out/$t/new" | wc -l)"
  else
    echo "FAIL $t after $(($(date +%s) - t0)) s: $(ls "$out/$t/crash" | tr '\n' ' ') (log: $out/$t/log)"
    grep -E 'ERROR: |runtime error|SUMMARY|fuzz: |terminate called|what\(\)' "$out/$t/log" | head -8 | sed 's/^/     /'
    return 1
  fi
}
export -f run_one
export tree

# xargs runs `jobs` targets at once and exits non-zero when any of them failed.
status=0
printf '%s\n' $targets | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$out" || status=1
echo "fuzz_smoke: $(echo $targets | wc -w) targets x ${seconds} s, ${jobs} at a time, total $(($(date +%s) - start)) s"
if [ $status -ne 0 ]; then
  echo "fuzz_smoke: FAILED (crash inputs under $out/<target>/crash/)" >&2
  exit 1
fi
echo "fuzz_smoke: all targets clean"
