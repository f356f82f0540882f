// One row per (algorithm, backend, ranks, size): what sim, run and compare exchange. The CSV columns
// are a contract (DESIGN.md); a test pins the header.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cclab {

struct Record {
  std::string algo, collective, backend, topology;  // backend: sim | gpu | ref
  int ranks = 0;
  int64_t bytes = 0;  // the size nccl-tests prints (collective matmul: bytes of the gathered A)
  int64_t count = 0;
  std::string dtype = "float", redop = "sum";
  int root = -1;  // -1: not rooted (printed as -1 as nccl-tests does)
  bool in_place = false;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
  int64_t wrong = 0;                 // -1: not checked
  std::string device, commit, date;  // measured rows
  std::string shape;                 // "M,K,N" for collective matmul
  std::string note;                  // e.g. "ranks share GPUs: timing not meaningful"
  // Filled when a prediction stands beside a measurement.
  std::optional<double> pred_time_us, pred_busbw_gbps;
  std::optional<double> error() const;  // (predicted - measured) / measured
  // NCCL's own estimate of this row's time in microseconds, from ncclGroupSimulateEnd on the very calls that
  // were timed (`*.nccl` rows of an NCCL >= 2.22); empty where there is none (other rows, NCCL's send/recv
  // compositions, one rank, older NCCL, older records).
  std::optional<double> nccl_estimate_us;
  std::optional<double> nccl_error() const;  // (NCCL's estimate - measured) / measured
  // Free-form extra numeric columns (e.g. tflops, utilisation), kept in order.
  std::vector<std::pair<std::string, std::string>> extra;
};

// nccl-tests' bus-bandwidth factor: all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all,
// gather, scatter (n-1)/n; broadcast, reduce, send/recv and sol.* 1.
double busbw_factor(std::string_view collective, int nranks);

// Fills algbw and busbw from time_us, bytes, collective and ranks (nccl-tests definitions).
void fill_bandwidths(Record& r);

// The contract header (extra columns follow, in first-seen order).
const std::vector<std::string>& csv_columns();
std::string csv_header(const std::vector<Record>& rows);
std::string csv_text(const std::vector<Record>& rows);
// Writes to path + ".tmp" then renames, so a reader never sees half a file.
void write_csv_atomic(const std::string& path, const std::vector<Record>& rows);
// Reads a file written by write_csv_atomic (or any CSV with the contract columns). Throws input error
// naming file:line on malformed rows.
std::vector<Record> read_csv(const std::string& path);
// The *.csv files of a folder (not of its subfolders, which hold other runs: probes, repeats) or one file.
// In a folder, only the files whose names start with `name_prefix` (publish_measure.sh names a sweep's exec_*.csv).
std::vector<Record> read_records(const std::string& file_or_folder, std::string_view name_prefix = "");

// nccl-tests-style table: size count type redop root time algbw busbw #wrong [pred_time pred_busbw error].
void print_table_header(std::ostream& os, bool with_prediction);
void print_table_row(std::ostream& os, const Record& r, bool with_prediction);

// Writes the file atomically (path + ".tmp", then rename; through a symbolic link, the file it names).
// A device, FIFO or socket (e.g. /dev/stdout) is written in place instead; a directory is an input error.
void write_file_atomic(const std::string& path, const std::string& content);
// True when write_file_atomic can replace `path` whole: nothing there yet, or a regular file. False for a
// device, FIFO or socket, which a sweep should write once at the end rather than after every row.
bool replaceable_file(const std::string& path);

}  // namespace cclab
