#include "cli/commands.hpp"
#include "core/error.hpp"

namespace cclab::cli {
int cmd_run(const Argv&) { throw_env("'cclab run' is not built yet"); }
}  // namespace cclab::cli
