#!/usr/bin/env bash
# The store-only two-shot's launch shapes beside the load variant and NCCL, 1 MiB .. 1 GiB (a device-call step:
# copy into .carry/ and name it in scripts/gpu_call.sh). Records: <out>/probe_<name>.csv.
#   CCLAB=<cclab binary> bash scripts/gpu_probe_twoshot_push.sh <output folder>
set -u
CCLAB=${CCLAB:?set CCLAB to the cclab binary}
OUT=${1:?output folder}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
run() {  # name, then cclab run arguments
  local name=$1
  shift
  timeout 60 "$CCLAB" run "$@" -w 5 --inplace 0 --timeout 20 --csv "$OUT/probe_$name.csv" >"$OUT/probe_$name.log" 2>&1
  echo "$name rc=$?"
}
run nccl --algo allreduce.nccl,allreduce.bidir.twoshot -b 1M -e 1G -f 4
run tp_u1 --algo allreduce.bidir.twoshot --tune twoshot_push=1,twoshot_unroll=1 -b 1M -e 1G -f 4
run tp_u2 --algo allreduce.bidir.twoshot --tune twoshot_push=1,twoshot_unroll=2 -b 1M -e 1G -f 4
run tp_u4 --algo allreduce.bidir.twoshot --tune twoshot_push=1,twoshot_unroll=4 -b 1M -e 1G -f 4
run tp_b132 --algo allreduce.bidir.twoshot --tune twoshot_push=1,twoshot_unroll=2,twoshot_blocks=132 -b 1M -e 1G -f 4
run tp_t256 --algo allreduce.bidir.twoshot --tune twoshot_push=1,twoshot_unroll=2,twoshot_threads=256 -b 1M -e 1G -f 4
python3 - "$OUT" <<'PY'
import csv, glob, os, sys
from collections import defaultdict
t = defaultdict(dict)
for f in sorted(glob.glob(os.path.join(sys.argv[1], "probe_*.csv"))):
    name = os.path.basename(f)[6:-4]
    for r in csv.DictReader(open(f)):
        t[name + ":" + r["algo"].split(".")[-1]][int(r["bytes"])] = (float(r["busbw_gbps"]), int(r["wrong"]))
sizes = sorted({s for v in t.values() for s in v})
print("busbw GB/s " + " ".join("%8s" % (str(s >> 20) + "M") for s in sizes))
for k, v in sorted(t.items()):
    print("%-20s" % k + " ".join("%8.1f%s" % (v[s][0], "!" if v[s][1] else " ") if s in v else "       -" for s in sizes))
PY
