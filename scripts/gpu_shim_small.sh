#!/usr/bin/env bash
# A step of scripts/gpu_call.sh on 2 GPUs (~2.5 min with the build), a diagnostic: nccl-tests' first size through
# the shim (8 B out of place took ~1.3 ms a call eager, 4 us in graphs, where 16 B takes 9 and 2 us), beside the
# executor's ll kernel at the same sizes, eager and in graphs. nccl-tests carried as .carry/nccl-tests (see
# scripts/gpu_shim_large.sh).
#   bash .carry/gpu_call.sh <name> gpu_shim_small      (PART=why: only the second group, below)
# The second group asks what stalls the first timed loop after nccl-tests' one-call warm-up: the first chain of
# back-to-back launches (-w 2 queues two per size before the timed loop; ll launched without PDL), lazy module
# loading (CUDA_MODULE_LOADING=EAGER), the first size itself (-b 16).
# Output under $1: one log per run (CCLAB_DEBUG=1 on the first of each size), exec_*.csv; a short table last.
set -u
W=${1:?output folder}
CCLAB=${CCLAB:?the cclab binary}
export NCCL_NVLS_ENABLE=0
source scripts/shim_diag_build.sh  # SHIM, NT
run() {  # name, then all_reduce_perf's arguments; through the shim
  local name=$1
  shift
  LD_PRELOAD=$SHIM timeout 60 $NT/all_reduce_perf -g 2 "$@" >"$W/$name.log" 2>&1
  echo "$name ($*): $(grep -E '^ +[0-9]+ +[0-9]+ ' "$W/$name.log" | awk '{printf "%s B %s / %s us; ", $1, $6, $10}')"
}
why() {
  run why_w1 -b 8 -e 16 -f 2 -n 20 -w 1
  run why_w2 -b 8 -e 16 -f 2 -n 20 -w 2
  CCLAB_TUNE=ll_pdl=0 run why_w1_nopdl -b 8 -e 16 -f 2 -n 20 -w 1
  CUDA_MODULE_LOADING=EAGER run why_w1_eager_loading -b 8 -e 16 -f 2 -n 20 -w 1
  run why_w1_from16 -b 16 -e 32 -f 2 -n 20 -w 1
  run why_w1_n1 -b 8 -e 16 -f 2 -n 1 -w 1
  CCLAB_DISABLE=1 run why_w1_disabled -b 8 -e 16 -f 2 -n 20 -w 1
}
if [ "${PART:-}" = why ]; then
  why
  exit 0
fi
CCLAB_DEBUG=1 run debug8 -b 8 -e 16 -f 2 -n 3 -w 1
run eager8 -b 8 -e 8 -n 20 -w 5
run eager8_first16 -b 16 -e 32 -f 2 -n 20 -w 5
run eager4 -b 4 -e 4 -n 20 -w 5
run eager12 -b 12 -e 12 -n 20 -w 5
run eager8_half -b 8 -e 8 -n 20 -w 5 -d half
run eager8_twice -b 8 -e 16 -f 2 -n 20 -w 5 -N 2
run graph8 -b 8 -e 16 -f 2 -n 20 -w 5 -G 20
run eager8_nocheck -b 8 -e 16 -f 2 -n 20 -w 5 -c 0
timeout 60 $NT/all_reduce_perf -g 2 -b 8 -e 16 -f 2 -n 20 -w 5 >"$W/nccl_alone.log" 2>&1
echo "nccl alone: $(grep -E '^ +[0-9]+ +[0-9]+ ' "$W/nccl_alone.log" | awk '{printf "%s B %s / %s us; ", $1, $6, $10}')"
for g in 1 0; do
  timeout 60 "$CCLAB" run --algo allreduce.bidir.ll -b 4 -e 64 -f 2 --graph $g --csv "$W/exec_graph$g.csv" \
    >"$W/exec_graph$g.log" 2>&1
  echo "executor ll, graph $g: $(python3 -c 'import csv, sys
print("; ".join(r["bytes"] + " B " + str(round(float(r["time_us"]), 2)) + " us" for r in csv.DictReader(open(sys.argv[1]))))' "$W/exec_graph$g.csv")"
done
