#!/usr/bin/env bash
# What NCCL itself chose for each collective and size on this machine (gpu_call.sh step): NCCL_DEBUG_SUBSYS=INIT,TUNING
# makes rank 0 log "<Func>: <bytes> Bytes -> Algo <a> proto <p> channel{Lo..Hi}={l..h}" per collective
# (src/enqueue.cc), which scripts/nccl_choices.py turns into <out>/nccl_choices/choices.csv. The ground truth for the
# model's emulation of NCCL's tuner (model/nccl.cpp, nccl_plan), on every GPU of the machine.
# Run it as a step of a device call: cp scripts/gpu_nccl_choices.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_nccl_choices
W=$1
export NCCL_NVLS_ENABLE=0
mkdir -p "$W/nccl_choices"
for coll in allreduce allgather reducescatter broadcast reduce; do
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout 120 "$CCLAB" run --algo $coll.nccl -b 8 -e 1G -f 4 -w 1 -n 1 -c 0 \
    --graph 0 --inplace 0 >"$W/nccl_choices/$coll.log" 2>&1
  echo "$coll rc=$? $(grep -c 'Bytes -> Algo' "$W/nccl_choices/$coll.log") choices logged"
done
python3 scripts/nccl_choices.py "$W"/nccl_choices/*.log >"$W/nccl_choices/choices.csv"
cat "$W/nccl_choices/choices.csv"
