// One function per subcommand, each in its own file (cmd_<name>.cpp). Each returns the exit code;
// errors are thrown as cclab::Error and turned into one line by main().
#pragma once

#include <string>
#include <vector>

namespace cclab::cli {

using Argv = std::vector<std::string>;

int cmd_list(const Argv& argv);
int cmd_topo(const Argv& argv);
int cmd_schedule(const Argv& argv);
int cmd_sim(const Argv& argv);
int cmd_run(const Argv& argv);        // needs the executor; says so when built without CUDA
int cmd_calibrate(const Argv& argv);  // needs the executor
int cmd_compare(const Argv& argv);

}  // namespace cclab::cli
