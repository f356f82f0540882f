#include "cli/commands.hpp"
#include "core/error.hpp"

namespace cclab::cli {
int cmd_sim(const Argv&) { throw_env("'cclab sim' is not built yet"); }
}  // namespace cclab::cli
