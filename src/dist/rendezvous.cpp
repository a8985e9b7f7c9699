// Rank 0 serves, every other rank asks once. Rank 0 runs one poll() loop over its listener, the connections
// still sending their hello, and the ranks already accepted; a connection that is garbled, oversized, silent,
// or not of this job is closed and never blocks the real ranks. The payload goes out only when every rank has
// arrived, so a missing rank makes all ranks fail with a clear message instead of hanging later in NCCL.
#include "dist/rendezvous.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <sstream>

#include "core/error.h"
#include "dist/rendezvous_wire.h"
#include "dist/tcp_socket.h"

namespace vt::dist {
namespace {

constexpr size_t kMaxPending = 64;                      // connections still sending their hello
constexpr auto kHelloLimit = std::chrono::seconds(10);  // a real rank sends its hello right after connecting
constexpr int kMaxLoggedRejects = 10;

double seconds(std::chrono::milliseconds t) { return static_cast<double>(t.count()) / 1000.0; }

// Compares without an early exit, so the time taken says nothing about the token.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Pending {
  Socket sock;
  std::vector<uint8_t> bytes;
  size_t need = wire::kHeaderBytes;  // grows to header + body once the header is read
  size_t got = 0;
  Clock::time_point since;
};

class Server {
 public:
  Server(const LaunchEnv& env, std::chrono::milliseconds timeout)
      : env_(env), timeout_(timeout), deadline_(Clock::now() + timeout), ranks_(env.world) {}

  void run(const std::vector<uint8_t>& payload) {
    Socket listener = listen_tcp(env_.master_port);
    while (arrived_ < env_.world - 1) {
      VT_CHECK(Clock::now() < deadline_, timeout_message());
      poll_once(listener);
    }
    const auto reply = wire::frame(wire::Type::payload, payload);
    const auto send_deadline = std::max(deadline_, Clock::now() + std::chrono::seconds(5));  // last arrival at the wire
    for (int r = 1; r < env_.world; ++r) {
      VT_CHECK(send_all(ranks_[r], reply.data(), reply.size(), send_deadline),
               "[rendezvous] rank 0 could not send the ", "payload to rank ", r, " (", peer_name(ranks_[r]),
               "): the connection broke or timed out");
      ::shutdown(ranks_[r].fd(), SHUT_WR);
    }
  }

 private:
  void poll_once(const Socket& listener) {
    std::vector<pollfd> fds{{listener.fd(), POLLIN, 0}};
    for (int r = 1; r < env_.world; ++r)
      if (ranks_[r].valid()) fds.push_back({ranks_[r].fd(), POLLIN, 0});  // only a hang-up can come from them
    for (auto& p : pending_) fds.push_back({p.sock.fd(), POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), std::min(ms_until(deadline_), 250));
    if (n > 0) {
      size_t i = 1;
      for (int r = 1; r < env_.world; ++r)
        if (ranks_[r].valid() && fds[i++].revents) drop_rank(r);
      for (auto& p : pending_)
        if (fds[i++].revents) read_hello(p);
      if (fds[0].revents) accept_all(listener);
    }
    const auto now = Clock::now();
    for (auto& p : pending_)
      if (p.sock.valid() && now - p.since > kHelloLimit) reject(p, "no hello in time");
    std::erase_if(pending_, [](const Pending& p) { return !p.sock.valid(); });
  }

  void accept_all(const Socket& listener) {
    for (;;) {
      Socket s(::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!s.valid()) return;
      if (pending_.size() >= kMaxPending) {
        ++rejected_["too many connections"];
        continue;  // closed by ~Socket
      }
      pending_.push_back({std::move(s), {}, wire::kHeaderBytes, 0, Clock::now()});
    }
  }

  // An accepted rank must stay silent until it gets the payload: data or a hang-up means it is gone.
  void drop_rank(int r) {
    spdlog::warn("[rendezvous] rank {} ({}) disconnected before every rank arrived", r, peer_name(ranks_[r]));
    ranks_[r].close();
    --arrived_;
  }

  // Reads what has come of a hello; once complete, accepts it or rejects the connection.
  void read_hello(Pending& p) {
    p.bytes.resize(p.need);
    const ssize_t r = ::recv(p.sock.fd(), p.bytes.data() + p.got, p.need - p.got, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (r <= 0) {
      p.sock.close();  // left (or failed) before finishing a hello: nothing to answer
      return;
    }
    p.got += static_cast<size_t>(r);
    if (p.got < p.need) return;
    if (p.need == wire::kHeaderBytes) {
      const auto header = wire::parse_header(p.bytes.data());
      if (!header || header->type != wire::Type::hello) return reject(p, "malformed message");
      p.need += header->body_bytes;  // bounded by parse_header
      return;
    }
    const auto hello = wire::parse_hello({p.bytes.begin() + wire::kHeaderBytes, p.bytes.end()});
    if (!hello) return reject(p, "malformed message");
    using R = wire::RejectReason;
    if (!same_token(hello->token, env_.job_token)) return reject(p, "wrong job token", R::wrong_token);
    if (hello->world != static_cast<uint32_t>(env_.world))
      return reject(p, "wrong world size " + std::to_string(hello->world), R::wrong_world);
    if (hello->rank >= static_cast<uint32_t>(env_.world))
      return reject(p, "rank " + std::to_string(hello->rank) + " out of range", R::rank_out_of_range);
    if (hello->rank == 0 || ranks_[hello->rank].valid())
      return reject(p, "duplicate rank " + std::to_string(hello->rank), R::duplicate_rank);
    ranks_[hello->rank] = std::move(p.sock);
    ++arrived_;
  }

  void reject(Pending& p, const std::string& why, std::optional<wire::RejectReason> reason = std::nullopt) {
    if (reason) {
      const auto f = wire::frame(wire::Type::reject, {static_cast<uint8_t>(*reason)});
      send_all(p.sock, f.data(), f.size(), Clock::now() + std::chrono::milliseconds(100));
    }
    if (rejected_[why]++ < kMaxLoggedRejects)
      spdlog::warn("[rendezvous] rank 0 rejected a connection from {}: {}", peer_name(p.sock), why);
    p.sock.close();
  }

  std::string timeout_message() const {
    std::ostringstream os;
    os << "[rendezvous] rank 0 (port " << env_.master_port << ") timed out after " << seconds(timeout_)
       << " s waiting for " << env_.world - 1 - arrived_ << " of " << env_.world - 1 << " ranks: ";
    std::vector<int> missing;
    for (int r = 1; r < env_.world; ++r)
      if (!ranks_[r].valid()) missing.push_back(r);
    os << (missing.size() == 1 ? "rank " : "ranks ");
    for (size_t k = 0; k < missing.size() && k < 16; ++k) os << (k ? ", " : "") << missing[k];
    if (missing.size() > 16) os << ", ...";
    os << " never arrived";
    if (!rejected_.empty()) {
      os << " (rejected:";
      for (const auto& [why, count] : rejected_) os << " " << count << " " << why << ";";
      os << " check that every rank has the same job token and world size)";
    }
    return os.str();
  }

  const LaunchEnv& env_;
  std::chrono::milliseconds timeout_;
  Clock::time_point deadline_;
  std::vector<Socket> ranks_;  // accepted connections by rank
  int arrived_ = 0;
  std::vector<Pending> pending_;
  std::map<std::string, int> rejected_;  // reason → count (never the token)
};

std::vector<uint8_t> ask_rank0(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  const std::string me = "[rendezvous] rank " + std::to_string(env.rank) + ": ";
  std::string last_error = "none";
  Socket s = connect_tcp(env.master_addr, env.master_port, deadline, last_error);
  VT_CHECK(s.valid(), me, "could not reach rank 0 at ", where, " within ", seconds(timeout),
           " s (last error: ", last_error, ")");
  const auto hello =
      wire::hello_frame({static_cast<uint32_t>(env.world), static_cast<uint32_t>(env.rank), env.job_token});
  VT_CHECK(send_all(s, hello.data(), hello.size(), deadline), me, "sending to rank 0 at ", where, " failed");

  uint8_t head[wire::kHeaderBytes];
  auto status = recv_exact(s, head, sizeof(head), deadline);
  VT_CHECK(status != RecvStatus::timeout, me, "rank 0 at ", where, " sent nothing within ", seconds(timeout),
           " s (are all ", env.world, " ranks started?)");
  VT_CHECK(status == RecvStatus::ok, me, "rank 0 at ", where, " closed the connection (it may have timed out or ",
           "failed: see its log)");
  const auto header = wire::parse_header(head);
  VT_CHECK(header && header->type != wire::Type::hello, me, "malformed reply from ", where,
           " (is another service listening on MASTER_PORT?)");
  std::vector<uint8_t> body(header->body_bytes);
  status = recv_exact(s, body.data(), body.size(), deadline);
  VT_CHECK(status == RecvStatus::ok, me, "the reply from rank 0 at ", where, " was cut short");
  if (header->type == wire::Type::reject) {
    VT_FAIL(me, "rank 0 at ", where,
            " rejected this process: ", wire::reason_text(static_cast<wire::RejectReason>(body[0])), " (world ",
            env.world, "; every rank needs the same job token and world size, and a rank of its own)");
  }
  return body;
}

}  // namespace

std::vector<uint8_t> share_from_rank0(const LaunchEnv& env, const std::vector<uint8_t>& payload,
                                      std::chrono::milliseconds timeout) {
  VT_CHECK(env.world >= 1 && env.rank >= 0 && env.rank < env.world, "[rendezvous] rank ", env.rank, " is outside [0, ",
           env.world, ")");
  VT_CHECK(env.job_token.size() <= wire::kMaxTokenBytes, "[rendezvous] the job token is longer than ",
           wire::kMaxTokenBytes, " bytes");
  if (env.rank == 0)
    VT_CHECK(payload.size() <= wire::kMaxPayloadBytes, "[rendezvous] payload of ", payload.size(), " bytes exceeds ",
             wire::kMaxPayloadBytes);
  if (env.world == 1) return payload;
  if (env.rank != 0) return ask_rank0(env, timeout);
  Server(env, timeout).run(payload);
  return payload;
}

}  // namespace vt::dist
