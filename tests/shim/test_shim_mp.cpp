// The multi-process decisions of the shim (shim/mp.hpp) on the CPU: the collective agreement (every rank of a
// communicator takes the same route, whichever rank failed), the checks of the exchanged records, the blocking
// check of ncclConfig_t, the preallocated lamport size, and the route's bound on it.
#include <gtest/gtest.h>
#include <nccl.h>

#include <barrier>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shim/mp.hpp"

using namespace cclab::shim;

namespace {

// A stand-in for NCCL's allgather between threads that play processes: each thread drives the ranks
// `ranks` (one entry each), every allgather of a round meets at a barrier.
struct Fabric {
  explicit Fabric(int nranks, int threads) : n(nranks), sync(threads) {}
  int n;
  std::barrier<> sync;
  std::mutex mu;
  std::vector<std::vector<uint8_t>> slots;
  AllGather for_ranks(std::vector<int> ranks) {
    return [this, ranks](size_t bytes, const std::vector<const void*>& send, const std::vector<void*>& recv) {
      {
        std::lock_guard lk(mu);
        if (slots.size() != size_t(n) || slots[0].size() != bytes) slots.assign(size_t(n), std::vector<uint8_t>(bytes));
        for (size_t i = 0; i < ranks.size(); ++i) std::memcpy(slots[size_t(ranks[i])].data(), send[i], bytes);
      }
      sync.arrive_and_wait();
      for (size_t i = 0; i < ranks.size(); ++i)
        for (int q = 0; q < n; ++q)
          std::memcpy(static_cast<uint8_t*>(recv[i]) + size_t(q) * bytes, slots[size_t(q)].data(), bytes);
      sync.arrive_and_wait();  // nobody overwrites the slots of this round before everyone read them
      return true;
    };
  }
};

PeerInfo record(int rank, int nranks) {
  PeerInfo p;
  p.magic = kPeerMagic;
  p.version = kPeerVersion;
  p.rank = rank;
  p.nranks = nranks;
  p.host = 42;
  p.settings = 7;
  p.lamport_stride = kMpLamportDefault;
  p.willing = 1;
  std::snprintf(p.bus, sizeof(p.bus), "00000000:%02X:00.0", 0x10 + rank);
  return p;
}

// Runs `nranks` ranks, one thread each; `open_fails` names a rank whose opening of its peers' buffers fails.
std::vector<Agreement> run_one_per_thread(int nranks, int open_fails, std::vector<int>* opened = nullptr) {
  Fabric f(nranks, nranks);
  std::vector<Agreement> out(static_cast<size_t>(nranks));
  std::vector<int> opens(static_cast<size_t>(nranks), 0);
  std::vector<std::thread> ts;
  for (int r = 0; r < nranks; ++r)
    ts.emplace_back([&, r] {
      auto a = agree({record(r, nranks)}, f.for_ranks({r}), [&, r](size_t, const std::vector<PeerInfo>&) {
        ++opens[size_t(r)];
        return r == open_fails ? std::string("no P2P access from GPU a to GPU b") : std::string();
      });
      out[size_t(r)] = a.at(0);
    });
  for (auto& t : ts) t.join();
  if (opened) *opened = opens;
  return out;
}

}  // namespace

TEST(ShimMp, EveryRankOkGivesTheCclabPathOnEveryRank) {
  std::vector<int> opened;
  const auto a = run_one_per_thread(4, -1, &opened);
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(a[size_t(r)].ok) << r << ": " << a[size_t(r)].why;
    ASSERT_EQ(a[size_t(r)].all.size(), 4u);
    // Every rank saw every rank's record, in rank order.
    for (int q = 0; q < 4; ++q) EXPECT_EQ(a[size_t(r)].all[size_t(q)].rank, q);
    EXPECT_EQ(opened[size_t(r)], 1);
  }
}

TEST(ShimMp, OneRankFailingToOpenSendsEveryRankToNccl) {
  for (int bad = 0; bad < 3; ++bad) {
    const auto a = run_one_per_thread(3, bad);
    for (int r = 0; r < 3; ++r) {
      EXPECT_FALSE(a[size_t(r)].ok) << "bad " << bad << " rank " << r;
      if (r == bad)
        EXPECT_EQ(a[size_t(r)].why, "no P2P access from GPU a to GPU b");
      else
        EXPECT_EQ(a[size_t(r)].why, "rank " + std::to_string(bad) + " could not set up (its CCLAB_DEBUG=1 says why)");
    }
  }
}

// Ranks 0 and 1 in one process (one thread, one batch: their allgathers run together), rank 2 in another: the
// first process is not willing, and the third rank must still go to NCCL.
TEST(ShimMp, MixedProcessesAgreeToForward) {
  Fabric f(3, 2);
  std::vector<Agreement> first, second;
  int opens = 0;
  auto open = [&](size_t, const std::vector<PeerInfo>&) {
    ++opens;
    return std::string();
  };
  std::thread a([&] {
    std::vector<PeerInfo> mine = {record(0, 3), record(1, 3)};
    for (auto& p : mine) {
      p.willing = 0;
      std::snprintf(p.why, sizeof(p.why), "ranks in this process and in others");
    }
    first = agree(mine, f.for_ranks({0, 1}), open);
  });
  std::thread b([&] { second = agree({record(2, 3)}, f.for_ranks({2}), open); });
  a.join();
  b.join();
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 1u);
  for (const auto& x : first) EXPECT_FALSE(x.ok);
  EXPECT_FALSE(second[0].ok);
  EXPECT_EQ(second[0].why, "rank 0: ranks in this process and in others");
  EXPECT_EQ(opens, 0);  // nobody opens peers' buffers once a record says no
}

TEST(ShimMp, AFailedExchangeIsNotOk) {
  const auto a = agree(
      {record(0, 2)}, [](size_t, const std::vector<const void*>&, const std::vector<void*>&) { return false; },
      [](size_t, const std::vector<PeerInfo>&) { return std::string(); });
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0].ok);
  EXPECT_NE(a[0].why.find("exchange"), std::string::npos) << a[0].why;
}

TEST(ShimMp, CheckPeersNamesTheFirstProblem) {
  std::vector<PeerInfo> all = {record(0, 2), record(1, 2)};
  EXPECT_EQ(check_peers(all, 0), "");
  EXPECT_EQ(check_peers(all, 1), "");
  EXPECT_NE(check_peers(all, 2).find("outside"), std::string::npos);

  auto bad = all;
  bad[1] = PeerInfo{};  // zeros: what a process without the shim leaves (it never wrote a record)
  EXPECT_NE(check_peers(bad, 0).find("rank 1 runs no cclab shim"), std::string::npos) << check_peers(bad, 0);
  bad = all;
  bad[1].version = kPeerVersion + 1;
  EXPECT_NE(check_peers(bad, 0).find("rank 1 runs no cclab shim of this version"), std::string::npos);
  bad = all;
  bad[1].rank = 0;
  EXPECT_NE(check_peers(bad, 0).find("rank 1 published the record of rank 0"), std::string::npos);
  bad = all;
  bad[0].willing = 0;
  std::snprintf(bad[0].why, sizeof(bad[0].why), "setup failed: out of memory");
  EXPECT_EQ(check_peers(bad, 1), "rank 0: setup failed: out of memory");
  bad = all;
  bad[1].host = 43;
  EXPECT_EQ(check_peers(bad, 0), "rank 1 on another host");
  EXPECT_EQ(check_peers(bad, 1), "rank 0 on another host");
  bad = all;
  bad[0].settings = 8;
  EXPECT_EQ(check_peers(bad, 0), "rank 1 has other CCLAB_TUNE settings");
  bad = all;
  bad[1].lamport_stride = 1 << 20;
  EXPECT_EQ(check_peers(bad, 0), "rank 1 has other CCLAB_TUNE settings");
  bad = all;
  std::memcpy(bad[1].bus, bad[0].bus, sizeof(bad[0].bus));
  EXPECT_EQ(check_peers(bad, 0), "ranks 0 and 1 share GPU 00000000:10:00.0");
}

TEST(ShimMp, ConfigBlockingFollowsNcclsDefaults) {
  EXPECT_TRUE(config_blocking(nullptr, nullptr));
  EXPECT_TRUE(config_blocking(nullptr, ""));
  EXPECT_TRUE(config_blocking(nullptr, "1"));
  EXPECT_FALSE(config_blocking(nullptr, "0"));
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(c.blocking, NCCL_CONFIG_UNDEF_INT);
  EXPECT_TRUE(config_blocking(&c, nullptr));  // unset: NCCL's default, blocking
  EXPECT_FALSE(config_blocking(&c, "0"));     // unset: NCCL_COMM_BLOCKING decides
  EXPECT_TRUE(config_blocking(&c, "junk"));   // not a number: NCCL keeps its default
  c.blocking = 0;
  EXPECT_FALSE(config_blocking(&c, nullptr));
  EXPECT_FALSE(config_blocking(&c, "1"));  // the config wins over the environment
  c.blocking = 1;
  EXPECT_TRUE(config_blocking(&c, "0"));
  c.magic = 0;  // not from NCCL_CONFIG_INITIALIZER: NCCL refuses it, the shim does not follow it
  EXPECT_FALSE(config_blocking(&c, nullptr));
}

TEST(ShimMp, LamportPreallocationHasAMultiProcessDefault) {
  const int64_t m = int64_t(1) << 20;
  EXPECT_EQ(mp_lamport_bytes(nullptr, 256 * m), kMpLamportDefault);
  EXPECT_EQ(mp_lamport_bytes("auto_ll_max=64K,kernel_timeout=20", 256 * m), kMpLamportDefault);
  EXPECT_EQ(mp_lamport_bytes("lamport_max_bytes=256M", 256 * m), 256 * m);  // named: taken as it is
  EXPECT_EQ(mp_lamport_bytes("auto_ll_max=64K, lamport_max_bytes =8M", 8 * m), 8 * m);
  EXPECT_EQ(mp_lamport_bytes(nullptr, 16 * m), 16 * m);               // never above lamport_max_bytes
  EXPECT_EQ(mp_lamport_bytes("lamport_max_bytes=1000", 1000), 1024);  // whole 256-byte vectors of lanes
  EXPECT_EQ(mp_lamport_bytes("lamport_max_bytes_x=1", 256 * m), kMpLamportDefault);
}

TEST(ShimMp, HostIdIsStableAndTellsMachinesApart) {
  EXPECT_EQ(host_id(), host_id());
  EXPECT_NE(host_id(), 0u);
  EXPECT_EQ(host_id_of("node1", "b0"), host_id_of("node1", "b0"));
  EXPECT_NE(host_id_of("node1", "b0"), host_id_of("node2", "b0"));
  EXPECT_NE(host_id_of("node1", "b0"), host_id_of("node1", "b1"));
  EXPECT_NE(host_id_of("node1", "b0"), host_id_of("node1b", "0"));  // the parts do not run together
  EXPECT_NE(hash_text("a"), hash_text("b"));
}
