#!/usr/bin/env bash
# Collective matmul and sparse all-reduce (issue 7) on a GPU machine (every GPU of it), from prebuilt binaries:
#   BIN=<folder with cclab and test_exec_mmsp_gpu> OUT=<folder> bash scripts/gpu_mmsp.sh
# 1. scripts/measure_matmul_sparse.sh with CCLAB=$BIN/cclab (on every GPU of the machine): every `cclab run` command that makes the
#    records of results/h200x2/mmsp_*.csv (both goal shapes in fp16/bf16, the 5M x 2048 table at
#    0.1/1/10 %, the crossover sweep) and the summary of the goals;
# 2. the GPU test of those commands (2 ranks, and 4 ranks sharing 2 GPUs), bounded in time.
# Writes $OUT/mmsp/log.txt and $OUT/mmsp/records.txt (the four files of step 1, each after a line
# "### <name>": scripts/mmsp_unpack.sh puts them into results/h200x2/); prints the summary last.
set -u
: "${BIN:?set BIN to the folder of the prebuilt binaries}"
: "${OUT:?set OUT to the output folder}"
export NCCL_NVLS_ENABLE=0
BIN=$(cd "$BIN" && pwd) || exit 2
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
cd "$(dirname "$0")/.."
DIR="$OUT/mmsp"
mkdir -p "$DIR"
LOG="$DIR/log.txt"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
START=$SECONDS
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
echo "# gpu_mmsp.sh at $(date -u +%FT%TZ), commit ${CCLAB_COMMIT:-unknown}" >"$LOG"

# 1. the measurements (the test comes second: the records are what the 90 s must not lose)
CCLAB="$BIN/cclab" OUT="$TMP/rec" MMSP_RANKS=$(nvidia-smi -L | wc -l) bash scripts/measure_matmul_sparse.sh >"$TMP/measure.txt" 2>&1
rc=$?
cat "$TMP/measure.txt" >>"$LOG"
echo "# measure_matmul_sparse.sh rc=$rc ($((SECONDS - START)) s)" >>"$LOG"
: >"$DIR/records.txt"
for f in mmsp_cmatmul.csv mmsp_sparse.csv mmsp_crossover.csv mmsp_summary.txt; do
  [ -f "$TMP/rec/$f" ] && { echo "### $f"; cat "$TMP/rec/$f"; } >>"$DIR/records.txt"
done

# 2. the GPU test of `cclab run --shape / --rows` (2 GPUs, and 4 ranks sharing them)
if [ -x "$BIN/test_exec_mmsp_gpu" ]; then
  left=$((100 - (SECONDS - START)))
  [ $left -lt 15 ] && left=15
  CCLAB_BIN="$BIN/cclab" timeout $left "$BIN/test_exec_mmsp_gpu" >"$TMP/test.txt" 2>&1
  trc=$?
  cat "$TMP/test.txt" >>"$LOG"
  tests="test_exec_mmsp_gpu rc=$trc: $(grep -cE '^\[       OK' "$TMP/test.txt") ok, $(grep -cE '^\[  FAILED  \].*\(' "$TMP/test.txt") failed"
else
  tests="no $BIN/test_exec_mmsp_gpu: test skipped"
fi
echo "# $tests ($((SECONDS - START)) s)" >>"$LOG"

grep -E "^== .*exit|FAILED" "$TMP/measure.txt" | head -10
cat "$TMP/rec/mmsp_summary.txt" 2>/dev/null || tail -20 "$TMP/measure.txt"
echo "# measure rc=$rc; $tests; $((SECONDS - START)) s"
