#include "core/error.hpp"

namespace cclab {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::input:
      return 1;
    case ErrorKind::environment:
      return 2;
    case ErrorKind::check:
      return 3;
    case ErrorKind::internal:
      return 4;
  }
  return 4;
}

void throw_internal(const char* file, int line, const std::string& message) {
  throw Error(ErrorKind::internal,
              std::string("internal error at ") + file + ":" + std::to_string(line) + ": " + message);
}

}  // namespace cclab
