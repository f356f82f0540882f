// One error type for the whole project. Host code throws cclab::Error; the CLI prints what() as one
// line and exits with exit_code(kind).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace cclab {

enum class ErrorKind {
  input,        // bad user input: flags, files, sizes, names (exit 1)
  environment,  // no GPU, missing library, peer access unavailable (exit 2)
  check,        // a result check failed (#wrong > 0) (exit 3)
  internal,     // a bug in cclab itself (exit 4)
};

int exit_code(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Input errors name where the bad input is: a file and line ("topo.json:12: ..."), or a flag.
[[noreturn]] inline void throw_input(const std::string& message) { throw Error(ErrorKind::input, message); }
[[noreturn]] inline void throw_env(const std::string& message) { throw Error(ErrorKind::environment, message); }
[[noreturn]] void throw_internal(const char* file, int line, const std::string& message);

// `text` with every control character written visibly ("\n", "\r", "\t", "\x1b"), so that an error message
// fits on one line and cannot move a terminal's cursor. Bytes >= 0x80 (UTF-8) pass unchanged.
std::string one_line(std::string_view text);

}  // namespace cclab

// Internal invariants: a failure is a cclab bug and reports the source location.
#define CCLAB_ASSERT(cond, msg)                                                                \
  do {                                                                                         \
    if (!(cond)) ::cclab::throw_internal(__FILE__, __LINE__, std::string(#cond ": ") + (msg)); \
  } while (0)
