// Bad input fed to the real `cclab` binary (issue 9): every case must end with the exit code the table
// says (1: user or input error, 2: environment), exactly one line on stderr that names the problem, no
// crash (no signal, no "internal error") and no hang (each case runs under `timeout 5`).
//
// Inputs that need files get them from a per-process folder that the suite writes first: "{T}" in an
// argument stands for that folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr int kTimeoutS = 5;  // the issue's bound for any bad input

struct Case {
  std::string name;               // test name suffix
  std::vector<std::string> args;  // after `cclab`; "{T}" is the fixture folder
  int exit_code;                  // 1: input error, 2: environment
  std::string expect;             // stderr must contain one of these ('|'-separated, case-insensitive)
  std::string env = "";           // "NAME=value" set for the child ("NAME=" sets it empty)
  std::string disabled = "";      // non-empty: skipped, with this reason printed
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  os << "cclab";
  for (const auto& a : c.args) os << " " << a;
  return os;
}

// A valid cclab topology file with two GPUs on one NVSwitch; fixtures below break it one way each.
std::string topo_json(const std::string& gpu_gpu_bw, const std::string& extra_node = "") {
  return R"({
  "format": "cclab-topology", "version": 1, "name": "two", "description": "two GPUs on a switch",
  "nodes": [
    {"name": "gpu0", "kind": "gpu", "index": 0, "mem_bw_GBps": 4800},
    {"name": "gpu1", "kind": "gpu", "index": 1, "mem_bw_GBps": 4800},
    {"name": "nvs", "kind": "nvswitch"})" +
         extra_node + R"(
  ],
  "links": [
    {"from": "gpu0", "to": "nvs", "kind": "nvlink", "bw_GBps": )" +
         gpu_gpu_bw + R"(, "latency_us": 0.5},
    {"from": "nvs", "to": "gpu0", "kind": "nvlink", "bw_GBps": 450, "latency_us": 0.5},
    {"from": "gpu1", "to": "nvs", "kind": "nvlink", "bw_GBps": 450, "latency_us": 0.5},
    {"from": "nvs", "to": "gpu1", "kind": "nvlink", "bw_GBps": 450, "latency_us": 0.5}
  ]
}
)";
}

// The real output of the 2 x H200 machine (shared/hardware), header and rows.
const char* kSmiGood =
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\t0-31\t0\t\tN/A\n"
    "GPU1\tNV18\t X \t0-31\t0\t\tN/A\n";

const char* kRecordsHeader =
    "algo,collective,backend,topology,ranks,bytes,count,dtype,redop,root,inplace,time_us,algbw_gbps,busbw_gbps,"
    "wrong,device,commit,date,shape,pred_time_us,pred_busbw_gbps,error,note\n";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

class BadInput : public ::testing::TestWithParam<Case> {
 public:
  static fs::path dir;

  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("cclab-bad-input-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    // Topology files.
    write(dir / "empty.json", "");
    write(dir / "malformed.json", R"({"format": "cclab-topology", "version": 1, "nodes": [ {"name": "gpu0",)");
    write(dir / "not_cclab.json", R"({"hello": "world"})");
    write(dir / "zero_bw.json", topo_json("0"));
    write(dir / "negative_bw.json", topo_json("-450"));
    write(dir / "string_bw.json", topo_json("\"fast\""));
    write(dir / "disconnected.json",
          topo_json("450", ",\n    {\"name\": \"gpu2\", \"kind\": \"gpu\", \"index\": 2, \"mem_bw_GBps\": 4800}"));
    write(dir / "gpu_index_gap.json",
          topo_json("450", ",\n    {\"name\": \"gpu9\", \"kind\": \"gpu\", \"index\": 9, \"mem_bw_GBps\": 4800}"));
    write(
        dir / "huge_gpu_index.json",
        topo_json("450", ",\n    {\"name\": \"gpuX\", \"kind\": \"gpu\", \"index\": 2000000000, \"mem_bw_GBps\": 1}"));
    write(dir / "format_not_string.json", R"({"format": 7, "version": 1, "nodes": [], "links": []})");
    static constexpr char kElf[] =
        "\x7f"
        "ELF\x02\x01\x01\0\0\0garbage";  // an ELF header's start
    write(dir / "binary.bin", std::string(kElf, sizeof kElf - 1));
    // nvidia-smi topo -m text.
    write(dir / "smi_garbage.txt", std::string(kSmiGood) + "GPU2\tNV18\tFOO\t X \n");
    write(dir / "smi_unknown_label.txt", "\tGPU0\tGPU1\nGPU0\t X \tWARP9\nGPU1\tWARP9\t X \n");
    write(dir / "smi_not_square.txt", "\tGPU0\tGPU1\nGPU0\t X \tNV18\n");
    write(dir / "smi_header_only.txt", "\tGPU0\tGPU1\tCPU Affinity\n");
    // NCCL topology XML.
    write(dir / "truncated.xml",
          "<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"ffffffff\" arch=\"x86_64\" vendor=\"GenuineIntel\">\n"
          "    <pci busid=\"0000:18:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
          "      <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n        <nvlink target=\"0000:07:00.0\" count=\"1");
    write(dir / "not_nccl.xml", "<html><body>hello</body></html>\n");
    write(dir / "xml_no_gpus.xml", "<system version=\"1\"><cpu numaid=\"0\"/></system>\n");
    // Records.
    write(dir / "records_bad" / "bad.csv", std::string(kRecordsHeader) + "allreduce.ring,allreduce,gpu,h200x2,2\n");
    write(dir / "records_nan" / "nan.csv",
          std::string(kRecordsHeader) +
              "allreduce.ring,allreduce,gpu,h200x2,2,1024,256,float,sum,-1,0,abc,1,1,0,H200,abc,2026-01-01,,,,,\n");
    write(dir / "records_no_header.csv", "allreduce.ring,allreduce,gpu\n");
    fs::create_directories(dir / "records_empty");
    // Profiles.
    write(dir / "profile_malformed.json", "{\"name\": \"x\", \"params\": {");
    write(dir / "profile_unknown_param.json", R"({"name": "x", "params": {"warp_drive_us": 1.0}})");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};
fs::path BadInput::dir;

struct Outcome {
  int exit_code = -1;  // as a shell reports it: 128 + signal when killed
  std::string err;
  double seconds = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `timeout -k 1 5 cclab args...` with stdin from /dev/null and stdout/stderr to files.
Outcome run_cclab(const Case& c, const fs::path& dir) {
  std::vector<std::string> argv = {"timeout", "-k", "1", std::to_string(kTimeoutS), CCLAB_BINARY};
  for (std::string a : c.args) {
    for (size_t p; (p = a.find("{T}")) != std::string::npos;) a.replace(p, 3, dir.string());
    argv.push_back(a);
  }
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (!c.env.empty()) {
      const auto eq = c.env.find('=');
      ::setenv(c.env.substr(0, eq).c_str(), c.env.substr(eq + 1).c_str(), 1);
    }
    // The sanitizer build's own reports must fail the case, not pass as "exit 1".
    ::setenv("ASAN_OPTIONS", "abort_on_error=1:detect_leaks=1", 0);
    ::setenv("UBSAN_OPTIONS", "abort_on_error=1:halt_on_error=1", 0);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execvp("timeout", cargv.data());
    ::_exit(127);
  }
  Outcome o;
  int status = 0;
  ::waitpid(pid, &status, 0);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.err = slurp(err);
  return o;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return s;
}

bool contains_any(const std::string& text, const std::string& alternatives) {
  const std::string t = lower(text);
  std::stringstream ss(alternatives);
  for (std::string alt; std::getline(ss, alt, '|');)
    if (t.find(lower(alt)) != std::string::npos) return true;
  return false;
}

TEST_P(BadInput, OneLineRightExitNoCrashNoHang) {
  const Case& c = GetParam();
  if (!c.disabled.empty()) GTEST_SKIP() << "disabled: " << c.disabled;
  ASSERT_TRUE(fs::exists(CCLAB_BINARY)) << CCLAB_BINARY;
  const Outcome o = run_cclab(c, dir);
  SCOPED_TRACE(::testing::Message() << c << "\n  exit " << o.exit_code << ", " << o.seconds << " s, stderr:\n"
                                    << o.err);
  ASSERT_NE(o.exit_code, 124) << "hung: killed after " << kTimeoutS << " s";
  ASSERT_LT(o.exit_code, 124) << "crashed, or killed (exit " << o.exit_code << ")";
  EXPECT_EQ(o.exit_code, c.exit_code);
  EXPECT_LT(o.seconds, kTimeoutS);
  EXPECT_EQ(o.err.find("internal error"), std::string::npos);
  EXPECT_EQ(o.err.find("runtime error"), std::string::npos) << "UndefinedBehaviorSanitizer report";
  EXPECT_EQ(o.err.find("Sanitizer"), std::string::npos) << "sanitizer report";
  // Exactly one line: non-empty, newline-terminated, no other newline.
  ASSERT_FALSE(o.err.empty()) << "nothing on stderr";
  EXPECT_EQ(o.err.back(), '\n');
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "stderr is not one line";
  EXPECT_TRUE(contains_any(o.err, c.expect)) << "stderr does not name the problem (want " << c.expect << ")";
  // No raw control character (a value's newline, a terminal escape) reaches the terminal.
  EXPECT_TRUE(std::none_of(o.err.begin(), o.err.end() - 1, [](char ch) { return std::iscntrl((unsigned char)ch); }))
      << "stderr holds a control character";
  // A refused write leaves no temporary file behind.
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_NE(e.path().extension(), ".tmp") << "left behind: " << e.path();
}

// The algorithm every sim case uses unless it is about the algorithm.
const std::vector<std::string> kSim = {"sim", "--topo", "dgx-h100", "--algo", "allreduce.ring"};

std::vector<std::string> sim(std::vector<std::string> more) {
  std::vector<std::string> a = kSim;
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

const std::vector<Case> kCases = {
    // The command line itself.
    {"unknown_command", {"frobnicate"}, 1, "unknown command 'frobnicate'"},
    {"no_command", {}, 1, "no command"},
    {"newline_in_command", {"fro\nb"}, 1, "fro\\nb"},
    // Control characters inside a value are printed as visible escapes: the error stays one line.
    {"newline_in_value", {"sim", "--topo", "dgx-h100", "--algo", "allreduce.x\nring"}, 1, "allreduce.x\\nring"},
    {"escape_sequence_in_value",
     {"sim", "--topo", "dgx-h100", "--algo", "allreduce.\x1b[31mring"},
     1,
     "allreduce.\\x1b[31mring"},
    {"carriage_return_in_preset", {"topo", "dgx-h100\r"}, 1, "dgx-h100\\r"},
    {"empty_algo", {"sim", "--topo", "dgx-h100", "--algo", ""}, 1, "unknown algorithm ''"},
    {"algo_list_trailing_comma", {"sim", "--topo", "dgx-h100", "--algo", "allreduce.ring,"}, 1, "''"},
    {"unknown_flag", sim({"--frobnicate"}), 1, "--frobnicate"},
    {"unknown_flag_inline_value", sim({"--warp=9"}), 1, "--warp"},
    {"missing_value_at_end", sim({"-b"}), 1, "-b"},
    {"switch_given_a_value", sim({"--no-p2p=1"}), 1, "--no-p2p"},
    {"unexpected_positional", sim({"extra"}), 1, "extra"},
    {"sim_without_algo", {"sim", "--topo", "dgx-h100"}, 1, "--algo"},
    {"topo_without_argument", {"topo"}, 1, "topo|preset|file"},
    // Sizes and numbers.
    {"size_bad_suffix", sim({"-b", "1Q"}), 1, "1Q"},
    {"size_negative", sim({"-b", "-8"}), 1, "-8"},
    {"size_fractional", sim({"-e", "1.5M"}), 1, "1.5M"},
    {"size_empty", sim({"-b="}), 1, "-b"},
    {"size_overflow", sim({"-e", "99999999999999999999"}), 1, "99999999999999999999"},
    {"size_too_large", sim({"-e", "2000000T"}), 1, "2000000T"},
    {"min_above_max", sim({"-b", "1M", "-e", "1K"}), 1, "-b|-e|minbytes|maxbytes"},
    {"step_factor_one", sim({"-b", "8", "-e", "1M", "-f", "1"}), 1, "-f|stepfactor"},
    {"step_factor_zero", sim({"-b", "8", "-e", "1M", "-f", "0"}), 1, "-f|stepfactor"},
    {"step_factor_garbage", sim({"-f", "two"}), 1, "two"},
    {"ngpus_zero", sim({"-g", "0"}), 1, "-g|ngpus"},
    {"ngpus_not_a_number", sim({"-g", "eight"}), 1, "eight"},
    {"bad_dtype", sim({"-d", "float128"}), 1, "float128"},
    // Algorithms and their options.
    {"unknown_algorithm", {"sim", "--topo", "dgx-h100", "--algo", "allreduce.nope"}, 1, "allreduce.nope"},
    {"unknown_algorithm_schedule",
     {"schedule", "--algo", "allreduce.nope", "-g", "4", "-b", "1K"},
     1,
     "allreduce.nope"},
    {"rhd_on_6_ranks",
     {"sim", "--topo", "dgx-h100", "--algo", "allreduce.rhd", "-g", "6", "-b", "1M", "-e", "1M"},
     1,
     "rhd|power of two|power-of-two|6"},
    {"root_beyond_ranks",
     {"schedule", "--algo", "broadcast.binomial", "-g", "4", "-b", "1K", "--root", "4"},
     1,
     "root"},
    {"matmul_without_shape", {"sim", "--topo", "h200x2", "--algo", "allgather_matmul.ring", "-g", "2"}, 1, "shape"},
    {"matmul_bad_shape",
     {"sim", "--topo", "h200x2", "--algo", "allgather_matmul.ring", "-g", "2", "--shape", "1,2"},
     1,
     "1,2"},
    {"matmul_zero_shape",
     {"sim", "--topo", "h200x2", "--algo", "allgather_matmul.ring", "-g", "2", "--shape", "0,4096,4096"},
     1,
     "0,4096,4096|--shape"},
    {"matmul_shape_overflow",
     {"sim", "--topo", "h200x2", "--algo", "allgather_matmul.ring", "-g", "2", "--shape", "99999999999,2,3"},
     1,
     "99999999999|--shape"},
    {"sparse_density_2",
     {"sim", "--topo", "h200x2", "--algo", "allreduce.sparse", "-g", "2", "--rows", "1000", "--dim", "8", "--density",
      "2.0"},
     1,
     "density|2.0"},
    {"sparse_rows_times_dim_overflows",
     {"sim", "--topo", "h200x2", "--algo", "allreduce.sparse", "-g", "2", "--rows", "1099511627776", "--dim",
      "1073741824"},
     1,
     "--rows|--dim|too large"},
    {"sparse_bad_dist",
     {"sim", "--topo", "h200x2", "--algo", "allreduce.sparse", "-g", "2", "--rows", "1000", "--dim", "8", "--dist",
      "gauss"},
     1,
     "gauss"},
    // Topology names and GPU selection.
    {"unknown_preset_sim", {"sim", "--topo", "dgx-h999", "--algo", "allreduce.ring"}, 1, "dgx-h999"},
    {"unknown_preset_topo", {"topo", "dgx-h999"}, 1, "dgx-h999"},
    {"cluster_of_zero", {"topo", "0xdgx-h100"}, 1, "0xdgx-h100"},
    {"cluster_absurdly_large", {"topo", "1000000xdgx-h100"}, 1, "1000000"},
    {"cluster_int_overflow", {"topo", "99999999999xdgx-h100"}, 1, "99999999999"},
    {"cluster_beyond_int64", {"topo", "99999999999999999999999xdgx-h100"}, 1, "99999999999999999999999"},
    // 100000 x 8 GPUs took minutes and gigabytes to build; above 131072 GPUs a cluster is refused at once.
    {"cluster_of_100000_servers", {"sim", "--topo", "100000xdgx-h100", "--algo", "allreduce.ring"}, 1, "131072"},
    {"cluster_one_above_limit", {"topo", "16385xdgx-h100"}, 1, "16385"},
    {"gpus_names_gpu_99", sim({"--gpus", "0,99"}), 1, "99"},
    {"gpus_duplicate", sim({"--gpus", "0,1,1"}), 1, "duplicate|0,1,1"},
    {"gpus_empty_entry", sim({"--gpus", "0,,1"}), 1, "0,,1"},
    {"ngpus_beyond_topology", {"sim", "--topo", "h200x2", "--algo", "allreduce.ring", "-g", "16"}, 1, "16"},
    {"without_unknown", sim({"--without", "warp"}), 1, "warp"},
    // Topology files.
    {"missing_topology_file", {"topo", "{T}/no_such_topo.json"}, 1, "no_such_topo.json"},
    {"topology_file_is_a_folder", {"topo", "{T}/records_empty/"}, 1, "records_empty"},
    {"sim_topology_is_a_folder", {"sim", "--topo", "{T}/records_empty", "--algo", "allreduce.ring"}, 1, "directory"},
    {"profile_is_a_folder", sim({"--profile", "{T}/records_empty"}), 1, "directory"},
    {"empty_topology_file", {"topo", "{T}/empty.json"}, 1, "empty.json"},
    {"malformed_json_topology", {"topo", "{T}/malformed.json"}, 1, "malformed.json"},
    {"json_not_a_topology", {"topo", "{T}/not_cclab.json"}, 1, "not_cclab.json"},
    {"json_field_wrong_type", {"topo", "{T}/format_not_string.json"}, 1, "format_not_string.json"},
    {"zero_bandwidth", {"topo", "{T}/zero_bw.json"}, 1, "zero_bw.json"},
    {"negative_bandwidth", {"topo", "{T}/negative_bw.json"}, 1, "negative_bw.json"},
    {"bandwidth_not_a_number", {"topo", "{T}/string_bw.json"}, 1, "string_bw.json"},
    {"disconnected_gpu", {"topo", "{T}/disconnected.json"}, 1, "disconnected|gpu2"},
    {"gpu_index_gap", {"topo", "{T}/gpu_index_gap.json"}, 1, "gpu_index_gap.json"},
    {"gpu_index_huge", {"topo", "{T}/huge_gpu_index.json"}, 1, "huge_gpu_index.json"},
    {"endless_device_as_topology", {"topo", "/dev/zero"}, 1, "/dev/zero"},
    {"binary_file_as_topology", {"topo", "{T}/binary.bin"}, 1, "binary.bin"},
    {"sim_on_bad_topology_file", {"sim", "--topo", "{T}/zero_bw.json", "--algo", "allreduce.ring"}, 1, "zero_bw.json"},
    {"nvidia_smi_garbage", {"topo", "{T}/smi_garbage.txt"}, 1, "smi_garbage.txt"},
    {"nvidia_smi_unknown_label", {"topo", "{T}/smi_unknown_label.txt"}, 1, "WARP9"},
    {"nvidia_smi_not_square", {"topo", "{T}/smi_not_square.txt"}, 1, "smi_not_square.txt"},
    {"nvidia_smi_header_only", {"topo", "{T}/smi_header_only.txt"}, 1, "smi_header_only.txt"},
    {"nccl_xml_truncated", {"topo", "{T}/truncated.xml"}, 1, "truncated.xml"},
    {"xml_not_nccl", {"topo", "{T}/not_nccl.xml"}, 1, "not_nccl.xml"},
    {"nccl_xml_without_gpus", {"topo", "{T}/xml_no_gpus.xml"}, 1, "xml_no_gpus.xml"},
    // Output files.
    {"csv_into_missing_folder", sim({"-b", "8", "-e", "8", "--csv", "{T}/no/such/dir/out.csv"}), 1, "out.csv"},
    {"trace_into_missing_folder", sim({"-b", "8", "-e", "8", "--trace", "{T}/no/such/dir/t.json"}), 1, "t.json"},
    {"json_into_missing_folder", sim({"-b", "8", "-e", "8", "--json", "{T}/no/such/dir/r.json"}), 1, "r.json"},
    {"csv_is_a_folder", sim({"-b", "8", "-e", "8", "--csv", "{T}/records_empty"}), 1, "records_empty"},
    // Executor and calibration without a GPU (CUDA_VISIBLE_DEVICES empty hides every GPU).
    {"run_without_gpu",
     {"run", "--algo", "allreduce.ring", "-g", "2", "-b", "8", "-e", "8"},
     2,
     "gpu|cuda|not built",
     "CUDA_VISIBLE_DEVICES="},
    {"calibrate_without_gpu", {"calibrate", "--out", "{T}/p.json"}, 2, "gpu|cuda|not built", "CUDA_VISIBLE_DEVICES="},
    // Records and profiles for compare.
    {"compare_missing_records_folder",
     {"compare", "--measured", "{T}/no_such_records", "--topo", "h200x2"},
     1,
     "no_such_records"},
    {"compare_malformed_records", {"compare", "--measured", "{T}/records_bad", "--topo", "h200x2"}, 1, "bad.csv"},
    {"compare_non_numeric_time", {"compare", "--measured", "{T}/records_nan", "--topo", "h200x2"}, 1, "nan.csv"},
    {"compare_records_without_header",
     {"compare", "--measured", "{T}/records_no_header.csv", "--topo", "h200x2"},
     1,
     "records_no_header.csv"},
    {"compare_empty_records_folder",
     {"compare", "--measured", "{T}/records_empty", "--topo", "h200x2"},
     1,
     "records_empty|no records"},
    {"compare_without_measured", {"compare", "--topo", "h200x2"}, 1, "--measured"},
    // No newline in an endless stream: refused after 1 MiB instead of reading until memory runs out.
    {"compare_endless_device", {"compare", "--measured", "/dev/zero", "--topo", "h200x2"}, 1, "/dev/zero"},
    {"compare_malformed_profile",
     {"compare", "--measured", "{T}/records_bad", "--topo", "{T}/profile_malformed.json"},
     1,
     "profile_malformed.json|bad.csv"},
    {"sim_unknown_profile_param",
     {"sim", "--topo", "{T}/profile_unknown_param.json", "--algo", "allreduce.ring"},
     1,
     "warp_drive_us|profile_unknown_param.json"},
};

std::string test_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Cli, BadInput, ::testing::ValuesIn(kCases), test_name);

TEST(BadInputTable, CoversAtLeastFortyCases) {
  EXPECT_GE(kCases.size(), 40u);
  std::vector<std::string> names;
  for (const auto& c : kCases) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "duplicate case name";
}

}  // namespace
