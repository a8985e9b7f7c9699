#include "tensor/storage.h"

#include "memory/cpu_allocator.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace vt {

std::shared_ptr<Storage> Storage::allocate_cpu(size_t nbytes, bool zero) {
  size_t capacity = 0;
  void* p = memory::cpu_allocate(nbytes, &capacity);
  if (zero) std::memset(p, 0, nbytes);
  return std::make_shared<Storage>(p, nbytes, cpu(), [capacity](void* q) { memory::cpu_free(q, capacity); });
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

}  // namespace vt
