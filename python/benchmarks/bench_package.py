#!/usr/bin/env python3
"""The package's numbers (issue 24's goals), recorded, not asserted:

1. the estimator: a first call (the table built: simulations at 35 sizes) on dgx-h100 for each NCCL collective,
   goal <= 50 ms; a cached call, goal <= 20 us;
2. cclab.simulate against `cclab sim --csv` on the same sweep (README's: every algorithm on dgx-h100, 8 B to
   1 GiB by 4), each the best of --repeat runs, goal: the package at most 1.05 x the command line;
3. `import cclab` in a fresh interpreter, goal < 1 s; with --install-venv, `pip install .` into a new virtual
   environment (a full build) and the import from there.

    python3 python/benchmarks/bench_package.py [--cli build/cli/cclab] [--out results/sim/python_package.txt]
        [--install-venv /tmp/cclab-venv]
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return "unknown"


def bench_estimator(cclab, lines):
    from cclab import _estimate
    lines.append("## estimator (dgx-h100, 8 ranks, float, algo nccl)")
    lines.append("first call (the table built), best of 3 fresh tables: wall and CPU time (the CPU time is what a busy "
                 "machine does not inflate); goal <= 50 ms")
    firsts = []
    for coll in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"):
        wall, cpu = [], []
        for _ in range(3):
            _estimate._tables.clear()
            _estimate._calls.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            cclab.estimate(coll, 1 << 20, 8, "dgx-h100")
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        firsts.append(min(wall))
        n = len(cclab.estimator(coll, 8, "dgx-h100").points())
        lines.append(f"first call  {coll:14s} wall {min(wall) * 1e3:7.2f} ms  CPU {min(cpu) * 1e3:7.2f} ms  "
                     f"({n} sizes simulated)")
    # Cached: the same arguments, sizes varying (what a planner asks), timed in batches; the median batch.
    sizes = [int(1.37 ** k) + 1 for k in range(80)]
    cclab.estimate("allreduce", 1 << 20, 8, "dgx-h100")
    per = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(250):
            for s in sizes:
                cclab.estimate("allreduce", s, 8, "dgx-h100")
        per.append((time.perf_counter() - t0) / (250 * len(sizes)))
    est = cclab.estimator("allreduce", 8, "dgx-h100")
    per_obj = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(250):
            for s in sizes:
                est(s)
        per_obj.append((time.perf_counter() - t0) / (250 * len(sizes)))
    lines.append(f"cached call cclab.estimate(...)     median {statistics.median(per) * 1e6:6.2f} us, "
                 f"worst batch {max(per) * 1e6:6.2f} us  (goal <= 20 us)")
    lines.append(f"cached call via cclab.estimator(...) median {statistics.median(per_obj) * 1e6:6.2f} us")
    return max(firsts), statistics.median(per)


def bench_simulate(cclab, cli, repeat, lines):
    args = ["--topo", "dgx-h100", "--algo", "all", "-b", "8", "-e", "1G", "-f", "4"]
    lines.append("## cclab.simulate against the command line: cclab sim " + " ".join(args) + " --csv FILE")
    cli_times, py_times, cli_cpu, py_cpu = [], [], [], []
    import resource
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cclab.simulate("h200x2", "allreduce.ring", "1M")  # pandas imported once, before the timing
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.csv")
        for _ in range(repeat):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([cli, "sim", *args, "--csv", out], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            cli_times.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0, c0 = time.perf_counter(), time.process_time()
                rows = cclab.simulate("dgx-h100", "all", cclab.sizes(8, "1G", 4))
                py_times.append(time.perf_counter() - t0)
                py_cpu.append(time.process_time() - c0)
    c, p = min(cli_times), min(py_times)
    lines.append(f"command line (a process; table printed, CSV written)  best of {repeat}: wall {c:.3f} s, "
                 f"CPU {min(cli_cpu):.3f} s  (walls {', '.join(f'{t:.3f}' for t in cli_times)})")
    lines.append(f"cclab.simulate (a {type(rows).__name__} of {len(rows)} rows)      best of {repeat}: wall {p:.3f} s, "
                 f"CPU {min(py_cpu):.3f} s  (walls {', '.join(f'{t:.3f}' for t in py_times)})")
    lines.append(f"ratio package / command line: wall {p / c:.3f}, CPU {min(py_cpu) / min(cli_cpu):.3f}  "
                 "(goal <= 1.05)")
    return p / c


def bench_import(lines, python=sys.executable, label="## import"):
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", "import cclab"], check=True)
        times.append(time.perf_counter() - t0)
    base = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", "pass"], check=True)
        base.append(time.perf_counter() - t0)
    lines.append(label)
    lines.append(f"python -c 'import cclab': best {min(times):.3f} s (an empty interpreter: {min(base):.3f} s)"
                 "  (goal < 1 s)")
    return min(times)


def bench_install(venv, lines):
    """`pip install <repository>` into a new virtual environment (build isolation: pip fetches scikit-build-core
    and nanobind; a full build of the CPU core and the module), then its import."""
    subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    t0, r0 = time.perf_counter(), resource_children()
    subprocess.run([py, "-m", "pip", "install", "-q", ROOT], check=True)
    dt, cpu = time.perf_counter() - t0, resource_children() - r0
    lines.append(f"## pip install . into a fresh venv ({venv})")
    lines.append(f"pip install: wall {dt:.0f} s, CPU {cpu:.0f} s (all processes; {os.cpu_count()} CPUs, load average "
                 f"{os.getloadavg()[0]:.1f} at the end)")
    bench_import(lines, py, "## import from the fresh venv")


def resource_children():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=None, help="the cclab binary (default: the newest build*/cli/cclab)")
    ap.add_argument("--out", default=None, help="also write the numbers to this file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--install-venv", default=None,
                    help="also time `pip install .` into a new virtual environment at this path (minutes)")
    a = ap.parse_args()
    import cclab

    cli = a.cli
    if cli is None:
        import glob
        cands = sorted(glob.glob(os.path.join(ROOT, "build*", "cli", "cclab")), key=os.path.getmtime, reverse=True)
        cli = cands[0] if cands else None
    lines = [f"# cclab Python package benchmark: commit {git_commit()}, {datetime.date.today()}, "
             f"{platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}, "
             f"module {cclab._cclab.__file__}"]
    bench_estimator(cclab, lines)
    if cli:
        bench_simulate(cclab, cli, a.repeat, lines)
    else:
        lines.append("## no cclab binary: simulate against the command line not timed")
    bench_import(lines)
    if a.install_venv:
        bench_install(a.install_venv, lines)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
