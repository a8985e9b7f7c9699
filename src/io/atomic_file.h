// Crash-safe file writes: write to `path + ".tmp"`, fsync, rename over `path`, fsync the directory. A reader
// sees either the old file or the complete new one, never a torn write (checkpoints, safetensors).
#pragma once
#include <cstddef>
#include <string>

namespace vt::io {

/// Collects writes to `path + ".tmp"`; commit() makes them visible at `path`. If the object is destroyed without
/// commit() (an exception mid-write), the temporary file is removed and `path` is untouched.
class AtomicFile {
 public:
  /// Creates (truncates) the temporary file; throws vt::Error naming it when that fails.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  /// fsync + rename + directory fsync. Throws vt::Error naming the path on failure.
  void commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace vt::io
