#!/usr/bin/env bash
# Diagnostics for issue 8's model on the 2 x H200 machine (not records: nothing here is published under
# results/). Three things the simulator's misses point at:
#   1. how much each microbenchmark moves between calibrations in one call (three `cclab calibrate` runs;
#      e.g. graph.fork_local_mix read 11.1 us in one call and 16.0 / 8.4 us in another);
#   2. allreduce.bidir.ll's time against launches per graph replay (20, 50, 100, 200) beside the
#      bidir.ll microbenchmark's 20 and 100;
#   3. allreduce.bidir.stream's one-unit time (256 KiB .. 2 MiB) against its slot size and threads.
# Takes the prebuilt `cclab` from $BIN; writes everything under $OUT/diag/; prints a short summary last.
#   BIN=/tmp/bin OUT=/tmp/w bash scripts/gpu_model_diag.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines
: "${BIN:?set BIN to the folder holding the prebuilt cclab}"
: "${OUT:?set OUT to the output folder}"
D="$OUT/diag"
mkdir -p "$D"
for i in 1 2 3; do
  timeout 45 "$BIN/cclab" calibrate -g 2 --topo h200x2 --name diag$i --budget 30 --out "$D/calib$i.json" \
    --measurements "$D/calib$i.measurements.json" >"$D/calib$i.log" 2>&1
  echo "## calibrate $i rc=$?"
done
run() {  # name algo sizes... -- extra flags
  local name=$1 algo=$2 lo=$3 hi=$4
  shift 4
  timeout 60 "$BIN/cclab" run --algo "$algo" -b "$lo" -e "$hi" -f 2 -w 20 --inplace 0 "$@" --csv "$D/$name.csv" \
    >>"$D/runs.log" 2>&1
  echo "## $name rc=$?"
}
for n in 20 50 100 200; do run ll_n$n allreduce.bidir.ll 8 64K -n $n; done
for sb in 64K 256K 1M; do
  for th in 256 512 1024; do
    run stream_sb${sb}_t$th allreduce.bidir.stream 256K 4M -n 100 --tune slot_bytes=$sb,stream_threads=$th
  done
done
python3 - "$D" <<'EOF'
import csv, glob, json, os, statistics, sys
d = sys.argv[1]
# 1. microbenchmark medians across the three calibrations: the series that moved more than 10%.
med = {}
for f in sorted(glob.glob(os.path.join(d, "calib*.measurements.json"))):
    p = json.load(open(f))
    def walk(x):
        if isinstance(x, dict):
            if "name" in x and isinstance(x.get("samples"), list) and x["samples"]:
                t = [s["time_us"] for s in x["samples"] if "time_us" in s]
                if t and len({s.get("bytes") for s in x["samples"]}) == 1:
                    med.setdefault(x["name"], []).append(statistics.median(t))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(p)
print("# one-size microbenchmarks whose median moved > 10% between the three calibrations (us)")
for k, v in sorted(med.items()):
    if len(v) > 1 and max(v) > 1.1 * min(v):
        print("  %-36s %s" % (k, " ".join("%.2f" % x for x in v)))
# 2 and 3: the runs' times.
print("# allreduce.bidir.ll by launches per replay (us): bytes n20 n50 n100 n200")
t = {}
for f in glob.glob(os.path.join(d, "*.csv")):
    for r in csv.DictReader(open(f)):
        t[(os.path.basename(f)[:-4], int(r["bytes"]))] = float(r["time_us"])
for b in sorted({b for (n, b) in t if n.startswith("ll_")}):
    print("  %8d %s" % (b, " ".join("%.2f" % t.get(("ll_n%d" % n, b), float("nan")) for n in (20, 50, 100, 200))))
print("# allreduce.bidir.stream (us): variant, then 256K 512K 1M 2M 4M")
for n in sorted({n for (n, b) in t if n.startswith("stream_")}):
    print("  %-22s %s" % (n, " ".join("%.1f" % t.get((n, b), float("nan")) for b in (1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22))))
EOF
