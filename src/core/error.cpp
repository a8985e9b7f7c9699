#include "core/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vt::detail {

void throw_error(const char* file, int line, const std::string& msg) {
  const char* base = std::strrchr(file, '/');
  throw Error(msg, std::string(base ? base + 1 : file) + ":" + std::to_string(line));
}

void assert_fail(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "internal assertion failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}

}  // namespace vt::detail
