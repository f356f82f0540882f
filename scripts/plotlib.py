"""What the plot scripts share (plot_busbw.py, plot_compare.py): matplotlib without a display, a cclab
records CSV read with one-line errors, sizes labelled as nccl-tests users write them, a log2 size axis,
a grid of panels, and saving with a title.
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on CI or the GPU machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402


def die(prog, msg):
    """One error line, exit 1 (the project's exit code for bad input)."""
    print(f"{prog}: error: {msg}", file=sys.stderr)
    sys.exit(1)


def size_label(b):
    """Bytes as nccl-tests users write them: 8B, 512B, 1K, 64M, 1G (powers of 1024)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale:
            v = b / scale
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 1e-9 else f"{v:.3g}{unit}"
    return f"{b:.0f}B"


def read_records(prog, path, required, hint):
    """(line number, row dict) for each row of a records CSV (the contract columns of core/record.hpp).

    Dies with one line when the file is missing, has no header or lacks a `required` column (`hint` says
    how to get a right file). Converting the values is the caller's, which knows what each plot needs.
    """
    if not os.path.isfile(path):
        die(prog, f"no such records file '{path}'")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            die(prog, f"{path}: empty file (no header)")
        missing = [c for c in required if c not in reader.fieldnames]
        if missing:
            die(prog, f"{path}: missing column(s) {', '.join(missing)} ({hint})")
        return list(enumerate(reader, start=2))


def size_axis(ax, sizes):
    """x on a log2 axis from min(sizes) to max(sizes) bytes, a tick at every power of 2 (of 4 beyond 12
    octaves), labelled as sizes."""
    ax.set_xscale("log", base=2)
    if not sizes:
        return
    lo, hi = int(math.floor(math.log2(min(sizes)))), int(math.ceil(math.log2(max(sizes))))
    step = 2 if hi - lo > 12 else 1
    ax.xaxis.set_major_locator(FixedLocator([2.0**e for e in range(lo, hi + 1, step)]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: size_label(x)))


def panel_grid(n, width, height, ncols_max=3):
    """A figure of n panels, at most ncols_max a row, each width x height inches: (fig, axes in reading
    order); the grid's unused cells are hidden."""
    ncols = max(1, min(ncols_max, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def save(fig, out, title, dpi, title_size):
    """Titles the figure, leaves room for the title, creates out's folder and writes out."""
    fig.suptitle(title, fontsize=title_size)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))  # room for the suptitle
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=dpi)
