// `mpirun -np 2 cclab run` on a machine with at least 2 GPUs: every collective of the general and fused
// lowerings and the NCCL baseline, checked (zero wrong elements), in several dtypes, sizes that do not
// divide evenly, graph replay and op by op. Skips with a message without mpirun, MPI in the build or
// 2 GPUs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "exec/runtime/device.hpp"
#include "exec/runtime/mpi_env.hpp"

namespace {

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

class MpiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cclab::exec::mpi_built()) GTEST_SKIP() << "cclab was built without MPI";
    if (shell("command -v mpirun").code != 0) GTEST_SKIP() << "no mpirun on PATH";
    if (cclab::exec::visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  }
  Result mpirun(const std::string& args) {
    const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
    // $CCLAB: the binary to run where the tests were carried to another machine with it.
    const char* carried = std::getenv("CCLAB");
    const std::string cclab = carried && *carried ? carried : CCLAB_BINARY;
    return shell(
        "NCCL_NVLS_ENABLE=0 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader timeout 120 mpirun" +
        root + " -np 2 --bind-to none " + cclab + " run " + args);
  }
};

const char* kAlgos =
    "allreduce.ring,allgather.ring,reducescatter.ring,broadcast.pipeline,alltoall.direct,allreduce.nccl";

TEST_F(MpiGpu, EveryCollectiveIsExactInEveryDtype) {
  for (const char* dtype : {"float", "half", "bfloat16"}) {
    // 1000 and 1 MiB + 12 bytes: counts that split unevenly into chunks and channels.
    const Result r = mpirun(std::string("--algo ") + kAlgos + " -b 1000 -e 1000 -d " + dtype + " -w 1 -n 2");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("out of bounds values : 0 OK"), std::string::npos) << r.out;
    const Result big = mpirun(std::string("--algo ") + kAlgos + " -b 1048588 -e 1048588 -d " + dtype + " -w 1 -n 2");
    EXPECT_EQ(big.code, 0) << big.out;
    EXPECT_NE(big.out.find("out of bounds values : 0 OK"), std::string::npos) << big.out;
  }
}

TEST_F(MpiGpu, OpByOpAndOtherRedops) {
  const Result r = mpirun("--algo allreduce.ring,reducescatter.ring,allreduce.nccl -b 64K -e 64K --graph 0 -o max");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("out of bounds values : 0 OK"), std::string::npos) << r.out;
  const Result avg = mpirun("--algo allreduce.ring -b 4K -e 4M -f 32 -o avg -d half");
  EXPECT_EQ(avg.code, 0) << avg.out;
  EXPECT_NE(avg.out.find("out of bounds values : 0 OK"), std::string::npos) << avg.out;
}

// allreduce.bidir's kernels, one process per GPU: every kernel mode (flash and twoshot read and write the peers'
// user buffers, push and stream store into their receive buffers and rings), in place and out of place; lamport in
// chunks of its buffers (lamport_max_bytes=64K: 1 MiB + 12 B runs in 17 launches); the size table's own choices (ll
// below 128 KiB, the copy schedule at the largest sizes); uneven counts, every dtype, in graphs and op by op.
TEST_F(MpiGpu, AllReduceBidirModesAreExact) {
  const std::string modes =
      "allreduce.bidir.ll,allreduce.bidir.lamport,allreduce.bidir.flash,allreduce.bidir.push,allreduce.bidir.stream,"
      "allreduce.bidir.twoshot";
  for (const char* dtype : {"float", "half", "bfloat16"}) {
    const Result r = mpirun("--algo " + modes + " -b 1000 -e 64000 -f 8 -d " + dtype + " -w 1 -n 3");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("out of bounds values : 0 OK"), std::string::npos) << r.out;
  }
  // Sizes where flash, twoshot and stream use many CTAs (and stream wraps its rings); the loading twoshot.
  const Result big = mpirun(
      "--algo allreduce.bidir.flash,allreduce.bidir.push,allreduce.bidir.stream,allreduce.bidir.twoshot "
      "-b 1048588 -e 16777228 -f 16 -w 1 -n 3");
  EXPECT_EQ(big.code, 0) << big.out;
  EXPECT_NE(big.out.find("out of bounds values : 0 OK"), std::string::npos) << big.out;
  const Result loads = mpirun("--algo allreduce.bidir.twoshot -b 4M -e 4M -w 1 -n 3 --graph 0 --tune twoshot_push=0");
  EXPECT_EQ(loads.code, 0) << loads.out;
  EXPECT_NE(loads.out.find("out of bounds values : 0 OK"), std::string::npos) << loads.out;
  const std::string csv = ::testing::TempDir() + "mpi_bidir.csv";
  std::remove(csv.c_str());
  const Result chunks = mpirun(
      "--algo allreduce.bidir.lamport -b 1048588 -e 1048588 -w 1 -n 3 --graph 0 "
      "--tune lamport_max_bytes=64K --csv " +
      csv);
  EXPECT_EQ(chunks.code, 0) << chunks.out;
  EXPECT_NE(chunks.out.find("out of bounds values : 0 OK"), std::string::npos) << chunks.out;
  EXPECT_NE(shell("cat " + csv).out.find("17 launches over lamport's buffers"), std::string::npos);
  const Result table = mpirun("--algo allreduce.bidir -b 8 -e 8M -f 32 -w 1 -n 2 -d bfloat16 --csv " + csv);
  EXPECT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("out of bounds values : 0 OK"), std::string::npos) << table.out;
  std::string notes = shell("cat " + csv).out;
  const Result large = mpirun("--algo allreduce.bidir -b 512M -e 512M -w 1 -n 2 --csv " + csv);
  EXPECT_EQ(large.code, 0) << large.out;
  EXPECT_NE(large.out.find("out of bounds values : 0 OK"), std::string::npos) << large.out;
  notes += shell("cat " + csv).out;
  EXPECT_NE(notes.find("mode=ll"), std::string::npos) << notes;
  EXPECT_NE(notes.find("mode=lamport"), std::string::npos) << notes;
  EXPECT_NE(notes.find("general lowering, MPI"), std::string::npos) << notes;  // the copy schedule
}

// The fused programs under mpirun: each process launches its GPU's kernel of the program, the flags and peer copies
// crossing processes through CUDA IPC. Every registry schedule fused (small sizes take that path by default),
// uneven counts, an avg (the program's scale ops), op by op and in graphs; the general lowering above fused_max.
TEST_F(MpiGpu, FusedProgramsAreExact) {
  const std::string csv = ::testing::TempDir() + "mpi_fused.csv";
  std::remove(csv.c_str());
  const Result all = mpirun("--algo all -b 1000 -e 64000 -f 8 -w 1 -n 3 --csv " + csv);
  EXPECT_EQ(all.code, 0) << all.out;
  EXPECT_NE(all.out.find("out of bounds values : 0 OK"), std::string::npos) << all.out;
  const std::string notes = shell("cat " + csv).out;
  EXPECT_NE(notes.find("lowering=fused, MPI"), std::string::npos) << notes;
  for (const char* dtype : {"half", "bfloat16"}) {
    const Result r = mpirun(std::string("--algo allreduce.ring,reducescatter.ring,allreduce.tree -b 4K -e 4M -f 32 -o "
                                        "avg -w 1 -n 2 --tune lowering=fused -d ") +
                            dtype);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("out of bounds values : 0 OK"), std::string::npos) << r.out;
  }
  const Result eager =
      mpirun("--algo allgather.ring,alltoall.direct,gather.binomial -b 1000 -e 1000 --graph 0 -w 1 -n 2");
  EXPECT_EQ(eager.code, 0) << eager.out;
  EXPECT_NE(eager.out.find("out of bounds values : 0 OK"), std::string::npos) << eager.out;
}

TEST_F(MpiGpu, OnlyRankZeroWritesTheCsv) {
  const std::string csv = ::testing::TempDir() + "mpi_gpu.csv";
  std::remove(csv.c_str());
  const Result r = mpirun("--algo allreduce.ring -b 1M -e 1M --csv " + csv);
  EXPECT_EQ(r.code, 0) << r.out;
  const Result lines = shell("wc -l < " + csv);
  EXPECT_EQ(std::stoi(lines.out), 3) << lines.out;  // header, out-of-place, in-place
}

}  // namespace
