#!/usr/bin/env bash
# The executor's measurement run on a GPU machine (2 x H200: device kind nvidia-h200-x2; 4 GPUs: -x4), from the
# repository root, on every GPU of the machine: build (or take binaries built from the same commit, CCLAB_PREBUILT=dir),
# a calibration of allreduce.bidir's crossovers, the sweep of every algorithm the executor runs plus the NCCL
# baselines and sol.bidir_copy, 8 B to 1 GiB, as contract CSV, then compute-sanitizer on a short run and the
# executor's GPU tests in what time is left.
#
# Output ($OUT, default ./measure-out; at most 8 files): <machine>/*.csv (h200x2, h200x4, h100x2: the machine's
# folder name by scripts/check_device.py; scripts/publish_measure.sh copies them into results/<machine>/),
# measure.log (everything, tests included), summary.txt. Rows record the commit
# from CCLAB_COMMIT (the GPU machine gets the tree without .git).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines
OUT=${OUT:-$PWD/measure-out}
MACHINE=$(python3 scripts/check_device.py --name \
  "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l)")
REC="$OUT/${MACHINE:-unknown}"
mkdir -p "$REC"
TMP=$(mktemp -d)
LOG="$OUT/measure.log"
: >"$LOG"
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
DEADLINE=${DEADLINE:-100000}  # seconds: sweep groups past it are skipped, the checks after them shortened
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib

stamp "machine (commit $CCLAB_COMMIT)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
nvidia-smi topo -m | head -3 >>"$LOG"

BIN=${CCLAB_PREBUILT:-}
if [ -n "$BIN" ] && "$BIN/cclab" --help >/dev/null 2>&1 && "$BIN/test_exec_runner" --gtest_brief=1 >/dev/null 2>&1; then
  stamp "binaries: $BIN (built from commit $CCLAB_COMMIT)"
else
  stamp "build"
  cmake -S . -B build-measure -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
    >>"$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
  cmake --build build-measure -j "$(nproc)" --target cclab test_exec_gpu test_exec_cli test_exec_runner >>"$LOG" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$LOG" | head -60; exit 1; }
  BIN="$TMP/bin" && mkdir -p "$BIN" && cp build-measure/cli/cclab build-measure/tests/exec/test_exec_* "$BIN/"
fi
CCLAB="$BIN/cclab"

# Launches per timed graph replay: the lowering picks them with the plan (lower/lowering.hpp, launches_for: 100 for
# one-kernel-per-GPU plans, 20 for graphs of copies and kernels) and records them in the `launches` column, so the
# simulator prices the same replay. No -n here.
WARMUP=${WARMUP:-20}
stamp "calibration: allreduce.bidir modes by size (picks the crossovers of the sweep below)"
# Each mode is timed as the sweep will time it (same launches per replay), so the crossovers hold there.
cal() {  # name min max tune
  timeout 60 "$CCLAB" run --algo allreduce.bidir -b "$2" -e "$3" -f 2 -w 5 --inplace 0 --tune "$4" \
    --csv "$TMP/cal_$1.csv" >>"$LOG" 2>&1 || echo "calibration $1: rc=$?" | tee -a "$LOG"
}
GPUS=$(nvidia-smi -L | wc -l)
cal ll 16 1M mode=ll,ll_max_bytes=1M
cal ll_nopdl 16 256K mode=ll,ll_pdl=0
cal lamport 64K 1G mode=lamport
cal lamport_t256 64K 1G mode=lamport,lamport_threads=256
cal push 256K 1G mode=push
cal copy 4M 1G mode=copy
cal twoshot 64K 1G mode=twoshot
cal twoshot_u4 256K 1G mode=twoshot,twoshot_unroll=4
cal twoshot_load 64K 1G mode=twoshot,twoshot_push=0,twoshot_load_unroll=1
if [ "$GPUS" -le 2 ]; then  # the register flash engine and these variants are 2-GPU ones
  cal flash_ldg 64K 1G mode=flash,flash_engine=ldg
  cal flash_ldg2 256K 64M mode=flash,flash_engine=ldg,flash_ldg_unroll=2
  cal flash_ldg8 256K 64M mode=flash,flash_engine=ldg,flash_ldg_unroll=8
  cal flash66 256K 64M mode=flash,flash_engine=ldg,flash_blocks=66,flash_ldg_unroll=2
  cal lamport_split 64K 1G mode=lamport,lamport_split=1
  cal lamport_a1 64K 1G mode=lamport,lamport_ahead=1
  cal push132 256K 64M mode=push,push_blocks=132
  cal copy_p8 4M 1G mode=copy,ce_pieces=8
  cal copy_p2 4M 1G mode=copy,ce_pieces=2
else  # more GPUs: the two-shot's shapes
  cal twoshot_u1 64K 1G mode=twoshot,twoshot_unroll=1
  cal twoshot_t256 64K 1G mode=twoshot,twoshot_threads=256
  cal ring 16M 1G mode=ring  # the ring schedule, as NCCL at the largest sizes
fi
head -1 "$TMP/cal_ll.csv" >"$REC/calibration.csv"
for f in "$TMP"/cal_*.csv; do tail -n +2 "$f" >>"$REC/calibration.csv"; done
TUNE=$(python3 scripts/bidir_crossovers.py "$REC/calibration.csv" 2>>"$LOG" || echo "")
stamp "allreduce.bidir tune: ${TUNE:-defaults}"

sweep() {  # file factor dtype min max groups... (a group: comma-separated algorithms, run by one process)
  local file=$1 f=$2 dt=$3 lo=$4 hi=$5
  shift 5
  for g in "$@"; do
    # The sweep before the sanitizer and the GPU tests: a group may run to 15 s before the deadline (a group cut by
    # its timeout keeps the rows it finished).
    local t0=$(date +%s) limit=$(($(left) - 15 < GROUP_S ? $(left) - 15 : GROUP_S))
    if [ "$limit" -lt 10 ]; then
      echo "  $(echo "$g" | cut -c1-70) ($lo..$hi): skipped (deadline)" | tee -a "$LOG"
      continue
    fi
    # More than 2 GPUs: the hierarchical algorithms run as 2 nodes (4 GPUs: 2 nodes of 2).
    local nodes=""
    [[ "$g" == *.hier* && "$GPUS" -gt 2 ]] && nodes="--node-size $((GPUS / 2))"
    timeout "$limit" "$CCLAB" run --algo "$g" -b "$lo" -e "$hi" -f "$f" -w "$WARMUP" -d "$dt" ${TUNE:+--tune "$TUNE"} \
      $nodes --csv "$TMP/part.csv" >>"$LOG" 2>&1
    local rc=$?
    echo "  $(echo "$g" | cut -c1-70) ($lo..$hi): rc=$rc, $(($(date +%s) - t0)) s" | tee -a "$LOG"
    [ -f "$TMP/part.csv" ] || continue
    if [ -f "$REC/$file" ]; then tail -n +2 "$TMP/part.csv" >>"$REC/$file"; else cp "$TMP/part.csv" "$REC/$file"; fi
    rm -f "$TMP/part.csv"
  done
}
# The copy-engine mode from 4 MiB on more than 2 GPUs (its cross-GPU events cost ~1.4 ms a launch there below).
COPY_MIN=$([ "$GPUS" -le 2 ] && echo 8 || echo 4M)
GROUP_S=$([ "$GPUS" -le 2 ] && echo 200 || echo 120)  # seconds a group of algorithms may take
ALLREDUCES="allreduce.nccl,allreduce.bidir,allreduce.bidir.ll allreduce.bidir.twoshot allreduce.bidir.flash,allreduce.bidir.lamport"
ALLREDUCES+=" allreduce.bidir.push,allreduce.bidir.stream sol.bidir_copy,allreduce.ring"
# More GPUs: the one-shot modes (every rank receives n-1 times the message) to 64 MiB, where they have lost.
if [ "$GPUS" -gt 2 ]; then
  ALLREDUCES="allreduce.nccl,allreduce.bidir,allreduce.bidir.ll allreduce.bidir.twoshot allreduce.bidir.lamport"
  ALLREDUCES+=" sol.bidir_copy,allreduce.ring"
fi
stamp "sweep: all-reduces and sol.bidir_copy, float, 8 B .. 1 GiB x2"
sweep allreduce_float.csv 2 float 8 1G $ALLREDUCES
[ "$GPUS" -gt 2 ] && sweep allreduce_float.csv 2 float 8 64M allreduce.bidir.flash,allreduce.bidir.push,allreduce.bidir.stream
sweep allreduce_float.csv 2 float "$COPY_MIN" 1G allreduce.bidir.copy
stamp "sweep: every other algorithm and its NCCL baseline, float, 8 B .. 1 GiB x4"
sweep others_float.csv 4 float 8 1G allgather.nccl,reducescatter.nccl,broadcast.nccl,reduce.nccl,alltoall.nccl \
  allgather.ring reducescatter.ring broadcast.pipeline,broadcast.binomial,broadcast.scatter_allgather \
  alltoall.direct,alltoall.bruck,alltoall.hier gather.binomial,gather.direct,scatter.binomial,scatter.direct \
  reduce.binomial,reduce.direct
sweep allreduce_float.csv 2 float 8 1G allreduce.tree,allreduce.rhd
stamp "sweep: all-reduces in half and bfloat16, x4"
# More GPUs: the chosen path and its baseline only (the forced modes' float rows show each mode).
[ "$GPUS" -gt 2 ] && ALLREDUCES="allreduce.nccl,allreduce.bidir,allreduce.bidir.twoshot"
sweep allreduce_half.csv 4 half 8 1G $ALLREDUCES
sweep allreduce_bfloat16.csv 4 bfloat16 8 1G $ALLREDUCES
# Last: on 4 GPUs its 512 MiB size has run past a group's limit, and what it takes the GPU tests lose.
GROUP_S=60 sweep others_float.csv 4 float 8 1G reducescatter.hier

stamp "compute-sanitizer memcheck and racecheck, short run"
SAN="-b 4100 -e 4100 -w 0 -n 1 --graph 0 --timeout 100 --tune kernel_timeout=60"
[ "$(left)" -gt 25 ] && timeout $(($(left) > 80 ? 45 : $(left) - 20)) compute-sanitizer --tool memcheck "$CCLAB" run --algo allreduce.bidir.ll,allreduce.bidir.flash,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.stream,allreduce.bidir.copy,allreduce.ring $SAN >"$TMP/memcheck.log" 2>&1
echo "  memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$TMP/memcheck.log" | tail -1)" | tee -a "$LOG"
[ "$(left)" -gt 20 ] && timeout $(($(left) > 60 ? 35 : $(left) - 15)) compute-sanitizer --tool racecheck "$CCLAB" run --algo allreduce.bidir.flash,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.stream,allreduce.bidir.ll $SAN >"$TMP/racecheck.log" 2>&1
echo "  racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY' "$TMP/racecheck.log" | tail -1)" | tee -a "$LOG"
cat "$TMP/memcheck.log" "$TMP/racecheck.log" >>"$LOG"

stamp "GPU tests (executor; ctest label gpu)"
# Last before the summary: they take what is left. The fused lowering's test first (every schedule on every GPU,
# ~15 s), then the executor's. A test stops at SIGTERM only after the row in progress (an 8-rank case on 4 GPUs
# takes ~100 s), so KILL follows 5 s later: the summary still gets written.
gpu_test() {  # name, seconds, then the test's arguments: runs $BIN/<name>, one line of its outcome, its log kept
  local name=$1 secs=$2
  shift 2
  [ "$(left)" -gt 40 ] && [ -x "$BIN/$name" ] || return 0
  timeout -k 5 "$secs" "$BIN/$name" --gtest_brief=1 "$@" >"$TMP/$name.log" 2>&1
  echo "  $name rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$TMP/$name.log" | tr '\n' ' ')" | tee -a "$LOG"
  cat "$TMP/$name.log" >>"$LOG"
}
gpu_test test_exec_fused_gpu 60
gpu_test test_exec_gpu $(($(left) > 150 ? 150 : $(left) - 30)) \
  --gtest_filter='Gpu/AllAlgorithms.ZeroWrong/2ranks_float_graph:Gpu/AllAlgorithms.ZeroWrong/4ranks_*:Gpu/AllAlgorithms.ZeroWrong/8ranks_*:GpuRun.*'
stamp "summary"
{
  python3 scripts/exec_summary.py "$REC/allreduce_float.csv" "$REC/others_float.csv"
  for dt in half bfloat16; do python3 scripts/exec_summary.py "$REC/allreduce_$dt.csv" | sed -n '1,32p'; done
  echo "# allreduce.bidir tune: ${TUNE:-defaults}"
} | tee "$OUT/summary.txt"
stamp "done"
