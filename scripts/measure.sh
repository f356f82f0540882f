#!/usr/bin/env bash
# The executor's measurement run on the 2 x H200 machine (device kind nvidia-h200-x2), from the
# repository root: build (or take binaries built from the same commit, CCLAB_PREBUILT=dir), GPU
# tests, a calibration of allreduce.bidir's crossovers, then the sweep of every algorithm the
# executor runs plus the NCCL baselines and sol.bidir_copy, 8 B to 1 GiB, as contract CSV.
#
# Output ($OUT, default ./measure-out; at most 8 files): h200x2/*.csv (copy them into
# results/h200x2/), measure.log (everything, tests included), summary.txt. Rows record the commit
# from CCLAB_COMMIT (the GPU machine gets the tree without .git).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines
OUT=${OUT:-$PWD/measure-out}
REC="$OUT/h200x2"
mkdir -p "$REC"
TMP=$(mktemp -d)
LOG="$OUT/measure.log"
: >"$LOG"
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
DEADLINE=${DEADLINE:-100000}  # seconds: the checks after the sweeps are shortened or skipped past it
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib

stamp "machine (commit $CCLAB_COMMIT)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
nvidia-smi topo -m | head -3 >>"$LOG"

BIN=${CCLAB_PREBUILT:-}
if [ -n "$BIN" ] && "$BIN/cclab" --help >/dev/null 2>&1 && "$BIN/test_exec_plan" --gtest_brief=1 >/dev/null 2>&1; then
  stamp "binaries: $BIN (built from commit $CCLAB_COMMIT)"
else
  stamp "build"
  cmake -S . -B build-measure -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
    >>"$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
  cmake --build build-measure -j "$(nproc)" --target cclab test_exec_gpu test_exec_cli test_exec_plan >>"$LOG" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$LOG" | head -60; exit 1; }
  BIN="$TMP/bin" && mkdir -p "$BIN" && cp build-measure/cli/cclab build-measure/tests/exec/test_exec_* "$BIN/"
fi
CCLAB="$BIN/cclab"

# Iterations per timed graph replay. One replay has a fixed cost (graph launch on each GPU, the fork and
# join events: ~15 us), spread over its ITERS operations: at 20 it added ~0.75 us to every small-message
# time, so the one-kernel-per-GPU operations (NCCL's, the bidir kernels) are timed at 100 per replay.
# Schedules of many graph nodes (copy engines, events between GPUs: the general lowering, sol.bidir_copy,
# the copy mode) stay at 20: a graph of 100 of them is too large for the harness's hold kernel, so its
# CPU launch (milliseconds) would be timed too (4 MiB in copy mode: 350 us per operation at 30, 90 at 20).
WARMUP=${WARMUP:-20}
ITERS_FUSED=${ITERS_FUSED:-100}
ITERS_GRAPH=${ITERS_GRAPH:-20}
stamp "calibration: allreduce.bidir modes by size (picks the crossovers of the sweep below)"
# Each mode is timed as the sweep will time it (same launches per replay), so the crossovers hold there.
cal() {  # name min max tune [iters: ITERS_FUSED; the copy-engine schedules ITERS_GRAPH]
  timeout 60 "$CCLAB" run --algo allreduce.bidir -b "$2" -e "$3" -f 2 -w 5 -n "${5:-$ITERS_FUSED}" --inplace 0 --tune "$4" \
    --csv "$TMP/cal_$1.csv" >>"$LOG" 2>&1 || echo "calibration $1: rc=$?" | tee -a "$LOG"
}
cal ll 16 1M mode=ll,ll_max_bytes=1M
cal ll_nopdl 16 256K mode=ll,ll_pdl=0
cal flash_ldg 64K 1G mode=flash,flash_engine=ldg
cal flash_ldg2 256K 64M mode=flash,flash_engine=ldg,flash_ldg_unroll=2
cal flash_ldg8 256K 64M mode=flash,flash_engine=ldg,flash_ldg_unroll=8
cal flash66 256K 64M mode=flash,flash_engine=ldg,flash_blocks=66,flash_ldg_unroll=2
cal lamport 64K 1G mode=lamport
cal lamport_t256 64K 1G mode=lamport,lamport_threads=256
cal lamport_split 64K 1G mode=lamport,lamport_split=1
cal lamport_a1 64K 1G mode=lamport,lamport_ahead=1
cal push 256K 1G mode=push
cal push132 256K 64M mode=push,push_blocks=132
cal copy 4M 1G mode=copy "$ITERS_GRAPH"
cal copy_p8 4M 1G mode=copy,ce_pieces=8 "$ITERS_GRAPH"
cal copy_p2 4M 1G mode=copy,ce_pieces=2 "$ITERS_GRAPH"
head -1 "$TMP/cal_ll.csv" >"$REC/calibration.csv"
for f in "$TMP"/cal_*.csv; do tail -n +2 "$f" >>"$REC/calibration.csv"; done
TUNE=$(python3 scripts/bidir_crossovers.py "$REC/calibration.csv" 2>>"$LOG" || echo "")
stamp "allreduce.bidir tune: ${TUNE:-defaults}"

sweep() {  # file factor dtype iters min max algos...
  local file=$1 f=$2 dt=$3 n=$4 lo=$5 hi=$6
  shift 6
  for g in "$@"; do
    timeout 200 "$CCLAB" run --algo "$g" -b "$lo" -e "$hi" -f "$f" -w "$WARMUP" -n "$n" -d "$dt" ${TUNE:+--tune "$TUNE"} \
      --csv "$TMP/part.csv" >>"$LOG" 2>&1
    local rc=$?
    echo "  $(echo "$g" | cut -c1-70) (-n $n, $lo..$hi): rc=$rc" | tee -a "$LOG"
    [ -f "$TMP/part.csv" ] || continue
    if [ -f "$REC/$file" ]; then tail -n +2 "$TMP/part.csv" >>"$REC/$file"; else cp "$TMP/part.csv" "$REC/$file"; fi
    rm -f "$TMP/part.csv"
  done
}
# allreduce.bidir runs a kernel up to its copy-mode crossover, the copy schedule above it.
COPY_FROM=$(echo "${TUNE:-}" | tr ',' '\n' | sed -n 's/^auto_flash_max=//p')
COPY_FROM=${COPY_FROM:-134217728}
KERNELS=allreduce.nccl,allreduce.bidir.ll,allreduce.bidir.flash,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.stream
GRAPHS=sol.bidir_copy,allreduce.bidir.copy
RINGS=allreduce.ring
allreduces() {  # file factor dtype [more graph-schedule algos]
  sweep "$1" "$2" "$3" "$ITERS_FUSED" 8 1G $KERNELS
  sweep "$1" "$2" "$3" "$ITERS_FUSED" 8 "$COPY_FROM" allreduce.bidir
  sweep "$1" "$2" "$3" "$ITERS_GRAPH" $((COPY_FROM * $2)) 1G allreduce.bidir  # the next size of the sweep
  sweep "$1" "$2" "$3" "$ITERS_GRAPH" 8 1G $GRAPHS
  # The general schedules run fused up to 1 MiB (one kernel per GPU): 100 launches per replay there.
  sweep "$1" "$2" "$3" "$ITERS_FUSED" 8 1M $RINGS${4:+,$4}
  sweep "$1" "$2" "$3" "$ITERS_GRAPH" 2M 1G $RINGS${4:+,$4}
}
stamp "sweep: all-reduces and sol.bidir_copy, float, 8 B .. 1 GiB x2"
allreduces allreduce_float.csv 2 float allreduce.tree,allreduce.rhd
stamp "sweep: every other algorithm and its NCCL baseline, float, 8 B .. 1 GiB x4"
sweep others_float.csv 4 float "$ITERS_FUSED" 8 1G \
  allgather.nccl,reducescatter.nccl,broadcast.nccl,reduce.nccl,alltoall.nccl
# Up to 512 KiB these run fused (one kernel per GPU, fused_max 1 MiB): 100 launches per replay, as the
# calibration's fused.prog.* probes; from 2 MiB the general lowering's graphs at 20. The reduces stay on the
# general lowering at every size (a kernel reading the peer), at 20.
OTHERS="allgather.ring reducescatter.ring,reducescatter.hier broadcast.pipeline,broadcast.binomial,broadcast.scatter_allgather"
OTHERS+=" gather.binomial,gather.direct,scatter.binomial,scatter.direct alltoall.direct,alltoall.bruck,alltoall.hier"
sweep others_float.csv 4 float "$ITERS_FUSED" 8 512K $OTHERS
sweep others_float.csv 4 float "$ITERS_GRAPH" 2M 1G $OTHERS
sweep others_float.csv 4 float "$ITERS_GRAPH" 8 1G reduce.binomial,reduce.direct
stamp "sweep: all-reduces in half and bfloat16, x4"
allreduces allreduce_half.csv 4 half
allreduces allreduce_bfloat16.csv 4 bfloat16

stamp "GPU tests (executor; ctest label gpu)"
[ "$(left)" -gt 40 ] && timeout $(($(left) > 150 ? 150 : $(left) - 30)) "$BIN/test_exec_gpu" --gtest_brief=1 \
  --gtest_filter='Gpu/AllAlgorithms.ZeroWrong/2ranks_float_graph:Gpu/AllAlgorithms.ZeroWrong/4ranks_*:Gpu/AllAlgorithms.ZeroWrong/8ranks_*:GpuRun.*' \
  >>"$LOG" 2>&1
echo "  gpu tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$LOG" | tail -2 | tr '\n' ' ')" | tee -a "$LOG"
stamp "compute-sanitizer memcheck and racecheck, short run"
SAN="-b 4100 -e 4100 -w 0 -n 1 --graph 0 --timeout 100 --tune kernel_timeout=60"
[ "$(left)" -gt 25 ] && timeout $(($(left) > 80 ? 45 : $(left) - 20)) compute-sanitizer --tool memcheck "$CCLAB" run --algo allreduce.bidir.ll,allreduce.bidir.flash,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.stream,allreduce.bidir.copy,allreduce.ring $SAN >"$TMP/memcheck.log" 2>&1
echo "  memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$TMP/memcheck.log" | tail -1)" | tee -a "$LOG"
[ "$(left)" -gt 20 ] && timeout $(($(left) > 60 ? 35 : $(left) - 15)) compute-sanitizer --tool racecheck "$CCLAB" run --algo allreduce.bidir.flash,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.stream,allreduce.bidir.ll $SAN >"$TMP/racecheck.log" 2>&1
echo "  racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY' "$TMP/racecheck.log" | tail -1)" | tee -a "$LOG"
cat "$TMP/memcheck.log" "$TMP/racecheck.log" >>"$LOG"

stamp "summary"
{
  python3 scripts/exec_summary.py "$REC/allreduce_float.csv" "$REC/others_float.csv"
  for dt in half bfloat16; do python3 scripts/exec_summary.py "$REC/allreduce_$dt.csv" | sed -n '1,32p'; done
  echo "# allreduce.bidir tune: ${TUNE:-defaults}"
} | tee "$OUT/summary.txt"
stamp "done"
