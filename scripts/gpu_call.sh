#!/usr/bin/env bash
# One device call on a GPU machine (2 x H200: kind nvidia-h200-x2; 2 x H100, 4 GPUs: -x4) that builds once and
# runs the named steps on every GPU of the machine, so
# that a profile and the records it is compared with come from one machine (the host's launch times move
# 20-30% between calls: docs/findings/2026-11-23-nccl-rings-unheld-launch-small-sizes.md). Here, before the
# call (the device gets the working tree; .carry/ is ignored, so it travels as a carried path):
#   rm -rf .carry/src && mkdir -p .carry/src && git archive HEAD | tar -x -C .carry/src &&
#     git rev-parse --short=12 HEAD > .carry/commit && cp scripts/gpu_call.sh .carry/
# then run, carrying [".carry"]:  bash .carry/gpu_call.sh <name> topo calib mmsp measure [<script>] (measure last:
# its sweep takes what is left of the call)
# Steps: topo (the machine's nvidia-smi matrix and NCCL's XML dump, cclab topo --check against the preset, ~10 s),
# smoke (scripts/gpu_smoke_twoshot.sh, ~30 s), calib (scripts/calibrate.sh, ~55 s), measure
# (scripts/measure.sh, ~110 s on 2 GPUs; its sweep stops at the call's limit), mmsp (scripts/gpu_mmsp.sh,
# ~40 s), or the name of a script in .carry/ (run with the output folder; $W/bin/cclab is the build).
# The build takes ~60-75 s. Everything lands in $OUT/<name>.tgz (packed again before each step) (unpack it here; publish with
# scripts/publish_measure.sh <dir>/measure, profiles from <dir>/calib/profiles, scripts/mmsp_unpack.sh
# <dir>/mmsp/records.txt).
set -u
name=${1:?call name}
shift
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on the shared machines
ROOT=$PWD
cd .carry/src || exit 2
export CCLAB_COMMIT=$(cat ../commit)
W=$OUT/$name
mkdir -p "$W"
T0=$(date +%s)
stamp() { echo "## [call $(($(date +%s) - T0)) s] $*" | tee -a "$W/call.log"; }
GPUS=$(nvidia-smi -L | wc -l)
MACHINE="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$GPUS"
FOLDER=$(python3 scripts/check_device.py --name "$MACHINE")  # h200x2, h100x2, h200x4: results/<FOLDER>
case $FOLDER in  # the topology preset the machine's profile applies to
  h200x2) TOPO=h200x2 ;;
  h100x*) TOPO=dgx-h100 ;;
  *) TOPO=hgx-h200 ;;
esac
stamp "machine: $MACHINE (records: results/$FOLDER, profile: profiles/$FOLDER.json on topology $TOPO)"
stamp "build (commit $CCLAB_COMMIT)"
cmake -S . -B build-measure -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
  >"$W/build.log" 2>&1 &&
  cmake --build build-measure -j "$(nproc)" --target cclab test_exec_gpu test_exec_cli test_exec_runner \
    test_exec_mmsp_gpu test_exec_fused_gpu >>"$W/build.log" 2>&1
rc=$?
stamp "build rc=$rc"
if [ $rc -ne 0 ]; then
  grep -E "error|FAILED" -A3 "$W/build.log" | head -40
  tar czf "$OUT/$name.tgz" -C "$W" .
  exit 1
fi
mkdir -p "$W/bin" && cp build-measure/cli/cclab build-measure/tests/exec/test_exec_* "$W/bin/" 2>/dev/null
BIN=$W/bin
for step in "$@"; do
  tar czf "$OUT/$name.tgz" --exclude=./bin -C "$W" .  # what is done so far comes back even if the call is cut
  case $step in
    calib)
      stamp calib
      NAME=$FOLDER TOPO=$TOPO GPUS=$GPUS OUT=$W/calib LIMIT=280 BUDGET=200 BUILD=build-measure timeout 300 \
        bash scripts/calibrate.sh >"$W/calib.out" 2>&1
      stamp "calib rc=$?"
      tail -5 "$W/calib.out"
      ;;
    measure)
      stamp measure
      # The sweep skips what would run past the call's end (CALL_S: the device's limit per command, less packing).
      left=$((${CALL_S:-590} - ($(date +%s) - T0) - 20))
      OUT=$W/measure CCLAB_PREBUILT=$BIN DEADLINE=$left timeout "$left" bash scripts/measure.sh >"$W/measure.out" 2>&1
      stamp "measure rc=$?"
      tail -25 "$W/measure.out"
      ;;
    mmsp)
      stamp mmsp
      # The sparse crossover is predicted from this call's profile where calib ran first.
      prof=$W/calib/profiles/$FOLDER.json
      [ -f "$prof" ] || prof=profiles/$FOLDER.json
      PROFILE=$prof BIN=$BIN OUT=$W timeout 200 bash scripts/gpu_mmsp.sh >"$W/mmsp.out" 2>&1
      stamp "mmsp rc=$?"
      tail -12 "$W/mmsp.out"
      ;;
    topo)
      # The machine's own descriptions (nvidia-smi's matrix and -q, NCCL's XML dump) checked against the preset.
      stamp topo
      mkdir -p "$W/topo"
      { nvidia-smi topo -m && nvidia-smi -q; } >"$W/topo/nvidia-smi-topo-m.txt" 2>&1
      NCCL_TOPO_DUMP_FILE=$W/topo/nccl-topo.xml timeout 60 "$BIN/cclab" run --algo allreduce.nccl -b 8 -e 8 -w 1 -n 1 \
        >"$W/topo/nccl_run.log" 2>&1
      for f in nvidia-smi-topo-m.txt nccl-topo.xml; do
        timeout 30 "$BIN/cclab" topo "$W/topo/$f" --check "$TOPO" --matrix >"$W/topo/check_${f%%.*}.txt" 2>&1
        echo "topo check of $f against $TOPO: rc=$? $(grep -A8 'topology check' "$W/topo/check_${f%%.*}.txt" | tr '\n' ' ')"
      done | tee -a "$W/call.log"
      ;;
    smoke)
      stamp smoke
      CCLAB=$BIN/cclab timeout 200 bash scripts/gpu_smoke_twoshot.sh "$W/smoke" >"$W/smoke.out" 2>&1
      stamp "smoke rc=$?"
      tail -40 "$W/smoke.out"
      ;;
    *)
      if [ -f "$ROOT/.carry/$step.sh" ]; then
        stamp "$step"
        # A step that hangs must not take the call with it: killed at the call's end (CALL_S), less packing.
        left=$((${CALL_S:-590} - ($(date +%s) - T0) - 20))
        CCLAB=$BIN/cclab timeout -k 10 "$left" bash "$ROOT/.carry/$step.sh" "$W" >"$W/$step.out" 2>&1
        stamp "$step rc=$?"
        tail -20 "$W/$step.out"
      else
        stamp "no step '$step'"
      fi
      ;;
  esac
done
rm -rf "$W/bin"
tar czf "$OUT/$name.tgz" -C "$W" .
stamp packed
