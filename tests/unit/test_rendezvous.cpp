// dist::share_from_rank0 with ranks as threads on 127.0.0.1: every rank gets rank 0's payload (also when the
// clients start first), strangers (wrong token / world / rank, duplicates, garbage, oversized frames, silence)
// are turned away while the real ranks still succeed, and timeouts name the missing rank or the address.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "core/error.h"
#include "dist/rendezvous.h"
#include "dist/rendezvous_wire.h"
#include "dist/tcp_socket.h"

namespace {

using namespace std::chrono_literals;
using vt::dist::LaunchEnv;
namespace wire = vt::dist::wire;

int free_port() {
  vt::dist::Socket s = vt::dist::listen_tcp(0);
  return vt::dist::local_port(s);
}

LaunchEnv env(int rank, int world, int port, const std::string& token = "job-A") {
  LaunchEnv e;
  e.rank = rank;
  e.world = world;
  e.local_rank = rank;
  e.local_world = world;
  e.master_port = port;
  e.job_token = token;
  e.launcher = "test";
  return e;
}

std::vector<uint8_t> id_bytes() {
  std::vector<uint8_t> p(128);  // the size of an ncclUniqueId
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  return p;
}

// One rank on its own thread; result() joins and returns the payload or the error text.
class RankThread {
 public:
  RankThread(LaunchEnv e, std::chrono::milliseconds timeout, std::vector<uint8_t> payload = {})
      : thread_([this, e, timeout, payload] {
          try {
            got_ = vt::dist::share_from_rank0(e, payload, timeout);
          } catch (const vt::Error& err) {
            error_ = err.what();
          }
        }) {}
  ~RankThread() {
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<uint8_t>& payload() {
    join();
    return got_;
  }
  const std::string& error() {
    join();
    return error_;
  }

 private:
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::vector<uint8_t> got_;
  std::string error_;
  std::thread thread_;
};

// Sends raw bytes to rank 0 and reports what came back: "closed", "reject:<reason>", or "silence".
std::string stranger(int port, const std::vector<uint8_t>& bytes) {
  std::string err;
  const auto deadline = vt::dist::Clock::now() + 3s;
  vt::dist::Socket s = vt::dist::connect_tcp("127.0.0.1", port, deadline, err);
  if (!s.valid()) return "no connection: " + err;
  vt::dist::send_all(s, bytes.data(), bytes.size(), deadline);
  uint8_t head[wire::kHeaderBytes];
  const auto st = vt::dist::recv_exact(s, head, sizeof(head), vt::dist::Clock::now() + 1500ms);
  if (st == vt::dist::RecvStatus::timeout) return "silence";
  if (st != vt::dist::RecvStatus::ok) return "closed";
  auto h = wire::parse_header(head);
  if (!h || h->type != wire::Type::reject) return "unexpected reply";
  uint8_t reason = 0;
  vt::dist::recv_exact(s, &reason, 1, deadline);
  return std::string("reject:") + wire::reason_text(static_cast<wire::RejectReason>(reason));
}

std::vector<uint8_t> hello(int rank, int world, const std::string& token) {
  return wire::hello_frame({static_cast<uint32_t>(world), static_cast<uint32_t>(rank), token});
}

TEST(Rendezvous, FourRanksGetRank0sPayload) {
  const int port = free_port();
  std::vector<std::unique_ptr<RankThread>> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.push_back(std::make_unique<RankThread>(env(r, 4, port), 5s, r == 0 ? id_bytes() : std::vector<uint8_t>{}));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ranks[r]->error(), "") << "rank " << r;
    EXPECT_EQ(ranks[r]->payload(), id_bytes()) << "rank " << r;
  }
}

TEST(Rendezvous, ClientsMayStartBeforeRank0Listens) {
  const int port = free_port();
  std::vector<std::unique_ptr<RankThread>> ranks;
  for (int r = 1; r < 4; ++r) ranks.push_back(std::make_unique<RankThread>(env(r, 4, port), 5s));
  std::this_thread::sleep_for(300ms);  // the clients are retrying refused connections meanwhile
  RankThread rank0(env(0, 4, port), 5s, id_bytes());
  EXPECT_EQ(rank0.error(), "");
  for (auto& r : ranks) {
    EXPECT_EQ(r->error(), "");
    EXPECT_EQ(r->payload(), id_bytes());
  }
}

TEST(Rendezvous, StrangersAreRejectedWhileTheRealRanksSucceed) {
  const int port = free_port();
  RankThread rank0(env(0, 4, port), 8s, id_bytes());
  // A silent connection holds a slot but must not block anyone.
  std::string err;
  vt::dist::Socket silent = vt::dist::connect_tcp("127.0.0.1", port, vt::dist::Clock::now() + 3s, err);
  ASSERT_TRUE(silent.valid()) << err;

  EXPECT_EQ(stranger(port, hello(1, 4, "job-B")), "reject:wrong job token");
  EXPECT_EQ(stranger(port, hello(1, 4, "")), "reject:wrong job token");
  EXPECT_EQ(stranger(port, hello(1, 5, "job-A")), "reject:wrong world size");
  EXPECT_EQ(stranger(port, hello(4, 4, "job-A")), "reject:rank out of range");
  EXPECT_EQ(stranger(port, hello(0, 4, "job-A")), "reject:duplicate rank");
  const std::string http = "GET / HTTP/1.0\r\n\r\n";
  EXPECT_EQ(stranger(port, {http.begin(), http.end()}), "closed");
  auto oversized = hello(1, 4, "job-A");
  oversized[8] = 0x7f;  // body length ~2 GB
  EXPECT_EQ(stranger(port, oversized), "closed");
  auto bad_version = hello(1, 4, "job-A");
  bad_version[5] = 9;
  EXPECT_EQ(stranger(port, bad_version), "closed");
  auto lying_length = hello(1, 4, "job-A");
  lying_length[11] += 1;  // body length one more than the hello holds: the token length no longer matches
  lying_length.push_back(0);
  EXPECT_EQ(stranger(port, lying_length), "closed");

  RankThread rank1(env(1, 4, port), 8s);
  std::this_thread::sleep_for(1s);  // rank 1 has registered by now (generous: CI machines are loaded)
  EXPECT_EQ(stranger(port, hello(1, 4, "job-A")), "reject:duplicate rank");
  RankThread rank2(env(2, 4, port), 8s), rank3(env(3, 4, port), 8s);
  EXPECT_EQ(rank0.error(), "");
  for (RankThread* r : {&rank1, &rank2, &rank3}) {
    EXPECT_EQ(r->error(), "");
    EXPECT_EQ(r->payload(), id_bytes());
  }
}

TEST(Rendezvous, Rank0TimeoutNamesTheMissingRank) {
  const int port = free_port();
  RankThread rank0(env(0, 3, port), 2s, id_bytes());  // long enough for rank 1 to arrive on a loaded machine
  RankThread rank1(env(1, 3, port), 5s);
  const std::string e0 = rank0.error();
  EXPECT_NE(e0.find("rank 2 never arrived"), std::string::npos) << e0;
  EXPECT_NE(rank1.error().find("closed the connection"), std::string::npos) << rank1.error();
}

TEST(Rendezvous, ClientTimeoutNamesTheAddress) {
  const int port = free_port();
  RankThread rank1(env(1, 2, port), 300ms);
  const std::string e = rank1.error();
  EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
  EXPECT_NE(e.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e;
}

TEST(Rendezvous, RankWithAnotherTokenGetsAClearError) {
  const int port = free_port();
  RankThread rank0(env(0, 2, port), 2s, id_bytes());
  RankThread rank1(env(1, 2, port, "job-B"), 5s);
  EXPECT_NE(rank1.error().find("rejected this process: wrong job token"), std::string::npos) << rank1.error();
  const std::string e0 = rank0.error();
  EXPECT_NE(e0.find("rank 1 never arrived"), std::string::npos) << e0;
  EXPECT_NE(e0.find("wrong job token"), std::string::npos) << e0;
  EXPECT_EQ(e0.find("job-B"), std::string::npos) << "tokens are never echoed: " << e0;
}

TEST(Rendezvous, SingleProcessAndPayloadBound) {
  EXPECT_EQ(vt::dist::share_from_rank0(env(0, 1, 1), id_bytes()), id_bytes());
  EXPECT_THROW(vt::dist::share_from_rank0(env(0, 2, free_port()), std::vector<uint8_t>(4097), 100ms), vt::Error);
  EXPECT_THROW(vt::dist::share_from_rank0(env(2, 2, 1), {}, 100ms), vt::Error);
}

}  // namespace
