"""cclab.estimate: a collective's predicted time that a framework can call at every step.

The first call for a (topology, algorithm, ranks, dtype, profile, tune) simulates the algorithm at
log-spaced sizes, 1 B to 1 GiB by factors of 2, through the same function as ``cclab sim``
(``sim::simulate_sweep``), plus sizes around steps (where the time between two neighbours grows faster than
the size: NCCL's protocol switches, chunk counts; halved down to 1/16 octave), and keeps that table; every call
reads it off the table: a binary search and a power law between the two neighbouring sizes (linear
interpolation of log time against log size), exact at the table's sizes. Below the smallest size an
algorithm can split, the smallest size's time; above 1 GiB, the straight line through the last two sizes
(time linear in bytes, as bandwidth-bound transfers are). python/tests/test_estimate.py measures the interpolation
error against ``simulate`` at sizes between the table's.
"""

from . import _cclab
from ._cclab import InputError, Topology

# PyTorch's and NCCL's names of the collectives, as cclab's.
_ALIASES = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "all_gather_into_tensor": "allgather",
    "allgather_into_tensor": "allgather",
    "reduce_scatter": "reducescatter",
    "reduce_scatter_tensor": "reducescatter",
    "all_to_all": "alltoall",
    "all_to_all_single": "alltoall",
    "alltoall_base": "alltoall",
    "send_recv": "sendrecv",
}

MAX_LOG2 = 30  # the table's largest size: 1 GiB (larger sizes: the line through the last two)
POINTS_PER_OCTAVE = 1


class Estimator:
    """One table: ``est(nbytes)`` (or ``est.seconds(nbytes)``) is the predicted time in seconds of the
    collective on ``nbytes`` (nccl-tests' size: all-reduce and broadcast the buffer, all-gather the gathered
    output, reduce-scatter the input, all-to-all the buffer of one rank). 0 bytes take 0 s."""

    __slots__ = ("algo", "collective", "ranks", "topo", "dtype", "profile", "tune", "table", "seconds")

    def __init__(self, algo, collective, ranks, topo, dtype, profile, tune, table):
        self.algo, self.collective, self.ranks, self.topo = algo, collective, ranks, topo
        self.dtype, self.profile, self.tune, self.table = dtype, profile, tune, table
        self.seconds = table.seconds  # the bound C++ lookup itself: nothing in between

    def __call__(self, nbytes):
        return self.seconds(nbytes)

    def points(self):
        """The table: [(bytes, seconds)] at the simulated sizes."""
        return list(zip(self.table.bytes, self.table.times))

    def __repr__(self):
        t = self.topo if isinstance(self.topo, str) else self.topo.name
        return (f"<cclab.Estimator {self.algo} on {t}, {self.ranks} ranks, {self.dtype}: "
                f"{len(self.table.bytes)} sizes {self.table.bytes[0]} B..{self.table.bytes[-1]} B>")


_tables = {}  # (algorithm, ranks, topology key, dtype, profile, tune) -> Estimator
_calls = {}  # estimate()'s arguments as given -> Estimator


def _algorithm_name(collective, algo):
    if not isinstance(collective, str) or not isinstance(algo, str):
        raise TypeError("collective and algo are names (str)")
    coll = _ALIASES.get(collective, collective)
    name = algo if "." in algo else f"{coll}.{algo}"
    info = {a["name"]: a for a in _cclab.algorithms()}.get(name)
    if info is None:
        known = sorted({a["collective"] for a in _cclab.algorithms() if "sim" in a["backends"]})
        raise InputError(f"estimate: no algorithm '{name}' (collective '{collective}', algo '{algo}'); "
                         f"collectives: {', '.join(known)}")
    if info["collective"] != coll:
        raise InputError(f"estimate: {name} is a {info['collective']}, not a {coll}")
    return name


def estimator(collective, ranks, topo, *, dtype="float", profile=None, algo="nccl", tune=None):
    """The table behind ``estimate`` (built on first use, then shared): an ``Estimator``, callable on a size.

    collective: allreduce, allgather, reducescatter, alltoall, broadcast, reduce, ... (PyTorch's names such as
    all_reduce and reduce_scatter_tensor too). algo: the variant (``"nccl"``: NCCL's algorithm as the model
    sees it; ``"ring"``, ``"bidir"``, ...) or a full name such as ``"allreduce.ring"``. ranks: the first N GPUs
    of topo (a preset, a topology file or a ``cclab.Topology``). profile: a model profile file.
    """
    from . import _simulate_args, _tune_text

    name = _algorithm_name(collective, algo)
    if isinstance(ranks, bool) or not isinstance(ranks, int):
        raise TypeError(f"ranks: expected an int, got {ranks!r}")
    if ranks < 1:
        raise InputError(f"estimate: ranks must be at least 1 (got {ranks})")
    tune_text = _tune_text(tune)
    topo_key = topo if isinstance(topo, str) else id(topo)
    key = (name, ranks, topo_key, str(dtype), profile, tune_text)
    est = _tables.get(key)
    if est is None:
        args = _simulate_args(topo, name, [], ranks, dtype, "sum", 0, tune_text, profile, False, False, None, None,
                              None)
        table = _cclab.build_table(args, MAX_LOG2, POINTS_PER_OCTAVE)
        est = Estimator(name, collective, ranks, topo, str(dtype), profile, tune_text, table)
        _tables[key] = est  # keeps a Topology object alive, so its id stays its own
    return est


def estimate(collective, nbytes, ranks, topo, dtype="float", profile=None, algo="nccl", tune=None):
    """Predicted seconds of one collective on ``nbytes`` bytes over ``ranks`` GPUs of ``topo``: the
    prediction of ``cclab sim`` (same function), read off a table built on the first call for these
    arguments (see ``estimator``). A cached call costs a few microseconds.

        cclab.estimate("allreduce", 64 << 20, 8, "dgx-h100")              # NCCL's all-reduce, 64 MiB
        cclab.estimate("all_gather", 1 << 30, 16, "2xdgx-h100", algo="ring")
    """
    try:
        return _calls[(collective, ranks, topo, dtype, profile, algo, tune)].seconds(nbytes)
    except (KeyError, TypeError):
        pass
    est = estimator(collective, ranks, topo, dtype=dtype, profile=profile, algo=algo, tune=tune)
    try:
        _calls[(collective, ranks, topo, dtype, profile, algo, tune)] = est
    except TypeError:  # an unhashable argument (a tune dict): not cached by its arguments
        pass
    return est.seconds(nbytes)
