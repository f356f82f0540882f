#!/usr/bin/env python3
"""The README's fidelity table against `cclab compare`: every row is run again and its numbers must match.

    python3 scripts/check_readme_numbers.py [--cclab build/cli/cclab] [--readme README.md]

The table is the one headed `| records | predicted with | algorithms meeting the goals | median | geomean | max |`.
Each row names its records folder and what they are predicted with: a profile (`profiles/NAME.json`), the
arguments themselves (`--topo PRESET --profile profiles/NAME.json`), or the folder's own `calibrated_profile.json`.
The script runs `cclab compare --measured <records> <args>` from the source tree and checks the row's count of
algorithms meeting the goals and its overall median, geometric mean and max, as compare prints them. It prints one
line per row and exits 1 when a row differs or cannot be run, so a change to the model that moves a number fails
until the README says what the model now does.
"""
import argparse
import os
import re
import subprocess
import sys

HEADER = "| records | predicted with | algorithms meeting the goals | median | geomean | max |"


def table_rows(readme):
    lines = open(readme, encoding="utf-8").read().splitlines()
    try:
        start = lines.index(HEADER)
    except ValueError:
        sys.exit(f"check_readme_numbers: {readme} has no table headed '{HEADER}'")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            sys.exit(f"check_readme_numbers: a row of {len(cells)} cells, not 6: {line}")
        rows.append(cells)
    if not rows:
        sys.exit("check_readme_numbers: the fidelity table has no rows")
    return rows


def compare_args(records_cell, with_cell):
    records = re.search(r"`(results/[^`]+)`", records_cell)
    if not records:
        raise ValueError(f"no `results/...` folder in '{records_cell}'")
    records = records.group(1)
    literal = re.search(r"`(--topo [^`]+)`", with_cell)
    if literal:
        return records, literal.group(1).split()
    if "calibrated_profile.json" in with_cell:
        return records, ["--topo", os.path.join(records, "calibrated_profile.json")]
    profile = re.search(r"`(profiles/[^`]+\.json)`", with_cell)
    if not profile:
        raise ValueError(f"cannot tell what '{with_cell}' predicts with")
    return records, ["--topo", profile.group(1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--cclab", default=os.path.join(root, "build", "cli", "cclab"))
    ap.add_argument("--readme", default=os.path.join(root, "README.md"))
    a = ap.parse_args()
    if not os.access(a.cclab, os.X_OK):
        sys.exit(f"check_readme_numbers: no cclab binary at '{a.cclab}' (build first, or pass --cclab)")
    failed = 0
    for records_cell, with_cell, meeting, median, geomean, worst in table_rows(a.readme):
        try:
            records, args = compare_args(records_cell, with_cell)
        except ValueError as e:
            print(f"FAIL {records_cell}: {e}")
            failed += 1
            continue
        cmd = [a.cclab, "compare", "--measured", records] + args
        run = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        out = run.stdout + run.stderr
        overall = re.search(r"^overall: median (\S+) geomean (\S+) max (\S+)$", out, re.M)
        count = re.search(r"\((\d+ of \d+) algorithms meet them", out)
        what = " ".join(["cclab compare --measured", records] + args)
        if run.returncode != 0 or not overall or not count:
            print(f"FAIL {what}: exit {run.returncode}, no summary\n{out[-2000:]}")
            failed += 1
            continue
        got = (count.group(1), *overall.groups())
        want = (meeting, median, geomean, worst)
        if got != want:
            print(f"FAIL {what}: README says {' | '.join(want)}, compare prints {' | '.join(got)}")
            failed += 1
        else:
            print(f"ok   {what}: {' | '.join(got)}")
    if failed:
        print(f"check_readme_numbers: {failed} row(s) of the README's fidelity table differ from cclab compare")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
