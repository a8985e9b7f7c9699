// Small POSIX TCP helpers for the rendezvous: an owning descriptor, a listener, a connect that retries until a
// deadline, and send/receive of exact byte counts bounded by a deadline (poll() everywhere, never a blocking
// call without a timeout). IPv4 only; hosts are resolved with getaddrinfo.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace vt::dist {

using Clock = std::chrono::steady_clock;

/// An owning, move-only socket descriptor (closed on destruction); -1 when empty.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }
  /// The descriptor (-1 when empty).
  int fd() const { return fd_; }
  /// Whether this holds a descriptor.
  bool valid() const { return fd_ >= 0; }
  /// Closes the descriptor now.
  void close();

 private:
  int fd_ = -1;
};

/// Milliseconds from now to `deadline` for poll(), at least 0.
int ms_until(Clock::time_point deadline);

/// A non-blocking listener on all IPv4 interfaces at `port` (SO_REUSEADDR); throws vt::Error naming the port.
Socket listen_tcp(int port);

/// The port a bound socket listens on (useful after binding port 0).
int local_port(const Socket& s);

/// A non-blocking connection to host:port, retrying refused/unreachable attempts until `deadline` (the peer may
/// not be listening yet). Returns an empty Socket on timeout, with the last failure in `last_error`.
Socket connect_tcp(const std::string& host, int port, Clock::time_point deadline, std::string& last_error);

/// Sends all `n` bytes before `deadline`; false on timeout or a broken connection (never raises SIGPIPE).
bool send_all(const Socket& s, const uint8_t* data, size_t n, Clock::time_point deadline);

enum class RecvStatus { ok, closed, timeout, error };

/// Receives exactly `n` bytes before `deadline`.
RecvStatus recv_exact(const Socket& s, uint8_t* data, size_t n, Clock::time_point deadline);

/// "1.2.3.4:5678" of the peer, for log lines.
std::string peer_name(const Socket& s);

}  // namespace vt::dist
