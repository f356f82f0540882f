#!/usr/bin/env bash
# A short correctness and speed look at allreduce.bidir.twoshot, in both variants (peer loads, and store-only:
# --tune twoshot_push=1), beside NCCL on every GPU of the machine, before the long steps of a device call
# (scripts/gpu_call.sh step "smoke"): odd counts (the tail past the last 16-byte vector), in and out of place,
# every type and a non-sum op; then float sum 8 B .. 1 GiB beside allreduce.nccl, and the handshake modes
# (flash, push) at small sizes.
#   CCLAB=<cclab binary> bash scripts/gpu_smoke_twoshot.sh <output folder>
set -u
CCLAB=${CCLAB:?set CCLAB to the cclab binary}
OUT=${1:?output folder}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
for v in load push; do
  tune=twoshot_push=$([ $v = push ] && echo 1 || echo 0)
  for dt in float half bfloat16; do
    timeout 60 "$CCLAB" run --algo allreduce.bidir.twoshot -b 12 -e 3000036 -i 1000008 -w 2 -n 3 -d "$dt" \
      --tune "$tune" --timeout 20 --csv "$OUT/odd_${v}_$dt.csv" 2>&1 | grep -vE "^#" | awk '{print "'"$v $dt"'", $0}'
  done
  timeout 60 "$CCLAB" run --algo allreduce.bidir.twoshot -b 1M -e 64M -f 8 -o max -w 2 -n 3 --timeout 20 \
    --tune "$tune" --csv "$OUT/max_$v.csv" 2>&1 | grep -vE "^#" | awk '{print "'"$v"'", $0}'
done
timeout 120 "$CCLAB" run --algo allreduce.nccl,allreduce.bidir.twoshot,allreduce.bidir -b 8 -e 1G -f 8 -w 5 \
  --inplace 0 --timeout 20 --csv "$OUT/speed.csv" 2>&1 | grep -vE "^$"
timeout 100 "$CCLAB" run --algo allreduce.bidir.twoshot -b 8 -e 1G -f 8 -w 5 --inplace 0 --timeout 20 \
  --tune twoshot_push=1 --csv "$OUT/speed_push.csv" 2>&1 | grep -vE "^$|^#"
timeout 60 "$CCLAB" run --algo allreduce.nccl,allreduce.bidir.flash,allreduce.bidir.push -b 8 -e 64K -f 8 -w 5 \
  --inplace 0 --timeout 20 --csv "$OUT/handshakes.csv" 2>&1 | grep -vE "^$|^#"
