#!/usr/bin/env python3
"""NCCL's own choice per collective and size, from logs of `cclab run --algo <coll>.nccl` under NCCL_DEBUG=INFO
NCCL_DEBUG_SUBSYS=INIT,TUNING (scripts/gpu_nccl_choices.sh): one CSV row per (collective, bytes) with the algorithm,
protocol and channels NCCL logged (src/enqueue.cc: "<Func>: <bytes> Bytes -> Algo <a> proto <p>
channel{Lo..Hi}={l..h}", rank 0). `bytes` is the size as nccl-tests and cclab's records give it: NCCL logs its
count times the type size, which for all-gather and reduce-scatter is one rank's share, so those are multiplied
by the ranks (read from the log's "comm ... nRanks N" line)."""
import re
import sys

LINE = re.compile(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
RANKS = re.compile(r"nRanks (\d+)")
COLL = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
        "Broadcast": "broadcast", "Reduce": "reduce"}


def choices(path):
    nranks = None
    seen = {}
    with open(path, errors="replace") as f:
        for line in f:
            if nranks is None and (m := RANKS.search(line)):
                nranks = int(m.group(1))
            if m := LINE.search(line):
                func, nbytes, algo, proto, lo, hi = m.groups()
                coll = COLL.get(func, func.lower())
                nbytes = int(nbytes)
                if coll in ("allgather", "reducescatter"):
                    if nranks is None:
                        raise SystemExit(f"{path}: no 'nRanks N' line before the first choice")
                    nbytes *= nranks
                # A collective split over several work batches logs a line per channel range: keep their union.
                old = seen.get((coll, nbytes))
                lo, hi = int(lo), int(hi)
                if old:
                    lo, hi = min(lo, old[3]), max(hi, old[4])
                seen[(coll, nbytes)] = (nranks, algo.lower(), proto.lower(), lo, hi)
    return seen


def main(paths):
    if not paths:
        raise SystemExit("usage: nccl_choices.py LOG...")
    print("collective,ranks,bytes,algo,proto,channels")
    for p in paths:
        for (coll, nbytes), (nranks, algo, proto, lo, hi) in sorted(choices(p).items()):
            print(f"{coll},{nranks if nranks else ''},{nbytes},{algo},{proto},{hi - lo + 1}")


if __name__ == "__main__":
    main(sys.argv[1:])
