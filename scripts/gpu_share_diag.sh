#!/usr/bin/env bash
# Diagnostic (docs/findings/2026-11-25-buffer-placement-rank-modulo.md), ONE GPU (device kind nvidia-h100-x1
# or nvidia-h200; ~2.5 min with the build): the bidir kernels of the executor against their microbenchmarks,
# both "GPUs" on one device.
#   OUT=<folder> bash scripts/gpu_share_diag.sh
# The microbenchmarks need two GPUs; here a patched copy of the tree (in a temporary folder, never this
# checkout) puts both sides of exec/microbench/microbench_bidir.cu on GPU 0 and launches without PDL (PDL launches of two
# sides sharing a GPU hang, as the executor's do: it turns PDL off under --share-gpus). Sizes stay at 4 MiB and
# below: larger grids of the two sides cannot all be resident on one GPU (their handshakes then never meet), so
# the stream mode's ring (132 lanes of 1 MiB) is not measured. The executor runs each mode with --share-gpus.
# Timings are not the 2-GPU machine's (no NVLink): the point is the gap between the executor's kernel and its
# microbenchmark (a diagnostic series: the model prices the kernels from mechanisms), at each size, on the same GPU
# in one call.
set -u
export NCCL_NVLS_ENABLE=0
OUT=${OUT:?output folder}
W=$OUT/share_diag
mkdir -p "$W"
T0=$(date +%s)
SRC=$(mktemp -d)
trap 'rm -rf "$SRC"' EXIT
tar --exclude=./build --exclude='./build-*' --exclude=./.git --exclude=./.carry -cf - . | tar -xf - -C "$SRC"
python3 - "$SRC" <<'PY' || exit 1
import sys
root = sys.argv[1]
def edit(path, pairs):
    s = open(f"{root}/{path}").read()
    for old, new in pairs:
        assert old in s, f"{path}: the diagnostic's patch no longer applies near: {old[:60]!r}"
        s = s.replace(old, new, 1)
    open(f"{root}/{path}", "w").write(s)
edit("exec/microbench/microbench_bidir.cu", [
    ("    s.dev = g;\n    CCLAB_CUDA(cudaSetDevice(g));\n    CCLAB_CUDA(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, g));\n"
     "    const cudaError_t pe = cudaDeviceEnablePeerAccess(1 - g, 0);",
     "    s.dev = 0;\n    CCLAB_CUDA(cudaSetDevice(0));\n    CCLAB_CUDA(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, 0));\n"
     "    const cudaError_t pe = cudaErrorPeerAccessAlreadyEnabled;"),
    ("cudaGraphLaunch(exec[s.dev], s.work)", "cudaGraphLaunch(exec[&s - s_], s.work)"),
    ("  bench_nccl();", "  // NCCL refuses two ranks on one GPU: not measured here"),
    ("  if (opt.gpus < 2) return;\n  {\n    BidirBench b(opt, out, warnings);\n    b.run();\n  }",
     "  {\n    BidirBench b(opt, out, warnings);\n    b.run();\n  }\n  return;"),
])
edit("exec/runtime/device_util.cuh", [
    ("  cudaLaunchConfig_t cfg = {};",
     "  kernel<<<blocks, threads, 0, s>>>(args...);  // diagnostic build: no PDL\n  return cudaGetLastError();\n"
     "  cudaLaunchConfig_t cfg = {};"),
])
PY
(cd "$SRC" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF &&
  cmake --build build -j "$(nproc)" --target cclab) >"$W/build.log" 2>&1 ||
  { grep -E "error" -A3 "$W/build.log" | head -30; exit 1; }
echo "build $(($(date +%s) - T0)) s"
C=$SRC/build/cli/cclab
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 "$C" calibrate -g 1 --topo h200x2 --max-bytes 4M --budget 120 --out "$W/p.json" \
  --measurements "$W/m.json" >"$W/calibrate.log" 2>&1
echo "calibrate rc=$? ($(($(date +%s) - T0)) s)"
for mode in ll flash push lamport; do
  timeout 60 "$C" run --algo allreduce.bidir -g 2 --share-gpus -w 20 -n 100 --inplace 0 -b 8 -e 1M -f 4 \
    --tune mode=$mode --csv "$W/exec_$mode.csv" >/dev/null 2>>"$W/run.log"
done
python3 - "$W" <<'PY'
import csv, json, os, sys
W = sys.argv[1]
samples = {}
for s in json.load(open(f"{W}/m.json"))["series"]:
    samples.setdefault(s["name"], []).extend(s["samples"])
def median(name, b):
    v = sorted(p["time_us"] for p in samples.get(name, []) if p["bytes"] == b)
    return v[len(v) // 2] if v else None
# Each mode's microbenchmark as the model reads it (sim/paths_bidir.cpp): the series with 100 launches per graph.
series = {"ll": ["bidir.ll.n100", "bidir.ll.args.n100"], "flash": ["bidir.pull.n100", "bidir.pull.own.n100"],
          "push": ["bidir.push.n100", "bidir.push.kernelloop.float.n100"],
          "lamport": ["bidir.lamport.t256.n100", "bidir.lamport.t256.kernelloop.float.n100"]}
print(f"{'mode':8} {'bytes':>8} {'exec us':>8}  microbenchmarks (us)")
for mode, names in series.items():
    f = f"{W}/exec_{mode}.csv"
    if not os.path.exists(f):
        print(f"{mode:8} (no executor records: see run.log)")
        continue
    for r in csv.DictReader(open(f)):
        b = int(r["bytes"])
        cols = "  ".join(f"{n} {m:.2f}" if (m := median(n, b)) else f"{n} -" for n in names)
        print(f"{mode:8} {b:>8} {float(r['time_us']):8.2f}  {cols}")
PY
