#!/usr/bin/env bash
# Exploration run on the 2 x H200 machine (device tool), from the repository root:
#   1. binaries: carried prebuilt ones (.carry/bin) when they run there, else a build;
#   2. the GPU tests (every algorithm checked, 2 ranks and 4/8 sharing), compute-sanitizer
#      memcheck and racecheck on a short run;
#   3. one sweep of every algorithm, then launch-parameter sweeps of the fused all-reduce modes,
#      to pick allreduce.bidir's crossovers and parameters.
# Writes logs and records to $OUT (at most 8 files); prints a summary last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/cclab_out}
mkdir -p "$OUT"
RUNS=/tmp/cclab_runs
rm -rf "$RUNS" && mkdir -p "$RUNS"
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
DEADLINE=${DEADLINE:-560}  # seconds: later stages are skipped past it (the device call has 600)
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
have() { [ "$(left)" -gt "$1" ] || { echo "## skipped (only $(left) s left): $2"; return 1; }; }

stamp "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvidia-smi topo -m | head -4

BIN=.carry/bin
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib
if [ -x "$BIN/cclab" ] && "$BIN/cclab" --help >/dev/null 2>&1 && "$BIN/test_exec_runner" --gtest_brief=1 >/dev/null 2>&1; then
  stamp "using carried binaries"
else
  stamp "building (carried binaries missing or not runnable here)"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF >"$RUNS/cmake.log" 2>&1 || { tail -30 "$RUNS/cmake.log"; exit 1; }
  cmake --build build-gpu -j 32 --target cclab test_exec_gpu test_exec_cli test_exec_runner >"$RUNS/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$RUNS/build.log" | head -60; exit 1; }
  BIN=/tmp/cclab_bin && mkdir -p $BIN
  cp build-gpu/cli/cclab build-gpu/tests/exec/test_exec_* $BIN/
fi
CCLAB="$BIN/cclab"
export CCLAB_COMMIT=${CCLAB_COMMIT:-unknown}

stamp "sweep: every algorithm, 8 B .. 1 GiB x4 (groups in separate processes: a hang loses one group)"
G_BASE=allreduce.nccl,allgather.nccl,reducescatter.nccl,broadcast.nccl,reduce.nccl,alltoall.nccl,sol.bidir_copy
G_CLASSIC=allreduce.ring,allreduce.tree,allreduce.rhd,allgather.ring,reducescatter.ring,broadcast.binomial,broadcast.pipeline,broadcast.scatter_allgather,reduce.binomial,reduce.direct,gather.binomial,gather.direct,scatter.binomial,scatter.direct,alltoall.direct,alltoall.bruck,alltoall.hier,reducescatter.hier
i=0
for g in $G_BASE $G_CLASSIC allreduce.bidir allreduce.bidir.ll allreduce.bidir.flash allreduce.bidir.stream allreduce.bidir.copy; do
  i=$((i + 1))
  b=8; [ "$g" = allreduce.bidir.ll ] && e=256K || e=1G
  timeout 90 "$CCLAB" run --algo "$g" -b $b -e $e -f 4 -w 5 -n 20 --csv "$RUNS/all_$i.csv" >>"$RUNS/all.log" 2>&1
  echo "group $i rc=$? ($g)" | cut -c1-120
done
grep -E "skipped|error|FAILED" "$RUNS/all.log" | head -30

run_tune() {  # name sizes tune...
  local name=$1 b=$2 e=$3 tune=$4
  [ "$(left)" -gt 200 ] || { echo "skip tune $name"; return; }
  timeout 60 "$CCLAB" run --algo allreduce.bidir -b "$b" -e "$e" -f 4 -w 3 -n 20 --inplace 0 --tune "$tune" \
    --csv "$RUNS/tune_$name.csv" >>"$RUNS/tune.log" 2>&1 || echo "tune $name failed rc=$?"
}
stamp "tuning: flash"
for blk in 132 264 528; do for u in 1 2 4; do run_tune "flash_${blk}_$u" 64K 1G "mode=flash,flash_blocks=$blk,flash_unroll=$u"; done; done
run_tune flash_s2 1M 1G "mode=flash,flash_stages=2"
stamp "tuning: stream"
for lanes in 32 66 132; do for sb in 64K 256K 1M; do run_tune "stream_${lanes}_$sb" 1M 1G "mode=stream,lanes=$lanes,slot_bytes=$sb"; done; done
run_tune stream_slots8 4M 1G "mode=stream,slots=8,slot_bytes=256K"
run_tune stream_slots2 4M 1G "mode=stream,slots=2,slot_bytes=1M"
stamp "tuning: copy engines"
for ch in 2M 8M 32M; do for sl in 2 4; do run_tune "copy_${ch}_$sl" 4M 1G "mode=copy,ce_chunk=$ch,ce_slots=$sl"; done; done
run_tune copy_push 4M 1G "mode=copy,ce_chunk=8M,ce_push=1"
stamp "tuning: ll"
for th in 128 256 512; do run_tune "ll_$th" 8 256K "mode=ll,ll_threads=$th"; done
run_tune ll_flash_small 8 256K "mode=flash,flash_blocks=8"
stamp "tuning: sol chunks, nccl protocols"
for c in 2 4; do timeout 40 "$CCLAB" run --algo sol.bidir_copy -b 16M -e 1G -f 4 --tune sol_chunks=$c --csv "$RUNS/sol_$c.csv" >>"$RUNS/tune.log" 2>&1; done
timeout 40 "$CCLAB" run --algo allreduce.nccl -b 8 -e 64K -f 8 --nccl-proto LL --csv "$RUNS/nccl_ll.csv" >>"$RUNS/tune.log" 2>&1
timeout 40 "$CCLAB" run --algo allreduce.nccl,allreduce.bidir -b 8 -e 64K -f 8 --graph 0 --csv "$RUNS/graph0.csv" >>"$RUNS/tune.log" 2>&1

stamp "tests"
"$BIN/test_exec_runner" --gtest_brief=1 2>&1 | tail -3
"$BIN/test_exec_cli" --gtest_brief=1 2>&1 | tail -3
have 60 "gpu tests" && timeout $(( $(left) > 200 ? 200 : $(left) - 30 )) "$BIN/test_exec_gpu" --gtest_brief=1 2>&1 | tail -40 | tee "$OUT/tests.log"

stamp "compute-sanitizer"
SAN="--timeout 300 --tune kernel_timeout=120 -b 4100 -e 266K -f 8 -w 0 -n 1 -c 1"
have 50 memcheck && timeout $(( $(left) > 90 ? 60 : $(left) - 30 )) compute-sanitizer --tool memcheck --print-limit 5 "$CCLAB" run --algo allreduce.bidir.ll,allreduce.bidir.flash,allreduce.bidir.stream,allreduce.bidir.copy,allreduce.ring,allgather.ring $SAN --graph 0 2>&1 | grep -E "ERROR SUMMARY|Invalid|out of bounds|error" | head -8
have 40 racecheck && timeout $(( $(left) - 25 )) compute-sanitizer --tool racecheck --print-limit 5 "$CCLAB" run --algo allreduce.bidir.flash,allreduce.bidir.stream,allreduce.bidir.ll $SAN --graph 0 2>&1 | grep -E "RACECHECK SUMMARY|hazard|error" | head -8

stamp "collecting"
# One CSV of everything (same header in every file written by this binary), logs beside it.
first=1
for f in "$RUNS"/all_*.csv "$RUNS"/tune_*.csv "$RUNS"/sol_*.csv "$RUNS"/nccl_ll.csv "$RUNS"/graph0.csv; do
  [ -f "$f" ] || continue
  if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
done >"$OUT/explore.csv"
cp "$RUNS/all.log" "$OUT/all.log"
cp "$RUNS/tune.log" "$OUT/tune.log"
stamp "summary"
python3 scripts/exec_summary.py "$OUT/explore.csv" | head -90
grep -h "^ " "$RUNS/all.log" | head -0
stamp "done"
