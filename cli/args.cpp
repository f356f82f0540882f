#include "cli/args.hpp"

#include "core/error.hpp"

namespace cclab::cli {

Args::Args(std::string command, const std::vector<std::string>& argv, std::vector<FlagSpec> specs,
           size_t max_positional)
    : command_(std::move(command)), specs_(std::move(specs)) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && std::isdigit(static_cast<unsigned char>(a[1])))) {
      std::string value;
      bool inline_value = false;
      if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
      const FlagSpec* spec = find(a);
      if (!spec) throw_input("cclab " + command_ + ": unknown flag '" + a + "' (see cclab " + command_ + " --help)");
      if (spec->takes_value && !inline_value) {
        if (i + 1 >= argv.size()) throw_input("cclab " + command_ + ": " + a + " needs a value");
        value = argv[++i];
      } else if (!spec->takes_value && inline_value) {
        throw_input("cclab " + command_ + ": " + a + " takes no value");
      }
      values_[spec->names.front()] = value;
    } else {
      if (positional_.size() >= max_positional) throw_input("cclab " + command_ + ": unexpected argument '" + a + "'");
      positional_.push_back(a);
    }
  }
}

const FlagSpec* Args::find(const std::string& name) const {
  for (const auto& s : specs_)
    for (const auto& n : s.names)
      if (n == name) return &s;
  return nullptr;
}

bool Args::has(const std::string& name) const { return get(name).has_value(); }

std::optional<std::string> Args::get(const std::string& name) const {
  const FlagSpec* spec = find(name);
  if (!spec) return std::nullopt;
  auto it = values_.find(spec->names.front());
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::string Args::usage() const {
  std::string u;
  for (const auto& s : specs_) {
    std::string names;
    for (const auto& n : s.names) names += (names.empty() ? "" : ", ") + n;
    if (s.takes_value) names += " VALUE";
    u += "  " + names + std::string(names.size() < 28 ? 28 - names.size() : 1, ' ') + s.help + "\n";
  }
  return u;
}

}  // namespace cclab::cli
