#include "cli/commands.hpp"
#include "core/error.hpp"

namespace cclab::cli {
int cmd_topo(const Argv&) { throw_env("'cclab topo' is not built yet"); }
}  // namespace cclab::cli
