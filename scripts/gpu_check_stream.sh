#!/usr/bin/env bash
# The ring-of-slots all-reduce (allreduce.bidir.stream) checked against the reference on the GPUs: every dtype,
# three reductions, sizes that leave partial vectors and lanes with many units (16 KiB slots), in and out of place,
# 2 ranks and 4 and 8 ranks sharing the GPUs. A step of scripts/gpu_call.sh (copied into .carry/):
#   bash .carry/gpu_call.sh <name> gpu_check_stream
# Writes $1/stream_check/*.csv and prints the rows with wrong elements (none expected) last.
set -uo pipefail
W=${1:?output folder}
CCLAB=${CCLAB:-cclab}
D=$W/stream_check
mkdir -p "$D"
fail=0
# On a one-GPU machine the 2-rank runs share it too (correctness only; timings then mean nothing).
SHARE2=()
[ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ] || SHARE2=(--share-gpus)
run() {  # <csv name> <cclab run arguments...>
  local name=$1
  shift
  if ! "$CCLAB" run --algo allreduce.bidir.stream -b 1000 -e 64M -f 9 -w 1 -n 2 --timeout 30 --csv "$D/$name.csv" "$@" \
    >"$D/$name.log" 2>&1; then
    echo "FAILED (rc $?): $name: $*"
    tail -5 "$D/$name.log"
    fail=1
  fi
}
for d in float half bfloat16; do
  for o in sum avg max; do
    run "g2_${d}_${o}" -g 2 "${SHARE2[@]}" -d "$d" -o "$o"
    run "g2_${d}_${o}_slot16k" -g 2 "${SHARE2[@]}" -d "$d" -o "$o" --tune slot_bytes=16K
  done
  run "g4_${d}_sum_slot16k" -g 4 --share-gpus -d "$d" --tune slot_bytes=16K
done
run g8_half_sum_slot16k -g 8 --share-gpus -d half --tune slot_bytes=16K
python3 - "$D" <<'EOF'
import csv, glob, sys
rows = wrong = 0
for f in sorted(glob.glob(sys.argv[1] + "/*.csv")):
    for r in csv.DictReader(open(f)):
        rows += 1
        if r["wrong"] != "0":
            wrong += 1
            print("WRONG", f.rsplit("/", 1)[-1], r["bytes"], r["dtype"], r["redop"], r["inplace"], r["wrong"])
print(f"stream check: {rows} rows, {wrong} with wrong elements")
EOF
exit $fail
