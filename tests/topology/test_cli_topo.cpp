// `cclab topo` as users and scripts call it: the built binary, its stdout, stderr and exit code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path temp_dir() {
  auto d = std::filesystem::temp_directory_path() / ("cclab-topo-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

Result cclab(const std::string& args) {
  const auto dir = temp_dir();
  const std::string cmd =
      std::string(CCLAB_BINARY) + " " + args + " > " + (dir / "out").string() + " 2> " + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  return r;
}

std::string data(const std::string& name) { return std::string(CCLAB_SOURCE_DIR) + "/tests/data/topology/" + name; }

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The matrix rows (lines starting with GPU<n> and a tab).
std::vector<std::string> matrix_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out.substr(out.find("\tGPU0")));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("GPU", 0) == 0 && line.find('\t') != std::string::npos) rows.push_back(line);
  }
  return rows;
}

void expect_one_line_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace

TEST(CliTopo, DgxH100MatrixIsNV18Everywhere) {
  const Result r = cclab("topo dgx-h100 --matrix");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("GPUs: 8"), std::string::npos);
  EXPECT_NE(r.out.find("nvlink 16, pcie 40, upi 2, memory 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVLink 450 GB/s (18 links)"), std::string::npos);
  const auto rows = matrix_rows(r.out);
  ASSERT_EQ(rows.size(), 8u);
  int nv18 = 0;
  for (const auto& row : rows) nv18 += count(row, "NV18");
  EXPECT_EQ(nv18, 56);
}

TEST(CliTopo, PcieBoxMatrix) {
  const Result r = cclab("topo pcie-2socket --matrix");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto rows = matrix_rows(r.out);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0], "GPU0\t X \tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t0");
  EXPECT_EQ(rows[7], "GPU7\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tPIX\t X \t1");
}

TEST(CliTopo, EveryPresetDescribes) {
  for (const char* p : {"h200x2", "dgx-a100", "hgx-h200", "2xdgx-h100", "128xdgx-h100:os2"}) {
    const Result r = cclab(std::string("topo ") + p);
    EXPECT_EQ(r.rc, 0) << p << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("topology: ") + p), std::string::npos) << r.out;
  }
  const Result c = cclab("topo 2xdgx-h100 --matrix");
  ASSERT_EQ(c.rc, 0);
  const auto rows = matrix_rows(c.out);
  ASSERT_EQ(rows.size(), 16u);  // <= 16 GPUs: all of them
  EXPECT_EQ(count(rows[0], "NET"), 8);
  EXPECT_EQ(count(rows[0], "NV18"), 7);
  const Result big = cclab("topo 4xdgx-h100 --matrix");
  EXPECT_EQ(matrix_rows(big.out).size(), 8u);
  EXPECT_NE(big.out.find("server 0 of 4 servers"), std::string::npos);
}

TEST(CliTopo, RoutingFlags) {
  const Result w = cclab("topo dgx-h100 --without nvlink --matrix");
  ASSERT_EQ(w.rc, 0) << w.err;
  EXPECT_NE(w.out.find("GPU0 -> GPU7: 5 hops"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("-upi-> n0.cpu1"), std::string::npos);
  EXPECT_EQ(matrix_rows(w.out)[0], "GPU0\t X \tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t0");
  const Result s = cclab("topo dgx-h100 --no-p2p");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("n0.mem0 | -memory-> n0.cpu0 -upi-> n0.cpu1"), std::string::npos) << s.out;
  const Result g = cclab("topo dgx-h100 --gpus 0,1,4,5 --matrix");
  ASSERT_EQ(g.rc, 0) << g.err;
  EXPECT_NE(g.out.find("GPUs: 4"), std::string::npos);
  EXPECT_EQ(matrix_rows(g.out).size(), 4u);
}

TEST(CliTopo, SaveLoadAndImportedFiles) {
  const auto file = temp_dir() / "saved.json";
  const Result a = cclab("topo hgx-h200 --save " + file.string());
  ASSERT_EQ(a.rc, 0) << a.err;
  const Result b = cclab("topo " + file.string());
  ASSERT_EQ(b.rc, 0) << b.err;
  // The same description, less the "saved to" line.
  EXPECT_EQ(a.out.substr(0, a.out.find("\nsaved to")), b.out);
  const Result smi = cclab("topo " + data("h200x2-nvidia-smi-topo-m.txt") + " --matrix");
  ASSERT_EQ(smi.rc, 0) << smi.err;
  EXPECT_EQ(matrix_rows(smi.out)[0], "GPU0\t X \tNV18\t0");
  const Result xml = cclab("topo " + data("h200x2-nccl-topo.xml") + " --matrix");
  ASSERT_EQ(xml.rc, 0) << xml.err;
  EXPECT_NE(xml.out.find("H200 SXM 141GB"), std::string::npos);
}

// The machines' own descriptions (nvidia-smi's matrix, NCCL's XML dump) agree with the preset that predicts them;
// another preset's GPU model is named as a difference, with exit 1.
TEST(CliTopo, CheckComparesAMachinesDumpWithAPreset) {
  for (const char* dump : {"h200x4-nvidia-smi-topo-m.txt", "h200x4-nccl-topo.xml", "h200x2-nvidia-smi-topo-m.txt"}) {
    const Result r = cclab("topo " + data(dump) + " --check hgx-h200");
    EXPECT_EQ(r.rc, 0) << dump << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("topology check: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(": agree"), std::string::npos) << r.out;
  }
  const Result h100 = cclab("topo " + data("h200x4-nccl-topo.xml") + " --check dgx-h100");
  EXPECT_EQ(h100.rc, 1) << h100.out << h100.err;
  EXPECT_NE(h100.out.find("GPU0 model: machine H200 SXM 141GB, preset H100 SXM5 80GB"), std::string::npos) << h100.out;
  // The PCIe box's matrix is not a DGX's: its GPU pairs differ.
  const Result pcie = cclab("topo " + data("pcie-box-nvidia-smi-topo-m.txt") + " --check dgx-h100");
  EXPECT_EQ(pcie.rc, 1) << pcie.out << pcie.err;
  EXPECT_NE(pcie.out.find("GPU0-GPU1: machine "), std::string::npos) << pcie.out;
}

TEST(CliTopo, BadInputIsOneLineAndExitOne) {
  expect_one_line_error(cclab("topo dgx-h900"), "unknown topology preset 'dgx-h900'");
  expect_one_line_error(cclab("topo /no/such/file.json"), "does not exist");
  expect_one_line_error(cclab("topo " + data("bad-syntax.json")), "bad-syntax.json:10: malformed JSON");
  expect_one_line_error(cclab("topo " + data("bad-negative-bw.json")), "bad-negative-bw.json:18:");
  expect_one_line_error(cclab("topo " + data("bad-disconnected.json")), "disconnected");
  expect_one_line_error(cclab("topo dgx-h100 --gpus 0,9"), "GPU 9 does not exist");
  expect_one_line_error(cclab("topo dgx-h100 --gpus 0,0"), "--gpus");
  expect_one_line_error(cclab("topo dgx-h100 --without pcie"), "--without takes 'nvlink'");
  expect_one_line_error(cclab("topo"), "name a preset or a file");
  expect_one_line_error(cclab("topo 8xdgx-h100:os0"), "bad suffix");
}
