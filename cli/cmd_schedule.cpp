#include "cli/commands.hpp"
#include "core/error.hpp"

namespace cclab::cli {
int cmd_schedule(const Argv&) { throw_env("'cclab schedule' is not built yet"); }
}  // namespace cclab::cli
