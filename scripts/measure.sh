#!/usr/bin/env bash
# The executor's measurement run on the 2 x H200 machine (device kind nvidia-h200-x2), from the
# repository root: build, GPU tests, then the full sweep of every algorithm the executor runs plus
# the NCCL baselines and sol.bidir_copy, 8 B to 1 GiB, recorded as contract CSV.
#
# Output ($OUT, default ./measure-out): h200x2/*.csv (copy into results/h200x2/), measure.log,
# tests.log, summary.txt. The commit recorded in every row comes from CCLAB_COMMIT (the GPU
# machine gets the tree without .git): CCLAB_COMMIT=$(git rev-parse --short=12 HEAD).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines
OUT=${OUT:-$PWD/measure-out}
STEP=${STEP:-4}            # size factor of the sweeps (2 for a finer one)
MAXB=${MAXB:-1G}
mkdir -p "$OUT/h200x2"
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}

stamp "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvidia-smi topo -m | head -4

stamp "build"
BUILD=${BUILD:-build-measure}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
  >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target cclab test_exec_gpu test_exec_cli test_exec_plan >>"$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60; exit 1; }
CCLAB="$BUILD/cli/cclab"

stamp "GPU tests (ctest -L gpu, executor)"
(cd "$BUILD" && ctest -L gpu -R "Gpu" --output-on-failure --timeout 300) >"$OUT/tests.log" 2>&1
echo "tests rc=$? ($(grep -E 'tests passed|tests failed' "$OUT/tests.log"))"
(cd "$BUILD" && ctest -L cpu -R "RunCli|Lowering|Values|Bidir|Sweep|SolSchedule|RunTable" >>"$OUT/tests.log" 2>&1)

stamp "sweep: every algorithm, float sum, 8 B .. $MAXB (x$STEP), graph replay"
"$CCLAB" run --algo all -b 8 -e "$MAXB" -f "$STEP" -w 5 -n 20 --csv "$OUT/h200x2/all_float.csv" 2>&1 | tee "$OUT/measure.log"
stamp "sweep: all-reduces in half and bfloat16"
for dt in half bfloat16; do
  "$CCLAB" run --algo allreduce.nccl,allreduce.bidir,allreduce.bidir.ll,allreduce.bidir.flash,allreduce.bidir.stream,allreduce.bidir.copy,allreduce.ring,sol.bidir_copy \
    -b 8 -e "$MAXB" -f "$STEP" -w 5 -n 20 -d $dt --csv "$OUT/h200x2/allreduce_$dt.csv" 2>&1 | tee -a "$OUT/measure.log" | grep -E "^# (algo|out)"
done
stamp "small messages op by op (launch-bound latency without graphs)"
"$CCLAB" run --algo allreduce.nccl,allreduce.bidir,allreduce.ring -b 8 -e 64K -f 8 -w 5 -n 50 --graph 0 \
  --csv "$OUT/h200x2/small_opbyop_float.csv" 2>&1 | tee -a "$OUT/measure.log" | grep -E "^# (algo|out)"

stamp "summary"
python3 scripts/exec_summary.py "$OUT/h200x2/all_float.csv" | tee "$OUT/summary.txt"
for dt in half bfloat16; do
  echo "# $dt" | tee -a "$OUT/summary.txt"
  python3 scripts/exec_summary.py "$OUT/h200x2/allreduce_$dt.csv" | sed -n '1,20p' | tee -a "$OUT/summary.txt"
done
stamp "done"
