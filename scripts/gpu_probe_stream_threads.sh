#!/usr/bin/env bash
# Probe (gpu_call.sh step) of the stream mode's rate per lane: 1-256 MiB with 256, 512 and 1024 threads per lane
# (half push into the peer's ring of slots, half reduce what lands) and with 8 slots instead of 4. If the time
# follows the threads, each lane is bound by the vectors its threads keep in flight; if it follows the slots, by
# the ring's credits coming back.
# Records: <out>/probe_stream_<variant>.csv; the last lines are a table of time (us) per size and variant.
# Run: cp scripts/gpu_probe_stream_threads.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_stream_threads
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
for spec in "t256 stream_threads=256" "t512 stream_threads=512" "t1024 stream_threads=1024" "s8 slots=8"; do
  set -- $spec
  PROBE_S=40 probe "stream_$1" --algo allreduce.bidir.stream -g 2 --inplace 0 -d float -b 1M -e 256M -f 4 \
    --tune "$2" >/dev/null
done
python3 - "$W" <<'PY'
import csv, glob, os, re, sys
t = {}
for f in glob.glob(os.path.join(sys.argv[1], "probe_stream_*.csv")):
    v = re.match(r"probe_stream_(\w+)\.csv", os.path.basename(f)).group(1)
    for r in csv.DictReader(open(f)):
        t[(v, int(r["bytes"]))] = (float(r["time_us"]), r.get("grid", ""))
vs = ["t256", "t512", "t1024", "s8"]
print("# stream mode: time (us) per size against threads per lane and slots, float, out of place (grid: lanes)")
print("%10s " % "bytes" + " ".join("%16s" % v for v in vs))
for b in sorted({b for _, b in t}):
    print("%10d " % b + " ".join("%9.1f (g%s)" % t[(v, b)] if (v, b) in t else "%16s" % "-" for v in vs))
PY
