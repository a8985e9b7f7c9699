// Small helpers shared by the test binaries.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace vt::test {

/// The message of the vt::Error that f() throws, or "(no error thrown)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error thrown)";
}

}  // namespace vt::test

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)
