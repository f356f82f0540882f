#!/usr/bin/env bash
# MPI mode on the 2 x H200 machine (device tool; session-2 bundle): `mpirun -np 2 cclab run` (one
# process per GPU, CUDA IPC for peer buffers, epoch flags between processes, ncclCommInitRank) beside
# the same algorithms in one process, then the MPI GPU tests. Takes prebuilt binaries from $BIN
# (cclab, test_exec_mpi_gpu); writes $OUT/mpi/mpi.log and $OUT/mpi/mpi.csv (the MPI sweep's
# records); prints a table last: per algorithm and size, MPI vs single-process time and #wrong.
set -uo pipefail
: "${BIN:?set BIN to the folder of prebuilt binaries (cclab, test_exec_mpi_gpu)}"
OUT=${OUT:-/tmp/cclab_out}
D="$OUT/mpi"
mkdir -p "$D"
LOG="$D/mpi.log"
CSV="$D/mpi.csv"
SP_CSV=/tmp/cclab_mpi_single.csv
rm -f "$CSV" "$SP_CSV"
export NCCL_NVLS_ENABLE=0
export CCLAB_COMMIT=${CCLAB_COMMIT:-unknown}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
# Open MPI in a container: its shared-memory transport's single-copy path (CMA) needs ptrace rights
# that containers often lack; cclab only sends a few bytes through MPI.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl=self,vader  # one node: shared memory only, no TCP interface probing
ROOT=""
[ "$(id -u)" = 0 ] && ROOT="--allow-run-as-root"
MPIRUN="mpirun $ROOT -np 2 --bind-to none"
ALGOS=allreduce.ring,allgather.ring,reducescatter.ring,broadcast.pipeline,alltoall.direct,allreduce.nccl
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
left() { echo $((85 - ($(date +%s) - T0))); }

{
  stamp "binaries"
  ldd "$BIN/cclab" | grep -E "libmpi|not found" || echo "(cclab does not link libmpi: built without MPI)"
  mpirun --version 2>&1 | head -1
  stamp "MPI: mpirun -np 2, 8 B .. 256 MiB x16, checked"
  # --timeout 10: a hang reports the waiting rank and op within seconds instead of the 60 s default.
  timeout 40 $MPIRUN "$BIN/cclab" run --algo $ALGOS -b 8 -e 256M -f 16 -c 1 --timeout 10 --csv "$CSV"
  echo "rc=$?"
  stamp "single process, same sweep"
  timeout 25 "$BIN/cclab" run --algo $ALGOS -b 8 -e 256M -f 16 -c 1 --csv "$SP_CSV"
  echo "rc=$?"
  stamp "MPI: uneven size, half, op by op"
  timeout 15 $MPIRUN "$BIN/cclab" run --algo $ALGOS -b 1000 -e 1000 -d half --graph 0 -w 1 -n 2 --timeout 10
  echo "rc=$?"
  stamp "MPI: 3 processes on 2 GPUs must be refused (one line per rank, exit 1)"
  timeout 10 mpirun $ROOT -np 3 --oversubscribe --bind-to none "$BIN/cclab" run --algo allreduce.ring -b 1K -e 1K
  echo "rc=$?"
  if [ -x "$BIN/test_exec_mpi_gpu" ] && [ "$(left)" -gt 30 ]; then
    stamp "test_exec_mpi_gpu"
    CCLAB="$BIN/cclab" timeout $(($(left) - 3)) "$BIN/test_exec_mpi_gpu" --gtest_brief=1
    echo "rc=$?"
  else
    stamp "test_exec_mpi_gpu skipped (missing from \$BIN, or $(left) s left)"
  fi
  stamp "done"
} >"$LOG" 2>&1

grep -E "^## |rc=|error|FAILED|out of bounds|PASSED|SKIPPED" "$LOG" | head -40
python3 - "$CSV" "$SP_CSV" <<'PY'
import csv, sys
def load(path):
    try:
        with open(path) as f:
            return {(r["algo"], int(r["bytes"]), r["inplace"]): r for r in csv.DictReader(f)}
    except (OSError, KeyError, ValueError):
        return {}
mpi, sp = load(sys.argv[1]), load(sys.argv[2])
print("# MPI (2 processes) vs one process, out-of-place; time in us, busbw in GB/s")
print(f"{'algo':22} {'bytes':>10} {'mpi_us':>9} {'one_us':>9} {'ratio':>6} {'mpi_bus':>8} {'one_bus':>8} {'wrong':>5}")
for (algo, size, ip), r in sorted(mpi.items()):
    if ip != "0":
        continue
    s = sp.get((algo, size, ip))
    t, bus = float(r["time_us"]), float(r["busbw_gbps"])
    st = float(s["time_us"]) if s else float("nan")
    sb = float(s["busbw_gbps"]) if s else float("nan")
    print(f"{algo:22} {size:>10} {t:9.2f} {st:9.2f} {t / st if s else float('nan'):6.2f} {bus:8.1f} {sb:8.1f} {r['wrong']:>5}")
if not mpi:
    print("# no MPI records (see", sys.argv[1].replace("mpi.csv", "mpi.log"), ")")
PY
