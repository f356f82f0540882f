// A small flag parser for the cclab subcommands: declared flags only, one clear error otherwise.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cclab::cli {

struct FlagSpec {
  std::vector<std::string> names;  // e.g. {"-g", "--ngpus"}; the first long name is canonical
  bool takes_value = true;
  std::string help;
};

class Args {
 public:
  // Throws an input error ("cclab sim: unknown flag '--foo'", "cclab sim: -b needs a value") on bad argv.
  Args(std::string command, const std::vector<std::string>& argv, std::vector<FlagSpec> specs,
       size_t max_positional = 0);

  bool has(const std::string& name) const;  // any alias of the flag
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::string& command() const { return command_; }
  std::string usage() const;

 private:
  const FlagSpec* find(const std::string& name) const;
  std::string command_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;  // canonical name -> value ("" for switches)
  std::vector<std::string> positional_;
};

}  // namespace cclab::cli
