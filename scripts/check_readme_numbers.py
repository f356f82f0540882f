#!/usr/bin/env python3
"""The README's fidelity tables against `cclab compare`: every row is run again and its numbers must match.

    python3 scripts/check_readme_numbers.py [--cclab build/cli/cclab] [--readme README.md]

The records table is the one headed `| records | predicted with | algorithms meeting the goals | median | geomean |
max |`. Each row names its records folder and what they are predicted with: a profile (`profiles/NAME.json`), the
arguments themselves (`--topo PRESET --profile profiles/NAME.json`), or the folder's own `calibrated_profile.json`.
The script runs `cclab compare --measured <records> <args>` from the source tree and checks the row's count of
algorithms meeting the goals and its overall median, geometric mean and max, as compare prints them.

The published machines' table (`| machine (file) | ... | median / max error | ...`, in the README and in
`docs/machines.md`) is checked where its numbers are compare's over a whole file (shared/published beside the source
tree; skipped where that folder is absent): the `(all N rows: A / B)` or `(both rows: A / B)` pair where the row has
one (its first pair leaves out rows the test doubts), else the first pair, on the preset and `--tune` the row names;
`(NCCL's default choice: A / B)` without that `--tune`, `(NVLS off: A / B)` with `NCCL_NVLS_ENABLE=0`; and the row
count.

The NCCL-estimate table (`| machine (records) | predicted with | rows | cclab median / max error | NCCL's estimate
median / max error |`) is checked from compare's CSV: the NCCL baselines' rows that carry NCCL's estimate (all-gather,
all-reduce, broadcast, reduce, reduce-scatter), their count and the median and max |error| of both predictions.

It prints one line per check and exits 1 when one differs or cannot be run, so a change to the model that moves a
number fails until the README says what the model now does.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

HEADER = "| records | predicted with | algorithms meeting the goals | median | geomean | max |"


def table_cells(doc, header):
    """The cells of each row of the table headed `header` in `doc`; None where `doc` has no such table."""
    lines = open(doc, encoding="utf-8").read().splitlines()
    if header not in lines:
        return None
    rows = []
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def table_rows(readme):
    rows = table_cells(readme, HEADER)
    if rows is None:
        sys.exit(f"check_readme_numbers: {readme} has no table headed '{HEADER}'")
    for cells in rows:
        if len(cells) != 6:
            sys.exit(f"check_readme_numbers: a row of {len(cells)} cells, not 6: {' | '.join(cells)}")
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


ESTIMATE_HEADER = ("| machine (records) | predicted with | rows | cclab median / max error | NCCL's estimate median / max "
                   "error |")
NCCL_BASELINES = ("allgather.nccl", "allreduce.nccl", "broadcast.nccl", "reduce.nccl", "reducescatter.nccl")


def median_max(errors):
    return f"{100 * statistics.median(errors):.1f}% / {100 * max(errors):.1f}%"


def check_estimate_table(cclab, readme, root):
    """Failures (count) of the NCCL-estimate table; prints a line per row."""
    rows = table_cells(readme, ESTIMATE_HEADER)
    if rows is None:
        print(f"FAIL {readme} has no table headed '{ESTIMATE_HEADER}'")
        return 1
    failed = 0
    for cells in rows:
        try:
            records, args = compare_args(cells[0], cells[1])
        except ValueError as e:
            print(f"FAIL {cells[0]}: {e}")
            failed += 1
            continue
        what = " ".join(["cclab compare --measured", records] + args)
        with tempfile.TemporaryDirectory(prefix="check_readme_") as tmp:
            out = os.path.join(tmp, "rows.csv")
            run = subprocess.run([cclab, "compare", "--measured", records] + args + ["--csv", out], cwd=root,
                                 capture_output=True, text=True)
            if run.returncode != 0 or not os.path.exists(out):
                print(f"FAIL {what}: exit {run.returncode}\n{(run.stdout + run.stderr)[-2000:]}")
                failed += 1
                continue
            ours, theirs = [], []
            with open(out, newline="") as f:
                for r in csv.DictReader(f):
                    if r["algo"] in NCCL_BASELINES and r.get("nccl_estimate_us"):
                        t = float(r["time_us"])
                        ours.append(abs(float(r["pred_time_us"]) / t - 1))
                        theirs.append(abs(float(r["nccl_estimate_us"]) / t - 1))
        if not ours:
            print(f"FAIL {what}: no NCCL baseline row carries nccl_estimate_us")
            failed += 1
            continue
        got, want = (str(len(ours)), median_max(ours), median_max(theirs)), (cells[2], cells[3], cells[4])
        if got != want:
            print(f"FAIL {what} (NCCL baselines): README says {' | '.join(want)}, compare gives {' | '.join(got)}")
            failed += 1
        else:
            print(f"ok   {what} (NCCL baselines): {' | '.join(got)}")
    return failed


PUBLISHED_HEADER = "| machine (file) | source | preset | rows | median / max error | before (nearest preset then) | goal |"


def published_checks(readme, published):
    """(what, file, preset args, expected rows or None, expected 'median / max') for the published machines' table."""
    rows = table_cells(readme, PUBLISHED_HEADER)
    if rows is None:
        return None
    checks = []
    pair = r"(\d+\.\d+%) / (\d+\.\d+%)"
    for cells in rows:
        file = re.search(r"`([^`]+\.csv)`", cells[0]).group(1)
        preset = re.search(r"`([^`]+)`", cells[2]).group(1)
        tune = re.search(r"`--tune ([^`]+)`", cells[2])
        args = ["--topo", preset] + (["--tune", tune.group(1)] if tune else [])
        rows = re.match(r"(\d+)$", cells[3]) or re.search(r"of (\d+) in the goal", cells[3])
        whole = re.search(r"\((?:all \d+ rows|both rows): " + pair + r"\)", cells[4])
        first = re.match(pair, cells[4])
        got = whole or first
        checks.append((file, args, rows.group(1) if rows else None, f"{got.group(1)} / {got.group(2)}"))
        default = re.search(r"NCCL's default choice: " + pair, cells[4])
        if default and tune:
            checks.append((file, ["--topo", preset], None, f"{default.group(1)} / {default.group(2)}"))
        nvls_off = re.search(r"NVLS off: " + pair, cells[4])
        if nvls_off:
            checks.append((file, ["--topo", preset, "--tune", "NCCL_NVLS_ENABLE=0"], None,
                           f"{nvls_off.group(1)} / {nvls_off.group(2)}"))
    return [(f, os.path.join(published, f), a, r, e) for f, a, r, e in checks]


def check_published_tables(cclab, docs, published, root):
    """Failures (count) of the published machines' table in each of `docs` (README and docs/machines.md carry it)."""
    failed = 0
    for doc in docs:
        checks = published_checks(doc, published)
        if checks is None:
            print(f"FAIL {doc} has no table headed '{PUBLISHED_HEADER}'")
            failed += 1
            continue
        for file, path, args, rows, want in checks:
            run = subprocess.run([cclab, "compare", "--measured", path] + args, cwd=root, capture_output=True,
                                 text=True)
            out = run.stdout + run.stderr
            overall = re.search(r"^overall: median (\S+) geomean \S+ max (\S+)$", out, re.M)
            measured = re.search(r"^# cclab compare: (\d+) measured rows", out, re.M)
            what = " ".join(["cclab compare --measured", file] + args)
            if run.returncode != 0 or not overall or not measured:
                print(f"FAIL {what}: exit {run.returncode}, no summary\n{out[-2000:]}")
                failed += 1
                continue
            got = f"{overall.group(1)} / {overall.group(2)}"
            if got != want or (rows and rows != measured.group(1)):
                print(f"FAIL {what}: {os.path.basename(doc)} says {rows or '-'} rows, {want}; compare prints "
                      f"{measured.group(1)} rows, {got}")
                failed += 1
            else:
                print(f"ok   {what}: {measured.group(1)} rows, {got} ({os.path.basename(doc)})")
    return failed


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
    failed += check_estimate_table(a.cclab, a.readme, root)
    published = os.path.normpath(os.path.join(root, "..", "shared", "published"))
    if not os.path.isdir(published):
        print(f"skip the published machines' table: no {published}")
    else:
        failed += check_published_tables(a.cclab, [a.readme, os.path.join(root, "docs", "machines.md")], published,
                                         root)
    if failed:
        print(f"check_readme_numbers: {failed} line(s) of the README's fidelity tables differ from cclab compare")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
