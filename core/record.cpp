#include "core/record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "core/error.hpp"

namespace cclab {

double busbw_factor(std::string_view c, int n) {
  if (c == "broadcast" || c == "reduce" || c == "sendrecv" || c.starts_with("sol")) return 1.0;
  if (n <= 1) return 0.0;
  if (c == "allreduce") return 2.0 * (n - 1) / n;
  if (c == "reducescatter" || c == "allgather" || c == "alltoall" || c == "gather" || c == "scatter" ||
      c == "allgather_matmul" || c == "matmul_reducescatter")
    return double(n - 1) / n;
  return 1.0;
}

std::optional<double> Record::error() const {
  if (!pred_time_us || time_us <= 0) return std::nullopt;
  return (*pred_time_us - time_us) / time_us;
}

std::optional<double> Record::nccl_error() const {
  if (!nccl_estimate_us || time_us <= 0) return std::nullopt;
  return (*nccl_estimate_us - time_us) / time_us;
}

void fill_bandwidths(Record& r) {
  if (r.time_us <= 0) {
    r.algbw_gbps = r.busbw_gbps = 0;
    return;
  }
  r.algbw_gbps = double(r.bytes) / (r.time_us * 1e-6) / 1e9;
  r.busbw_gbps = r.algbw_gbps * busbw_factor(r.collective, r.ranks);
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {
      "algo",   "collective", "backend", "topology",     "ranks",           "bytes",      "count", "dtype",
      "redop",  "root",       "inplace", "time_us",      "algbw_gbps",      "busbw_gbps", "wrong", "device",
      "commit", "date",       "shape",   "pred_time_us", "pred_busbw_gbps", "error",      "note",  "nccl_estimate_us"};
  return cols;
}

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"')
        quoted = false;
      else
        cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::string> extra_names(const std::vector<Record>& rows) {
  std::vector<std::string> names;
  for (const auto& r : rows)
    for (const auto& [k, v] : r.extra)
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  return names;
}

}  // namespace

std::string csv_header(const std::vector<Record>& rows) {
  std::string h;
  for (const auto& c : csv_columns()) h += (h.empty() ? "" : ",") + c;
  for (const auto& e : extra_names(rows)) h += "," + quote(e);
  return h;
}

std::string csv_text(const std::vector<Record>& rows) {
  std::ostringstream os;
  os << csv_header(rows) << "\n";
  const auto extras = extra_names(rows);
  for (const auto& r : rows) {
    auto opt = [](const std::optional<double>& v) { return v ? fmt(*v) : std::string(); };
    os << quote(r.algo) << ',' << quote(r.collective) << ',' << quote(r.backend) << ',' << quote(r.topology) << ','
       << r.ranks << ',' << r.bytes << ',' << r.count << ',' << quote(r.dtype) << ',' << quote(r.redop) << ',' << r.root
       << ',' << (r.in_place ? 1 : 0) << ',' << fmt(r.time_us) << ',' << fmt(r.algbw_gbps) << ',' << fmt(r.busbw_gbps)
       << ',' << r.wrong << ',' << quote(r.device) << ',' << quote(r.commit) << ',' << quote(r.date) << ','
       << quote(r.shape) << ',' << opt(r.pred_time_us) << ',' << opt(r.pred_busbw_gbps) << ',' << opt(r.error()) << ','
       << quote(r.note) << ',' << opt(r.nccl_estimate_us);
    for (const auto& name : extras) {
      std::string value;
      for (const auto& [k, v] : r.extra)
        if (k == name) value = v;
      os << ',' << quote(value);
    }
    os << "\n";
  }
  return os.str();
}

bool replaceable_file(const std::string& path) {
  namespace fs = std::filesystem;
  // /dev/stdout, /proc/self/fd/N: the process's own streams, even when they lead to a regular file.
  if (path.starts_with("/dev/") || path.starts_with("/proc/")) return false;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows symbolic links
  return !fs::exists(st) || fs::is_regular_file(st);
}

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw_input("cannot write '" + path + "': it is a directory");
  if (!replaceable_file(path)) {
    // A device, FIFO or socket (a pipe, /dev/null): renaming over it would replace the special file
    // itself (as root, even /dev/full), so write into it; "whole or nothing" means nothing for a stream.
    // Append: through /dev/stdout redirected to a file, truncating would erase what was printed before.
    std::ofstream f(path, std::ios::binary | std::ios::app);
    if (!f || !(f << content) || !f.flush()) throw_input("cannot write '" + path + "'");
    return;
  }
  // Through a symbolic link, replace the file it names and keep the link.
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  const std::string tmp = target + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw_input("cannot write '" + path + "'");
    f << content;
    f.flush();
    if (!f) {
      f.close();
      fs::remove(tmp, ec);
      throw_input("cannot write '" + path + "' (disk full?)");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);  // leave nothing behind
    throw_input("cannot write '" + path + "': " + why);
  }
}

void write_csv_atomic(const std::string& path, const std::vector<Record>& rows) {
  write_file_atomic(path, csv_text(rows));
}

namespace {

// std::getline that refuses a line longer than kMaxRecordLine: /dev/zero or a binary file has no newline,
// and reading it whole would take all memory rather than answer.
constexpr size_t kMaxRecordLine = size_t(1) << 20;  // a record row is < 1 KiB; 1 MiB leaves room for notes

bool get_record_line(std::istream& in, std::string& line, const std::string& path, int lineno) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  for (;;) {
    const int ch = buf->sbumpc();
    if (ch == std::char_traits<char>::eof()) return !line.empty();
    if (ch == '\n') return true;
    if (line.size() >= kMaxRecordLine)
      throw_input(path + ":" + std::to_string(lineno) + ": line longer than " + std::to_string(kMaxRecordLine) +
                  " bytes (not a records CSV?)");
    line.push_back(char(ch));
  }
}

}  // namespace

std::vector<Record> read_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw_input("cannot open records file '" + path + "'");
  std::string line;
  if (!get_record_line(f, line, path, 1)) throw_input(path + ":1: empty records file");
  const auto header = split_csv_line(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* needed : {"algo", "backend", "ranks", "bytes", "time_us"})
    if (!col.count(needed)) throw_input(path + ":1: missing column '" + needed + "'");
  std::vector<Record> rows;
  int lineno = 1;
  while (get_record_line(f, line, path, lineno + 1)) {
    ++lineno;
    if (line.empty()) continue;
    const auto cells = split_csv_line(line);
    if (cells.size() != header.size())
      throw_input(path + ":" + std::to_string(lineno) + ": expected " + std::to_string(header.size()) +
                  " fields, got " + std::to_string(cells.size()));
    auto get = [&](const std::string& name) -> std::string {
      auto it = col.find(name);
      return it == col.end() ? std::string() : cells[it->second];
    };
    auto num = [&](const std::string& name, double dflt) -> double {
      std::string v = get(name);
      if (v.empty()) return dflt;
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (end != v.c_str() + v.size() || !std::isfinite(d))
        throw_input(path + ":" + std::to_string(lineno) + ": column '" + name + "' is not a number: '" + v + "'");
      return d;
    };
    // Integer columns: a value outside the type's range would make the conversion undefined.
    auto integer = [&](const std::string& name, double dflt, double lo, double hi) -> double {
      const double d = num(name, dflt);
      if (d != std::floor(d) || d < lo || d > hi)
        throw_input(path + ":" + std::to_string(lineno) + ": column '" + name + "' is not an integer in range: '" +
                    get(name) + "'");
      return d;
    };
    constexpr double kMaxInt = 2147483647.0, kMaxInt64 = 9007199254740992.0;  // 2^53: exact in a double
    Record r;
    r.algo = get("algo");
    r.collective = get("collective");
    r.backend = get("backend");
    r.topology = get("topology");
    r.ranks = int(integer("ranks", 0, 0, kMaxInt));
    r.bytes = int64_t(integer("bytes", 0, 0, kMaxInt64));
    r.count = int64_t(integer("count", 0, 0, kMaxInt64));
    r.dtype = get("dtype");
    r.redop = get("redop");
    r.root = int(integer("root", -1, -1, kMaxInt));
    r.in_place = num("inplace", 0) != 0;
    r.time_us = num("time_us", 0);
    r.algbw_gbps = num("algbw_gbps", 0);
    r.busbw_gbps = num("busbw_gbps", 0);
    r.wrong = int64_t(integer("wrong", 0, -1, kMaxInt64));
    r.device = get("device");
    r.commit = get("commit");
    r.date = get("date");
    r.shape = get("shape");
    r.note = get("note");
    if (!get("pred_time_us").empty()) r.pred_time_us = num("pred_time_us", 0);
    if (!get("pred_busbw_gbps").empty()) r.pred_busbw_gbps = num("pred_busbw_gbps", 0);
    if (!get("nccl_estimate_us").empty()) r.nccl_estimate_us = num("nccl_estimate_us", 0);  // absent in older records
    const auto& known = csv_columns();
    for (size_t i = 0; i < header.size(); ++i)
      if (std::find(known.begin(), known.end(), header[i]) == known.end()) r.extra.emplace_back(header[i], cells[i]);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<Record> read_records(const std::string& file_or_folder, std::string_view name_prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(file_or_folder, ec)) throw_input("no such records file or folder '" + file_or_folder + "'");
  if (!fs::is_directory(file_or_folder, ec)) return read_csv(file_or_folder);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(file_or_folder))
    if (e.is_regular_file() && e.path().extension() == ".csv" && e.path().filename().string().starts_with(name_prefix))
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<Record> rows;
  for (const auto& f : files) {
    auto part = read_csv(f);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

void print_table_header(std::ostream& os, bool with_prediction) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "#%12s %12s %9s %6s %5s %11s %8s %8s %7s", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "#wrong");
  os << buf;
  if (with_prediction) {
    std::snprintf(buf, sizeof buf, " %11s %9s %8s", "pred_time", "pred_bus", "error");
    os << buf;
  }
  os << "\n";
  std::snprintf(buf, sizeof buf, "#%12s %12s %9s %6s %5s %11s %8s %8s %7s", "(B)", "(elements)", "", "", "", "(us)",
                "(GB/s)", "(GB/s)", "");
  os << buf;
  if (with_prediction) {
    std::snprintf(buf, sizeof buf, " %11s %9s %8s", "(us)", "(GB/s)", "(%)");
    os << buf;
  }
  os << "\n";
}

void print_table_row(std::ostream& os, const Record& r, bool with_prediction) {
  char buf[256];
  std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  std::snprintf(buf, sizeof buf, " %12lld %12lld %9s %6s %5d %11.2f %8.2f %8.2f %7s", (long long)r.bytes,
                (long long)r.count, r.dtype.c_str(), r.redop.c_str(), r.root, r.time_us, r.algbw_gbps, r.busbw_gbps,
                wrong.c_str());
  os << buf;
  if (with_prediction) {
    if (r.pred_time_us) {
      std::snprintf(buf, sizeof buf, " %11.2f %9.2f %+8.1f", *r.pred_time_us, r.pred_busbw_gbps.value_or(0),
                    r.error().value_or(0) * 100);
      os << buf;
    } else {
      os << "           -         -        -";
    }
  }
  os << "\n";
}

}  // namespace cclab
