// POSIX sockets with deadlines. Every socket is non-blocking; waits go through poll() with the time left, so
// no call can hang past its deadline.
#include "dist/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace vt::dist {
namespace {

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

// Waits for `events` on fd until the deadline; true when ready (or errored: the caller's next call says which).
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms_until(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;
  }
}

// One connection attempt to one address, waiting at most until `until`.
Socket try_connect(const addrinfo& a, Clock::time_point until, std::string& error) {
  Socket s(::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol));
  if (!s.valid()) {
    error = std::strerror(errno);
    return {};
  }
  set_nonblocking(s.fd());
  if (::connect(s.fd(), a.ai_addr, a.ai_addrlen) == 0) return s;
  if (errno != EINPROGRESS) {
    error = std::strerror(errno);
    return {};
  }
  if (!wait_for(s.fd(), POLLOUT, until)) {
    error = "connection attempt timed out";
    return {};
  }
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    error = std::strerror(err);
    return {};
  }
  return s;
}

}  // namespace

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int ms_until(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

Socket listen_tcp(int port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  VT_CHECK(s.valid(), "[rendezvous] socket(): ", std::strerror(errno));
  const int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // restart right after a previous job
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);  // other nodes reach rank 0 by whichever interface MASTER_ADDR names
  addr.sin_port = htons(static_cast<uint16_t>(port));
  VT_CHECK(::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0,
           "[rendezvous] rank 0 cannot listen on ", "port ", port, ": ", std::strerror(errno),
           " (set MASTER_PORT to a free port)");
  VT_CHECK(::listen(s.fd(), 128) == 0, "[rendezvous] listen on port ", port, ": ", std::strerror(errno));
  set_nonblocking(s.fd());
  return s;
}

int local_port(const Socket& s) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  VT_CHECK(::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) == 0,
           "[rendezvous] getsockname: ", std::strerror(errno));
  return ntohs(addr.sin_port);
}

Socket connect_tcp(const std::string& host, int port, Clock::time_point deadline, std::string& last_error) {
  auto backoff = std::chrono::milliseconds(20);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = std::string("cannot resolve the host: ") + ::gai_strerror(rc);  // DNS may come up late: retry
    } else {
      for (addrinfo* a = found; a; a = a->ai_next) {
        // A silent (filtered) host is given a few seconds per attempt, then retried.
        Socket s = try_connect(*a, std::min(deadline, Clock::now() + std::chrono::seconds(5)), last_error);
        if (s.valid()) {
          ::freeaddrinfo(found);
          return s;
        }
      }
      ::freeaddrinfo(found);
    }
    if (Clock::now() >= deadline) return {};
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - Clock::now()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

bool send_all(const Socket& s, const uint8_t* data, size_t n, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::send(s.fd(), data + done, n - done, MSG_NOSIGNAL);
    if (r > 0) {
      done += static_cast<size_t>(r);
    } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_for(s.fd(), POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

RecvStatus recv_exact(const Socket& s, uint8_t* data, size_t n, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::recv(s.fd(), data + done, n - done, 0);
    if (r > 0) {
      done += static_cast<size_t>(r);
    } else if (r == 0) {
      return RecvStatus::closed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!wait_for(s.fd(), POLLIN, deadline)) return RecvStatus::timeout;
    } else {
      return RecvStatus::error;
    }
  }
  return RecvStatus::ok;
}

std::string peer_name(const Socket& s) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown peer";
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace vt::dist
