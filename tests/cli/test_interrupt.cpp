// An interrupted `cclab sim` sweep (issue 9) against the real binary and real signals: SIGINT (Ctrl-C) or
// SIGTERM (a batch system) ends it after the row in progress; the rows it finished are in the --csv and
// --json files (whole files, no temporary left), the table of the interrupted algorithm is printed, one
// stderr line names the signal, the first row not simulated and the files, and the exit code is 128 +
// the signal. A second signal stops the process at once, and the files still hold whole rows. A sweep of
// every algorithm stopped midway replaces a previous file with the rows of the algorithms it finished.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/record.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// `cclab args...` with stdout to a file and stderr to a pipe that the test reads while it runs.
class Child {
 public:
  Child(const std::vector<std::string>& args, const fs::path& stdout_file) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      std::vector<std::string> argv = {CCLAB_BINARY};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(CCLAB_BINARY, cargv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    err_fd_ = fds[0];
    ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  }
  ~Child() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    ::close(err_fd_);
  }

  // Reads stderr for up to `ms`; false once it is closed (the process is ending).
  bool pump(int ms) {
    pollfd p{err_fd_, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = ::read(err_fd_, buf, sizeof buf);
    if (n > 0) err_.append(buf, size_t(n));
    return n != 0;
  }
  // Polls until `ready()` holds (true) or the process ends / `limit` passes (false).
  bool until(const std::function<bool()>& ready, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (ready()) return true;
      if (!pump(2)) return ready();
    }
    return false;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  int wait() {
    while (pump(50)) {
    }
    ::waitpid(pid_, &status_, 0);
    reaped_ = true;
    return status_;
  }
  const std::string& err() const { return err_; }

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  std::string err_;
};

class SimInterrupt : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cclab-sim-interrupt-" + std::to_string(::getpid()) + "-" + std::to_string(GetParam()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Rows in the CSV now (0 while it does not exist yet); it is written atomically, so always whole.
  size_t csv_rows(const fs::path& csv) const {
    if (!fs::exists(csv)) return 0;
    return cclab::read_csv(csv.string()).size();
  }
  fs::path dir_;
};

std::string signame(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

// One algorithm over 8 B..1 GiB on 128 GPUs: 28 rows of ~25 ms each on the 2-core CI host, so a signal
// sent once two rows are on disk lands mid-sweep.
TEST_P(SimInterrupt, KeepsFinishedRowsAndSaysWhereItStopped) {
  const int sig = GetParam();
  const fs::path csv = dir_ / "sweep.csv", json = dir_ / "sweep.json", out = dir_ / "stdout.txt";
  Child c({"sim", "--topo", "16xdgx-h100", "--algo", "allreduce.ring", "-b", "8", "-e", "1G", "--csv", csv.string(),
           "--json", json.string()},
          out);
  if (!c.until([&] { return csv_rows(csv) >= 2; })) {
    c.wait();
    GTEST_SKIP() << "the sweep ended before two rows were saved:\n" << c.err();
  }
  c.signal(sig);
  const int status = c.wait();
  SCOPED_TRACE("stderr:\n" + c.err());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << " instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);

  // The last stderr line says where it stopped and where the rows are.
  std::string last = c.err();
  ASSERT_FALSE(last.empty());
  ASSERT_EQ(last.back(), '\n');
  last.pop_back();
  last = last.substr(last.rfind('\n') + 1);
  const std::regex stop_line("cclab sim: interrupted by " + signame(sig) +
                             ": stopped before allreduce\\.ring at ([0-9]+) B; ([0-9]+) finished rows kept in (.*) "
                             "and (.*)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(last, m, stop_line)) << "last line: " << last;
  const int64_t stopped_at = std::stoll(m[1]);
  const size_t kept = std::stoul(m[2]);
  EXPECT_EQ(m[3], csv.string());
  EXPECT_EQ(m[4], json.string());

  // The files hold exactly the finished rows: 8 B, 16 B, ... up to the size before the one it names.
  const std::vector<cclab::Record> rows = cclab::read_csv(csv.string());
  ASSERT_EQ(rows.size(), kept);
  ASSERT_GE(kept, 2u);
  EXPECT_LT(kept, 28u) << "every row finished: the signal did not stop the sweep";
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].algo, "allreduce.ring");
    EXPECT_EQ(rows[i].bytes, int64_t(8) << i);
    EXPECT_GT(rows[i].time_us, 0);
  }
  EXPECT_EQ(stopped_at, rows.back().bytes * 2);
  const auto j = nlohmann::json::parse(slurp(json));
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), kept);

  // The interrupted algorithm's table is printed with its finished rows.
  std::istringstream table(slurp(out));
  size_t table_rows = 0;
  bool header = false;
  for (std::string line; std::getline(table, line);) {
    header = header || line.starts_with("# allreduce.ring on 16xdgx-h100");
    table_rows += !line.empty() && line[0] != '#';
  }
  EXPECT_TRUE(header);
  EXPECT_EQ(table_rows, kept);

  // Nothing else was left in the folder (no temporary file).
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_TRUE(e.path() == csv || e.path() == json || e.path() == out) << "left behind: " << e.path();
}

// The first signal asks for a clean stop; the second, sent while the row is still running, kills at once
// (the default action is restored), and the files saved so far are still whole.
TEST_P(SimInterrupt, SecondSignalStopsAtOnce) {
  const int sig = GetParam();
  const fs::path csv = dir_ / "sweep.csv", out = dir_ / "stdout.txt";
  // Rows of ~50 ms (512 GPUs) so that the second signal comes while one is in progress.
  Child c({"sim", "--topo", "64xdgx-h100", "--algo", "allreduce.ring", "-b", "8", "-e", "1G", "--csv", csv.string()},
          out);
  if (!c.until([&] { return csv_rows(csv) >= 1; })) {
    c.wait();
    GTEST_SKIP() << "the sweep ended before a row was saved:\n" << c.err();
  }
  c.signal(sig);
  if (!c.until([&] { return c.err().find("stopping after the row in progress") != std::string::npos; })) {
    c.wait();
    GTEST_SKIP() << "the sweep ended before it acknowledged the first signal";
  }
  c.signal(sig);
  const int status = c.wait();
  SCOPED_TRACE("stderr:\n" + c.err());
  if (WIFEXITED(status)) {
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    GTEST_SKIP() << "the row finished before the second signal arrived (clean stop)";
  }
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), sig);
  EXPECT_GE(cclab::read_csv(csv.string()).size(), 1u);
}

// `--algo all` on 64 GPUs, interrupted while its third algorithm runs, over a previous run's complete CSV
// at the same path: the file is then the finished rows of the algorithms that started (never the old
// file, never half a row), and the stop line names one of them or the next.
TEST_P(SimInterrupt, EveryAlgorithmSweepKeepsTheAlgorithmsItFinished) {
  const int sig = GetParam();
  const fs::path csv = dir_ / "sweep.csv", out = dir_ / "stdout.txt";
  cclab::Record old;
  old.algo = "allreduce.previous";
  old.collective = "allreduce";
  old.backend = "sim";
  old.topology = "8xdgx-h100";
  old.ranks = 64;
  old.bytes = 1024;
  old.time_us = 10;
  cclab::write_csv_atomic(csv.string(), {old});

  Child c({"sim", "--topo", "8xdgx-h100", "--algo", "all", "-b", "8", "-e", "1G", "-f", "4", "--csv", csv.string()},
          out);
  if (!c.until([&] { return c.err().find("[3/") != std::string::npos; })) {
    c.wait();
    GTEST_SKIP() << "the sweep ended before its third algorithm:\n" << c.err();
  }
  c.signal(sig);
  const int status = c.wait();
  SCOPED_TRACE("stderr:\n" + c.err());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);

  // The algorithms in the order the progress lines "[k/N] name" announced them.
  std::vector<std::string> started;
  const std::regex progress(R"(\[[0-9]+/[0-9]+\] ([a-z_.]+) )");
  for (auto it = std::sregex_iterator(c.err().begin(), c.err().end(), progress); it != std::sregex_iterator(); ++it)
    started.push_back((*it)[1]);
  ASSERT_GE(started.size(), 3u);

  std::smatch m;
  const std::regex stop_line("cclab sim: interrupted by " + signame(sig) +
                             ": stopped before ([a-z_.]+) at [0-9]+ B; ([0-9]+) finished rows kept in " + csv.string());
  const std::string& err = c.err();
  const std::string last = err.substr(err.rfind('\n', err.size() - 2) + 1);
  ASSERT_TRUE(std::regex_search(last, m, stop_line)) << "last line: " << last;
  const std::vector<cclab::Record> rows = cclab::read_csv(csv.string());
  EXPECT_EQ(rows.size(), std::stoul(m[2]));
  ASSERT_FALSE(rows.empty());
  // Rows come algorithm by algorithm, in the announced order, and none is the previous file's.
  size_t next = 0;
  for (const auto& r : rows) {
    while (next < started.size() && started[next] != r.algo) ++next;
    ASSERT_LT(next, started.size()) << r.algo << " was not announced before the signal, or out of order";
    EXPECT_EQ(r.backend, "sim");
    EXPECT_GT(r.time_us, 0);
  }
  // Where it stopped: the last announced algorithm, or the one after it (signal between two algorithms).
  EXPECT_TRUE(m[1] == started.back() || std::find(started.begin(), started.end(), m[1]) == started.end())
      << "stopped before " << m[1] << ", announced last: " << started.back();
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_TRUE(e.path() == csv || e.path() == out) << "left behind: " << e.path();
}

INSTANTIATE_TEST_SUITE_P(Signals, SimInterrupt, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) { return signame(info.param); });

}  // namespace
