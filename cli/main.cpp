// cclab: one binary, subcommands (DESIGN.md "The command line").
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"

namespace {

const char* kUsage =
    "usage: cclab <command> [options]\n"
    "  list                      algorithms and topology presets\n"
    "  topo <preset|file>        describe a topology (--matrix: GPU x GPU table)\n"
    "  schedule --algo A -g N -b SIZE   the schedule an algorithm emits, as JSON\n"
    "  sim --topo T --algo A|all  simulate on a topology\n"
    "  run --algo A|all           execute on GPUs (CUDA/NCCL)\n"
    "  calibrate --out FILE       microbenchmarks on GPUs -> fitted profile\n"
    "  compare --measured F --topo T   prediction error against records\n"
    "Run 'cclab <command> --help' for a command's flags.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace cclab::cli;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  const std::string cmd = argv[1];
  const Argv rest(argv + 2, argv + argc);
  try {
    if (cmd == "list") return cmd_list(rest);
    if (cmd == "topo") return cmd_topo(rest);
    if (cmd == "schedule") return cmd_schedule(rest);
    if (cmd == "sim") return cmd_sim(rest);
    if (cmd == "run") return cmd_run(rest);
    if (cmd == "calibrate") return cmd_calibrate(rest);
    if (cmd == "compare") return cmd_compare(rest);
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::cerr << "cclab: unknown command '" << cmd << "'\n" << kUsage;
    return 1;
  } catch (const cclab::Error& e) {
    std::cerr << "cclab " << cmd << ": error: " << e.what() << "\n";
    return cclab::exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "cclab " << cmd << ": error: out of host memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cclab " << cmd << ": internal error: " << e.what() << "\n";
    return 4;
  }
}
