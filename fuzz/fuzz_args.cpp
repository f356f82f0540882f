// libFuzzer target: command-line values and flags (core/parse.hpp, core/dtype.hpp, cli/args.hpp).
//
// The input is split at NUL bytes into argv words. Every word goes through each value parser (sizes,
// integers, numbers, lists, shapes, dtype, redop); the whole vector goes through the flag parser with the flags
// `cclab sim` declares, and the values it accepted are parsed as the command would.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "core/dtype.hpp"
#include "core/parse.hpp"
#include "fuzz/fuzz_common.hpp"

namespace {

using cclab::fuzz::expect_ok_or_input_error;

void check_size(const std::string& w) {
  expect_ok_or_input_error([&] {
    const int64_t v = cclab::parse_size("-b", w);
    // The contract: never negative, never beyond 2^50 bytes (parse.cpp's own limit).
    if (v < 0 || v > (int64_t(1) << 50)) __builtin_trap();
  });
}

void check_list(const std::string& w) {
  expect_ok_or_input_error([&] {
    const auto list = cclab::parse_int_list("--gpus", w);
    // Documented: non-negative entries, no duplicates, never empty.
    if (list.empty()) __builtin_trap();
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] < 0) __builtin_trap();
      for (size_t j = 0; j < i; ++j)
        if (list[i] == list[j]) __builtin_trap();
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // argv words are short; longer inputs only slow the search down
  std::vector<std::string> words(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0)
      words.emplace_back();
    else
      words.back().push_back(char(data[i]));
  }

  for (const auto& w : words) {
    check_size(w);
    check_list(w);
    expect_ok_or_input_error([&] { cclab::parse_int("-g", w, 1, 1 << 20); });
    expect_ok_or_input_error([&] { cclab::parse_int("--root", w, -1, 1 << 20); });
    expect_ok_or_input_error([&] { cclab::parse_double("--density", w, 0.0, 1.0); });
    expect_ok_or_input_error([&] { cclab::parse_double("-f", w, 1.0, 1e9); });
    expect_ok_or_input_error([&] {
      for (int64_t d : cclab::parse_shape("--shape", w))
        if (d < 1 || d > (int64_t(1) << 20)) __builtin_trap();
    });
    expect_ok_or_input_error([&] { cclab::parse_dtype(w); });
    expect_ok_or_input_error([&] { cclab::parse_redop(w); });
  }

  // The flags of `cclab sim` (DESIGN.md "The command line"), then their values as the command reads them.
  expect_ok_or_input_error([&] {
    cclab::cli::Args args("sim", words,
                          {{{"--topo"}, true, ""},
                           {{"--algo"}, true, ""},
                           {{"-g", "--ngpus"}, true, ""},
                           {{"--gpus"}, true, ""},
                           {{"-b", "--minbytes"}, true, ""},
                           {{"-e", "--maxbytes"}, true, ""},
                           {{"-f", "--stepfactor"}, true, ""},
                           {{"-d", "--datatype"}, true, ""},
                           {{"--shape"}, true, ""},
                           {{"--no-p2p"}, false, ""},
                           {{"-h", "--help"}, false, ""}},
                          1);
    if (auto v = args.get("-b")) check_size(*v);
    if (auto v = args.get("-e")) check_size(*v);
    if (auto v = args.get("--gpus")) check_list(*v);
    if (auto v = args.get("-d")) cclab::parse_dtype(*v);
    if (auto v = args.get("--shape")) cclab::parse_shape("--shape", *v);
    if (auto v = args.get("-g")) cclab::parse_int("-g", *v, 1, 1 << 20);
    (void)args.usage();
  });
  return 0;
}
