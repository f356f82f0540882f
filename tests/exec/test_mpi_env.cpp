// The MPI mode's decisions that need neither MPI nor a GPU: which launcher started the process, what
// the mode refuses (before MPI_Init, one line, exit 1 from rank 0 only), and, through the binary,
// that a process started by mpirun without a GPU fails with one line naming its rank (exit 2).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "core/error.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/mpi_env.hpp"

namespace {

using cclab::exec::MpiLaunch;

MpiLaunch launch_of(const std::map<std::string, std::string>& env) {
  return cclab::exec::mpi_launch_from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

struct Result {
  int code = -1;
  std::string out;
};

Result shell(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `cclab run` as rank `rank` of `size` processes of a (pretend) Open MPI launch. Only for inputs
// refused before MPI_Init: nothing here may reach MPI_Init without a real mpirun.
Result run_as_rank(int rank, int size, const std::string& args) {
  return shell("env OMPI_COMM_WORLD_SIZE=" + std::to_string(size) + " OMPI_COMM_WORLD_RANK=" + std::to_string(rank) +
               " " + CCLAB_BINARY + " run " + args);
}

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

TEST(MpiLaunch, ReadsEachLaunchersVariables) {
  EXPECT_EQ(launch_of({}).world_size, 0);
  EXPECT_EQ(launch_of({}).world_rank, -1);
  const MpiLaunch ompi = launch_of({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}});
  EXPECT_EQ(ompi.world_size, 4);
  EXPECT_EQ(ompi.world_rank, 3);
  EXPECT_EQ(ompi.source, "OMPI_COMM_WORLD_SIZE");
  const MpiLaunch hydra = launch_of({{"PMI_SIZE", "2"}, {"PMI_RANK", "0"}});
  EXPECT_EQ(hydra.world_size, 2);
  EXPECT_EQ(hydra.world_rank, 0);
  EXPECT_EQ(launch_of({{"MV2_COMM_WORLD_SIZE", "8"}}).world_size, 8);
  // Open MPI's variables win when several launchers' are present (a Hydra-launched Open MPI job
  // does not exist; a stale PMI_SIZE in the environment does).
  EXPECT_EQ(launch_of({{"PMI_SIZE", "3"}, {"OMPI_COMM_WORLD_SIZE", "2"}}).world_size, 2);
  EXPECT_EQ(launch_of({{"OMPI_COMM_WORLD_SIZE", ""}}).world_size, 0);  // empty: not set
}

TEST(MpiLaunch, BadValuesNameTheVariable) {
  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {{"OMPI_COMM_WORLD_SIZE", "two"}},
           {{"OMPI_COMM_WORLD_SIZE", "0"}},
           {{"PMI_SIZE", "2"}, {"PMI_RANK", "2"}},  // a rank outside the world
       }) {
    try {
      launch_of(env);
      ADD_FAILURE() << env.begin()->first;
    } catch (const cclab::Error& e) {
      EXPECT_EQ(e.kind(), cclab::ErrorKind::input);
      const bool names = std::string(e.what()).find("PMI_RANK") != std::string::npos ||
                         std::string(e.what()).find("OMPI_COMM_WORLD_SIZE") != std::string::npos;
      EXPECT_TRUE(names) << e.what();
    }
  }
}

TEST(MpiMode, LauncherOfSeveralProcessesOrFlag) {
  cclab::exec::RunOptions o;
  EXPECT_FALSE(cclab::exec::mpi_mode(o, launch_of({})));
  EXPECT_FALSE(cclab::exec::mpi_mode(o, launch_of({{"OMPI_COMM_WORLD_SIZE", "1"}})));  // mpirun -np 1: as without
  EXPECT_TRUE(cclab::exec::mpi_mode(o, launch_of({{"OMPI_COMM_WORLD_SIZE", "2"}})));
  o.mpi = true;
  EXPECT_TRUE(cclab::exec::mpi_mode(o, launch_of({})));
}

TEST(MpiMode, RefusesWhatOneProcessPerGpuCannotDo) {
  const MpiLaunch two = launch_of({{"OMPI_COMM_WORLD_SIZE", "2"}});
  cclab::exec::RunOptions o;
  EXPECT_EQ(cclab::exec::mpi_option_refusal(o, two), "");
  o.nranks = 2;
  EXPECT_EQ(cclab::exec::mpi_option_refusal(o, two), "");
  o.nranks = 4;
  EXPECT_NE(cclab::exec::mpi_option_refusal(o, two).find("-g 4"), std::string::npos);
  o.nranks = 0;
  o.share_gpus = true;
  EXPECT_NE(cclab::exec::mpi_option_refusal(o, two).find("--share-gpus"), std::string::npos);
  o.share_gpus = false;
  // Every lowering runs under mpirun (the fused program's kernels one per process).
  for (const char* tune : {"channels=2,lowering=fused", "lowering=plan"}) {
    o.tune = tune;
    EXPECT_EQ(cclab::exec::mpi_option_refusal(o, two), "") << tune;
  }
}

TEST(MpiRunCli, RefusalsAreOneLineFromRankZeroOnly) {
  const char* cases[][2] = {
      {"--algo allreduce.ring --share-gpus", "--share-gpus"},
      {"--algo allreduce.ring -g 3", "-g 3"},
      {"--algo allreduce.nope", "unknown algorithm"},
  };
  for (const auto& c : cases) {
    const Result r0 = run_as_rank(0, 2, c[0]);
    EXPECT_EQ(r0.code, 1) << c[0] << ": " << r0.out;
    EXPECT_EQ(count_lines(r0.out), 1) << c[0] << ": " << r0.out;
    EXPECT_NE(r0.out.find(c[1]), std::string::npos) << c[0] << ": " << r0.out;
    const Result r1 = run_as_rank(1, 2, c[0]);
    EXPECT_EQ(r1.code, 1) << c[0] << ": " << r1.out;
    EXPECT_EQ(r1.out, "") << c[0];  // the other ranks exit with rank 0's code, silently
  }
  // --mpi without a launcher refuses the same way.
  const Result r = shell(std::string(CCLAB_BINARY) + " run --mpi --share-gpus --algo allreduce.ring");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--share-gpus"), std::string::npos) << r.out;
}

TEST(MpiRunCli, WithoutMpiInTheBuildUnderALauncherIsExitTwo) {
  if (cclab::exec::mpi_built()) GTEST_SKIP() << "this cclab was built with MPI";
  const Result r = run_as_rank(0, 2, "--algo allreduce.ring");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("built without MPI"), std::string::npos) << r.out;
}

// A real mpirun on a machine without GPUs: every rank fails in MpiWorld with a line naming its rank,
// and the job ends with the environment error's exit code (MPI_Abort).
TEST(MpiRunCli, NoGpuUnderMpirunNamesTheRankAndExitsTwo) {
  if (!cclab::exec::mpi_built()) GTEST_SKIP() << "built without MPI";
  if (cclab::exec::visible_devices() > 0) GTEST_SKIP() << "a GPU is present (test_mpi_gpu covers this machine)";
  if (shell("command -v mpirun").code != 0) GTEST_SKIP() << "no mpirun on PATH";
  const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
  const Result r = shell("timeout 60 mpirun" + root + " -np 2 --oversubscribe " + CCLAB_BINARY +
                         " run --algo allreduce.ring -b 1K -e 1K");
  EXPECT_EQ(r.code, 2) << r.out;
  // The first rank to fail aborts the job: the other may be killed before it prints.
  const bool named = r.out.find("cclab run: error: rank 0: no CUDA device found\n") != std::string::npos ||
                     r.out.find("cclab run: error: rank 1: no CUDA device found\n") != std::string::npos;
  EXPECT_TRUE(named) << r.out;
}

}  // namespace
