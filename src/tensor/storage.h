// A refcounted buffer of bytes on one device. CPU memory is 64-byte aligned (good for SIMD and OpenBLAS).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

#include "core/device.h"

namespace vt {

class Storage {
 public:
  /// Allocates nbytes on the CPU (zero-filled when `zero`).
  static std::shared_ptr<Storage> allocate_cpu(size_t nbytes, bool zero = false);
  /// Wraps memory owned elsewhere; `deleter` runs when the last view is gone.
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  std::function<void(void*)> deleter_;
};

}  // namespace vt
