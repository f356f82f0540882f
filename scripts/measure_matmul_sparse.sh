#!/usr/bin/env bash
# Measures collective matmul and sparse all-reduce on this node's GPUs through `cclab run` (made for
# 2 x H200, device kind nvidia-h200-x2), writes contract CSV records and prints the goals of issue 7 last.
#
#   OUT=dir bash scripts/measure_matmul_sparse.sh     # records into dir (default results/h200x2)
#
# Environment: OUT (output folder), CCLAB (the binary; default $BUILD/cli/cclab, built when missing),
# BUILD (build folder, default build-mm), CCLAB_COMMIT (commit column, default git HEAD), PROFILE (the
# simulator's profile for the crossover comparison, default profiles/h200x2.json), MMSP_QUICK=1 (small
# sizes, for a smoke run), MMSP_SPARSE_BIG=0 (skip the 41 GB table), MMSP_RANKS (ranks of every run, default 2;
# a 4-GPU machine's records name all its GPUs; matmul shapes are per shard), MMSP_AUTOTUNE=1 (collective matmul
# products and references through the cuBLASLt autotune, exec/mmsp/cmatmul_lt.cuh; default 0: cublasGemmEx). Writes 4 files into $OUT:
# mmsp_cmatmul.csv, mmsp_sparse.csv, mmsp_crossover.csv, mmsp_summary.txt (scratch goes to a temp folder).
#
# What runs (one process per command, so that a failure in one keeps the others' records):
#  1. collective matmul, shapes 1024,4096,4096 and 4096,8192,8192 (the issue's goal shapes),
#     fp16 and bf16, every algorithm (`--algo all`): each checked against an fp32 cuBLAS reference, with
#     one full cuBLAS matmul and the shard matmul timed in the same process (rows matmul.cublas_*).
#  2. sparse all-reduce of the issue's table, 5,000,000 rows x 2048 float32 (41 GB dense per GPU), at
#     densities 0.1%, 1%, 10%, uniform and Zipf, both union builds, the dense NCCL all-reduce of the
#     table; at 1% (50,000 local rows) also the host-staged exchange and the index-matching kernels.
#  3. the sparse/dense crossover: forced sparse, forced dense and automatic over densities 5%..100% on a
#     500,000 x 2048 table (4 GB: the same row length, so the same per-row cost balance, in a tenth of
#     the time); the summary sets the simulator's crossover (cclab compare --predict of the same rows on
#     $PROFILE) beside the measured one.
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on the lent machines (KINDS.md)
cd "$(dirname "$0")/.."
OUT=${OUT:-results/h200x2}
BUILD=${BUILD:-build-mm}
CCLAB=${CCLAB:-$BUILD/cli/cclab}
PROFILE=${PROFILE:-profiles/h200x2.json}
RANKS=${MMSP_RANKS:-2}
mkdir -p "$OUT"
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T0=$SECONDS

if [ ! -x "$CCLAB" ]; then
  gen="Unix Makefiles"
  command -v ninja >/dev/null && gen=Ninja
  echo "measure_matmul_sparse: building cclab in $BUILD ($gen)"
  mkdir -p "$BUILD"
  cmake -S . -B "$BUILD" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
    -DCCLAB_TESTS=OFF >"$BUILD/mmsp_build.log" 2>&1 || { tail -30 "$BUILD/mmsp_build.log"; exit 2; }
  cmake --build "$BUILD" --target cclab -j "$(nproc)" >>"$BUILD/mmsp_build.log" 2>&1 ||
    { tail -40 "$BUILD/mmsp_build.log"; exit 2; }
fi
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader || true

status=0
run() {  # name timeout_s args... : one `cclab run`, its CSV in $TMP/name.csv
  local name=$1 limit=$2
  shift 2
  echo "== [$((SECONDS - T0)) s] cclab run $*"
  timeout "$limit" "$CCLAB" run "$@" --csv "$TMP/$name.csv"
  local rc=$?
  [ $rc = 0 ] || { echo "== $name: exit $rc"; status=1; }
}
# Rows of several runs into one file (columns: the union, in first-seen order).
merge() {  # out in...
  python3 - "$@" <<'EOF'
import csv, os, sys
out, ins = sys.argv[1], [p for p in sys.argv[2:] if os.path.exists(p)]
rows, cols = [], []
for p in ins:
    with open(p) as f:
        for r in csv.DictReader(f):
            rows.append(r)
            cols += [c for c in r if c not in cols]
if rows:
    with open(out + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    os.replace(out + ".tmp", out)
EOF
}

if [ "${MMSP_QUICK:-0}" = 1 ]; then
  shapes=(256,512,512)
  big=(--rows 200000 --dim 256)
  cross=(--rows 50000 --dim 256 --density 0.2,0.6,0.9,1.0)
  mm_iters=(-w 2 -n 5)
else
  shapes=(1024,4096,4096 4096,8192,8192)
  big=(--rows 5000000 --dim 2048)
  cross=(--rows 500000 --dim 2048 --density 0.05,0.2,0.4,0.6,0.75,0.85,0.9,0.95,1.0)
  mm_iters=(-w 10 -n 50)
fi

mm=()
for s in "${shapes[@]}"; do
  for d in half bfloat16; do
    run "mm_${s//,/x}_$d" 60 --algo all -g "$RANKS" --shape "$s" -d "$d" "${mm_iters[@]}" --tune "matmul_autotune=${MMSP_AUTOTUNE:-0}"
    mm+=("$TMP/mm_${s//,/x}_$d.csv")
  done
done
merge "$OUT/mmsp_cmatmul.csv" "${mm[@]}"

if [ "${MMSP_SPARSE_BIG:-1}" = 1 ]; then
  run sp_one 90 --algo allreduce.sparse,allreduce.nccl,allreduce.sparse_hoststaged,index_match.quadratic,index_match.binsearch,index_match.window \
    -g "$RANKS" "${big[@]}" --density 0.01 --dist uniform,zipf --tune union=allgather+gather_bcast,dense_iters=3 -w 2 -n 5
  run sp_rest 90 --algo allreduce.sparse,allreduce.nccl -g "$RANKS" "${big[@]}" --density 0.001,0.1 --dist uniform,zipf \
    --tune union=allgather+gather_bcast,dense_iters=3 -w 2 -n 5
  merge "$OUT/mmsp_sparse.csv" "$TMP/sp_one.csv" "$TMP/sp_rest.csv"
fi

run cross 120 --algo allreduce.sparse,allreduce.nccl -g "$RANKS" "${cross[@]}" --dist uniform,zipf \
  --tune path=sparse+dense+auto,union=allgather,dense_iters=3 -w 1 -n 3
[ -f "$TMP/cross.csv" ] && cp "$TMP/cross.csv" "$OUT/mmsp_crossover.csv"

# The simulator's prediction of every crossover row (the same rows, forced paths kept).
if [ -f "$OUT/mmsp_crossover.csv" ] && [ -f "$PROFILE" ]; then
  "$CCLAB" compare --measured "$OUT/mmsp_crossover.csv" --topo "$PROFILE" --csv "$TMP/cross_pred.csv" >/dev/null 2>&1 ||
    echo "== cclab compare of the crossover rows failed"
fi
echo "== [$((SECONDS - T0)) s] done"

# The short table: the goals of issue 7, read back from the records.
python3 scripts/mmsp_summary.py "$OUT" "$TMP/cross_pred.csv" | tee "$OUT/mmsp_summary.txt"
exit $status
