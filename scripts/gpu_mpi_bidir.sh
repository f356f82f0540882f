#!/usr/bin/env bash
# A step of scripts/gpu_call.sh on 2 GPUs (~4 min with the build): allreduce.bidir with one process per GPU
# (`mpirun -np 2 cclab run`: its rank-local kernels ll and lamport, the copy schedule at the largest sizes) beside
# the same sweep in one process, in one call.
#   bash .carry/gpu_call.sh <name> gpu_mpi_bidir
# 1. test_exec_mpi_gpu (every collective of the general lowering and allreduce.bidir's modes under mpirun, checked);
# 2. allreduce.bidir 8 B - 1 GiB (x2), float, under mpirun and in one process (graph replay, checked), in turn;
# Output under $1: mpi_tests.log, mpi_bidir.csv, one_bidir.csv, the runs' logs; a table last (time per size, one
# process against MPI, and the mode MPI ran).
set -u
W=${1:?output folder}
CCLAB=${CCLAB:?the cclab binary}
export NCCL_NVLS_ENABLE=0
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader
ROOT_FLAG=""
[ "$(id -u)" = 0 ] && ROOT_FLAG="--allow-run-as-root"
T0=$(date +%s)
stamp() { echo "## [mpi_bidir $(($(date +%s) - T0)) s] $*"; }
ldd "$CCLAB" | grep -q libmpi || { echo "cclab was built without MPI: nothing to run"; exit 1; }
stamp "build test_exec_mpi_gpu"
cmake --build build-measure -j "$(nproc)" --target test_exec_mpi_gpu >"$W/mpi_build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$W/mpi_build.log" | head -30; exit 1; }
stamp "test_exec_mpi_gpu"
CCLAB=$CCLAB timeout 240 build-measure/tests/exec/test_exec_mpi_gpu >"$W/mpi_tests.log" 2>&1
echo "test_exec_mpi_gpu rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$W/mpi_tests.log"
stamp "allreduce.bidir, one process and under mpirun"
SWEEP=(--algo allreduce.bidir -b 8 -e 1G -f 2 -d float --timeout 20)
timeout 120 "$CCLAB" run "${SWEEP[@]}" --csv "$W/one_bidir.csv" >"$W/one_bidir.log" 2>&1
echo "one process rc=$?"
timeout 150 mpirun $ROOT_FLAG -np 2 --bind-to none "$CCLAB" run "${SWEEP[@]}" --csv "$W/mpi_bidir.csv" \
  >"$W/mpi_bidir.log" 2>&1
echo "mpirun rc=$?"
grep -h "out of bounds" "$W/one_bidir.log" "$W/mpi_bidir.log"
stamp "table"
python3 - "$W" <<'PY'
import csv, os, re, sys
w = sys.argv[1]
def rows(name):
    p = os.path.join(w, name)
    return {(int(r["bytes"]), r["inplace"]): r for r in csv.DictReader(open(p))} if os.path.exists(p) else {}
one, mpi = rows("one_bidir.csv"), rows("mpi_bidir.csv")
print("size          one us    MPI us   MPI/one  MPI's mode")
worst = 0.0
for k in sorted(one):
    if k[1] != "0" or k not in mpi:
        continue
    a, b = float(one[k]["time_us"]), float(mpi[k]["time_us"])
    m = re.search(r"mode=(\w+)", mpi[k]["note"])
    mode = m.group(1) if m else ("copy schedule" if "general lowering" in mpi[k]["note"] else "?")
    worst = max(worst, b / a)
    print(f"{k[0]:11d}  {a:8.2f}  {b:8.2f}  {b / a:7.3f}  {mode}")
print(f"worst MPI/one: {worst:.3f}")
PY
