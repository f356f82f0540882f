// cclab: one binary, subcommands (DESIGN.md "The command line").
//
// Exit codes (issue 9): 0 success; 1 user or input error; 2 environment (no GPU, missing library);
// 3 a result check failed (#wrong > 0); 4 a cclab bug. A sweep (`cclab sim`, `cclab run`) stopped by
// SIGINT or SIGTERM keeps the rows it finished, says where it stopped, and exits 128 + the signal
// (130, 143), the code a shell gives a process the signal killed, so scripts tell "interrupted" from "bad input".
//
// Every error is exactly one line on stderr: control characters of the message (a newline inside a
// flag's value, say) are written as visible escapes.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <ios>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "core/error.hpp"
#ifdef CCLAB_HAVE_EXEC
#include "exec/microbench/microbench.hpp"
#endif

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
    "Run 'cclab <command> --help' for a command's flags.\n"
    "Exit codes: 0 ok, 1 bad input, 2 environment (no GPU, missing library), 3 a result check failed,\n"
    "4 internal error, 128+signal (130, 143) a sweep stopped by SIGINT/SIGTERM (finished rows kept).\n";

void error_line(const std::string& cmd, std::string_view what, std::string_view message) {
  std::cerr << "cclab " << cclab::one_line(cmd) << ": " << what << cclab::one_line(message) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cclab::cli;
  if (argc < 2) {
    std::cerr << "cclab: no command given (see cclab --help)\n";
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
#ifdef CCLAB_HAVE_EXEC
    // calibrate's child process (NCCL send/recv under a pinned protocol; exec/microbench/microbench_bidir.cu)
    if (cmd == "__nccl-p2p-probe" && rest.size() == 2)
      return cclab::exec::nccl_p2p_probe_main(rest[0], std::stoll(rest[1]));
#endif
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::cerr << "cclab: unknown command '" << cclab::one_line(cmd) << "' (see cclab --help)\n";
    return 1;
  } catch (const cclab::Error& e) {
    error_line(cmd, "error: ", e.what());
    return cclab::exit_code(e.kind());
  } catch (const std::filesystem::filesystem_error& e) {
    // A file or folder named on the command line that the OS refuses (permissions, a folder where a
    // file belongs): the user's input, so exit 1, though the code that read it did not say so itself.
    error_line(cmd, "error: ", e.what());
    return 1;
  } catch (const std::ios_base::failure& e) {
    error_line(cmd, "error: reading a file: ", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    error_line(cmd, "error: ", "out of host memory");
    return 2;
  } catch (const std::exception& e) {
    error_line(cmd, "internal error: ", e.what());
    return 4;
  }
}
