// Small helpers shared by the test binaries.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

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

/// Expects fn() to throw (any std::exception) with `needle` in its message.
inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// tests/fmnist_base.yaml: the tests' Fashion-MNIST base config (the defaults are DeiT's ImageNet recipe).
inline std::string fmnist_base_path() { return std::string(VT_SOURCE_DIR) + "/tests/fmnist_base.yaml"; }

/// Where tests/fmnist_base.yaml reads Fashion-MNIST (the Debian package dataset-fashion-mnist).
inline std::string fmnist_dir() { return "/usr/share/datasets/fashion-mnist"; }

/// The whole text of the file at `path` ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// The rows of a tab-separated table such as configs/*/paper_table*.tsv, each split into its cells; blank lines and
/// `#` comment lines left out (none when the file cannot be read).
inline std::vector<std::vector<std::string>> tsv_rows(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, '\t');) cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}

/// How many times `needle` occurs in `text` (overlaps counted).
inline int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace vt::test

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)
