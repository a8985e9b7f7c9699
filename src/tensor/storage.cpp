#include "tensor/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace vt {

std::shared_ptr<Storage> Storage::allocate_cpu(size_t nbytes, bool zero) {
  size_t rounded = (nbytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw std::bad_alloc();
  if (zero) std::memset(p, 0, rounded);
  return std::make_shared<Storage>(p, nbytes, cpu(), [](void* q) { std::free(q); });
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

}  // namespace vt
