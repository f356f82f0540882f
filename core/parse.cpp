#include "core/parse.hpp"

#include <charconv>
#include <cmath>
#include <set>
#include <string>

#include "core/error.hpp"

namespace cclab {

namespace {
[[noreturn]] void bad(std::string_view flag, std::string_view text, std::string_view why) {
  throw_input(std::string(flag) + ": invalid value '" + std::string(text) + "' (" + std::string(why) + ")");
}
}  // namespace

int64_t parse_size(std::string_view flag, std::string_view text) {
  if (text.empty()) bad(flag, text, "empty size");
  int64_t multiplier = 1;
  std::string_view digits = text;
  switch (text.back()) {
    case 'K':
    case 'k':
      multiplier = int64_t(1) << 10;
      digits.remove_suffix(1);
      break;
    case 'M':
    case 'm':
      multiplier = int64_t(1) << 20;
      digits.remove_suffix(1);
      break;
    case 'G':
    case 'g':
      multiplier = int64_t(1) << 30;
      digits.remove_suffix(1);
      break;
    case 'T':
    case 't':
      multiplier = int64_t(1) << 40;
      digits.remove_suffix(1);
      break;
    default:
      break;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    bad(flag, text, "expected a byte count such as 8, 64K, 1M or 1G");
  if (value < 0) bad(flag, text, "size must not be negative");
  if (value > (int64_t(1) << 50) / multiplier) bad(flag, text, "size too large");
  return value * multiplier;
}

int64_t parse_int(std::string_view flag, std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) bad(flag, text, "expected an integer");
  if (value < min || value > max)
    bad(flag, text, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return value;
}

double parse_double(std::string_view flag, std::string_view text, double min, double max) {
  std::string s(text);
  char* end = nullptr;
  double value = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value)) bad(flag, text, "expected a number");
  if (value < min || value > max)
    bad(flag, text, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return value;
}

std::vector<int> parse_int_list(std::string_view flag, std::string_view text) {
  std::vector<int> out;
  std::set<int> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    if (comma == pos) bad(flag, text, "empty entry");  // name the whole list, not ''
    int v = int(parse_int(flag, text.substr(pos, comma - pos), 0, 1 << 20));
    if (!seen.insert(v).second) bad(flag, text, "duplicate entry " + std::to_string(v));
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

std::array<int64_t, 3> parse_shape(std::string_view flag, std::string_view text) {
  std::array<int64_t, 3> out{};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t comma = text.find(',', pos);
    if ((i < 2) != (comma != std::string_view::npos)) bad(flag, text, "expected M,K,N: three positive integers");
    if (comma == std::string_view::npos) comma = text.size();
    out[size_t(i)] = parse_int(flag, text.substr(pos, comma - pos), 1, int64_t(1) << 20);
    pos = comma + 1;
  }
  return out;
}

}  // namespace cclab
