#!/usr/bin/env bash
# A step of scripts/gpu_call.sh on 2 GPUs (~3.5 min with the build), a diagnostic: nccl-tests' all_gather_perf and
# broadcast_perf, whose calls the shim forwards, took 0.3-0.5 us more a call through it than NCCL alone at 8 B-256 KiB
# with their calls captured in CUDA graphs (-G 10, both runs of each), where alltoall, reduce_scatter and sendrecv did
# not. Asked here: is it what the shim sets up at init (CCLAB_DISABLE=1 sets up nothing), the order of the runs
# (NCCL alone, the shim and CCLAB_DISABLE=1 in turn, rotated, three rounds), or a different NCCL transport
# (NCCL_DEBUG=INFO's channel lines, one run each). nccl-tests carried as .carry/nccl-tests (see
# scripts/gpu_shim_large.sh).
#   bash .carry/gpu_call.sh <name> gpu_shim_forwarded
# Output under $1: one log per run; a table last (median time a call over 8 B-256 KiB, out of place, per run).
set -u
W=${1:?output folder}
export NCCL_NVLS_ENABLE=0
source scripts/shim_diag_build.sh  # SHIM, NT
run() {  # name, library (nccl, cclab, disabled), binary, then its arguments
  local name=$1 lib=$2 bin=$3
  shift 3
  local pre=()
  [ "$lib" = cclab ] && pre=(env LD_PRELOAD="$SHIM")
  [ "$lib" = disabled ] && pre=(env LD_PRELOAD="$SHIM" CCLAB_DISABLE=1)
  ${pre[@]+"${pre[@]}"} timeout 60 "$NT/$bin" -g 2 "$@" >"$W/$name.log" 2>&1
}
for b in all_gather broadcast; do
  for order in "nccl cclab disabled" "cclab disabled nccl" "disabled nccl cclab"; do
    for lib in $order; do
      i=$(ls "$W" | grep -c "^${b}_${lib}_graph_")
      run "${b}_${lib}_graph_$((i + 1))" "$lib" "${b}_perf" -b 8 -e 1M -f 2 -G 10
    done
  done
  for lib in nccl cclab; do
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,TUNING run "${b}_${lib}_info" "$lib" "${b}_perf" -b 8 -e 8 -f 2 -G 10
  done
done
python3 - "$W" <<'PY'
import glob, os, re, statistics, sys
w = sys.argv[1]
print("run                              median us, 8 B-256 KiB (out of place)")
for path in sorted(glob.glob(os.path.join(w, "*_graph_*.log"))):
    t = [float(l.split()[5]) for l in open(path)
         if re.match(r"^ +\d+ +\d+ ", l) and 8 <= int(l.split()[0]) <= 262144]
    print(f"{os.path.basename(path)[:-4]:32s} {statistics.median(t):.2f}" if t else f"{path}: no rows")
for path in sorted(glob.glob(os.path.join(w, "*_info.log"))):
    lines = sorted({re.sub(r"^\S+:\d+:\d+ ", "", l.strip()) for l in open(path) if " via " in l})
    print(os.path.basename(path)[:-4] + ":", len(lines), "transport lines;", " | ".join(lines[:3]))
PY
