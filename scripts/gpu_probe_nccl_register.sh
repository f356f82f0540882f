#!/usr/bin/env bash
# Probe (gpu_call.sh step) of why a NCCL collective timed first in its process runs ~1 us faster than the same
# size after other rows of a sweep (docs/findings/2026-11-28-nccl-estimate-order.md): the sweep and single sizes
# alone in a process, with NCCL's defaults and with its registration of captured user buffers off
# (NCCL_GRAPH_REGISTER=0), and with local registration off as well (NCCL_LOCAL_REGISTER=0).
# Records: <out>/probe_<setting>_<name>.csv; the last lines are a table of time (us), sweep against alone.
# Run: cp scripts/gpu_probe_nccl_register.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_nccl_register
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
ALGOS="allreduce.nccl,allgather.nccl"
for setting in default graphreg0 noreg; do
  case $setting in
    default) envs=() ;;
    graphreg0) envs=(NCCL_GRAPH_REGISTER=0) ;;
    noreg) envs=(NCCL_GRAPH_REGISTER=0 NCCL_LOCAL_REGISTER=0) ;;
  esac
  (
    [ ${#envs[@]} -gt 0 ] && export "${envs[@]}"
    PROBE_S=60 probe "${setting}_sweep" --algo $ALGOS -g 2 --inplace 0 -b 8 -e 2M -f 8 -d float
    for b in 8 4096 65536; do
      for a in allreduce.nccl allgather.nccl; do
        PROBE_S=30 probe "${setting}_lone_${a%%.*}_$b" --algo "$a" -g 2 --inplace 0 -b "$b" -e "$b" -d float
      done
    done
  )
done
python3 - "$W" <<'PY'
import csv, glob, os, sys
w = sys.argv[1]
print("# time (us), float, out of place: in one sweep and alone in a process, per NCCL setting")
print("%-10s %-16s %9s %9s %9s" % ("setting", "algorithm", "bytes", "sweep", "alone"))
for setting in ("default", "graphreg0", "noreg"):
    f = os.path.join(w, "probe_%s_sweep.csv" % setting)
    sweep = {(r["algo"], r["bytes"]): float(r["time_us"]) for r in csv.DictReader(open(f))} if os.path.exists(f) else {}
    for g in sorted(glob.glob(os.path.join(w, "probe_%s_lone_*.csv" % setting))):
        for r in csv.DictReader(open(g)):
            k = (r["algo"], r["bytes"])
            print("%-10s %-16s %9s %9.2f %9.2f" % (setting, k[0], k[1], sweep.get(k, float("nan")), float(r["time_us"])))
PY
