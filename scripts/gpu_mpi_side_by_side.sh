#!/usr/bin/env bash
# A step of scripts/gpu_call.sh on 2 GPUs: algorithms with one process per GPU (`mpirun -np 2 cclab run`) beside the
# same sweep in one process, in one call.
#   [ALGOS=...] [SIZES="-b 8 -e 1G -f 2"] [MPI_TESTS=<gtest filter>] bash .carry/gpu_call.sh <name> gpu_mpi_side_by_side
# 1. ALGOS (default allreduce.bidir) over SIZES, float, under mpirun and in one process (graph replay, checked), in
#    turn (first: nothing else on the GPUs);
# 2. test_exec_mpi_gpu (MPI_TESTS: a gtest filter, default all: every collective of the general and fused lowerings
#    and allreduce.bidir's kernel modes under mpirun, checked).
# Output under $1: mpi_tests.log, mpi.csv, one.csv, the runs' logs; a table last (time per size, one process against
# MPI, and the plan MPI ran), and the worst ratio per algorithm.
set -u
W=${1:?output folder}
CCLAB=${CCLAB:?the cclab binary}
ALGOS=${ALGOS:-allreduce.bidir}
SIZES=${SIZES:--b 8 -e 1G -f 2}
export NCCL_NVLS_ENABLE=0
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader
ROOT_FLAG=""
[ "$(id -u)" = 0 ] && ROOT_FLAG="--allow-run-as-root"
T0=$(date +%s)
stamp() { echo "## [mpi $(($(date +%s) - T0)) s] $*"; }
ldd "$CCLAB" | grep -q libmpi || { echo "cclab was built without MPI: nothing to run"; exit 1; }
stamp "build test_exec_mpi_gpu"
cmake --build build-measure -j "$(nproc)" --target test_exec_mpi_gpu >"$W/mpi_build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$W/mpi_build.log" | head -30; exit 1; }
stamp "$ALGOS, one process and under mpirun"
# shellcheck disable=SC2206 # SIZES is a list of options
SWEEP=(--algo "$ALGOS" $SIZES -d float --timeout 20)
timeout 200 "$CCLAB" run "${SWEEP[@]}" --csv "$W/one.csv" >"$W/one.log" 2>&1
echo "one process rc=$?"
timeout 240 mpirun $ROOT_FLAG -np 2 --bind-to none "$CCLAB" run "${SWEEP[@]}" --csv "$W/mpi.csv" >"$W/mpi.log" 2>&1
echo "mpirun rc=$?"
grep -h "out of bounds" "$W/one.log" "$W/mpi.log"
stamp "test_exec_mpi_gpu ${MPI_TESTS:-*}"
CCLAB=$CCLAB timeout 300 build-measure/tests/exec/test_exec_mpi_gpu --gtest_filter="${MPI_TESTS:-*}" \
  >"$W/mpi_tests.log" 2>&1
echo "test_exec_mpi_gpu rc=$?"
pkill -f "$CCLAB run" 2>/dev/null  # a test cut by the timeout leaves its mpirun's ranks spinning on the GPUs
grep -E "^\[ *(PASSED|FAILED|SKIPPED|OK) " "$W/mpi_tests.log"
stamp "table"
python3 - "$W" <<'PY'
import csv, os, re, sys
w = sys.argv[1]
def rows(name):
    p = os.path.join(w, name)
    return {(r["algo"], int(r["bytes"]), r["inplace"]): r for r in csv.DictReader(open(p))} if os.path.exists(p) else {}
one, mpi = rows("one.csv"), rows("mpi.csv")
def plan(note):
    m = re.search(r"mode=(\w+)", note)
    if m:
        return m.group(1)
    return "fused" if "lowering=fused" in note else "general" if "general lowering" in note else note[:20]
print("algo                          size     one us    MPI us   MPI/one  MPI's plan")
worst = {}
for k in sorted(one):
    if k[2] != "0" or k not in mpi:
        continue
    a, b = float(one[k]["time_us"]), float(mpi[k]["time_us"])
    worst[k[0]] = max(worst.get(k[0], (0, 0)), (b / a, k[1]))
    print(f"{k[0]:26s} {k[1]:11d}  {a:8.2f}  {b:8.2f}  {b / a:7.3f}  {plan(mpi[k]['note'])}")
missing = sorted({k[0] for k in one} - {k[0] for k in mpi})
print("worst MPI/one per algorithm (size): " + ", ".join(f"{a} {r:.3f} ({s})" for a, (r, s) in sorted(worst.items())))
if missing:
    print("not run under mpirun: " + ", ".join(missing))
PY
