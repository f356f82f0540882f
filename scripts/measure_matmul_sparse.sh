#!/usr/bin/env bash
# Measures collective matmul and sparse all-reduce on this node's GPUs (made for 2 x H200, device kind
# nvidia-h200-x2) and writes contract CSV records, then prints a short table of the goals last.
#
#   OUT=dir bash scripts/measure_matmul_sparse.sh     # records into dir (default results/h200x2)
#
# Environment: OUT (output folder), BUILD (build folder, default build-mm; built when the driver is
# missing), CCLAB_COMMIT (commit column, default git HEAD), MMSP_TESTS=1 (also build and run the GPU
# tests test_cmatmul and test_sparse, log in $OUT/mmsp_tests.log), MMSP_QUICK=1 (small sizes, for a smoke run).
# Writes at most 5 files into $OUT: mmsp_cmatmul.csv, mmsp_sparse.csv, mmsp_crossover.csv, mmsp_summary.txt
# (+ mmsp_tests.log); the build log goes to $BUILD/mmsp_build.log.
#
# What runs (one process per part, so that a failure in one keeps the others' records):
#  1. collective matmul, 2 ranks, shapes 1024,4096,4096 and 4096,8192,8192 (the issue's goal shapes),
#     fp16 and bf16: every algorithm checked against an fp32 cuBLAS reference, with one full cuBLAS
#     matmul and the shard matmul timed in the same process.
#  2. sparse all-reduce of the issue's table, 5,000,000 rows x 2048 float32 (41 GB dense per GPU), at
#     densities 0.1%, 1%, 10%, uniform and Zipf: both union builds, the dense NCCL all-reduce of the
#     table once, the host-staged exchange and the index-matching kernels at 1% (50,000 local rows).
#  3. the sparse/dense crossover: forced sparse, forced dense and automatic over densities 5%..100%
#     on a 500,000 x 2048 table (4 GB: the same row length, so the same per-row cost balance, in a
#     tenth of the time).
set -euo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on the lent machines (KINDS.md)
cd "$(dirname "$0")/.."
OUT=${OUT:-results/h200x2}
BUILD=${BUILD:-build-mm}
mkdir -p "$OUT"
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
BENCH="$BUILD/exec/cclab_mmsp_bench"
JOBS=$(nproc)

tests=OFF
[ "${MMSP_TESTS:-0}" = 1 ] && tests=ON
if [ ! -x "$BENCH" ] || [ "$tests" = ON ]; then
  gen="Unix Makefiles"
  command -v ninja >/dev/null && gen=Ninja
  echo "measure_matmul_sparse: building cclab_mmsp_bench in $BUILD ($gen, $JOBS jobs)"
  t0=$(date +%s)
  mkdir -p "$BUILD"
  cmake -S . -B "$BUILD" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
    -DCCLAB_TESTS=$tests >"$BUILD/mmsp_build.log" 2>&1 || { tail -30 "$BUILD/mmsp_build.log"; exit 2; }
  cmake --build "$BUILD" --target cclab_mmsp_bench -j "$JOBS" >>"$BUILD/mmsp_build.log" 2>&1 || { tail -40 "$BUILD/mmsp_build.log"; exit 2; }
  echo "measure_matmul_sparse: built in $(( $(date +%s) - t0 )) s"
fi
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader || true

status=0
if [ "${MMSP_QUICK:-0}" = 1 ]; then
  shapes=(--shape 256,512,512)
  big=(--rows 200000 --dim 256 --density 0.01,0.1)
  cross=(--rows 50000 --dim 256 --density 0.2,0.6,0.9,1.0)
else
  shapes=(--shape 1024,4096,4096 --shape 4096,8192,8192)
  big=(--rows 5000000 --dim 2048 --density 0.001,0.01,0.1)
  cross=(--rows 500000 --dim 2048 --density 0.05,0.2,0.4,0.6,0.75,0.85,0.9,0.95,1.0)
fi

echo "== collective matmul"
"$BENCH" matmul --ranks 2 "${shapes[@]}" --dtype half,bfloat16 -w 10 -n 50 --csv "$OUT/mmsp_cmatmul.csv" || status=1

echo "== sparse all-reduce"
"$BENCH" sparse --ranks 2 "${big[@]}" --dist uniform,zipf --paths auto --union allgather,gather_bcast \
  --host-at 0.01 --match-at 0.01 -w 2 -n 5 --dense-iters 3 --csv "$OUT/mmsp_sparse.csv" || status=1

echo "== sparse/dense crossover"
"$BENCH" sparse --ranks 2 "${cross[@]}" --dist uniform,zipf --paths sparse,dense,auto --union allgather \
  -w 1 -n 3 --dense-iters 3 --crossover --csv "$OUT/mmsp_crossover.csv" || status=1

if [ "$tests" = ON ]; then  # after the measurements, so that their records come back first
  echo "== GPU tests (test_cmatmul, test_sparse)"
  if cmake --build "$BUILD" --target test_cmatmul test_sparse -j "$JOBS" >"$OUT/mmsp_tests.log" 2>&1; then
    { "$BUILD/tests/exec/test_cmatmul" && "$BUILD/tests/exec/test_sparse"; } >>"$OUT/mmsp_tests.log" 2>&1 || status=1
  else
    echo "test build failed (see mmsp_tests.log)"; status=1
  fi
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|^\[  FAILED" "$OUT/mmsp_tests.log" || true
fi

# The short table: the goals of issue 7, read back from the records.
(python3 - "$OUT" <<'EOF' | tee "$OUT/mmsp_summary.txt"
import csv, os, sys
out = sys.argv[1]
def rows(name):
    p = os.path.join(out, name)
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []
print("\n# summary (goals of issue 7)")
print(f"{'algo':34} {'shape':16} {'dtype':9} {'time_us':>10} {'TFLOP/s':>8} {'util':>6} {'/full':>6} {'x_nccl':>7} {'wrong':>6}")
for r in rows("mmsp_cmatmul.csv"):
    print(f"{r['algo']:34} {r['shape']:16} {r['dtype']:9} {float(r['time_us']):10.1f} {r.get('tflops',''):>8} "
          f"{r.get('util_vs_bound',''):>6} {r.get('ratio_vs_cublas_full',''):>6} {r.get('speedup_vs_nccl_cublas',''):>7} {r['wrong']:>6}")
print(f"\n{'algo':27} {'density':>8} {'dist':8} {'mode':6} {'path':6} {'union':12} {'time_us':>10} {'x_dense':>8} {'x_quad':>7} {'wrong':>6}")
for r in rows("mmsp_sparse.csv"):
    print(f"{r['algo']:27} {r.get('density',''):>8} {r.get('dist',''):8} {r.get('mode',''):6} {r.get('path',''):6} "
          f"{r.get('union_mode',''):12} {float(r['time_us']):10.1f} {r.get('speedup_vs_dense_nccl',''):>8} "
          f"{r.get('speedup_vs_quadratic',''):>7} {r['wrong']:>6}")
cx = {}
for r in rows("mmsp_crossover.csv"):
    if r.get("measured_crossover"):
        cx[r.get("dist")] = r["measured_crossover"]
for d, v in cx.items():
    first = rows("mmsp_crossover.csv")[0]
    print(f"measured crossover density ({d}, {first.get('rows')} x {first.get('dim')}): {v}")
EOF
) || true
exit $status
