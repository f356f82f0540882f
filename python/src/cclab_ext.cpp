// cclab._cclab: the C++ side of `import cclab` (python/cclab/__init__.py is the documented interface).
// Every call here is a thin wrapper of the library function the command line calls: simulate ->
// sim::simulate_sweep (cclab sim), compare -> sim::compare (cclab compare), schedule -> make_schedule
// (cclab schedule), build_table -> sim::build_time_table (cclab.estimate). The GIL is released while they run.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <ios>
#include <map>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/record.hpp"
#include "model/params.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "sim/estimate.hpp"
#include "sim/sweep.hpp"
#include "sim/trace.hpp"
#include "topology/topology.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cclab::py {

namespace {

// The Python exception classes of the four error kinds (created in NB_MODULE).
PyObject* g_error = nullptr;           // cclab.Error(Exception): every cclab error
PyObject* g_input_error = nullptr;     // cclab.InputError(cclab.Error, ValueError): exit code 1
PyObject* g_env_error = nullptr;       // cclab.EnvError(cclab.Error, RuntimeError): exit code 2
PyObject* g_check_error = nullptr;     // cclab.CheckError(cclab.Error, RuntimeError): exit code 3
PyObject* g_internal_error = nullptr;  // cclab.InternalError(cclab.Error, RuntimeError): exit code 4

PyObject* class_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::input:
      return g_input_error;
    case ErrorKind::environment:
      return g_env_error;
    case ErrorKind::check:
      return g_check_error;
    case ErrorKind::internal:
      return g_internal_error;
  }
  return g_error;
}

// A number column's text ("0.85") as a number, other text as it is, "" as None.
nb::object extra_value(const std::string& text) {
  if (text.empty()) return nb::none();
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (end && *end == '\0') return nb::int_(i);
  const double d = std::strtod(text.c_str(), &end);
  if (end && *end == '\0') return nb::float_(d);
  return nb::str(text.c_str(), text.size());
}

nb::object optional_float(const std::optional<double>& v) { return v ? nb::object(nb::float_(*v)) : nb::none(); }

// Records as (column names, one list per column), the CSV's columns in its order (core/record.hpp), extra
// columns after them in first-seen order. Values keep the CSV's meaning: inplace 0/1, absent optional
// numbers None.
nb::tuple records_columns(const std::vector<Record>& rows) {
  std::vector<std::string> names = csv_columns();
  const size_t fixed = names.size();
  std::map<std::string, size_t> extra_index;
  for (const auto& r : rows)
    for (const auto& [k, v] : r.extra)
      if (extra_index.emplace(k, names.size()).second) names.push_back(k);
  std::vector<nb::list> cols(names.size());
  for (const Record& r : rows) {
    size_t c = 0;
    auto put = [&](nb::object v) { cols[c++].append(std::move(v)); };
    put(nb::str(r.algo.c_str()));
    put(nb::str(r.collective.c_str()));
    put(nb::str(r.backend.c_str()));
    put(nb::str(r.topology.c_str()));
    put(nb::int_(r.ranks));
    put(nb::int_(r.bytes));
    put(nb::int_(r.count));
    put(nb::str(r.dtype.c_str()));
    put(nb::str(r.redop.c_str()));
    put(nb::int_(r.root));
    put(nb::int_(r.in_place ? 1 : 0));
    put(nb::float_(r.time_us));
    put(nb::float_(r.algbw_gbps));
    put(nb::float_(r.busbw_gbps));
    put(nb::int_(r.wrong));
    put(nb::str(r.device.c_str()));
    put(nb::str(r.commit.c_str()));
    put(nb::str(r.date.c_str()));
    put(nb::str(r.shape.c_str()));
    put(optional_float(r.pred_time_us));
    put(optional_float(r.pred_busbw_gbps));
    put(optional_float(r.error()));
    put(nb::str(r.note.c_str()));
    put(optional_float(r.nccl_estimate_us));
    CCLAB_ASSERT(c == fixed, "records_columns: one value per contract column");
    for (size_t i = fixed; i < names.size(); ++i) {  // as the CSV: the last value of a repeated name
      std::string value;
      bool have = false;
      for (const auto& [k, v] : r.extra)
        if (k == names[i]) value = v, have = true;
      cols[i].append(have ? extra_value(value) : nb::none());
    }
  }
  nb::list py_cols;
  for (auto& col : cols) py_cols.append(col);
  return nb::make_tuple(names, py_cols);
}

// While the sweep runs without the GIL: Python's signal handlers (Ctrl-C) are run every 50 ms between rows,
// and a progress callable, if any, hears each algorithm's start.
class PyObserver final : public sim::SweepObserver {
 public:
  explicit PyObserver(nb::object progress) : progress_(std::move(progress)) {}
  ~PyObserver() override {
    nb::gil_scoped_acquire gil;
    progress_.reset();
  }

  bool stop_requested() override {
    if (interrupted_) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ < std::chrono::milliseconds(50)) return false;
    last_check_ = now;
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      interrupted_ = true;
      error_ = std::make_unique<nb::python_error>();  // fetches the error (KeyboardInterrupt)
    }
    return interrupted_;
  }
  void note(const std::string& line) override { notes.push_back(line); }
  void algorithm_started(size_t index, size_t count, const Algorithm& a, double elapsed_s) override {
    if (!progress_.is_valid() || progress_.is_none() || interrupted_) return;
    nb::gil_scoped_acquire gil;
    try {
      progress_(index, count, a.name, elapsed_s);
    } catch (nb::python_error& e) {
      interrupted_ = true;
      error_ = std::make_unique<nb::python_error>(std::move(e));
    }
  }
  // Re-raises what stopped the sweep (call with the GIL held).
  void rethrow() {
    if (error_) {
      nb::python_error e = std::move(*error_);
      error_.reset();
      throw e;
    }
  }

  std::vector<std::string> notes;

 private:
  nb::object progress_;
  std::chrono::steady_clock::time_point last_check_ = std::chrono::steady_clock::now();
  bool interrupted_ = false;
  std::unique_ptr<nb::python_error> error_;
};

// Parsed in Python (cclab/__init__.py) into these plain values.
struct SimulateArgs {
  std::optional<topo::Topology> topology;
  std::string topo;
  std::string algo;
  std::vector<int64_t> sizes;
  std::optional<std::vector<int>> gpus;
  std::optional<int> ngpus;
  bool without_nvlink = false, no_p2p = false;
  std::string dtype = "float", redop = "sum";
  int root = 0;
  int node_size = 0;
  std::string tune;
  std::optional<std::tuple<int64_t, int64_t, int64_t>> shape;
  std::optional<std::tuple<int64_t, int64_t, double, std::string>> sparse;  // rows, dim, density, dist
  std::string profile;
};

sim::SweepRequest make_request(const SimulateArgs& a) {
  sim::SweepRequest req;
  req.topology = a.topology;
  req.topo = a.topo;
  req.algo = a.algo;
  req.sizes = a.sizes;
  req.gpus = a.gpus;
  req.ngpus = a.ngpus;
  req.without_nvlink = a.without_nvlink;
  req.no_p2p = a.no_p2p;
  req.base.dtype = parse_dtype(a.dtype);
  req.base.redop = parse_redop(a.redop);
  if (a.root < 0) throw_input("root must be a rank (got " + std::to_string(a.root) + ")");
  req.base.root = a.root;
  req.base.node_size = a.node_size;
  req.base.tune = a.tune;
  if (a.shape) {
    const auto [m, k, n] = *a.shape;
    if (m < 1 || k < 1 || n < 1 || m > (int64_t(1) << 31) || k > (int64_t(1) << 31) || n > (int64_t(1) << 31))
      throw_input("shape takes M,K,N (three positive integers up to 2^31)");
    req.base.shape = {m, k, n};
  }
  if (a.sparse) {
    const auto& [rows, dim, density, dist] = *a.sparse;
    if (rows < 1 || dim < 1 || rows > (int64_t(1) << 40) || dim > (int64_t(1) << 30))
      throw_input("sparse all-reduce needs rows (1..2^40) and dim (1..2^30)");
    if (rows > (int64_t(1) << 50) / dim)
      throw_input("cclab sim: --rows " + std::to_string(rows) + " x --dim " + std::to_string(dim) +
                  " elements is too large (at most 2^50)");
    if (!(density >= 0.0 && density <= 1.0)) throw_input("density must be within [0, 1]");
    req.base.sparse.rows = rows;
    req.base.sparse.dim = dim;
    req.base.sparse.density = density;
    if (dist == "uniform")
      req.base.sparse.dist = IndexDist::uniform;
    else if (dist == "zipf")
      req.base.sparse.dist = IndexDist::zipf;
    else
      throw_input("cclab sim: --dist takes uniform or zipf (got '" + dist + "')");
  }
  if (!a.profile.empty()) req.profile = a.profile;
  return req;
}

nb::tuple simulate(const SimulateArgs& args, const std::string& trace_path, nb::object progress) {
  sim::SweepRequest req = make_request(args);
  req.trace = !trace_path.empty();
  PyObserver observer(std::move(progress));
  sim::SweepResult result;
  {
    nb::gil_scoped_release nogil;
    result = sim::simulate_sweep(req, &observer);
    if (req.trace && result.stopped_before.empty()) {
      std::vector<sim::TraceRun> runs;
      for (auto& [name, p] : result.traces) runs.push_back({name, &p.schedule, &p.result});
      sim::write_chrome_trace(trace_path, runs);
    }
  }
  observer.rethrow();
  return nb::make_tuple(records_columns(result.records), observer.notes, result.topo_label, result.nranks);
}

model::Target target_of(const std::optional<topo::Topology>& topology, const std::string& topo,
                        const std::string& profile) {
  model::Target target;
  if (topology) {
    target.topology = *topology;
    target.params = model::defaults_for(target.topology);
    target.label = target.topology.name;
  } else {
    target = model::resolve_target(topo);
  }
  if (!profile.empty()) {
    if (target.profile) throw_input("--topo is already a profile; --profile applies to presets");
    target.params = model::load_profile_onto(profile, target.topology, target.params);
    target.label += " (profile " + profile + ")";
  }
  return target;
}

nb::dict summary_dict(const sim::ErrorSummary& s) {
  nb::dict d;
  d["algo"] = s.algo;
  d["ranks"] = s.ranks;
  d["sizes"] = s.sizes;
  d["median"] = s.median;
  d["geomean"] = s.geomean;
  d["max"] = s.max;
  d["worst_bytes"] = s.worst_bytes;
  d["worst_error"] = s.worst_error;
  d["goals_met"] = s.goals_met;
  return d;
}

nb::dict compare(const std::string& measured_path, const std::optional<topo::Topology>& topology,
                 const std::string& topo, const std::string& profile, const std::string& tune) {
  std::vector<Record> measured;
  sim::Comparison c;
  std::string label;
  {
    nb::gil_scoped_release nogil;
    model::Target target = target_of(topology, topo, profile);
    label = target.label;
    measured = read_records(measured_path);
    if (measured.empty()) throw_input("no records in '" + measured_path + "'");
    if (!tune.empty())
      for (Record& r : measured) sim::add_tune(r, tune);
    sim::RowPredictor predictor(target);
    c = sim::compare(measured, predictor);
  }
  nb::dict d;
  d["target"] = label;
  d["measured_rows"] = measured.size();
  d["rows"] = records_columns(c.rows);
  nb::list per_algo;
  for (const auto& s : c.per_algo) {
    nb::dict d = summary_dict(s);
    // As `cclab compare` prints them: NCCL's own estimate's errors where the rows carry it, and the goal.
    for (const auto& n : c.nccl_estimate)
      if (n.algo == s.algo && n.ranks == s.ranks) {
        d["nccl_sizes"] = n.nccl.sizes;
        d["nccl_median"] = n.nccl.median;
        d["nccl_geomean"] = n.nccl.geomean;
        d["nccl_max"] = n.nccl.max;
        d["cclab_below_nccl"] = n.cclab_below();
      }
    per_algo.append(d);
  }
  d["per_algo"] = per_algo;
  d["overall"] = summary_dict(c.overall);
  nb::dict skipped;
  for (const auto& [why, n] : c.skipped) skipped[nb::str(why.c_str())] = n;
  d["skipped"] = skipped;
  d["failed"] = c.failed;
  d["plan_mismatches"] = c.plan_mismatches;
  d["goals_met"] = c.goals_met();
  return d;
}

struct ScheduleArgs {
  std::string algo;
  int ranks = 2;
  int64_t nbytes = 8;
  std::string dtype = "float", redop = "sum";
  int root = 0;
  bool inplace = false;
  int channels = 1;
  int64_t chunk = 0;
  int node_size = 0;
  std::optional<std::tuple<int64_t, int64_t, int64_t>> shape;
  std::optional<std::tuple<int64_t, int64_t, double, std::string>> sparse;
};

// cclab schedule's checks and schedule, as its JSON text.
std::string schedule_json(const ScheduleArgs& a) {
  nb::gil_scoped_release nogil;
  const Algorithm& algo = find_algorithm(a.algo);
  AlgoArgs x;
  if (a.ranks < 1 || a.ranks > (1 << 20)) throw_input("ranks must be 1..2^20 (got " + std::to_string(a.ranks) + ")");
  x.nranks = a.ranks;
  x.dtype = parse_dtype(a.dtype);
  x.redop = parse_redop(a.redop);
  if (a.root < 0 || a.root >= a.ranks)
    throw_input("root " + std::to_string(a.root) + " is not a rank of " + std::to_string(a.ranks));
  x.root = a.root;
  x.in_place = a.inplace;
  if (a.channels < 1 || a.channels > 255) throw_input("channels must be 1..255");
  x.channels = a.channels;
  if (a.chunk < 0) throw_input("chunk must be at least 0 bytes");
  x.chunk_bytes = a.chunk;
  if (a.node_size < 0 || a.node_size > a.ranks) throw_input("node_size must be 0..ranks");
  x.node_size = a.node_size;
  if (a.shape) {
    const auto [m, k, n] = *a.shape;
    if (m < 1 || k < 1 || n < 1) throw_input("shape takes M,K,N (three positive integers)");
    x.shape = MatmulShape{m, k, n};
  }
  if (a.sparse) {
    const auto& [rows, dim, density, dist] = *a.sparse;
    if (rows < 1 || dim < 1) throw_input("sparse all-reduce needs rows >= 1 and dim >= 1");
    if (!(density >= 0.0 && density <= 1.0)) throw_input("density must be within [0, 1]");
    if (dist != "uniform" && dist != "zipf") throw_input("dist must be uniform or zipf (got '" + dist + "')");
    x.sparse.rows = rows;
    x.sparse.dim = dim;
    x.sparse.density = density;
    x.sparse.dist = dist == "zipf" ? IndexDist::zipf : IndexDist::uniform;
  }
  if (a.nbytes < 0) throw_input("nbytes must be at least 0");
  x.count = count_for_bytes(algo.collective, a.nbytes, x.dtype, x.nranks);
  const Schedule s = make_schedule(algo, x);
  validate_dataflow(s);
  return to_json(s);
}

sim::TimeTable build_table(const SimulateArgs& args, int max_log2, int points_per_octave) {
  sim::SweepRequest req = make_request(args);
  nb::gil_scoped_release nogil;
  return sim::build_time_table(std::move(req), sim::TableGrid{max_log2, points_per_octave});
}

nb::list algorithms_list() {
  nb::list out;
  for (const Algorithm& a : algorithms()) {
    nb::dict d;
    d["name"] = a.name;
    d["collective"] = a.collective;
    d["summary"] = a.summary;
    nb::list backends;
    if (a.backends & kRef) backends.append("ref");
    if (a.backends & kSim) backends.append("sim");
    if (a.backends & kGpu) backends.append("gpu");
    d["backends"] = backends;
    d["library"] = a.library;
    d["rooted"] = a.rooted;
    d["needs_shape"] = a.needs_shape;
    d["needs_sparse"] = a.needs_sparse;
    out.append(d);
  }
  return out;
}

PyObject* new_exception(nb::module_& m, const char* name, const char* doc, PyObject* bases) {
  PyObject* cls = PyErr_NewExceptionWithDoc(name, doc, bases, nullptr);
  if (!cls) throw nb::python_error();
  m.attr(std::string(name).substr(std::string(name).rfind('.') + 1).c_str()) = nb::handle(cls);
  return cls;
}

}  // namespace

}  // namespace cclab::py

NB_MODULE(_cclab, m) {
  using namespace cclab;
  using namespace cclab::py;
  m.doc() = "cclab's simulator and estimator (the C++ side; use the cclab package)";

  g_error = new_exception(m, "cclab.Error", "Every error cclab raises: the command line's one-line message.",
                          PyExc_Exception);
  auto bases = [](PyObject* a, PyObject* b) { return nb::make_tuple(nb::handle(a), nb::handle(b)).release().ptr(); };
  g_input_error = new_exception(m, "cclab.InputError",
                                "Bad input: an unknown algorithm or preset, a malformed file, a size the algorithm "
                                "cannot split (the command line's exit code 1).",
                                bases(g_error, PyExc_ValueError));
  g_env_error = new_exception(m, "cclab.EnvError",
                              "What the machine lacks: a library, a device (the command line's exit code 2).",
                              bases(g_error, PyExc_RuntimeError));
  g_check_error = new_exception(m, "cclab.CheckError", "A result check failed (the command line's exit code 3).",
                                bases(g_error, PyExc_RuntimeError));
  g_internal_error = new_exception(m, "cclab.InternalError", "A bug in cclab (the command line's exit code 4).",
                                   bases(g_error, PyExc_RuntimeError));

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cclab::Error& e) {
      PyErr_SetString(class_of(e.kind()), one_line(e.what()).c_str());
    } catch (const std::filesystem::filesystem_error& e) {
      PyErr_SetString(g_input_error, one_line(e.what()).c_str());  // the command line's exit code 1
    } catch (const std::ios_base::failure& e) {
      PyErr_SetString(g_input_error, ("reading a file: " + one_line(e.what())).c_str());
    }
  });

  nb::class_<topo::Topology>(m, "Topology")
      .def_static(
          "load",
          [](const std::string& name) {
            nb::gil_scoped_release nogil;
            return topo::load_topology(name);
          },
          "preset_or_file"_a)
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& origin) { return topo::from_json_text(text, origin); },
          "text"_a, "origin"_a = "<json>")
      .def_rw("name", &topo::Topology::name)
      .def_rw("description", &topo::Topology::description)
      .def_prop_ro("num_gpus", &topo::Topology::num_gpus)
      .def_prop_ro("num_servers", &topo::Topology::num_servers)
      .def_prop_ro("gpus_per_server", &topo::Topology::gpus_per_server)
      .def_prop_ro("num_links", &topo::Topology::num_links)
      .def("describe", [](const topo::Topology& t) { return topo::describe(t); })
      .def(
          "matrix",
          [](const topo::Topology& t, bool without_nvlink, bool no_p2p) {
            topo::RouteOptions o;
            o.without_nvlink = without_nvlink;
            o.no_p2p = no_p2p;
            return topo::matrix_text(t, o);
          },
          "without_nvlink"_a = false, "no_p2p"_a = false)
      .def(
          "connection",
          [](const topo::Topology& t, int a, int b) {
            t.gpu(a);
            t.gpu(b);  // input errors naming a GPU beyond the topology
            return topo::connection_label(t, a, b);
          },
          "a"_a, "b"_a)
      .def("to_json", [](const topo::Topology& t) { return topo::to_json_text(t); })
      .def(
          "save", [](const topo::Topology& t, const std::string& path) { topo::save_file(t, path); }, "path"_a)
      .def(
          "select",
          [](const topo::Topology& t, const std::vector<int>& gpus) {
            for (int g : gpus) t.gpu(g);
            return topo::select_gpus(t, gpus);
          },
          "gpus"_a)
      .def("check", &topo::Topology::check);

  nb::class_<sim::TimeTable>(m, "TimeTable")
      .def(
          "seconds",
          [](const sim::TimeTable& t, double bytes) {
            if (!(bytes >= 0)) throw_input("nbytes must be at least 0 (got " + std::to_string(bytes) + ")");
            return bytes == 0 ? 0.0 : t.seconds(bytes);
          },
          "nbytes"_a)
      .def_prop_ro("bytes", &sim::TimeTable::bytes)
      .def_prop_ro("times", &sim::TimeTable::times);

  nb::class_<SimulateArgs>(m, "SimulateArgs")
      .def(nb::init<>())
      .def_rw("topology", &SimulateArgs::topology)
      .def_rw("topo", &SimulateArgs::topo)
      .def_rw("algo", &SimulateArgs::algo)
      .def_rw("sizes", &SimulateArgs::sizes)
      .def_rw("gpus", &SimulateArgs::gpus)
      .def_rw("ngpus", &SimulateArgs::ngpus)
      .def_rw("without_nvlink", &SimulateArgs::without_nvlink)
      .def_rw("no_p2p", &SimulateArgs::no_p2p)
      .def_rw("dtype", &SimulateArgs::dtype)
      .def_rw("redop", &SimulateArgs::redop)
      .def_rw("root", &SimulateArgs::root)
      .def_rw("node_size", &SimulateArgs::node_size)
      .def_rw("tune", &SimulateArgs::tune)
      .def_rw("shape", &SimulateArgs::shape)
      .def_rw("sparse", &SimulateArgs::sparse)
      .def_rw("profile", &SimulateArgs::profile);

  nb::class_<ScheduleArgs>(m, "ScheduleArgs")
      .def(nb::init<>())
      .def_rw("algo", &ScheduleArgs::algo)
      .def_rw("ranks", &ScheduleArgs::ranks)
      .def_rw("nbytes", &ScheduleArgs::nbytes)
      .def_rw("dtype", &ScheduleArgs::dtype)
      .def_rw("redop", &ScheduleArgs::redop)
      .def_rw("root", &ScheduleArgs::root)
      .def_rw("inplace", &ScheduleArgs::inplace)
      .def_rw("channels", &ScheduleArgs::channels)
      .def_rw("chunk", &ScheduleArgs::chunk)
      .def_rw("node_size", &ScheduleArgs::node_size)
      .def_rw("shape", &ScheduleArgs::shape)
      .def_rw("sparse", &ScheduleArgs::sparse);

  m.def("simulate", &simulate, "args"_a, "trace"_a, "progress"_a.none());
  m.def("sweep_sizes", [](int64_t minb, int64_t maxb, int64_t factor) { return sim::sweep_sizes(minb, maxb, factor); });
  m.def("parse_size", [](const std::string& flag, const std::string& text) { return parse_size(flag, text); });
  m.def("compare", &compare, "measured"_a, "topology"_a.none(), "topo"_a, "profile"_a, "tune"_a);
  m.def("schedule_json", &schedule_json, "args"_a);
  m.def("build_table", &build_table, "args"_a, "max_log2"_a, "points_per_octave"_a);
  m.def("algorithms", &algorithms_list);
  m.def("preset_names", [] { return topo::preset_names(); });
  m.def("csv_columns", [] { return csv_columns(); });
}
