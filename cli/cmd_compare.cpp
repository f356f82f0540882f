#include "cli/commands.hpp"
#include "core/error.hpp"

namespace cclab::cli {
int cmd_compare(const Argv&) { throw_env("'cclab compare' is not built yet"); }
}  // namespace cclab::cli
