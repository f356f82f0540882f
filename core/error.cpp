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

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u >= 0x20 && u != 0x7f) {
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace cclab
