"""cclab from Python: the simulator of ``cclab sim``, ``cclab compare`` and ``cclab schedule``, and a
collective-time estimator that frameworks can call.

    import cclab
    df = cclab.simulate("dgx-h100", "allreduce.ring,allreduce.nccl", cclab.sizes("1K", "1G", 4))
    print(df[["algo", "bytes", "time_us", "busbw_gbps"]])
    t = cclab.estimate("allreduce", 64 << 20, 8, "dgx-h100")   # seconds, NCCL's all-reduce of 64 MiB
    print(f"{t * 1e6:.1f} us")

Every call runs the same C++ function as the command line (``simulate`` and ``cclab sim`` both call
``sim::simulate_sweep``, so their rows are equal), with the GIL released while it simulates.

Errors are exceptions carrying the command line's one-line message:

- ``cclab.Error`` (Exception): every cclab error;
- ``cclab.InputError`` (Error, ValueError): bad input, an unknown algorithm, preset or dtype, a malformed
  file, more ranks than GPUs, a size the algorithm cannot split (the command line's exit code 1);
- ``cclab.EnvError`` (Error, RuntimeError): the machine lacks something (exit code 2);
- ``cclab.CheckError`` (Error, RuntimeError): a result check failed (exit code 3);
- ``cclab.InternalError`` (Error, RuntimeError): a bug in cclab (exit code 4).

Arguments of the wrong Python type raise TypeError. Notes the command line prints on stderr (algorithms or
sizes skipped) are warnings of class ``cclab.SimWarning``.

Records (``simulate``, ``compare``) are a pandas DataFrame when pandas is installed and ``frame`` is not
False, else a list of dicts, one per row; either way the columns are the CSV contract's (core/record.hpp)
in its order, then the extra columns (``bottleneck``, ``bottleneck_util``, ...).
"""

import csv as _csv
import json as _json
import os as _os
import tempfile as _tempfile
import warnings as _warnings

from . import _cclab
from ._cclab import CheckError, EnvError, Error, InputError, InternalError, TimeTable, Topology

__all__ = [
    "Error", "InputError", "EnvError", "CheckError", "InternalError", "SimWarning",
    "Topology", "TimeTable", "Schedule", "Comparison", "Estimator",
    "topology", "presets", "algorithms", "sizes", "simulate", "compare", "schedule", "estimate", "estimator",
]
__version__ = "0.1.0"


class SimWarning(UserWarning):
    """A note of the sweep (what ``cclab sim`` prints on stderr): algorithms or sizes skipped, and why."""


# ---------------------------------------------------------------------------------------------------------
# Small helpers


def _size(v, what="size"):
    """8, "64K", "1M", "1G" (powers of 1024) as bytes."""
    if isinstance(v, bool):
        raise TypeError(f"{what}: expected an int or a string such as '64K', got {v!r}")
    if isinstance(v, int):
        if v < 0:
            raise InputError(f"{what}: {v} is negative")
        return v
    if isinstance(v, str):
        return _cclab.parse_size(what, v)
    if isinstance(v, float) and v.is_integer():
        return _size(int(v), what)
    raise TypeError(f"{what}: expected an int or a string such as '64K', got {v!r}")


def _topo_args(topo):
    """(Topology or None, preset / file / profile path)."""
    if isinstance(topo, Topology):
        return topo, ""
    if isinstance(topo, (str, _os.PathLike)):
        return None, _os.fspath(topo)
    raise TypeError(f"topo: expected a preset name, a file or a cclab.Topology, got {type(topo).__name__}")


def _tune_text(tune):
    if tune is None:
        return ""
    if isinstance(tune, str):
        return tune
    if isinstance(tune, dict):
        return ",".join(f"{k}={v}" for k, v in tune.items())
    raise TypeError(f"tune: expected 'key=value,...' or a dict, got {type(tune).__name__}")


def _want_frame(frame):
    if frame is False:
        return None
    try:
        import pandas
    except ImportError:
        if frame:
            raise
        return None
    return pandas


def _records(columns, frame):
    """The C++ side's (names, columns) as a DataFrame or a list of dicts."""
    names, cols = columns
    pd = _want_frame(frame)
    if pd is not None:
        return pd.DataFrame({n: c for n, c in zip(names, cols)}, columns=names)
    return [dict(zip(names, row)) for row in zip(*cols)]


def _shape(shape):
    if shape is None:
        return None
    if isinstance(shape, str):
        shape = shape.split(",")
    try:
        m, k, n = (int(x) for x in shape)
    except (TypeError, ValueError):
        raise InputError(f"shape takes M,K,N (three positive integers), got {shape!r}") from None
    return (m, k, n)


def _sparse(rows, dim, density, dist):
    if rows is None and dim is None:
        return None
    if rows is None or dim is None:
        raise InputError("cclab sim: sparse all-reduce needs both --rows and --dim")
    return (int(rows), int(dim), float(density), str(dist))


# ---------------------------------------------------------------------------------------------------------
# Topologies, algorithms, sizes


def topology(preset_or_file):
    """A topology: a preset (``dgx-h100``, ``4xdgx-h100``, ``pcie-2socket``, ...) or a file (the cclab format,
    ``nvidia-smi topo -m`` text, an NCCL topology XML). As ``cclab topo``: ``.describe()``, ``.matrix()``,
    ``.to_json()`` / ``.to_dict()``, ``.save(path)``, ``.select([0, 1, 4, 5])``, ``.num_gpus``."""
    _, name = _topo_args(preset_or_file)
    if not name:
        return preset_or_file
    return Topology.load(name)


def _topology_to_dict(self):
    """The topology in the cclab file format, as a dict (``nodes``, ``links``, ...)."""
    return _json.loads(self.to_json())


def _topology_repr(self):
    return f"<cclab.Topology {self.name!r}: {self.num_gpus} GPUs, {self.num_servers} servers>"


Topology.to_dict = _topology_to_dict
Topology.__repr__ = _topology_repr


def presets():
    """The topology presets' names (clusters: ``<N>x<preset>[:os<K>]``)."""
    return list(_cclab.preset_names())


def algorithms(collective=None, backend=None):
    """Every algorithm as a dict (name, collective, summary, backends, library, rooted, needs_shape,
    needs_sparse), as ``cclab list`` shows them; optionally only one collective's or one backend's
    (``"sim"``, ``"ref"``, ``"gpu"``)."""
    out = _cclab.algorithms()
    if collective is not None:
        out = [a for a in out if a["collective"] == collective]
    if backend is not None:
        out = [a for a in out if backend in a["backends"]]
    return out


def sizes(minbytes=8, maxbytes="1G", factor=2):
    """The sizes of ``cclab sim -b MIN -e MAX -f FACTOR``: MIN, MIN x FACTOR, ... while at most MAX."""
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise TypeError(f"factor: expected an int, got {factor!r}")
    return list(_cclab.sweep_sizes(_size(minbytes, "-b"), _size(maxbytes, "-e"), factor))


def _size_list(s):
    if s is None:
        return sizes()
    if isinstance(s, (int, str)) and not isinstance(s, bool):
        return [_size(s)]
    try:
        items = list(s)
    except TypeError:
        raise TypeError(f"sizes: expected a size, a list of sizes or None, got {type(s).__name__}") from None
    return [_size(x) for x in items]


# ---------------------------------------------------------------------------------------------------------
# simulate


def _simulate_args(topo, algo, size_list, ranks, dtype, redop, root, tune, profile, without_nvlink, no_p2p,
                   node_size, shape, sparse):
    a = _cclab.SimulateArgs()
    a.topology, a.topo = _topo_args(topo)
    if not isinstance(algo, str):
        algo = ",".join(algo)  # a list of names
    a.algo = algo
    a.sizes = size_list
    if ranks is not None:
        if isinstance(ranks, bool):
            raise TypeError("ranks: expected an int or a list of GPU indices")
        if isinstance(ranks, int):
            if ranks < 1:
                raise InputError(f"cclab sim: -g {ranks}: at least one rank")
            a.ngpus = ranks
        else:
            a.gpus = [int(g) for g in ranks]
    a.without_nvlink = bool(without_nvlink)
    a.no_p2p = bool(no_p2p)
    a.dtype = str(dtype)
    a.redop = str(redop)
    a.root = int(root)
    a.node_size = 0 if node_size is None else int(node_size)
    if node_size is not None and a.node_size < 1:
        raise InputError(f"node_size must be at least 1 (got {node_size})")
    a.tune = _tune_text(tune)
    a.shape = _shape(shape)
    a.sparse = sparse
    a.profile = "" if profile is None else _os.fspath(profile)
    return a


def simulate(topo, algo, sizes=None, *, ranks=None, dtype="float", redop="sum", root=0, tune=None,
             profile=None, without_nvlink=False, no_p2p=False, node_size=None, shape=None, rows=None, dim=None,
             density=0.01, dist="uniform", trace=None, frame=None, progress=None):
    """Simulates algorithms on a topology: the records ``cclab sim`` writes, row for row.

    topo: a preset, a topology file or a ``cclab.Topology``. algo: a name, a comma-separated list or a list
    of names, or ``"all"``. sizes: a size (``8``, ``"64K"``), a list of sizes, or None for ``cclab sim``'s
    8 B to 1 GiB by 2 (``cclab.sizes(min, max, factor)`` gives any such sweep). ranks: the first N GPUs
    (``-g N``), or a list of GPU indices (``--gpus``); default every GPU. dtype: float | half | bfloat16.
    tune: ``"key=value,..."`` or a dict (``--tune``). profile: a model profile file (``--profile``).
    without_nvlink / no_p2p: ``--without nvlink`` / ``--no-p2p``. shape: (M, K, N) for collective matmul;
    rows, dim, density, dist: sparse all-reduce. trace: write a Chrome trace of each algorithm's largest
    size to this file. progress: called as progress(index, count, algo, elapsed_s) as each algorithm starts.

    Returns a pandas DataFrame (a list of dicts without pandas, or with frame=False). Raises InputError
    with ``cclab sim``'s message for bad input; KeyboardInterrupt stops it after the row in progress.
    """
    a = _simulate_args(topo, algo, _size_list(sizes), ranks, dtype, redop, root, tune, profile, without_nvlink,
                       no_p2p, node_size, shape, _sparse(rows, dim, density, dist))
    columns, notes, _label, _nranks = _cclab.simulate(a, "" if trace is None else _os.fspath(trace), progress)
    for n in notes:
        _warnings.warn(n, SimWarning, stacklevel=2)
    return _records(columns, frame)


# ---------------------------------------------------------------------------------------------------------
# compare


class Comparison:
    """``cclab compare``'s result: ``rows`` (the compared measured rows, pred_time_us, pred_busbw_gbps and
    error filled), ``per_algo`` (per algorithm and ranks: sizes, median, geomean and max of |error|, the worst
    size, goals met; where the rows carry NCCL's own estimate, nccl_sizes, nccl_median, nccl_geomean, nccl_max
    and cclab_below_nccl), ``overall``, ``skipped`` ({reason: rows}), ``failed`` ([(row, why)]),
    ``plan_mismatches`` ([(row, the plan columns that differ)]: the plan that ran is not the plan priced),
    ``goals_met``, ``target`` (what was predicted on)."""

    def __init__(self, d, frame):
        self.target = d["target"]
        self.measured_rows = d["measured_rows"]
        self.rows = _records(d["rows"], frame)
        pd = _want_frame(frame)
        self.per_algo = pd.DataFrame(d["per_algo"]) if pd is not None else list(d["per_algo"])
        self.overall = dict(d["overall"])
        self.skipped = dict(d["skipped"])
        self.failed = list(d["failed"])
        self.plan_mismatches = list(d["plan_mismatches"])
        self.goals_met = bool(d["goals_met"])

    def __repr__(self):
        o = self.overall
        return (f"<cclab.Comparison on {self.target}: {o['sizes']} rows, median {100 * o['median']:.1f}%, "
                f"geomean {100 * o['geomean']:.1f}%, max {100 * o['max']:.1f}%, goals "
                f"{'met' if self.goals_met else 'NOT met'}>")


def _write_measured(rows, path):
    """Rows (a DataFrame or dicts with the contract columns) to a CSV the C++ side reads."""
    if hasattr(rows, "to_dict"):
        rows = rows.to_dict("records")
    rows = list(rows)
    if not rows:
        raise InputError("compare: no measured rows")
    names = []
    for r in rows:
        for k in r:
            if k not in names:
                names.append(k)

    def text(v):
        if v is None or (isinstance(v, float) and v != v):  # None, NaN: empty
            return ""
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, float):
            return repr(v)
        return str(v)

    with open(path, "w", newline="") as f:
        w = _csv.writer(f)
        w.writerow(names)
        for r in rows:
            w.writerow([text(r.get(n)) for n in names])


def compare(measured, topo, *, profile=None, tune=None, frame=None):
    """Prediction against measurement, as ``cclab compare``: every measured GPU row predicted on topo (a
    preset, a topology file, a profile such as ``profiles/h200x2.json``, or a ``cclab.Topology``).

    measured: a records CSV or a folder of them, or rows (a DataFrame or a list of dicts with the contract
    columns). tune: settings the rows ran under that their records do not carry (``--tune``), added to each
    row's tune column. Returns a ``cclab.Comparison``.
    """
    topology_obj, name = _topo_args(topo)
    prof = "" if profile is None else _os.fspath(profile)
    settings = _tune_text(tune)
    if isinstance(measured, (str, _os.PathLike)):
        d = _cclab.compare(_os.fspath(measured), topology_obj, name, prof, settings)
    else:
        with _tempfile.TemporaryDirectory(prefix="cclab_compare_") as tmp:
            path = _os.path.join(tmp, "measured.csv")
            _write_measured(measured, path)
            d = _cclab.compare(path, topology_obj, name, prof, settings)
    return Comparison(d, frame)


# ---------------------------------------------------------------------------------------------------------
# schedule


class Schedule:
    """The schedule an algorithm emits (``cclab schedule``'s JSON as an object): ``algo``, ``collective``,
    ``nranks``, ``count``, ``dtype``, ``ops`` (a list of dicts: rank, channel, kind, peer, buffers, offsets,
    bytes, deps ...), ``buffers`` and every other field of the JSON as attributes; ``to_dict()`` is the JSON."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        try:
            return self.__dict__["_data"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._data))

    def to_dict(self):
        return self._data

    def __len__(self):
        return len(self._data.get("ops", []))

    def ops_of(self, rank):
        """The ops of one rank, in order."""
        return [op for op in self._data.get("ops", []) if op.get("rank") == rank]

    def __repr__(self):
        d = self._data
        return (f"<cclab.Schedule {d.get('algo')}: {d.get('nranks')} ranks, count {d.get('count')}, "
                f"{len(self)} ops>")


def schedule(algo, ranks=2, nbytes=8, *, dtype="float", redop="sum", root=0, inplace=False, channels=1,
             chunk=0, node_size=0, shape=None, rows=None, dim=None, density=0.01, dist="uniform"):
    """The schedule ``algo`` emits for ``ranks`` ranks and ``nbytes`` (nccl-tests' size), checked (structure
    and happens-before) as ``cclab schedule`` checks it. Returns a ``cclab.Schedule``."""
    a = _cclab.ScheduleArgs()
    a.algo = str(algo)
    a.ranks = int(ranks)
    a.nbytes = _size(nbytes, "nbytes")
    a.dtype = str(dtype)
    a.redop = str(redop)
    a.root = int(root)
    a.inplace = bool(inplace)
    a.channels = int(channels)
    a.chunk = _size(chunk, "chunk")
    a.node_size = int(node_size)
    a.shape = _shape(shape)
    if rows is not None or dim is not None:
        a.sparse = _sparse(rows, dim, density, dist)
    return Schedule(_json.loads(_cclab.schedule_json(a)))


# ---------------------------------------------------------------------------------------------------------
# estimate

from ._estimate import Estimator, estimate, estimator  # noqa: E402
