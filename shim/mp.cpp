#include "shim/mp.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace cclab::shim {

static_assert(std::is_trivially_copyable_v<PeerInfo>, "PeerInfo travels as bytes");

uint64_t hash_text(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t host_id_of(const std::string& hostname, const std::string& boot_id) {
  const uint64_t h = hash_text(hostname + '\n' + boot_id);
  return h != 0 ? h : 1;  // 0 is what a record without the shim holds
}

uint64_t host_id() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
  // Containers on one machine may share a hostname or not; the boot id is the kernel's, one per machine.
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return host_id_of(name, boot);
}

int64_t mp_lamport_bytes(const char* tune, int64_t lamport_max_bytes) {
  bool named = false;
  if (tune != nullptr) {
    std::stringstream ss(tune);
    for (std::string item; std::getline(ss, item, ',');) {
      const std::string key = item.substr(0, item.find('='));
      const size_t a = key.find_first_not_of(' '), b = key.find_last_not_of(' ');
      if (a != std::string::npos && key.substr(a, b - a + 1) == "lamport_max_bytes") named = true;
    }
  }
  const int64_t bytes = named ? lamport_max_bytes : std::min(lamport_max_bytes, kMpLamportDefault);
  return std::max<int64_t>(256, (bytes + 255) / 256 * 256);
}

bool config_blocking(const ncclConfig_t* config, const char* env) {
  if (config != nullptr && config->magic != 0xcafebeef) return false;
  if (config != nullptr && config->blocking != NCCL_CONFIG_UNDEF_INT) return config->blocking != 0;
  if (env == nullptr || env[0] == '\0') return true;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 0);
  return end == env || v != 0;  // NCCL reads an integer; anything else leaves its default, blocking
}

std::string check_peers(const std::vector<PeerInfo>& all, int me) {
  const int n = int(all.size());
  if (me < 0 || me >= n) return "rank " + std::to_string(me) + " outside the communicator";
  const PeerInfo& mine = all[size_t(me)];
  for (int q = 0; q < n; ++q) {
    const PeerInfo& p = all[size_t(q)];
    const std::string who = "rank " + std::to_string(q);
    if (p.magic != kPeerMagic || p.version != kPeerVersion)
      return who + " runs no cclab shim of this version (every process must load the same libcclab_nccl.so)";
    if (p.rank != q || p.nranks != n) return who + " published the record of rank " + std::to_string(p.rank);
    if (!p.willing) return who + ": " + std::string(p.why, strnlen(p.why, sizeof(p.why)));
  }
  for (int q = 0; q < n; ++q) {
    const PeerInfo& p = all[size_t(q)];
    const std::string who = "rank " + std::to_string(q);
    if (p.host != mine.host) return who + " on another host";
    if (p.settings != mine.settings || p.lamport_stride != mine.lamport_stride)
      return who + " has other CCLAB_TUNE settings";
    for (int o = 0; o < q; ++o)
      if (std::strncmp(all[size_t(o)].bus, p.bus, sizeof(p.bus)) == 0)
        return "ranks " + std::to_string(o) + " and " + std::to_string(q) + " share GPU " +
               std::string(p.bus, strnlen(p.bus, sizeof(p.bus)));
  }
  return "";
}

std::vector<Agreement> agree(const std::vector<PeerInfo>& mine, const AllGather& allgather, const OpenPeers& open) {
  const size_t k = mine.size();
  std::vector<Agreement> out(k);
  // Phase 1: everyone's record.
  std::vector<const void*> send(k);
  std::vector<void*> recv(k);
  for (size_t i = 0; i < k; ++i) {
    out[i].all.resize(size_t(std::max(mine[i].nranks, 1)));
    send[i] = &mine[i];
    recv[i] = out[i].all.data();
  }
  if (!allgather(sizeof(PeerInfo), send, recv)) {
    for (auto& a : out) a.why = "the exchange of setup records through NCCL failed";
    return out;
  }
  // This rank's verdict: the records agree and its peers' buffers opened.
  std::vector<uint8_t> ok(k);
  for (size_t i = 0; i < k; ++i) {
    out[i].why = check_peers(out[i].all, mine[i].rank);
    if (out[i].why.empty()) out[i].why = open(i, out[i].all);
    ok[i] = out[i].why.empty() ? 1 : 0;
  }
  // Phase 2: everyone's verdict, ANDed, so every rank of a communicator takes the same route.
  std::vector<std::vector<uint8_t>> oks(k);
  for (size_t i = 0; i < k; ++i) {
    oks[i].assign(out[i].all.size(), 0);
    send[i] = &ok[i];
    recv[i] = oks[i].data();
  }
  if (!allgather(1, send, recv)) {
    for (auto& a : out) {
      a.ok = false;
      if (a.why.empty()) a.why = "the exchange of setup verdicts through NCCL failed";
    }
    return out;
  }
  for (size_t i = 0; i < k; ++i) {
    for (size_t q = 0; q < oks[i].size() && out[i].why.empty(); ++q)
      if (!oks[i][q]) out[i].why = "rank " + std::to_string(q) + " could not set up (its CCLAB_DEBUG=1 says why)";
    out[i].ok = out[i].why.empty();
  }
  return out;
}

}  // namespace cclab::shim
