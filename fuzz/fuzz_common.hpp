// Shared by the libFuzzer targets: how an input reaches a parser, and which outcomes are fine.
//
// A parser given bad input must throw cclab::Error of kind `input` (a clear line for the user). Anything
// else is a bug the fuzzer should report: a crash, a sanitizer report, a leak, a hang, an `internal`
// error (a CCLAB_ASSERT that bad input can reach), or a foreign exception escaping (std::out_of_range
// from a .at(), nlohmann::json's type_error, std::invalid_argument from std::stoi, ...), which the CLI
// would print as "internal error".
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace cclab::fuzz {

// Runs fn; returns normally when it succeeds or throws an input (or environment) error. Any other
// outcome aborts, so libFuzzer records the input as a crash.
template <class Fn>
void expect_ok_or_input_error(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    // Messages may quote the bad input verbatim (newlines included): keeping the CLI's error on one line
    // is main()'s job, not the parser's, so it is not checked here.
    if (e.kind() == ErrorKind::input || e.kind() == ErrorKind::environment) return;
    std::fprintf(stderr, "fuzz: cclab::Error of kind %d on bad input: %s\n", int(e.kind()), e.what());
    std::abort();
  }
  // Deliberately no catch(...) / catch(std::exception&): a foreign exception escapes to libFuzzer,
  // which reports it as a crash (uncaught exception -> std::terminate -> abort).
}

// Writes the input to a per-process file (parsers that only take a path), under $TMPDIR. The name keeps
// `suffix` because loaders may dispatch on the extension.
class TempFile {
 public:
  explicit TempFile(std::string_view suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/cclab-fuzz-" + std::to_string(::getpid()) + std::string(suffix);
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& write(const uint8_t* data, size_t size) {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace cclab::fuzz
