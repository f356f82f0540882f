#!/usr/bin/env python3
"""Refuses records measured on another machine than the results folder they are published into.

  python3 scripts/check_device.py <results folder> <records.csv ...>
  python3 scripts/check_device.py --name "<GPU name> x<count>"     prints the machine's folder name (h200x2)

The folder's name says the machine (results/h200x2 and results/h200x2_mpi: 2 x H200); every row's `device`
column ("NVIDIA H200 x2", "NVIDIA H100 80GB HBM3 x2") must name the same one. The device kinds that lend 2 x H200 may hand out 2 x H100
instead: their records belong in results/h100x2, never beside the H200's.
"""
import csv
import os
import re
import sys


def machine_of(device: str) -> str:
    """'NVIDIA H200 x2' -> 'h200x2'; '' where the column names no GPU model and count."""
    model = re.search(r"\b([A-Z]+\d+[A-Z]*)\b", device)
    count = re.search(r"\bx(\d+)\s*$", device)
    return f"{model.group(1).lower()}x{count.group(1)}" if model and count else ""


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--name":
        print(machine_of(sys.argv[2]))
        return 0
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    # results/<machine>[_<variant>] (results/h200x2_mpi: the same machine under mpirun)
    want = os.path.basename(os.path.normpath(sys.argv[1])).split("_")[0]
    bad = 0
    for path in sys.argv[2:]:
        with open(path, newline="") as f:
            for n, row in enumerate(csv.DictReader(f), start=2):
                got = machine_of(row.get("device") or "")
                if got != want:
                    print(f"check_device: {path}:{n}: measured on '{row.get('device')}' ({got or 'no machine'}), "
                          f"not the {want} machine of {sys.argv[1]}; publish it under results/{got or '<machine>'}",
                          file=sys.stderr)
                    bad += 1
                    break  # one line per file
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
