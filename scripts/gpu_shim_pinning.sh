#!/usr/bin/env bash
# Whether the eager launch time of an nccl-tests process depends on the CPUs it runs on (a diagnostic for
# scripts/shim_check.sh's comparisons of the other binaries, whose small sizes move between two levels from one
# process to the next). On a GPU machine, after shim_check.sh built nccl-tests (NT_BUILD) and the shim (SHIM):
# broadcast_perf 64 B-64 KiB, NCCL alone, RUNS processes unpinned and on each CPU list of CPU_SETS, then the same
# through the shim on each list. Prints one line per process (median out-of-place time over the sizes) and writes
# $OUT/pinning.csv (cpus, library, run, median_us).
set -uo pipefail
NT_BUILD=${NT_BUILD:-/tmp/cclab_nccl_tests_build}
SHIM=${SHIM:?the shim library}
OUT=${OUT:-/tmp/cclab_pin_out}
NGPUS=${NGPUS:-2}
RUNS=${RUNS:-3}
CPU_SETS=${CPU_SETS:-"0-3 8-11 16-19 24-27"}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT/pinning_logs"
echo "cpus,library,run,median_us" >"$OUT/pinning.csv"
one() {  # cpus library run
  local cpus=$1 lib=$2 i=$3 pre=()
  [ "$cpus" != all ] && pre=(taskset -c "$cpus")
  [ "$lib" = cclab ] && pre+=(env LD_PRELOAD="$SHIM")
  local log="$OUT/pinning_logs/${cpus}_${lib}_$i.log"
  ${pre[@]+"${pre[@]}"} timeout 60 "$NT_BUILD/broadcast_perf" -b 64 -e 64K -f 4 -g "$NGPUS" >"$log" 2>&1
  local med
  med=$(awk '$1 ~ /^[0-9]+$/ && NF >= 13 { print $6 }' "$log" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
  echo "$cpus,$lib,$i,${med:-nan}" | tee -a "$OUT/pinning.csv"
}
for lib in nccl cclab; do
  for cpus in all $CPU_SETS; do
    for i in $(seq 1 "$RUNS"); do one "$cpus" "$lib" "$i"; done
  done
done
