"""cclab.topology, presets, algorithms, compare and schedule: each against the command line it wraps."""
import csv
import json
import os

import pytest

import cclab
from conftest import ROOT, assert_rows_equal, read_csv, run_cli


def test_import_is_quick_and_exposes_the_documented_names():
    for name in cclab.__all__:
        assert hasattr(cclab, name), name
    for cls, base in ((cclab.InputError, ValueError), (cclab.EnvError, RuntimeError),
                      (cclab.CheckError, RuntimeError), (cclab.InternalError, RuntimeError)):
        assert issubclass(cls, cclab.Error) and issubclass(cls, base)


def test_topology_as_cclab_topo(cclab_bin, tmp_path):
    t = cclab.topology("dgx-h100")
    assert t.name == "dgx-h100" and t.num_gpus == 8 and t.num_servers == 1 and t.gpus_per_server == 8
    assert t.describe().strip() == run_cli(cclab_bin, "topo", "dgx-h100").stdout.strip()
    assert t.matrix().strip() in run_cli(cclab_bin, "topo", "dgx-h100", "--matrix").stdout
    assert t.connection(0, 1).startswith("NV")
    d = t.to_dict()
    assert sum(n["kind"] == "gpu" for n in d["nodes"]) == 8 and d["links"]
    path = tmp_path / "t.json"
    t.save(str(path))
    back = cclab.topology(str(path))
    assert back.num_gpus == 8 and back.to_dict()["links"] == d["links"]
    sub = t.select([0, 1, 4, 5])
    assert sub.num_gpus == 4
    c = cclab.topology("4xdgx-h100")
    assert c.num_gpus == 32 and c.num_servers == 4
    assert "dgx-h100" in cclab.presets() and "pcie-2socket" in cclab.presets()


def test_topology_bad_input(cclab_bin):
    p = run_cli(cclab_bin, "topo", "dgx-h999", check=False)
    with pytest.raises(cclab.InputError) as e:
        cclab.topology("dgx-h999")
    assert p.stderr.strip() == f"cclab topo: error: {e.value}"
    with pytest.raises(cclab.InputError):
        cclab.topology("/no/such/topology.json")
    with pytest.raises(cclab.InputError):
        cclab.topology("dgx-h100").select([0, 9])
    with pytest.raises(cclab.InputError):
        cclab.topology("dgx-h100").connection(0, 8)
    with pytest.raises(TypeError):
        cclab.topology(8)


def test_algorithms_as_cclab_list(cclab_bin):
    algos = cclab.algorithms()
    names = [a["name"] for a in algos]
    out = run_cli(cclab_bin, "list").stdout
    for n in names:
        assert n in out
    assert "allreduce.ring" in names and "allreduce.nccl" in names
    assert all(a["collective"] == "allreduce" for a in cclab.algorithms("allreduce"))
    assert all("sim" in a["backends"] for a in cclab.algorithms(backend="sim"))


def test_schedule_as_cclab_schedule(cclab_bin):
    s = cclab.schedule("allreduce.ring", ranks=4, nbytes="1M")
    cli = json.loads(run_cli(cclab_bin, "schedule", "--algo", "allreduce.ring", "-g", "4", "-b", "1M").stdout)
    assert s.to_dict() == cli
    assert s.algo == "allreduce.ring" and s.nranks == 4 and len(s) == len(cli["ops"]) > 0
    assert all(op["rank"] == 2 for op in s.ops_of(2))
    h = cclab.schedule("reducescatter.hier", ranks=8, nbytes=1 << 20, node_size=4, dtype="bfloat16")
    assert h.nranks == 8
    m = cclab.schedule("allgather_matmul.ring", ranks=2, shape=(64, 32, 16), dtype="half")
    assert len(m) > 0
    with pytest.raises(cclab.InputError) as e:
        cclab.schedule("allreduce.rhd", ranks=6, nbytes="1M")
    p = run_cli(cclab_bin, "schedule", "--algo", "allreduce.rhd", "-g", "6", "-b", "1M", check=False)
    assert p.returncode == 1 and p.stderr.strip() == f"cclab schedule: error: {e.value}"
    with pytest.raises(cclab.InputError):
        cclab.schedule("allreduce.nope")
    with pytest.raises(cclab.InputError):
        cclab.schedule("broadcast.binomial", ranks=4, root=4)


MEASURED = os.path.join(ROOT, "results", "h200x2")
PROFILE = os.path.join(ROOT, "profiles", "h200x2.json")


@pytest.mark.skipif(not os.path.isdir(MEASURED), reason="no committed records under results/h200x2")
def test_compare_equals_cclab_compare(cclab_bin, tmp_path):
    out = tmp_path / "c.csv"
    p = run_cli(cclab_bin, "compare", "--measured", MEASURED, "--topo", PROFILE, "--csv", out)
    header, cli_rows = read_csv(out)
    c = cclab.compare(MEASURED, PROFILE, frame=False)
    assert_rows_equal(c.rows, header, cli_rows)
    # The summary line of the command line, from the object's numbers.
    o = c.overall
    assert f"overall: median {100 * o['median']:.1f}% geomean {100 * o['geomean']:.1f}% max {100 * o['max']:.1f}%" \
        in p.stdout
    assert ("goals" in p.stdout) and (("NOT met" in p.stdout.splitlines()[-1]) == (not c.goals_met))
    assert len(c.per_algo) > 0 and all({"algo", "ranks", "median", "geomean", "max"} <= set(s) for s in c.per_algo)
    # The same rows handed over as rows (what was read), and a single file.
    files = sorted(f for f in os.listdir(MEASURED) if f.endswith(".csv"))
    one = os.path.join(MEASURED, files[0])
    _, raw = read_csv(one)
    from_rows = cclab.compare(raw, PROFILE, frame=False)
    from_file = cclab.compare(one, PROFILE, frame=False)
    assert from_rows.rows == from_file.rows
    pd = pytest.importorskip("pandas")
    c2 = cclab.compare(pd.read_csv(one), PROFILE)
    assert list(c2.rows["pred_time_us"]) == [r["pred_time_us"] for r in from_file.rows]


def test_compare_sets_nccls_own_estimate_beside_cclabs(cclab_bin, tmp_path):
    # The NCCL baselines of a committed file, given an estimate 1.5 x the measured time (error +50% everywhere).
    one = os.path.join(MEASURED, "exec_allreduce_float.csv")
    _, raw = read_csv(one)
    for r in raw:
        r["nccl_estimate_us"] = "%.9g" % (1.5 * float(r["time_us"])) if r["algo"].endswith(".nccl") else ""
    c = cclab.compare(raw, PROFILE, frame=False)
    nccl = [s for s in c.per_algo if s["algo"].endswith(".nccl")]
    assert nccl and all(abs(s["nccl_median"] - 0.5) < 1e-6 and abs(s["nccl_max"] - 0.5) < 1e-6 for s in nccl)
    assert all(s["nccl_sizes"] == s["sizes"] for s in nccl)
    assert all(s["cclab_below_nccl"] == (s["median"] < 0.5 and s["max"] < 0.5) for s in nccl)
    assert all("nccl_median" not in s for s in c.per_algo if not s["algo"].endswith(".nccl"))
    assert all(abs(r["nccl_error"] - 0.5) < 1e-6 for r in c.rows if r["algo"].endswith(".nccl"))
    # The command line prints the same goal per baseline.
    path = tmp_path / "with_estimate.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(raw[0].keys()))
        w.writeheader()
        w.writerows(raw)
    out = run_cli(cclab_bin, "compare", "--measured", path, "--topo", PROFILE).stdout
    for s in nccl:
        assert (f"cclab below NCCL's own estimate: {s['algo']} n={s['ranks']} ({s['sizes']} sizes): "
                f"{'met' if s['cclab_below_nccl'] else 'NOT met'}") in out


def test_compare_tune_adds_what_the_records_do_not_carry(cclab_bin, tmp_path):
    # An 8-GPU row at 64 KiB: NCCL's own choice is its LL ring; forced to NVLS as `cclab compare --tune` forces it.
    row = {"algo": "allreduce.nccl", "collective": "allreduce", "backend": "gpu", "topology": "dgx-h100",
           "ranks": 8, "bytes": 65536, "count": 16384, "dtype": "float", "time_us": 40.0, "wrong": 0}
    plain = cclab.compare([row], "dgx-h100", frame=False).rows[0]
    nvls = cclab.compare([row], "dgx-h100", tune={"NCCL_ALGO": "NVLS"}, frame=False).rows[0]
    assert "ring/ll" in plain["pred_note"] and "nvls/simple" in nvls["pred_note"]
    path = tmp_path / "row.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    out = tmp_path / "out.csv"
    run_cli(cclab_bin, "compare", "--measured", path, "--topo", "dgx-h100", "--tune", "NCCL_ALGO=NVLS", "--csv", out)
    _, cli_rows = read_csv(out)
    assert abs(float(cli_rows[0]["pred_time_us"]) - nvls["pred_time_us"]) <= 1e-6 * nvls["pred_time_us"]


def test_compare_bad_input(tmp_path):
    with pytest.raises(cclab.InputError):
        cclab.compare("/no/such/records", "h200x2")
    empty = tmp_path / "empty.csv"
    empty.write_text(",".join(cclab._cclab.csv_columns()) + "\n")
    with pytest.raises(cclab.InputError, match="no records"):
        cclab.compare(str(empty), "h200x2")
    with pytest.raises(cclab.InputError):
        cclab.compare(str(empty), "nowhere-9000")
    with pytest.raises(cclab.InputError):
        cclab.compare([], "h200x2")


def test_the_overlap_planner_example_runs():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, os.path.join(ROOT, "python", "examples", "overlap_planner.py")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "best bucket size" in p.stdout
