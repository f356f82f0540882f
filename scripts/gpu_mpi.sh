#!/usr/bin/env bash
# MPI mode on the 2 x H200 machine (prebuilt binaries): `mpirun -np 2 cclab run` (one
# process per GPU, CUDA IPC for peer buffers, epoch flags between processes, ncclCommInitRank).
#   1. the issue-5 floor algorithms and their NCCL baselines at 64 MiB .. 1 GiB under MPI;
#   2. small sizes (8 B .. 32 KiB) under MPI and in one process (graph replay);
#   3. every GPU algorithm (--algo all) under MPI at uneven sizes in half, checked;
#   4. the MPI GPU tests (test_exec_mpi_gpu), when carried.
# Takes prebuilt binaries from $BIN (cclab; optional test_exec_mpi_gpu); writes $OUT/mpi/mpi.log and
# $OUT/mpi/mpi.csv (every MPI record); prints last a table: busbw vs the MPI NCCL baseline and vs the
# single-process records in results/h200x2/, small-size times MPI vs one process, #wrong.
set -uo pipefail
: "${BIN:?set BIN to the folder of prebuilt binaries (cclab, test_exec_mpi_gpu)}"
OUT=${OUT:-/tmp/cclab_out}
D="$OUT/mpi"
mkdir -p "$D"
LOG="$D/mpi.log"
CSV="$D/mpi.csv"
TMP=/tmp/cclab_mpi
rm -rf "$TMP" "$CSV" && mkdir -p "$TMP"
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
FLOOR=allreduce.ring,allgather.ring,reducescatter.ring,broadcast.pipeline,alltoall.direct
NCCL=allreduce.nccl,allgather.nccl,reducescatter.nccl,broadcast.nccl,alltoall.nccl
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
left() { echo $((85 - ($(date +%s) - T0))); }
# --timeout 10: a hang reports the waiting rank and op within seconds instead of the 60 s default.
mrun() { local t=$1; shift; timeout "$t" $MPIRUN "$BIN/cclab" run --timeout 10 "$@"; echo "rc=$?"; }

{
  stamp "binaries"
  ldd "$BIN/cclab" | grep -E "libmpi|not found" || echo "(cclab does not link libmpi: built without MPI)"
  mpirun --version 2>&1 | head -1
  stamp "1. MPI: floor algorithms and NCCL baselines, 64 MiB .. 1 GiB x4, checked"
  mrun 40 --algo $FLOOR,$NCCL -b 64M -e 1G -f 4 -w 3 -n 10 --csv "$TMP/large.csv"
  stamp "2a. MPI: small sizes, graph replay"
  mrun 12 --algo $FLOOR,allreduce.nccl -b 8 -e 32K -f 8 --csv "$TMP/small.csv"
  stamp "2b. one process: the same"
  timeout 10 "$BIN/cclab" run --algo $FLOOR,allreduce.nccl -b 8 -e 32K -f 8 --timeout 10 --csv "$TMP/small_one.csv"
  echo "rc=$?"
  stamp "3. MPI: every GPU algorithm, uneven sizes, half, checked"
  mrun 20 --algo all -b 1000 -e 64000 -f 64 -d half -w 1 -n 2 --csv "$TMP/all.csv"
  if [ -x "$BIN/test_exec_mpi_gpu" ] && [ "$(left)" -gt 25 ]; then
    stamp "4. test_exec_mpi_gpu"
    CCLAB="$BIN/cclab" timeout $(($(left) - 3)) "$BIN/test_exec_mpi_gpu" --gtest_brief=1
    echo "rc=$?"
  else
    stamp "4. test_exec_mpi_gpu skipped (missing from \$BIN, or $(left) s left)"
  fi
  stamp "done"
} >"$LOG" 2>&1

grep -E "^## |rc=|error|FAILED|out of bounds|skipped:|PASSED|SKIPPED" "$LOG" | head -60
python3 - "$TMP" "$CSV" <<'PY'
import csv, glob, os, sys
tmp, out = sys.argv[1], sys.argv[2]
def rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []
mpi = {n: rows(os.path.join(tmp, n + ".csv")) for n in ("large", "small", "all")}
# Every MPI record in one CSV (union of the columns).
allrows = mpi["large"] + mpi["small"] + mpi["all"]
if allrows:
    fields = []
    for r in allrows:
        fields += [k for k in r if k not in fields]
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(allrows)
key = lambda r: (r["algo"], int(r["bytes"]), r["inplace"], r["dtype"])
ratio = lambda a, b: a / b if b > 0 else float("nan")
single = {}
for p in glob.glob("results/h200x2/exec_*_float.csv"):
    for r in rows(p):
        single[key(r)] = r
print("# 1. MPI (2 processes), out-of-place, float: busbw GB/s vs MPI NCCL and the single-process records")
print(f"{'algo':20} {'bytes':>11} {'mpi_bus':>8} {'nccl_bus':>8} {'x_nccl':>6} {'one_bus':>8} {'x_one':>6} {'wrong':>5}")
large = {key(r): r for r in mpi["large"]}
for k, r in sorted(large.items()):
    if r["inplace"] != "0" or r["algo"].endswith(".nccl"):
        continue
    n = large.get((r["collective"] + ".nccl",) + k[1:])
    s = single.get(k)
    b = float(r["busbw_gbps"])
    nb = float(n["busbw_gbps"]) if n else float("nan")
    sb = float(s["busbw_gbps"]) if s else float("nan")
    print(f"{r['algo']:20} {k[1]:>11} {b:8.1f} {nb:8.1f} {ratio(b, nb):6.2f} {sb:8.1f} {ratio(b, sb):6.2f} {r['wrong']:>5}")
print("# 2. small sizes, graph replay, out-of-place: time us, MPI vs one process")
one = {key(r): r for r in rows(os.path.join(tmp, "small_one.csv"))}
for k, r in sorted({key(r): r for r in mpi["small"]}.items()):
    if r["inplace"] != "0":
        continue
    o = one.get(k)
    t, ot = float(r["time_us"]), float(o["time_us"]) if o else float("nan")
    print(f"{r['algo']:20} {k[1]:>11} mpi {t:7.2f} one {ot:7.2f} ratio {ratio(t, ot):5.2f} wrong {r['wrong']}")
wrong = sum(int(r["wrong"]) for r in allrows if int(r["wrong"]) > 0)
algos = sorted({r["algo"] for r in mpi["all"]})
print(f"# 3. --algo all under MPI: {len(algos)} algorithms, {len(mpi['all'])} records")
print(f"# MPI records: {len(allrows)} in {out}, wrong elements in total: {wrong}")
PY
