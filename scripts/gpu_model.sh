#!/usr/bin/env bash
# GPU run for helper `model` (issue 8): the calibration microbenchmarks on the 2 x H200 machine (never a
# collective), fitted into a profile. Takes the prebuilt `cclab` from $BIN; writes $OUT/model/h200x2.json
# (the profile, raw samples embedded) and $OUT/model/calibrate.log; prints a short summary last.
#   BIN=.carry/bin OUT=/tmp/out bash scripts/gpu_model.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines
: "${BIN:?set BIN to the folder holding the prebuilt cclab}"
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT/model"
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
LOG="$OUT/model/calibrate.log"
T0=$(date +%s)
# 50 s of microbenchmark budget inside a 60 s limit; if that run fails (e.g. NCCL's send/recv hangs), once
# more without the NCCL series and the flag chains (the whole script stays under 90 s).
timeout 60 "$BIN/cclab" calibrate -g 2 --topo h200x2 --name h200x2 --budget 50 --out "$OUT/model/h200x2.json" \
  >"$LOG" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "## first calibration failed (rc=$rc): again without NCCL send/recv and flag chains" >>"$LOG"
  CCLAB_CALIBRATE_SKIP_NCCL=1 CCLAB_CALIBRATE_SKIP_FLAGS=1 timeout 25 "$BIN/cclab" calibrate -g 2 --topo h200x2 --name h200x2 --budget 18 \
    --out "$OUT/model/h200x2.json" >>"$LOG" 2>&1
  rc=$?
fi
echo "## gpu_model: cclab calibrate rc=$rc in $(($(date +%s) - T0)) s (commit $CCLAB_COMMIT)"
grep -E "warning|error" "$LOG" | head -10
# Summary: the latencies and graph costs, then the fitted peaks (the log's fit table).
grep -E "^  (latency|graph)\.[a-z_0-9.]+: " "$LOG"
sed -n '/^# series/,/^# model parameters/p' "$LOG" | grep -vE "^  (latency|graph)\." | head -40
exit "$rc"
