// POSIX implementation of AtomicFile (open/write/fsync/rename).
#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace vt::io {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_path_(path_ + ".tmp") {
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  VT_CHECK(fd_ >= 0, "[io] cannot create '", tmp_path_, "': ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  VT_CHECK(fd_ >= 0 && !committed_, "[io] write to '", path_, "' after commit");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    VT_CHECK(w > 0, "[io] write to '", tmp_path_, "' failed: ", std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  VT_CHECK(fd_ >= 0 && !committed_, "[io] '", path_, "' committed twice");
  VT_CHECK(::fsync(fd_) == 0, "[io] fsync of '", tmp_path_, "' failed: ", std::strerror(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  VT_CHECK(rc == 0, "[io] close of '", tmp_path_, "' failed: ", std::strerror(errno));
  VT_CHECK(std::rename(tmp_path_.c_str(), path_.c_str()) == 0, "[io] rename '", tmp_path_, "' -> '", path_,
           "' failed: ", std::strerror(errno));
  committed_ = true;
  // The rename is durable only once the directory entry is on disk; best effort (some filesystems refuse).
  std::string dir = std::filesystem::path(path_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace vt::io
