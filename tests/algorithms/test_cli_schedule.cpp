// `cclab schedule` on the real binary: the JSON it prints, --summary, and one clear line for bad input.
#include <gmock/gmock.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string out, err;
};

Result cclab(const std::string& args) {
  // One stderr file per process and call: ctest runs these tests as parallel processes.
  static int calls = 0;
  const std::string err_file = ::testing::TempDir() + "cclab_schedule_stderr_" + std::to_string(::getpid()) + "_" +
                               std::to_string(++calls) + ".txt";
  const std::string cmd = std::string(CCLAB_BINARY) + " schedule " + args + " 2>" + err_file;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), got);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = fopen(err_file.c_str(), "r")) {
    while ((got = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), got);
    fclose(f);
  }
  std::remove(err_file.c_str());
  return r;
}

TEST(CliSchedule, PrintsTheScheduleAsJson) {
  const Result r = cclab("--algo allreduce.ring -g 4 -b 1K -d half");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"algo\": \"allreduce.ring\""));
  EXPECT_THAT(r.out, HasSubstr("\"count\": 512"));
  EXPECT_THAT(r.out, HasSubstr("\"dtype\": \"half\""));
  EXPECT_THAT(r.out,
              HasSubstr("\"kind\": \"put\", \"src\": [0,\"input\",768], \"dst\": [1,\"scratch\",0], \"bytes\": 256"));
  // 2(n-1) puts per rank, each with its own line.
  size_t puts = 0;
  for (size_t pos = 0; (pos = r.out.find("\"kind\": \"put\"", pos)) != std::string::npos; ++pos) ++puts;
  EXPECT_EQ(puts, 4u * 2u * 3u);
}

TEST(CliSchedule, SummaryGivesPerRankTraffic) {
  const Result r = cclab("--algo broadcast.binomial -g 8 -b 1M --root 3 --summary");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("# broadcast.binomial  collective broadcast  ranks 8  size 1048576 B"));
  EXPECT_THAT(r.out, HasSubstr("sent_bytes"));
  // The root sends log2(8) = 3 whole messages.
  EXPECT_THAT(r.out, HasSubstr("     3        4            3      3145728"));
}

TEST(CliSchedule, BadInputIsOneLineAndExit1) {
  for (const char* args :
       {"--algo allreduce.nope -g 4 -b 1K", "--algo allreduce.rhd -g 6 -b 1K", "--algo allreduce.ring -g 0 -b 1K",
        "--algo allreduce.ring -g 4 -b 1Q", "--algo allreduce.ring -g 4 -b 1K -d double",
        "--algo broadcast.binomial -g 4 --root 4", "-g 4 -b 1K"}) {
    const Result r = cclab(args);
    EXPECT_EQ(r.code, 1) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("error")) << args;
  }
  EXPECT_THAT(cclab("--algo allreduce.rhd -g 6 -b 1K").err, HasSubstr("got 6 ranks"));
  EXPECT_THAT(cclab("--algo allreduce.nope -g 4 -b 1K").err, HasSubstr("allreduce.ring"));
}

}  // namespace
