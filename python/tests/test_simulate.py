"""cclab.simulate against `cclab sim --csv`, row for row, and its errors against the command line's."""
import os
import threading
import time

import pytest

import cclab
from conftest import ROOT, assert_rows_equal, read_csv, run_cli

# (simulate's arguments, the same sweep's cclab sim flags)
SWEEPS = [
    (dict(topo="dgx-h100", algo="all", sizes=cclab.sizes(8, "1G", 4)),
     ["--topo", "dgx-h100", "--algo", "all", "-b", "8", "-e", "1G", "-f", "4"]),
    (dict(topo="pcie-2socket", algo="allreduce.ring,allgather.ring", sizes=cclab.sizes("1K", "256M", 8),
          ranks=[0, 1, 4, 5], no_p2p=True),
     ["--topo", "pcie-2socket", "--algo", "allreduce.ring,allgather.ring", "-b", "1K", "-e", "256M", "-f", "8",
      "--gpus", "0,1,4,5", "--no-p2p"]),
    (dict(topo="dgx-h100", algo=["allreduce.nccl", "reducescatter.ring"], sizes=cclab.sizes(1, "64M", 16),
          ranks=6, dtype="half", without_nvlink=True),
     ["--topo", "dgx-h100", "--algo", "allreduce.nccl,reducescatter.ring", "-b", "1", "-e", "64M", "-f", "16",
      "-g", "6", "-d", "half", "--without", "nvlink"]),
    (dict(topo="h200x2", algo="allreduce.bidir,allreduce.nccl", sizes=cclab.sizes("8", "1G", 32),
          profile=os.path.join(ROOT, "profiles", "h200x2.json"), tune={"lowering": "fused"}),
     ["--topo", "h200x2", "--algo", "allreduce.bidir,allreduce.nccl", "-b", "8", "-e", "1G", "-f", "32",
      "--profile", os.path.join(ROOT, "profiles", "h200x2.json"), "--tune", "lowering=fused"]),
    (dict(topo="2xdgx-h100", algo="alltoall.hier,allreduce.rhd", sizes=cclab.sizes("64K", "16M", 16)),
     ["--topo", "2xdgx-h100", "--algo", "alltoall.hier,allreduce.rhd", "-b", "64K", "-e", "16M", "-f", "16"]),
    (dict(topo="dgx-h100", algo="allgather_matmul.ring", sizes="1M", ranks=4, shape=(1024, 512, 256),
          dtype="half"),
     ["--topo", "dgx-h100", "--algo", "allgather_matmul.ring", "-b", "1M", "-e", "1M", "-g", "4",
      "--shape", "1024,512,256", "-d", "half"]),
    (dict(topo="dgx-h100", algo="allreduce.sparse", sizes="1M", ranks=8, rows=100000, dim=64, density=0.02,
          dist="zipf"),
     ["--topo", "dgx-h100", "--algo", "allreduce.sparse", "-b", "1M", "-e", "1M", "-g", "8", "--rows", "100000",
      "--dim", "64", "--density", "0.02", "--dist", "zipf"]),
]


@pytest.mark.parametrize("py,cli", SWEEPS, ids=[s[0]["topo"] + ":" + str(s[0]["algo"]) for s in SWEEPS])
def test_simulate_equals_the_command_line_row_for_row(py, cli, cclab_bin, tmp_path):
    out = tmp_path / "sim.csv"
    run_cli(cclab_bin, "sim", *cli, "--csv", out)
    header, cli_rows = read_csv(out)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cclab.SimWarning)
        rows = cclab.simulate(**py, frame=False)
    assert rows, "no rows"
    assert_rows_equal(rows, header, cli_rows)


def test_records_are_a_dataframe_with_pandas_and_rows_without():
    rows = cclab.simulate("dgx-h100", "allreduce.ring", cclab.sizes("1K", "1M", 4), frame=False)
    assert isinstance(rows, list) and isinstance(rows[0], dict)
    assert list(rows[0])[:len(cclab._cclab.csv_columns())] == list(cclab._cclab.csv_columns())
    assert [r["bytes"] for r in rows] == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert all(r["backend"] == "sim" and r["ranks"] == 8 and r["time_us"] > 0 for r in rows)
    pd = pytest.importorskip("pandas")
    df = cclab.simulate("dgx-h100", "allreduce.ring", cclab.sizes("1K", "1M", 4))
    assert isinstance(df, pd.DataFrame)
    assert list(df["bytes"]) == [r["bytes"] for r in rows]
    assert list(df["time_us"]) == [r["time_us"] for r in rows]


def test_sizes_and_default_sweep():
    assert cclab.sizes() == [8 << i for i in range(28)]  # cclab sim's 8 B .. 1 GiB by 2
    assert cclab.sizes("1K", "1M", 32) == [1024, 32768, 1048576]
    rows = cclab.simulate("h200x2", "allreduce.ring", frame=False)
    assert [r["bytes"] for r in rows] == cclab.sizes()
    assert [r["bytes"] for r in cclab.simulate("h200x2", "allreduce.ring", "64K", frame=False)] == [65536]
    with pytest.raises(cclab.InputError, match="larger than"):
        cclab.sizes("1M", "1K")
    with pytest.raises(cclab.InputError):
        cclab.sizes("12Q")


def test_a_topology_object_and_a_preset_name_give_the_same_rows():
    t = cclab.topology("pcie-2socket")
    a = cclab.simulate(t, "allreduce.ring", cclab.sizes("1K", "1G", 16), frame=False)
    b = cclab.simulate("pcie-2socket", "allreduce.ring", cclab.sizes("1K", "1G", 16), frame=False)
    assert a == b


# Bad input: the exception's class, and its message is the command line's line ("cclab sim: error: <message>").
BAD = [
    (dict(topo="dgx-h999", algo="allreduce.ring"), ["--topo", "dgx-h999", "--algo", "allreduce.ring"]),
    (dict(topo="dgx-h100", algo="allreduce.rnig"), ["--topo", "dgx-h100", "--algo", "allreduce.rnig"]),
    (dict(topo="dgx-h100", algo="allreduce.ring", ranks=16), ["--topo", "dgx-h100", "--algo", "allreduce.ring",
                                                              "-g", "16"]),
    (dict(topo="dgx-h100", algo="allreduce.ring", ranks=[0, 8]), ["--topo", "dgx-h100", "--algo",
                                                                  "allreduce.ring", "--gpus", "0,8"]),
    (dict(topo="dgx-h100", algo="allreduce.ring", dtype="double"), ["--topo", "dgx-h100", "--algo",
                                                                    "allreduce.ring", "-d", "double"]),
    (dict(topo="dgx-h100", algo="allgather_matmul.ring"), ["--topo", "dgx-h100", "--algo", "allgather_matmul.ring"]),
    (dict(topo="dgx-h100", algo="allreduce.ring", without_nvlink=False, profile="/no/such/profile.json"),
     ["--topo", "dgx-h100", "--algo", "allreduce.ring", "--profile", "/no/such/profile.json"]),
    (dict(topo=os.path.join(ROOT, "README.md"), algo="allreduce.ring"),
     ["--topo", os.path.join(ROOT, "README.md"), "--algo", "allreduce.ring"]),
    (dict(topo="dgx-h100", algo="allreduce.rhd", ranks=6, sizes="1M"),
     ["--topo", "dgx-h100", "--algo", "allreduce.rhd", "-g", "6", "-b", "1M", "-e", "1M"]),
]


@pytest.mark.parametrize("py,cli", BAD, ids=[" ".join(c[2:4]) + ("" if len(c) < 6 else " " + " ".join(c[4:6]))
                                             for _, c in BAD])
def test_bad_input_raises_input_error_with_the_command_lines_message(py, cli, cclab_bin):
    p = run_cli(cclab_bin, "sim", *cli, check=False)
    assert p.returncode == 1, p.stderr
    with pytest.raises(cclab.InputError) as e:
        cclab.simulate(**py)
    assert isinstance(e.value, ValueError) and isinstance(e.value, cclab.Error)
    assert p.stderr.strip().splitlines()[-1] == f"cclab sim: error: {e.value}"


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError):
        cclab.simulate(42, "allreduce.ring")
    with pytest.raises(TypeError):
        cclab.simulate("dgx-h100", "allreduce.ring", sizes=1.5)
    with pytest.raises(TypeError):
        cclab.simulate("dgx-h100", "allreduce.ring", tune=3)
    with pytest.raises(cclab.InputError):
        cclab.simulate("dgx-h100", "allreduce.ring", sizes=-8)


def test_notes_are_warnings():
    with pytest.warns(cclab.SimWarning, match="skipping .*allgather_matmul.ring"):
        cclab.simulate("h200x2", "all", "1M", frame=False)
    with pytest.warns(cclab.SimWarning, match="hold no element per rank"):
        cclab.simulate("dgx-h100", "allgather.ring", cclab.sizes(1, 1024), frame=False)


def test_progress_and_trace(tmp_path):
    seen = []
    trace = tmp_path / "t.json"
    cclab.simulate("dgx-h100", "allreduce.ring,allreduce.tree", ["1M", "4M"], trace=trace,
                   progress=lambda i, n, name, el: seen.append((i, n, name)), frame=False)
    assert seen == [(0, 2, "allreduce.ring"), (1, 2, "allreduce.tree")]
    assert trace.exists() and b"traceEvents" in trace.read_bytes()[:200]

    def boom(*_):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        cclab.simulate("dgx-h100", "allreduce.ring", "1M", progress=boom)


def test_the_gil_is_released_while_simulating():
    """Another Python thread runs while a sweep simulates (it would not if the sweep held the GIL). On 64 servers:
    16 fold onto one server's ranks in ~40 ms, too short to tell."""
    done = threading.Event()
    err = []

    def sweep():
        try:
            cclab.simulate("64xdgx-h100", "allreduce.ring,alltoall.direct", cclab.sizes("1M", "1G", 4), frame=False)
        except Exception as e:  # pragma: no cover - reported below
            err.append(e)
        finally:
            done.set()

    t = threading.Thread(target=sweep)
    t0 = time.perf_counter()
    t.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    elapsed = time.perf_counter() - t0
    assert not err, err
    assert elapsed > 0.05, f"the sweep took {elapsed:.3f} s: too short to tell"
    # Holding the GIL, the sweep would let this thread tick only at its start and end (and at the progress
    # checks every 50 ms); released, it ticks about once a millisecond (less on a busy machine).
    assert ticks >= 20 and ticks >= 20 * elapsed, f"{ticks} ticks in {elapsed:.2f} s"


def test_ctrl_c_stops_the_sweep_after_the_row_in_progress():
    """SIGINT while simulating: KeyboardInterrupt, soon (Python's handler runs between rows)."""
    import signal
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    # Python's own Ctrl-C handler, also where this process inherited SIGINT ignored (a job started in the
    # background by a non-interactive shell: Python then installs none).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # Not "all": the bidir kernels have no model beyond 8 ranks, and simulating their schedules on 256 GPUs
            # takes minutes a row, longer than the interrupt may wait for the row in progress.
            cclab.simulate("32xdgx-h100", "allreduce.ring,allreduce.rhd,alltoall.direct,alltoall.bruck,allgather.ring,"
                           "reducescatter.ring,broadcast.binomial,reduce.binomial,allreduce.tree",
                           cclab.sizes("1M", "1G", 2), frame=False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - t0 < 10
