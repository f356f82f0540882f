// cclab compare --measured <file|folder> --topo <preset|file|profile> [--plot out.png] [--csv out.csv]
//
// For every measured GPU row, the simulator's prediction of the same algorithm, ranks, size and dtype on
// the target; per algorithm the median and geometric mean of |error| over sizes and the worst size; the
// goals of issue 8 (median <= 5%, geomean <= 7%, max <= 20% per algorithm) met or not. Where the records carry
// NCCL's own estimate (nccl_estimate_us), its errors beside cclab's and the goal "cclab below NCCL's own estimate"
// per NCCL baseline (not part of --require-goals).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/record.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"

namespace cclab::cli {

namespace {

namespace fs = std::filesystem;

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

std::string size_text(int64_t b) {
  // 8B, 64K, 1G as nccl-tests users write sizes; sizes that are not whole units get three digits (38.1G).
  char s[32];
  const char* units[] = {"G", "M", "K"};
  const int64_t scales[] = {int64_t(1) << 30, int64_t(1) << 20, int64_t(1) << 10};
  for (int i = 0; i < 3; ++i)
    if (b >= scales[i]) {
      if (b % scales[i] == 0)
        std::snprintf(s, sizeof s, "%lld%s", (long long)(b / scales[i]), units[i]);
      else
        std::snprintf(s, sizeof s, "%.3g%s", double(b) / double(scales[i]), units[i]);
      return s;
    }
  std::snprintf(s, sizeof s, "%lldB", (long long)b);
  return s;
}

// scripts/plot_compare.py: $CCLAB_SCRIPTS, else beside the binary's source tree (the binary lives in
// <tree>/build*/cli/), else ./scripts.
std::string find_plot_script() {
  const std::string name = "plot_compare.py";
  if (const char* d = std::getenv("CCLAB_SCRIPTS"); d && *d) {
    if (fs::exists(fs::path(d) / name)) return (fs::path(d) / name).string();
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::exists(p / "scripts" / name)) return (p / "scripts" / name).string();
  if (fs::exists(fs::path("scripts") / name)) return (fs::path("scripts") / name).string();
  throw_env("cannot find scripts/" + name + " (set CCLAB_SCRIPTS to the scripts folder)");
}

// --goals median=8,max=25: the goals to check, in percent; those not named are not checked.
sim::Goals parse_goals(const std::string& text) {
  constexpr double kUnchecked = std::numeric_limits<double>::infinity();
  sim::Goals g{kUnchecked, kUnchecked, kUnchecked};
  std::stringstream ss(text);
  std::string kv;
  int named = 0;
  while (std::getline(ss, kv, ',')) {
    const auto eq = kv.find('=');
    const std::string k = kv.substr(0, eq);
    double* field = k == "median" ? &g.median : k == "geomean" ? &g.geomean : k == "max" ? &g.max : nullptr;
    if (!field || eq == std::string::npos)
      throw_input("--goals takes median=, geomean= and max= in percent (e.g. median=8,max=25), not '" + kv + "'");
    *field = parse_double("--goals " + k, kv.substr(eq + 1), 0, 1e6) / 100;
    ++named;
  }
  if (named == 0) throw_input("--goals names no goal (e.g. median=8,max=25)");
  return g;
}

// "median <= 5.0%, geomean <= 7.0%, max <= 20.0%", the goals that are checked.
std::string goals_text(const sim::Goals& g) {
  std::string t;
  for (const auto& [name, v] : {std::pair{"median", g.median}, {"geomean", g.geomean}, {"max", g.max}})
    if (std::isfinite(v)) t += (t.empty() ? "" : ", ") + std::string(name) + " <= " + pct(v);
  return t;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

int cmd_compare(const Argv& argv) {
  Args args("compare", argv,
            {{{"-h", "--help"}, false, "this help"},
             {{"--measured"}, true, "records file or folder (every *.csv under it) measured by cclab run"},
             {{"--topo"}, true, "topology preset, topology file, or profile (profiles/NAME.json)"},
             {{"--profile"}, true, "a profile to apply over --topo's defaults (when --topo is a preset or file)"},
             {{"--plot"}, true, "write measured and predicted busbw against size to this PNG"},
             {{"--csv"}, true, "write the compared rows, prediction and error filled, to this CSV"},
             {{"--goals"},
              true,
              "the goals to check instead, in percent, e.g. median=8,max=25 (those not named: not checked)"},
             {{"--tune"},
              true,
              "settings the rows ran under that their records do not carry (e.g. NCCL_ALGO=NVLS), added to each "
              "row's tune column"},
             {{"--require-goals"}, false, "exit 3 when an algorithm misses a goal"}});
  if (args.has("--help")) {
    std::cout << "usage: cclab compare --measured <file|folder> --topo <preset|file|profile> [--plot out.png]\n"
                 "  error = (predicted - measured) / measured time, per row; per algorithm the median and\n"
                 "  geometric mean of |error| over sizes and the worst size; goals: median <= 5%,\n"
                 "  geomean <= 7%, max <= 20% per algorithm (--goals sets others). Rows whose ranks shared\n"
                 "  GPUs are skipped.\n"
                 "  Where rows carry NCCL's own estimate (nccl_estimate_us), its median and max |error| stand\n"
                 "  beside cclab's, and a line per NCCL baseline says whether cclab's are both lower.\n"
              << args.usage();
    return 0;
  }
  const auto measured_path = args.get("--measured");
  const auto topo_arg = args.get("--topo");
  if (!measured_path) throw_input("--measured <file|folder> is required");
  if (!topo_arg) throw_input("--topo <preset|file|profile> is required");
  if (auto p = args.get("--plot"); p && !p->ends_with(".png") && !p->ends_with(".svg") && !p->ends_with(".pdf"))
    throw_input("--plot '" + *p + "' should end in .png, .svg or .pdf");

  model::Target target = model::resolve_target(*topo_arg);
  if (auto prof = args.get("--profile")) {
    if (target.profile) throw_input("--topo is already a profile; --profile applies to presets");
    target.params = model::load_profile_onto(*prof, target.topology, target.params);
    target.label += " (profile " + *prof + ")";
  }
  std::vector<Record> measured = read_records(*measured_path);
  if (measured.empty()) throw_input("no records in '" + *measured_path + "'");
  if (auto tune = args.get("--tune")) {
    if (tune->empty()) throw_input("--tune is empty");
    for (Record& r : measured) sim::add_tune(r, *tune);
  }

  sim::RowPredictor predictor(target);
  const sim::Goals goals = args.get("--goals") ? parse_goals(*args.get("--goals")) : sim::Goals{};
  const sim::Comparison c = sim::compare(measured, predictor, goals);

  std::printf("# cclab compare: %zu measured rows from %s against %s\n", measured.size(), measured_path->c_str(),
              target.label.c_str());
  if (target.profile)
    std::printf("# profile: %s, %s (%s); fitted from %s\n", target.profile->name.c_str(),
                target.profile->origin.c_str(), target.profile->date.c_str(), target.profile->fitted_from.c_str());
  for (const auto& [why, n] : c.skipped) std::printf("# skipped %d rows: %s\n", n, why.c_str());
  // Rows that could not be predicted, one line per algorithm (the first reason, and how many rows).
  std::map<std::string, std::pair<int, std::string>> failed;
  for (const auto& [row, why] : c.failed) {
    auto& f = failed[row.substr(0, row.find(' '))];
    if (f.first++ == 0) f.second = why;
  }
  for (const auto& [algo, f] : failed)
    std::printf("# not predicted: %s (%d rows): %s\n", algo.c_str(), f.first, f.second.c_str());
  // Rows whose plan that ran is not the plan priced: the prediction is of something else (first few named).
  if (!c.plan_mismatches.empty()) {
    std::printf("# plan mismatch: %zu rows ran another plan than the one priced\n", c.plan_mismatches.size());
    for (size_t i = 0; i < std::min<size_t>(c.plan_mismatches.size(), 10); ++i)
      std::printf("#   %s: %s\n", c.plan_mismatches[i].first.c_str(), c.plan_mismatches[i].second.c_str());
  }
  if (c.rows.empty()) {
    std::printf("overall: no row could be compared\n");
    if (args.has("--require-goals")) throw Error(ErrorKind::check, "no measured GPU row could be compared");
    return 0;
  }
  std::printf("# error = (predicted - measured) / measured time; |error| over the sizes of each algorithm\n");
  // Where rows carry NCCL's own estimate (nccl_estimate_us), its median and max |error| stand beside cclab's.
  const bool with_nccl = !c.nccl_estimate.empty();
  auto nccl_of = [&](const sim::ErrorSummary& s) -> const sim::NcclEstimateSummary* {
    for (const auto& n : c.nccl_estimate)
      if (n.algo == s.algo && n.ranks == s.ranks) return &n;
    return nullptr;
  };
  if (with_nccl)
    std::printf(
        "# nccl med, nccl max: |error| of NCCL's own estimate (ncclGroupSimulateEnd) on the rows carrying it\n");
  std::printf("# %-30s %5s %5s %8s %8s %8s %11s %8s%s  %s\n", "algorithm", "ranks", "sizes", "median", "geomean", "max",
              "worst size", "at worst", with_nccl ? "  nccl med  nccl max" : "", "goals");
  // Which goals an algorithm misses, so that a reader sees at once whether one size or the bulk is off.
  auto verdict = [&](const sim::ErrorSummary& s) {
    if (s.goals_met) return std::string("met");
    std::string why;
    auto add = [&](bool over, const char* what) {
      if (over) why += (why.empty() ? "" : ", ") + std::string(what);
    };
    add(s.median > goals.median, "median");
    add(s.geomean > goals.geomean, "geomean");
    add(s.max > goals.max, "max");
    return "NOT met" + (why.empty() ? std::string() : " (" + why + ")");
  };
  for (const auto& s : c.per_algo) {
    std::string nccl_cols;
    if (with_nccl) {
      char b[64];
      const sim::NcclEstimateSummary* n = nccl_of(s);
      std::snprintf(b, sizeof b, "  %8s  %8s", n ? pct(n->nccl.median).c_str() : "-",
                    n ? pct(n->nccl.max).c_str() : "-");
      nccl_cols = b;
    }
    std::printf("  %-30s %5d %5d %8s %8s %8s %11s %+7.1f%%%s  %s\n", s.algo.c_str(), s.ranks, s.sizes,
                pct(s.median).c_str(), pct(s.geomean).c_str(), pct(s.max).c_str(), size_text(s.worst_bytes).c_str(),
                100 * s.worst_error, nccl_cols.c_str(), verdict(s).c_str());
  }
  // The goal per NCCL baseline: cclab's prediction closer to the measurement than NCCL's own estimate, on the
  // rows that carry the estimate (both the median and the max of |error| lower).
  for (const auto& n : c.nccl_estimate) {
    std::string result = "met";
    if (!n.cclab_below()) {
      std::string why;
      if (!(n.cclab.median < n.nccl.median)) why = "median";
      if (!(n.cclab.max < n.nccl.max)) why += (why.empty() ? "" : ", ") + std::string("max");
      result = "NOT met (" + why + ")";
    }
    std::printf(
        "cclab below NCCL's own estimate: %s n=%d (%d sizes): %s (median %s vs NCCL's %s, max %s vs NCCL's %s)\n",
        n.algo.c_str(), n.ranks, n.nccl.sizes, result.c_str(), pct(n.cclab.median).c_str(), pct(n.nccl.median).c_str(),
        pct(n.cclab.max).c_str(), pct(n.nccl.max).c_str());
  }
  int met = 0;
  std::string missed;
  for (const auto& s : c.per_algo) {
    if (s.goals_met)
      ++met;
    else
      missed += (missed.empty() ? "" : ", ") + s.algo;
  }
  std::printf("overall: median %s geomean %s max %s\n", pct(c.overall.median).c_str(), pct(c.overall.geomean).c_str(),
              pct(c.overall.max).c_str());
  std::printf("goals (%s per algorithm): %s (%d of %zu algorithms meet them%s%s)\n", goals_text(goals).c_str(),
              c.goals_met() ? "met" : "NOT met", met, c.per_algo.size(),
              missed.empty() ? "" : "; missed: ", missed.c_str());
  std::fflush(stdout);  // the plot script writes to the same stream

  std::string csv = args.get_or("--csv", "");
  if (!csv.empty()) write_csv_atomic(csv, c.rows);
  if (auto plot = args.get("--plot")) {
    std::string tmp;
    if (csv.empty()) {
      tmp = (fs::temp_directory_path() / ("cclab_compare_" + std::to_string(getpid()) + ".csv")).string();
      write_csv_atomic(tmp, c.rows);
      csv = tmp;
    }
    const std::string cmd = "python3 " + shell_quote(find_plot_script()) + " " + shell_quote(csv) + " " +
                            shell_quote(*plot) + " --title " +
                            shell_quote("predicted on " + target.label + " vs measured");
    const int rc = std::system(cmd.c_str());
    if (!tmp.empty()) fs::remove(tmp);
    if (rc != 0) throw_env("the plot script failed (" + cmd + ")");
  }
  if (args.has("--require-goals") && !c.goals_met())
    throw Error(ErrorKind::check, "goals not met for " + (missed.empty() ? std::string("some algorithms") : missed));
  if (args.has("--require-goals") && !c.plan_mismatches.empty())
    throw Error(ErrorKind::check,
                std::to_string(c.plan_mismatches.size()) + " rows ran another plan than the one priced");
  return 0;
}

}  // namespace cclab::cli
