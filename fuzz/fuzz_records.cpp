// libFuzzer target: the records CSV reader (core/record.hpp read_csv), which `cclab compare` and the
// notebooks feed with files from results/. Whatever it accepts must survive a write/read round trip.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/record.hpp"
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static cclab::fuzz::TempFile file(".csv");
  static cclab::fuzz::TempFile again("-again.csv");
  std::vector<cclab::Record> rows;
  bool accepted = false;
  cclab::fuzz::expect_ok_or_input_error([&] {
    rows = cclab::read_csv(file.write(data, size));
    accepted = true;
  });
  if (!accepted) return 0;
  // What the reader accepted, the writer must write so that the reader takes it back unchanged in
  // number of rows (an input error here is a bug too: nothing outside cclab touched the file).
  try {
    cclab::write_csv_atomic(again.path(), rows);
    const auto back = cclab::read_csv(again.path());
    if (back.size() != rows.size()) __builtin_trap();
    for (size_t i = 0; i < rows.size(); ++i)
      if (back[i].algo != rows[i].algo || back[i].bytes != rows[i].bytes || back[i].ranks != rows[i].ranks)
        __builtin_trap();
  } catch (const cclab::Error& e) {
    std::fprintf(stderr, "fuzz: accepted records do not round-trip: %s\n", e.what());
    std::abort();
  }
  return 0;
}
