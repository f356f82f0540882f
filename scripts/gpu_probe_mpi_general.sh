#!/usr/bin/env bash
# Probe (gpu_call.sh step, 2 GPUs) of the general plans under mpirun: the sizes where one process per GPU took up to
# 1.9 x the one-process time (the reduces below 1 MiB, the broadcasts, gathers and scatters at 8 MiB;
# results/h200x2_mpi/side_by_side/). Each variant runs in one process and under `mpirun -np 2`, in turn: the default
# lowering, the fused lowering forced (no per-iteration device barrier), op by op (no graph), and the general plan's
# copies as kernels (`--tune copies=kernel`, no copy engine). Which part of the extra time is the device barrier, the
# graph, or the copy engines' copies into memory that another process mapped. VARIANTS: a subset (default all four).
# Records: <out>/probe_<variant>_{one,mpi}.csv; a table last (time in us, MPI over one process).
# Run: cp scripts/gpu_probe_mpi_general.sh .carry/ && [VARIANTS="..."] bash .carry/gpu_call.sh <name> gpu_probe_mpi_general
W=$1
export NCCL_NVLS_ENABLE=0
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader
source scripts/probe_run.sh
ROOT_FLAG=""
[ "$(id -u)" = 0 ] && ROOT_FLAG="--allow-run-as-root"
ARGS=(--algo broadcast.pipeline,gather.direct,scatter.direct,reduce.direct -b 8 -e 128M -f 16 -d float --timeout 20)
probe_mpi() {
  local name=$1
  shift
  local t0=$(date +%s)
  timeout -k 10 "${PROBE_S:-60}" mpirun $ROOT_FLAG -np 2 --bind-to none "$CCLAB" run "$@" --csv "$W/probe_$name.csv" \
    >"$W/probe_$name.log" 2>&1
  echo "$name rc=$? $(($(date +%s) - t0)) s: mpirun -np 2 $*"
  grep -E "refused|error|Error" "$W/probe_$name.log" | head -3
}
VARIANTS=${VARIANTS:-default fused eager kernel}
for v in $VARIANTS; do
  case $v in
    default) extra=() ;;
    fused) extra=(--tune lowering=fused) ;;
    eager) extra=(--graph 0) ;;
    kernel) extra=(--tune lowering=plan,copies=kernel) ;;
  esac
  PROBE_S=90 probe "${v}_one" "${ARGS[@]}" "${extra[@]}" >/dev/null
  PROBE_S=90 probe_mpi "${v}_mpi" "${ARGS[@]}" "${extra[@]}"
done
pkill -f "$CCLAB run" 2>/dev/null
grep -h "out of bounds" "$W"/probe_*.log | sort | uniq -c
python3 - "$W" $VARIANTS <<'PY'
import csv, os, sys
w, variants = sys.argv[1], sys.argv[2:]
def rows(name):
    p = os.path.join(w, f"probe_{name}.csv")
    if not os.path.exists(p):
        return {}
    return {(r["algo"], int(r["bytes"]), r["inplace"]): float(r["time_us"]) for r in csv.DictReader(open(p))}
t = {(v, s): rows(f"{v}_{s}") for v in variants for s in ("one", "mpi")}
print("%-20s %10s %2s  %s" % ("algo", "bytes", "ip", "  ".join("%-22s" % f"{v}: one/mpi/ratio" for v in variants)))
for k in sorted(t[(variants[0], "one")]):
    cells = []
    for v in variants:
        a, b = t[(v, "one")].get(k), t[(v, "mpi")].get(k)
        cells.append("%7.2f %7.2f %5.2f" % (a, b, b / a) if a and b else "%-21s" % "-")
    print("%-20s %10d %2s  %s" % (k[0], k[1], k[2], "  ".join(cells)))
PY
