#!/usr/bin/env bash
# A step of scripts/gpu_call.sh on 2 GPUs (~3 min with the build): the shim's large all-reduces beside the copy
# engines' speed of light, in one call (issue 22's goal from 256 MiB up: 0.9 x sol.bidir_copy).
#   bash .carry/gpu_call.sh <name> gpu_shim_large    (nccl-tests carried as .carry/nccl-tests, none is committed:
#   git -C <a clone of NVIDIA/nccl-tests> archive HEAD | tar -x -C .carry/nccl-tests)
# 1. the shim and its GPU tests (one process driving both GPUs, and one process per GPU);
# 2. sol.bidir_copy from 256 MiB to 1 GiB (cclab run, float), the reference of the goal;
# 3. scripts/shim_check.sh (its steps: SHIM_STEPS, default the all-reduce step: all_reduce_perf -b 8 -e 1G, NCCL
#    alone and through the shim, eager and with -G 100);
# 4. all_reduce_perf through the shim again, eager, to 1 MiB and to 1 GiB (first_rows_*.log): the first timed row
#    of a process after a warm-up with and without the large sizes.
# Output under $1: shim_tests.log, sol.csv, shim/ (shim_check.sh's records), first_rows_*.log; a short table last.
set -u
W=${1:?output folder}
CCLAB=${CCLAB:?the cclab binary}
ROOT=$(cd ../.. && pwd)  # gpu_call.sh runs steps from .carry/src
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
stamp() { echo "## [shim_large $(($(date +%s) - T0)) s] $*"; }
stamp "build the shim and its GPU tests"
cmake --build build-measure -j "$(nproc)" --target cclab_nccl test_shim_gpu test_shim_mp_gpu >"$W/shim_build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$W/shim_build.log" | head -30; exit 1; }
stamp "shim GPU tests"
for t in test_shim_gpu test_shim_mp_gpu; do
  timeout 240 "build-measure/tests/shim/$t" >>"$W/shim_tests.log" 2>&1
  echo "$t rc=$?" | tee -a "$W/shim_tests.log"
done
stamp "sol.bidir_copy, 256 MiB to 1 GiB"
timeout 120 "$CCLAB" run --algo sol.bidir_copy -b 256M -e 1G -f 2 -d float --csv "$W/sol.csv" >"$W/sol.log" 2>&1
echo "sol rc=$?"
stamp "all_reduce_perf through the shim and NCCL alone"
SHIM=$PWD/build-measure/shim/libcclab_nccl.so
STEPS=${SHIM_STEPS:-allreduce} NCCL_TESTS_DIR=$ROOT/.carry/nccl-tests CCLAB_SHIM_LIB=$SHIM OUT=$W/shim \
  DEADLINE=$((${LEFT_S:-400} - ($(date +%s) - T0))) bash scripts/shim_check.sh >"$W/shim_check.out" 2>&1
echo "shim_check rc=$?"
for max in 1M 1G; do
  LD_PRELOAD=$SHIM timeout 60 /tmp/cclab_nccl_tests_build/all_reduce_perf -b 8 -e $max -f 2 -g 2 \
    >"$W/first_rows_$max.log" 2>&1
  echo "first rows to $max: $(grep -E '^ +(8|16) ' "$W/first_rows_$max.log" | awk '{print $1 " B " $6 " us"}' | tr '\n' ' ')"
done
stamp "table"
python3 - "$W" <<'PY'
import csv, os, sys
w = sys.argv[1]
sol = {int(r["bytes"]): float(r["busbw_gbps"]) for r in csv.DictReader(open(os.path.join(w, "sol.csv")))}
path = os.path.join(w, "shim", "allreduce_compare.csv")
if not os.path.exists(path):
    sys.exit("no allreduce_compare.csv")
print("launch  size        shim GB/s  NCCL GB/s  sol.bidir_copy GB/s  shim/sol")
for r in csv.DictReader(open(path)):
    b = int(r["size"])
    if b >= 256 << 20 and b in sol:
        print(f"{r['launch']:6}  {b:10}  {float(r['cclab_busbw']):9.1f}  {float(r['nccl_busbw']):9.1f}  "
              f"{sol[b]:19.1f}  {float(r['cclab_busbw']) / sol[b]:.3f}")
PY
