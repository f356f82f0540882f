#!/usr/bin/env bash
# Calibration on the 2 x H200 machine (device kind nvidia-h200-x2), from the repository root: builds
# `cclab` (or reuses $BUILD, e.g. the build-measure folder of scripts/measure.sh), runs the
# microbenchmarks (never a collective) and writes the fitted profile.
#
# Output ($OUT, default ./calibrate-out): profiles/h200x2.json (copy it to profiles/), the raw samples
# profiles/h200x2.measurements.json, calibrate.log. About 30-60 s of GPU time; hard limit $LIMIT s.
# The commit recorded in the profile comes from CCLAB_COMMIT (the GPU machine gets the tree without .git).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines
OUT=${OUT:-$PWD/calibrate-out}
GPUS=${GPUS:-2}
# The defaults name the 2 x H200 machine; on any other (a 2-GPU call may land on H100s) name the profile and its
# topology yourself, or its profile would pass for profiles/h200x2.json.
if [ -z "${NAME:-}" ] && command -v nvidia-smi >/dev/null; then
  machine="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l)"
  if [ "$(python3 scripts/check_device.py --name "$machine")" != h200x2 ]; then
    echo "calibrate.sh: this machine is $machine, not 2 x H200: set NAME (and TOPO)" >&2
    exit 1
  fi
fi
NAME=${NAME:-h200x2}
TOPO=${TOPO:-h200x2}
LIMIT=${LIMIT:-150}
BUDGET=${BUDGET:-75}
BUILD=${BUILD:-build-measure}
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT/profiles"
T0=$(date +%s)
stamp() { echo "## [calibrate $(($(date +%s) - T0)) s] $*"; }

if [ ! -x "$BUILD/cli/cclab" ]; then
  stamp "build ($BUILD)"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
    >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
# Always bring the binary up to date (a no-op when measure.sh just built it).
cmake --build "$BUILD" -j "$(nproc)" --target cclab >>"$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60; exit 1; }

stamp "microbenchmarks on $GPUS GPUs -> $OUT/profiles/$NAME.json"
timeout "$LIMIT" "$BUILD/cli/cclab" calibrate -g "$GPUS" --topo "$TOPO" --name "$NAME" --budget "$BUDGET" \
  --out "$OUT/profiles/$NAME.json" --measurements "$OUT/profiles/$NAME.measurements.json" 2>&1 |
  tee "$OUT/calibrate.log"
rc=${PIPESTATUS[0]}
stamp "done (rc=$rc)"
exit "$rc"
