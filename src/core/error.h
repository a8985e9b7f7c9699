// Errors: user-facing validation throws vt::Error (so tests can EXPECT_THROW and the CLI can exit cleanly);
// VT_ASSERT guards internal invariants and aborts.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace vt {

/// what() is the message for people; where() the source position that threw it ("config.cpp:249", or "" when
/// thrown without VT_CHECK/VT_FAIL), for a log file or a debugger, never for the one-line error a user reads.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string where = "")
      : std::runtime_error(message), where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_error(const char* file, int line, const std::string& msg);
[[noreturn]] void assert_fail(const char* file, int line, const char* cond);
}  // namespace detail

}  // namespace vt

// VT_CHECK(cond, "[op] shape ", s, " is bad") throws vt::Error with the message (and file:line in where()).
#define VT_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond)) ::vt::detail::throw_error(__FILE__, __LINE__, ::vt::detail::concat(__VA_ARGS__)); \
  } while (0)

#define VT_FAIL(...) ::vt::detail::throw_error(__FILE__, __LINE__, ::vt::detail::concat(__VA_ARGS__))

#define VT_ASSERT(cond)                                                \
  do {                                                                 \
    if (!(cond)) ::vt::detail::assert_fail(__FILE__, __LINE__, #cond); \
  } while (0)
