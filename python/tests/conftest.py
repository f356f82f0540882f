"""Shared by the package's tests: the repository root, the cclab binary the rows are compared against, and
the CSV comparison of records."""
import csv
import glob
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def find_binary():
    """$CCLAB_BIN, else the newest build*/cli/cclab of the repository."""
    env = os.environ.get("CCLAB_BIN")
    if env:
        return env
    cands = sorted(glob.glob(os.path.join(ROOT, "build*", "cli", "cclab")), key=os.path.getmtime, reverse=True)
    return cands[0] if cands else None


@pytest.fixture(scope="session")
def cclab_bin():
    b = find_binary()
    if not b or not os.access(b, os.X_OK):
        pytest.fail("no cclab binary to compare with: build it (cmake --preset cpu && cmake --build --preset cpu "
                    "--target cclab) or set CCLAB_BIN")
    return b


def run_cli(binary, *args, check=True):
    p = subprocess.run([binary, *map(str, args)], cwd=ROOT, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"cclab {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
    return p


def read_csv(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames, list(r)


def cell(v):
    """A Python value as the CSV writes it (core/record.cpp: doubles with 9 significant digits)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        if v != v:
            return ""
        return "%.9g" % v
    return str(v)


def assert_rows_equal(py_rows, header, cli_rows):
    """Row for row, column for column: the package's rows (list of dicts) against the CLI's CSV."""
    assert len(py_rows) == len(cli_rows), f"{len(py_rows)} rows from cclab.simulate, {len(cli_rows)} from the CLI"
    assert list(py_rows[0].keys()) == header if py_rows else True
    for i, (p, c) in enumerate(zip(py_rows, cli_rows)):
        for k in header:
            pv, cv = p[k], c[k]
            if isinstance(pv, (int, float)) and not isinstance(pv, bool) and cv not in ("",) and k not in (
                    "time_us", "algbw_gbps", "busbw_gbps", "pred_time_us", "pred_busbw_gbps", "error"):
                assert float(cv) == pv, f"row {i} ({p['algo']} {p['bytes']} B) column {k}: {pv!r} vs CLI {cv!r}"
            else:
                assert cell(pv) == cv, f"row {i} ({p['algo']} {p['bytes']} B) column {k}: {pv!r} vs CLI {cv!r}"
