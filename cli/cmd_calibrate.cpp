#include "cli/commands.hpp"
#include "core/error.hpp"

namespace cclab::cli {
int cmd_calibrate(const Argv&) { throw_env("'cclab calibrate' is not built yet"); }
}  // namespace cclab::cli
